//! A notice as a Slack incoming webhook takes it: `{"text", "blocks"}`. `text` is the one line
//! a notification shows (and what clients without blocks show); the blocks add the hand-off
//! and the ids a person looks things up by.

use serde_json::{Value, json};

use super::{Notice, NotifyKind};

/// The Slack body for `notice`.
pub fn slack_body(notice: &Notice) -> Value {
    let title = match notice.kind {
        NotifyKind::Escalation => "Escalation",
        NotifyKind::ReviewOpened => "Review opened",
        NotifyKind::AttemptLimit => "Attempt limit reached",
        NotifyKind::DispatchRefused => "Dispatch refused",
    };
    let mut lines = vec![format!("*{title}*: {}", escape(&notice.text))];
    if let Some(e) = &notice.escalation {
        lines.push(format!("*Why:* {}", escape(&e.why)));
        lines.push(format!("*To:* {}", escape(&e.to)));
    }
    let mut ids = vec![format!("caller `{}`", escape(&notice.caller))];
    if let Some(job) = &notice.job {
        ids.push(format!("job `{}`", escape(job)));
    }
    if let Some(case) = &notice.case_id {
        ids.push(format!("case `{}`", escape(case)));
    }
    if let Some(review) = notice.review_id {
        ids.push(format!("review {review}"));
    }
    ids.push(format!("event `{}`", notice.id));
    ids.push(notice.at.to_string());
    json!({
        "text": format!("backstop: {}", notice.text),
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": lines.join("\n")}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": ids.join(" · ")}]},
        ],
    })
}

/// Text with the three characters Slack's markup reserves escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::TaskFailure;

    #[test]
    fn the_body_has_a_line_of_text_and_blocks() {
        let failure = TaskFailure {
            task: "t<1>".to_owned(),
            tool: None,
            class: "auth".to_owned(),
            to: "on-call & ops".to_owned(),
        };
        let at = "2026-11-01T09:00:00Z".parse().unwrap();
        let notice = &Notice::for_task_review("agent-a", 4, &failure, at)[0];
        let body = slack_body(notice);
        assert_eq!(
            body["text"],
            format!("backstop: {}", notice.text),
            "the plain line is the notice's"
        );
        assert_eq!(body["blocks"][0]["type"], "section");
        let section = body["blocks"][0]["text"]["text"].as_str().unwrap();
        assert!(section.starts_with("*Review opened*: "), "{section}");
        assert!(section.contains("t&lt;1&gt;"), "{section}");
        assert!(section.contains("on-call &amp; ops"), "{section}");
        let context = body["blocks"][1]["elements"][0]["text"].as_str().unwrap();
        assert!(context.contains(&notice.id), "{context}");
        assert!(context.contains("review 4"), "{context}");
    }
}
