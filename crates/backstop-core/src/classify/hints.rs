//! Retry hints: how long the server asked the caller to wait, read from the headers.
//!
//! Every hint the headers carry is read, and the longest wins: a hint is never shortened, so a
//! retry never fires early. A value that cannot be read, is negative or is already past gives
//! no hint and a note; an explicit `0` is a hint of zero.

use std::time::SystemTime;

use jiff::{SignedDuration, Timestamp};

use super::Evidence;
use crate::report::Headers;

/// Second counts at or above this (about three years) are Unix times, not delays: no rate
/// window lasts that long, and every Unix time since 1973 is above it.
const EPOCH_THRESHOLD: f64 = 100_000_000.0;

/// The longest wait a hint may ask for: 2^31 seconds. Larger values (in seconds, in
/// milliseconds or as a far-future date) saturate here instead of failing.
pub const MAX_HINT_MS: u64 = (1 << 31) * 1000;

/// [`MAX_HINT_MS`] as a float (exact: it is far below 2^53).
const MAX_HINT_F64: f64 = 2_147_483_648_000.0;

/// The retry hint in milliseconds, if any header gives one, and a note per header read.
///
/// `retry-after-ms` takes precedence over `Retry-After` (the seconds header is a coarser
/// rounding of the same wait); rate-limit reset headers count too, and the longest wait wins.
pub fn retry_hint(headers: &Headers, now: Timestamp) -> (Option<u64>, Vec<Evidence>) {
    let mut evidence = Vec::new();
    let mut by_kind: [Option<u64>; 3] = [None; 3];
    let precise = headers
        .get("retry-after-ms")
        .is_some_and(|v| HintKind::RetryAfterMs.read(v, now).is_ok());
    for (name, value) in headers.iter() {
        let Some(kind) = HintKind::of(name) else {
            continue;
        };
        let field = format!("headers.{name}");
        match kind.read_repeated(value, now) {
            Ok(ms) if kind == HintKind::RetryAfter && precise => evidence.push(Evidence::note(
                field,
                value,
                format!("retry hint: {ms} ms, not used: retry-after-ms is more precise"),
            )),
            Ok(ms) => {
                let slot = &mut by_kind[kind as usize];
                *slot = Some(slot.map_or(ms, |l| l.max(ms)));
                evidence.push(Evidence::note(field, value, format!("retry hint: {ms} ms")));
            }
            Err(why) => evidence.push(Evidence::note(
                field,
                value,
                format!("no retry hint: {why}"),
            )),
        }
    }
    (by_kind.into_iter().flatten().max(), evidence)
}

/// Which family of hint header a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
enum HintKind {
    /// `retry-after-ms`: milliseconds.
    RetryAfterMs,
    /// `retry-after`: delay-seconds or an HTTP-date.
    RetryAfter,
    /// A rate-limit reset: a duration, seconds, epoch seconds or an RFC 3339 time.
    RateLimitReset,
}

impl HintKind {
    fn of(name: &str) -> Option<HintKind> {
        match name {
            "retry-after-ms" => Some(HintKind::RetryAfterMs),
            "retry-after" => Some(HintKind::RetryAfter),
            _ if name.starts_with("x-ratelimit-reset")
                || name.starts_with("x-rate-limit-reset")
                || name == "ratelimit-reset"
                || (name.contains("ratelimit") && name.ends_with("-reset")) =>
            {
                Some(HintKind::RateLimitReset)
            }
            _ => None,
        }
    }

    /// Reads a value that may hold the same header given more than once, joined with `, `
    /// (`2, 10`): the longest valid value wins, as a retry must never fire early.
    fn read_repeated(self, value: &str, now: Timestamp) -> Result<u64, String> {
        let whole = self.read(value, now);
        // A list of waits in Retry-After is not delay-seconds: which one the server meant
        // cannot be known, so it gives no hint.
        if whole.is_ok() || !value.contains(',') || self != HintKind::RateLimitReset {
            return whole;
        }
        let parts: Vec<&str> = value.split(',').map(str::trim).collect();
        let mut longest = None;
        let mut i = 0;
        while i < parts.len() {
            // An IMF-fixdate has a comma of its own (`Sun, 06 Nov 1994 ...`): try it joined
            // with the next part first.
            let joined = parts.get(i + 1).map(|next| format!("{}, {next}", parts[i]));
            if let Some(ms) = joined.as_deref().and_then(|j| self.read(j, now).ok()) {
                longest = longest.max(Some(ms));
                i += 2;
            } else {
                if let Ok(ms) = self.read(parts[i], now) {
                    longest = longest.max(Some(ms));
                }
                i += 1;
            }
        }
        longest.ok_or(whole.unwrap_err())
    }

    fn read(self, value: &str, now: Timestamp) -> Result<u64, String> {
        let value = value.trim();
        match self {
            HintKind::RetryAfterMs => match unsigned_number(value) {
                Some(ms) => non_negative_ms(ms),
                None if value.starts_with(['+', '-']) => Err(signed(value)),
                None => Err("not a number of milliseconds".to_owned()),
            },
            HintKind::RetryAfter => {
                // Delay-seconds; a fraction is read as the SDKs read it (1.5 is 1500 ms).
                if let Some(seconds) = unsigned_number(value) {
                    return non_negative_ms(seconds * 1000.0);
                }
                if value.starts_with(['+', '-']) && unsigned_number(&value[1..]).is_some() {
                    return Err(signed(value));
                }
                match httpdate::parse_http_date(value) {
                    // HTTP-dates run to the end of year 9999, past what a timestamp holds:
                    // such a date is far in the future, so the wait saturates.
                    Ok(at) => system_time(at).map_or(Ok(MAX_HINT_MS), |at| until(at, now)),
                    Err(_) if value.contains(',') && !value.contains(':') => {
                        Err("a list of values is not delay-seconds".to_owned())
                    }
                    Err(_) => Err("neither delay-seconds nor an HTTP-date".to_owned()),
                }
            }
            HintKind::RateLimitReset => {
                if let Ok(number) = value.parse::<f64>() {
                    return if number >= EPOCH_THRESHOLD {
                        // A time too far ahead to represent is a wait that saturates.
                        Timestamp::from_millisecond(seconds_to_ms(number)?)
                            .map_or(Ok(MAX_HINT_MS), |at| until(at, now))
                    } else {
                        non_negative_ms(number * 1000.0)
                    };
                }
                if let Ok(at) = value.parse::<Timestamp>() {
                    return until(at, now);
                }
                match value.parse::<SignedDuration>() {
                    Ok(d) if d.is_negative() => Err("negative".to_owned()),
                    Ok(d) => Ok(duration_ms(d)),
                    Err(_) => Err("not a duration, a number of seconds or a time".to_owned()),
                }
            }
        }
    }
}

/// A plain decimal number without a sign (`12`, `1.5`), as delay values are written.
fn unsigned_number(value: &str) -> Option<f64> {
    let digits = value.bytes().filter(u8::is_ascii_digit).count();
    let points = value.bytes().filter(|b| *b == b'.').count();
    (digits > 0 && points <= 1 && digits + points == value.len())
        .then(|| value.parse().ok())
        .flatten()
}

fn signed(value: &str) -> String {
    format!("`{value}` is signed; a delay is written without a sign")
}

/// Rounds a count of milliseconds up, saturating at [`MAX_HINT_MS`]; refuses negative,
/// infinite and NaN values.
fn non_negative_ms(ms: f64) -> Result<u64, String> {
    if ms.is_nan() {
        Err("not a number".to_owned())
    } else if ms < 0.0 {
        Err("negative".to_owned())
    } else if ms >= MAX_HINT_F64 {
        Ok(MAX_HINT_MS)
    } else {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(ms.ceil() as u64)
    }
}

/// Epoch seconds as epoch milliseconds; a value past what a timestamp holds is `i64::MAX`
/// (which no timestamp accepts, so the wait saturates).
fn seconds_to_ms(seconds: f64) -> Result<i64, String> {
    // 2^63 as a float: anything at or past it does not fit.
    const I64_LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !seconds.is_finite() || seconds < 0.0 {
        return Err("not a time".to_owned());
    }
    let ms = (seconds * 1000.0).ceil();
    #[allow(clippy::cast_possible_truncation)]
    Ok(if ms >= I64_LIMIT { i64::MAX } else { ms as i64 })
}

fn system_time(at: SystemTime) -> Result<Timestamp, String> {
    Timestamp::try_from(at).map_err(|_| "not a representable time".to_owned())
}

/// The wait until `at`, rounded up to the millisecond; a past time gives no hint.
fn until(at: Timestamp, now: Timestamp) -> Result<u64, String> {
    let wait = at.duration_since(now);
    if wait.is_negative() {
        Err(format!("{at} is already past"))
    } else {
        Ok(duration_ms(wait))
    }
}

/// A non-negative duration in milliseconds, rounded up, saturating at [`MAX_HINT_MS`].
fn duration_ms(d: SignedDuration) -> u64 {
    let nanos = d.as_nanos().max(0);
    u64::try_from((nanos + 999_999) / 1_000_000)
        .unwrap_or(u64::MAX)
        .min(MAX_HINT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "1994-11-06T08:49:07Z".parse().unwrap()
    }

    fn hint(pairs: &[(&str, &str)]) -> Option<u64> {
        retry_hint(&Headers::from_pairs(pairs.iter().copied()), now()).0
    }

    #[test]
    fn retry_after_seconds_and_ms() {
        assert_eq!(hint(&[("Retry-After", "2")]), Some(2000));
        assert_eq!(hint(&[("retry-after-ms", "1500")]), Some(1500));
        assert_eq!(hint(&[("retry-after-ms", "1500.2")]), Some(1501));
        assert_eq!(hint(&[("retry-after", "0")]), Some(0));
    }

    #[test]
    fn retry_after_in_each_http_date_form() {
        for date in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(hint(&[("Retry-After", date)]), Some(30_000), "{date}");
        }
    }

    #[test]
    fn garbage_negative_and_past_values_give_no_hint_and_a_note() {
        for value in [
            "soon",
            "-5",
            "Sun, 06 Nov 1994 08:00:00 GMT",
            "+120",
            "120, 60",
            "1.5s",
        ] {
            let (ms, notes) = retry_hint(&Headers::from_pairs([("retry-after", value)]), now());
            assert_eq!(ms, None, "{value}");
            assert!(
                notes[0]
                    .note
                    .as_deref()
                    .unwrap()
                    .starts_with("no retry hint"),
                "{value}"
            );
        }
        assert_eq!(hint(&[("retry-after-ms", "-1")]), None);
        assert_eq!(hint(&[("retry-after-ms", "NaN")]), None);
    }

    #[test]
    fn rate_limit_resets() {
        assert_eq!(
            hint(&[("x-ratelimit-reset-requests", "6m0s")]),
            Some(360_000)
        );
        assert_eq!(hint(&[("x-ratelimit-reset-tokens", "250ms")]), Some(250));
        assert_eq!(hint(&[("x-ratelimit-reset-tokens", "1.5s")]), Some(1500));
        assert_eq!(hint(&[("ratelimit-reset", "7")]), Some(7000));
        // Unix epoch seconds: 784111777 is 08:49:37, 30 s after `now`.
        assert_eq!(hint(&[("x-ratelimit-reset", "784111777")]), Some(30_000));
        assert_eq!(
            hint(&[("anthropic-ratelimit-requests-reset", "1994-11-06T08:49:37Z")]),
            Some(30_000)
        );
    }

    #[test]
    fn the_longest_hint_wins() {
        assert_eq!(
            hint(&[
                ("retry-after", "1"),
                ("retry-after-ms", "2500"),
                ("x-ratelimit-reset-requests", "2s")
            ]),
            Some(2500)
        );
        assert_eq!(
            hint(&[("retry-after", "1"), ("x-ratelimit-reset-requests", "2s")]),
            Some(2000)
        );
    }

    #[test]
    fn retry_after_ms_takes_precedence_over_retry_after() {
        let headers = Headers::from_pairs([("retry-after", "2"), ("retry-after-ms", "1500")]);
        let (ms, notes) = retry_hint(&headers, now());
        assert_eq!(ms, Some(1500));
        let coarse = notes
            .iter()
            .find(|n| n.field == "headers.retry-after")
            .unwrap();
        assert!(coarse.note.as_deref().unwrap().contains("not used"));
        // A retry-after-ms that cannot be read leaves Retry-After in force.
        assert_eq!(
            hint(&[("retry-after", "2"), ("retry-after-ms", "soon")]),
            Some(2000)
        );
    }

    #[test]
    fn a_fractional_retry_after_is_read_as_the_sdks_read_it() {
        assert_eq!(hint(&[("Retry-After", "1.5")]), Some(1500));
        assert_eq!(hint(&[("Retry-After", "0.0004")]), Some(1));
    }

    #[test]
    fn huge_values_saturate_at_two_to_the_31_seconds() {
        let max = Some(MAX_HINT_MS);
        assert_eq!(hint(&[("Retry-After", "99999999999999")]), max);
        assert_eq!(hint(&[("retry-after-ms", "1e300")]), None);
        assert_eq!(hint(&[("retry-after-ms", "99999999999999999999")]), max);
        assert_eq!(
            hint(&[("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT")]),
            max
        );
        assert_eq!(hint(&[("x-ratelimit-reset", "99999999999")]), max);
        assert_eq!(hint(&[("Retry-After", "2147483648")]), max);
        assert_eq!(
            hint(&[("Retry-After", "2147483647")]),
            Some(2_147_483_647_000)
        );
    }

    #[test]
    fn a_header_given_twice_is_a_list() {
        // Retry-After given twice (or as a list) says two waits: no hint, a note.
        let (ms, notes) = retry_hint(
            &Headers::from_pairs([("Retry-After", "2"), ("retry-after", "10")]),
            now(),
        );
        assert_eq!(ms, None);
        assert!(notes[0].note.as_deref().unwrap().contains("list"));
        // An IMF-fixdate's own comma is not a list.
        assert_eq!(
            hint(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
            Some(30_000)
        );
        // Rate-limit reset headers given twice keep their longest value.
        assert_eq!(
            hint(&[("x-ratelimit-reset", "2"), ("X-RateLimit-Reset", "10")]),
            Some(10_000)
        );
    }

    #[test]
    fn unrelated_headers_are_ignored() {
        let (ms, notes) = retry_hint(&Headers::from_pairs([("content-type", "x")]), now());
        assert_eq!(ms, None);
        assert!(notes.is_empty());
    }
}
