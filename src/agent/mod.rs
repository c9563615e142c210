//! Agents: how to start one for an iteration (`Agent`) and how to read what it prints
//! (`Parser` into `StreamEvent`s). The orchestrator knows only these traits.

mod cli;
mod scanner;
mod simulated;

pub use cli::CliAgent;
pub use scanner::CompletionScanner;
pub use simulated::{run_simulated_agent, SimulatedAgent, SIMULATED_ENV, SIMULATED_SUBCOMMAND};

use crate::error::Error;
use crate::manifest::plan::AgentPlan;
use crate::process::ProcessBuilder;
use std::path::Path;

/// What an agent printed, in eden's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// Text the agent wrote. `continues` is true when it is a fragment that the next text event
    /// continues (streamed deltas), false for a complete line or block.
    Text { text: &'a str, continues: bool },
}

pub trait Parser: Send {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>));
}

/// Every line is text: the parser for any line-streaming CLI.
#[derive(Default)]
pub struct LinesParser;

impl Parser for LinesParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        let text = decode(line);
        emit(StreamEvent::Text { text: &text, continues: false });
    }
}

/// Bytes to text, replacing invalid UTF-8. `str::from_utf8` validates a word at a time, far
/// faster than `from_utf8_lossy`'s chunk iterator, so try it first: agents' output is almost
/// always valid.
pub fn decode(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Per-iteration facts an agent needs to build its command.
pub struct Invocation<'a> {
    pub prompt: &'a str,
    pub worktree: &'a Path,
}

pub trait Agent {
    fn kind(&self) -> &'static str;
    fn command(&self, invocation: &Invocation<'_>) -> Result<ProcessBuilder, Error>;
    fn parser(&self) -> Box<dyn Parser>;
}

pub fn from_plan(plan: &AgentPlan) -> Result<Box<dyn Agent>, Error> {
    Ok(match plan {
        AgentPlan::Simulated { lines, line_delay, exit_code } => {
            Box::new(SimulatedAgent::new(lines.clone(), line_delay.map(|d| d.0), *exit_code)?)
        }
        AgentPlan::Cli(cli) => Box::new(CliAgent::new(cli.clone())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_text_even_when_not_utf8() {
        let mut texts = Vec::new();
        let mut parser = LinesParser;
        for line in [&b"plain"[..], b"caf\xc3\xa9", b"bad \xff byte"] {
            parser.parse_line(line, &mut |event| {
                let StreamEvent::Text { text, .. } = event;
                texts.push(text.to_owned());
            });
        }
        assert_eq!(texts, ["plain", "café", "bad \u{fffd} byte"]);
    }
}
