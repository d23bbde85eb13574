//! The strict result schema a pack implies for the source that answers its dispatches, and
//! the lint `pack check` runs over a result schema a pack names. A source that fills a result
//! by a schema can only say "I don't know" if the schema lets it: every judgment field is an
//! enum with `unknown`. Constructs many structured-output sources do not support (`$ref`,
//! `oneOf`, `anyOf`, `allOf`, recursion) silently turn results into nulls, and names such
//! sources reserve for their own fields collide without an error.

use serde_json::{Map, Value, json};

use crate::issue::{Issue, join_path};
use crate::pack::{Judge, Pack, UNKNOWN_ANSWER, ValueType};

/// Field names sources reserve on a recipient's result: a field of the same name comes back
/// null.
pub const RESERVED_FIELDS: [&str; 4] = ["status", "summary", "transcript", "call_id"];

/// The schema of the structured result a pack's value questions ask for.
pub fn implied_schema(pack: &Pack) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for q in pack.questions.iter().filter(|q| q.judge == Judge::Value) {
        let schema = match q.value_type {
            ValueType::Answer => {
                let values: Vec<&str> = q.answers.iter().map(|a| a.value.as_str()).collect();
                let means: Vec<String> = q
                    .answers
                    .iter()
                    .map(|a| format!("`{}`: {}", a.value, a.means))
                    .collect();
                json!({"type": "string", "enum": values,
                       "description": format!("{} {}", q.text, means.join(" "))})
            }
            ValueType::Date => json!({"type": ["string", "null"],
                "description": format!("{} A date (2026-12-03) or a time (RFC 3339), only when stated; otherwise null.", q.text)}),
            ValueType::Number => json!({"type": ["number", "null"],
                "description": format!("{} A number, only when stated; otherwise null.", q.text)}),
        };
        properties.insert(q.key.clone(), schema);
        required.push(q.key.clone());
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("{} result", pack.job),
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": properties,
    })
}

/// What is wrong with the pack's value questions as fields of a result schema: a reserved
/// name (in every pack), or, in a pack with `[dispatch]` (whose values come from a source's
/// result), a judgment (an answer question) with no `unknown` answer.
pub fn lint_questions(pack: &Pack) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (i, q) in pack.questions.iter().enumerate() {
        if q.judge != Judge::Value {
            continue;
        }
        if RESERVED_FIELDS.contains(&q.key.as_str()) {
            issues.push(Issue::new(
                format!("questions[{i}].key"),
                "reserved_name",
                format!(
                    "`{}` is reserved on a source's results and comes back null; rename it (`po_{}`)",
                    q.key, q.key
                ),
            ));
        }
        if pack.dispatch.is_some()
            && q.value_type == ValueType::Answer
            && !q.answers.iter().any(|a| a.value == UNKNOWN_ANSWER)
        {
            issues.push(Issue::new(
                format!("questions[{i}].answers"),
                "no_unknown",
                "a judgment needs an `unknown` answer, so an unclear result can say so instead of guessing",
            ));
        }
    }
    issues
}

/// Lints a result schema a pack names (`[dispatch] result_schema`).
///
/// Issues have paths into the schema (`properties.received.enum`): an object without
/// `additionalProperties: false`, any `$ref`, `oneOf`, `anyOf` or `allOf`, a `$defs` (the
/// way to recursion), a reserved field name, a judgment field that is not a string enum with
/// `unknown`, and a value question of the pack the schema lacks or gives other answers.
pub fn lint_result_schema(pack: &Pack, schema: &Value) -> Vec<Issue> {
    let mut issues = Vec::new();
    walk(schema, "", &mut issues);
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in properties.into_iter().flatten() {
        let path = join_path("properties", name);
        if RESERVED_FIELDS.contains(&name.as_str()) {
            issues.push(Issue::new(
                &path,
                "reserved_name",
                format!(
                    "`{name}` is reserved on a source's results and comes back null; rename it"
                ),
            ));
        }
        if let Some(values) = field.get("enum").and_then(Value::as_array)
            && !values.iter().any(|v| v == UNKNOWN_ANSWER)
        {
            issues.push(Issue::new(
                join_path(&path, "enum"),
                "no_unknown",
                "a judgment field's enum needs `unknown`",
            ));
        }
        if field.get("type").and_then(Value::as_str) == Some("boolean") {
            issues.push(Issue::new(
                join_path(&path, "type"),
                "boolean_judgment",
                "a boolean forces a guess: use an enum with `unknown`",
            ));
        }
    }
    for q in pack.questions.iter().filter(|q| q.judge == Judge::Value) {
        let path = join_path("properties", &q.key);
        let Some(field) = properties.and_then(|p| p.get(&q.key)) else {
            issues.push(Issue::new(
                &path,
                "missing",
                format!("the pack asks `{}`, which the schema does not have", q.key),
            ));
            continue;
        };
        if q.value_type != ValueType::Answer {
            continue;
        }
        let given: Vec<&str> = field
            .get("enum")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let wanted: Vec<&str> = q.answers.iter().map(|a| a.value.as_str()).collect();
        if given.is_empty() {
            issues.push(Issue::new(
                &path,
                "not_an_enum",
                format!(
                    "`{}` is a judgment: give it `enum` with the pack's answers",
                    q.key
                ),
            ));
        } else if let Some(extra) = given.iter().find(|v| !wanted.contains(v)) {
            issues.push(Issue::new(
                join_path(&path, "enum"),
                "unknown_answer",
                format!(
                    "`{extra}` is not an answer of `{}`: {}",
                    q.key,
                    wanted.join(", ")
                ),
            ));
        }
    }
    issues
}

fn walk(value: &Value, path: &str, issues: &mut Vec<Issue>) {
    let Some(map) = value.as_object() else {
        if let Value::Array(items) = value {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), issues);
            }
        }
        return;
    };
    for banned in [
        "$ref",
        "oneOf",
        "anyOf",
        "allOf",
        "$defs",
        "definitions",
        "$dynamicRef",
    ] {
        if map.contains_key(banned) {
            issues.push(Issue::new(join_path(path, banned), "unsupported", format!("`{banned}` is not supported by structured-output sources: results come back null")));
        }
    }
    let is_object =
        map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
    if is_object && map.get("additionalProperties") != Some(&Value::Bool(false)) {
        issues.push(Issue::new(
            join_path(path, "additionalProperties"),
            "open_object",
            "every object needs `additionalProperties: false`",
        ));
    }
    for (key, child) in map {
        if key == "enum" || key == "const" {
            continue;
        }
        walk(child, &join_path(path, key), issues);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::parse_pack;

    fn po() -> Pack {
        parse_pack(include_str!("../../../../packs/po-acknowledgement.toml")).unwrap()
    }

    #[test]
    fn the_implied_schema_lints_clean() {
        let pack = po();
        let schema = implied_schema(&pack);
        assert_eq!(lint_result_schema(&pack, &schema), Vec::<Issue>::new());
        assert_eq!(
            schema["properties"]["received"]["enum"],
            json!(["yes", "no", "unknown"])
        );
        assert_eq!(schema["additionalProperties"], json!(false));
    }

    #[test]
    fn every_rule_of_the_lint_has_its_path() {
        let pack = po();
        let schema = json!({
            "type": "object",
            "properties": {
                "received": {"type": "string", "enum": ["yes", "no"]},
                "status": {"type": "string"},
                "po_status": {"$ref": "#/$defs/s"},
                "spoke_with": {"type": "boolean"},
                "needs_human": {"anyOf": [{"type": "string"}]},
                "meta": {"type": "object", "properties": {}}
            },
            "$defs": {"s": {"type": "string"}}
        });
        let found: Vec<(String, String)> = lint_result_schema(&pack, &schema)
            .into_iter()
            .map(|i| (i.path, i.code))
            .collect();
        for (path, code) in [
            ("additionalProperties", "open_object"),
            ("$defs", "unsupported"),
            ("properties.received.enum", "no_unknown"),
            ("properties.status", "reserved_name"),
            ("properties.po_status.$ref", "unsupported"),
            ("properties.spoke_with.type", "boolean_judgment"),
            ("properties.needs_human.anyOf", "unsupported"),
            ("properties.meta.additionalProperties", "open_object"),
            ("properties.ship_date", "missing"),
            ("properties.po_status", "not_an_enum"),
        ] {
            assert!(
                found.contains(&(path.to_owned(), code.to_owned())),
                "{path} {code} in {found:?}"
            );
        }
    }
}
