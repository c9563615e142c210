//! The agent's transcript of a session, copied into `.eden/sessions/<run-id>/` after each
//! invocation (found in the agent's store, or exported by its own CLI), and the environment
//! the agent ran with, which says where that store is.

use super::context::Shared;
use crate::agent::transcripts::{self, Found, Located};
use crate::error::Error;
use crate::manifest::plan::StepPlan;
use crate::process::ProcessBuilder;
use crate::record::TranscriptRecord;
use crate::report::{Event, RunEvents};
use crate::sessions::capture;
use crate::values::format_duration;
use std::path::Path;
use std::time::Duration;

/// Copy the agent's transcript of `session_id` into `.eden/sessions/<run-id>/`. One that
/// cannot be found or read is a warning, never a failed run.
pub(super) async fn capture(
    shared: &Shared<'_>,
    step: &StepPlan,
    iteration: u32,
    session_id: &str,
    cwd: &Path,
    env: &AgentEnv,
    events: &mut RunEvents,
) -> (Option<TranscriptRecord>, Option<String>) {
    let agent = &step.agent;
    let kind = agent.transcripts_as();
    let dir = shared.workspace.pre.layout().sessions().join(shared.run_id);
    let stem = capture::stem(&step.name, iteration, session_id);
    let lookup = |key: &str| env.get(key);
    if let Err(err) = shared.sandbox.bring_state_back() {
        let message = format!("cannot copy the agent's state back from the sandbox: {}", err.message);
        events.report(&Event::Warning { message: message.as_str().into() });
        return (None, Some(message));
    }
    let kept = match transcripts::locate(kind, session_id, cwd, &lookup) {
        Ok(Located::Nothing) => return (None, None),
        Ok(Located::File(Found { main, subagents })) => {
            let confined = shared.workspace.pre.layout().agent_state(shared.run_id);
            capture::keep_file(&main, &subagents, &dir, &stem, &confined)
                .map_err(|err| Error::internal(format!("cannot copy the transcript `{}`: {err}", main.display())))
        }
        Ok(Located::Export(args)) => export(shared, step, args, session_id, env).await.and_then(|(text, source)| {
            capture::keep_export(&text, &dir, &stem, source)
                .map_err(|err| Error::internal(format!("cannot write the transcript: {err}")))
        }),
        Err(missing) => {
            Err(Error::internal(format!("no transcript of session `{session_id}` found at {}", missing.tried)))
        }
    };
    match kept {
        Ok(record) => {
            events.report(&Event::Transcript { iteration, path: record.path.as_path().into(), bytes: record.bytes });
            (Some(record), None)
        }
        Err(error) => {
            events.report(&Event::Warning { message: error.message.as_str().into() });
            (None, Some(error.message))
        }
    }
}

/// The transcript only the agent's own CLI can give (opencode keeps sessions in SQLite):
/// `<binary> <args> <session id>`, run where the agent ran, with the agent's environment; what
/// it prints from its first `{` on.
async fn export(
    shared: &Shared<'_>,
    step: &StepPlan,
    args: &[&str],
    session_id: &str,
    env: &AgentEnv,
) -> Result<(Vec<u8>, String), Error> {
    let usual = step.agent.kind().spec().binary.unwrap_or_default();
    let binary = step.agent.binary().map_or_else(|| usual.into(), Path::to_path_buf);
    let mut command = ProcessBuilder::new(&binary).args(args).arg(session_id).cwd(&shared.workspace.pre.worktree);
    for (key, value) in &env.set {
        command = command.env(key, value);
    }
    let source = format!("{} {} {session_id}", binary.display(), args.join(" "));
    let prepared = shared.sandbox.prepare(command)?;
    let output = tokio::time::timeout(EXPORT_TIMEOUT, prepared.command.output_async())
        .await
        .map_err(|_| Error::agent(format!("`{source}` did not finish in {}", format_duration(EXPORT_TIMEOUT))))?
        .map_err(|err| Error::agent(format!("cannot run `{source}`: {err}")))?;
    match (output.status.success(), output.stdout.find('{')) {
        (true, Some(start)) => Ok((output.stdout.as_bytes()[start..].to_vec(), source)),
        _ => Err(Error::agent(format!("`{source}` failed: {}", output.stderr.lines().last().unwrap_or("no output")))),
    }
}

/// How long `opencode export` may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment an agent runs with: eden's, with the command's own settings on top.
pub(super) struct AgentEnv {
    set: Vec<(String, String)>,
    removed: Vec<String>,
}

impl AgentEnv {
    pub(super) fn of(command: &ProcessBuilder) -> AgentEnv {
        let mut env = AgentEnv { set: Vec::new(), removed: Vec::new() };
        for (key, value) in command.get_env() {
            let key = key.to_string_lossy().into_owned();
            match value {
                Some(value) => env.set.push((key, value.to_string_lossy().into_owned())),
                None => env.removed.push(key),
            }
        }
        env
    }

    fn get(&self, key: &str) -> Option<String> {
        if let Some((_, value)) = self.set.iter().rev().find(|(k, _)| k == key) {
            return Some(value.clone());
        }
        if self.removed.iter().any(|k| k == key) {
            return None;
        }
        std::env::var(key).ok()
    }
}
