//! How record fields are written as text and read back, the same in every backend.

use jiff::Timestamp;

use crate::StoreError;

/// Milliseconds since the epoch, as stored.
pub fn millis(at: Timestamp) -> i64 {
    at.as_millisecond()
}

/// A stored time read back.
pub fn timestamp(ms: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_millisecond(ms).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// An enum read back from its one-word wire form (`undecided`, `retry`).
pub fn from_word<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|e| StoreError::Corrupt(format!("`{text}`: {e}")))
}

pub fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// A task item's stored detail read back.
pub fn task_detail(detail: Option<&str>) -> Result<Option<crate::TaskEscalation>, StoreError> {
    detail
        .map(|text| {
            serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("a task review's detail: {e}")))
        })
        .transpose()
}

/// A stored row read back.
pub fn state_row(
    kind: &str,
    key: String,
    caller: String,
    body: String,
    expires: Option<i64>,
) -> Result<crate::StateRow, StoreError> {
    let kind = crate::StateKind::parse(kind)
        .ok_or_else(|| StoreError::Corrupt(format!("a call-state row of kind `{kind}`")))?;
    Ok(crate::StateRow {
        kind,
        key,
        caller,
        body: Some(body),
        expires: expires.map(timestamp).transpose()?,
    })
}
