//! What `eden top` knows, read from each repository's `.eden/`: every run's record, read again
//! only when its file changed (its size or time), and the logs of live runs (and of the run
//! opened), read on from where the last read stopped. Nothing is read whole twice. Records and
//! logs are hostile input: a file that does not parse is passed over, and every text from them
//! is drawn through `plain_line`.

use crate::record::{LaterAction, RunRecord, RunStatus};
use crate::report::{Event, Logged};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The most runs of a repository kept (the newest).
const MAX_RUNS: usize = 200;
/// The most moments and output lines kept of a run.
const MAX_MOMENTS: usize = 500;
const MAX_OUTPUT: usize = 2000;
/// The largest record read.
const MAX_RECORD: u64 = 16 << 20;
/// The most bytes of a log read in one refresh (the rest on the next ones).
const MAX_READ: u64 = 4 << 20;

/// Every watched repository's runs.
pub(crate) struct Board {
    pub(crate) repos: Vec<Repo>,
}

/// One repository: its root, and its runs by id.
pub(crate) struct Repo {
    pub(crate) root: PathBuf,
    runs_dir: PathBuf,
    pub(crate) runs: BTreeMap<String, Tracked>,
}

/// A run as last read.
pub(crate) struct Tracked {
    stamp: (SystemTime, u64),
    pub(crate) record: RunRecord,
    /// Its eden is alive and the record says `running`.
    pub(crate) live: bool,
    pub(crate) log: LogTail,
}

/// What a run's log said so far.
#[derive(Default)]
pub(crate) struct LogTail {
    offset: u64,
    pending: Vec<u8>,
    /// The agent's last line of text.
    pub(crate) last_line: Option<String>,
    pub(crate) moments: VecDeque<Moment>,
    pub(crate) output: VecDeque<String>,
    /// The agent, as the run's start says it (the record names it once its step begins).
    pub(crate) agent: Option<crate::agent::AgentKind>,
    /// The iteration under way, and of how many, as the log says (the record lags behind).
    pub(crate) iteration: Option<(u32, u32)>,
    /// Tokens and cost of the iterations so far (the finished ones' and the current one's).
    pub(crate) tokens: u64,
    pub(crate) cost_usd: Option<f64>,
    current: (u64, Option<f64>),
}

/// One thing that happened in a run, for its timeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Moment {
    /// `HH:MM:SS`.
    pub(crate) at: String,
    pub(crate) what: &'static str,
    pub(crate) text: String,
}

impl Board {
    pub(crate) fn new(layouts: &[crate::layout::Layout]) -> Board {
        let repos = layouts
            .iter()
            .map(|layout| Repo { runs_dir: layout.runs(), root: layout.root.clone(), runs: BTreeMap::new() })
            .collect();
        Board { repos }
    }

    /// Read what changed; `open` is the run whose log is read though it is not live. Whether
    /// anything did.
    pub(crate) fn refresh(&mut self, open: Option<&str>) -> bool {
        let mut changed = false;
        for repo in &mut self.repos {
            changed |= repo.refresh(open);
        }
        changed
    }

    /// Every run, newest first.
    pub(crate) fn runs(&self) -> impl Iterator<Item = &Tracked> {
        let mut all: Vec<&Tracked> = self.repos.iter().flat_map(|repo| repo.runs.values()).collect();
        all.sort_by(|a, b| b.record.started_at.cmp(&a.record.started_at).then(b.record.id.cmp(&a.record.id)));
        all.into_iter()
    }

    pub(crate) fn find(&self, id: &str) -> Option<&Tracked> {
        self.repos.iter().find_map(|repo| repo.runs.get(id))
    }

    /// The repository a run is in.
    pub(crate) fn root_of(&self, id: &str) -> Option<&Path> {
        self.repos.iter().find(|repo| repo.runs.contains_key(id)).map(|repo| repo.root.as_path())
    }
}

impl Repo {
    fn refresh(&mut self, open: Option<&str>) -> bool {
        let mut names: Vec<String> = match std::fs::read_dir(&self.runs_dir) {
            Ok(entries) => entries
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter_map(|name| name.strip_suffix(".json").map(str::to_owned))
                .filter(|id| crate::record::is_run_id(id))
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort_unstable_by(|a, b| b.cmp(a));
        names.truncate(MAX_RUNS);
        let before = self.runs.len();
        self.runs.retain(|id, _| names.binary_search_by(|name| id.cmp(name)).is_ok());
        let mut changed = self.runs.len() != before;
        for id in names {
            let path = self.runs_dir.join(format!("{id}.json"));
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if !meta.is_file() {
                continue;
            }
            let stamp = (meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len());
            let known = self.runs.get(&id).map(|tracked| tracked.stamp);
            if known != Some(stamp) {
                // A record is small (one larger than `MAX_RECORD` is not eden's); one that does not
                // parse (half written, or not eden's) is passed over until it changes again.
                let Some(record) = read_record(&path) else { continue };
                if record.id != id {
                    continue;
                }
                let tracked = self.runs.entry(id.clone()).or_insert_with(|| Tracked {
                    stamp,
                    record: record.clone(),
                    live: false,
                    log: LogTail::default(),
                });
                tracked.stamp = stamp;
                tracked.record = record;
                changed = true;
            }
            let tracked = self.runs.get_mut(&id).expect("tracked above");
            let live = tracked.record.status.observed(&tracked.record.process) == RunStatus::Running;
            changed |= live != tracked.live;
            tracked.live = live;
            if live || open == Some(id.as_str()) {
                if let Some(log) = tracked.record.log.clone() {
                    changed |= tracked.log.read(&log, &id);
                }
            }
        }
        changed
    }
}

impl Tracked {
    /// How the run ended, in a word, or its phase while it goes.
    pub(crate) fn state(&self) -> String {
        let record = &self.record;
        if self.live {
            return format!("{:?}", record.phase).to_lowercase();
        }
        if let Some(later) = record.later.last() {
            return match later.action {
                LaterAction::Merged => "merged later".into(),
                LaterAction::Discarded => "discarded".into(),
            };
        }
        match record.status {
            RunStatus::Running | RunStatus::Abandoned => "abandoned".into(),
            RunStatus::Finished if record.merged_into.is_some() => "merged".into(),
            RunStatus::Finished if record.exit_code == Some(0) && record.preserved_branch.is_some() => "kept".into(),
            RunStatus::Finished if record.exit_code == Some(0) => "done".into(),
            RunStatus::Finished if record.preserved_branch.is_some() && record.failed_for_review() => "kept".into(),
            RunStatus::Finished => "failed".into(),
        }
    }

    /// Is its work waiting for a person (kept on a branch, never merged or discarded)?
    pub(crate) fn kept(&self) -> bool {
        !self.live
            && self.record.merged_into.is_none()
            && self.record.preserved_branch.is_some()
            && self.record.later.is_empty()
    }

    /// Tokens so far: the log's when it was read, else the record's.
    pub(crate) fn tokens(&self) -> u64 {
        match (self.log.tokens, &self.record.usage) {
            (0, Some(usage)) => {
                usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
            }
            (tokens, _) => tokens,
        }
    }

    pub(crate) fn cost(&self) -> Option<f64> {
        self.log.cost_usd.or_else(|| self.record.usage.as_ref().and_then(|usage| usage.cost_usd))
    }

    /// Its (first) agent.
    pub(crate) fn agent(&self) -> &'static str {
        self.record.steps.first().map(|step| step.agent).or(self.log.agent).map_or("?", |agent| agent.as_str())
    }

    /// How long it has run (live), or ran.
    pub(crate) fn elapsed(&self, now: SystemTime) -> std::time::Duration {
        if !self.live {
            return std::time::Duration::from_millis(self.record.duration_ms);
        }
        humantime::parse_rfc3339_weak(self.record.started_at.trim_end_matches('Z'))
            .ok()
            .and_then(|started| now.duration_since(started).ok())
            .unwrap_or_default()
    }

    /// The iteration under way (or the last), of how many.
    pub(crate) fn iteration(&self) -> (u32, u32) {
        let done = self.record.iterations.last().map_or(0, |it| it.iteration);
        match self.log.iteration {
            Some((now, of)) if now >= done => (now, of),
            _ => (done, self.record.max_iterations),
        }
    }
}

/// A record file, read whole when it is a regular file of at most `MAX_RECORD` bytes.
fn read_record(path: &Path) -> Option<RunRecord> {
    use std::io::Read;
    let mut bytes = Vec::new();
    crate::safe_fs::open_regular(path)?.take(MAX_RECORD + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= MAX_RECORD).then(|| serde_json::from_slice(&bytes).ok()).flatten()
}

impl LogTail {
    /// Read what was added to `path` since the last read; whether anything was.
    fn read(&mut self, path: &Path, run_id: &str) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let Some(mut file) = crate::safe_fs::open_regular(path) else { return false };
        let Ok(len) = file.metadata().map(|meta| meta.len()) else { return false };
        if len < self.offset {
            // Rewritten from the start: read it again.
            *self = LogTail::default();
        }
        if len == self.offset || file.seek(SeekFrom::Start(self.offset)).is_err() {
            return false;
        }
        let mut chunk = Vec::new();
        let Ok(read) = file.take(MAX_READ).read_to_end(&mut chunk) else { return false };
        self.offset += read as u64;
        self.pending.extend_from_slice(&chunk);
        // A line longer than a read is not eden's: dropped, not kept growing.
        if self.pending.len() as u64 > MAX_READ && memchr::memchr(b'\n', &self.pending).is_none() {
            self.pending.clear();
        }
        let mut lines = Vec::new();
        while let Some(end) = memchr::memchr(b'\n', &self.pending) {
            lines.push(self.pending.drain(..=end).collect::<Vec<u8>>());
        }
        for line in lines {
            let Some(logged) = Logged::parse(String::from_utf8_lossy(&line).trim_end()) else { continue };
            if logged.run_id == run_id {
                self.take(&logged);
            }
        }
        true
    }

    fn take(&mut self, logged: &Logged<'_>) {
        let at = logged.ts.get(11..19).unwrap_or("").to_owned();
        let mut moment = |what: &'static str, text: String| {
            if self.moments.len() == MAX_MOMENTS {
                self.moments.pop_front();
            }
            self.moments.push_back(Moment { at: at.clone(), what, text: crate::ui::plain_line(&text) });
        };
        match logged.event.as_ref() {
            Event::RunStarted { agent, .. } => self.agent = Some(*agent),
            Event::IterationStarted { iteration, max_iterations } => {
                moment("iteration", format!("{iteration}/{max_iterations} begins"));
                self.iteration = Some((*iteration, *max_iterations));
                self.current = (0, None);
            }
            Event::IterationFinished { iteration, outcome, duration_ms, .. } => {
                let took = crate::values::format_duration(std::time::Duration::from_millis(*duration_ms));
                moment("iteration", format!("{iteration} ended: {} ({took})", outcome.as_str()));
            }
            Event::StepStarted { step, index, total, agent } => {
                moment("step", format!("{step} ({}/{total}, {})", index + 1, agent.as_str()))
            }
            Event::ToolCall { name, summary, .. } => moment("tool", format!("{name} {summary}")),
            Event::ToolFailed { name, reason, .. } => {
                moment("tool failed", format!("{} {}", name.as_deref().unwrap_or(""), reason.as_deref().unwrap_or("")))
            }
            Event::ProviderRequest { method, host, path, status, duration_ms, .. } => moment(
                "request",
                format!("{method} {host}{path} {} {duration_ms} ms", status.map_or("…".into(), |s| s.to_string())),
            ),
            Event::CheckFinished { name, outcome, .. } => moment("check", format!("{name}: {}", outcome.as_str())),
            Event::HookFinished { phase, command, outcome, .. } => {
                moment("hook", format!("{} `{command}`: {}", phase.as_str(), outcome.as_str()))
            }
            Event::Commit { sha, subject, .. } => moment("commit", format!("{} {subject}", &sha[..sha.len().min(10)])),
            Event::Merged { message, .. } => moment("merged", message.to_string()),
            Event::Pushed { remote, branch, pushed, .. } => {
                moment("push", format!("{branch} to {remote}: {}", if *pushed { "pushed" } else { "not pushed" }))
            }
            Event::UsageLimit { until, .. } => moment("usage limit", format!("waiting until {until}")),
            Event::CompletionSignal { signal, .. } => moment("signal", signal.to_string()),
            Event::AgentError { message, .. } => moment("agent error", message.to_string()),
            Event::Warning { message } => moment("warning", message.to_string()),
            Event::Info { message } => moment("info", message.to_string()),
            Event::SandboxStarted { message, .. } => moment("sandbox", message.to_string()),
            Event::Prompt { iteration, text } if *iteration > 1 => {
                moment("prompt", text.lines().next().unwrap_or("").to_owned())
            }
            Event::AgentText { text, .. } => {
                for line in text.lines().filter(|line| !line.trim().is_empty()) {
                    self.push_output(line);
                    self.last_line = Some(crate::ui::plain_line(line));
                }
            }
            Event::AgentStderr { text, .. } => {
                text.lines().for_each(|line| self.push_output(&format!("stderr: {line}")))
            }
            Event::HookOutput { text, .. } => text.lines().for_each(|line| self.push_output(&format!("hook: {line}"))),
            Event::Usage { usage, .. } => {
                let tokens =
                    usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
                let (before_tokens, before_cost) = self.current;
                self.tokens = self.tokens - before_tokens + tokens;
                if let Some(cost) = usage.cost_usd {
                    self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) - before_cost.unwrap_or(0.0) + cost);
                }
                self.current = (tokens, usage.cost_usd);
            }
            _ => {}
        }
    }

    fn push_output(&mut self, line: &str) {
        if self.output.len() == MAX_OUTPUT {
            self.output.pop_front();
        }
        self.output.push_back(crate::ui::plain_line(line));
    }
}
