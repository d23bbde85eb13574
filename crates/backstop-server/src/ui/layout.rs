//! The page shell every view shares: the head, the navigation, the sign-out form.

use maud::{DOCTYPE, Markup, html};

use super::session::Session;

/// A whole page titled `title`, for `session`'s operator (none on the sign-in page).
pub fn page(title: &str, session: Option<&Session>, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "backstop · " (title) }
                link rel="stylesheet" href="/ui/style.css";
            }
            body {
                header {
                    nav {
                        a.brand href="/ui" { "backstop" }
                        @if let Some(session) = session {
                            a href="/ui" { "Queue" }
                            a href="/ui/fleet" { "Fleet" }
                            a href="/ui/suppressions" { "Suppressions" }
                            form method="post" action="/ui/logout" {
                                input type="hidden" name="csrf" value=(session.csrf);
                                button type="submit" { "Sign out " (session.caller.id) }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A box with a message: `flash` for what just happened, `error` for what went wrong.
pub fn notice(kind: &str, text: &str) -> Markup {
    html! { section class=(kind) role="status" { (text) } }
}

/// A duration since an instant, as a person says it: `45s`, `12m`, `3h`, `2d`.
pub fn age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86_400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(age(-5), "0s");
        assert_eq!(age(59), "59s");
        assert_eq!(age(61), "1m");
        assert_eq!(age(3 * 3600 + 5), "3h");
        assert_eq!(age(2 * 86_400), "2d");
    }
}
