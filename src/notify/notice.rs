//! A notice: one event as `[notify]` tells it (the JSON on a command's stdin and in a webhook's
//! body), and `plain`, which makes the agent's text in it fit to tell.

use crate::manifest::schema::NotifyOn;
use crate::record::ExitReason;
use serde::Serialize;
use std::path::PathBuf;

/// The longest text from an agent a notice carries.
const MAX_TEXT: usize = 300;

/// Which run the notices are about.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct About {
    pub(crate) run_id: String,
    pub(crate) name: String,
    pub(crate) repository: PathBuf,
    pub(crate) branch: String,
    pub(crate) base_branch: Option<String>,
}

/// One event as it is told: the JSON on a command's stdin and in a webhook's body.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Notice {
    pub(crate) event: NotifyOn,
    /// When it happened (RFC 3339, UTC).
    pub(crate) at: String,
    #[serde(flatten)]
    pub(crate) about: About,
    /// One line for people (and for chats that show a webhook's `text`).
    pub(crate) text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) exit_reason: Option<ExitReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) merged_into: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) preserved_branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) commits: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) duration_ms: Option<u64>,
    /// Why it failed, neutralized.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) attempt: Option<crate::record::AttemptRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) budget: Option<crate::error::BudgetExceeded>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage_limit: Option<UsageLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pull_request: Option<PullRequest>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct UsageLimit {
    pub(crate) until: String,
    pub(crate) wait_secs: u64,
    /// What the agent said, neutralized.
    pub(crate) message: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct PullRequest {
    pub(crate) number: u64,
    pub(crate) url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) round: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) merged: Option<bool>,
}

impl Notice {
    pub(crate) fn new(event: NotifyOn, about: &About, text: String) -> Notice {
        Notice {
            event,
            at: crate::record::now_rfc3339(),
            about: about.clone(),
            text,
            exit_code: None,
            exit_reason: None,
            merged_into: None,
            preserved_branch: None,
            commits: None,
            cost_usd: None,
            duration_ms: None,
            error: None,
            attempt: None,
            budget: None,
            usage_limit: None,
            pull_request: None,
        }
    }
}

/// Text from an agent made fit to tell: secrets redacted, escape sequences and control
/// characters dropped, chat markup broken (`<`, `>` and a mention's `@`), one line, cut short.
pub(crate) fn plain(text: &str) -> String {
    let mut out = String::new();
    for c in crate::redact::plain_line(text).chars() {
        match c {
            '<' => out.push('‹'),
            '>' => out.push('›'),
            '@' => out.push_str("@\u{200b}"),
            c => out.push(c),
        }
    }
    let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    match out.chars().count() > MAX_TEXT {
        true => out.chars().take(MAX_TEXT - 1).collect::<String>() + "…",
        false => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_is_neutralized() {
        crate::redact::register(["sk-notify-secret-123".to_owned()]);
        let said = plain(
            "\u{1b}[31mred\u{1b}[0m \u{1b}]52;c;aGk=\u{7}copy <!channel> @here\nkey sk-notify-secret-123 \u{202e}evil",
        );
        assert_eq!(said, "red copy ‹!channel› @\u{200b}here key *** evil");
        let long = plain(&"x".repeat(1000));
        assert_eq!(long.chars().count(), MAX_TEXT);
    }
}
