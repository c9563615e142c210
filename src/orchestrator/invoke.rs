//! One invocation of the agent: its command line built (the step's agent, the run's
//! environment, the sandbox's private state), started in the sandbox under the supervisor with
//! the watchdogs and the budget's deadline, its stream read, its end judged, its transcript
//! captured.

use super::agent_command::Around;
use super::budget::Budget;
use super::context::{Live, Progress, Shared};
use super::judge::{failure_on_stderr, verdict, Heard, Verdict};
use super::stream::{report_request, IterationHandlers, Said};
use super::transcript::{capture, AgentEnv};
use crate::agent::{Agent, Invocation, Usage};
use crate::error::{Error, ErrorKind};
use crate::manifest::plan::StepPlan;
use crate::process::{supervise, Outcome, Watchdogs};
use crate::record::AgentFailure;
use crate::record::{now_rfc3339, IterationOutcome, IterationRecord, ToolCallRecord, TranscriptRecord};
use crate::report::Event;
use crate::sandbox::Prepared;
use crate::trace::AgentSpan;

/// What to ask: the step's agent, the prompt, the session to resume, the caps in force.
pub(super) struct Ask<'a> {
    pub(crate) step: &'a StepPlan,
    pub(crate) agent: &'a dyn Agent,
    pub(crate) iteration: u32,
    pub(crate) prompt: &'a str,
    pub(crate) resume: Option<&'a str>,
    pub(crate) budget: Budget,
}

/// What one invocation of the agent produced.
pub(super) struct Invoked {
    /// The sandbox branch's tip the command reported at its end.
    pub(crate) sandbox_tip: Option<String>,
    /// The model the agent said it used.
    pub(crate) model: Option<String>,
    pub(crate) outcome: IterationOutcome,
    pub(crate) exit_code: Option<i32>,
    pub(crate) verdict: Verdict,
    pub(crate) signal: Option<String>,
    pub(crate) usage: Option<Usage>,
    pub(crate) session_id: Option<String>,
    /// The calls the record keeps, and how many earlier ones it does not.
    pub(crate) tool_calls: (Vec<ToolCallRecord>, u64),
    pub(crate) failure: Option<AgentFailure>,
    /// The agent's own text (no subagents), for structured output.
    pub(crate) text: String,
    pub(crate) started_at: String,
    pub(crate) clock: std::time::Instant,
    pub(crate) transcript: Option<TranscriptRecord>,
    pub(crate) transcript_warning: Option<String>,
}

/// Start the agent once and supervise it to the end.
pub(super) async fn invoke(shared: &Shared<'_>, ask: &Ask<'_>, live: &mut Live<'_>) -> Result<Invoked, Error> {
    let preparing = std::time::Instant::now();
    let (prepared, agent_env) = agent_command(shared, ask)?;
    live.progress.time("first exec", preparing.elapsed(), std::time::Instant::now());
    let agent_cwd = prepared.command.get_cwd().unwrap_or(&shared.workspace.pre.worktree).to_path_buf();
    let program = prepared.command.to_string();
    let started_at = now_rfc3339();
    let clock = std::time::Instant::now();
    let watchdogs = watchdogs(shared, ask);
    let mut handlers = IterationHandlers::new(
        ask.iteration,
        (ask.step, ask.agent),
        live.events,
        &live.progress.session_totals,
        (ask.budget.clone(), shared.holder),
    );
    let (outcome, tail) =
        supervise(prepared.command, &watchdogs, &mut handlers, live.abort, prepared.inside.as_deref()).await.map_err(
            |err| {
                Error::agent(format!("cannot start the agent `{program}`: {err}"))
                    .with_hint("check `agent.binary` and that it is executable")
            },
        )?;
    let mut said = handlers.said();
    note_first_byte(shared, live, said.first_byte.map(|first| (first, clock)));
    account(live.progress, &mut said);
    report_requests(shared, ask.iteration, live.events).await;
    // Some agents say they cannot log in only on stderr (pi, Copilot) and exit 1.
    if let (None, Outcome::Exited { code }, None) = (&said.failure, outcome, &said.signal) {
        if code != 0 {
            said.failure = failure_on_stderr(&tail.stderr.lines(20));
        }
    }
    // Stopped with no cap crossed: the budget's deadline. Interrupted stays interrupted.
    let exceeded = match outcome {
        Outcome::Aborted(_) => None,
        Outcome::Stopped => said.exceeded.take().or_else(|| ask.budget.timed_out()),
        _ => said.exceeded.take(),
    };
    let heard = Heard {
        outcome,
        signal_seen: said.signal.is_some(),
        exceeded,
        failure: said.failure.as_ref(),
        retrying: said.retrying.as_deref(),
        tail: &tail.describe(15),
    };
    let (outcome, exit_code, mut verdict) = verdict(heard, ask.iteration, ask.step.agent.kind().spec().login);
    // A container that went away is the sandbox's failure, not the agent's.
    if matches!(&verdict, Verdict::Failed(error) if error.kind == ErrorKind::Agent) {
        if let Err(gone) = shared.sandbox.check_alive(exit_code) {
            verdict = Verdict::Failed(gone);
        }
    }
    let (transcript, transcript_warning) = match &said.session_id {
        Some(id) => capture(shared, ask.step, ask.iteration, id, &agent_cwd, &agent_env, live.events).await,
        None => (None, None),
    };
    Ok(Invoked {
        outcome,
        exit_code,
        verdict,
        signal: said.signal,
        usage: said.usage,
        session_id: said.session_id,
        tool_calls: said.tool_calls.into_record(),
        failure: said.failure,
        text: said.text.unwrap_or_default(),
        started_at,
        clock,
        transcript,
        transcript_warning,
        sandbox_tip: said.sandbox_tip,
        model: said.model,
    })
}

/// The run's first agent's first byte (`first`, since its command started at `spawned`): its
/// timings complete, kept in the record and, with `--timings`, said.
fn note_first_byte(shared: &Shared<'_>, live: &mut Live<'_>, first: Option<(std::time::Instant, std::time::Instant)>) {
    let Some((first, spawned)) = first else { return };
    if live.progress.timings.iter().any(|timing| timing.step == "first byte") {
        return;
    }
    live.progress.time("first byte", first.saturating_duration_since(spawned), first);
    let timings = live.progress.timings.clone();
    let _ = shared.journal.update(|record| record.timings = timings.clone());
    if shared.timings {
        let line = super::context::timings_line(&timings);
        live.events.report(&crate::orchestrator::Event::Info { message: line.into() });
    }
}

/// What the agent asked of its provider through the key-holding proxy, for the run's log: the
/// requests answered since the handlers last told them, then any still in flight (the agent
/// was stopped mid-request). One whose answer the agent got may still be closing on the
/// proxy's side as the agent exits: it gets a moment to end as answered.
async fn report_requests(shared: &Shared<'_>, iteration: u32, events: &mut crate::orchestrator::RunEvents) {
    let Some(holder) = shared.holder else { return };
    for _ in 0..25 {
        if !holder.busy() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for audit in holder.drain().into_iter().chain(holder.in_flight()) {
        report_request(events, iteration, audit);
    }
}

/// The agent's command line as eden runs it (`agent_command::around`), prepared to run in the
/// sandbox, and the environment it runs with.
fn agent_command(shared: &Shared<'_>, ask: &Ask<'_>) -> Result<(Prepared, AgentEnv), Error> {
    let worktree = &shared.workspace.pre.worktree;
    let invocation = Invocation { prompt: ask.prompt, worktree, resume: ask.resume };
    let around = Around {
        plan: shared.plan,
        sandbox: shared.sandbox,
        holder: shared.holder,
        run_id: shared.run_id,
        step: ask.step,
        traced: shared.traced.then_some(AgentSpan::Iteration { step: &ask.step.name, n: ask.iteration }),
    };
    let command = super::agent_command::around(ask.agent.command(&invocation)?, &around)?;
    // What eden runs later as the agent (opencode's `export`) gets its placeholders too.
    let agent_env = AgentEnv::of(&command);
    Ok((shared.sandbox.prepare(command)?, agent_env))
}

fn watchdogs(shared: &Shared<'_>, ask: &Ask<'_>) -> Watchdogs {
    let loop_ = &ask.step.loop_;
    Watchdogs {
        idle_timeout: loop_.idle_timeout.0,
        idle_warning_interval: loop_.idle_warning_interval.0,
        step_timeout: shared.plan.timeouts.iteration_step.0,
        stopping: shared.stopping,
        deadline: ask.budget.deadline().map(tokio::time::Instant::from_std),
        steer: Some(shared.steer.clone()),
    }
}

/// What the invocation spent, added to the run's and the step's; the session's running total
/// remembered for the next invocation in it.
fn account(progress: &mut Progress, said: &mut Said) {
    if let Some(usage) = &said.usage {
        progress.spent.add(usage);
        progress.step_spent.add(usage);
    }
    if let Some((id, total)) = said.pending_session_total.take() {
        progress.session_totals.insert(id, total);
    }
}

/// The invocation in the run's progress as an iteration record, and its end reported.
pub(super) fn push_record(
    live: &mut Live<'_>,
    step: &StepPlan,
    iteration: u32,
    invoked: &Invoked,
    prompt_text: &str,
    commits: Vec<String>,
    outcome: IterationOutcome,
) {
    let duration_ms = invoked.clock.elapsed().as_millis() as u64;
    live.events.report(&Event::IterationFinished { iteration, outcome, exit_code: invoked.exit_code, duration_ms });
    live.progress.iterations.push(IterationRecord {
        step: step.name.clone(),
        iteration,
        started_at: invoked.started_at.clone(),
        duration_ms,
        outcome,
        exit_code: invoked.exit_code,
        completion_signal: invoked.signal.clone(),
        commits,
        prompt: crate::record::kept_prompt(prompt_text),
        session_id: invoked.session_id.clone(),
        usage: invoked.usage,
        tool_calls: invoked.tool_calls.0.clone(),
        tool_calls_omitted: invoked.tool_calls.1,
        agent_error: invoked.failure.clone(),
        transcript: invoked.transcript.clone(),
        transcript_warning: invoked.transcript_warning.clone(),
        model: invoked.model.clone(),
    });
}
