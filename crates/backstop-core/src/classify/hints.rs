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

/// The retry hint in milliseconds, if any header gives one, and a note per header read.
pub fn retry_hint(headers: &Headers, now: Timestamp) -> (Option<u64>, Vec<Evidence>) {
    let mut longest: Option<u64> = None;
    let mut evidence = Vec::new();
    for (name, value) in headers.iter() {
        let Some(kind) = HintKind::of(name) else {
            continue;
        };
        let field = format!("headers.{name}");
        match kind.read_repeated(value, now) {
            Ok(ms) => {
                longest = Some(longest.map_or(ms, |l| l.max(ms)));
                evidence.push(Evidence::note(field, value, format!("retry hint: {ms} ms")));
            }
            Err(why) => evidence.push(Evidence::note(
                field,
                value,
                format!("no retry hint: {why}"),
            )),
        }
    }
    (longest, evidence)
}

/// Which family of hint header a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        if whole.is_ok() || !value.contains(',') {
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
            HintKind::RetryAfterMs => match value.parse::<f64>() {
                Ok(ms) => non_negative_ms(ms),
                Err(_) => Err("not a number of milliseconds".to_owned()),
            },
            HintKind::RetryAfter => {
                if let Ok(seconds) = value.parse::<i64>() {
                    return if seconds < 0 {
                        Err("negative".to_owned())
                    } else {
                        Ok(u64::try_from(seconds).unwrap_or(0).saturating_mul(1000))
                    };
                }
                match httpdate::parse_http_date(value) {
                    Ok(at) => until(system_time(at)?, now),
                    Err(_) => Err("neither delay-seconds nor an HTTP-date".to_owned()),
                }
            }
            HintKind::RateLimitReset => {
                if let Ok(number) = value.parse::<f64>() {
                    return if number >= EPOCH_THRESHOLD {
                        let at = Timestamp::from_millisecond(seconds_to_ms(number)?)
                            .map_err(|_| "not a representable time".to_owned())?;
                        until(at, now)
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

/// Rounds a count of milliseconds up; refuses negative, infinite and NaN values.
fn non_negative_ms(ms: f64) -> Result<u64, String> {
    if !ms.is_finite() {
        Err("not a finite number".to_owned())
    } else if ms < 0.0 {
        Err("negative".to_owned())
    } else if ms >= 9.0e15 {
        Err("too large to be a wait".to_owned())
    } else {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(ms.ceil() as u64)
    }
}

fn seconds_to_ms(seconds: f64) -> Result<i64, String> {
    let ms = non_negative_ms(seconds * 1000.0)?;
    i64::try_from(ms).map_err(|_| "too large".to_owned())
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

/// A non-negative duration in milliseconds, rounded up.
fn duration_ms(d: SignedDuration) -> u64 {
    let nanos = d.as_nanos().max(0);
    u64::try_from((nanos + 999_999) / 1_000_000).unwrap_or(u64::MAX)
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
        for value in ["soon", "-5", "Sun, 06 Nov 1994 08:00:00 GMT", "1.5"] {
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
    }

    #[test]
    fn a_header_given_twice_keeps_its_longest_value() {
        assert_eq!(
            hint(&[("Retry-After", "2"), ("retry-after", "10")]),
            Some(10_000)
        );
        assert_eq!(
            hint(&[
                ("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
                ("Retry-After", "5")
            ]),
            Some(30_000)
        );
        assert_eq!(
            hint(&[("retry-after", "soon"), ("Retry-After", "later")]),
            None
        );
    }

    #[test]
    fn unrelated_headers_are_ignored() {
        let (ms, notes) = retry_hint(&Headers::from_pairs([("content-type", "x")]), now());
        assert_eq!(ms, None);
        assert!(notes.is_empty());
    }
}
