//! One review item: the case's questions and answers, the sources cited per attempt (never
//! excerpt text: it is not stored), the attempts on a timeline, the escalation, and the
//! resolution form with only the decisions the item allows.

use backstop_core::pack::Pack;
use backstop_store::{CaseRecord, CycleAttempt, ReviewItem};
use jiff::Timestamp;
use maud::{Markup, html};

use super::layout::{age, notice};
use super::queue::trigger;
use super::session::Session;

/// Everything the item page shows.
#[derive(Debug)]
pub struct ItemView<'a> {
    /// The item.
    pub item: &'a ReviewItem,
    /// Its job's pack, when loaded.
    pub pack: Option<&'a Pack>,
    /// Its case, for a case item.
    pub case: Option<&'a CaseRecord>,
    /// The decisions it may be resolved with.
    pub allowed: &'a [String],
    /// A refused resolution's reason.
    pub error: Option<&'a str>,
}

/// The item page's body.
pub fn view(session: &Session, view: &ItemView<'_>, now: Timestamp) -> Markup {
    let item = view.item;
    html! {
        p { a href="/ui" { "← Queue" } }
        @if let Some(error) = view.error { (notice("error", error)) }
        h1 { "Item #" (item.id) ": " (item.case_id) }
        section {
            dl {
                dt { "Trigger" } dd { span.pill.warn { (trigger(item)) } }
                dt { "Kind" } dd { (item.kind) }
                @if !item.job.is_empty() { dt { "Job" } dd { (item.job) } }
                dt { "Caller" } dd { (item.caller) }
                dt { "Lane" } dd { (item.lane) }
                dt { "Waiting" } dd { (age(now.as_second() - item.opened_at.as_second())) " (opened " (item.opened_at) ")" }
                dt { "Why" } dd { (item.reason) }
                @if item.retry_allowed { dt { "Lane retry" } dd { @if item.retry_used { "used" } @else { "allowed, not used" } } }
            }
        }
        (escalation(view))
        @if let Some(task) = &item.task {
            section {
                h2 { "The failure" }
                dl {
                    dt { "Task" } dd { (task.task) }
                    dt { "Tool" } dd { (task.tool.as_deref().unwrap_or("not named")) }
                    dt { "Class" } dd { (task.class) }
                }
                h2 { "Evidence" }
                pre { (serde_json::to_string_pretty(&task.evidence).unwrap_or_default()) }
            }
        }
        @if let (Some(pack), Some(case)) = (view.pack, view.case) {
            (questions(pack, case))
            (timeline(case))
        }
        @if let Some(resolved) = &item.resolution {
            section.flash {
                "Resolved " (resolved.decision) " by " (resolved.by) " at " (resolved.at)
                @if let Some(note) = &resolved.note { ": " (note) }
            }
        } @else {
            (resolve_form(session, view))
        }
    }
}

fn escalation(view: &ItemView<'_>) -> Markup {
    let item = view.item;
    let named = view
        .pack
        .and_then(|pack| pack.escalations.iter().find(|e| e.id == item.escalation));
    html! {
        section {
            h2 { "Escalation" }
            @if let Some(e) = named {
                dl {
                    dt { "Id" } dd { (e.id) }
                    dt { "Goes to" } dd { strong { (e.to) } }
                    dt { "Why" } dd { (e.why) }
                    dt { "Next step" } dd { (e.next_step) }
                }
            } @else if let Some(task) = &item.task {
                dl {
                    dt { "Goes to" } dd { strong { (task.to) } }
                    @if !task.why.is_empty() { dt { "Step's reason" } dd { code { (task.why) } } }
                }
            } @else if item.escalation.is_empty() {
                p.muted { "The lane names no escalation." }
            } @else {
                p { (item.escalation) span.muted { " (not in the loaded pack)" } }
            }
        }
    }
}

/// The attempts of the case's current cycle.
fn current(case: &CaseRecord) -> Vec<&CycleAttempt> {
    case.attempts
        .iter()
        .filter(|a| a.cycle == case.cycle)
        .collect()
}

fn questions(pack: &Pack, case: &CaseRecord) -> Markup {
    let attempts = current(case);
    let latest = attempts.last();
    html! {
        section {
            h2 { "Questions" }
            table #questions {
                thead { tr { th { "Question" } th { "Answer" } th { "Sources cited" } } }
                tbody {
                    @for question in &pack.questions {
                        @let answer = latest.and_then(|a| a.answers.get(&question.key));
                        @let meaning = answer.and_then(|value| question.answers.iter().find(|a| &a.value == value));
                        tr {
                            td { (question.text) br; span.muted { (question.key) } }
                            td {
                                @if let Some(value) = answer {
                                    span.pill.ok { (value) }
                                    @if let Some(m) = meaning { br; span.muted { (m.means) } }
                                } @else {
                                    span.pill.warn { "open" }
                                    br; span.muted { (question.fix) }
                                }
                            }
                            td {
                                @for attempt in &attempts {
                                    @for cited in attempt.record.cited.iter().filter(|c| c.under == question.key) {
                                        div { "#" (attempt.record.number) " " (cited.source) " · " (cited.locator) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            p.muted { "Excerpt text is never stored: only sources, locators and hashes." }
        }
    }
}

fn timeline(case: &CaseRecord) -> Markup {
    html! {
        section {
            h2 { "Attempts" }
            table #attempts {
                thead { tr {
                    th { "#" } th { "At" } th { "Status" } th { "Outcome" } th { "Next" }
                    th { "Progress" } th { "Closed" }
                } }
                tbody {
                    @for attempt in &case.attempts {
                        @let r = &attempt.record;
                        tr {
                            td { (r.number) @if attempt.cycle != case.cycle { span.muted { " (cycle " (attempt.cycle) ")" } } }
                            td { (r.at) }
                            td { (r.status.as_str()) }
                            td { (r.outcome.as_deref().unwrap_or("—")) }
                            td { (r.next.map_or("—", backstop_core::case::Next::as_str)) }
                            td { @if r.progress { span.pill.ok { "progress" } } @else { span.pill.warn { "none" } } }
                            td { (r.closed.join(", ")) }
                        }
                    }
                }
            }
        }
    }
}

fn resolve_form(session: &Session, view: &ItemView<'_>) -> Markup {
    let action = format!("/ui/items/{}/resolve", view.item.id);
    html! {
        section {
            h2 { "Resolve" }
            form #resolve method="post" action=(action) {
                input type="hidden" name="csrf" value=(session.csrf);
                p {
                    @for (i, decision) in view.allowed.iter().enumerate() {
                        label.choice {
                            input type="radio" name="decision" value=(decision) required[i == 0];
                            " " (if decision == backstop_core::case::resolution::HANDOFF { "hand off (note who takes it)" } else { decision.as_str() })
                        }
                    }
                }
                label for="note" { "Note" }
                textarea #note name="note" maxlength="4000" {}
                p { button.primary type="submit" { "Resolve" } }
            }
        }
    }
}
