//! The runs `eden mcp` starts: each an `eden run MANIFEST --json-events` of its own, started by
//! one long-lived thread (a run gets SIGTERM, and stops as for Ctrl-C with its work kept, when
//! the server goes away), its events read as they come: the run ids, the iterations (told as
//! progress), the records at the end.

use crate::error::Error;
use crate::process::ProcessBuilder;
use crate::report::{Event, Logged};
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a run may take to say its id.
const START_WITHIN: Duration = Duration::from_secs(120);

/// Starts runs from one thread that lives as long as the server.
pub(crate) struct Starter {
    jobs: Mutex<mpsc::Sender<(ProcessBuilder, mpsc::Sender<std::io::Result<std::process::Child>>)>>,
}

impl Starter {
    pub(crate) fn new() -> Starter {
        let (jobs, incoming) = mpsc::channel::<(ProcessBuilder, mpsc::Sender<std::io::Result<std::process::Child>>)>();
        std::thread::spawn(move || {
            for (builder, reply) in incoming {
                let _ = reply.send(builder.spawn_member());
            }
        });
        Starter { jobs: Mutex::new(jobs) }
    }

    /// Start `eden run MANIFEST --json-events` in `root`; its runs, once they said their ids
    /// (`all`: every attempt's, else the first's).
    pub(crate) fn start(&self, manifest: &Path, root: &Path, all: bool) -> Result<Arc<Started>, Error> {
        let exe = std::env::current_exe()
            .map_err(|err| Error::internal("cannot find eden's own executable").with_source(err))?;
        let builder =
            ProcessBuilder::new(exe).arg("run").arg(manifest).arg("--json-events").cwd(root).env("NO_COLOR", "1");
        let (reply, answer) = mpsc::channel();
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send((builder, reply))
            .map_err(|_| Error::internal("the run starter is gone"))?;
        let mut child = answer
            .recv()
            .map_err(|_| Error::internal("the run starter is gone"))?
            .map_err(|err| Error::internal("cannot start `eden run`").with_source(err))?;
        let started = Arc::new(Started::default());
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let keep = Arc::clone(&started);
        std::thread::spawn(move || keep.read(stdout, stderr, child));
        started.wait_for_ids(all)?;
        Ok(started)
    }
}

/// What a started invocation said so far.
#[derive(Default)]
pub(crate) struct Started {
    seen: Mutex<Seen>,
    changed: Condvar,
}

#[derive(Default, Clone)]
pub(crate) struct Seen {
    pub(crate) ids: Vec<String>,
    /// Iterations begun, over all its runs, and the last one's words.
    pub(crate) progress: u64,
    pub(crate) message: String,
    /// Each run's record, as its `run_finished` carried it.
    pub(crate) records: Vec<Value>,
    /// What it printed as `{"error": …}`, or the last of its stderr, when it failed before a run.
    pub(crate) error: Option<String>,
    /// Its exit code, once it exited.
    pub(crate) exited: Option<i32>,
}

impl Started {
    pub(crate) fn seen(&self) -> Seen {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn update(&self, change: impl FnOnce(&mut Seen)) {
        change(&mut self.seen.lock().unwrap_or_else(|e| e.into_inner()));
        self.changed.notify_all();
    }

    fn read(
        &self,
        stdout: Option<std::process::ChildStdout>,
        stderr: Option<std::process::ChildStderr>,
        mut child: std::process::Child,
    ) {
        let tail = Arc::new(Mutex::new(String::new()));
        let kept = Arc::clone(&tail);
        let drain = std::thread::spawn(move || {
            let Some(stderr) = stderr else { return };
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if !line.trim().is_empty() {
                    *kept.lock().unwrap_or_else(|e| e.into_inner()) = line;
                }
            }
        });
        if let Some(stdout) = stdout {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                self.take(&line);
            }
        }
        let _ = drain.join();
        let code = child.wait().ok().and_then(|status| status.code()).unwrap_or(crate::exit::Exit::Internal.code());
        let last = tail.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.update(|seen| {
            if seen.ids.is_empty() && seen.error.is_none() {
                seen.error = Some(crate::redact::plain_line(&last));
            }
            seen.exited = Some(code);
        });
    }

    fn take(&self, line: &str) {
        if let Some(logged) = Logged::parse(line) {
            let id = logged.run_id.to_string();
            match logged.event.as_ref() {
                Event::RunStarted { name, .. } => self.update(|seen| {
                    if !seen.ids.contains(&id) {
                        seen.ids.push(id.clone());
                    }
                    seen.message = crate::redact::plain_line(&format!("run `{name}` ({id}) started"));
                }),
                Event::IterationStarted { iteration, max_iterations } => self.update(|seen| {
                    seen.progress += 1;
                    seen.message = format!("run {id}: iteration {iteration}/{max_iterations}");
                }),
                Event::RunFinished { record } => {
                    let record = serde_json::to_value(record.as_ref()).unwrap_or(Value::Null);
                    self.update(|seen| seen.records.push(record));
                }
                _ => {}
            }
            return;
        }
        if let Ok(value) = serde_json::from_str::<Value>(line) {
            if let Some(error) = value.get("error") {
                let message = error.get("message").and_then(Value::as_str).unwrap_or("the run failed");
                let hint = error
                    .get("hint")
                    .and_then(Value::as_str)
                    .map(|hint| format!(" (hint: {hint})"))
                    .unwrap_or_default();
                self.update(|seen| seen.error = Some(crate::redact::plain_line(&format!("{message}{hint}"))));
            }
        }
    }

    /// Until the runs said their ids (`all`: the attempts of one invocation start together, so
    /// until half a second passes without a new one), or the invocation ended without one.
    fn wait_for_ids(&self, all: bool) -> Result<(), Error> {
        let deadline = Instant::now() + START_WITHIN;
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut known = (0, Instant::now());
        loop {
            if seen.ids.len() != known.0 {
                known = (seen.ids.len(), Instant::now());
            }
            let settled = !all || known.1.elapsed() >= Duration::from_millis(500) || seen.exited.is_some();
            if !seen.ids.is_empty() && settled {
                return Ok(());
            }
            if seen.exited.is_some() || seen.error.is_some() {
                let why = seen.error.clone().unwrap_or_else(|| "it ended without starting a run".into());
                return Err(Error::usage(format!("the run did not start: {why}")));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::internal("the run did not say its id within two minutes"));
            }
            seen = self
                .changed
                .wait_timeout(seen, left.min(Duration::from_millis(200)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Until the invocation exits, or `cancelled`; `progress` hears each change of its progress.
    pub(crate) fn wait(&self, cancelled: &dyn Fn() -> bool, progress: &mut dyn FnMut(&Seen)) -> Option<Seen> {
        let mut told = 0;
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if seen.progress != told {
                told = seen.progress;
                progress(&seen);
            }
            if seen.exited.is_some() {
                return Some(seen.clone());
            }
            if cancelled() {
                return None;
            }
            seen = self.changed.wait_timeout(seen, Duration::from_millis(200)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// A record made short for a parent agent: what it asks after a run.
pub(crate) fn outcome(record: &Value) -> Value {
    let commits = record["commits"].as_array().map_or(0, Vec::len);
    let error = record["error"]["message"].as_str().map(crate::redact::plain_line);
    json!({
        "id": record["id"],
        "name": record["name"],
        "status": record["status"],
        "exit_code": record["exit_code"],
        "exit_reason": record["exit_reason"],
        "branch": record["branch"],
        "merged_into": record["merged_into"],
        "preserved_branch": record["preserved_branch"],
        "commits": commits,
        "usage": record["usage"],
        "duration_ms": record["duration_ms"],
        "error": error,
        "attempt": record["attempt"],
    })
}
