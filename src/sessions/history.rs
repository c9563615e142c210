//! The run history: `.eden/runs/*.json` read back as summaries (only the fields a listing
//! needs, so ten thousand records list quickly), filtered, and a run found by id, prefix,
//! `last`, or one of its agent session ids.

use crate::agent::{AgentKind, Usage};
use crate::error::Error;
use crate::layout::Layout;
use crate::process::ProcessStamp;
use crate::record::{ExitReason, RunStatus, TranscriptRecord};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What `eden sessions list` shows of a run; the JSON field names are stable.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunSummary {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The agent kind of each step, in order, without repeats.
    pub(crate) agents: Vec<AgentKind>,
    pub(crate) sandbox: String,
    /// Where it ran: a pod's node, or the engine's address a container ran on (`sandbox.host`,
    /// or a remote default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<String>,
    pub(crate) branch: String,
    pub(crate) base_branch: Option<String>,
    /// `running`, `finished` or `abandoned` (a `running` record whose eden is gone).
    pub(crate) status: RunStatus,
    pub(crate) exit_reason: Option<ExitReason>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) iterations: usize,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cache_read_tokens: u64,
    pub(crate) cache_write_tokens: u64,
    /// As the agents reported it; `None` when none did.
    pub(crate) cost_usd: Option<f64>,
    pub(crate) started_at: String,
    pub(crate) duration_ms: u64,
    pub(crate) merged_into: Option<String>,
    pub(crate) preserved_branch: Option<String>,
    /// Session ids of the agents, in order, without repeats.
    pub(crate) sessions: Vec<String>,
    pub(crate) record: PathBuf,
    pub(crate) log: Option<PathBuf>,
    /// One of several attempts at the same task (`--attempts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) attempt: Option<crate::record::AttemptRecord>,
    /// What was done with it after it ended, last first.
    pub(crate) later: Option<crate::record::LaterAction>,
}

/// The parts of a run record a summary and the cost report read.
#[derive(Debug, Deserialize)]
pub(crate) struct Light {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) status: RunStatus,
    pub(crate) process: ProcessStamp,
    pub(crate) sandbox: String,
    #[serde(default)]
    pub(crate) container: Option<LightContainer>,
    pub(crate) branch: String,
    pub(crate) base_branch: Option<String>,
    #[serde(default)]
    pub(crate) steps: Vec<LightStep>,
    #[serde(default)]
    pub(crate) iterations: Vec<LightIteration>,
    pub(crate) started_at: String,
    pub(crate) duration_ms: u64,
    pub(crate) exit_reason: Option<ExitReason>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) merged_into: Option<String>,
    pub(crate) preserved_branch: Option<String>,
    pub(crate) log: Option<PathBuf>,
    pub(crate) record_path: PathBuf,
    #[serde(default)]
    pub(crate) manifest: Option<PathBuf>,
    #[serde(default)]
    pub(crate) overrides: Vec<String>,
    #[serde(default)]
    pub(crate) attempt: Option<crate::record::AttemptRecord>,
    #[serde(default)]
    pub(crate) later: Vec<crate::record::LaterRecord>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LightContainer {
    #[serde(default)]
    pub(crate) host: Option<String>,
    /// A pod's node.
    #[serde(default)]
    pub(crate) node: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LightStep {
    pub(crate) name: String,
    pub(crate) agent: AgentKind,
    pub(crate) model: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LightIteration {
    pub(crate) step: String,
    pub(crate) started_at: String,
    pub(crate) usage: Option<Usage>,
    pub(crate) session_id: Option<String>,
    #[serde(default)]
    pub(crate) transcript: Option<TranscriptRecord>,
    /// The model the agent said it used (over the step's configured one).
    #[serde(default)]
    pub(crate) model: Option<String>,
}

impl Light {
    /// The agent and model of the step an iteration belongs to.
    pub(crate) fn step_of(&self, iteration: &LightIteration) -> Option<&LightStep> {
        self.steps.iter().find(|step| step.name == iteration.step)
    }

    pub(crate) fn summary(&self) -> RunSummary {
        let mut agents = Vec::new();
        for step in &self.steps {
            if !agents.contains(&step.agent) {
                agents.push(step.agent);
            }
        }
        let mut usage = Usage::default();
        let mut cost = None;
        let mut sessions = Vec::new();
        for iteration in &self.iterations {
            if let Some(used) = &iteration.usage {
                usage.add(used);
                if let Some(c) = used.cost_usd {
                    cost = Some(cost.unwrap_or(0.0) + c);
                }
            }
            if let Some(id) = &iteration.session_id {
                if !sessions.contains(id) {
                    sessions.push(id.clone());
                }
            }
        }
        let status = self.status.observed(&self.process);
        let duration_ms = match status {
            RunStatus::Running => since(&self.started_at).map_or(self.duration_ms, |d| d.as_millis() as u64),
            _ => self.duration_ms,
        };
        RunSummary {
            id: self.id.clone(),
            name: self.name.clone(),
            agents,
            sandbox: self.sandbox.clone(),
            host: self
                .container
                .as_ref()
                .and_then(|container| container.node.clone().or_else(|| container.host.clone())),
            branch: self.branch.clone(),
            base_branch: self.base_branch.clone(),
            status,
            exit_reason: self.exit_reason,
            exit_code: self.exit_code,
            iterations: self.iterations.len(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: usage.cache_write_tokens,
            cost_usd: cost,
            started_at: self.started_at.clone(),
            duration_ms,
            merged_into: self.merged_into.clone(),
            preserved_branch: self.preserved_branch.clone(),
            sessions,
            record: self.record_path.clone(),
            log: self.log.clone(),
            attempt: self.attempt.clone(),
            later: self.later.last().map(|later| later.action),
        }
    }
}

/// The session `wanted` names in `run` (a session id or its prefix), or the run's last one
/// when `wanted` named the run; with the iteration that reported it, newest first.
pub(crate) fn session_in<'r>(run: &'r Light, wanted: &str) -> Option<(&'r str, &'r LightIteration)> {
    let reported = |it: &'r LightIteration| it.session_id.as_deref().map(|id| (id, it));
    run.iterations
        .iter()
        .rev()
        .filter_map(reported)
        .find(|(id, _)| id.starts_with(wanted))
        .or_else(|| run.iterations.iter().rev().filter_map(reported).next())
}

/// How long ago an RFC 3339 time was.
pub(crate) fn since(time: &str) -> Option<Duration> {
    let then = humantime::parse_rfc3339_weak(time.trim_end_matches('Z')).ok()?;
    SystemTime::now().duration_since(then).ok()
}

/// Every run record of the repository, newest first, and a warning for each that cannot be read.
pub(crate) fn load(layout: &Layout) -> (Vec<Light>, Vec<String>) {
    let paths: Vec<PathBuf> = std::fs::read_dir(layout.runs())
        .map(|dir| {
            dir.filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|path| path.extension().is_some_and(|e| e == "json"))
                .collect()
        })
        .unwrap_or_default();
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(8);
    let chunk = paths.len().div_ceil(threads).max(1);
    let results: Vec<Vec<Result<Light, Error>>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            paths.chunks(chunk).map(|part| scope.spawn(move || part.iter().map(|p| read_light(p)).collect())).collect();
        handles.into_iter().map(|handle| handle.join().unwrap_or_default()).collect()
    });
    let mut runs = Vec::with_capacity(paths.len());
    let mut warnings = Vec::new();
    for result in results.into_iter().flatten() {
        match result {
            Ok(light) => runs.push(light),
            Err(warning) => warnings.push(warning.message),
        }
    }
    // Ids carry the time to the second only: within a second, the start time (to the
    // millisecond) orders them.
    runs.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| b.id.cmp(&a.id)));
    (runs, warnings)
}

fn read_light(path: &Path) -> Result<Light, Error> {
    let data =
        std::fs::read(path).map_err(|err| Error::internal(format!("cannot read `{}`: {err}", path.display())))?;
    let mut light: Light = serde_json::from_slice(&data).map_err(|err| {
        Error::internal(format!("`{}` is not a run record eden can read ({err}); skipped", path.display()))
    })?;
    crate::record::check_own(path, &light.id)?;
    // Where it is, not where it says it is.
    light.record_path = path.to_path_buf();
    Ok(light)
}

/// `eden sessions list` filters.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    pub(crate) since: Option<Duration>,
    pub(crate) name: Option<String>,
    pub(crate) agent: Option<AgentKind>,
    /// A status (`running`, `finished`, `abandoned`) or an exit reason (`completed`,
    /// `agent_failed`, ...).
    pub(crate) status: Option<String>,
    pub(crate) branch: Option<String>,
}

/// The words `--status` accepts.
pub(crate) const STATUS_WORDS: [&str; 20] = [
    "running",
    "finished",
    "abandoned",
    "completed",
    "output",
    "max_iterations",
    "session_ended",
    "incomplete",
    "uncommitted_work",
    "usage",
    "agent_failed",
    "timeout",
    "hook_failed",
    "sandbox_error",
    "git_error",
    "interrupted",
    "internal",
    "budget_exceeded",
    "checks_failed",
    "protected",
];

impl Filter {
    pub(crate) fn keeps(&self, run: &RunSummary) -> bool {
        if let Some(since) = self.since {
            if crate::sessions::history::since(&run.started_at).is_none_or(|ago| ago > since) {
                return false;
            }
        }
        if self.name.as_ref().is_some_and(|name| *name != run.name) {
            return false;
        }
        if self.agent.is_some_and(|agent| !run.agents.contains(&agent)) {
            return false;
        }
        if self.branch.as_ref().is_some_and(|branch| *branch != run.branch) {
            return false;
        }
        if let Some(status) = &self.status {
            let status_word = serde_json::to_value(run.status).ok();
            let reason = run.exit_reason.map(ExitReason::as_str);
            if status_word.as_ref().and_then(|v| v.as_str()) != Some(status.as_str()) && reason != Some(status.as_str())
            {
                return false;
            }
        }
        true
    }
}

/// The run `wanted` names: `last`, a run id or an unambiguous prefix of one, or a session id
/// (or its prefix) one of its agents reported. `runs` is newest first.
pub(crate) fn find<'r>(runs: &'r [Light], wanted: &str) -> Result<&'r Light, Error> {
    if runs.is_empty() {
        return Err(Error::usage("there are no runs in this repository yet")
            .with_hint("`eden run <manifest>` records its runs in `.eden/runs/`"));
    }
    if wanted == "last" {
        return Ok(&runs[0]);
    }
    if let Some(run) = runs.iter().find(|run| run.id == wanted) {
        return Ok(run);
    }
    let by_id: Vec<&Light> = runs.iter().filter(|run| run.id.starts_with(wanted)).collect();
    let by_session: Vec<&Light> = runs
        .iter()
        .filter(|run| run.iterations.iter().any(|it| it.session_id.as_deref().is_some_and(|s| s.starts_with(wanted))))
        .collect();
    if by_id.is_empty() && !by_session.is_empty() {
        // One session continued over several runs (resumed): its newest run.
        let mut sessions: Vec<&str> = by_session
            .iter()
            .flat_map(|run| run.iterations.iter().filter_map(|it| it.session_id.as_deref()))
            .filter(|id| id.starts_with(wanted))
            .collect();
        sessions.sort_unstable();
        sessions.dedup();
        if sessions.len() == 1 {
            return Ok(by_session[0]);
        }
    }
    let candidates = if by_id.is_empty() { by_session } else { by_id };
    match candidates.as_slice() {
        [one] => Ok(one),
        [] => {
            let closest = closest(runs, wanted);
            Err(Error::usage(format!("no run or session `{wanted}`")).with_hint(match closest {
                Some(id) => format!("the closest run id is `{id}`; `eden sessions list` shows them all"),
                None => "`eden sessions list` shows the runs".into(),
            }))
        }
        many => {
            let ids: Vec<&str> = many.iter().take(10).map(|run| run.id.as_str()).collect();
            Err(Error::usage(format!("`{wanted}` matches {} runs: {}", many.len(), ids.join(", ")))
                .with_hint("give more of the run id"))
        }
    }
}

/// The run id sharing the longest prefix with `wanted` (ties: the newest).
fn closest<'r>(runs: &'r [Light], wanted: &str) -> Option<&'r str> {
    let common = |id: &str| id.chars().zip(wanted.chars()).take_while(|(a, b)| a == b).count();
    let best = runs.iter().map(|run| common(&run.id)).max()?;
    (best > 0).then(|| runs.iter().find(|run| common(&run.id) == best).map(|run| run.id.as_str())).flatten()
}
