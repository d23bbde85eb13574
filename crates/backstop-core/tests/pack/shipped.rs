//! The packs in `packs/`: each parses clean, and a few facts per pack hold.

use backstop_core::pack::{
    Condition, IdentityMode, Judge, MatchRule, OutcomeKind, Pack, check_pack, parse_pack,
};

const PACKS: [(&str, &str); 3] = [
    (
        "company-classification.toml",
        include_str!("../../../../packs/company-classification.toml"),
    ),
    (
        "po-acknowledgement.toml",
        include_str!("../../../../packs/po-acknowledgement.toml"),
    ),
    (
        "vendor-risk.toml",
        include_str!("../../../../packs/vendor-risk.toml"),
    ),
];

fn pack(name: &str) -> Pack {
    let (_, text) = PACKS.iter().find(|(n, _)| *n == name).unwrap();
    parse_pack(text).unwrap()
}

#[test]
fn every_pack_in_the_directory_is_here_and_clean() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../packs");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let named: Vec<&str> = PACKS.iter().map(|(n, _)| *n).collect();
    assert_eq!(files, named);
    for (name, text) in PACKS {
        assert_eq!(check_pack(text, name), [], "{name}");
        assert_eq!(format!("{}.toml", parse_pack(text).unwrap().job), name);
        assert!(text.starts_with("# "), "{name} has no comment header");
    }
}

#[test]
fn vendor_risk_names_the_case_by_domain() {
    let pack = pack("vendor-risk.toml");
    assert_eq!(pack.identity.mode, IdentityMode::Id);
    assert_eq!(pack.identity.match_rule, MatchRule::Domain);
    assert!(pack.related[0].required);
    assert_eq!(
        pack.outcome(&pack.rules[0].outcome).unwrap().kind,
        OutcomeKind::Lane
    );
}

#[test]
fn po_acknowledgement_puts_the_request_for_a_person_first() {
    let pack = pack("po-acknowledgement.toml");
    assert_eq!(pack.identity.mode, IdentityMode::Fields);
    assert!(pack.questions.iter().all(|q| q.judge == Judge::Value));
    assert!(
        pack.questions
            .iter()
            .filter(|q| q.value_type == backstop_core::pack::ValueType::Answer)
            .all(|q| q.answers.iter().any(|a| a.value == "unknown")),
        "every answer question can say it does not know"
    );
    // The first two rules read only needs_human, so they fire while the rest is still open.
    for rule in &pack.rules[..2] {
        assert_eq!(rule.when.keys().collect::<Vec<_>>(), ["needs_human"]);
    }
    let first = pack.outcome(&pack.rules[0].outcome).unwrap();
    assert_eq!(first.effects, ["suppress_contact"]);
    assert_eq!(first.kind, OutcomeKind::Lane);
    // The identity gate comes before the decision (on time; a delay within 48h only with the
    // pack's option, after it).
    assert_eq!(
        pack.rules[2].when["spoke_with"],
        Condition::Not(vec![
            "intended_contact".into(),
            "authorized_representative".into()
        ])
    );
    let decisions: Vec<usize> = (0..pack.rules.len())
        .filter(|&i| pack.outcome(&pack.rules[i].outcome).unwrap().kind == OutcomeKind::Decision)
        .collect();
    assert_eq!(decisions, [3]);
    let confidence = pack.confidence.as_ref().unwrap();
    assert_eq!(
        pack.outcome(&confidence.lane).unwrap().kind,
        OutcomeKind::Lane
    );
}

#[test]
fn company_classification_may_classify_again_once() {
    let pack = pack("company-classification.toml");
    assert_eq!(pack.identity.mode, IdentityMode::Issued);
    let retrying: Vec<_> = pack
        .outcomes
        .iter()
        .filter(|o| o.allow_retry == 1)
        .collect();
    assert_eq!(retrying.len(), 1);
    assert_eq!(retrying[0].kind, OutcomeKind::Lane);
    assert_eq!(pack.questions[0].min_excerpts, 2);
}
