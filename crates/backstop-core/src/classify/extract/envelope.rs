//! JSON bodies: the error envelopes APIs answer with, and batch results that report
//! per-item failures.
//!
//! A body may be the report's `output`, or JSON inside its `message` (the whole message, or
//! what follows a short prefix). Each shape below adds what it can; the first value found for
//! a field is kept, so the more specific shapes run first.

use serde_json::{Map, Value};

use super::{Extracted, ExtractorInfo, Source};
use crate::report::{GrpcCode, SideEffectState};

type Object = Map<String, Value>;

pub(super) const INFO_BATCH: ExtractorInfo = ExtractorInfo {
    name: "batch_result",
    reads: "a batch response that reports per-item failures: a failure count or list (FailedRecordCount, failureCount, Failed, Errors, writeErrors, failures, non-empty UnprocessedItems) beside items that went through, or a list of items some of which failed (bulk responses with \"errors\": true, per-item status or success flags)",
    example: r#"{"FailedRecordCount": 2, "Records": [{"SequenceNumber": "1"}, {"ErrorCode": "ProvisionedThroughputExceededException"}, {"ErrorCode": "InternalFailure"}]}"#,
    finds: "side_effects partial (every item failed: the first item's error code instead)",
};

pub(super) const INFO_GRAPHQL: ExtractorInfo = ExtractorInfo {
    name: "graphql",
    reads: "a GraphQL response with an errors list: data beside the errors is a partial result; errors alone give the first error's extensions.code (or type)",
    example: r#"{"data": null, "errors": [{"message": "Not logged in", "extensions": {"code": "UNAUTHENTICATED"}}]}"#,
    finds: "error_code \"UNAUTHENTICATED\", text \"Not logged in\"",
};

pub(super) const INFO_JSONRPC: ExtractorInfo = ExtractorInfo {
    name: "jsonrpc",
    reads: "a JSON-RPC 2.0 error object: its numeric code as the error code, its message as text; an MCP tool result with isError: its text content",
    example: r#"{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}"#,
    finds: "error_code \"-32601\"",
};

pub(super) const INFO_OK_FALSE: ExtractorInfo = ExtractorInfo {
    name: "ok_false",
    reads: "an {\"ok\": false, \"error\": \"...\"} envelope, which some APIs send with HTTP 200: the error as the error code",
    example: r#"{"ok": false, "error": "ratelimited"}"#,
    finds: "error_code \"ratelimited\"",
};

pub(super) const INFO_PROBLEM: ExtractorInfo = ExtractorInfo {
    name: "problem_details",
    reads: "RFC 9457 problem details: status as the HTTP status, the type URI's last segment as the error code, title and detail as text",
    example: r#"{"type": "https://example.com/probs/out-of-credit", "title": "You do not have enough credit.", "status": 403}"#,
    finds: "http_status 403, error_code \"out-of-credit\"",
};

pub(super) const INFO_ERROR_OBJECT: ExtractorInfo = ExtractorInfo {
    name: "error_object",
    reads: "an error object ({\"error\": {...}}, or code and message at the top): a reason, then code, then type as the error code; a gRPC status name as the gRPC code; a numeric code or status 100-599 as the HTTP status; the message as text",
    example: r#"{"error": {"code": 429, "message": "Quota exceeded for quota metric 'Requests' per minute", "status": "RESOURCE_EXHAUSTED"}}"#,
    finds: "http_status 429, grpc_code RESOURCE_EXHAUSTED, text \"Quota exceeded ...\"",
};

pub(super) const INFO_FLAGS: ExtractorInfo = ExtractorInfo {
    name: "retry_flags",
    reads: "a retryable flag the body carries (retryable, isRetryable, retriable, is_retryable) and error labels (TransientTransactionError, RetryableWriteError)",
    example: r#"{"errorLabels": ["TransientTransactionError"], "code": 112, "codeName": "WriteConflict"}"#,
    finds: "retryable true, error_code \"WriteConflict\"",
};

pub(super) const INFO_LLM: ExtractorInfo = ExtractorInfo {
    name: "llm_response",
    reads: "a model's answer that stopped for a reason other than finishing: finish_reason / finishReason (length, MAX_TOKENS, content_filter, SAFETY), stop_reason (max_tokens, refusal), promptFeedback.blockReason",
    example: r#"{"candidates": [{"finishReason": "SAFETY", "index": 0}]}"#,
    finds: "text \"finish_reason: SAFETY\"",
};

pub(super) const INFO_EMPTY: ExtractorInfo = ExtractorInfo {
    name: "empty_output",
    reads: "output that is an empty list or empty text, or an object (and its data, hits or result object) whose every list is empty, with no error",
    example: r#"{"results": [], "total": 0}"#,
    finds: "text \"no results\"",
};

/// The labels that say a failure may be retried as it is.
const RETRY_LABELS: [&str; 3] = [
    "TransientTransactionError",
    "RetryableWriteError",
    "RetryableError",
];

/// Reads one JSON body.
pub(super) fn read(value: &Value, from: Source, found: &mut Extracted) {
    match value {
        Value::Object(object) => {
            batch(object, from, found);
            graphql(object, from, found);
            user_errors(object, from, found);
            jsonrpc(object, from, found);
            ok_false(object, from, found);
            problem(object, from, found);
            error_object(object, from, found);
            flags(object, from, found);
            llm_response(object, from, found);
            empty(object, from, found);
        }
        Value::Array(items) if items.is_empty() && from == Source::Output => {
            found.add_text("no results", from, INFO_EMPTY.name);
        }
        Value::Array(items) => {
            items_outcome(items, from, found);
            if let Some(Value::Object(first)) = items.first()
                && has_any(first, &["error", "errors", "message", "code"])
            {
                read(&items[0], from, found);
            }
        }
        _ => {}
    }
}

fn has_any(object: &Object, keys: &[&str]) -> bool {
    keys.iter().any(|k| object.contains_key(*k))
}

fn text_of(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn non_empty(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        _ => false,
    }
}

/// Whether a text reads as a code (`ratelimited`, `invalid_auth`) rather than a sentence.
fn code_like(text: &str) -> bool {
    text.len() <= 80
        && !text.contains(' ')
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:#/".contains(&b))
}

/// A code (string or number) put as the error code; a sentence put as text.
fn code_or_text(value: Option<&Value>, from: Source, by: &'static str, found: &mut Extracted) {
    match value {
        Some(Value::String(s)) if code_like(s.trim()) && !s.trim().is_empty() => {
            Extracted::put(&mut found.error_code, s.trim().to_owned(), from, by);
        }
        Some(Value::String(s)) => found.add_text(s.trim(), from, by),
        Some(Value::Number(n)) => {
            Extracted::put(&mut found.error_code, n.to_string(), from, by);
        }
        _ => {}
    }
}

/// Keys whose number or list counts the items that went through.
const DONE_KEYS: [&str; 16] = [
    "successCount",
    "success_count",
    "success",
    "succeeded",
    "Successful",
    "Deleted",
    "deleted",
    "updated",
    "created",
    "inserted",
    "nInserted",
    "nModified",
    "transfers",
    "sent",
    "processed",
    "successful",
];

/// Keys whose number or list counts the items that failed.
const FAILED_KEYS: [&str; 15] = [
    "FailedPutCount",
    "FailedRecordCount",
    "FailedEntryCount",
    "failureCount",
    "failure_count",
    "failure",
    "failed",
    "failures",
    "Failed",
    "Errors",
    "writeErrors",
    "UnprocessedItems",
    "UnprocessedKeys",
    "insertErrors",
    "errors",
];

/// Keys that hold a batch's items.
const ITEM_KEYS: [&str; 8] = [
    "Records",
    "RequestResponses",
    "Entries",
    "items",
    "results",
    "responses",
    "data",
    "Responses",
];

/// How many things a count key says: a number, or the length of a list or object.
fn amount(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64(),
        Value::Array(items) => Some(items.len() as u64),
        Value::Object(map) => Some(map.len() as u64),
        _ => None,
    }
}

/// Whether one item of a batch failed (`Some(true)`), went through (`Some(false)`), or does
/// not say.
fn item_failed(item: &Value) -> Option<bool> {
    let object = item.as_object()?;
    // A bulk item wraps its result in its action: {"index": {"status": 201}}.
    if object.len() == 1
        && let Some(inner @ Value::Object(fields)) = object.values().next()
        && (fields.contains_key("status") || fields.contains_key("error"))
    {
        return item_failed(inner);
    }
    let has_error = ["error", "Error", "ErrorCode", "errorCode", "error_code"]
        .iter()
        .any(|k| {
            object
                .get(*k)
                .is_some_and(|v| !v.is_null() && v != "" && v != &Value::Bool(false))
        })
        || non_empty(object.get("errors"));
    if has_error || object.get("success") == Some(&Value::Bool(false)) {
        return Some(true);
    }
    for key in [
        "status",
        "state",
        "statusCode",
        "httpStatusCode",
        "status_code",
    ] {
        match object.get(key) {
            Some(Value::Number(n)) => return n.as_u64().map(|s| s >= 400),
            Some(Value::String(s)) => {
                let s = s.to_ascii_lowercase();
                if [
                    "error", "failed", "failure", "rejected", "invalid", "errored",
                ]
                .contains(&s.as_str())
                {
                    return Some(true);
                }
                if [
                    "ok",
                    "success",
                    "succeeded",
                    "sent",
                    "delivered",
                    "created",
                    "completed",
                ]
                .contains(&s.as_str())
                {
                    return Some(false);
                }
            }
            _ => {}
        }
    }
    if object.get("success") == Some(&Value::Bool(true)) {
        return Some(false);
    }
    [
        "id",
        "Id",
        "messageId",
        "MessageId",
        "SequenceNumber",
        "name",
        "_id",
    ]
    .iter()
    .any(|k| object.contains_key(*k))
    .then_some(false)
}

fn batch(object: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_BATCH.name;
    let failed = FAILED_KEYS
        .iter()
        .filter(|k| **k != "errors" || !object.get("errors").is_some_and(Value::is_boolean))
        .find_map(|k| amount(object.get(*k)).filter(|n| *n > 0));
    let done = DONE_KEYS
        .iter()
        .find_map(|k| amount(object.get(*k)).filter(|n| *n > 0));
    let items = ITEM_KEYS
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_array));
    let aws_count = ["FailedPutCount", "FailedRecordCount", "FailedEntryCount"]
        .iter()
        .any(|k| object.contains_key(*k));
    // BigQuery's insertAll lists only the rows that failed; the others went in.
    let unprocessed = ["UnprocessedItems", "UnprocessedKeys", "insertErrors"]
        .iter()
        .any(|k| non_empty(object.get(*k)));
    if failed.is_some() && (done.is_some() || unprocessed) {
        Extracted::put(&mut found.side_effects, SideEffectState::Partial, from, by);
        return;
    }
    // AWS counts the failed records beside the list of all of them.
    if aws_count
        && let (Some(failed), Some(items)) = (failed, items)
        && failed < items.len() as u64
    {
        Extracted::put(&mut found.side_effects, SideEffectState::Partial, from, by);
        return;
    }
    let bulk_errors = object.get("errors") == Some(&Value::Bool(true));
    if let Some(items) = items
        && (aws_count || bulk_errors || failed.is_some() || items.len() > 1)
    {
        items_outcome(items, from, found);
        if found.side_effects.is_some() {
            return;
        }
    }
    if counted_partial(object) || unprocessed_beside_done(object) {
        Extracted::put(&mut found.side_effects, SideEffectState::Partial, from, by);
        return;
    }
    // A list of items under any other name (`task_instances`, `compositeResponse`) whose
    // outcomes are mixed; and a count or list one object in (`completionStats`, `job_status`).
    for value in object.values() {
        match value {
            Value::Array(list) if list.len() > 1 && list.iter().all(Value::is_object) => {
                items_outcome(list, from, found);
            }
            Value::Object(inner) if counted_partial(inner) => {
                Extracted::put(&mut found.side_effects, SideEffectState::Partial, from, by);
            }
            Value::Object(inner) => {
                if let Some(list) = inner.values().find_map(|v| {
                    v.as_array()
                        .filter(|l| l.len() > 1 && l.iter().all(Value::is_object))
                }) {
                    items_outcome(list, from, found);
                }
            }
            _ => {}
        }
        if found.side_effects.is_some() {
            return;
        }
    }
}

/// A count, its key read as words, of sub-operations that failed, beside one of those that
/// went through (`failedCount`/`successfulCount`, `numberRecordsFailed`/
/// `numberRecordsProcessed`, `errored_operations`/`finished_operations`, `failures`/`total`):
/// partial when some failed and more than that were done or tried.
fn counted_partial(object: &Object) -> bool {
    const FAILED: [&str; 7] = [
        "failed", "failure", "failures", "fail", "errored", "errors", "rejected",
    ];
    const SUCCEEDED: [&str; 8] = [
        "success",
        "successful",
        "succeeded",
        "successes",
        "inserted",
        "imported",
        "delivered",
        "sent",
    ];
    const TRIED: [&str; 6] = [
        "processed",
        "finished",
        "total",
        "completed",
        "count",
        "rowcount",
    ];
    let mut failed = 0u64;
    let mut succeeded = 0u64;
    let mut tried = 0u64;
    for (key, value) in object {
        let Some(n) = whole_number(value) else {
            continue;
        };
        let words = super::code_words(key);
        let has = |set: &[&str]| words.split(' ').any(|w| set.contains(&w));
        if has(&FAILED) {
            failed = failed.max(n);
        } else if has(&SUCCEEDED) {
            succeeded = succeeded.max(n);
        } else if has(&TRIED) {
            tried = tried.max(n);
        }
    }
    failed > 0 && (succeeded > 0 || tried > failed)
}

/// A number, or a number written as text (`"980"`, as some APIs send counts).
fn whole_number(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A non-empty list of what was not processed (`UnprocessedQueryExecutionIds`,
/// `batcherrors`) beside a non-empty list or count of what was.
fn unprocessed_beside_done(object: &Object) -> bool {
    let mut unprocessed = false;
    let mut done = false;
    for (key, value) in object {
        let words = super::code_words(key);
        // `batcherrors` is one word: what it ends with tells.
        let failed_list = words.split(' ').any(|w| {
            w.starts_with("unprocessed")
                || w.ends_with("errors")
                || w == "failed"
                || w == "failures"
        });
        if failed_list {
            unprocessed |= non_empty(Some(value)) && !value.is_boolean();
        } else {
            done |= match value {
                Value::Array(items) => !items.is_empty(),
                Value::Number(n) => {
                    n.as_u64().is_some_and(|n| n > 0)
                        && words
                            .split(' ')
                            .any(|w| ["rowcount", "count", "processed"].contains(&w))
                }
                _ => false,
            };
        }
    }
    unprocessed && done
}

/// Which items of a batch answer went through and which failed, for a person and an agent to
/// read (`2 of 3 items went through (a, b); failed: c`): each named by its id where it has one,
/// else by its place from 0; at most 10 of each named. `None` when the output holds no list
/// of items with both outcomes.
pub fn batch_outline(output: &Value) -> Option<String> {
    let object = output.as_object()?;
    let items = ITEM_KEYS
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_array))?;
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for (place, item) in items.iter().enumerate() {
        match item_failed(item) {
            Some(true) => failed.push(item_name(item, place)),
            Some(false) => done.push(item_name(item, place)),
            None => {}
        }
    }
    if done.is_empty() || failed.is_empty() {
        return None;
    }
    let list = |names: &[String]| {
        let shown: Vec<&str> = names.iter().take(10).map(String::as_str).collect();
        let more = names.len().saturating_sub(10);
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    };
    Some(format!(
        "{} of {} items went through ({}); failed: {}",
        done.len(),
        done.len() + failed.len(),
        list(&done),
        list(&failed)
    ))
}

/// An item's id (`_id`, `id`, `MessageId`, ...; inside a bulk item's action too), else its
/// place in the list.
fn item_name(item: &Value, place: usize) -> String {
    let Some(object) = item.as_object() else {
        return place.to_string();
    };
    let inner = match object.values().next() {
        Some(Value::Object(fields)) if object.len() == 1 => fields,
        _ => object,
    };
    [
        "_id",
        "id",
        "Id",
        "MessageId",
        "messageId",
        "SequenceNumber",
        "name",
    ]
    .iter()
    .find_map(|k| match inner.get(*k)? {
        Value::String(text) if !text.is_empty() && text.len() <= 80 => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
    .unwrap_or_else(|| place.to_string())
}

/// A list of items: partial when some failed and some went through; when every one failed,
/// the first failure's code and message.
fn items_outcome(items: &[Value], from: Source, found: &mut Extracted) {
    let by = INFO_BATCH.name;
    let outcomes: Vec<Option<bool>> = items.iter().map(item_failed).collect();
    let failed = outcomes.iter().filter(|o| **o == Some(true)).count();
    let passed = outcomes.iter().filter(|o| **o == Some(false)).count();
    if failed > 0 && passed > 0 {
        Extracted::put(&mut found.side_effects, SideEffectState::Partial, from, by);
    } else if failed > 0 {
        let first = items
            .iter()
            .zip(&outcomes)
            .find(|(_, o)| **o == Some(true))
            .map(|(item, _)| item);
        if let Some(Value::Object(item)) = first {
            let inner = match item.values().next() {
                Some(Value::Object(inner)) if item.len() == 1 => inner,
                _ => item,
            };
            match inner.get("error").or_else(|| inner.get("Error")) {
                Some(Value::Object(error)) => read_error(error, from, found),
                other => code_or_text(other, from, by, found),
            }
            read_error(inner, from, found);
        }
    }
}

fn graphql(object: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_GRAPHQL.name;
    let Some(errors) = object.get("errors").and_then(Value::as_array) else {
        return;
    };
    let Some(Value::Object(first)) = errors.first() else {
        return;
    };
    let has_data = match object.get("data") {
        Some(Value::Object(data)) => data.values().any(|v| !v.is_null()),
        Some(Value::Null) | None => false,
        Some(_) => true,
    };
    if has_data {
        Extracted::put(&mut found.side_effects, SideEffectState::Partial, from, by);
    }
    let extensions = first.get("extensions").and_then(Value::as_object);
    let code = extensions
        .and_then(|e| e.get("code").or_else(|| e.get("classification")))
        .or_else(|| first.get("type"))
        .or_else(|| first.get("code"));
    code_or_text(code, from, by, found);
    for error in errors.iter().take(3) {
        if let Some(message) = text_of(error.get("message")) {
            found.add_text(message, from, by);
        }
    }
}

/// A GraphQL mutation that ran and refused its input (Shopify-style `userErrors`): their
/// messages are the failure's text.
fn user_errors(object: &Object, from: Source, found: &mut Extracted) {
    let Some(Value::Object(data)) = object.get("data") else {
        return;
    };
    let errors = data
        .values()
        .filter_map(|v| v.get("userErrors")?.as_array())
        .flatten()
        .take(3);
    for error in errors {
        if let Some(message) = text_of(error.get("message")) {
            found.add_text(message, from, INFO_GRAPHQL.name);
        }
    }
}

fn jsonrpc(object: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_JSONRPC.name;
    // MCP: a tool that failed answers a result with isError and says why in its content.
    let result = object
        .get("result")
        .and_then(Value::as_object)
        .unwrap_or(object);
    if result.get("isError") == Some(&Value::Bool(true))
        && let Some(content) = result.get("content").and_then(Value::as_array)
    {
        for text in content
            .iter()
            .filter_map(|c| text_of(c.get("text")))
            .take(3)
        {
            found.add_text(text, from, by);
        }
    }
    let Some(Value::Object(error)) = object.get("error") else {
        return;
    };
    let rpc = object.contains_key("jsonrpc") || object.contains_key("id");
    let Some(code) = error.get("code").and_then(Value::as_i64) else {
        return;
    };
    if !rpc || (100..=599).contains(&code) {
        return;
    }
    Extracted::put(&mut found.error_code, code.to_string(), from, by);
    if let Some(message) = text_of(error.get("message")) {
        found.add_text(message, from, by);
    }
    if let Some(data) = text_of(error.get("data")) {
        found.add_text(data, from, by);
    }
}

fn ok_false(object: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_OK_FALSE.name;
    if object.get("ok") != Some(&Value::Bool(false)) {
        return;
    }
    code_or_text(object.get("error"), from, by, found);
    if let Some(detail) = text_of(object.get("detail").or_else(|| object.get("warning"))) {
        found.add_text(detail, from, by);
    }
}

fn problem(object: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_PROBLEM.name;
    let typed = text_of(object.get("type"));
    let titled = text_of(object.get("title"));
    if typed.is_none() && titled.is_none() {
        return;
    }
    if !object.contains_key("status") && !object.contains_key("detail") {
        return;
    }
    if let Some(status) = status_of(object.get("status")) {
        Extracted::put_weak(&mut found.http_status, status, from, by);
    }
    if let Some(kind) = typed.filter(|t| t.contains('/') && *t != "about:blank") {
        let last = kind.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        if code_like(last) && !last.is_empty() {
            Extracted::put(&mut found.error_code, last.to_owned(), from, by);
        }
    }
    for key in ["title", "detail"] {
        if let Some(text) = text_of(object.get(key)) {
            found.add_text(text, from, by);
        }
    }
}

/// An HTTP status as a number or numeric text, 100 to 599.
fn status_of(value: Option<&Value>) -> Option<u16> {
    let n = match value? {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    u16::try_from(n).ok().filter(|s| (100..=599).contains(s))
}

fn error_object(object: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_ERROR_OBJECT.name;
    let inner = ["error", "Error"]
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_object));
    if let Some(error) = inner {
        read_error(error, from, found);
    } else {
        // OAuth's {"error": "invalid_grant", "error_description": "..."}.
        code_or_text(object.get("error"), from, by, found);
        if let Some(Value::Array(errors)) = object.get("Errors").or_else(|| object.get("errors"))
            && let Some(Value::Object(first)) = errors.first()
        {
            read_error(first, from, found);
        }
        read_error(object, from, found);
    }
    if let Some(status) = status_of(object.get("status").or_else(|| object.get("statusCode"))) {
        Extracted::put_weak(&mut found.http_status, status, from, by);
    }
}

/// The codes and message of one error object.
fn read_error(error: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_ERROR_OBJECT.name;
    // Google puts the most specific reason in `errors[].reason` or `details[].reason`.
    let reason = ["errors", "details"].iter().find_map(|k| {
        error
            .get(*k)?
            .as_array()?
            .iter()
            .find_map(|d| text_of(d.get("reason")))
    });
    if let Some(reason) = reason {
        Extracted::put(&mut found.error_code, reason.to_owned(), from, by);
    }
    // Google's QuotaFailure names the quota: its words say whether it is per minute or per day.
    let violations = error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("violations")?.as_array())
        .flatten();
    for violation in violations.take(3) {
        for key in ["quotaId", "quotaMetric", "description"] {
            if let Some(text) = text_of(violation.get(key)) {
                found.add_text(super::code_words(text), from, by);
            }
        }
    }
    for key in ["status", "Status"] {
        match error.get(key) {
            Some(Value::String(s)) => {
                if let Some(code) = GrpcCode::parse(s).filter(|_| s.contains('_') || is_upper(s)) {
                    Extracted::put(&mut found.grpc_code, code, from, by);
                }
            }
            value => {
                if let Some(status) = status_of(value) {
                    Extracted::put_weak(&mut found.http_status, status, from, by);
                }
            }
        }
    }
    let code_keys = [
        "code",
        "Code",
        "error_code",
        "errorCode",
        "ErrorCode",
        "__type",
        "codeName",
        "reason",
        "type",
        "errorType",
        "error_type",
    ];
    for key in code_keys {
        match error.get(key) {
            Some(Value::Number(n)) if key.eq_ignore_ascii_case("code") => {
                if let Some(status) = n.as_u64().and_then(|v| status_of(Some(&Value::from(v)))) {
                    Extracted::put_weak(&mut found.http_status, status, from, by);
                } else {
                    Extracted::put(&mut found.error_code, n.to_string(), from, by);
                }
            }
            Some(Value::String(s)) if key == "type" && (s == "error" || s.contains("://")) => {}
            Some(Value::String(s)) if code_like(s.trim()) && !s.trim().is_empty() => {
                Extracted::put(&mut found.error_code, s.trim().to_owned(), from, by);
            }
            _ => {}
        }
    }
    for key in [
        "message",
        "Message",
        "error_description",
        "detail",
        "errorMessage",
        "error_message",
        "description",
        "cause",
        "reason",
    ] {
        // Elasticsearch writes its sentence in `reason`; elsewhere `reason` is a code.
        if let Some(text) = text_of(error.get(key)).filter(|t| key != "reason" || !code_like(t)) {
            found.add_text(text, from, by);
        }
    }
}

fn is_upper(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
}

fn flags(object: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_FLAGS.name;
    let keys = [
        "retryable",
        "isRetryable",
        "retriable",
        "is_retryable",
        "Retryable",
    ];
    let inner = object.get("error").and_then(Value::as_object);
    for place in [Some(object), inner].into_iter().flatten() {
        for key in keys {
            if let Some(flag) = place.get(key).and_then(Value::as_bool) {
                Extracted::put(&mut found.retryable, flag, from, by);
            }
        }
        if let Some(labels) = place.get("errorLabels").and_then(Value::as_array) {
            let retry = labels
                .iter()
                .filter_map(Value::as_str)
                .find(|l| RETRY_LABELS.contains(l));
            if let Some(label) = retry {
                Extracted::put(&mut found.retryable, true, from, by);
                let code = text_of(place.get("codeName")).unwrap_or(label);
                Extracted::put(&mut found.error_code, code.to_owned(), from, by);
            }
        }
    }
}

/// The stop reasons that mean a model's answer is not a normal, finished one.
const ABNORMAL_STOPS: [&str; 11] = [
    "length",
    "max_tokens",
    "content_filter",
    "safety",
    "recitation",
    "prohibited_content",
    "blocklist",
    "spii",
    "refusal",
    "malformed_function_call",
    "other",
];

fn llm_response(object: &Object, from: Source, found: &mut Extracted) {
    let by = INFO_LLM.name;
    let first = ["choices", "candidates"]
        .iter()
        .find_map(|k| object.get(*k)?.as_array()?.first()?.as_object());
    let reasons = [
        first.and_then(|c| c.get("finish_reason").or_else(|| c.get("finishReason"))),
        object
            .get("stop_reason")
            .or_else(|| object.get("stopReason")),
        object
            .get("promptFeedback")
            .and_then(|p| p.get("blockReason")),
    ];
    for reason in reasons.into_iter().flatten().filter_map(Value::as_str) {
        if ABNORMAL_STOPS.contains(&reason.to_ascii_lowercase().as_str()) {
            found.add_text(format!("finish_reason: {reason}"), from, by);
        }
    }
}

fn empty(object: &Object, from: Source, found: &mut Extracted) {
    if from != Source::Output || has_any(object, &["error", "errors", "message", "code"]) {
        return;
    }
    if lists_all_empty(object, 3) == Some(true) {
        found.add_text("no results", from, INFO_EMPTY.name);
    }
}

/// Whether every list in the object, and in the objects it holds (to `depth` levels), is
/// empty: `Some(true)` when there is at least one list and all are empty, `Some(false)` when
/// one holds something, `None` when there is no list at all.
fn lists_all_empty(object: &Object, depth: u8) -> Option<bool> {
    let mut seen = None;
    for value in object.values() {
        let verdict = match value {
            // `[[]]`: a list of empty lists (one per query) holds nothing either.
            Value::Array(items) => Some(
                items
                    .iter()
                    .all(|item| item.as_array().is_some_and(Vec::is_empty)),
            ),
            Value::Object(inner) if depth > 1 => lists_all_empty(inner, depth - 1),
            _ => None,
        };
        match verdict {
            Some(false) => return Some(false),
            Some(true) => seen = Some(true),
            None => {}
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[allow(clippy::needless_pass_by_value)] // tests read better with json!(..) passed in
    fn read_output(value: Value) -> Extracted {
        let mut found = Extracted::default();
        read(&value, Source::Output, &mut found);
        found
    }

    fn code(found: &Extracted) -> Option<&str> {
        found.error_code.as_ref().map(|f| f.value.as_str())
    }

    #[test]
    fn ok_false_gives_its_error_as_the_code() {
        let found = read_output(json!({"ok": false, "error": "ratelimited"}));
        assert_eq!(code(&found), Some("ratelimited"));
        assert_eq!(found.error_code.unwrap().by, "ok_false");
    }

    #[test]
    fn problem_details_give_status_and_type() {
        let found = read_output(json!({
            "type": "https://example.com/probs/out-of-credit",
            "title": "You do not have enough credit.", "status": 403}));
        assert_eq!(found.http_status.as_ref().map(|f| f.value), Some(403));
        assert_eq!(code(&found), Some("out-of-credit"));
    }

    #[test]
    fn error_objects_of_each_provider() {
        let google = read_output(json!({"error": {"code": 429, "message": "Quota exceeded",
            "status": "RESOURCE_EXHAUSTED"}}));
        assert_eq!(google.http_status.map(|f| f.value), Some(429));
        assert_eq!(
            google.grpc_code.map(|f| f.value.name()),
            Some("RESOURCE_EXHAUSTED")
        );
        let anthropic = read_output(
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
        assert_eq!(code(&anthropic), Some("overloaded_error"));
        let openai = read_output(json!({"error": {"message": "m", "type": "requests",
            "param": null, "code": "rate_limit_exceeded"}}));
        assert_eq!(code(&openai), Some("rate_limit_exceeded"));
        let reason = read_output(json!({"error": {"code": 403, "errors": [{"reason":
            "userRateLimitExceeded"}], "status": "PERMISSION_DENIED"}}));
        assert_eq!(code(&reason), Some("userRateLimitExceeded"));
    }

    #[test]
    fn graphql_data_with_errors_is_partial_and_errors_alone_give_the_code() {
        let partial = read_output(json!({"data": {"a": 1}, "errors": [{"message": "b failed"}]}));
        assert_eq!(
            partial.side_effects.map(|f| f.value),
            Some(SideEffectState::Partial)
        );
        let alone = read_output(json!({"errors": [{"message": "no",
            "extensions": {"code": "UNAUTHENTICATED"}}]}));
        assert_eq!(code(&alone), Some("UNAUTHENTICATED"));
        assert_eq!(alone.side_effects, None);
    }

    #[test]
    fn an_mcp_tool_error_gives_its_text() {
        let found = read_output(
            json!({"jsonrpc": "2.0", "id": 4, "result": {"isError": true,
            "content": [{"type": "text", "text": "API rate limit exceeded"}]}}),
        );
        assert_eq!(found.texts[0].value, "API rate limit exceeded");
    }

    #[test]
    fn jsonrpc_codes_are_text() {
        let found = read_output(json!({"jsonrpc": "2.0", "id": 1,
            "error": {"code": -32601, "message": "Method not found"}}));
        assert_eq!(code(&found), Some("-32601"));
        assert_eq!(found.error_code.unwrap().by, "jsonrpc");
    }

    #[test]
    fn a_batch_outline_names_the_items_that_went_through_and_those_that_failed() {
        let kinesis = json!({"FailedRecordCount": 1, "Records": [
            {"SequenceNumber": "4960", "ShardId": "s-0"}, {"ErrorCode": "InternalFailure"}]});
        assert_eq!(
            batch_outline(&kinesis).as_deref(),
            Some("1 of 2 items went through (4960); failed: 1")
        );
        let bulk = json!({"errors": true, "items": [
            {"index": {"_id": "a", "status": 201}},
            {"index": {"_id": "b", "status": 429, "error": {"type": "es_rejected_execution_exception"}}},
            {"index": {"_id": "c", "status": 201}}]});
        assert_eq!(
            batch_outline(&bulk).as_deref(),
            Some("2 of 3 items went through (a, c); failed: b")
        );
        let many: Vec<Value> = (0..25)
            .map(|i| {
                if i == 3 {
                    json!({"id": i, "error": "x"})
                } else {
                    json!({"id": i})
                }
            })
            .collect();
        let outline = batch_outline(&json!({"results": many})).unwrap();
        assert!(
            outline.starts_with("24 of 25 items went through (0, 1, 2, 4,"),
            "{outline}"
        );
        assert!(outline.contains("and 14 more); failed: 3"), "{outline}");
        // All failed, or all went through: no outline.
        assert_eq!(
            batch_outline(&json!({"items": [{"error": "x"}, {"error": "y"}]})),
            None
        );
        assert_eq!(
            batch_outline(&json!({"items": [{"id": 1}, {"id": 2}]})),
            None
        );
    }

    #[test]
    fn batches_with_failed_items_are_partial() {
        for body in [
            json!({"FailedPutCount": 1, "RequestResponses": [{}, {"ErrorCode": "x"}]}),
            json!({"UnprocessedItems": {"t": [{"PutRequest": {}}]}}),
            json!({"took": 3, "errors": true, "items": [{"index": {"status": 201}},
                {"index": {"status": 429, "error": {"type": "es_rejected_execution_exception"}}}]}),
            json!({"Successful": [{"Id": "1"}], "Failed": [{"Id": "2", "Code": "x"}]}),
        ] {
            let found = read_output(body.clone());
            assert_eq!(
                found.side_effects.map(|f| f.value),
                Some(SideEffectState::Partial),
                "{body}"
            );
        }
        let nothing_failed = read_output(json!({"FailedRecordCount": 0, "Records": [{}]}));
        assert_eq!(nothing_failed.side_effects, None);
        let all_failed = read_output(json!({"FailedRecordCount": 1,
            "Records": [{"ErrorCode": "ProvisionedThroughputExceededException"}]}));
        assert_eq!(
            code(&all_failed),
            Some("ProvisionedThroughputExceededException")
        );
    }

    #[test]
    fn retry_flags_and_labels() {
        let found = read_output(json!({"error": {"code": "X", "retryable": false}}));
        assert_eq!(found.retryable.map(|f| f.value), Some(false));
        let mongo = read_output(json!({"errorLabels": ["TransientTransactionError"],
            "codeName": "WriteConflict"}));
        assert_eq!(mongo.retryable.as_ref().map(|f| f.value), Some(true));
        assert_eq!(code(&mongo), Some("WriteConflict"));
    }

    #[test]
    fn empty_results_in_output() {
        assert_eq!(read_output(json!([])).texts[0].value, "no results");
        assert_eq!(
            read_output(json!({"results": [], "total": 0})).texts[0].value,
            "no results"
        );
        assert!(read_output(json!({"results": [1]})).texts.is_empty());
        let nested =
            json!({"data": {"products": {"edges": [], "pageInfo": {"hasNextPage": false}}}});
        assert_eq!(read_output(nested).texts[0].value, "no results");
        let mixed = json!({"data": {"a": [], "b": [1]}});
        assert!(read_output(mixed).texts.is_empty());
        assert!(read_output(json!({"total": 0})).texts.is_empty());
    }
}
