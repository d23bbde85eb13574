//! The failure taxonomy: a fixed set of classes, each with what it allows by default.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What kind of failure a call met. The set is fixed; see `docs/rules.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Class {
    /// A failure that may pass on its own: a timeout, a 5xx, a reset connection.
    Transient,
    /// A rate window that resets: retry after the server's hint.
    RateLimited,
    /// A spent budget, credit or quota: a person must act; no retry.
    QuotaExhausted,
    /// The request itself is wrong: fix the input.
    InvalidInput,
    /// The credentials are missing, wrong, expired or lack a permission.
    Auth,
    /// A prohibition: no retry, no fallback tool, no workaround. Stop and report.
    PolicyDenied,
    /// A lack: the tool cannot do this; a fallback tool is legitimate.
    CapabilityMissing,
    /// The call answered, but the answer does not meet its schema.
    SchemaViolation,
    /// The call worked and found nothing.
    EmptyResults,
    /// A business rule refused: a conflict, a duplicate, a failed precondition.
    Business,
    /// Some side effects happened and some did not: never retryable as a whole.
    PartialSuccess,
    /// The model could not take the request (context too long): a smaller input or a larger model.
    ModelError,
    /// Nothing settles the class; always carries a reason.
    Unclassified,
}

/// Every class, in the order of `docs/rules.md`.
pub const ALL_CLASSES: [Class; 13] = [
    Class::Transient,
    Class::RateLimited,
    Class::QuotaExhausted,
    Class::InvalidInput,
    Class::Auth,
    Class::PolicyDenied,
    Class::CapabilityMissing,
    Class::SchemaViolation,
    Class::EmptyResults,
    Class::Business,
    Class::PartialSuccess,
    Class::ModelError,
    Class::Unclassified,
];

impl Class {
    /// The wire name (`rate_limited`).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Transient => "transient",
            Class::RateLimited => "rate_limited",
            Class::QuotaExhausted => "quota_exhausted",
            Class::InvalidInput => "invalid_input",
            Class::Auth => "auth",
            Class::PolicyDenied => "policy_denied",
            Class::CapabilityMissing => "capability_missing",
            Class::SchemaViolation => "schema_violation",
            Class::EmptyResults => "empty_results",
            Class::Business => "business",
            Class::PartialSuccess => "partial_success",
            Class::ModelError => "model_error",
            Class::Unclassified => "unclassified",
        }
    }

    /// Whether a plain retry of the same call is allowed unless a rule says otherwise.
    pub fn default_retryable(self) -> bool {
        matches!(self, Class::Transient | Class::RateLimited)
    }

    /// Whether trying another tool is allowed unless a rule says otherwise.
    pub fn default_fallback_allowed(self) -> bool {
        matches!(
            self,
            Class::Transient
                | Class::RateLimited
                | Class::CapabilityMissing
                | Class::SchemaViolation
                | Class::EmptyResults
                | Class::ModelError
        )
    }

    /// Whether `retryable = true` is forbidden whatever a rule or hint says.
    ///
    /// A prohibition, a spent quota, a half-done set of side effects and an unknown failure are
    /// never retried as they are.
    pub fn never_retryable(self) -> bool {
        matches!(
            self,
            Class::PolicyDenied
                | Class::QuotaExhausted
                | Class::PartialSuccess
                | Class::Unclassified
        )
    }

    /// Whether `fallback_allowed = true` is forbidden whatever a rule or hint says.
    ///
    /// Working around a prohibition with another tool is what an injection wants.
    pub fn never_fallback(self) -> bool {
        matches!(self, Class::PolicyDenied | Class::Unclassified)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text was not the name of a class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown class `{0}`; expected one of: {names}", names = class_names())]
pub struct UnknownClass(pub String);

/// The class names joined for messages.
pub fn class_names() -> String {
    ALL_CLASSES
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Class {
    type Err = UnknownClass;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ALL_CLASSES
            .iter()
            .copied()
            .find(|c| c.as_str() == text)
            .ok_or_else(|| UnknownClass(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for class in ALL_CLASSES {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{}\"", class.as_str()));
            assert_eq!(class.as_str().parse::<Class>().unwrap(), class);
        }
        assert!("Transient".parse::<Class>().is_err());
    }

    #[test]
    fn fixed_limits_are_consistent_with_defaults() {
        for class in ALL_CLASSES {
            if class.never_retryable() {
                assert!(!class.default_retryable(), "{class}");
            }
            if class.never_fallback() {
                assert!(!class.default_fallback_allowed(), "{class}");
            }
        }
    }
}
