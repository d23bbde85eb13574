//! What a call must say, and must not: a pack's `[dispatch] disclose_ai` (the content says the
//! caller is an AI assistant and names the company it calls for) and `no_cross_disclosure`
//! (what one recipient hears holds nothing that is another recipient's own: its order, its
//! name). A live dispatch that fails a check is refused with the issue's path; a simulated one
//! carries the issues as warnings. Pure: the request's parts in, issues with paths out.

use serde_json::{Map, Value};

use crate::issue::{Issue, join_path};
use crate::pack::DispatchPolicy;

/// Values shorter than this are not compared across recipients (a `1`, a `no`): they name
/// nothing.
const MIN_DISCLOSED_CHARS: usize = 3;

/// One recipient as the checks see it.
#[derive(Debug)]
pub struct Heard<'a> {
    /// Its path in the request (`recipients[0]`).
    pub path: String,
    /// Its id.
    pub id: &'a str,
    /// Its own `values`, when it has any.
    pub own: Option<&'a Map<String, Value>>,
    /// Its case as named (`{"fields": {...}}` or `{"id": ...}`).
    pub case: &'a Value,
}

/// The issues of each recipient of a request whose content is `content` and shared values
/// `shared`, in the order given.
pub fn check(
    policy: &DispatchPolicy,
    content: &Value,
    shared: &Map<String, Value>,
    heard: &[Heard<'_>],
) -> Vec<Vec<Issue>> {
    let said = lowercase_text(content);
    heard
        .iter()
        .enumerate()
        .map(|(n, one)| {
            let mut issues = Vec::new();
            if policy.disclose_ai {
                issues.extend(discloses_ai(&said));
                issues.extend(names_company(policy, &said, shared, one));
            }
            if policy.no_cross_disclosure && heard.len() > 1 {
                issues.extend(cross_disclosed(&said, shared, heard, n));
            }
            issues
        })
        .collect()
}

/// Every string in `value`, lowercase, joined by newlines.
fn lowercase_text(value: &Value) -> String {
    let mut out = String::new();
    collect_text(value, &mut out);
    out.to_lowercase()
}

fn collect_text(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_text(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_text(v, out)),
        _ => {}
    }
}

/// The content must say the caller is an AI.
fn discloses_ai(said: &str) -> Option<Issue> {
    let words: Vec<&str> = said
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let says = words.contains(&"ai")
        || [
            "artificial intelligence",
            "automated assistant",
            "virtual assistant",
            "automated call",
        ]
        .iter()
        .any(|phrase| said.contains(phrase));
    (!says).then(|| {
        Issue::new(
            "content",
            "no_ai_disclosure",
            "the content never says the caller is an AI assistant: a live call must (the \
             pack's disclose_ai)",
        )
    })
}

/// The content must name the company: its value as sent, or the value's slot
/// (`{company}`, `{{company}}`, `${company}`) the sender fills in.
fn names_company(
    policy: &DispatchPolicy,
    said: &str,
    shared: &Map<String, Value>,
    one: &Heard<'_>,
) -> Option<Issue> {
    let key = policy.company.as_str();
    let value = one
        .own
        .and_then(|own| own.get(key))
        .or_else(|| shared.get(key))
        .and_then(Value::as_str)
        .map(str::to_lowercase);
    let by_value = value
        .as_deref()
        .is_some_and(|v| !v.is_empty() && said.contains(v));
    let slots = [
        format!("{{{key}}}"),
        format!("{{{{{key}}}}}"),
        format!("${{{key}}}"),
    ];
    let by_slot = slots.iter().any(|slot| said.contains(&slot.to_lowercase()));
    (!by_value && !by_slot).then(|| {
        Issue::new(
            "content",
            "company_not_named",
            format!(
                "the content never names the company it calls for (the value `{key}`, or its \
                 slot `{{{{{key}}}}}`): a live call must (the pack's disclose_ai)"
            ),
        )
    })
}

/// What is `heard[n]`'s to hear: the content, the shared values and its own, each with the
/// path it came at.
fn heard_texts<'a>(
    said: &'a str,
    shared: &'a Map<String, Value>,
    one: &'a Heard<'_>,
) -> Vec<(String, String)> {
    let mut texts = vec![("content".to_owned(), said.to_owned())];
    for (key, value) in shared {
        if one.own.is_some_and(|own| own.contains_key(key)) {
            continue;
        }
        texts.push((join_path("values", key), lowercase_text(value)));
    }
    for (key, value) in one.own.into_iter().flatten() {
        texts.push((
            join_path(&join_path(&one.path, "values"), key),
            lowercase_text(value),
        ));
    }
    texts
}

/// What is `one`'s own: its values and its case's fields, lowercase, long enough to name
/// something.
fn own_texts(one: &Heard<'_>) -> Vec<(String, String)> {
    let fields = one.case.get("fields").and_then(Value::as_object);
    let id = one
        .case
        .get("id")
        .into_iter()
        .map(|v| ("case id".to_owned(), v));
    one.own
        .into_iter()
        .flatten()
        .map(|(k, v)| (format!("value {k}"), v))
        .chain(
            fields
                .into_iter()
                .flatten()
                .map(|(k, v)| (format!("case field {k}"), v)),
        )
        .chain(id)
        .map(|(what, v)| (what, lowercase_text(v).trim().to_owned()))
        .filter(|(_, text)| text.chars().count() >= MIN_DISCLOSED_CHARS)
        .collect()
}

/// Where `heard[n]` would hear what is another recipient's own (and not its own too).
fn cross_disclosed(
    said: &str,
    shared: &Map<String, Value>,
    heard: &[Heard<'_>],
    n: usize,
) -> Vec<Issue> {
    let mine: Vec<String> = own_texts(&heard[n]).into_iter().map(|(_, t)| t).collect();
    let texts = heard_texts(said, shared, &heard[n]);
    let mut issues = Vec::new();
    for (m, other) in heard.iter().enumerate() {
        if m == n {
            continue;
        }
        for (what, theirs) in own_texts(other) {
            if mine.contains(&theirs) {
                continue;
            }
            if let Some((path, _)) = texts.iter().find(|(_, text)| text.contains(&theirs)) {
                if issues.iter().any(|i: &Issue| i.path == *path) {
                    continue;
                }
                issues.push(Issue::new(
                    path.clone(),
                    "cross_disclosure",
                    format!(
                        "it holds `{theirs}`, recipient `{}`'s {what}: `{}` must not hear \
                         another recipient's order (the pack's no_cross_disclosure)",
                        other.id, heard[n].id
                    ),
                ));
            }
        }
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy() -> DispatchPolicy {
        DispatchPolicy {
            disclose_ai: true,
            no_cross_disclosure: true,
            ..DispatchPolicy::default()
        }
    }

    fn codes(issues: &[Issue]) -> Vec<(&str, &str)> {
        issues
            .iter()
            .map(|i| (i.path.as_str(), i.code.as_str()))
            .collect()
    }

    #[test]
    fn a_call_says_it_is_an_ai_and_names_the_company() {
        let shared = json!({"company": "Northwind Traders"});
        let shared = shared.as_object().unwrap();
        let case = json!({"fields": {"po_number": "PO-1"}});
        let one = [Heard {
            path: "recipients[0]".into(),
            id: "r1",
            own: None,
            case: &case,
        }];
        let good = json!({"task": "Say you are an AI assistant calling for Northwind Traders."});
        assert!(check(&policy(), &good, shared, &one)[0].is_empty());
        let slot = json!("I am a virtual assistant calling for {{company}}.");
        assert!(check(&policy(), &slot, shared, &one)[0].is_empty());
        let bare = json!({"task": "Ask whether the order was received."});
        assert_eq!(
            codes(&check(&policy(), &bare, shared, &one)[0]),
            [
                ("content", "no_ai_disclosure"),
                ("content", "company_not_named")
            ]
        );
        // "said" or "paid" are not "AI".
        let words = json!("They said it was paid. Calling for Northwind Traders.");
        assert_eq!(
            codes(&check(&policy(), &words, shared, &one)[0]),
            [("content", "no_ai_disclosure")]
        );
        let off = DispatchPolicy::default();
        assert!(check(&off, &bare, shared, &one)[0].is_empty());
    }

    #[test]
    fn one_recipient_never_hears_anothers_order() {
        let content = json!("An AI assistant for Northwind Traders.");
        let shared = json!({"company": "Northwind Traders", "po_number": "PO-1"});
        let shared = shared.as_object().unwrap();
        let (case1, case2) = (
            json!({"fields": {"po_number": "PO-1"}}),
            json!({"fields": {"po_number": "PO-2"}}),
        );
        let own2 = json!({"supplier": "Beta Supply"});
        let heard = [
            Heard {
                path: "recipients[0]".into(),
                id: "r1",
                own: None,
                case: &case1,
            },
            Heard {
                path: "recipients[1]".into(),
                id: "r2",
                own: own2.as_object(),
                case: &case2,
            },
        ];
        let found = check(&policy(), &content, shared, &heard);
        assert!(found[0].is_empty(), "{:?}", found[0]);
        assert_eq!(codes(&found[1]), [("values.po_number", "cross_disclosure")]);
        // Naming another's supplier in the shared content is caught too.
        let naming = json!("An AI assistant for Northwind Traders, about Beta Supply's order.");
        let company = json!({"company": "Northwind Traders"});
        let found = check(&policy(), &naming, company.as_object().unwrap(), &heard);
        assert_eq!(codes(&found[0]), [("content", "cross_disclosure")]);
    }
}
