//! Every input parser, fed arbitrary bytes and mutated versions of good inputs: none panics,
//! and each answers with a value or a non-empty list of issues, every one with a message.
//!
//! The parsers: a report (`/v1/classify`, `classify`), a decision request (`/v1/jobs/{job}/
//! decisions`, `decide`) for each shipped pack, a pack file, a rules file, a strategies file
//! and the service's config file.

use std::path::Path;

use backstop_core::Issue;
use backstop_core::classify::parse_rules;
use backstop_core::pack::{Pack, parse_pack};
use backstop_core::recover::StrategyTable;
use backstop_core::{Report, case::parse_request};
use backstop_server::Config;
use proptest::prelude::*;
use serde_json::{Value as Json, json};

const RULES: &str = r#"
[[rules]]
id = "mine.rate"
class = "rate_limited"
reason = "Too many requests."
when = { http_status = { min = 400, max = 499 }, message = ["slow down", "too many"] }

[[rules]]
id = "mine.timeout"
class = "transient"
reason = "It timed out."
when = { errno = "ETIMEDOUT", headers = { "x-should-retry" = "true" } }
"#;

const CONFIG: &str = r#"
listen = "127.0.0.1:7600"
db = "ledger.db"
packs = ["packs"]
[limits]
body_bytes = 2048
timeout_ms = 500
header_timeout_ms = 100
[[keys]]
hash = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
caller = "agent-a"
role = "agent"
"#;

fn packs_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs")
}

fn pack_texts() -> Vec<String> {
    [
        "vendor-risk",
        "po-acknowledgement",
        "company-classification",
    ]
    .iter()
    .map(|job| std::fs::read_to_string(packs_dir().join(format!("{job}.toml"))).unwrap())
    .collect()
}

fn packs() -> &'static [Pack] {
    static PACKS: std::sync::OnceLock<Vec<Pack>> = std::sync::OnceLock::new();
    PACKS.get_or_init(|| {
        pack_texts()
            .iter()
            .map(|text| parse_pack(text).unwrap())
            .collect()
    })
}

/// The JSON Schema validator of each shipped pack's requests.
fn pack_validator(which: usize) -> &'static jsonschema::Validator {
    static VALIDATORS: std::sync::OnceLock<Vec<jsonschema::Validator>> = std::sync::OnceLock::new();
    &VALIDATORS.get_or_init(|| {
        packs()
            .iter()
            .map(|pack| {
                jsonschema::validator_for(&backstop_core::wire_schema::request_schema(pack))
                    .unwrap()
            })
            .collect()
    })[which]
}

/// The report schema's validator.
/// A good dispatch request for the PO pack.
fn good_dispatch() -> Json {
    json!({"content": {"task": "Ask about the order."}, "values": {"company": "Northwind"},
        "case": {"fields": {"supplier": "Acme", "po_number": "PO-1"}},
        "recipients": [{"id": "r1", "contact": "+15550100", "time_zone": "UTC",
                        "case": {"fields": {"supplier": "Acme", "po_number": "PO-2"}}}],
        "not_before": "2026-12-02T09:00:00Z"})
}

/// The validators of the PO pack's dispatch request and of a delivery.
fn effect_validators() -> &'static (jsonschema::Validator, jsonschema::Validator) {
    static VALIDATORS: std::sync::OnceLock<(jsonschema::Validator, jsonschema::Validator)> =
        std::sync::OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let pack = packs().iter().find(|p| p.dispatch.is_some()).unwrap();
        (
            jsonschema::validator_for(&backstop_core::wire_schema::dispatch_schema(pack)).unwrap(),
            jsonschema::validator_for(&backstop_core::wire_schema::delivery_schema()).unwrap(),
        )
    })
}

fn report_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    VALIDATOR.get_or_init(|| {
        jsonschema::validator_for(&backstop_core::wire_schema::report_schema()).unwrap()
    })
}

/// The two report checks JSON Schema cannot state (the schema's description names them, and
/// CI's schemathesis hooks skip them): `side_effects.done` over `total`, and a `schema` that
/// does not compile.
fn beyond_the_schema(report: &Json) -> bool {
    let effects = &report["side_effects"];
    let over = effects["done"].as_u64() > effects["total"].as_u64();
    let bad_schema = !report["schema"].is_null()
        && backstop_core::classify::compile_schema(&report["schema"]).is_err();
    over || bad_schema
}

/// A good request for each shipped pack, the base the mutations start from.
fn good_requests() -> Vec<Json> {
    vec![
        json!({"execution_id": "e1", "case": {"id": "northwind.com"},
            "questions": {"data_access": {"excerpts": [{"source": "dpa.pdf", "locator": "§2", "text": "Yes."}]}},
            "related": {"counterparty": {"id": "acct-1"}}, "confidence": 0.9, "source_status": "completed"}),
        json!({"execution_id": "e1", "case": {"fields": {"supplier": "Acme", "po_number": "PO-1"}},
            "questions": {"needs_human": {"value": "no"}, "received": {"value": "yes"}},
            "confidence": 0.95, "source_status": "completed"}),
        json!({"execution_id": "e1", "questions": {}}),
    ]
}

fn good_report() -> Json {
    json!({"tool": "search", "http_status": 429, "headers": {"retry-after": "3"},
        "message": "slow down", "errno": "ECONNRESET", "side_effects": {"done": 1, "total": 2},
        "output": {"a": 1}, "schema": {"type": "object"}})
}

/// An outcome is good when it is a value, or issues that each say something.
fn assert_answered<T>(outcome: Result<T, Vec<Issue>>) -> Result<(), TestCaseError> {
    if let Err(issues) = outcome {
        prop_assert!(!issues.is_empty(), "refused with no issue");
        for issue in &issues {
            prop_assert!(!issue.message.trim().is_empty(), "{issue:?}");
            prop_assert!(!issue.code.trim().is_empty(), "{issue:?}");
        }
    }
    Ok(())
}

fn any_json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::from),
        any::<i64>().prop_map(Json::from),
        any::<f64>().prop_map(Json::from),
        ".{0,12}".prop_map(Json::from),
        Just(Json::from("\u{0}")),
        Just(Json::from("x".repeat(3000))),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Json::Object(m.into_iter().collect())),
        ]
    })
}

fn any_toml() -> impl Strategy<Value = toml::Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(toml::Value::Boolean),
        any::<i64>().prop_map(toml::Value::Integer),
        any::<f64>().prop_map(toml::Value::Float),
        ".{0,12}".prop_map(toml::Value::String),
        Just(toml::Value::String("5s".to_owned())),
        Just(toml::Value::String("[unclosed".to_owned())),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(toml::Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
        ]
    })
}

/// Every place in a JSON document, as paths of object keys and array indexes.
fn json_places(value: &Json, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match value {
        Json::Object(map) => {
            for (key, item) in map {
                at.push(key.clone());
                json_places(item, at, out);
                at.pop();
            }
        }
        Json::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(i.to_string());
                json_places(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// `doc` with the value at `place` replaced by `with` (or removed, when `with` is `None` and
/// the place is an object's key).
fn json_mutated(doc: &Json, pick: prop::sample::Index, with: Option<Json>) -> Json {
    let mut places = Vec::new();
    json_places(doc, &mut Vec::new(), &mut places);
    let place = &places[pick.index(places.len())];
    let mut out = doc.clone();
    let Some((last, parents)) = place.split_last() else {
        return with.unwrap_or(Json::Null);
    };
    let mut node = &mut out;
    for step in parents {
        node = match node {
            Json::Object(map) => map.get_mut(step).unwrap(),
            Json::Array(items) => &mut items[step.parse::<usize>().unwrap()],
            _ => unreachable!(),
        };
    }
    match (node, with) {
        (Json::Object(map), Some(v)) => {
            map.insert(last.clone(), v);
        }
        (Json::Object(map), None) => {
            map.remove(last);
        }
        (Json::Array(items), v) => items[last.parse::<usize>().unwrap()] = v.unwrap_or(Json::Null),
        _ => unreachable!(),
    }
    out
}

/// `text` (TOML) with one value replaced or removed, or `None` when the mutation cannot be
/// written back as TOML.
fn toml_mutated(
    text: &str,
    pick: prop::sample::Index,
    with: Option<toml::Value>,
) -> Option<String> {
    let doc: toml::Value = toml::from_str(text).unwrap();
    let as_json: Json = serde_json::to_value(&doc).unwrap();
    let with = with.map(|v| serde_json::to_value(v).unwrap());
    let mutated = json_mutated(&as_json, pick, with);
    let back: toml::Value = serde_json::from_value(mutated).ok()?;
    toml::to_string(&back).ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, rng_algorithm: prop::test_runner::RngAlgorithm::ChaCha,
        // A fixed seed: the same cases on every run and machine, so CI cannot flake.
        rng_seed: prop::test_runner::RngSeed::Fixed(0x7061_7273_6572_7321), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_a_parser(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let text = String::from_utf8_lossy(&bytes);
        assert_answered(Report::from_json(&text))?;
        assert_answered(parse_pack(&text))?;
        assert_answered(parse_rules(&text, "mine.toml"))?;
        assert_answered(StrategyTable::load(Some(("mine.toml", &text))))?;
        assert_answered(Config::parse(&text, Path::new("/etc/backstop")))?;
    }

    #[test]
    fn arbitrary_json_never_panics_the_report_or_request_parsers(value in any_json()) {
        assert_answered(Report::from_json(&value.to_string()))?;
        for pack in packs() {
            assert_answered(parse_request(pack, "agent-a", &value))?;
        }
    }

    #[test]
    fn mutated_requests_and_reports_are_answered(
        which in 0usize..3,
        pick in any::<prop::sample::Index>(),
        with in prop::option::weighted(0.8, any_json()),
    ) {
        let request = json_mutated(&good_requests()[which], pick, with.clone());
        assert_answered(parse_request(&packs()[which], "agent-a", &request))?;
        let report = json_mutated(&good_report(), pick, with);
        assert_answered(Report::from_json(&report.to_string()))?;
    }

    #[test]
    fn a_request_its_packs_schema_accepts_the_parser_accepts(
        which in 0usize..3,
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..4),
        with in prop::collection::vec(prop::option::weighted(0.8, any_json()), 3),
    ) {
        let pack = &packs()[which];
        let mut request = good_requests()[which].clone();
        for (pick, value) in picks.into_iter().zip(with) {
            request = json_mutated(&request, pick, value);
        }
        if pack_validator(which).is_valid(&request) {
            let parsed = parse_request(pack, "agent-a", &request);
            prop_assert!(parsed.is_ok(), "{}: the schema accepts {request} but: {:?}", pack.job, parsed.err());
        }
    }

    #[test]
    fn a_dispatch_and_a_delivery_their_schemas_accept_the_parsers_accept(
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..4),
        with in prop::collection::vec(prop::option::weighted(0.8, any_json()), 3),
    ) {
        let pack = packs().iter().find(|p| p.dispatch.is_some()).unwrap();
        let (dispatch, delivery) = effect_validators();
        let mut request = good_dispatch();
        let mut body = json!({"event_id": "e1", "batch_key": "db_1", "recipient": "r1",
            "status": "completed", "result": {"received": "yes"}, "confidence": 0.5});
        for (pick, value) in picks.into_iter().zip(with) {
            request = json_mutated(&request, pick, value.clone());
            body = json_mutated(&body, pick, value);
        }
        let zone = |z: &str| jiff::tz::TimeZone::get(z).is_ok();
        if dispatch.is_valid(&request) {
            let parsed = backstop_core::effects::parse_dispatch(pack, "agent-a", &request, &zone);
            prop_assert!(parsed.is_ok(), "the schema accepts {request} but: {:?}", parsed.err());
        } else {
            assert_answered(backstop_core::effects::parse_dispatch(pack, "agent-a", &request, &zone))?;
        }
        if delivery.is_valid(&body) {
            let parsed = backstop_core::effects::parse_delivery(&body);
            prop_assert!(parsed.is_ok(), "the schema accepts {body} but: {:?}", parsed.err());
        } else {
            assert_answered(backstop_core::effects::parse_delivery(&body))?;
        }
    }

    #[test]
    fn a_report_the_report_schema_accepts_the_parser_accepts(
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..4),
        with in prop::collection::vec(prop::option::weighted(0.8, any_json()), 3),
    ) {
        let mut report = good_report();
        for (pick, value) in picks.into_iter().zip(with) {
            report = json_mutated(&report, pick, value);
        }
        if report_validator().is_valid(&report) && !beyond_the_schema(&report) {
            let parsed = Report::from_json(&report.to_string());
            prop_assert!(parsed.is_ok(), "the schema accepts {report} but: {:?}", parsed.err());
        }
    }

    #[test]
    fn mutated_packs_rules_strategies_and_configs_are_answered(
        which in 0usize..3,
        pick in any::<prop::sample::Index>(),
        with in prop::option::weighted(0.8, any_toml()),
    ) {
        if let Some(text) = toml_mutated(&pack_texts()[which], pick, with.clone()) {
            assert_answered(parse_pack(&text))?;
        }
        if let Some(text) = toml_mutated(RULES, pick, with.clone()) {
            assert_answered(parse_rules(&text, "mine.toml"))?;
        }
        let strategies = "[limits]\ntask_max_attempts = 4\n[[classes.transient]]\naction = \"retry_same\"\nmax_attempts = 2\n";
        if let Some(text) = toml_mutated(strategies, pick, with.clone()) {
            assert_answered(StrategyTable::load(Some(("mine.toml", &text))))?;
        }
        if let Some(text) = toml_mutated(CONFIG, pick, with) {
            assert_answered(Config::parse(&text, Path::new("/etc/backstop")))?;
        }
    }
}

#[test]
fn the_mutation_bases_are_good() {
    for (which, (pack, request)) in packs().iter().zip(good_requests()).enumerate() {
        parse_request(pack, "agent-a", &request).unwrap_or_else(|e| panic!("{}: {e:?}", pack.job));
        let errors: Vec<String> = pack_validator(which)
            .iter_errors(&request)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", pack.job);
    }
    // And what the parser refuses, the schema refuses too (for these; stricter elsewhere).
    let bad = [
        json!({"execution_id": "", "case": {"id": "northwind.com"}}),
        json!({"execution_id": "e\u{7}1", "case": {"id": "northwind.com"}}),
        json!({"execution_id": "   ", "case": {"id": "northwind.com"}}),
        json!({"execution_id": "e1", "case": {"id": "www.com"}}),
        json!({"execution_id": "e1", "case": {"id": "northwind.com"}, "questions": {"nope": {}}}),
        json!({"execution_id": "e1", "case": {"id": "northwind.com"}, "confidence": 1.5}),
        json!({"execution_id": "e1", "case": {"id": "northwind.com"},
            "questions": {"data_access": {"value": "yes"}}}),
    ];
    for request in bad {
        assert!(
            parse_request(&packs()[0], "agent-a", &request).is_err(),
            "{request}"
        );
        assert!(
            !pack_validator(0).is_valid(&request),
            "the schema accepts {request}"
        );
    }
    Report::from_json(&good_report().to_string()).unwrap();
    assert!(report_validator().is_valid(&good_report()));
    for bad in [
        json!({}),
        json!({"tool": "x"}),
        json!({"message": "  "}),
        json!({"http_status": 99}),
        json!({"schema": {"type": "object"}}),
        json!({"errno": "reset"}),
        json!({"headers": {"a": null}}),
    ] {
        assert!(Report::from_json(&bad.to_string()).is_err(), "{bad}");
        assert!(
            !report_validator().is_valid(&bad),
            "the schema accepts {bad}"
        );
    }
    parse_rules(RULES, "mine.toml").unwrap();
    Config::parse(CONFIG, Path::new("/etc/backstop")).unwrap();
}

#[test]
fn the_dispatch_mutation_base_is_good() {
    let (dispatch, _) = effect_validators();
    let errors: Vec<String> = dispatch
        .iter_errors(&good_dispatch())
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}
