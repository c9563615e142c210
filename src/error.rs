//! Errors that reach the user. Each carries its kind (which decides the exit code documented in
//! the book), the message, an optional `hint:` with the fix, and optionally the lower-level
//! error that caused it (`source()`). Every fallible path in eden returns this one type, and
//! `ui::print_error` is its one renderer.
//!
//! Exit 2 means "your input was wrong" and nothing else: a failure of eden itself or of the
//! machine under it (an I/O error where none was expected) is `Internal`, exit 70.

use crate::exit::{Exit, Signal};
use std::fmt;
use std::sync::Arc;

/// What went wrong, as far as the exit code is concerned, with what a caller may branch on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The run ended without its completion signal and `require_completion` is set.
    Incomplete,
    /// The run finished, but the agent left work uncommitted: it is in the kept worktree, not
    /// on the branch.
    Uncommitted,
    /// Bad command line or manifest, or a feature that is not built yet.
    Usage,
    /// The agent process failed (non-zero exit without the completion signal, or a reported error).
    Agent,
    /// An interactive agent ended with this exit code (eden exits with it too).
    Exited { code: i32 },
    /// Idle, step or hook timeout.
    Timeout,
    /// A lifecycle hook failed.
    Hook,
    /// The sandbox could not be set up or used.
    Sandbox,
    /// The forge refused or could not be reached (a token, a repository, a push, an API call).
    Forge,
    /// A git operation failed.
    Git,
    /// Merging the run's branch into its target conflicts in these files.
    MergeConflict { files: Vec<String> },
    /// Interrupted by a signal (its number).
    Interrupted { signal: Signal },
    /// A `[budget]` cap was crossed and the agent stopped.
    Budget { exceeded: Box<BudgetExceeded> },
    /// `[[check]]`s still failed when the iterations ran out.
    ChecksFailed,
    /// The run's commits change these files, which steer eden or `branch.protect` names: not merged.
    Protected { files: Vec<String> },
    /// eden itself, or the machine under it, failed.
    Internal,
}

/// Which `[budget]` cap a run crossed, and by how much. Written as `scope` (`run` or `step`)
/// and, for a step's, `step` (its name), as records have always said it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(into = "ExceededWritten", from = "ExceededWritten")]
pub(crate) struct BudgetExceeded {
    pub(crate) scope: BudgetScope,
    pub(crate) cap: BudgetCap,
    /// The cap and what was spent when eden stopped the agent, as text (`2,000 tokens`).
    pub(crate) limit: String,
    pub(crate) used: String,
}

/// Whose cap: the run's (`[budget]`) or a step's own (`budget`), by its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BudgetScope {
    Run,
    Step(String),
}

/// `BudgetExceeded` as records and events write it.
#[derive(Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct ExceededWritten {
    scope: ScopeWritten,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<String>,
    cap: BudgetCap,
    limit: String,
    used: String,
}

#[derive(Clone, Copy, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ScopeWritten {
    Run,
    Step,
}

impl From<BudgetExceeded> for ExceededWritten {
    fn from(exceeded: BudgetExceeded) -> Self {
        let (scope, step) = match exceeded.scope {
            BudgetScope::Run => (ScopeWritten::Run, None),
            BudgetScope::Step(name) => (ScopeWritten::Step, Some(name)),
        };
        ExceededWritten { scope, step, cap: exceeded.cap, limit: exceeded.limit, used: exceeded.used }
    }
}

impl From<ExceededWritten> for BudgetExceeded {
    fn from(written: ExceededWritten) -> Self {
        let scope = match (written.scope, written.step) {
            (ScopeWritten::Step, Some(name)) => BudgetScope::Step(name),
            (ScopeWritten::Step, None) => BudgetScope::Step(String::new()),
            (ScopeWritten::Run, _) => BudgetScope::Run,
        };
        BudgetExceeded { scope, cap: written.cap, limit: written.limit, used: written.used }
    }
}

/// Which cap, named as the manifest key that sets it (hence the shared prefix).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BudgetCap {
    MaxTokens,
    MaxCostUsd,
    MaxDuration,
}

impl BudgetCap {
    /// The manifest key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            BudgetCap::MaxTokens => "max_tokens",
            BudgetCap::MaxCostUsd => "max_cost_usd",
            BudgetCap::MaxDuration => "max_duration",
        }
    }
}

impl ErrorKind {
    /// Which of eden's exit codes this error ends with.
    pub(crate) fn exit(&self) -> Exit {
        match self {
            ErrorKind::Incomplete | ErrorKind::Uncommitted => Exit::NotFinished,
            ErrorKind::Usage => Exit::Usage,
            ErrorKind::Agent | ErrorKind::Exited { .. } => Exit::AgentFailed,
            ErrorKind::Timeout => Exit::Timeout,
            ErrorKind::Hook => Exit::HookFailed,
            ErrorKind::Sandbox | ErrorKind::Forge => Exit::Sandbox,
            ErrorKind::Git | ErrorKind::MergeConflict { .. } => Exit::Git,
            ErrorKind::Interrupted { signal } => Exit::Interrupted(*signal),
            ErrorKind::Internal => Exit::Internal,
            ErrorKind::Budget { .. } => Exit::Budget,
            ErrorKind::ChecksFailed => Exit::ChecksFailed,
            ErrorKind::Protected { .. } => Exit::Protected,
        }
    }

    /// The process's exit code: eden's own, or the code an interactive agent ended with.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            ErrorKind::Exited { code } => *code,
            other => other.exit().code(),
        }
    }

    /// The short name used in run records and JSON output.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::Incomplete => "incomplete",
            ErrorKind::Uncommitted => "uncommitted_work",
            ErrorKind::Usage => "usage",
            ErrorKind::Agent | ErrorKind::Exited { .. } => "agent_failed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Hook => "hook_failed",
            ErrorKind::Sandbox => "sandbox_error",
            ErrorKind::Forge => "forge_error",
            // Scripts have matched `git_error` for conflicts since the first release.
            ErrorKind::Git | ErrorKind::MergeConflict { .. } => "git_error",
            ErrorKind::Interrupted { .. } => "interrupted",
            ErrorKind::Internal => "internal",
            ErrorKind::Budget { .. } => "budget_exceeded",
            ErrorKind::ChecksFailed => "checks_failed",
            ErrorKind::Protected { .. } => "protected",
        }
    }
}

/// What a caller may branch on beyond the kind, never shown (the message says it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason {
    /// A sandbox sent back more than `sandbox.max_return`.
    OverMaxReturn,
    /// What git said on stderr when it failed: git has no error codes, its words are all there is.
    GitSaid(String),
}

/// An error meant for the person running eden.
#[derive(Debug, Clone)]
pub struct Error {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    reason: Option<Box<Reason>>,
    /// Further errors found in the same pass (a manifest's independent mistakes, reported at
    /// once, as compilers do).
    pub(crate) also: Box<[Error]>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), hint: None, source: None, reason: None, also: Box::default() }
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Usage, message)
    }

    pub(crate) fn git(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Git, message)
    }

    pub(crate) fn agent(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Agent, message)
    }

    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Timeout, message)
    }

    pub(crate) fn sandbox(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Sandbox, message)
    }

    pub(crate) fn forge(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Forge, message)
    }

    pub(crate) fn hook(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Hook, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, message)
    }

    /// eden received `signal` (SIGINT, SIGTERM, SIGHUP) and stopped.
    pub(crate) fn interrupted(signal: Signal) -> Self {
        Error::new(ErrorKind::Interrupted { signal }, format!("interrupted by {}", signal.name()))
    }

    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub(crate) fn with_reason(mut self, reason: Reason) -> Self {
        self.reason = Some(Box::new(reason));
        self
    }

    pub(crate) fn reason(&self) -> Option<&Reason> {
        self.reason.as_deref()
    }

    /// What git said, when git failed.
    pub(crate) fn git_said(&self) -> Option<&str> {
        match self.reason() {
            Some(Reason::GitSaid(said)) => Some(said),
            _ => None,
        }
    }

    /// The same error in the context of `outer`: `outer: message`, the kind, hint and causes kept.
    pub(crate) fn context(mut self, outer: impl fmt::Display) -> Self {
        self.message = format!("{outer}: {}", self.message);
        self
    }

    /// Keep the lower-level error this one comes from (shown as `caused by:`).
    pub(crate) fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// The first of `errors`, with the rest (up to a limit) as `also`; `None` if there are none.
    pub(crate) fn first_of(errors: Vec<Error>) -> Option<Error> {
        let mut errors = errors.into_iter();
        let mut first = errors.next()?;
        first.also = errors.take(MAX_ERRORS - 1).collect();
        Some(first)
    }

    /// The causes below this error, outermost first.
    pub(crate) fn causes(&self) -> impl Iterator<Item = String> + '_ {
        let mut next = std::error::Error::source(self);
        std::iter::from_fn(move || {
            let current = next?;
            next = current.source();
            Some(current.to_string())
        })
    }
}

/// How many errors one pass reports at most.
pub(crate) const MAX_ERRORS: usize = 10;

/// `SIGINT` for 2: the name people know a signal by.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|source| source as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_and_give_128_plus_n() {
        for (signal, name, code) in [(2, "SIGINT", 130), (15, "SIGTERM", 143), (1, "SIGHUP", 129)] {
            let error = Error::interrupted(Signal(signal));
            assert_eq!(error.message, format!("interrupted by {name}"));
            assert_eq!(error.kind.exit_code(), code);
        }
    }

    #[test]
    fn the_cause_chain_is_kept() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let error = Error::internal("cannot write the run record").with_source(io);
        assert_eq!(error.causes().collect::<Vec<_>>(), ["permission denied"]);
        assert_eq!(error.kind.exit_code(), 70);
    }
}
