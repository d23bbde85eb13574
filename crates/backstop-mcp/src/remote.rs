//! A running service over the network: `backstop mcp --server URL --key-file F`.

use std::time::Duration;

use crate::backend::{ApiAnswer, ApiRequest, Backend, BackendError, Method, json_or_text};

/// How long one API request may take before the tool call fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A backstop service at a base URL, called with one API key.
#[derive(Debug, Clone)]
pub struct Remote {
    base: String,
    key: Option<String>,
    agent: ureq::Agent,
}

impl Remote {
    /// A service at `base` (`http://127.0.0.1:7600`), with the key its callers send.
    pub fn new(base: &str, key: Option<String>) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            // A refusal is an answer, not a transport error.
            .http_status_as_error(false)
            .build();
        Remote {
            base: base.trim_end_matches('/').to_owned(),
            key,
            agent: config.new_agent(),
        }
    }

    fn send_blocking(&self, request: &ApiRequest) -> Result<ApiAnswer, BackendError> {
        let url = format!("{}{}", self.base, request.path);
        let authorization = self
            .key
            .as_ref()
            .map(|key| format!("Bearer {key}"))
            .or_else(|| request.authorization.clone());
        let answer = if let (Method::Post, Some(body)) = (request.method, &request.body) {
            let mut call = self.agent.post(&url);
            if let Some(value) = &authorization {
                call = call.header("Authorization", value);
            }
            call.send_json(body)
        } else {
            let mut call = self.agent.get(&url);
            if let Some(value) = &authorization {
                call = call.header("Authorization", value);
            }
            call.call()
        };
        let mut response = answer.map_err(|e| BackendError(format!("{url}: {e}")))?;
        let status = response.status().as_u16();
        let bytes = response
            .body_mut()
            .read_to_vec()
            .map_err(|e| BackendError(format!("{url}: {e}")))?;
        Ok(ApiAnswer {
            status,
            body: json_or_text(&bytes),
        })
    }
}

impl Backend for Remote {
    async fn send(&self, request: ApiRequest) -> Result<ApiAnswer, BackendError> {
        let remote = self.clone();
        // ureq blocks: never on an async worker.
        tokio::task::spawn_blocking(move || remote.send_blocking(&request))
            .await
            .map_err(|e| BackendError(e.to_string()))?
    }
}
