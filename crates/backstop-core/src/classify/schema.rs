//! Checking a tool's output against the JSON Schema it should meet.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::Evidence;

/// A report's JSON Schema, compiled.
#[derive(Clone)]
pub struct CompiledSchema(Arc<jsonschema::Validator>);

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompiledSchema")
    }
}

/// Two reports are equal by their `schema` values; the compiled form follows from it.
impl PartialEq for CompiledSchema {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The largest compiled `pattern` a schema may hold, in bytes.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// Compiles a schema, its `pattern`s with the linear-time `regex` engine.
///
/// # Errors
/// Why the schema cannot be used, in the validator's words.
pub fn compile(schema: &Value) -> Result<CompiledSchema, String> {
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex().size_limit(PATTERN_SIZE_LIMIT))
        .build(schema)
        .map(|validator| CompiledSchema(Arc::new(validator)))
        .map_err(|e| e.to_string())
}

/// At most this many failing paths are listed; the rest are counted.
const MAX_LISTED: usize = 20;

/// Whether `output` meets `schema`, and the failing paths as evidence when it does not.
///
/// `compiled` is the schema as the report compiled it, when it did; else it is compiled here. A
/// schema that cannot be compiled is refused when the report is checked, so here it only
/// counts as "not checked" (`None`).
pub fn check(
    output: &Value,
    schema: &Value,
    compiled: Option<&CompiledSchema>,
) -> Option<(bool, Vec<Evidence>)> {
    let compiled_here;
    let validator = if let Some(compiled) = compiled {
        &compiled.0
    } else {
        compiled_here = compile(schema).ok()?;
        &compiled_here.0
    };
    let mut evidence = Vec::new();
    let mut failures = 0usize;
    for error in validator.iter_errors(output) {
        failures += 1;
        if failures <= MAX_LISTED {
            let pointer = error.instance_path().to_string();
            evidence.push(Evidence::note(
                format!("output{pointer}"),
                truncate(&error.instance().to_string()),
                error.to_string(),
            ));
        }
    }
    if failures > MAX_LISTED {
        evidence.push(Evidence::note(
            "output",
            "",
            format!("{} more schema failures not listed", failures - MAX_LISTED),
        ));
    }
    Some((failures == 0, evidence))
}

/// Keeps evidence values short.
fn truncate(text: &str) -> String {
    const MAX: usize = 120;
    if text.len() <= MAX {
        text.to_owned()
    } else {
        format!("{}…", &text[..text.floor_char_boundary(MAX)])
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn failing_paths_are_listed() {
        let schema = json!({
            "type": "object",
            "required": ["id", "items"],
            "properties": {"items": {"type": "array", "items": {"type": "integer"}}}
        });
        let (valid, evidence) = check(&json!({"items": [1, "two"]}), &schema, None).unwrap();
        assert!(!valid);
        let fields: Vec<_> = evidence.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"output"), "{fields:?}");
        assert!(fields.contains(&"output/items/1"), "{fields:?}");
    }

    #[test]
    fn valid_output_has_no_evidence() {
        let (valid, evidence) = check(&json!(3), &json!({"type": "integer"}), None).unwrap();
        assert!(valid && evidence.is_empty());
    }

    #[test]
    fn many_failures_are_counted_not_listed() {
        let schema = json!({"type": "array", "items": {"type": "string"}});
        let output = Value::Array((0..30).map(|i| json!(i)).collect());
        let (_, evidence) = check(&output, &schema, None).unwrap();
        assert_eq!(evidence.len(), MAX_LISTED + 1);
        assert!(
            evidence
                .last()
                .unwrap()
                .note
                .as_deref()
                .unwrap()
                .starts_with("10 more")
        );
    }
}
