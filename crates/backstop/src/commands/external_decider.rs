//! An external decider: the loop's state and two questions sent as a JSON POST, the answers read.
//!
//! The request is the verified-retry recipe's: `{"state": {...}, "questions": {...}}`, with a
//! bearer token from `BACKSTOP_DECIDER_KEY` (see `settings`) and a fresh `Idempotency-Key` for every question. An
//! error or a timeout leaves the loop's fixed cap in charge; an abstention stops the loop.

use std::time::Duration;

use backstop_core::verify::decider::Choice;
use serde_json::{Value, json};

/// What the decider answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A score (1 to 5, may be fractional) and a choice.
    Verdict {
        /// The expected score of the next attempt.
        score: f64,
        /// What the next attempt should do.
        choice: Choice,
    },
    /// The decider declined to answer: a person should look.
    Abstained,
    /// No usable answer (an error, a timeout, a malformed reply): why.
    Unavailable(String),
}

/// A decider at a URL.
#[derive(Debug, Clone)]
pub struct ExternalDecider {
    url: String,
    key: Option<String>,
    timeout: Duration,
}

impl ExternalDecider {
    /// A decider at `url`, with its token (if any) and a timeout per question.
    pub fn new(url: &str, key: Option<String>, timeout: Duration) -> ExternalDecider {
        ExternalDecider {
            url: url.to_owned(),
            key,
            timeout,
        }
    }

    /// Asks about the next attempt.
    pub fn ask(&self, state: &Value) -> Answer {
        let body = json!({"state": state, "questions": questions()});
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let mut request = agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", uuid::Uuid::new_v4().to_string());
        if let Some(key) = &self.key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let mut response = match request.send_json(&body) {
            Ok(response) => response,
            Err(e) => return Answer::Unavailable(format!("the decider could not be reached: {e}")),
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Answer::Unavailable(format!("the decider answered HTTP {status}"));
        }
        match response.body_mut().read_json::<Value>() {
            Ok(reply) => read_answers(&reply),
            Err(e) => Answer::Unavailable(format!("the decider's reply was not JSON: {e}")),
        }
    }
}

/// The two questions of every request.
fn questions() -> Value {
    json!({
        "next_attempt": {
            "type": "score",
            "instructions": "How likely is one more attempt to make all tests pass?",
            "criteria": {
                "1": "Very unlikely: the same failure will repeat",
                "2": "Unlikely: nothing new was learned from the last attempt",
                "3": "Even odds",
                "4": "Likely: the failures are narrowing",
                "5": "Very likely: one small fix remains"
            }
        },
        "strategy": {
            "type": "choice",
            "instructions": "Choose the strategy for the next step.",
            "criteria": {
                "same_approach": "Keep the current approach and fix the reported failure",
                "change_approach": "The current approach is stuck; try a different one",
                "stop": "More attempts cannot fix this; hand it to a person"
            }
        }
    })
}

/// Reads `{"answers": {"next_attempt": {"expected_score", "abstained"}, "strategy": {"decision", "abstained"}}}`.
fn read_answers(reply: &Value) -> Answer {
    let answers = &reply["answers"];
    let (score, choice) = (&answers["next_attempt"], &answers["strategy"]);
    if score["abstained"] == true || choice["abstained"] == true {
        return Answer::Abstained;
    }
    let Some(expected) = score["expected_score"]
        .as_f64()
        .filter(|s| (1.0..=5.0).contains(s))
    else {
        return Answer::Unavailable(
            "the decider's reply has no expected_score from 1 to 5".to_owned(),
        );
    };
    let choice = match choice["decision"].as_str() {
        Some("same_approach") => Choice::SameApproach,
        Some("change_approach") => Choice::ChangeApproach,
        Some("stop") => Choice::Stop,
        _ => {
            return Answer::Unavailable(
                "the decider's reply has no decision of same_approach, change_approach or stop"
                    .to_owned(),
            );
        }
    };
    Answer::Verdict {
        score: expected,
        choice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_or_refused() {
        let reply = json!({"answers": {
            "next_attempt": {"expected_score": 3.5, "abstained": false},
            "strategy": {"decision": "change_approach", "abstained": false}}});
        assert_eq!(
            read_answers(&reply),
            Answer::Verdict {
                score: 3.5,
                choice: Choice::ChangeApproach
            }
        );
        let abstained = json!({"answers": {"next_attempt": {"abstained": true}, "strategy": {}}});
        assert_eq!(read_answers(&abstained), Answer::Abstained);
        for bad in [
            json!({}),
            json!({"answers": {"next_attempt": {"expected_score": 9}, "strategy": {"decision": "stop"}}}),
        ] {
            assert!(
                matches!(read_answers(&bad), Answer::Unavailable(_)),
                "{bad}"
            );
        }
    }
}
