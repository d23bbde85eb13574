//! The fleet: tools' breakers and budgets, tasks a policy denial stopped, escalations per
//! hour, and decisions per job.

use std::collections::BTreeMap;

use backstop_store::AttemptCount;

use crate::routes::recover::ToolView;
use maud::{Markup, html};

/// What the fleet page shows.
#[derive(Debug, Default)]
pub struct Fleet {
    /// Each tool with its breaker and budget.
    pub tools: Vec<ToolView>,
    /// Stopped tasks: caller, task, the denial.
    pub stopped: Vec<(String, String, String)>,
    /// Review items opened in each of the last 24 hours (`2026-12-02T09`), oldest first.
    pub escalations_per_hour: BTreeMap<String, usize>,
    /// Attempts of the last 24 hours by job and status.
    pub attempts: Vec<AttemptCount>,
}

/// The statuses shown as columns, in order.
const STATUSES: [&str; 6] = ["decided", "held", "undecided", "gap", "reconcile", "noop"];

/// The fleet page's body.
pub fn view(fleet: &Fleet) -> Markup {
    let mut per_job: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    for count in &fleet.attempts {
        *per_job
            .entry(count.job.as_str())
            .or_default()
            .entry(count.status.as_str())
            .or_default() += count.count;
    }
    html! {
        h1 { "Fleet" }
        section {
            h2 { "Tools" }
            @if fleet.tools.is_empty() {
                p.muted { "No tool has reported a call yet." }
            } @else {
                table #tools {
                    thead { tr { th { "Tool" } th { "Breaker" } th { "Failures / calls" } th { "Open until" } th { "Retry budget" } } }
                    tbody {
                        @for ToolView { tool, breaker, budget } in &fleet.tools {
                            tr {
                                td { (tool) }
                                @if let Some(b) = breaker {
                                    td { span class=(if b.state.as_str() == "closed" { "pill ok" } else { "pill warn" }) { (b.state.as_str()) } }
                                    td { (b.failures) " / " (b.calls) }
                                    td { (b.open_until.map_or_else(|| "—".to_owned(), |t| t.to_string())) }
                                } @else { td { "—" } td { "—" } td { "—" } }
                                td {
                                    @if let Some(b) = budget {
                                        (format!("{:.1} of {:.0}", b.tokens, b.capacity))
                                        @if !b.retries_allowed { " " span.pill.warn { "retries paused" } }
                                    } @else { "—" }
                                }
                            }
                        }
                    }
                }
            }
        }
        section {
            h2 { "Stopped tasks" }
            @if fleet.stopped.is_empty() {
                p.muted { "No task is stopped by a policy denial." }
            } @else {
                table #stopped {
                    thead { tr { th { "Caller" } th { "Task" } th { "Why" } } }
                    tbody {
                        @for (caller, task, why) in &fleet.stopped {
                            tr { td { (caller) } td { (task) } td { (why) } }
                        }
                    }
                }
            }
        }
        section {
            h2 { "Escalations per hour (last 24 hours)" }
            @if fleet.escalations_per_hour.is_empty() {
                p.muted { "None." }
            } @else {
                table #escalations {
                    thead { tr { th { "Hour (UTC)" } th { "Items opened" } } }
                    tbody {
                        @for (hour, count) in &fleet.escalations_per_hour {
                            tr { td { (hour) ":00" } td { (count) } }
                        }
                    }
                }
            }
        }
        section {
            h2 { "Decisions per job (last 24 hours)" }
            @if per_job.is_empty() {
                p.muted { "No attempts." }
            } @else {
                table #decisions {
                    thead { tr { th { "Job" } @for s in STATUSES { th { (s) } } } }
                    tbody {
                        @for (job, counts) in &per_job {
                            tr {
                                td { (job) }
                                @for s in STATUSES { td { (counts.get(s).copied().unwrap_or(0)) } }
                            }
                        }
                    }
                }
            }
        }
    }
}
