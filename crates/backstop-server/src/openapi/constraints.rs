//! The constraints the handlers enforce that the derived schemas do not state: lengths,
//! patterns, ranges, enums and the checks between fields. Each is put on the document by the
//! component (or route) and field it belongs to; a name that is not there panics, so a renamed
//! field cannot silently lose its constraint (the OpenAPI tests build the document).

use backstop_core::issue::{MAX_LOCATOR_CHARS, MAX_NOTE_CHARS};
use backstop_core::wire_schema::{id, nullable, report_schema};
use serde_json::{Value, json};

/// A name (task, tool, caller) or id field.
fn name() -> Value {
    id("1 to 200 characters, not blank, no control characters.")
}

fn text(max: usize) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// `(component, field, optional, schema)`: each body field's constraint.
fn fields() -> Vec<(&'static str, &'static str, bool, Value)> {
    vec![
        ("RecoverBody", "task", false, name()),
        ("Context", "tool", true, name()),
        ("Context", "operation", true, text(MAX_LOCATOR_CHARS)),
        ("Context", "error", true, text(MAX_NOTE_CHARS)),
        ("Context", "idempotency_key", true, name()),
        ("OutcomeBody", "tool", false, name()),
        (
            "HookDocument",
            "hook_event_name",
            false,
            json!({"type": "string", "enum": ["PreToolUse", "PostToolUse", "PostToolUseFailure"]}),
        ),
        ("HookDocument", "session_id", false, name()),
        ("HookDocument", "tool_name", false, name()),
        (
            "HookDocument",
            "tool_input",
            true,
            json!({"type": "object"}),
        ),
        ("HookDocument", "tool_response", false, json!({})),
        ("HookDocument", "error", false, json!({})),
        ("OutcomeBody", "task", true, name()),
        ("GrantBody", "task", false, name()),
        ("GrantBody", "caller", true, name()),
        ("ResolveBody", "decision", false, name()),
        (
            "ResolveBody",
            "note",
            true,
            json!({"type": "string", "maxLength": MAX_NOTE_CHARS, "pattern": backstop_core::wire_schema::NO_NUL_PATTERN}),
        ),
        ("LiftBody", "caller", false, name()),
        ("LiftBody", "job", false, name()),
        ("LiftBody", "contact", false, name()),
        ("LiftBody", "case_id", true, name()),
        (
            "LiftBody",
            "reason",
            false,
            json!({"type": "string", "minLength": 1, "maxLength": MAX_NOTE_CHARS, "pattern": backstop_core::wire_schema::NOT_BLANK_PATTERN}),
        ),
        (
            "DispatchOutcomeBody",
            "failure_code",
            true,
            json!({"type": "string", "maxLength": 200, "pattern": backstop_core::wire_schema::NO_NUL_PATTERN}),
        ),
    ]
}

/// `(path, method, parameter, schema)`: each path or query parameter's constraint.
fn parameters() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    vec![
        ("/v1/tasks/{task}", "get", "task", name()),
        ("/v1/tasks/{task}", "get", "caller", name()),
        ("/v1/tasks/{task}/reset", "post", "task", name()),
        ("/v1/tasks/{task}/reset", "post", "caller", name()),
        ("/v1/approaches", "get", "caller", name()),
        (
            "/v1/hooks/{agent}",
            "post",
            "agent",
            json!({"type": "string", "enum": backstop_mcp::hooks::AGENTS}),
        ),
        (
            "/v1/reviews",
            "get",
            "status",
            json!({"type": "string", "enum": ["open", "resolved", "all"]}),
        ),
        ("/v1/reviews", "get", "job", name()),
        ("/v1/suppressions", "get", "caller", name()),
        ("/v1/suppressions", "get", "job", name()),
        ("/v1/suppressions", "get", "contact", name()),
        ("/v1/reviews", "get", "caller", name()),
        (
            "/v1/reviews",
            "get",
            "limit",
            json!({"type": "integer", "minimum": 1, "maximum": 1000}),
        ),
    ]
}

/// Puts the constraints on `doc`.
pub fn apply(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    schemas["Report"] = report_schema();
    for (component, field, optional, schema) in fields() {
        let property = &mut schemas[component]["properties"][field];
        assert!(
            !property.is_null(),
            "{component}.{field} is not in the document"
        );
        let description = property.get("description").cloned();
        *property = if optional { nullable(schema) } else { schema };
        if let Some(description) = description {
            property["description"] = description;
        }
    }
    // A success has no class; a task's failure goes to /v1/recover.
    schemas["OutcomeBody"]["allOf"] = json!([
        {"if": {"properties": {"outcome": {"const": "success"}}},
         "then": {"properties": {"class": {"type": "null"}}}},
        {"if": {"properties": {"outcome": {"const": "failure"}}},
         "then": {"properties": {"task": {"type": "null"}}}},
    ]);
    let paths = &mut doc["paths"];
    for (path, method, parameter, schema) in parameters() {
        let parameters = paths[path][method]["parameters"]
            .as_array_mut()
            .unwrap_or_else(|| panic!("{method} {path} has no parameters"));
        let found = parameters
            .iter_mut()
            .find(|p| p["name"] == parameter)
            .unwrap_or_else(|| panic!("{method} {path} has no parameter {parameter}"));
        found["schema"] = schema;
    }
    // Every other path id and query value: no control characters (the edge refuses them).
    for operations in paths
        .as_object_mut()
        .into_iter()
        .flat_map(|p| p.values_mut())
    {
        for operation in operations
            .as_object_mut()
            .into_iter()
            .flat_map(|o| o.values_mut())
        {
            let parameters = operation
                .get_mut("parameters")
                .and_then(Value::as_array_mut);
            for parameter in parameters.into_iter().flatten() {
                let schema = &mut parameter["schema"];
                if schema["type"] == "string"
                    && schema.get("pattern").is_none()
                    && schema.get("enum").is_none()
                {
                    schema["pattern"] = json!(backstop_core::wire_schema::NO_CONTROL_PATTERN);
                }
            }
        }
    }
}
