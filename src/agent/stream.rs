//! What agents print, in eden's terms: one `StreamEvent` type that every parser produces, and
//! the helpers parsers share (JSON field access, tool-call summaries, failure classification).

use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StreamEvent<'a> {
    /// Text the agent wrote. `continues` is true when the next text event continues it
    /// (streamed deltas), false for a complete line or block.
    Text {
        text: Cow<'a, str>,
        continues: bool,
        subagent: bool,
    },
    /// The agent started a tool: its name and a short human summary of the input.
    ToolCall {
        name: String,
        summary: String,
        subagent: bool,
    },
    ToolResult {
        name: Option<String>,
        ok: bool,
        /// Why it failed, as the agent reported it (its output's first lines), when it says.
        reason: Option<String>,
    },
    Usage {
        usage: Usage,
        mode: UsageMode,
    },
    SessionId(String),
    /// The agent's own final answer, when it reports one separately.
    FinalResult(String),
    /// A failure the agent reported on stdout (it may still exit 0).
    Error {
        message: String,
        kind: FailureKind,
    },
    /// A non-fatal notice from the agent (retries and the like).
    Notice(String),
    /// The model the agent says it uses (Claude's `system/init` and assistant messages).
    Model(String),
}

/// Token counts (and cost when the agent reports it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Usage {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cache_read_tokens: u64,
    pub(crate) cache_write_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cost_usd: Option<f64>,
}

impl Usage {
    pub(crate) fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }

    /// What `self` (a running total) added since `earlier` (the same session's previous total).
    pub(crate) fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self.cache_write_tokens.saturating_sub(earlier.cache_write_tokens),
            cost_usd: match (self.cost_usd, earlier.cost_usd) {
                (Some(now), Some(before)) => Some((now - before).max(0.0)),
                (now, _) => now,
            },
        }
    }

    pub(crate) fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// How a usage event combines with what came before in the same iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UsageMode {
    /// Counts for one step or message: added up.
    Add,
    /// Totals for the whole invocation so far: replaces earlier counts.
    Total,
    /// Running totals for the whole session, across resumed invocations (Codex): replaces
    /// earlier counts, and what earlier iterations reported for the same session is subtracted.
    SessionTotal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FailureKind {
    Authentication,
    RateLimit,
    Other,
}

/// What agents say when they have no (valid) credentials, lowercased: Claude Code's "Not logged in
/// · Please run /login", pi's "No API key found", Copilot's "No authentication information found",
/// and the providers' own wordings.
const AUTHENTICATION: [&str; 8] = [
    "authenticat",
    "unauthorized",
    "api key",
    "not logged in",
    "please run /login",
    "no authentication",
    "invalid x-api-key",
    "login required",
];

impl FailureKind {
    /// As in records and JSON.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureKind::Authentication => "authentication",
            FailureKind::RateLimit => "rate_limit",
            FailureKind::Other => "other",
        }
    }

    /// Classify from an HTTP status and/or the message text.
    pub(crate) fn classify(status: Option<u64>, message: &str) -> FailureKind {
        // Status codes count only as whole tokens: `127.0.0.1:41429` is a port, not a 429.
        let has_status = |code: &str| message.split(|c: char| !c.is_ascii_alphanumeric()).any(|token| token == code);
        let status = status
            .or_else(|| ["401", "403", "429"].iter().find(|code| has_status(code)).and_then(|code| code.parse().ok()));
        let lower = message.to_ascii_lowercase();
        match status {
            Some(401 | 403) => FailureKind::Authentication,
            Some(429) => FailureKind::RateLimit,
            _ if ["rate limit", "rate_limit", "usage limit"].iter().any(|words| lower.contains(words)) => {
                FailureKind::RateLimit
            }
            _ if AUTHENTICATION.iter().any(|words| lower.contains(words)) => FailureKind::Authentication,
            _ => FailureKind::Other,
        }
    }

    pub(crate) fn hint(self) -> &'static str {
        match self {
            FailureKind::Authentication => "check the API key or login the agent uses (`agent.env`, or its own config)",
            FailureKind::RateLimit => {
                "the model provider's usage limit: eden waits for it to reset within `[loop] usage_limit_wait` (default 6h); raise that, or run again later, or use another key or model"
            }
            FailureKind::Other => "see the agent's message above",
        }
    }
}

/// Parse a line as a JSON object; `None` for anything else (which parsers pass on as text).
pub(crate) fn json_object(line: &[u8]) -> Option<Value> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    serde_json::from_slice::<Value>(line).ok().filter(Value::is_object)
}

/// `value.pointer(..)` without its per-segment unescaping: our pointers are plain literals.
pub(crate) fn at<'v>(value: &'v Value, pointer: &str) -> Option<&'v Value> {
    pointer.split('/').skip(1).try_fold(value, |value, key| match value {
        Value::Object(map) => map.get(key),
        Value::Array(list) => list.get(key.parse::<usize>().ok()?),
        _ => None,
    })
}

pub(crate) fn str_at<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    at(value, pointer).and_then(Value::as_str)
}

pub(crate) fn u64_at(value: &Value, pointer: &str) -> u64 {
    at(value, pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// A one-line summary of a tool's input: the command for shells, the path for file tools,
/// otherwise the first short string argument.
pub(crate) fn tool_summary(input: &Value) -> String {
    let pick = ["command", "cmd", "file_path", "filePath", "path", "pattern", "url", "query", "description"]
        .iter()
        .find_map(|key| input.get(*key).and_then(Value::as_str))
        .or_else(|| input.as_object()?.values().find_map(Value::as_str))
        .or_else(|| input.as_str())
        .unwrap_or("");
    one_line(pick, 120)
}

/// Why a tool call failed, from what it printed: its first non-empty lines, on one line, cut at
/// 300 characters.
pub(crate) fn failure_reason(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|line| !line.is_empty()).take(3).collect();
    one_line(&lines.join(" · "), 300)
}

/// A tool result's text: a string, or the `text` of a list of blocks (`[{"type":"text",...}]`).
pub(crate) fn result_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => {
            blocks.iter().filter_map(|block| block.get("text")?.as_str()).collect::<Vec<_>>().join("\n")
        }
        Value::Object(_) => value.get("content").map(result_text).unwrap_or_default(),
        _ => String::new(),
    }
}

/// First line, trimmed, cut to `max` characters with an ellipsis.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// A line that is not the JSON the parser expects: passed through as text, never dropped.
pub(crate) fn passthrough<'a>(line: &'a [u8]) -> StreamEvent<'a> {
    StreamEvent::Text { text: crate::agent::decode(line), continues: false, subagent: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries() {
        let v: Value = serde_json::json!({"command": "git commit -m x\nsecond line", "description": "d"});
        assert_eq!(tool_summary(&v), "git commit -m x");
        let v: Value = serde_json::json!({"file_path": "/tmp/a.rs", "content": "x"});
        assert_eq!(tool_summary(&v), "/tmp/a.rs");
        assert_eq!(one_line(&"x".repeat(200), 10).chars().count(), 10);
    }

    #[test]
    fn failure_kinds() {
        assert_eq!(FailureKind::classify(Some(401), ""), FailureKind::Authentication);
        assert_eq!(FailureKind::classify(None, "Rate limit reached"), FailureKind::RateLimit);
        assert_eq!(FailureKind::classify(None, "unexpected status 401 Unauthorized"), FailureKind::Authentication);
        assert_eq!(FailureKind::classify(None, "model not found"), FailureKind::Other);
        // A port that happens to contain 429 is not a rate limit.
        assert_eq!(
            FailureKind::classify(None, "unexpected status 401 Unauthorized: url: http://127.0.0.1:41429/v1/responses"),
            FailureKind::Authentication
        );
        assert_eq!(FailureKind::classify(None, "HTTP 429 Too Many Requests"), FailureKind::RateLimit);
    }
}
