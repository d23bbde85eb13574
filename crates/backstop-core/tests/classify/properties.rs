//! Properties of classification that hold for every report.

use backstop_core::classify::{RuleSet, TEXT_CAP, classify};
use backstop_core::{Class, Report};
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn rules() -> &'static RuleSet {
    static RULES: std::sync::OnceLock<RuleSet> = std::sync::OnceLock::new();
    RULES.get_or_init(RuleSet::builtin)
}

fn now() -> Timestamp {
    "2026-03-01T12:00:00Z".parse().unwrap()
}

/// A report made of realistic pieces, so that rules of every family fire and collide.
#[allow(clippy::too_many_lines, reason = "a table of realistic report pieces")]
fn report_json() -> impl Strategy<Value = Map<String, Value>> {
    let status = prop::sample::select(vec![
        400u16, 401, 403, 404, 409, 413, 422, 429, 500, 501, 502, 503, 504, 529,
    ]);
    let code = prop::sample::select(vec![
        "insufficient_quota",
        "rate_limit_exceeded",
        "context_length_exceeded",
        "ThrottlingException",
        "overloaded_error",
        "invalid_request_error",
        "AccessDenied",
        "ValidationException",
        "weird_code",
    ]);
    let errno = prop::sample::select(vec![
        "ECONNRESET",
        "ENOENT",
        "EACCES",
        "ENOSPC",
        "EEXIST",
        "ETIMEDOUT",
    ]);
    let sqlstate = prop::sample::select(vec!["40001", "23505", "42601", "08006", "53100", "57P01"]);
    let grpc = prop::sample::select(vec![
        "UNAVAILABLE",
        "INVALID_ARGUMENT",
        "RESOURCE_EXHAUSTED",
        "14",
        "7",
    ]);
    let exception = prop::sample::select(vec![
        "requests.exceptions.ConnectTimeout",
        "httpx.ReadTimeout",
        "openai.RateLimitError",
        "botocore.exceptions.NoCredentialsError",
        "ValueError",
        "anthropic.OverloadedError",
    ]);
    let message = prop::sample::select(vec![
        "connection reset by peer",
        "no results found",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "blocked by sandbox policy",
        "duplicate key value violates unique constraint",
        "the frobnicator declined",
        "You exceeded your current quota",
        "Request timed out",
    ]);
    let exit_code = prop::sample::select(vec![1i64, 7, 28, 124, 127, 137]);
    let header = prop::sample::select(vec![
        ("retry-after", "2"),
        ("Retry-After", "Sun, 01 Mar 2026 12:00:30 GMT"),
        ("x-should-retry", "false"),
        ("retry-after-ms", "1500"),
        ("x-ratelimit-reset-requests", "6m0s"),
        ("retry-after", "soon"),
    ]);
    (
        prop::option::of(status),
        prop::option::of(code),
        prop::option::of(errno),
        prop::option::of(sqlstate),
        prop::option::of(grpc),
        prop::option::of(exception),
        prop::option::of(message),
        prop::option::of(exit_code),
        prop::collection::vec(header, 0..3),
        prop::option::of((0u64..4, 1u64..4)),
    )
        .prop_map(
            |(
                status,
                code,
                errno,
                sqlstate,
                grpc,
                exception,
                message,
                exit_code,
                headers,
                effects,
            )| {
                let mut m = Map::new();
                let mut put = |k: &str, v: Option<Value>| {
                    if let Some(v) = v {
                        m.insert(k.to_owned(), v);
                    }
                };
                put("http_status", status.map(|s| json!(s)));
                put("error_code", code.map(|s| json!(s)));
                put("errno", errno.map(|s| json!(s)));
                put("sqlstate", sqlstate.map(|s| json!(s)));
                put("grpc_code", grpc.map(|s| json!(s)));
                put("exception", exception.map(|s| json!(s)));
                put("message", message.map(|s| json!(s)));
                put("exit_code", exit_code.map(|s| json!(s)));
                put(
                    "side_effects",
                    effects.map(|(d, t)| json!({"done": d.min(t), "total": t})),
                );
                if !headers.is_empty() {
                    // One value per header name: repeated names are joined, another matter.
                    let mut h = Map::new();
                    for (k, v) in headers {
                        if !h.keys().any(|e: &String| e.eq_ignore_ascii_case(k)) {
                            h.insert(k.to_owned(), json!(v));
                        }
                    }
                    m.insert("headers".to_owned(), Value::Object(h));
                }
                if m.is_empty() {
                    m.insert("message".to_owned(), json!("something failed"));
                }
                m
            },
        )
}

fn parse(map: &Map<String, Value>) -> Report {
    Report::from_json(&Value::Object(map.clone()).to_string()).expect("generated reports are valid")
}

/// Writes a JSON object with its keys in the given order (`serde_json` sorts them otherwise).
fn object_in_order(pairs: &[(&String, &Value)]) -> String {
    let body: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}:{}", Value::String((*k).clone()), v))
        .collect();
    format!("{{{}}}", body.join(","))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, rng_algorithm: prop::test_runner::RngAlgorithm::ChaCha,
        // A fixed seed: the same cases on every run and machine, so CI cannot flake.
        rng_seed: prop::test_runner::RngSeed::Fixed(0x6261_636b_7374_6f70), ..ProptestConfig::default() })]

    #[test]
    fn classification_is_deterministic(map in report_json()) {
        let report = parse(&map);
        prop_assert_eq!(classify(rules(), &report, now()), classify(rules(), &report, now()));
    }

    #[test]
    fn header_name_case_does_not_matter(map in report_json(), upper in any::<bool>()) {
        let mut changed = map.clone();
        if let Some(Value::Object(headers)) = changed.get_mut("headers") {
            *headers = headers
                .iter()
                .map(|(k, v)| (if upper { k.to_uppercase() } else { k.to_lowercase() }, v.clone()))
                .collect();
        }
        prop_assert_eq!(classify(rules(), &parse(&map), now()), classify(rules(), &parse(&changed), now()));
    }

    #[test]
    fn json_field_order_does_not_matter(map in report_json(), seed in any::<u64>()) {
        let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
        // A deterministic shuffle from the seed.
        let n = pairs.len();
        let mut state = seed;
        for i in (1..n).rev() {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let j = usize::try_from(state >> 33).unwrap() % (i + 1);
            pairs.swap(i, j);
        }
        let shuffled = Report::from_json(&object_in_order(&pairs)).unwrap();
        prop_assert_eq!(classify(rules(), &parse(&map), now()), classify(rules(), &shuffled, now()));
    }

    #[test]
    fn fixed_limits_always_hold(map in report_json()) {
        let c = classify(rules(), &parse(&map), now());
        if c.class.never_retryable() {
            prop_assert!(!c.retryable, "{:?}", c);
        }
        if c.class.never_fallback() {
            prop_assert!(!c.fallback_allowed, "{:?}", c);
        }
        prop_assert!(!c.reason.trim().is_empty());
        if c.class != Class::Unclassified {
            prop_assert!(c.rule.is_some());
        }
    }

    #[test]
    fn partial_side_effects_are_never_retryable(map in report_json(), total in 2u64..10, frac in 0.01f64..0.99) {
        let mut map = map;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
        let done = ((total as f64 * frac) as u64).clamp(1, total - 1);
        map.insert("side_effects".to_owned(), json!({"done": done, "total": total}));
        let c = classify(rules(), &parse(&map), now());
        prop_assert_eq!(c.class, Class::PartialSuccess);
        prop_assert!(!c.retryable);
    }

    #[test]
    fn a_retry_hint_is_never_earlier_than_the_header_says(
        seconds in 0u32..100_000,
        ms in 0u32..10_000_000,
        date_offset in 0i64..1_000_000,
        which in 0u8..7,
    ) {
        let date = now().checked_add(SignedDuration::from_secs(date_offset)).unwrap();
        let http_date = httpdate_of(date);
        let mut headers = Map::new();
        let mut floor = 0u64;
        // Retry-After is given once: as delay-seconds or as an HTTP-date. When retry-after-ms
        // is given too, it is the more precise form of the same wait and takes precedence.
        let retry_after_floor = if which & 1 != 0 {
            headers.insert("Retry-After".into(), json!(seconds.to_string()));
            u64::from(seconds) * 1000
        } else {
            headers.insert("RETRY-AFTER".into(), json!(http_date));
            u64::try_from(date_offset).unwrap() * 1000
        };
        if which & 2 != 0 {
            headers.insert("retry-after-ms".into(), json!(ms.to_string()));
            floor = floor.max(u64::from(ms));
        } else {
            floor = floor.max(retry_after_floor);
        }
        if which & 4 != 0 {
            headers.insert("x-ratelimit-reset-requests".into(), json!(format!("{seconds}s")));
            floor = floor.max(u64::from(seconds) * 1000);
        }
        let report = Report::from_json(&json!({"http_status": 503, "headers": headers}).to_string()).unwrap();
        let c = classify(rules(), &report, now());
        let hint = c.retry_after_ms.expect("a valid header gives a hint");
        prop_assert!(hint >= floor, "hint {hint} ms < {floor} ms");
    }

    #[test]
    fn text_past_the_cap_changes_nothing(map in report_json(), tail in "[a-z ]{1,64}") {
        let mut long = map.clone();
        let message = map.get("message").and_then(Value::as_str).unwrap_or("connection reset by peer");
        let padded = format!("{message}{}", " ".repeat(TEXT_CAP));
        let mut capped = map.clone();
        capped.insert("message".into(), json!(padded.clone()));
        long.insert("message".into(), json!(format!("{padded}{tail} timed out no results")));
        let a = classify(rules(), &parse(&capped), now());
        let b = classify(rules(), &parse(&long), now());
        prop_assert_eq!((a.class, a.rule, a.retryable), (b.class, b.rule, b.retryable));
    }
}

/// An IMF-fixdate for a timestamp.
fn httpdate_of(at: Timestamp) -> String {
    at.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}
