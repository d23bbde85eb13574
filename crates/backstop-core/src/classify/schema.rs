//! Checking a tool's output against the JSON Schema it should meet.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use lru::LruCache;

use serde_json::Value;

use super::Evidence;

/// A report's JSON Schema, compiled.
#[derive(Clone)]
pub struct CompiledSchema(Arc<(boon::Schemas, boon::SchemaIndex)>);

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

/// Where the schema is put for the compiler: it names no document that could be fetched.
const LOCATION: &str = "urn:backstop:report-schema";

/// Refuses every document a schema refers to: a schema is checked on its own, and a report may
/// not make backstop read a file or fetch a URL.
struct NoOtherDocuments;

impl boon::UrlLoader for NoOtherDocuments {
    fn load(&self, _url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err("a report's schema must stand alone, not refer to another document".into())
    }
}

/// How many compiled schemas are kept, by their JSON text.
const RECENT_SCHEMAS: NonZeroUsize = NonZeroUsize::new(64).expect("not zero");

/// A schema longer than this, as JSON text, is compiled each time rather than kept.
const LONGEST_KEPT: usize = 64 * 1024;

/// Schemas compiled lately, by their JSON text. An agent's tool sends the same schema with
/// each report, and compiling one (checking it against its meta-schema first) costs more than
/// classifying the report; the compiled form depends on the text alone, so a kept one is the
/// one compiling again would give.
static RECENT: LazyLock<Mutex<LruCache<String, CompiledSchema>>> =
    LazyLock::new(|| Mutex::new(LruCache::new(RECENT_SCHEMAS)));

/// Compiles a schema (draft 2020-12 unless its `$schema` names another), its `pattern`s with
/// the linear-time `regex` engine, or finds it among those compiled lately.
///
/// # Errors
/// Why the schema cannot be used, in the validator's words.
pub fn compile(schema: &Value) -> Result<CompiledSchema, String> {
    let text = schema.to_string();
    if text.len() > LONGEST_KEPT {
        return compile_anew(schema);
    }
    let recent = || RECENT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(kept) = recent().get(&text) {
        return Ok(kept.clone());
    }
    let compiled = compile_anew(schema)?;
    recent().put(text, compiled.clone());
    Ok(compiled)
}

/// Compiles a schema.
fn compile_anew(schema: &Value) -> Result<CompiledSchema, String> {
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    compiler.use_loader(Box::new(NoOtherDocuments));
    let mut schemas = boon::Schemas::new();
    let refused = |e: boon::CompileError| in_one_line(&format!("{e:#}"));
    compiler
        .add_resource(LOCATION, schema.clone())
        .map_err(refused)?;
    let index = compiler.compile(LOCATION, &mut schemas).map_err(refused)?;
    Ok(CompiledSchema(Arc::new((schemas, index))))
}

/// The compiler's message on one line, the schema called "the schema" rather than by the
/// location it was given.
fn in_one_line(message: &str) -> String {
    message
        .replace(&format!("{LOCATION}#"), "the schema")
        .lines()
        .map(|line| line.trim().trim_start_matches("- "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
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
    let (schemas, index) = if let Some(compiled) = compiled {
        &*compiled.0
    } else {
        compiled_here = compile(schema).ok()?;
        &*compiled_here.0
    };
    let Err(error) = schemas.validate(output, *index) else {
        return Some((true, Vec::new()));
    };
    let mut failures = Vec::new();
    failing_keywords(&error, &mut failures);
    let mut evidence: Vec<Evidence> = failures
        .iter()
        .take(MAX_LISTED)
        .map(|failure| {
            let pointer = failure.instance_location.to_string();
            let value = output.pointer(&pointer).map(Value::to_string);
            Evidence::note(
                format!("output{pointer}"),
                truncate(&value.unwrap_or_default()),
                failure.kind.to_string(),
            )
        })
        .collect();
    if failures.len() > MAX_LISTED {
        evidence.push(Evidence::note(
            "output",
            "",
            format!(
                "{} more schema failures not listed",
                failures.len() - MAX_LISTED
            ),
        ));
    }
    Some((false, evidence))
}

/// The keywords that failed, each once: the leaves of the validator's tree of errors, except
/// that a failed `anyOf`, `oneOf` or `not` is one failure, not its alternatives' many.
fn failing_keywords<'e, 's, 'v>(
    error: &'e boon::ValidationError<'s, 'v>,
    into: &mut Vec<&'e boon::ValidationError<'s, 'v>>,
) {
    use boon::ErrorKind;
    let whole = matches!(
        error.kind,
        ErrorKind::AnyOf | ErrorKind::OneOf(_) | ErrorKind::Not
    );
    if error.causes.is_empty() || whole {
        into.push(error);
    } else {
        for cause in &error.causes {
            failing_keywords(cause, into);
        }
    }
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
    fn a_failed_any_of_is_one_failure_and_notes_say_what_failed() {
        let schema = json!({
            "type": "object",
            "required": ["name"],
            "properties": {"id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}
        });
        let (valid, evidence) = check(&json!({"id": [1]}), &schema, None).unwrap();
        assert!(!valid);
        let found: Vec<_> = evidence
            .iter()
            .map(|e| {
                (
                    e.field.as_str(),
                    e.value.as_str(),
                    e.note.as_deref().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                ("output", r#"{"id":[1]}"#, "missing properties 'name'"),
                ("output/id", "[1]", "anyOf failed"),
            ]
        );
    }

    #[test]
    fn a_schema_compiled_lately_is_reused_and_judges_alike() {
        let schema = json!({"type": "object", "required": ["reused-schema-test"]});
        let first = compile(&schema).unwrap();
        let again = compile(&schema).unwrap();
        assert!(Arc::ptr_eq(&first.0, &again.0), "compiled twice");
        let output = json!({"other": 1});
        assert_eq!(
            check(&output, &schema, Some(&again)),
            check(&output, &schema, Some(&compile_anew(&schema).unwrap()))
        );
        // A schema that does not compile is not kept: it is refused each time.
        let bad = json!({"type": "no-such-type"});
        assert!(compile(&bad).is_err() && compile(&bad).is_err());
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
