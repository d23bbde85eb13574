//! `GET /openapi.json`. The pack-independent part of the document is `base.json`, derived from
//! the handlers' own types and annotations by `derived` (feature `openapi`, on in this crate's
//! tests, which fail when the file differs from what the types give), so it cannot drift from
//! what they take and return, and the shipped binary carries no derive code. The decision route
//! is listed once per loaded pack, `/v1/jobs/{its job}/decisions`, with the pack's exact request
//! as its body (its questions, related kinds and case naming), so a generated client sends what
//! the service takes; a job no pack has is answered 404 `unknown_job`.

use std::sync::{Arc, LazyLock};

use axum::Json;
use axum::extract::State;
use serde_json::Value;

#[cfg(feature = "openapi")]
mod constraints;
#[cfg(feature = "openapi")]
pub mod derived;

/// The document's pack-independent part (`base.json`, as `derived::base` gives it), parsed once.
static BASE_DOCUMENT: LazyLock<Value> =
    LazyLock::new(|| serde_json::from_str(include_str!("base.json")).expect("base.json is JSON"));

/// This document.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/openapi.json", tag = "service",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json"))))]
pub async fn openapi_json(State(state): State<Arc<crate::AppState>>) -> Json<Value> {
    let catalog = state.catalog();
    Json(document(catalog.packs.values().map(AsRef::as_ref)))
}

/// Where a pack's request schema finds the schema of a JSON value without U+0000.
const NUL_FREE: &str = "JsonValueWithoutNul";

/// The document, with a decision route for each of `packs`.
pub fn document<'a>(packs: impl Iterator<Item = &'a backstop_core::pack::Pack>) -> Value {
    let packs: Vec<&backstop_core::pack::Pack> = packs.collect();
    let mut doc = BASE_DOCUMENT.clone();
    effect_routes(&mut doc, &packs);
    let packs = packs.into_iter();
    let template = doc["paths"]["/v1/jobs/{job}/decisions"]["post"].clone();
    let mut jobs = Vec::new();
    for pack in packs {
        jobs.push(pack.job.clone());
        let slug = pack.job.replace(['-', '.'], "_");
        let name = format!("DecisionRequest_{slug}");
        add_component(
            &mut doc,
            &name,
            backstop_core::wire_schema::request_schema(pack),
        );
        let mut operation = job_operation(&template, format!("decide_{slug}"), &name);
        operation["summary"] = Value::from(format!(
            "A decision on a `{}` case: {}",
            pack.job, pack.title
        ));
        doc["paths"][format!("/v1/jobs/{}/decisions", pack.job)] =
            serde_json::json!({"post": operation});
    }
    // Only the loaded jobs are listed: any other job is answered 404 `unknown_job`.
    if let Some(paths) = doc["paths"].as_object_mut() {
        paths.remove("/v1/jobs/{job}/decisions");
    }
    if let Some(schemas) = doc["components"]["schemas"].as_object_mut() {
        for generic in [
            "RequestBody",
            "CaseName",
            "EvidenceBody",
            "ExcerptBody",
            "RelatedBody",
        ] {
            schemas.remove(generic);
        }
    }
    for route in ["/v1/jobs/{job}/cases/{id}", "/v1/jobs/{job}"] {
        if let Some(job) = doc["paths"][route]["get"]["parameters"]
            .as_array_mut()
            .and_then(|p| p.iter_mut().find(|p| p["name"] == "job"))
        {
            job["schema"] = serde_json::json!({"type": "string", "enum": &jobs});
        }
    }
    doc
}

/// The dispatch route once per pack with a `[dispatch]` table, its body that pack's exact
/// dispatch request; the webhook route's body, the delivery schema.
fn effect_routes(doc: &mut Value, packs: &[&backstop_core::pack::Pack]) {
    let template = doc["paths"]["/v1/jobs/{job}/dispatches"]["post"].clone();
    if let Some(paths) = doc["paths"].as_object_mut() {
        paths.remove("/v1/jobs/{job}/dispatches");
    }
    for pack in packs.iter().filter(|p| p.dispatch.is_some()) {
        let slug = pack.job.replace(['-', '.'], "_");
        let name = format!("DispatchRequest_{slug}");
        add_component(
            doc,
            &name,
            backstop_core::wire_schema::dispatch_schema(pack),
        );
        let operation = job_operation(&template, format!("dispatch_{slug}"), &name);
        doc["paths"][format!("/v1/jobs/{}/dispatches", pack.job)] =
            serde_json::json!({"post": operation});
    }
    add_component(
        doc,
        "Delivery",
        backstop_core::wire_schema::delivery_schema(),
    );
    doc["paths"]["/v1/webhooks/{source}"]["post"]["requestBody"]["content"]["application/json"]["schema"] =
        serde_json::json!({"$ref": "#/components/schemas/Delivery"});
}

/// Puts `schema` in the components as `name`, with the NUL-free value its `$defs` holds.
fn add_component(doc: &mut Value, name: &str, mut schema: Value) {
    let defs = schema
        .as_object_mut()
        .and_then(|o| o.remove("$defs"))
        .unwrap_or_default();
    doc["components"]["schemas"][name] = local_refs(&schema);
    doc["components"]["schemas"][NUL_FREE] = local_refs(&defs["nul_free"]);
}

/// A route's `template` operation for one job: no `{job}` parameter, its own operation id, and
/// the component `body` as its request body.
fn job_operation(template: &Value, operation_id: String, body: &str) -> Value {
    let mut operation = template.clone();
    if let Some(o) = operation.as_object_mut() {
        o.remove("parameters");
        o.insert("operationId".to_owned(), Value::from(operation_id));
    }
    operation["requestBody"]["content"]["application/json"]["schema"] =
        serde_json::json!({"$ref": format!("#/components/schemas/{body}")});
    operation
}

/// A pack schema's `#/$defs/...` references, pointed at the document's components.
fn local_refs(schema: &Value) -> Value {
    let text = schema.to_string().replace(
        "\"#/$defs/nul_free\"",
        &format!("\"#/components/schemas/{NUL_FREE}\""),
    );
    serde_json::from_str(&text).expect("the schema is still JSON")
}
