//! Errors that reach the user: each carries the exit code documented in the README, the message,
//! and an optional `hint:` with the fix. Every fallible path in eden returns this one type, so
//! the exit code is always the documented one (`main_with_args` maps it).

use std::fmt;

/// What went wrong, as far as the exit code is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The run ended without its completion signal and `require_completion` is set.
    Incomplete,
    /// Bad command line or manifest, or a feature that is not built yet.
    Usage,
    /// The agent process failed (non-zero exit without the completion signal, or a reported error).
    Agent,
    /// Idle, step or hook timeout.
    Timeout,
    /// A lifecycle hook failed.
    Hook,
    /// The sandbox could not be set up or used.
    Sandbox,
    /// A git operation failed, or the merge back conflicted.
    Git,
    /// Interrupted by a signal (the signal number).
    Interrupted(i32),
}

impl ErrorKind {
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Incomplete => 1,
            ErrorKind::Usage => 2,
            ErrorKind::Agent => 3,
            ErrorKind::Timeout => 4,
            ErrorKind::Hook => 5,
            ErrorKind::Sandbox => 6,
            ErrorKind::Git => 7,
            ErrorKind::Interrupted(signal) => 128 + signal,
        }
    }

    /// The short name used in run records and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Incomplete => "incomplete",
            ErrorKind::Usage => "usage",
            ErrorKind::Agent => "agent_failed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Hook => "hook_failed",
            ErrorKind::Sandbox => "sandbox_error",
            ErrorKind::Git => "git_error",
            ErrorKind::Interrupted(_) => "interrupted",
        }
    }
}

/// An error meant for the person running eden.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), hint: None }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Usage, message)
    }

    pub fn git(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Git, message)
    }

    pub fn agent(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Agent, message)
    }

    pub fn timeout(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Timeout, message)
    }

    pub fn sandbox(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Sandbox, message)
    }

    /// A valid request for something a later version of eden will do.
    pub fn unsupported(what: impl fmt::Display) -> Self {
        Error::usage(format!("{what} is not supported yet"))
            .with_hint("this version of eden does not implement it; remove it from the manifest")
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
