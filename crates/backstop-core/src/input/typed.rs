//! The slow path of [`super::typed`]: the value read again through a deserializer whose error
//! records which kind of problem serde met, so no code is told from a message's words.

use std::fmt;

use serde::de::value::{MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::Value;

use super::Format;
use crate::issue::{Issue, join_path, serde_path};

/// What went wrong reading a value into a type, by the serde constructor that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// An entry the type does not have.
    UnknownField {
        /// The entry's name.
        field: String,
        /// The entries the type has.
        expected: &'static [&'static str],
    },
    /// An entry the type requires, absent.
    MissingField(&'static str),
    /// A wrong type or value, in serde's words.
    Other(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::UnknownField { field, expected } => write!(
                f,
                "unknown field `{field}`; expected one of: {}",
                expected.join(", ")
            ),
            Problem::MissingField(field) => write!(f, "missing field `{field}`"),
            Problem::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Problem {}

impl de::Error for Problem {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Problem::Other(message.to_string())
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Problem::UnknownField {
            field: field.to_owned(),
            expected,
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Problem::MissingField(field)
    }
}

/// The first problem reading `value` into `T`, as an issue; `plain` is the fast path's error,
/// used only if the two reads disagree.
pub(super) fn first_problem<T: DeserializeOwned>(
    value: &Value,
    format: Format,
    plain: &serde_json::Error,
) -> Issue {
    let Err(error) = serde_path_to_error::deserialize::<_, T>(Tree(value)) else {
        return Issue::new("", "wrong_type", plain.to_string());
    };
    let path = serde_path(error.path());
    match error.into_inner() {
        Problem::UnknownField { field, expected } => {
            // The path already ends at the unknown entry.
            let issue = super::unknown_key("", &field, &expected.join(", "), format);
            Issue::new(path, &issue.code, issue.message)
        }
        // Serde stops at the object that lacks the entry; the issue names the entry itself.
        missing @ Problem::MissingField(field) => {
            Issue::new(join_path(&path, field), "required", missing.to_string())
        }
        other @ Problem::Other(_) => Issue::new(path, "wrong_type", other.to_string()),
    }
}

/// A JSON value as a deserializer with [`Problem`] for its error.
#[derive(Debug, Clone, Copy)]
struct Tree<'de>(&'de Value);

impl<'de> IntoDeserializer<'de, Problem> for Tree<'de> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for Tree<'de> {
    type Error = Problem;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => {
                let mut seq = SeqDeserializer::new(items.iter().map(Tree));
                let read = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(read)
            }
            Value::Object(map) => {
                let mut entries =
                    MapDeserializer::new(map.iter().map(|(k, v)| (k.as_str(), Tree(v))));
                let read = visitor.visit_map(&mut entries)?;
                entries.end()?;
                Ok(read)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Problem> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Problem> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::Object(map) if map.len() == 1 => visitor.visit_enum(MapAccessDeserializer::new(
                MapDeserializer::new(map.iter().map(|(k, v)| (k.as_str(), Tree(v)))),
            )),
            other => Err(de::Error::invalid_type(
                unexpected(other),
                &"a variant name",
            )),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

/// A value as serde names it in a type error.
fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("a number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}
