//! Python's repr of a dict, read as JSON.
//!
//! Python SDKs print a response body as the dict they parsed it into:
//! `Error code: 429 - {'error': {'message': 'Rate limit reached', 'code': None}}`. That is not
//! JSON (single quotes, `None`, `True`), so it is rewritten into JSON before the envelope
//! extractors read it.

use std::fmt::Write as _;

use super::ExtractorInfo;

pub(super) const INFO: ExtractorInfo = ExtractorInfo {
    name: "python_dict",
    reads: "message: a Python dict repr (single quotes, None, True, False) anywhere in the text, read as a JSON body by the envelope extractors",
    example: "Error code: 429 - {'error': {'message': 'Rate limit reached', 'type': 'requests', 'code': 'rate_limit_exceeded'}}",
    finds: "error_code \"rate_limit_exceeded\" (then as error_object)",
};

/// The first Python dict repr in the text, as a JSON value.
pub(super) fn dict_in(text: &str) -> Option<serde_json::Value> {
    let start = text.find("{'")?;
    let json = to_json(&text[start..])?;
    let mut values = serde_json::Deserializer::from_str(&json).into_iter::<serde_json::Value>();
    match values.next()? {
        Ok(value @ serde_json::Value::Object(_)) => Some(value),
        _ => None,
    }
}

/// Rewrites one balanced `{...}` of Python literals as JSON; `None` if it does not close.
fn to_json(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push('"');
                read_string(c, &mut chars, &mut out)?;
                out.push('"');
            }
            '{' | '[' | '(' => {
                depth += 1;
                out.push(if c == '(' { '[' } else { c });
            }
            '}' | ']' | ')' => {
                depth = depth.checked_sub(1)?;
                out.push(if c == ')' { ']' } else { c });
                if depth == 0 {
                    return Some(out);
                }
            }
            c if c.is_ascii_alphabetic() => {
                let mut word = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' {
                        word.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                match word.as_str() {
                    "None" => out.push_str("null"),
                    "True" => out.push_str("true"),
                    "False" => out.push_str("false"),
                    // Anything else (a class repr, `ObjectId('...')`) becomes a string, its
                    // arguments dropped, so the rest still parses.
                    _ => {
                        out.push('"');
                        out.push_str(&word);
                        out.push('"');
                        if chars.peek() == Some(&'(') {
                            skip_call(&mut chars)?;
                        }
                    }
                }
            }
            c => out.push(c),
        }
    }
    None
}

/// Skips a call's parenthesized arguments, quotes and nesting included.
fn skip_call(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<()> {
    let mut depth = 0usize;
    let mut sink = String::new();
    while let Some(c) = chars.next() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(());
                }
            }
            '\'' | '"' => read_string(c, chars, &mut sink)?,
            _ => {}
        }
    }
    None
}

/// Copies a quoted Python string's body as a JSON string body.
fn read_string(
    quote: char,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut String,
) -> Option<()> {
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let escaped = chars.next()?;
                match escaped {
                    '\'' => out.push('\''),
                    '"' => out.push_str("\\\""),
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            c if c == quote => return Some(()),
            '"' => out.push_str("\\\""),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sdk_dict_repr_reads_as_json() {
        let value = dict_in(
            "Error code: 429 - {'error': {'message': \"You exceeded your current quota, it's over\", 'type': 'insufficient_quota', 'param': None, 'code': 'insufficient_quota', 'ok': False}}",
        )
        .unwrap();
        assert_eq!(value["error"]["code"], "insufficient_quota");
        assert_eq!(value["error"]["param"], serde_json::Value::Null);
        assert_eq!(value["error"]["ok"], false);
        assert!(
            value["error"]["message"]
                .as_str()
                .unwrap()
                .contains("it's over")
        );
    }

    #[test]
    fn calls_inside_a_dict_become_their_names() {
        let value = dict_in(
            "full error: {'writeErrors': [{'index': 3, 'op': {'_id': ObjectId('65f1c2'), 'n': (1, 2)}}], 'nInserted': 3}",
        )
        .unwrap();
        assert_eq!(value["nInserted"], 3);
        assert_eq!(value["writeErrors"][0]["op"]["_id"], "ObjectId");
    }

    #[test]
    fn an_unclosed_dict_is_nothing() {
        assert_eq!(dict_in("{'error': {'message': 'cut"), None);
        assert_eq!(dict_in("no dict here"), None);
    }
}
