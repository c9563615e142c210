//! The chain of steps: each runs its iteration loop unless its `when` says to skip it. A
//! failing step stops the chain unless it has `continue_on_failure`; later steps then run only
//! with `when = "always"`. The first chain-stopping failure is the run's.

use super::iterate::{Live, Shared, StepEnd, StepRun};
use crate::agent::Agent;
use crate::error::{Error, ErrorKind};
use crate::manifest::plan::StepPlan;
use crate::manifest::schema::When;
use crate::record::{StepRecord, StepStatus};
use crate::report::Event;

/// How the steps ended when they did not fail.
pub(crate) struct LoopEnd {
    pub(crate) completion_signal: Option<String>,
    pub(crate) output: Option<serde_json::Value>,
}

pub(crate) async fn run(
    shared: &Shared<'_>,
    agents: &[Box<dyn Agent>],
    live: &mut Live<'_>,
    records: &mut Vec<StepRecord>,
) -> Result<LoopEnd, Error> {
    let steps = &shared.plan.steps;
    let many = steps.len() > 1;
    let mut failed: Option<Error> = None;
    let mut end = LoopEnd { completion_signal: None, output: None };
    let mut previous: Option<String> = None;
    for (index, (step, agent)) in steps.iter().zip(agents).enumerate() {
        let mut record = step_record(step);
        if let Some(reason) = skip_reason(step, failed.is_some(), live) {
            record.reason = Some(reason.to_owned());
            live.events.report(&Event::StepFinished {
                step: step.name.as_str().into(),
                status: StepStatus::Skipped,
                reason: Some(reason.into()),
            });
            records.push(record);
            continue;
        }
        if let Some(error) = super::iterate::interrupted(live.abort) {
            return Err(error);
        }
        if many {
            let agent_kind = step.agent.kind();
            live.events.report(&Event::StepStarted {
                step: step.name.as_str().into(),
                index,
                total: steps.len(),
                agent: agent_kind,
            });
        }
        let result = match StepRun::new(shared, step, agent.as_ref(), previous.as_deref()) {
            Ok(step_run) => step_run.run(live).await,
            Err(error) => Err(error),
        };
        record.status = if result.is_ok() { StepStatus::Ok } else { StepStatus::Failed };
        keep_artifacts(shared, step, &result, live);
        if many {
            live.events.report(&Event::StepFinished {
                step: step.name.as_str().into(),
                status: record.status,
                reason: None,
            });
        }
        match result {
            Ok(step_end) => {
                previous = step_end.output.as_ref().map(|value| match value {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
                finished_well(&mut record, &mut end, step_end);
                records.push(record);
            }
            Err(error) => {
                record.exit_code = Some(error.kind.exit_code());
                record.error = Some(error.message.clone());
                records.push(record);
                previous = None;
                if matches!(error.kind, ErrorKind::Interrupted { .. }) {
                    return Err(error);
                }
                if step.continue_on_failure {
                    let message = format!("step `{}` failed and the chain goes on: {}", step.name, error.message);
                    live.events.report(&Event::Warning { message: message.as_str().into() });
                } else if failed.is_none() {
                    failed = Some(error);
                }
            }
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(end),
    }
}

/// The step's own `artifacts`, once it ended (not after Ctrl-C: the person asked to stop).
fn keep_artifacts(shared: &Shared<'_>, step: &StepPlan, result: &Result<StepEnd, Error>, live: &mut Live<'_>) {
    if result.as_ref().is_err_and(|error| matches!(error.kind, ErrorKind::Interrupted { .. })) {
        return;
    }
    let keeping = super::artifacts::Keeping {
        sandbox: shared.sandbox,
        workspace: shared.workspace,
        run_id: shared.run_id,
        limit: shared.plan.sandbox.max_return().unwrap_or(crate::sandbox::DEFAULT_MAX_RETURN),
        journal: shared.journal,
    };
    super::artifacts::keep(&keeping, &step.artifacts, &format!("step `{}`", step.name), live.events);
}

/// A step's record before it runs: skipped until it turns out otherwise.
fn step_record(step: &StepPlan) -> StepRecord {
    StepRecord {
        name: step.name.clone(),
        agent: step.agent.kind(),
        binary: step.agent.binary().map(ToOwned::to_owned),
        model: step.agent.model().map(ToOwned::to_owned),
        status: StepStatus::Skipped,
        exit_code: None,
        error: None,
        reason: None,
        output: None,
        completion_signal: None,
    }
}

/// Why `when` skips this step, if it does.
fn skip_reason(step: &StepPlan, earlier_failed: bool, live: &Live<'_>) -> Option<&'static str> {
    let made_commits = live.progress.commits.as_ref().is_some_and(|commits| !commits.is_empty());
    match step.when {
        When::Always => None,
        When::Success | When::Commits if earlier_failed => Some("an earlier step failed"),
        When::Success => None,
        When::Commits => (!made_commits).then_some("no earlier step made commits"),
    }
}

fn finished_well(record: &mut StepRecord, end: &mut LoopEnd, step_end: StepEnd) {
    record.exit_code = Some(0);
    record.output = step_end.output.clone();
    record.completion_signal = step_end.completion_signal.clone();
    end.completion_signal = step_end.completion_signal;
    if step_end.output.is_some() {
        end.output = step_end.output;
    }
}
