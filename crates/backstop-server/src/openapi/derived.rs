//! The pack-independent part of the document, derived from the handlers' types and
//! annotations and the constraints the handlers enforce. Only this crate's tests build it: they
//! check that `base.json`, which the service serves, is what it gives.

use serde_json::Value;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{
    approaches, cases, classify, dispatches, health, jobs, recover, reviews, suppressions, tasks,
    webhooks,
};

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
        approaches::list,
        crate::hooks::answer,
        jobs::list,
        jobs::show,
        cases::decide,
        cases::show,
        dispatches::dispatch,
        dispatches::outcome,
        dispatches::show,
        webhooks::receive,
        reviews::list,
        reviews::resolve,
        suppressions::list,
        suppressions::lift,
        health::healthz,
        health::readyz,
        health::metrics,
        super::openapi_json,
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

/// The document's pack-independent part: the derived document with the handlers' constraints.
#[must_use]
pub fn base() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the document serializes");
    super::constraints::apply(&mut doc);
    doc
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Set to rewrite `base.json` from the types when they changed on purpose.
    const REWRITE: &str = "BACKSTOP_WRITE_OPENAPI";

    #[test]
    fn the_served_base_is_what_the_handlers_types_give() {
        let derived = base();
        if derived == *super::super::BASE_DOCUMENT {
            return;
        }
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/openapi/base.json");
        if std::env::var_os(REWRITE).is_some() {
            let text = serde_json::to_string_pretty(&derived).expect("the document serializes");
            std::fs::write(&path, text + "\n").expect("base.json is writable");
            return;
        }
        panic!(
            "{} is not what the handlers' types give; if they changed on purpose, run \
             `{REWRITE}=1 cargo test -p backstop-server --lib openapi` and commit the file",
            path.display()
        );
    }
}
