//! The suppression list: contacts that asked not to be contacted, each with a form to lift it
//! (a reason required), and the lifted ones with who lifted each, when and why.

use backstop_store::SuppressionRecord;
use maud::{Markup, html};

use super::session::Session;

/// The page's body: the list in force (with a lift form each), then the lifted ones.
pub fn view(
    session: &Session,
    in_force: &[SuppressionRecord],
    lifted: &[SuppressionRecord],
    message: Option<&str>,
) -> Markup {
    html! {
        h1 { "Suppressions" }
        @if let Some(message) = message { (super::layout::notice("error", message)) }
        section {
            h2 { "In force" }
            @if in_force.is_empty() {
                p.muted { "No contact is on the suppression list." }
            } @else {
                table #suppressions {
                    thead { tr { th { "Contact" } th { "Job" } th { "Caller" } th { "Case" } th { "Since" } th { "Why" } th { "Lift" } } }
                    tbody {
                        @for s in in_force {
                            tr {
                                td { (s.contact) }
                                td { (s.job) }
                                td { (s.caller) }
                                td { (s.case_id.as_deref().unwrap_or("every case")) }
                                td { (s.at.to_string()) }
                                td { (s.reason) }
                                td {
                                    form.lift method="post" action="/ui/suppressions/lift" {
                                        input type="hidden" name="csrf" value=(session.csrf);
                                        input type="hidden" name="caller" value=(s.caller);
                                        input type="hidden" name="job" value=(s.job);
                                        input type="hidden" name="contact" value=(s.contact);
                                        @if let Some(case) = &s.case_id {
                                            input type="hidden" name="case_id" value=(case);
                                        }
                                        input type="text" name="reason" required placeholder="Why lift it (kept)";
                                        button type="submit" { "Lift" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section {
            h2 { "Lifted" }
            @if lifted.is_empty() {
                p.muted { "No suppression has been lifted." }
            } @else {
                table #lifted {
                    thead { tr { th { "Contact" } th { "Job" } th { "Case" } th { "Lifted" } th { "By" } th { "Why" } } }
                    tbody {
                        @for s in lifted {
                            @if let Some(l) = &s.lifted {
                                tr {
                                    td { (s.contact) }
                                    td { (s.job) }
                                    td { (s.case_id.as_deref().unwrap_or("every case")) }
                                    td { (l.at.to_string()) }
                                    td { (l.by) }
                                    td { (l.why) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
