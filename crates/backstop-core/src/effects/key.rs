//! Idempotency keys derived from content: the same logical dispatch gives byte-identical keys
//! (whatever the order of its recipients or of its JSON keys), and nothing in a key comes from
//! a clock or a random number, so a resend after a timeout or a restart finds the original.

use serde_json::Value;

use crate::case::identity::full_hash;

/// The key of one recipient's dispatch: `dk_` and 32 hex digits of the SHA-256 of the case
/// (its caller, job and id), the canonical content and the recipient (id, contact, values).
pub fn dispatch_key(
    caller: &str,
    job: &str,
    case_id: &str,
    content: &Value,
    recipient_id: &str,
    contact: &str,
    values: &Value,
) -> String {
    let mut text = String::new();
    for part in [caller, job, case_id, recipient_id, contact] {
        text.push_str(part);
        text.push('\u{1f}');
    }
    canonical(content, &mut text);
    text.push('\u{1f}');
    canonical(values, &mut text);
    format!("dk_{}", &full_hash(text.as_bytes())[..32])
}

/// The key of a batch: `db_` and 32 hex digits of the SHA-256 of its recipients' keys,
/// sorted, so the order recipients were listed in does not matter.
pub fn batch_key<'a>(keys: impl Iterator<Item = &'a str>) -> String {
    let mut keys: Vec<&str> = keys.collect();
    keys.sort_unstable();
    keys.dedup();
    format!("db_{}", &full_hash(keys.join("\u{1e}").as_bytes())[..32])
}

/// Whether `text` has the shape of a dispatch key.
pub fn is_dispatch_key(text: &str) -> bool {
    text.len() == 35
        && text.starts_with("dk_")
        && text[3..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// `value` written with object keys sorted at every depth and no spaces.
pub fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_key_ignores_json_key_order_and_nothing_else() {
        let a = json!({"task": "Ask about PO-1", "meta": {"x": 1, "y": [1, 2]}});
        let b: Value =
            serde_json::from_str(r#"{"meta": {"y": [1, 2], "x": 1}, "task": "Ask about PO-1"}"#)
                .unwrap();
        let values = json!({"company": "Northwind"});
        let key =
            |content: &Value| dispatch_key("agent", "po", "f-1", content, "r1", "+1555", &values);
        assert_eq!(key(&a), key(&b));
        assert!(is_dispatch_key(&key(&a)));
        assert_ne!(key(&a), key(&json!({"task": "Ask about PO-2"})));
        assert_ne!(
            key(&a),
            dispatch_key("agent", "po", "f-2", &a, "r1", "+1555", &values)
        );
        assert_ne!(
            key(&a),
            dispatch_key("agent", "po", "f-1", &a, "r2", "+1555", &values)
        );
        assert_ne!(
            key(&a),
            dispatch_key(
                "agent",
                "po",
                "f-1",
                &a,
                "r1",
                "+1555",
                &json!({"company": "Acme"})
            )
        );
        // Array order is content: it is kept.
        assert_ne!(key(&json!({"y": [1, 2]})), key(&json!({"y": [2, 1]})));
    }

    #[test]
    fn a_batch_key_ignores_recipient_order() {
        assert_eq!(
            batch_key(["dk_b", "dk_a"].into_iter()),
            batch_key(["dk_a", "dk_b"].into_iter())
        );
        assert_ne!(
            batch_key(["dk_a"].into_iter()),
            batch_key(["dk_a", "dk_b"].into_iter())
        );
    }
}
