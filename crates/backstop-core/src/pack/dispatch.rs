//! The `[dispatch]` table: what a pack says about side effects taken for its cases (a call, an
//! email, a payment): whether they may go live, the budget per case, the allowlist, quiet
//! hours, which interpolated values are untrusted, when an unanswered dispatch is reconciled,
//! and how far a do-not-contact request reaches.

use jiff::SignedDuration;
use jiff::civil::Time;

use super::read::Reader;
use crate::issue::Issue;

/// How many dispatches a case gets when the pack names no budget.
pub const DEFAULT_MAX_PER_CASE: u32 = 3;

/// The longest backoff, reconcile delay or quiet period a pack may set: a week.
const MAX_DELAY: SignedDuration = SignedDuration::from_hours(7 * 24);

/// The pack's dispatch policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchPolicy {
    /// Whether dispatches may go live; the service's live key is needed as well.
    pub live: bool,
    /// The most dispatches one case gets (default 3); past it, a dispatch is refused and
    /// escalated.
    pub max_per_case: u32,
    /// The wait after a case's first dispatch before its second; it doubles after each
    /// (default 1h).
    pub backoff: SignedDuration,
    /// How long a dispatch may go without a result before the sweep reconciles it (default
    /// 15m).
    pub reconcile_after: SignedDuration,
    /// Contacts that may be reached live; a recipient not listed goes to the simulator.
    /// `None`: every contact may be reached.
    pub allowlist: Option<Vec<String>>,
    /// Local times when no one is contacted.
    pub quiet_hours: Option<QuietHours>,
    /// The time zone of a recipient who names none (default `UTC`).
    pub time_zone: String,
    /// Names of interpolated values that come from outside (names, ids, numbers): each is
    /// scanned for placeholders, injected instructions, requests for credentials, payment card
    /// numbers and `forbidden_terms`. The content itself never is.
    pub untrusted: Vec<String>,
    /// Words an untrusted value may not carry: commercial terms the job has no authority over
    /// (`negotiate`, `price`, `discount` for the PO pack), matched as whole words, any case.
    pub forbidden_terms: Vec<String>,
    /// The value that names the company the dispatch speaks for (default `company`): it
    /// must be sent and must not be a placeholder.
    pub company: String,
    /// The value that names the sender, when the pack has one: it must not be a placeholder.
    pub sender: Option<String>,
    /// A URL the sweep asks for a dispatch's result, `{key}` standing for its key.
    pub status_url: Option<String>,
    /// Whether a do-not-contact request covers only the case it came on, or every case of
    /// that contact on the job.
    pub suppress_scope: SuppressScope,
    /// A result schema file, relative to the pack, linted by `pack check`.
    pub result_schema: Option<String>,
    /// The content must say the caller is an AI assistant and name the company it calls for:
    /// a live dispatch that does not is refused (a simulated one warned).
    pub disclose_ai: bool,
    /// What one recipient of a batch hears must hold nothing that is another recipient's own
    /// (its values, its case's fields): a live dispatch that does is refused.
    pub no_cross_disclosure: bool,
}

impl Default for DispatchPolicy {
    fn default() -> Self {
        Self {
            live: false,
            max_per_case: DEFAULT_MAX_PER_CASE,
            backoff: SignedDuration::from_hours(1),
            reconcile_after: SignedDuration::from_mins(15),
            allowlist: None,
            quiet_hours: None,
            time_zone: "UTC".to_owned(),
            untrusted: Vec::new(),
            forbidden_terms: Vec::new(),
            company: "company".to_owned(),
            sender: None,
            status_url: None,
            suppress_scope: SuppressScope::Case,
            disclose_ai: false,
            no_cross_disclosure: false,
            result_schema: None,
        }
    }
}

/// Local times when no one is contacted: from `start` up to `end`, wrapping past midnight
/// when `end` is earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    /// When quiet begins.
    pub start: Time,
    /// When it ends.
    pub end: Time,
}

impl QuietHours {
    /// Whether the local time `at` is quiet.
    pub fn contains(self, at: Time) -> bool {
        if self.start <= self.end {
            self.start <= at && at < self.end
        } else {
            at >= self.start || at < self.end
        }
    }
}

/// How far a do-not-contact request reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuppressScope {
    /// Only the case it came on.
    Case,
    /// Every case of that contact on the job.
    Contact,
}

impl SuppressScope {
    /// Its name in a pack.
    pub fn as_str(self) -> &'static str {
        match self {
            SuppressScope::Case => "case",
            SuppressScope::Contact => "contact",
        }
    }
}

const KNOWN: [&str; 16] = [
    "live",
    "disclose_ai",
    "no_cross_disclosure",
    "forbidden_terms",
    "max_per_case",
    "backoff",
    "reconcile_after",
    "allowlist",
    "quiet_hours",
    "time_zone",
    "untrusted",
    "company",
    "sender",
    "status_url",
    "suppress_scope",
    "result_schema",
];

/// Reads `[dispatch]`: `None` when the pack has none (its cases take no side effects).
pub(super) fn parse_dispatch(top: &Reader<'_>, issues: &mut Vec<Issue>) -> Option<DispatchPolicy> {
    let table = top.table("dispatch", issues)?;
    let r = Reader::new(table, "dispatch", &KNOWN, issues);
    let mut policy = DispatchPolicy {
        live: r.bool("live", issues).unwrap_or(false),
        disclose_ai: r.bool("disclose_ai", issues).unwrap_or(false),
        no_cross_disclosure: r.bool("no_cross_disclosure", issues).unwrap_or(false),
        max_per_case: r
            .count("max_per_case", 1, issues)
            .unwrap_or(DEFAULT_MAX_PER_CASE),
        allowlist: r.strings("allowlist", issues),
        untrusted: r.strings("untrusted", issues).unwrap_or_default(),
        forbidden_terms: r
            .strings("forbidden_terms", issues)
            .unwrap_or_default()
            .into_iter()
            .map(|term| term.to_lowercase())
            .collect(),
        sender: r.string("sender", issues),
        result_schema: r.string("result_schema", issues),
        ..DispatchPolicy::default()
    };
    if let Some(d) = delay(&r, "backoff", issues) {
        policy.backoff = d;
    }
    if let Some(d) = delay(&r, "reconcile_after", issues) {
        policy.reconcile_after = d;
    }
    if let Some(company) = r.string("company", issues) {
        policy.company = company;
    }
    if let Some(zone) = r.string("time_zone", issues) {
        policy.time_zone = zone;
    }
    if let Some(url) = r.string("status_url", issues) {
        if url.starts_with("http://") || url.starts_with("https://") {
            policy.status_url = Some(url);
        } else {
            issues.push(Issue::new(
                r.at("status_url"),
                "bad_url",
                format!("`{url}` is not an http:// or https:// URL"),
            ));
        }
    }
    match r.string("suppress_scope", issues).as_deref() {
        None | Some("case") => {}
        Some("contact") => policy.suppress_scope = SuppressScope::Contact,
        Some(other) => issues.push(Issue::new(
            r.at("suppress_scope"),
            "unknown_value",
            format!("unknown value `{other}`; expected case or contact"),
        )),
    }
    if let Some(quiet) = r.table("quiet_hours", issues) {
        let q = Reader::new(quiet, "dispatch.quiet_hours", &["start", "end"], issues);
        let start = local_time(&q, "start", issues);
        let end = local_time(&q, "end", issues);
        if let (Some(start), Some(end)) = (start, end) {
            if start == end {
                issues.push(Issue::new(
                    q.at("end"),
                    "out_of_range",
                    "quiet hours that start and end at the same time are empty; leave \
                     `quiet_hours` out instead",
                ));
            }
            policy.quiet_hours = Some(QuietHours { start, end });
        }
    }
    Some(policy)
}

fn delay(r: &Reader<'_>, key: &str, issues: &mut Vec<Issue>) -> Option<SignedDuration> {
    let text = r.string(key, issues)?;
    match text.parse::<SignedDuration>() {
        Ok(d) if d.is_positive() && d <= MAX_DELAY => Some(d),
        Ok(_) => {
            issues.push(Issue::new(
                r.at(key),
                "out_of_range",
                "expected a duration longer than zero and at most 168h (a week)",
            ));
            None
        }
        Err(_) => {
            issues.push(Issue::new(
                r.at(key),
                "bad_duration",
                format!("`{text}` is not a duration like \"15m\" or \"1h\""),
            ));
            None
        }
    }
}

fn local_time(r: &Reader<'_>, key: &str, issues: &mut Vec<Issue>) -> Option<Time> {
    if !r.has(key) {
        issues.push(super::read::missing(&r.at(key)));
        return None;
    }
    let text = r.string(key, issues)?;
    let parsed = text
        .split_once(':')
        .filter(|(h, m)| h.len() == 2 && m.len() == 2)
        .and_then(|(h, m)| Some((h.parse::<i8>().ok()?, m.parse::<i8>().ok()?)))
        .and_then(|(h, m)| Time::new(h, m, 0, 0).ok());
    if parsed.is_none() {
        issues.push(Issue::new(
            r.at(key),
            "bad_time",
            format!("`{text}` is not a local time like \"20:00\""),
        ));
    }
    parsed
}

/// What `[dispatch]` needs from the rest of the pack: a result that did not complete, or
/// came back empty, is reconciled (fetched again, then handed to a person), never judged as
/// evidence and never answered with a redial.
pub(super) fn validate_dispatch(pack: &super::Pack) -> Vec<Issue> {
    use super::SourceAction;
    let mut issues = Vec::new();
    if pack.identity.mode == super::IdentityMode::Content {
        issues.push(Issue::new(
            "dispatch",
            "not_for_mode",
            "a case named by content cannot be named by a dispatch: use identity mode id, \
             fields or issued",
        ));
    }
    let envelope = &pack.envelope;
    if envelope.not_completed != SourceAction::Reconcile {
        issues.push(Issue::new(
            "envelope.not_completed",
            "dispatch_needs_reconcile",
            "a pack with [dispatch] must set `not_completed = \"reconcile\"`: a dispatch whose \
             result did not complete is reconciled, then escalated, never redialled",
        ));
    }
    if envelope.empty != SourceAction::Reconcile {
        issues.push(Issue::new(
            "envelope.empty",
            "dispatch_needs_reconcile",
            "a pack with [dispatch] must set `empty = \"reconcile\"`: a null result is \
             reconciled, then escalated, never success",
        ));
    }
    if let Some(action) = envelope.statuses.get("unknown")
        && *action != SourceAction::Reconcile
    {
        issues.push(Issue::new(
            "envelope.statuses.unknown",
            "dispatch_needs_reconcile",
            "the sweep reports a dispatch it could not settle as `unknown`: it must reconcile",
        ));
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(h: i8, m: i8) -> Time {
        Time::new(h, m, 0, 0).unwrap()
    }

    #[test]
    fn quiet_hours_wrap_past_midnight() {
        let night = QuietHours {
            start: at(20, 0),
            end: at(8, 0),
        };
        assert!(night.contains(at(23, 30)));
        assert!(night.contains(at(0, 0)));
        assert!(night.contains(at(7, 59)));
        assert!(!night.contains(at(8, 0)));
        assert!(!night.contains(at(12, 0)));
        assert!(night.contains(at(20, 0)));
        let lunch = QuietHours {
            start: at(12, 0),
            end: at(13, 0),
        };
        assert!(lunch.contains(at(12, 30)));
        assert!(!lunch.contains(at(13, 0)));
        assert!(!lunch.contains(at(11, 0)));
    }
}
