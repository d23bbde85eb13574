//! The fleet: tools' breakers and budgets, tasks a policy denial stopped, failed approaches,
//! escalations per hour, and decisions per job.

use std::collections::BTreeMap;

use backstop_core::recover::recovery::CallerApproach;
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
    /// Failed approaches every caller's tasks spent, the most recent first.
    pub approaches: Vec<CallerApproach>,
    /// Review items opened in each of the last 24 hours (`2026-12-02T09`), oldest first, the
    /// quiet hours at 0.
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
        (approaches(&fleet.approaches))
        section {
            h2 { "Escalations per hour (last 24 hours)" }
            @if fleet.escalations_per_hour.values().all(|count| *count == 0) {
                p.muted { "None." }
            } @else {
                (escalation_bars(&fleet.escalations_per_hour))
                table #escalations {
                    thead { tr { th { "Hour (UTC)" } th { "Items opened" } } }
                    tbody {
                        @for (hour, count) in fleet.escalations_per_hour.iter().filter(|(_, c)| **c > 0) {
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

/// Bar width and gap, and the bars' full height, in the chart's units.
const BAR: usize = 16;
const GAP: usize = 4;
const BARS_HEIGHT: usize = 60;

/// The failed approaches every caller's tasks spent, the most recent first.
fn approaches(approaches: &[CallerApproach]) -> Markup {
    html! {
    section {
        h2 { "Failed approaches" }
        @if approaches.is_empty() {
            p.muted { "No task has spent every attempt on a tool and operation in the last day." }
        } @else {
            table #approaches {
                thead { tr { th { "Caller" } th { "Tool" } th { "Operation" } th { "Class" } th { "Failures (tasks)" } th { "Last failed" } th { "What failed" } } }
                tbody {
                    @for CallerApproach { caller, approach } in approaches {
                        tr {
                            td { (caller) }
                            td { (approach.tool) }
                            td { (approach.operation.as_deref().unwrap_or("—")) }
                            td { (approach.class.as_str()) }
                            td { (approach.failures) " (" (approach.tasks) ")" }
                            td { (approach.last_at.to_string()) }
                            td { (approach.evidence) }
                        }
                    }
                }
            }
        }
    }
    }
}

/// The escalations per hour as a bar chart: SVG drawn here (no script, nothing fetched), a bar
/// per hour, oldest left, each with its hour and count as its title; hours labelled every six.
fn escalation_bars(per_hour: &BTreeMap<String, usize>) -> Markup {
    let most = per_hour.values().copied().max().unwrap_or(0).max(1);
    let width = per_hour.len() * (BAR + GAP);
    let height = BARS_HEIGHT + 14;
    html! {
        svg #escalation-bars xmlns="http://www.w3.org/2000/svg" role="img"
            aria-label="Review items opened per hour, last 24 hours"
            viewBox=(format!("0 0 {width} {height}")) width=(width) height=(height) {
            @for (i, (hour, count)) in per_hour.iter().enumerate() {
                @let bar = if *count == 0 { 0 } else { (count * BARS_HEIGHT / most).max(2) };
                @let x = i * (BAR + GAP);
                rect x=(x) y=(BARS_HEIGHT - bar) width=(BAR) height=(bar) fill="#b4442c" {
                    title { (hour) ":00 UTC: " (count) }
                }
                @if i % 6 == 0 {
                    text x=(x) y=(height - 2) font-size="10" fill="#555" {
                        (hour.get(11..13).unwrap_or_default()) "h"
                    }
                }
            }
        }
    }
}
