//! `kind = "simulated"`: an agent that needs nothing installed. eden starts itself as the agent
//! process (a hidden subcommand), so a simulated run goes through exactly the same process
//! group, streaming and watchdog path as a real one.

use super::{Agent, Invocation, LinesParser, Parser};
use crate::error::Error;
use crate::process::{ProcessBuilder, Stdin};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::time::Duration;

/// The hidden subcommand, and the variable carrying its script.
pub(crate) const SIMULATED_SUBCOMMAND: &str = "__simulated-agent";
pub(crate) const SIMULATED_ENV: &str = "EDEN_SIMULATED_AGENT";

#[derive(Serialize, Deserialize)]
struct Script {
    lines: Vec<String>,
    line_delay_ms: u64,
    exit_code: i32,
}

pub(crate) struct SimulatedAgent {
    script: String,
    executable: std::path::PathBuf,
}

impl SimulatedAgent {
    pub(crate) fn new(lines: Vec<String>, line_delay: Option<Duration>, exit_code: i32) -> Result<Self, Error> {
        let executable = std::env::current_exe().map_err(|err| {
            Error::agent(format!("cannot find eden's own executable to run the simulated agent: {err}"))
        })?;
        let script = Script { lines, line_delay_ms: line_delay.map_or(0, |d| d.as_millis() as u64), exit_code };
        Ok(SimulatedAgent { script: serde_json::to_string(&script).expect("serializable"), executable })
    }
}

impl Agent for SimulatedAgent {
    fn command(&self, invocation: &Invocation<'_>) -> Result<ProcessBuilder, Error> {
        Ok(ProcessBuilder::new(&self.executable)
            .arg(SIMULATED_SUBCOMMAND)
            .cwd(invocation.worktree)
            .env(SIMULATED_ENV, &self.script)
            .stdin(Stdin::Bytes(invocation.prompt.as_bytes().to_vec())))
    }

    fn parser(&self) -> Box<dyn Parser> {
        Box::new(LinesParser)
    }
}

/// The body of the hidden subcommand: print the script's lines and exit with its code.
pub(crate) fn run_simulated_agent() -> i32 {
    let Some(script) = std::env::var(SIMULATED_ENV).ok().and_then(|s| serde_json::from_str::<Script>(&s).ok()) else {
        return 2;
    };
    // Read the prompt like a real agent would, so the writer never sees a closed pipe.
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    let mut stdout = std::io::stdout().lock();
    for line in &script.lines {
        if script.line_delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(script.line_delay_ms));
        }
        if writeln!(stdout, "{line}").and_then(|()| stdout.flush()).is_err() {
            return 1;
        }
    }
    script.exit_code
}
