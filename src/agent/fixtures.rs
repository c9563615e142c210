//! Every parser over every recorded stream in `tests/fixtures/agent-streams/` (real output of
//! the CLIs against a scripted model server), summarized and snapshotted.

use super::ParserKind;

fn parser_named(name: &str) -> Option<Box<dyn super::Parser>> {
    ParserKind::named(name).map(ParserKind::parser)
}
use super::stream::{StreamEvent, Usage, UsageMode};
use std::fmt::Write;

/// Feed a fixture through a parser and describe what came out, one event per line.
fn summarize(parser: &str, fixture: &str) -> String {
    let path = format!("{}/tests/fixtures/agent-streams/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    let mut parser = parser_named(parser).unwrap();
    let mut out = String::new();
    let mut usage: Option<Usage> = None;
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        parser.parse_line(line, &mut |event| match event {
            StreamEvent::Text { text, subagent, .. } => {
                writeln!(out, "text{}: {text}", if subagent { " (subagent)" } else { "" }).unwrap()
            }
            StreamEvent::ToolCall { name, summary, .. } => writeln!(out, "tool: {name} {summary}").unwrap(),
            StreamEvent::ToolResult { ok, .. } => {
                writeln!(out, "tool result: {}", if ok { "ok" } else { "error" }).unwrap()
            }
            StreamEvent::Usage { usage: u, mode } => {
                let current = usage.get_or_insert_with(Usage::default);
                match mode {
                    UsageMode::Add => current.add(&u),
                    UsageMode::Total | UsageMode::SessionTotal => *current = u,
                }
            }
            StreamEvent::SessionId(id) => writeln!(out, "session: {id}").unwrap(),
            StreamEvent::FinalResult(text) => writeln!(out, "result: {text}").unwrap(),
            StreamEvent::Error { message, kind } => writeln!(out, "error ({kind:?}): {message}").unwrap(),
            StreamEvent::Notice(message) => writeln!(out, "notice: {message}").unwrap(),
            StreamEvent::Model(_) => {}
        });
    }
    if let Some(u) = usage {
        writeln!(
            out,
            "usage: in {} out {} cache_read {} cache_write {} cost {:?}",
            u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cost_usd
        )
        .unwrap();
    }
    out
}

macro_rules! fixture_snapshots {
    ($($test:ident: $parser:literal, $fixture:literal;)*) => {$(
        #[test]
        fn $test() {
            insta::assert_snapshot!(summarize($parser, $fixture));
        }
    )*};
}

fixture_snapshots! {
    claude_text: "claude-code", "claude-text.jsonl";
    claude_write_bash: "claude-code", "claude-write_bash.jsonl";
    claude_401: "claude-code", "claude-401.jsonl";
    claude_not_logged_in: "claude-code", "claude-not-logged-in.jsonl";
    codex_text: "codex", "codex-text.jsonl";
    codex_write_bash: "codex", "codex-write_bash.jsonl";
    codex_401: "codex", "codex-401.jsonl";
    opencode_text: "opencode", "opencode-text.jsonl";
    opencode_write_bash: "opencode", "opencode-write_bash.jsonl";
    opencode_401: "opencode", "opencode-401.jsonl";
    pi_anthropic_text: "pi", "pi-anthropic-text.jsonl";
    pi_anthropic_write_bash: "pi", "pi-anthropic-write_bash.jsonl";
    pi_openai_text: "pi", "pi-openai-text.jsonl";
    pi_openai_write_bash: "pi", "pi-openai-write_bash.jsonl";
    pi_401: "pi", "pi-401.jsonl";
    copilot_text: "copilot", "copilot-text.jsonl";
    copilot_write_bash: "copilot", "copilot-write_bash.jsonl";
    copilot_401: "copilot", "copilot-401.jsonl";
}

#[test]
fn every_fixture_is_covered() {
    let dir = format!("{}/tests/fixtures/agent-streams", env!("CARGO_MANIFEST_DIR"));
    let count = std::fs::read_dir(dir).unwrap().count();
    assert_eq!(count, 18, "a new fixture needs a snapshot test above");
}

#[test]
fn the_write_and_commit_runs_show_their_tool_calls_and_signal() {
    for (parser, fixture) in [
        ("claude-code", "claude-write_bash.jsonl"),
        ("codex", "codex-write_bash.jsonl"),
        ("opencode", "opencode-write_bash.jsonl"),
        ("pi", "pi-anthropic-write_bash.jsonl"),
        ("pi", "pi-openai-write_bash.jsonl"),
        ("copilot", "copilot-write_bash.jsonl"),
    ] {
        let summary = summarize(parser, fixture);
        assert!(summary.contains("git add -A && git commit -m x"), "{fixture}: the Bash call\n{summary}");
        assert!(summary.contains("hello.txt"), "{fixture}: the file write\n{summary}");
        assert!(summary.contains("<promise>COMPLETE</promise>"), "{fixture}: the signal\n{summary}");
        assert!(summary.contains("session: "), "{fixture}: the session id\n{summary}");
        assert!(!summary.contains("error ("), "{fixture}: no failure\n{summary}");
    }
}

#[test]
fn every_401_is_an_authentication_failure() {
    for (parser, fixture) in [
        ("claude-code", "claude-401.jsonl"),
        ("codex", "codex-401.jsonl"),
        ("opencode", "opencode-401.jsonl"),
        ("pi", "pi-401.jsonl"),
        ("copilot", "copilot-401.jsonl"),
    ] {
        let summary = summarize(parser, fixture);
        assert!(summary.contains("error (Authentication): "), "{fixture}\n{summary}");
    }
}

/// No credentials at all, as each CLI really says it (recorded with an empty `HOME` and no key):
/// Claude Code on its stream, pi and Copilot on stderr before exiting 1.
#[test]
fn not_being_logged_in_is_an_authentication_failure() {
    let summary = summarize("claude-code", "claude-not-logged-in.jsonl");
    assert!(summary.contains("error (Authentication): Not logged in · Please run /login"), "{summary}");
    for fixture in ["pi-no-api-key.txt", "copilot-not-logged-in.txt"] {
        let path = format!("{}/tests/fixtures/agent-stderr/{fixture}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().find(|line| super::FailureKind::classify(None, line) != super::FailureKind::Other);
        assert_eq!(
            first.map(|line| super::FailureKind::classify(None, line)),
            Some(super::FailureKind::Authentication),
            "{fixture}"
        );
    }
}

#[test]
fn lines_that_are_not_json_pass_through_as_text() {
    for parser in ParserKind::names() {
        let mut parser = parser_named(parser).unwrap();
        let mut texts = Vec::new();
        for line in [&b"plain words"[..], b"{not json", b"[1,2]", b"\xff"] {
            parser.parse_line(line, &mut |event| {
                if let StreamEvent::Text { text, .. } = event {
                    texts.push(text.into_owned());
                }
            });
        }
        assert_eq!(texts, ["plain words", "{not json", "[1,2]", "\u{fffd}"]);
    }
}

#[test]
fn claude_subagent_traffic_is_marked() {
    let line = br#"{"type":"assistant","parent_tool_use_id":"toolu_1","message":{"content":[{"type":"text","text":"sub says hi"},{"type":"tool_use","name":"Read","input":{"file_path":"/x"}}]}}"#;
    let mut events = Vec::new();
    parser_named("claude-code").unwrap().parse_line(line, &mut |event| events.push(format!("{event:?}")));
    assert!(events[0].contains("subagent: true") && events[1].contains("subagent: true"), "{events:?}");
}

#[test]
fn cursor_tool_calls() {
    let lines: [&[u8]; 4] = [
        br#"{"type":"system","subtype":"init","session_id":"cur-1"}"#,
        br#"{"type":"tool_call","subtype":"started","tool_call":{"shellToolCall":{"args":{"command":"git commit -m x"}}}}"#,
        br#"{"type":"tool_call","subtype":"completed","tool_call":{"shellToolCall":{"args":{"command":"git commit -m x"},"result":{"success":{"exitCode":0}}}}}"#,
        br#"{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"cur-1"}"#,
    ];
    let mut events = Vec::new();
    let mut parser = parser_named("cursor").unwrap();
    for line in lines {
        parser.parse_line(line, &mut |event| events.push(format!("{event:?}")));
    }
    insta::assert_snapshot!(events.join("\n"), @r#"
    SessionId("cur-1")
    ToolCall { name: "shell", summary: "git commit -m x", subagent: false }
    ToolResult { name: Some("shell"), ok: true, reason: None }
    SessionId("cur-1")
    FinalResult("done")
    "#);
}
