//! The MCP server: tools and resources over any [`Backend`].

use backstop_core::Issue;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::fmt::Write as _;

use crate::backend::{ApiAnswer, ApiRequest, Backend};
use crate::lines;
use crate::tools::{self, Answer, JobEntry};

/// The scheme of a job brief's resource: `backstop://jobs/vendor-risk`.
pub const BRIEF_URI_PREFIX: &str = "backstop://jobs/";

const INSTRUCTIONS: &str = "backstop decides what an agent does after a failure. When a tool \
call fails, call next_step with the task, the failure report and the tool, and do what the step \
says: retry only when and as it says, never retry a policy denial or work around it with another \
tool, and hand an escalation to the person it names. Report outcomes with report_outcome. For a \
job's decision, read job_brief (or the job's resource) first, then call decide_<job>.";

/// backstop as an MCP server, sending each tool call to `backend`.
#[derive(Debug, Clone)]
pub struct BackstopMcp<B> {
    backend: B,
}

impl<B: Backend> BackstopMcp<B> {
    /// A server whose tools call `backend`.
    pub fn new(backend: B) -> Self {
        BackstopMcp { backend }
    }

    async fn send(
        &self,
        mut request: ApiRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ApiAnswer, ErrorData> {
        request.authorization = authorization(context);
        self.backend
            .send(request)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    /// The loaded jobs and the service's OpenAPI document.
    async fn catalogue(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Value, Vec<JobEntry>), ErrorData> {
        let document = self.send(ApiRequest::get("/openapi.json"), context).await?;
        let listed = self.send(ApiRequest::get("/v1/jobs"), context).await?;
        if listed.status >= 400 {
            return Err(ErrorData::invalid_request(
                lines::refusal(listed.status, &listed.body),
                Some(listed.body),
            ));
        }
        let jobs = listed
            .body
            .get("jobs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                Some(JobEntry {
                    job: entry.get("job")?.as_str()?.to_owned(),
                    title: entry.get("title")?.as_str()?.to_owned(),
                })
            })
            .collect();
        Ok((document.body, jobs))
    }
}

/// The `Authorization` header of the HTTP request that carried this MCP request, if any.
pub(crate) fn authorization(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get(http::header::AUTHORIZATION))
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// A tool result: the line first, then the JSON, which is also the structured content.
fn result(line: String, body: Value, is_error: bool) -> CallToolResult {
    let mut result = if is_error {
        CallToolResult::structured_error(body)
    } else {
        CallToolResult::structured(body)
    };
    result.content.insert(0, ContentBlock::text(line));
    result
}

/// The line for a successful answer.
fn line(answer: Answer, body: &Value) -> String {
    let found = match answer {
        Answer::Classification => lines::classification(body),
        Answer::Step => lines::step(body),
        Answer::Decision => lines::decision(body),
        Answer::Outcome => body
            .get("breaker")
            .and_then(|b| b.get("state"))
            .and_then(Value::as_str)
            .map(|state| format!("recorded; the tool's breaker is {state}")),
        Answer::Brief => body.get("title").and_then(Value::as_str).map(|title| {
            format!("the brief of {title}: build the decision request from request_schema")
        }),
        Answer::Case => body
            .pointer("/case/status")
            .or_else(|| body.get("status"))
            .and_then(Value::as_str)
            .map(|status| format!("the case is {status}")),
    };
    found.unwrap_or_else(|| "done".to_owned())
}

impl<B: Backend> BackstopMcp<B> {
    /// A brief starts a task: the caller's failed approaches (`GET /v1/approaches`) go with it,
    /// so the task does not begin with what its caller's earlier tasks spent every attempt on.
    /// A brief is still given when they cannot be read.
    async fn add_failed_approaches(
        &self,
        body: &mut Value,
        line: &mut String,
        context: &RequestContext<RoleServer>,
    ) {
        let Ok(answer) = self
            .send(
                crate::backend::ApiRequest::get("/v1/approaches".to_owned()),
                context,
            )
            .await
        else {
            return;
        };
        let Some(approaches) = answer
            .body
            .get("approaches")
            .and_then(Value::as_array)
            .filter(|a| answer.status < 400 && !a.is_empty())
            .cloned()
        else {
            return;
        };
        let summaries: Vec<&str> = approaches
            .iter()
            .filter_map(|a| a.get("summary").and_then(Value::as_str))
            .take(3)
            .collect();
        let _ = write!(
            line,
            "; {} failed approach(es) of yours to avoid: {}",
            approaches.len(),
            summaries.join("; ")
        );
        if let Value::Object(fields) = body {
            fields.insert("failed_approaches".to_owned(), Value::Array(approaches));
        }
    }
}

impl<B: Backend> ServerHandler for BackstopMcp<B> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("backstop", env!("CARGO_PKG_VERSION"))
                .with_title("backstop: what now, after a failure"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (document, jobs) = self.catalogue(&context).await?;
        Ok(ListToolsResult::with_all_items(tools::list(
            &document, &jobs,
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = match tools::route(&request.name, request.arguments.as_ref()) {
            Ok(Some(call)) => call,
            Ok(None) => {
                return Err(ErrorData::invalid_params(
                    format!("no tool is called `{}`; see tools/list", request.name),
                    None,
                ));
            }
            Err(problem) => {
                let issue = Issue::new("arguments", "bad_argument", problem);
                let body = serde_json::json!({"error": {
                    "code": "malformed",
                    "message": "the tool's arguments are malformed; nothing was done",
                    "issues": [issue],
                }});
                return Ok(result(lines::refusal(400, &body), body, true).into());
            }
        };
        let answer = match self.send(call.request, &context).await {
            Ok(answer) => answer,
            Err(error) => {
                let body = serde_json::json!({"error": {
                    "code": "unavailable", "message": error.message,
                }});
                return Ok(result(
                    format!("backstop is unavailable: {}", error.message),
                    body,
                    true,
                )
                .into());
            }
        };
        let outcome = if answer.status >= 400 {
            result(
                lines::refusal(answer.status, &answer.body),
                answer.body,
                true,
            )
        } else {
            let mut body = answer.body;
            let mut line = line(call.answer, &body);
            if call.answer == Answer::Brief {
                self.add_failed_approaches(&mut body, &mut line, &context)
                    .await;
            }
            result(line, body, false)
        };
        Ok(outcome.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (_, jobs) = self.catalogue(&context).await?;
        let resources = jobs
            .into_iter()
            .map(|entry| {
                Resource::new(
                    format!("{BRIEF_URI_PREFIX}{}", entry.job),
                    entry.job.clone(),
                )
                .with_title(format!("Brief: {}", entry.title))
                .with_description(format!(
                    "What `{}` asks before a decision, and who its escalations go to.",
                    entry.job
                ))
                .with_mime_type("application/json")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(job) = request.uri.strip_prefix(BRIEF_URI_PREFIX) else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "no resource `{}`; job briefs are {BRIEF_URI_PREFIX}JOB",
                    request.uri
                ),
                None,
            ));
        };
        let arguments = serde_json::json!({"job": job});
        let Ok(Some(call)) = tools::route("job_brief", arguments.as_object()) else {
            return Err(ErrorData::resource_not_found(
                format!("no job in `{}`", request.uri),
                None,
            ));
        };
        let answer = self.send(call.request, &context).await?;
        if answer.status >= 400 {
            return Err(ErrorData::resource_not_found(
                lines::refusal(answer.status, &answer.body),
                Some(answer.body),
            ));
        }
        let text = serde_json::to_string_pretty(&answer.body)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut contents = ResourceContents::text(text, request.uri);
        if let ResourceContents::TextResourceContents { mime_type, .. } = &mut contents {
            *mime_type = Some("application/json".to_owned());
        }
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
