//! The decision request's wire shape, for the OpenAPI document only (feature `openapi`).
//!
//! [`super::parse_request`] reads the JSON by hand so that it can list every issue at once; these
//! types only describe it. The service's tests check both name the same fields.

use std::collections::BTreeMap;

/// A decision request, as `PACKS.md` shows it.
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct RequestBody {
    /// One id per attempt; the same id on a resend.
    execution_id: String,
    /// `{"id": ...}` (id mode, and issued mode after the first result) or `{"fields": {...}}`
    /// (fields mode); absent in content mode and on an issued-mode first request.
    case: Option<CaseName>,
    /// Evidence by question key: `excerpts` for quotes questions, `value` for value questions.
    questions: Option<BTreeMap<String, EvidenceBody>>,
    /// Related records by kind.
    related: Option<BTreeMap<String, RelatedBody>>,
    /// 0 to 1; below the pack's minimum a decision is held.
    confidence: Option<f64>,
    /// Anything but `completed` decides nothing.
    source_status: Option<String>,
}

/// How a request names its case (OpenAPI only).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct CaseName {
    /// The case id.
    id: Option<String>,
    /// The identity fields.
    fields: Option<BTreeMap<String, String>>,
}

/// One question's evidence (OpenAPI only).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct EvidenceBody {
    /// Quoted passages.
    excerpts: Option<Vec<ExcerptBody>>,
    /// A structured value naming one of the question's answers.
    #[schema(value_type = Option<Object>)]
    value: Option<serde_json::Value>,
}

/// One excerpt (OpenAPI only).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ExcerptBody {
    /// The document.
    source: String,
    /// Where in it.
    locator: String,
    /// The quoted text; never stored.
    text: String,
}

/// A related record (OpenAPI only).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct RelatedBody {
    /// Its id.
    id: String,
    /// Quotes about it.
    excerpts: Option<Vec<ExcerptBody>>,
}
