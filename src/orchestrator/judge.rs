//! What an invocation's end means: completed, go on, or failed (and why, with a hint), from
//! the supervisor's outcome, the completion signal, the failure the agent reported and the
//! budget.

use crate::error::{BudgetExceeded, Error};
use crate::process::Outcome;
use crate::record::AgentFailure;
use crate::record::IterationOutcome;
use crate::values::format_duration;

/// What one invocation means for its step.
#[derive(Debug)]
pub(super) enum Verdict {
    /// The agent is done: it printed the completion signal (or overstayed after it).
    Complete,
    /// It ended without the signal: the next iteration goes on.
    GoOn,
    /// The run fails, with this error.
    Failed(Error),
}

impl Verdict {
    pub(super) fn failed(&self) -> bool {
        matches!(self, Verdict::Failed(_))
    }

    /// A later failure (a hook, work that could not come back) makes a good verdict a failed
    /// one; a failure already there stands.
    pub(super) fn fail(&mut self, error: Error) {
        if !self.failed() {
            *self = Verdict::Failed(error);
        }
    }
}

/// What the supervisor and the agent's stream said about one invocation.
pub(super) struct Heard<'a> {
    pub(crate) outcome: Outcome,
    pub(crate) signal_seen: bool,
    /// The budget cap the agent's usage crossed, if one did.
    pub(crate) exceeded: Option<BudgetExceeded>,
    pub(crate) failure: Option<&'a AgentFailure>,
    /// The provider's retry notice, when that was all the agent said since it last progressed.
    pub(crate) retrying: Option<&'a str>,
    /// The end of its output, for an error.
    pub(crate) tail: &'a str,
}

/// The iteration's verdict: a crossed budget cap first (even when the same report carried the
/// completion signal: over budget is over budget), then what the agent's exit means. An agent
/// stopped by the idle watchdog while it only retried is said to have retried, not to have
/// been silent.
pub(super) fn verdict(heard: Heard<'_>, iteration: u32, login: &str) -> (IterationOutcome, Option<i32>, Verdict) {
    if let Some(exceeded) = heard.exceeded {
        return (IterationOutcome::BudgetExceeded, None, Verdict::Failed(super::budget::error(exceeded, iteration)));
    }
    let (outcome, exit_code, result) =
        judge(heard.outcome, heard.signal_seen, iteration, heard.tail, heard.failure, login);
    // Stopped for silence while it only retried: the provider is the problem, not the agent.
    let result = match (heard.outcome, heard.retrying, result) {
        (Outcome::IdleTimeout(after), Some(notice), Verdict::Failed(error)) => Verdict::Failed(Error::new(
            error.kind,
            format!(
                "the agent made no progress for {} in iteration {iteration} and was stopped: it only retried (last: {notice})",
                format_duration(after)
            ),
        )
        .with_hint("the provider could not be reached or kept failing; check the network and the credentials, or raise `loop.idle_timeout`")),
        (_, _, result) => result,
    };
    (outcome, exit_code, result)
}

/// What an iteration's outcome means: its outcome for the record, the exit code, and the
/// verdict.
fn judge(
    outcome: Outcome,
    signal_seen: bool,
    iteration: u32,
    tail: &str,
    failure: Option<&AgentFailure>,
    login: &str,
) -> (IterationOutcome, Option<i32>, Verdict) {
    // A failure the agent reported on stdout (auth, rate limit, model error) is the reason,
    // whatever its exit code: pi, for one, exits 0 after a failed model call.
    if let (Some(failure), Outcome::Exited { code }, false) = (failure, outcome, signal_seen) {
        let hint = match failure.kind {
            crate::agent::FailureKind::Authentication => login,
            other => other.hint(),
        };
        let error = Error::agent(format!("the agent reported a failure in iteration {iteration}: {}", failure.message))
            .with_hint(hint);
        return (IterationOutcome::Failed, Some(code), Verdict::Failed(error));
    }
    match outcome {
        Outcome::Exited { code } if signal_seen => (IterationOutcome::Completed, Some(code), Verdict::Complete),
        Outcome::Overstayed => (IterationOutcome::CompletionTimeout, None, Verdict::Complete),
        Outcome::Exited { code: 0 } => (IterationOutcome::Exited, Some(0), Verdict::GoOn),
        Outcome::Exited { code } => {
            let mut message = format!("the agent exited with code {code} in iteration {iteration}");
            if !tail.is_empty() {
                message.push_str("; its last output:");
                message.push_str(tail);
            }
            let error = Error::agent(message)
                .with_hint("the agent failed before printing the completion signal; see its output above");
            (IterationOutcome::Failed, Some(code), Verdict::Failed(error))
        }
        Outcome::IdleTimeout(after) => {
            let error = Error::timeout(format!(
                "the agent printed nothing for {} in iteration {iteration} and was stopped",
                format_duration(after)
            ))
            .with_hint("raise `loop.idle_timeout` if the agent is slow to print");
            (IterationOutcome::IdleTimeout, None, Verdict::Failed(error))
        }
        Outcome::StepTimeout(after) => {
            let error = Error::timeout(format!(
                "iteration {iteration} ran longer than {} and was stopped",
                format_duration(after)
            ))
            .with_hint("raise `timeouts.iteration_step`");
            (IterationOutcome::StepTimeout, None, Verdict::Failed(error))
        }
        Outcome::Aborted(number) => (IterationOutcome::Interrupted, None, Verdict::Failed(Error::interrupted(number))),
        // Only a budget stops an agent, and the caller judges that.
        Outcome::Stopped => {
            (IterationOutcome::BudgetExceeded, None, Verdict::Failed(Error::internal("the agent was stopped")))
        }
        // `eden steer`: not a failure; the next iteration has the new prompt.
        Outcome::Steered => (IterationOutcome::Steered, None, Verdict::GoOn),
    }
}

/// A failure the agent reported only on stderr before exiting non-zero, if its words say what
/// kind (no credentials, a rate limit): the first line that says it.
pub(super) fn failure_on_stderr(lines: &[String]) -> Option<AgentFailure> {
    use crate::agent::FailureKind;
    lines.iter().find_map(|line| match FailureKind::classify(None, line) {
        FailureKind::Other => None,
        kind => Some(AgentFailure { message: line.trim().to_owned(), kind }),
    })
}

/// The structured output could not be used, retries or not: exit 3 with what is needed to
/// carry on by hand.
pub(super) fn output_error(errors: &[String], text: &str, session_id: Option<&str>, attempts: usize) -> Error {
    // The end of the answer is what matters: the last 4000 characters at most.
    let raw = &text[text.char_indices().rev().nth(3999).map_or(0, |(at, _)| at)..];
    let session = session_id.unwrap_or("(none reported)");
    let mut message = format!(
        "the agent's structured output is not usable after {attempts} attempt(s):\n{}\nsession id: {session}\nthe agent's last answer:",
        errors.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n")
    );
    for line in raw.lines() {
        message.push_str(&format!("\n  {line}"));
    }
    let hint = match session_id {
        Some(id) => {
            format!("fix the prompt or the schema; to continue that conversation, set `agent.resume = \"{id}\"`")
        }
        None => "fix the prompt or the schema; the agent reported no session id to resume".to_owned(),
    };
    Error::agent(message).with_hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::FailureKind;
    use crate::error::ErrorKind;
    use std::time::Duration;

    fn error_of(verdict: Verdict) -> Error {
        match verdict {
            Verdict::Failed(error) => error,
            other => panic!("not a failure: {other:?}"),
        }
    }

    fn heard(outcome: Outcome) -> Heard<'static> {
        Heard { outcome, signal_seen: false, exceeded: None, failure: None, retrying: None, tail: "" }
    }

    #[test]
    fn the_signal_completes_an_exit_zero_goes_on_another_exit_fails() {
        let signalled = Heard { signal_seen: true, ..heard(Outcome::Exited { code: 3 }) };
        let (outcome, code, result) = verdict(signalled, 1, "log in");
        assert_eq!((outcome, code), (IterationOutcome::Completed, Some(3)));
        assert!(matches!(result, Verdict::Complete));
        let (outcome, _, result) = verdict(heard(Outcome::Exited { code: 0 }), 1, "log in");
        assert_eq!(outcome, IterationOutcome::Exited);
        assert!(matches!(result, Verdict::GoOn));
        let failed = Heard { tail: "\n  boom", ..heard(Outcome::Exited { code: 2 }) };
        let (outcome, code, result) = verdict(failed, 4, "log in");
        let error = error_of(result);
        assert_eq!((outcome, code, error.kind), (IterationOutcome::Failed, Some(2), ErrorKind::Agent));
        assert!(error.message.contains("code 2 in iteration 4; its last output:\n  boom"), "{}", error.message);
        // Told to finish after the signal and did not: complete all the same.
        assert!(matches!(verdict(heard(Outcome::Overstayed), 1, "").2, Verdict::Complete));
    }

    #[test]
    fn a_failure_the_agent_reports_fails_even_an_exit_zero_with_its_own_hint() {
        let failure = AgentFailure { message: "Not logged in".into(), kind: FailureKind::Authentication };
        let reported = Heard { failure: Some(&failure), ..heard(Outcome::Exited { code: 0 }) };
        let (outcome, _, result) = verdict(reported, 2, "run `claude /login`");
        let error = error_of(result);
        assert_eq!(outcome, IterationOutcome::Failed);
        assert!(error.message.contains("reported a failure in iteration 2: Not logged in"), "{}", error.message);
        assert_eq!(error.hint.as_deref(), Some("run `claude /login`"));
        // With the signal seen, the work is done: the report does not undo it.
        let done = Heard { failure: Some(&failure), signal_seen: true, ..heard(Outcome::Exited { code: 0 }) };
        assert!(matches!(verdict(done, 2, "").2, Verdict::Complete));
    }

    #[test]
    fn a_crossed_cap_wins_over_the_signal() {
        let exceeded = BudgetExceeded {
            scope: crate::error::BudgetScope::Run,
            cap: crate::error::BudgetCap::MaxTokens,
            limit: "10 tokens".into(),
            used: "12 tokens".into(),
        };
        let over = Heard { exceeded: Some(exceeded), signal_seen: true, ..heard(Outcome::Exited { code: 0 }) };
        let (outcome, code, result) = verdict(over, 1, "");
        assert_eq!((outcome, code), (IterationOutcome::BudgetExceeded, None));
        assert!(matches!(error_of(result).kind, ErrorKind::Budget { .. }));
    }

    #[test]
    fn idle_while_only_retrying_says_so() {
        let silent = error_of(verdict(heard(Outcome::IdleTimeout(Duration::from_secs(60))), 1, "").2);
        assert!(silent.message.contains("printed nothing for 1m"), "{}", silent.message);
        let retrying =
            Heard { retrying: Some("retrying in 5s"), ..heard(Outcome::IdleTimeout(Duration::from_secs(60))) };
        let (outcome, _, result) = verdict(retrying, 1, "");
        let error = error_of(result);
        assert_eq!((outcome, error.kind), (IterationOutcome::IdleTimeout, ErrorKind::Timeout));
        assert!(error.message.contains("it only retried (last: retrying in 5s)"), "{}", error.message);
    }

    #[test]
    fn an_interrupt_is_an_interrupt() {
        let (outcome, _, result) = verdict(heard(Outcome::Aborted(crate::exit::Signal(15))), 1, "");
        assert_eq!(outcome, IterationOutcome::Interrupted);
        assert!(matches!(error_of(result).kind, ErrorKind::Interrupted { .. }));
    }
}
