//! `GET /openapi.json`: the document is derived from the handlers' own types and annotations,
//! so it cannot drift from what they take and return.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{cases, classify, health, recover, reviews, tasks};

/// The service's OpenAPI document.
#[derive(Debug, OpenApi)]
#[openapi(
    info(title = "backstop", description = "The retry-and-escalation authority for AI agents."),
    paths(
        classify::classify,
        recover::recover,
        recover::outcomes,
        recover::tools,
        recover::grants,
        tasks::show,
        tasks::reset,
        cases::decide,
        cases::show,
        reviews::list,
        reviews::resolve,
        health::healthz,
        health::readyz,
        health::metrics,
        openapi_json,
    ),
    modifiers(&BearerKey),
)]
pub struct ApiDoc;

struct BearerKey;

impl Modify for BearerKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API key from the service's config"))
                    .build(),
            ),
        );
    }
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "service",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
