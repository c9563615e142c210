//! Several runs at once, each a whole `eden run` process of its own (`--json-events` on a
//! pipe), at most `jobs` at a time. A process per run is the design, not a shortcut: one run's
//! blocking git call, stuck engine client or crash cannot stall or take down another, each
//! keeps its own signal handling, secrets and parent-death guarantee, and the repository lock
//! that already makes separate eden processes safe is what orders their merges (the merge
//! queue). This is a process manager, not a command: it is handed the runs' command lines and
//! a display, forwards signals, stops the rest on `fail_fast`, shows the runs, and returns how
//! each ended; `commands::batch` decides what runs and prints the result.

use crate::error::Error;
use crate::process::ProcessBuilder;
use crate::record::RunRecord;
use crate::report::{ErrorReport, Event, Failed, Logged};
use crate::ui::batch::{BatchDisplay, Row};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The variable that tells a run which invocation it belongs to: runs of one invocation number
/// their merges into each target (`merge_queue_position` in the record).
pub(crate) const BATCH_ENV: &str = "EDEN_BATCH";

/// The variable that tells a run it is one of several attempts at the same task:
/// `NUMBER/OF/GROUP` (`record::AttemptRecord`).
pub(crate) const ATTEMPT_ENV: &str = "EDEN_ATTEMPT";

/// One run of the invocation.
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) agent: String,
    /// Its `eden run` command line (the coordinator adds `--json-events`, and `--quiet` when
    /// the display shows only its own lines).
    pub(crate) command: ProcessBuilder,
    /// Where its merge queue's count is kept.
    pub(crate) layout: crate::layout::Layout,
    /// The engines it may go on (`sandbox.host`), in order; empty: its plan's own choice.
    pub(crate) hosts: Vec<String>,
    /// One of several attempts at the same task (`--attempts`): which.
    pub(crate) attempt: Option<crate::record::AttemptRecord>,
    /// `attempts_pick = "best"`: the choice is made once every attempt has ended.
    pub(crate) best: bool,
}

/// How the runs are coordinated.
pub(crate) struct Options {
    pub(crate) jobs: usize,
    /// Stop the others (as Ctrl-C would) when one fails, and start no more.
    pub(crate) fail_fast: bool,
    /// Every run's events to stdout, each with its `run_name`.
    pub(crate) json_events: bool,
    /// At most this many of the invocation's runs in flight on one host (`--jobs-per-host`).
    pub(crate) per_host: Option<usize>,
}

/// What the coordination came to: how each run ended, and the signal that stopped it all.
pub(crate) struct Coordinated {
    pub(crate) display: BatchDisplay,
    pub(crate) ended: Vec<Ended>,
    pub(crate) interrupted: Option<crate::exit::Signal>,
}

/// How a run ended, as this process saw it.
#[derive(Default)]
pub(crate) struct Ended {
    pub(crate) started: bool,
    /// The host it was placed on, when it had several to go on.
    pub(crate) host: Option<String>,
    /// Stopped by `--fail-fast` (not counted in the exit code).
    pub(crate) stopped: bool,
    pub(crate) code: Option<i32>,
    pub(crate) record: Option<RunRecord>,
    /// The error a run printed as JSON when it could not start.
    pub(crate) error: Option<ErrorReport>,
}

enum Message {
    Stdout(usize, String),
    Stderr(usize, String),
    Closed(usize),
    Signal(crate::exit::Signal),
}

/// Start the runs, `jobs` at a time, until all have ended (or a signal or `fail_fast` says to
/// start no more).
pub(crate) fn run(members: &[Member], options: &Options, display: BatchDisplay) -> Result<Coordinated, Error> {
    let (sender, receiver) = mpsc::channel();
    let signals = sender.clone();
    crate::process::deliver_signals_to(move |signal| {
        let _ = signals.send(Message::Signal(signal));
    })
    .map_err(|err| Error::internal("cannot install signal handlers").with_source(err))?;
    let batch = Batch {
        options,
        members,
        display,
        sender,
        children: BTreeMap::new(),
        ended: members.iter().map(|_| Ended::default()).collect(),
        open_streams: vec![0; members.len()],
        batch_id: crate::record::new_run_id(),
        interrupted: None,
        failed_fast: false,
    };
    let batch_id = batch.batch_id.clone();
    let coordinated = batch.drive(options.jobs, &receiver)?;
    for member in members {
        let _ = std::fs::remove_file(member.layout.batch_merges(&batch_id));
        if let Some(attempt) = &member.attempt {
            let _ = std::fs::remove_file(member.layout.attempt_claim(&attempt.group));
            let _ = std::fs::remove_file(member.layout.attempt_spend(&attempt.group, attempt.number));
        }
    }
    Ok(coordinated)
}

/// The runs while they go.
struct Batch<'a> {
    options: &'a Options,
    members: &'a [Member],
    display: BatchDisplay,
    sender: mpsc::Sender<Message>,
    children: BTreeMap<usize, (Child, Option<Instant>)>,
    ended: Vec<Ended>,
    /// stdout and stderr still open, per member.
    open_streams: Vec<u8>,
    batch_id: String,
    interrupted: Option<crate::exit::Signal>,
    failed_fast: bool,
}

/// After a run's process exits, how long its pipes may stay open (a leftover holding them).
const STREAM_GRACE: Duration = Duration::from_secs(2);

impl Batch<'_> {
    /// Start runs up to `jobs` at a time until all have ended (or a signal or `--fail-fast`
    /// says to start no more).
    fn drive(mut self, jobs: usize, receiver: &mpsc::Receiver<Message>) -> Result<Coordinated, Error> {
        let mut waiting: Vec<usize> = (0..self.members.len()).collect();
        loop {
            // In order, each run that has a place now: a free job, and a host under its limit.
            let mut index = 0;
            while index < waiting.len() && self.children.len() < jobs && !self.stopping() {
                match self.place(waiting[index]) {
                    Some(host) => {
                        self.start(waiting.remove(index), host)?;
                    }
                    None => index += 1,
                }
            }
            if self.children.is_empty() {
                break;
            }
            match receiver.recv_timeout(Duration::from_millis(100)) {
                Ok(message) => self.receive(message),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => unreachable!("this process holds a sender"),
            }
            self.reap();
            self.display.tick();
        }
        Ok(Coordinated { display: self.display, ended: self.ended, interrupted: self.interrupted })
    }

    fn stopping(&self) -> bool {
        self.interrupted.is_some() || self.failed_fast
    }

    /// Where run `index` goes now: `Some(None)` for a run with no hosts to choose from, the
    /// host with the fewest of this invocation's runs in flight (the first such in its list),
    /// or `None` when every one of its hosts is at `--jobs-per-host`.
    fn place(&self, index: usize) -> Option<Option<String>> {
        let in_flight =
            |host: &str| self.children.keys().filter(|other| self.ended[**other].host.as_deref() == Some(host)).count();
        choose_host(&self.members[index].hosts, in_flight, self.options.per_host)
    }

    fn start(&mut self, index: usize, host: Option<String>) -> Result<(), Error> {
        let member = &self.members[index];
        let mut extra = vec!["--json-events".to_owned()];
        if self.display.children_quiet() {
            extra.push("--quiet".to_owned());
        }
        if let Some(host) = &host {
            // The last word on the member's command line: this one host of its list.
            extra.extend(["--set".to_owned(), format!("sandbox.host={}", toml::Value::String(host.clone()))]);
        }
        let mut command = member.command.clone().args(extra).env(BATCH_ENV, &self.batch_id);
        if let Some(attempt) = &member.attempt {
            command = command.env(ATTEMPT_ENV, attempt.to_env());
        }
        let mut child = command.spawn_member().map_err(|err| Error::internal("cannot start eden").with_source(err))?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        read_lines(stdout, index, self.sender.clone(), Message::Stdout);
        read_lines(stderr, index, self.sender.clone(), Message::Stderr);
        self.open_streams[index] = 2;
        self.ended[index].started = true;
        self.display.started(index, host.as_deref());
        self.ended[index].host = host;
        self.children.insert(index, (child, None));
        Ok(())
    }

    fn receive(&mut self, message: Message) {
        match message {
            Message::Stdout(index, line) => {
                if line.contains("\"event\":\"run_finished\"") || line.starts_with("{\"error\"") {
                    self.keep_result(index, &line);
                }
                self.display.event_line(index, &line);
                if self.options.json_events {
                    // A key of its own: events have a `name` of their own (a tool's).
                    let name = serde_json::Value::String(self.members[index].name.clone());
                    // Of several attempts, which one's.
                    let attempt = match &self.members[index].attempt {
                        Some(attempt) => format!("\"attempt\":{},", attempt.number),
                        None => String::new(),
                    };
                    let line = match line.strip_prefix('{') {
                        Some(rest) => format!("{{\"run_name\":{name},{attempt}{rest}"),
                        None => line,
                    };
                    crate::ui::print_data(&line);
                }
            }
            Message::Stderr(index, line) => self.display.stderr_line(index, &line),
            Message::Closed(index) => self.open_streams[index] = self.open_streams[index].saturating_sub(1),
            Message::Signal(signal) => {
                self.interrupted.get_or_insert(signal);
                self.display.note(&format!("stopping {} run(s)…", self.children.len()));
                for (child, _) in self.children.values() {
                    send(child, signal);
                }
            }
        }
    }

    fn keep_result(&mut self, index: usize, line: &str) {
        if let Some(Logged { event, .. }) = Logged::parse(line) {
            if let Event::RunFinished { record } = event.into_owned() {
                self.ended[index].record = Some(record.into_owned());
            }
        } else if let Ok(failed) = serde_json::from_str::<Failed>(line) {
            self.ended[index].error = Some(failed.error);
        }
    }

    /// Collect the runs whose process exited and whose output is read.
    fn reap(&mut self) {
        let mut done = Vec::new();
        for (index, (child, exited)) in &mut self.children {
            if exited.is_none() {
                if let Ok(Some(status)) = child.try_wait() {
                    *exited = Some(Instant::now());
                    self.ended[*index].code = Some(crate::exit::Exit::from_status(status));
                }
            }
            if exited.is_some_and(|at| self.open_streams[*index] == 0 || at.elapsed() > STREAM_GRACE) {
                done.push(*index);
            }
        }
        for index in done {
            self.children.remove(&index);
            let ended = &self.ended[index];
            self.display.finished(index, &row(&self.members[index], ended));
            let chosen = ended.record.as_ref().and_then(|record| record.attempt.as_ref()).filter(|a| a.chosen);
            if let Some(attempt) = chosen.filter(|_| !self.stopping()) {
                self.failed_fast = true;
                self.display.note(&format!(
                    "attempt {} landed: stopping the other attempts (their work stays on their branches)",
                    attempt.number
                ));
                // Stopped as Ctrl-C would, unless one is finishing already: left to finish.
                for (other, (child, _)) in &self.children {
                    self.ended[*other].stopped = true;
                    send(child, crate::process::STOP_REQUEST);
                }
                continue;
            }
            let failed = ended.code != Some(0) && !ended.stopped;
            if failed && self.options.fail_fast && !self.stopping() {
                self.failed_fast = true;
                self.display
                    .note(&format!("`{}` failed: stopping the other runs (`--fail-fast`)", self.members[index].name));
                for (other, (child, _)) in &self.children {
                    self.ended[*other].stopped = true;
                    send(child, crate::exit::Signal::INT);
                }
            }
        }
    }
}

/// The placement rule: of `hosts`, the one with the fewest runs in flight (the first such in
/// the list), none over `per_host`; `Some(None)` when there are no hosts to choose from, `None`
/// when every one is full.
fn choose_host(hosts: &[String], in_flight: impl Fn(&str) -> usize, per_host: Option<usize>) -> Option<Option<String>> {
    if hosts.is_empty() {
        return Some(None);
    }
    hosts
        .iter()
        .map(|host| (in_flight(host), host))
        .filter(|(count, _)| per_host.is_none_or(|limit| *count < limit))
        .min_by_key(|(count, _)| *count)
        .map(|(_, host)| Some(host.clone()))
}

fn send(child: &Child, signal: crate::exit::Signal) {
    use nix::sys::signal::{kill, Signal};
    if let (Ok(signal), Ok(pid)) = (Signal::try_from(signal.number()), i32::try_from(child.id())) {
        let _ = kill(nix::unistd::Pid::from_raw(pid), signal);
    }
}

/// Each line of a run's stdout or stderr, to the coordinator, from a thread of its own.
fn read_lines(
    stream: impl std::io::Read + Send + 'static,
    index: usize,
    sender: mpsc::Sender<Message>,
    wrap: fn(usize, String) -> Message,
) {
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(stream);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    if sender.send(wrap(index, text.trim_end_matches(['\n', '\r']).to_owned())).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = sender.send(Message::Closed(index));
    });
}

/// A run's line in the summary table.
pub(crate) fn row(member: &Member, ended: &Ended) -> Row {
    let mut row = match &ended.record {
        Some(record) => Row::from_record(&member.name, &member.agent, record, ended.code),
        None => Row { name: member.name.clone(), agent: member.agent.clone(), code: ended.code, ..Row::default() },
    };
    // Asked to stop, it may have been finishing already: then it ended as it would have.
    let finished_anyway = ended
        .record
        .as_ref()
        .is_some_and(|record| record.exit_reason.is_some_and(|r| r != crate::record::ExitReason::Interrupted));
    row.status = match (ended.started, ended.stopped && !finished_anyway, &ended.record, ended.code) {
        (false, _, _, _) => "not started".to_owned(),
        (_, true, _, _) => "stopped".to_owned(),
        (_, _, Some(_), _) => row.status,
        (_, _, None, Some(0)) => "ok".to_owned(),
        (_, _, None, _) => ended.error.as_ref().map_or("failed", |error| error.kind.as_str()).to_owned(),
    };
    row.host = row.host.or_else(|| ended.host.clone());
    row
}

/// A run in the `--json` array: its record, or what stopped it before it had one.
pub(crate) fn json_entry(member: &Member, ended: &Ended) -> serde_json::Value {
    if let Some(record) = &ended.record {
        return serde_json::to_value(record).expect("records serialize");
    }
    let status = if !ended.started {
        "not_started"
    } else if ended.stopped {
        "stopped"
    } else {
        "failed"
    };
    let mut entry = serde_json::json!({
        "name": member.name,
        "status": status,
        "exit_code": ended.code,
        "error": ended.error,
    });
    if let Some(attempt) = &member.attempt {
        entry["attempt"] = serde_json::to_value(attempt).expect("attempts serialize");
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_goes_where_the_fewest_are_in_flight() {
        let hosts = ["h1".to_owned(), "h2".to_owned(), "h3".to_owned()];
        let counts = |h1, h2, h3| {
            move |host: &str| match host {
                "h1" => h1,
                "h2" => h2,
                _ => h3,
            }
        };
        assert_eq!(choose_host(&hosts, counts(0, 0, 0), None), Some(Some("h1".into())), "ties go to the first");
        assert_eq!(choose_host(&hosts, counts(1, 0, 0), None), Some(Some("h2".into())));
        assert_eq!(choose_host(&hosts, counts(2, 1, 2), None), Some(Some("h2".into())));
        assert_eq!(choose_host(&hosts, counts(1, 1, 1), Some(1)), None, "every host full: wait");
        assert_eq!(choose_host(&hosts, counts(0, 3, 1), Some(1)), Some(Some("h1".into())));
        assert_eq!(choose_host(&[], counts(0, 0, 0), Some(1)), Some(None), "no hosts: the plan's own");
    }
}
