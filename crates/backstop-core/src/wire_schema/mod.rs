//! Exact JSON Schemas of what the parsers take, for the service's OpenAPI document.
//!
//! The parsers read JSON by hand so that they list every issue at once; these schemas say the
//! same thing for a generated client. The contract is one-way and tested (the service's
//! `tests/parsers.rs`): what a schema accepts, its parser accepts. Where a check cannot be
//! said in JSON Schema exactly (a domain name, what `trim` counts as blank), the schema says
//! something stricter.
//!
//! - `request`: one pack's decision request
//! - `dispatch`: one pack's dispatch request, and a delivered result
//! - `report`: a failure report (`/v1/classify`, the `report` of `/v1/recover`)

use serde_json::{Value, json};

use crate::issue::MAX_ID_CHARS;

mod dispatch;
mod report;
mod request;

pub use dispatch::{delivery_schema, dispatch_schema};
pub use report::report_schema;
pub use request::request_schema;

/// No control character (Unicode `Cc`), and at least one character that is not whitespace.
pub const ID_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff][^\u0000-\u001f\u007f-\u009f]*$";
/// No control character (Unicode `Cc`); blank is allowed.
pub const NO_CONTROL_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*$";
/// At least one character that is not whitespace, and no U+0000.
pub const NOT_BLANK_PATTERN: &str = r"^[^\u0000]*[^\s\u0000\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff][^\u0000]*$";
/// No U+0000.
pub const NO_NUL_PATTERN: &str = r"^[^\u0000]*$";
/// The characters Rust's `trim` removes (Unicode `White_Space`), as a class body.
pub const TRIMMED: &str =
    r"\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";

/// A plain domain name: letter-or-digit labels joined by single hyphens, a dot between
/// labels, the last label starting with a letter, and not `www.` and one label (the parser drops
/// `www.`, which would leave a name with no dot). The parser takes more (schemes, ports, paths,
/// internationalized names); this is the part a schema can state exactly.
pub const DOMAIN_PATTERN: &str = concat!(
    "^(",
    // Two labels: the first is not `www` (a first label starting with `w`, `ww` or `www` goes on).
    "([A-Za-vx-z0-9][A-Za-z0-9]*|[Ww]([A-Za-vx-z0-9][A-Za-z0-9]*|[Ww]([A-Za-vx-z0-9][A-Za-z0-9]*|[Ww][A-Za-z0-9]+)?)?)(-[A-Za-z0-9]+)*",
    "|",
    // Three labels or more.
    "([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)+[A-Za-z0-9]+(-[A-Za-z0-9]+)*",
    ")\\.[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*$"
);

/// An id: 1 to [`MAX_ID_CHARS`] characters, not blank, no control characters.
pub fn id(description: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS,
        "pattern": ID_PATTERN, "description": description})
}

/// `schema`, or `null`.
pub fn nullable(schema: Value) -> Value {
    Value::Object(
        [(
            "anyOf".to_owned(),
            Value::Array(vec![schema, json!({"type": "null"})]),
        )]
        .into_iter()
        .collect(),
    )
}
