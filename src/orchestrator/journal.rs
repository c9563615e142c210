//! The run record while the run goes: kept in memory, written out at the start, at every phase
//! and after every iteration, so a run whose eden dies is still on disk, as far as it got.

use super::workspace::Preflight;
use crate::error::{Error, ErrorKind};
use crate::manifest::plan::Plan;
use crate::process::ProcessStamp;
use crate::record::{now_rfc3339, ErrorRecord, ExitReason, RunPhase, RunRecord, RunStatus, RECORD_VERSION};
use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Instant;

pub(crate) struct Journal {
    record: RefCell<RunRecord>,
    clock: Instant,
    /// Written at least once: the run began (a run refused before that leaves no record).
    started: std::cell::Cell<bool>,
}

impl Journal {
    /// The record of a run about to start: `running`, owned by this eden process. Not yet written.
    pub(crate) fn start(
        run_id: &str,
        kind: crate::record::RunKind,
        plan: &Plan,
        pre: &Preflight,
        overrides: &[String],
        log: Option<PathBuf>,
    ) -> Journal {
        let record = RunRecord {
            version: RECORD_VERSION,
            id: run_id.to_owned(),
            kind,
            status: RunStatus::Running,
            process: ProcessStamp::current(),
            eden_version: env!("CARGO_PKG_VERSION").to_owned(),
            containment: crate::process::contain::current(),
            phase: RunPhase::Starting,
            name: plan.name.clone(),
            manifest: plan.manifest.clone(),
            overrides: overrides.to_vec(),
            repo: pre.root.clone(),
            sandbox: plan.sandbox.kind(),
            container: None,
            held_keys: held_keys(plan),
            from: None,
            artifacts: Vec::new(),
            artifacts_dir: None,
            services: plan
                .sandbox
                .services()
                .iter()
                .map(|service| crate::record::ServiceRecord {
                    name: service.name.clone(),
                    image: service.image.clone(),
                })
                .collect(),
            strategy: pre.strategy,
            branch: pre.branch.clone(),
            base_branch: pre.base_branch.clone(),
            base_commit: pre.base_commit.clone(),
            worktree: pre.worktree.clone(),
            log,
            max_iterations: plan.steps[0].loop_.max_iterations,
            iterations: Vec::new(),
            hooks: Vec::new(),
            checks: Vec::new(),
            push: None,
            pull_request: None,
            timings: Vec::new(),
            steps: Vec::new(),
            output: None,
            completion_signal: None,
            usage: None,
            session_id: None,
            commits: Vec::new(),
            merged_into: None,
            merge_kind: None,
            merge_commit: None,
            merge_onto: None,
            merge_queue_position: None,
            merged_commits: None,
            merge_wait_ms: None,
            attempt: None,
            later: Vec::new(),
            preserved_branch: None,
            preserved_worktree: None,
            started_at: now_rfc3339(),
            finished_at: None,
            duration_ms: 0,
            exit_reason: None,
            exit_code: None,
            error: None,
            record_path: pre.layout().record(run_id),
        };
        Journal { record: RefCell::new(record), clock: Instant::now(), started: std::cell::Cell::new(false) }
    }

    /// Change the record and write it.
    pub(crate) fn update(&self, change: impl FnOnce(&mut RunRecord)) -> std::io::Result<()> {
        let mut record = self.record.borrow_mut();
        change(&mut record);
        record.duration_ms = self.clock.elapsed().as_millis() as u64;
        self.started.set(true);
        record.save()
    }

    /// Has the run begun (its record been written)?
    /// One of several attempts at the same task: which (its `chosen` is set at the end).
    pub(crate) fn note_attempt(&self, attempt: Option<crate::record::AttemptRecord>) {
        self.record.borrow_mut().attempt = attempt;
    }

    /// How many iterations the record holds.
    pub(crate) fn iterations(&self) -> usize {
        self.record.borrow().iterations.len()
    }

    /// Of several attempts, which this run is.
    pub(crate) fn attempt(&self) -> Option<crate::record::AttemptRecord> {
        self.record.borrow().attempt.clone()
    }

    /// Which of several attempts this run is (1 when it is the only one): `{{ATTEMPT}}`.
    pub(crate) fn attempt_number(&self) -> u32 {
        self.record.borrow().attempt.as_ref().map_or(1, |attempt| attempt.number)
    }

    pub(crate) fn started(&self) -> bool {
        self.started.get()
    }

    /// Enter a phase (written, so a crash shows where the run was).
    pub(crate) fn phase(&self, phase: RunPhase) {
        let _ = self.update(|record| record.phase = phase);
    }

    /// The final record: how it ended, written. The error is the run's, if it failed.
    pub(crate) fn finish(
        self,
        error: Option<&Error>,
        change: impl FnOnce(&mut RunRecord),
    ) -> (RunRecord, std::io::Result<()>) {
        let written = self.update(|record| {
            change(record);
            record.status = RunStatus::Finished;
            record.phase = RunPhase::Done;
            record.finished_at = Some(now_rfc3339());
            record.exit_code = Some(error.map_or(0, |e| e.kind.exit_code()));
            record.exit_reason = Some(match error {
                Some(error) => ExitReason::of(&error.kind),
                None if record.completion_signal.is_some() => ExitReason::Completed,
                None if record.output.is_some() => ExitReason::Output,
                None if record.kind == crate::record::RunKind::Interactive => ExitReason::SessionEnded,
                None => ExitReason::MaxIterations,
            });
            record.usage = record.iterations.iter().filter_map(|i| i.usage).reduce(|mut total, usage| {
                total.add(&usage);
                total
            });
            record.session_id = record.iterations.iter().rev().find_map(|i| i.session_id.clone());
            let agent_failure = record.iterations.last().and_then(|i| i.agent_error.as_ref()).map(|f| f.kind);
            record.error = error.map(|e| ErrorRecord {
                kind: ExitReason::of(&e.kind),
                agent_failure: if e.kind == ErrorKind::Agent { agent_failure } else { None },
                conflicts: match &e.kind {
                    ErrorKind::MergeConflict { files } | ErrorKind::Protected { files } => files.clone(),
                    _ => Vec::new(),
                },
                budget: match &e.kind {
                    ErrorKind::Budget { exceeded } => Some((**exceeded).clone()),
                    _ => None,
                },
                message: e.message.clone(),
                hint: e.hint.clone(),
            });
        });
        (self.record.into_inner(), written)
    }
}

/// What the plan holds, for the record: each key once, with its upstream.
fn held_keys(plan: &Plan) -> Vec<crate::record::HeldKeyRecord> {
    let mut held: Vec<crate::record::HeldKeyRecord> = Vec::new();
    for step in &plan.steps {
        if let crate::manifest::held_plan::Held::Keys { upstream, keys, .. } = &step.held {
            for key in keys {
                let record = crate::record::HeldKeyRecord { var: key.var.clone(), upstream: upstream.clone() };
                if !held.contains(&record) {
                    held.push(record);
                }
            }
        }
    }
    held
}
