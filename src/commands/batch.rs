//! `eden run A.toml B.toml … [--jobs N] [--fail-fast] [--matrix KEY=V1,V2]`: several runs at
//! once.
//!
//! Every manifest (times every `--matrix` combination) is loaded and checked here first — plan,
//! repository, branch, engine and image — and nothing starts unless all of them pass. Then each
//! run is a whole `eden run` process of its own (`--json-events` on a pipe), at most `--jobs` at
//! a time. A process per run is the design, not a shortcut: one run's blocking git call, stuck
//! engine client or crash cannot stall or take down another, each keeps its own signal
//! handling, secrets and parent-death guarantee, and the repository lock that already makes
//! separate eden processes safe is what orders their merges (the merge queue). This process
//! only coordinates: it forwards signals, stops the rest on `--fail-fast`, shows the runs, and
//! ends with the table, the JSON and the most severe exit code.

use crate::cli::RunArgs;
use crate::error::Error;
use crate::process::ProcessBuilder;
use crate::record::RunRecord;
use crate::ui::batch::{BatchDisplay, Row};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `--jobs` when not given: every run at once, up to this many.
const DEFAULT_JOBS: usize = 8;

/// The variable that tells a run which invocation it belongs to: runs of one invocation number
/// their merges into each target (`merge_queue_position` in the record).
pub const BATCH_ENV: &str = "EDEN_BATCH";

/// One run of the invocation: a manifest (or the flags alone) and its matrix values.
struct Member {
    manifest: Option<PathBuf>,
    /// `KEY=VALUE` for each `--matrix` key.
    matrix: Vec<String>,
    name: String,
    agent: String,
    /// Where it came from, for errors: `a.toml`, `a.toml with agent.kind=codex`.
    source: String,
    /// Where its merge queue's count is kept.
    layout: crate::layout::Layout,
}

/// How a run ended, as this process saw it.
#[derive(Default)]
struct Ended {
    started: bool,
    /// Stopped by `--fail-fast` (not counted in the exit code).
    stopped: bool,
    code: Option<i32>,
    record: Option<RunRecord>,
    /// The error a run printed as JSON when it could not start.
    error: Option<serde_json::Value>,
}

enum Message {
    Stdout(usize, String),
    Stderr(usize, String),
    Closed(usize),
    Signal(i32),
}

pub fn run(args: RunArgs, printed: &mut bool) -> Result<i32, Error> {
    let current_dir = crate::commands::current_dir()?;
    let members = members(&args, &current_dir)?;
    if args.dry_run {
        return dry_run(&args, &members, printed);
    }
    let jobs = args.jobs.map_or(members.len().min(DEFAULT_JOBS), |jobs| jobs as usize).max(1);
    let display = BatchDisplay::new(crate::ui::Display::detect(args.quiet), &members_rows(&members));
    let (sender, receiver) = mpsc::channel();
    let signals = sender.clone();
    crate::process::deliver_signals_to(move |signal| {
        let _ = signals.send(Message::Signal(signal));
    })
    .map_err(|err| Error::internal("cannot install signal handlers").with_source(err))?;
    let batch = Batch {
        args: &args,
        members: &members,
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
    let (mut display, ended, interrupted) = batch.drive(jobs, &receiver)?;
    for member in &members {
        let _ = std::fs::remove_file(member.layout.batch_merges(&batch_id));
    }

    let rows: Vec<Row> = members.iter().zip(&ended).map(|(member, ended)| row(member, ended)).collect();
    display.finish(&rows);
    if args.json {
        let array: Vec<serde_json::Value> =
            members.iter().zip(&ended).map(|(member, ended)| json_entry(member, ended)).collect();
        crate::ui::print_data(&serde_json::to_string_pretty(&array).expect("records serialize"));
    }
    *printed = args.json || args.json_events;
    if let Some(signal) = interrupted {
        return Ok(128 + signal);
    }
    let codes = ended.iter().filter(|ended| ended.started && !ended.stopped).filter_map(|ended| ended.code);
    Ok(codes.max_by_key(|code| severity(*code)).unwrap_or(0))
}

/// The order in which exit codes outrank each other when several runs fail (documented in the
/// README): interrupted > internal > usage > sandbox > git > hook > timeout > budget > agent >
/// incomplete > success.
pub fn severity(code: i32) -> u8 {
    match code {
        0 => 0,
        1 => 1,
        8 => 3,
        4 => 4,
        5 => 5,
        7 => 6,
        6 => 7,
        2 => 8,
        70 => 9,
        code if code > 128 => 10,
        // An agent's failure, or an agent's own exit code.
        _ => 2,
    }
}

/// The runs the arguments name, loaded and checked; any problem is an error before anything
/// starts, every problem found at once.
fn members(args: &RunArgs, current_dir: &std::path::Path) -> Result<Vec<Member>, Error> {
    let matrix = matrix(&args.matrix)?;
    let files: Vec<Option<PathBuf>> = match args.manifests.is_empty() {
        true => vec![None],
        false => args.manifests.iter().cloned().map(Some).collect(),
    };
    let mut members = Vec::new();
    let mut errors = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut branches: BTreeMap<String, String> = BTreeMap::new();
    for file in &files {
        for combination in &matrix {
            let shown = file.as_ref().map_or("the flags".to_owned(), |file| file.display().to_string());
            let source = match combination.is_empty() {
                true => shown,
                false => format!("{shown} with {}", combination.join(", ")),
            };
            let loaded =
                super::settings::load(args, file.as_deref(), combination, false, current_dir).and_then(|mut loaded| {
                    if !combination.is_empty() {
                        // The value goes into the name (and so the branch): runs stay apart.
                        let values: Vec<&str> =
                            combination.iter().filter_map(|pair| pair.split_once('=')).map(|(_, v)| v).collect();
                        let name =
                            format!("{}-{}", loaded.plan.name, crate::manifest::plan::name_from(&values.join("-")));
                        let mut sets = combination.clone();
                        sets.push(format!("name={}", toml::Value::String(name)));
                        loaded = super::settings::load(args, file.as_deref(), &sets, false, current_dir)?;
                    }
                    Ok(loaded)
                });
            let loaded = match loaded {
                Ok(loaded) => loaded,
                Err(error) => {
                    errors.push(error);
                    continue;
                }
            };
            for note in &loaded.notes {
                crate::ui::print_note(&format!("warning: {source}: {note}"));
            }
            let plan = &loaded.plan;
            let checked = crate::orchestrator::workspace::preflight(
                plan,
                &loaded.repo,
                "RUN_ID",
                crate::orchestrator::workspace::Use::Run,
            )
            .and_then(|pre| {
                if let crate::manifest::plan::SandboxPlan::Container(container) = &plan.sandbox {
                    crate::sandbox::container::preflight(container.engine, &container.image)?;
                }
                Ok(pre)
            });
            let pre = match checked {
                Ok(pre) => pre,
                Err(mut error) => {
                    error.message = format!("{source}: {}", error.message);
                    errors.push(error);
                    continue;
                }
            };
            if let Some(other) = names.insert(plan.name.clone(), source.clone()) {
                errors.push(
                    Error::usage(format!("two runs are named `{}`: {other} and {source}", plan.name)).with_hint(
                        "give each manifest its own `name` (or use `--matrix`, which adds the value to the name)",
                    ),
                );
            }
            if let Some(other) = branches.insert(pre.branch.clone(), source.clone()) {
                errors.push(
                    Error::usage(format!("two runs would work on branch `{}` at once: {other} and {source}", pre.branch))
                        .with_hint("runs of strategy `head` share your checkout, and `named` runs their branch: give each its own branch, or run them one after the other"),
                );
            }
            crate::redact::register(plan.secrets.iter().map(|secret| secret.0.clone()));
            members.push(Member {
                manifest: file.clone(),
                matrix: combination.clone(),
                name: plan.name.clone(),
                agent: plan.steps[0].agent.kind().as_str().to_owned(),
                source,
                layout: pre.layout(),
            });
        }
    }
    let mut errors = errors.into_iter();
    match errors.next() {
        Some(mut first) => {
            first.also.extend(errors);
            Err(first)
        }
        None => Ok(members),
    }
}

/// `--matrix KEY=V1,V2` flags as every combination of `KEY=VALUE` `--set`s (one empty
/// combination without `--matrix`).
fn matrix(flags: &[String]) -> Result<Vec<Vec<String>>, Error> {
    let mut combinations = vec![Vec::new()];
    for flag in flags {
        let bad = || {
            Error::usage(format!("`--matrix {flag}` is not `KEY=V1,V2,...`"))
                .with_hint("e.g. `--matrix agent.kind=claude-code,codex,opencode`")
        };
        let (key, values) = flag.split_once('=').ok_or_else(bad)?;
        let values: Vec<&str> = values.split(',').map(str::trim).collect();
        if key.trim().is_empty() || values.iter().any(|value| value.is_empty()) {
            return Err(bad());
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = values.iter().find(|value| !seen.insert(**value)) {
            return Err(
                Error::usage(format!("`--matrix {flag}` gives `{twice}` twice")).with_hint("list each value once")
            );
        }
        combinations = combinations
            .into_iter()
            .flat_map(|combination| {
                values.iter().map(move |value| {
                    let mut next = combination.clone();
                    next.push(format!("{}={value}", key.trim()));
                    next
                })
            })
            .collect();
    }
    Ok(combinations)
}

/// The `eden run` command line of one member: the invocation's flags, its manifest and matrix
/// values. Values stay as given (relative paths resolve the same: same current directory).
fn member_command(args: &RunArgs, member: &Member, extra: &[&str]) -> Result<ProcessBuilder, Error> {
    let eden =
        std::env::current_exe().map_err(|err| Error::internal("cannot find eden's own executable").with_source(err))?;
    let mut command = ProcessBuilder::new(eden).arg("run");
    if let Some(manifest) = &member.manifest {
        command = command.arg(manifest);
    }
    let flags: [(&str, &Option<String>); 11] = [
        ("--agent", &args.agent),
        ("--binary", &args.binary),
        ("--model", &args.model),
        ("--prompt", &args.prompt),
        ("--prompt-file", &args.prompt_file),
        ("--name", &args.name),
        ("--sandbox", &args.sandbox),
        ("--strategy", &args.strategy),
        ("--branch", &args.branch),
        ("--base", &args.base),
        ("--max-iterations", &args.max_iterations.map(|n| n.to_string())),
    ];
    for (flag, value) in flags {
        command = command.option(flag, value.as_deref());
    }
    if let Some(repo) = &args.repo {
        command = command.arg("--repo").arg(repo);
    }
    for pair in &args.prompt_args {
        command = command.arg("--arg").arg(pair);
    }
    for set in args.set.iter().chain(&member.matrix) {
        command = command.arg("--set").arg(set);
    }
    if !member.matrix.is_empty() {
        command = command.arg("--name").arg(&member.name);
    }
    Ok(command.args(extra))
}

/// `--dry-run` of every member, as one JSON array.
fn dry_run(args: &RunArgs, members: &[Member], printed: &mut bool) -> Result<i32, Error> {
    let mut plans = Vec::new();
    for member in members {
        let command = member_command(args, member, &["--dry-run"])?;
        let output = command.output().map_err(|err| Error::internal("cannot start eden").with_source(err))?;
        if !output.success() {
            return Err(Error::usage(format!("{}: {}", member.source, output.stderr.trim())));
        }
        let plan: serde_json::Value = serde_json::from_str(&output.stdout)
            .map_err(|err| Error::internal("eden's dry run printed no JSON").with_source(err))?;
        plans.push(plan);
    }
    crate::ui::print_data(&serde_json::to_string_pretty(&plans).expect("plans serialize"));
    *printed = true;
    Ok(0)
}

/// The runs while they go.
struct Batch<'a> {
    args: &'a RunArgs,
    members: &'a [Member],
    display: BatchDisplay,
    sender: mpsc::Sender<Message>,
    children: BTreeMap<usize, (Child, Option<Instant>)>,
    ended: Vec<Ended>,
    /// stdout and stderr still open, per member.
    open_streams: Vec<u8>,
    batch_id: String,
    interrupted: Option<i32>,
    failed_fast: bool,
}

/// After a run's process exits, how long its pipes may stay open (a leftover holding them).
const STREAM_GRACE: Duration = Duration::from_secs(2);

impl Batch<'_> {
    /// Start runs up to `jobs` at a time until all have ended (or a signal or `--fail-fast`
    /// says to start no more).
    fn drive(
        mut self,
        jobs: usize,
        receiver: &mpsc::Receiver<Message>,
    ) -> Result<(BatchDisplay, Vec<Ended>, Option<i32>), Error> {
        let mut next = 0;
        loop {
            while self.children.len() < jobs && next < self.members.len() && !self.stopping() {
                self.start(next)?;
                next += 1;
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
        Ok((self.display, self.ended, self.interrupted))
    }

    fn stopping(&self) -> bool {
        self.interrupted.is_some() || self.failed_fast
    }

    fn start(&mut self, index: usize) -> Result<(), Error> {
        let member = &self.members[index];
        let mut extra = vec!["--json-events"];
        if self.display.children_quiet() {
            extra.push("--quiet");
        }
        let command = member_command(self.args, member, &extra)?.env(BATCH_ENV, &self.batch_id);
        let mut child = command.spawn_member().map_err(|err| Error::internal("cannot start eden").with_source(err))?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        read_lines(stdout, index, self.sender.clone(), Message::Stdout);
        read_lines(stderr, index, self.sender.clone(), Message::Stderr);
        self.open_streams[index] = 2;
        self.ended[index].started = true;
        self.display.started(index);
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
                if self.args.json_events {
                    // A key of its own: events have a `name` of their own (a tool's).
                    let name = serde_json::Value::String(self.members[index].name.clone());
                    let line = match line.strip_prefix('{') {
                        Some(rest) => format!("{{\"run_name\":{name},{rest}"),
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
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else { return };
        if let Some(error) = value.get("error") {
            self.ended[index].error = Some(error.clone());
        } else if let Some(record) = value.get("record") {
            self.ended[index].record = serde_json::from_value(record.clone()).ok();
        }
    }

    /// Collect the runs whose process exited and whose output is read.
    fn reap(&mut self) {
        let mut done = Vec::new();
        for (index, (child, exited)) in &mut self.children {
            if exited.is_none() {
                if let Ok(Some(status)) = child.try_wait() {
                    *exited = Some(Instant::now());
                    self.ended[*index].code = Some(exit_code(status));
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
            let failed = ended.code != Some(0) && !ended.stopped;
            if failed && self.args.fail_fast && !self.stopping() {
                self.failed_fast = true;
                self.display
                    .note(&format!("`{}` failed: stopping the other runs (`--fail-fast`)", self.members[index].name));
                for (other, (child, _)) in &self.children {
                    self.ended[*other].stopped = true;
                    send(child, nix::sys::signal::Signal::SIGINT as i32);
                }
            }
        }
    }
}

fn send(child: &Child, signal: i32) {
    use nix::sys::signal::{kill, Signal};
    if let (Ok(signal), Ok(pid)) = (Signal::try_from(signal), i32::try_from(child.id())) {
        let _ = kill(nix::unistd::Pid::from_raw(pid), signal);
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
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

fn members_rows(members: &[Member]) -> Vec<(String, String)> {
    members.iter().map(|member| (member.name.clone(), member.agent.clone())).collect()
}

/// A run's line in the summary table.
fn row(member: &Member, ended: &Ended) -> Row {
    let record = ended.record.as_ref();
    let status = match (ended.started, ended.stopped, record, ended.code) {
        (false, _, _, _) => "not started".to_owned(),
        (_, true, _, _) => "stopped".to_owned(),
        (_, _, Some(record), _) => record.exit_reason.map_or("ended", |reason| reason.as_str()).to_owned(),
        (_, _, None, Some(0)) => "ok".to_owned(),
        (_, _, None, _) => ended.error.as_ref().and_then(|error| error["kind"].as_str()).unwrap_or("failed").to_owned(),
    };
    let landed = record.map(|record| match (&record.merged_into, &record.preserved_branch) {
        (Some(target), _) => format!("merged into {target}"),
        (None, Some(branch)) => format!("kept {branch}"),
        (None, None) if record.commits.is_empty() => "no commits".to_owned(),
        (None, None) => format!("on {}", record.branch),
    });
    Row {
        name: member.name.clone(),
        agent: member.agent.clone(),
        status,
        code: ended.code,
        iterations: record.map(|record| record.iterations.len()),
        commits: record.map(|record| record.commits.len()),
        landed: landed.unwrap_or_default(),
        duration_ms: record.map(|record| record.duration_ms),
        tokens: record.and_then(|record| record.usage.as_ref()).map(|usage| usage.total_tokens()),
        cost: record.and_then(|record| record.usage.as_ref()).and_then(|usage| usage.cost_usd),
    }
}

/// A run in the `--json` array: its record, or what stopped it before it had one.
fn json_entry(member: &Member, ended: &Ended) -> serde_json::Value {
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
    serde_json::json!({
        "name": member.name,
        "status": status,
        "exit_code": ended.code,
        "error": ended.error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_is_every_combination() {
        let flags = ["agent.kind=claude-code,codex".to_owned(), "agent.model=a, b".to_owned()];
        let combinations = matrix(&flags).unwrap();
        assert_eq!(combinations.len(), 4);
        assert_eq!(combinations[0], ["agent.kind=claude-code", "agent.model=a"]);
        assert_eq!(combinations[3], ["agent.kind=codex", "agent.model=b"]);
        assert_eq!(matrix(&[]).unwrap(), [Vec::<String>::new()]);
        for bad in ["agent.kind", "=a,b", "agent.kind=a,,b", "agent.kind=a,a"] {
            assert!(matrix(&[bad.to_owned()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_most_severe_exit_code_wins() {
        let worst = |codes: &[i32]| codes.iter().copied().max_by_key(|code| severity(*code)).unwrap();
        assert_eq!(worst(&[0, 1, 3]), 3);
        assert_eq!(worst(&[7, 6, 5]), 6);
        assert_eq!(worst(&[4, 5, 3, 1]), 5);
        assert_eq!(worst(&[6, 130]), 130);
        assert_eq!(worst(&[0, 0]), 0);
        assert_eq!(worst(&[1, 7]), 7);
        assert_eq!(worst(&[3, 8, 1]), 8);
        assert_eq!(worst(&[8, 4]), 4);
    }
}
