//! The queue: open review items, newest first, filtered by job, caller, trigger and age,
//! with counts per lane.

use std::collections::BTreeMap;

use backstop_core::case::is_escalation_lane;
use backstop_store::{ReviewFilter, ReviewItem};
use jiff::Timestamp;
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{age, notice};
use super::session::Session;
use crate::catalog::Catalog;

/// At most this many open items are read for the queue.
pub const QUEUE_LIMIT: u32 = 1000;

/// The queue's filters, from its query string; an empty value is no filter.
#[derive(Debug, Default, Deserialize)]
pub struct QueueFilter {
    /// Only this job's items.
    #[serde(default)]
    pub job: Option<String>,
    /// Only this caller's items.
    #[serde(default)]
    pub caller: Option<String>,
    /// `held`, `attempt_limit`, `no_progress` or `task`.
    #[serde(default)]
    pub trigger: Option<String>,
    /// Only items older than this: `1h`, `24h` or `7d`.
    #[serde(default)]
    pub age: Option<String>,
    /// The item just resolved, for the notice.
    #[serde(default)]
    pub resolved: Option<i64>,
}

/// The triggers an item may have, in the order the filter lists them.
pub const TRIGGERS: [&str; 4] = ["held", "attempt_limit", "no_progress", "task"];
/// The ages the filter offers, with their seconds.
const AGES: [(&str, i64); 3] = [("1h", 3600), ("24h", 86_400), ("7d", 7 * 86_400)];

/// What put an item in the queue.
pub fn trigger(item: &ReviewItem) -> &str {
    if item.kind == "task" {
        "task"
    } else if is_escalation_lane(&item.lane) {
        &item.lane
    } else {
        "held"
    }
}

impl QueueFilter {
    fn given(value: Option<&String>) -> Option<&str> {
        value.map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// What the store filters on.
    pub fn store_filter(&self) -> ReviewFilter {
        ReviewFilter {
            open: Some(true),
            job: Self::given(self.job.as_ref()).map(str::to_owned),
            caller: Self::given(self.caller.as_ref()).map(str::to_owned),
            limit: Some(QUEUE_LIMIT),
        }
    }

    /// Whether `item` passes the filters the store does not apply.
    pub fn keeps(&self, item: &ReviewItem, now: Timestamp) -> bool {
        let trigger_ok =
            Self::given(self.trigger.as_ref()).is_none_or(|wanted| trigger(item) == wanted);
        let older = Self::given(self.age.as_ref())
            .and_then(|wanted| AGES.iter().find(|(name, _)| *name == wanted))
            .is_none_or(|(_, seconds)| now.as_second() - item.opened_at.as_second() >= *seconds);
        trigger_ok && older
    }
}

/// The queue page's body.
pub fn view(
    session: &Session,
    filter: &QueueFilter,
    catalog: &Catalog,
    items: &[ReviewItem],
    now: Timestamp,
) -> Markup {
    let jobs: Vec<&String> = catalog.packs.keys().collect();
    // Who a case item's escalation goes to, from its pack.
    let goes_to = |item: &ReviewItem| -> Option<String> {
        if let Some(task) = &item.task {
            return Some(task.to.clone());
        }
        let pack = catalog.packs.get(&item.job)?;
        let named = pack.escalations.iter().find(|e| e.id == item.escalation)?;
        Some(named.to.clone())
    };
    let mut per_lane: BTreeMap<&str, usize> = BTreeMap::new();
    for item in items {
        *per_lane.entry(item.lane.as_str()).or_default() += 1;
    }
    let selected = |value: Option<&String>, option: &str| value.is_some_and(|v| v == option);
    html! {
        @if let Some(id) = filter.resolved {
            (notice("flash", &format!("Item {id} is resolved and has left the queue.")))
        }
        h1 { "Queue: " (items.len()) " open" }
        section {
            form.filters method="get" action="/ui" {
                div {
                    label for="job" { "Job" }
                    select #job name="job" {
                        option value="" { "any" }
                        @for job in &jobs {
                            option value=(job) selected[selected(filter.job.as_ref(), job)] { (job) }
                        }
                    }
                }
                div {
                    label for="caller" { "Caller" }
                    input #caller type="text" name="caller" value=[filter.caller.as_deref()] placeholder="any";
                }
                div {
                    label for="trigger" { "Trigger" }
                    select #trigger name="trigger" {
                        option value="" { "any" }
                        @for t in TRIGGERS {
                            option value=(t) selected[selected(filter.trigger.as_ref(), t)] { (t) }
                        }
                    }
                }
                div {
                    label for="age" { "Older than" }
                    select #age name="age" {
                        option value="" { "any age" }
                        @for (name, _) in AGES {
                            option value=(name) selected[selected(filter.age.as_ref(), name)] { (name) }
                        }
                    }
                }
                button.primary type="submit" { "Filter" }
            }
        }
        @if !per_lane.is_empty() {
            section.counts aria-label="Open items per lane" {
                @for (lane, count) in &per_lane {
                    span.pill { (lane) ": " (count) }
                }
            }
        }
        section {
            @if items.is_empty() {
                p.muted { "Nothing waits for a person." }
            } @else {
                table #queue {
                    thead { tr {
                        th { "Item" } th { "Trigger" } th { "Job" } th { "Case or task" }
                        th { "Lane" } th { "Escalation" } th { "Caller" } th { "Waiting" }
                    } }
                    tbody {
                        @for item in items {
                            tr {
                                td { a href=(format!("/ui/items/{}", item.id)) { "#" (item.id) } }
                                td { span class=(if trigger(item) == "held" { "pill" } else { "pill warn" }) { (trigger(item)) } }
                                td { (item.job) }
                                td { (item.case_id) }
                                td { (item.lane) }
                                td {
                                    (item.escalation)
                                    @if let Some(to) = goes_to(item) { " → " strong { (to) } }
                                }
                                td { (item.caller) }
                                td { (age(now.as_second() - item.opened_at.as_second())) }
                            }
                        }
                    }
                }
            }
        }
        p.muted { "Signed in as " (session.caller.id) "." }
    }
}
