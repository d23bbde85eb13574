//! Tool input schemas, taken from the service's own OpenAPI document so they never drift from
//! what the routes accept: a request body's schema with the components it uses as `$defs`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

const COMPONENTS: &str = "#/components/schemas/";
const DEFS: &str = "#/$defs/";

/// The JSON Schema of the body `method path` takes, standing alone; `None` when the document
/// has no such route or no JSON body for it.
pub fn request_body(document: &Value, method: &str, path: &str) -> Option<Map<String, Value>> {
    let schema = document
        .pointer(&format!(
            "/paths/{}/{method}/requestBody/content/application~1json/schema",
            escape(path)
        ))?
        .clone();
    let components = document.pointer("/components/schemas")?.as_object()?;
    let mut used = BTreeSet::new();
    collect(&schema, components, &mut used);
    // The top is the body's own schema, not a reference to it: clients show its properties.
    let top = match schema.get("$ref").and_then(Value::as_str) {
        Some(target) => components.get(target.strip_prefix(COMPONENTS)?)?.clone(),
        None => schema,
    };
    let Value::Object(mut standalone) = rewrite(top) else {
        return None;
    };
    // MCP clients expect an object at the top.
    standalone.insert("type".to_owned(), json!("object"));
    if !used.is_empty() {
        let defs: Map<String, Value> = used
            .into_iter()
            .filter_map(|name| {
                let schema = components.get(&name)?.clone();
                Some((name, rewrite(schema)))
            })
            .collect();
        standalone.insert("$defs".to_owned(), Value::Object(defs));
    }
    Some(standalone)
}

/// The names of the jobs whose decision route the document lists.
pub fn jobs(document: &Value) -> Vec<String> {
    let Some(paths) = document.get("paths").and_then(Value::as_object) else {
        return Vec::new();
    };
    paths
        .keys()
        .filter_map(|path| {
            path.strip_prefix("/v1/jobs/")?
                .strip_suffix("/decisions")
                .filter(|job| !job.starts_with('{'))
                .map(str::to_owned)
        })
        .collect()
}

/// A JSON pointer token: `~` and `/` escaped.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Every component `schema` refers to, directly or through others.
fn collect(schema: &Value, components: &Map<String, Value>, used: &mut BTreeSet<String>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                if key == "$ref"
                    && let Some(name) = value.as_str().and_then(|r| r.strip_prefix(COMPONENTS))
                {
                    if used.insert(name.to_owned())
                        && let Some(target) = components.get(name)
                    {
                        collect(target, components, used);
                    }
                } else {
                    collect(value, components, used);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect(item, components, used);
            }
        }
        _ => {}
    }
}

/// `schema` with its component references pointing at `$defs`.
fn rewrite(schema: Value) -> Value {
    match schema {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .map(|(key, value)| match (key.as_str(), &value) {
                    ("$ref", Value::String(target)) if target.starts_with(COMPONENTS) => {
                        let name = &target[COMPONENTS.len()..];
                        (key, Value::String(format!("{DEFS}{name}")))
                    }
                    _ => (key, rewrite(value)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(rewrite).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> Value {
        json!({
            "paths": {
                "/v1/recover": {"post": {"requestBody": {"content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/RecoverBody"}
                }}}}},
                "/v1/jobs/{job}/cases/{id}": {"get": {}},
                "/v1/jobs/vendor-risk/decisions": {"post": {}},
            },
            "components": {"schemas": {
                "RecoverBody": {"type": "object", "properties": {
                    "report": {"$ref": "#/components/schemas/Report"}
                }},
                "Report": {"type": "object", "properties": {
                    "side_effects": {"$ref": "#/components/schemas/SideEffects"}
                }},
                "SideEffects": {"type": "string"},
                "Unused": {"type": "string"}
            }}
        })
    }

    #[test]
    fn a_body_schema_stands_alone_with_the_components_it_reaches() {
        let schema = request_body(&document(), "post", "/v1/recover").unwrap();
        assert_eq!(schema["properties"]["report"]["$ref"], "#/$defs/Report");
        assert_eq!(schema["type"], "object");
        let defs = schema["$defs"].as_object().unwrap();
        let names: Vec<&str> = defs.keys().map(String::as_str).collect();
        assert_eq!(names, ["RecoverBody", "Report", "SideEffects"]);
        assert_eq!(
            defs["Report"]["properties"]["side_effects"]["$ref"],
            "#/$defs/SideEffects"
        );
    }

    #[test]
    fn a_route_without_a_body_has_no_schema() {
        assert!(request_body(&document(), "post", "/v1/outcomes").is_none());
        assert!(request_body(&document(), "get", "/v1/jobs/{job}/cases/{id}").is_none());
    }

    #[test]
    fn jobs_are_the_decision_routes_the_document_lists() {
        assert_eq!(jobs(&document()), ["vendor-risk"]);
    }
}
