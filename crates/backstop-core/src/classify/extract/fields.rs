//! Fields written in text: a code given as `code=...`, `"code": "..."` or `Code=...` wherever
//! it appears, and counts of sub-operations of which some went through and some failed
//! ("8 Successful, 2 Failed", "Processed 950/1000; 50 rejected").

use std::sync::LazyLock;

use regex::Regex;

use super::needles::{Needle, Needles};
use super::{Extracted, ExtractorInfo, Source};
use crate::codes::grpc_from_name;
use crate::report::{GrpcCode, SideEffectState};

pub(super) const INFO_CODE: ExtractorInfo = ExtractorInfo {
    name: "code_field",
    reads: "a code written as a field anywhere in text: `code=`, `code:`, `\"code\": \"...\"`, `Code=`, `error_code=`, `ErrorCode:`; a gRPC status name becomes grpc_code, any other word error_code (both below what the text says in its own words)",
    example: "request failed: code=RESOURCE_EXHAUSTED desc=too many requests in flight",
    finds: "grpc_code RESOURCE_EXHAUSTED",
};

pub(super) const INFO_COUNTS: ExtractorInfo = ExtractorInfo {
    name: "outcome_counts",
    reads: "counts of sub-operations in text: some done (successful, succeeded, processed, sent, inserted, ...) and some failed (failed, rejected, errors, unprocessed): side_effects partial",
    example: "Bulk import finished: 8 Successful, 2 Failed",
    finds: "side_effects partial",
};

/// A code field: its name (`code`, `error_code`, `ErrorCode`, `Code`) and a word value.
static CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?:\b|_)(?:error[_ ]?)?code["']?\s*[=:]\s*["'\[]?([A-Za-z][A-Za-z0-9_.]{2,63})"#,
    )
    .expect("extractor patterns are tested")
});

/// Words a `code:` is followed by in prose, not a code.
const NOT_CODES: [&str; 12] = [
    "not",
    "the",
    "and",
    "for",
    "was",
    "has",
    "are",
    "none",
    "null",
    "true",
    "false",
    "undefined",
];

/// What was done: a number and a word, either way round.
static DONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(\d{1,9})\s+(?:(?:items?|records?|rows?|messages?|documents?|docs|files?|requests?|entries|events|objects|operations|users)\s+)?(?:were\s+)?(?:successful(?:ly\s+\w+)?|succeeded|successes|ok|processed|sent|delivered|inserted|created|updated|deleted|imported|indexed|uploaded|completed|accepted|written|migrated)\b|(?:successful|succeeded|successes|success|ok|processed|sent|delivered|inserted|created|updated|deleted|imported|indexed|uploaded|completed|accepted|written)(?:[ _]count)?\s*[:=]\s*(\d{1,9})\b|processed\s+(\d{1,9})\s*(?:/|of)\s*\d{1,9}|(\d{1,9})\s+rows?\s+affected)",
    )
    .expect("extractor patterns are tested")
});

/// What failed: a number and a word, either way round.
static FAILED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(\d{1,9})\s+(?:(?:items?|records?|rows?|messages?|documents?|docs|files?|requests?|entries|events|objects|operations|users)\s+)?(?:were\s+|have\s+)?(?:failed|failures?|errors?|errored|rejected|unprocessed)\b|(?:failed|failures?|errors|errored|err|error|rejected|unprocessed)(?:[ _]count)?\s*[:=]\s*(\d{1,9})\b|\bskipped:\s*(\d{1,9})\b)",
    )
    .expect("extractor patterns are tested")
});

/// Reads the code fields and the counts of one text.
pub(super) fn read(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    if needles.any(&[Needle::CodeLower, Needle::CodeTitle, Needle::CodeUpper]) {
        code(text, from, found);
    }
    if needles.any(&[
        Needle::FailedLower,
        Needle::FailedUpper,
        Needle::Failed,
        Needle::Ejected,
        Needle::Rrors,
        Needle::Rror,
        Needle::Nprocessed,
        Needle::Ailure,
    ]) {
        counts(text, from, found);
    }
}

fn code(text: &str, from: Source, found: &mut Extracted) {
    let by = INFO_CODE.name;
    for captures in CODE.captures_iter(text).take(4) {
        let Some(value) = captures.get(1).map(|m| m.as_str().trim_end_matches('.')) else {
            continue;
        };
        if NOT_CODES.iter().any(|w| value.eq_ignore_ascii_case(w)) {
            continue;
        }
        if grpc_from_name(value).is_some_and(|name| name != "OK")
            && let Some(code) = GrpcCode::parse(value)
        {
            Extracted::put_weak(&mut found.grpc_code, code, from, by);
        } else {
            Extracted::put_weak(&mut found.error_code, value.to_owned(), from, by);
        }
        return;
    }
}

/// The first count a pattern finds, from whichever of its groups matched.
fn count(pattern: &Regex, text: &str) -> Option<u64> {
    pattern.captures_iter(text).find_map(|c| {
        c.iter()
            .skip(1)
            .flatten()
            .find_map(|m| m.as_str().parse::<u64>().ok())
            .filter(|n| *n > 0)
    })
}

fn counts(text: &str, from: Source, found: &mut Extracted) {
    // Counts need digits; what failed is rarer than what was done, so it is looked for first.
    if !text.bytes().any(|b| b.is_ascii_digit()) || found.side_effects.is_some() {
        return;
    }
    if count(&FAILED, text).is_some() && count(&DONE, text).is_some() {
        Extracted::put(
            &mut found.side_effects,
            SideEffectState::Partial,
            from,
            INFO_COUNTS.name,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Extracted {
        let mut found = Extracted::default();
        read(text, Needles::of(text), Source::Message, &mut found);
        found
    }

    #[test]
    fn a_code_field_anywhere_in_text_is_read() {
        let found = read_text("request failed: code=RESOURCE_EXHAUSTED desc=too many");
        assert_eq!(found.grpc_code.unwrap().value.name(), "RESOURCE_EXHAUSTED");
        let found = read_text("upstream said {'code': 'rate_limited', 'msg': 'slow'}");
        assert_eq!(found.error_code.unwrap().value, "rate_limited");
        let found = read_text(r#"Error: Status=500 Code="ServerBusy" Message="busy""#);
        assert_eq!(found.error_code.unwrap().value, "ServerBusy");
        let found = read_text(
            "Azure.RequestFailedException: Status: 409\nErrorCode: ContainerAlreadyExists",
        );
        assert_eq!(found.error_code.unwrap().value, "ContainerAlreadyExists");
        let found = read_text("failed with error_code: throttled");
        assert_eq!(found.error_code.unwrap().value, "throttled");
        // Prose and numbers are no code.
        assert!(
            read_text("the status code: not what we expected")
                .error_code
                .is_none()
        );
        assert!(read_text("exit code: 2").error_code.is_none());
        assert!(read_text("unicode: utf-8").error_code.is_none());
    }

    #[test]
    fn counts_of_some_done_and_some_failed_are_partial() {
        for text in [
            "Bulk import finished: 8 Successful, 2 Failed",
            "Processed 950/1000; 50 rejected",
            "sent: 120, failed: 3",
            "12 records inserted, 1 record failed validation",
            "Successful: 40 Errors: 2",
        ] {
            let found = read_text(text);
            assert_eq!(
                found.side_effects.map(|f| f.value),
                Some(SideEffectState::Partial),
                "{text}"
            );
        }
        for text in [
            "8 Successful, 0 Failed",
            "test result: FAILED. 8 passed; 2 failed; 0 ignored",
            "2 failed, 8 passed in 1.2s",
            "0 processed, 3 failed",
            "Error: failed to connect",
        ] {
            assert_eq!(read_text(text).side_effects, None, "{text}");
        }
    }
}
