//! The tools: what each is called, what it takes, and the API request it becomes.

use std::fmt::Write as _;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::backend::ApiRequest;
use crate::schema;

/// What a tool's answer is, for its line of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A classification.
    Classification,
    /// A recovery step.
    Step,
    /// A tool's breaker and budget after an outcome.
    Outcome,
    /// A case's result.
    Decision,
    /// A job's brief.
    Brief,
    /// A case with its attempts.
    Case,
}

/// A tool call, as the API request it becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The request.
    pub request: ApiRequest,
    /// What its answer is.
    pub answer: Answer,
}

/// The prefix of each job's decision tool: `decide_vendor-risk`.
pub const DECIDE_PREFIX: &str = "decide_";

/// One loaded job, as `GET /v1/jobs` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEntry {
    /// The job name.
    pub job: String,
    /// Its title.
    pub title: String,
}

/// Every tool, with its input schema from the service's OpenAPI document.
pub fn list(document: &Value, jobs: &[JobEntry]) -> Vec<Tool> {
    let body = |path: &str| schema::request_body(document, "post", path).unwrap_or_default();
    let names: Vec<Value> = jobs.iter().map(|j| json!(j.job)).collect();
    let mut tools = vec![
        Tool::new(
            "classify",
            "Classify a failure without counting anything: send what the failed call gave \
             (http_status, headers, exception, message, error_code, exit_code, output...); get \
             its class, whether it is retryable, and why.",
            body("/v1/classify"),
        )
        .with_title("Classify a failure")
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true)),
        Tool::new(
            "next_step",
            "A tool call failed: send the task it belongs to, the failure report and the tool \
             (context.tool); get the next step — retry (when), fix the input, change approach, \
             fall back, stop, reconcile, or escalate to a named person. Counts one attempt \
             against the task. Say the operation (`POST /v1/charges`) or `idempotent`, and the \
             `idempotency_key` you sent, so a call that may have taken effect is never resent. \
             Follow the step; never retry a policy denial or work around it with another tool.",
            body("/v1/recover"),
        )
        .with_title("What now, after a failure")
        .with_annotations(ToolAnnotations::new().destructive(false)),
        Tool::new(
            "report_outcome",
            "Report how a tool call ended (success or failure, with its class), so the tool's \
             breaker and retry budget stay true; a success with `task` resets that task's \
             failure counters.",
            body("/v1/outcomes"),
        )
        .with_title("Report a call's outcome")
        .with_annotations(ToolAnnotations::new().destructive(false)),
        Tool::new(
            "job_brief",
            "What a job asks before a decision: its questions with their answers and what each \
             means, the related records it needs, the attempt limit, the escalations and who \
             they go to, and the JSON Schema of a decision request.",
            job_schema(&names, false),
        )
        .with_title("A job's brief")
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true)),
        Tool::new(
            "case_status",
            "A case of a job: its current result, its attempt records and its review items.",
            job_schema(&names, true),
        )
        .with_title("A case's status")
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true)),
    ];
    for entry in jobs {
        let path = format!("/v1/jobs/{}/decisions", entry.job);
        let Some(input) = schema::request_body(document, "post", &path) else {
            continue;
        };
        tools.push(
            Tool::new(
                format!("{DECIDE_PREFIX}{}", entry.job),
                format!(
                    "Decide a case of `{}` ({}): send the evidence for each question (quotes or \
                     values) and the related records; get the result, what to fix if undecided, \
                     and who it escalates to. Counts an attempt; a resend with the same \
                     execution_id uses none. Read job_brief first.",
                    entry.job, entry.title
                ),
                input,
            )
            .with_title(format!("Decide: {}", entry.title))
            .with_annotations(ToolAnnotations::new().destructive(false)),
        );
    }
    tools
}

/// The input of `job_brief` (a job) and of `case_status` (a job and a case id).
fn job_schema(names: &[Value], with_case: bool) -> Arc<JsonObject> {
    let mut properties = Map::new();
    properties.insert(
        "job".to_owned(),
        json!({"type": "string", "enum": names, "description": "The job's name."}),
    );
    let mut required = vec![json!("job")];
    if with_case {
        properties.insert(
            "id".to_owned(),
            json!({"type": "string", "minLength": 1,
                   "description": "The case id: the id a decision result gave."}),
        );
        required.push(json!("id"));
    }
    let mut schema = Map::new();
    schema.insert("type".to_owned(), json!("object"));
    schema.insert("properties".to_owned(), Value::Object(properties));
    schema.insert("required".to_owned(), Value::Array(required));
    schema.insert("additionalProperties".to_owned(), json!(false));
    Arc::new(schema)
}

/// The request a tool call becomes, or why its arguments are wrong.
pub fn route(name: &str, arguments: Option<&JsonObject>) -> Result<Option<Call>, String> {
    let body = || Value::Object(arguments.cloned().unwrap_or_default());
    let call = |request, answer| Ok(Some(Call { request, answer }));
    match name {
        "classify" => call(
            ApiRequest::post("/v1/classify", body()),
            Answer::Classification,
        ),
        "next_step" => call(ApiRequest::post("/v1/recover", body()), Answer::Step),
        "report_outcome" => call(ApiRequest::post("/v1/outcomes", body()), Answer::Outcome),
        "job_brief" => {
            let job = text_argument(arguments, "job")?;
            call(
                ApiRequest::get(format!("/v1/jobs/{}", encode(&job))),
                Answer::Brief,
            )
        }
        "case_status" => {
            let job = text_argument(arguments, "job")?;
            let id = text_argument(arguments, "id")?;
            call(
                ApiRequest::get(format!("/v1/jobs/{}/cases/{}", encode(&job), encode(&id))),
                Answer::Case,
            )
        }
        _ => match name.strip_prefix(DECIDE_PREFIX) {
            Some(job) if !job.is_empty() => call(
                ApiRequest::post(format!("/v1/jobs/{}/decisions", encode(job)), body()),
                Answer::Decision,
            ),
            _ => Ok(None),
        },
    }
}

/// A required string argument.
fn text_argument(arguments: Option<&JsonObject>, name: &str) -> Result<String, String> {
    match arguments.and_then(|a| a.get(name)) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        Some(other) => Err(format!("`{name}` must be a non-empty string, not {other}")),
        None => Err(format!("`{name}` is required")),
    }
}

/// A path segment, percent-encoded: only unreserved characters stay as they are.
pub fn encode(segment: &str) -> String {
    let mut encoded = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn each_tool_becomes_its_route() {
        let report = arguments(json!({"http_status": 503}));
        let call = route("classify", Some(&report)).unwrap().unwrap();
        assert_eq!(
            call.request,
            ApiRequest::post("/v1/classify", json!({"http_status": 503}))
        );
        let call = route("decide_vendor-risk", Some(&report)).unwrap().unwrap();
        assert_eq!(call.request.path, "/v1/jobs/vendor-risk/decisions");
        assert_eq!(call.answer, Answer::Decision);
        let case = arguments(json!({"job": "vendor-risk", "id": "a b/c"}));
        let call = route("case_status", Some(&case)).unwrap().unwrap();
        assert_eq!(call.request.path, "/v1/jobs/vendor-risk/cases/a%20b%2Fc");
    }

    #[test]
    fn a_missing_or_wrong_argument_is_named() {
        assert_eq!(route("job_brief", None).unwrap_err(), "`job` is required");
        let wrong = arguments(json!({"job": 7}));
        assert_eq!(
            route("job_brief", Some(&wrong)).unwrap_err(),
            "`job` must be a non-empty string, not 7"
        );
    }

    #[test]
    fn an_unknown_tool_has_no_route() {
        assert_eq!(route("delete_everything", None).unwrap(), None);
        assert_eq!(route("decide_", None).unwrap(), None);
    }
}
