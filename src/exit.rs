//! Every exit code eden documents: its number, what it means, and which outranks which when
//! several runs end differently. `--help`, the man pages, the book's table, the several-runs
//! code and the JSON's `exit_code` all come from here (`tests/it/generated.rs` holds the docs
//! to it).

/// An exit code of eden's, by meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success,
    NotFinished,
    Usage,
    AgentFailed,
    Timeout,
    HookFailed,
    Sandbox,
    Git,
    Budget,
    /// `[[check]]`s still failed when the iterations ran out.
    ChecksFailed,
    /// The run changed files that steer eden's next run: not merged.
    Protected,
    Internal,
    /// Stopped by this signal: the code is 128 + its number.
    Interrupted(Signal),
}

/// A signal, by the number a process status and `kill` give it (SIGINT is 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal(pub i32);

impl Signal {
    pub(crate) const INT: Signal = Signal(2);

    pub(crate) const fn number(self) -> i32 {
        self.0
    }

    /// `SIGINT`, or `signal 40` for one without a name here.
    pub(crate) fn name(self) -> String {
        nix::sys::signal::Signal::try_from(self.0)
            .map_or_else(|_| format!("signal {}", self.0), |s| s.as_str().to_owned())
    }
}

const SIGINT: Signal = Signal::INT;

impl Exit {
    /// Every exit code, in the order the docs list them.
    pub const ALL: [Exit; 13] = [
        Exit::Success,
        Exit::NotFinished,
        Exit::Usage,
        Exit::AgentFailed,
        Exit::Timeout,
        Exit::HookFailed,
        Exit::Sandbox,
        Exit::Git,
        Exit::Budget,
        Exit::ChecksFailed,
        Exit::Protected,
        Exit::Internal,
        Exit::Interrupted(SIGINT),
    ];

    /// Most severe first: with several runs, eden exits with the first of these that any run
    /// ended with.
    pub(crate) const SEVERITY: [Exit; 13] = [
        Exit::Interrupted(SIGINT),
        Exit::Internal,
        Exit::Usage,
        Exit::Sandbox,
        Exit::Git,
        Exit::HookFailed,
        Exit::Timeout,
        Exit::Protected,
        Exit::Budget,
        Exit::ChecksFailed,
        Exit::AgentFailed,
        Exit::NotFinished,
        Exit::Success,
    ];

    pub(crate) const fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::NotFinished => 1,
            Exit::Usage => 2,
            Exit::AgentFailed => 3,
            Exit::Timeout => 4,
            Exit::HookFailed => 5,
            Exit::Sandbox => 6,
            Exit::Git => 7,
            Exit::Budget => 8,
            Exit::ChecksFailed => 9,
            Exit::Protected => 10,
            Exit::Internal => 70,
            Exit::Interrupted(signal) => 128 + signal.0,
        }
    }

    /// What a process's exit code means, read back (a run of several, a record). A code eden
    /// does not give itself is an agent's own (`eden interactive` passes it on): a failed agent.
    pub(crate) fn from_code(code: i32) -> Exit {
        match code {
            code if code > 128 => Exit::Interrupted(Signal(code - 128)),
            code => Exit::ALL.into_iter().find(|exit| exit.code() == code).unwrap_or(Exit::AgentFailed),
        }
    }

    /// The code a shell gives a process that ended with `status`: its own, or 128 + the signal
    /// that ended it (1 when it says neither). The one place a process's end becomes a code.
    pub(crate) fn from_status(status: std::process::ExitStatus) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => code,
            (None, Some(signal)) => Exit::Interrupted(Signal(signal)).code(),
            (None, None) => 1,
        }
    }

    /// Higher outranks lower (see `SEVERITY`).
    pub(crate) fn severity(self) -> usize {
        let same = |exit: &Exit| match (exit, self) {
            (Exit::Interrupted(_), Exit::Interrupted(_)) => true,
            (exit, this) => *exit == this,
        };
        Exit::SEVERITY.len() - Exit::SEVERITY.iter().position(same).expect("every exit has a severity")
    }

    /// The code as the docs show it: an interruption's three.
    pub fn shown(self) -> &'static str {
        match self {
            Exit::Success => "0",
            Exit::NotFinished => "1",
            Exit::Usage => "2",
            Exit::AgentFailed => "3",
            Exit::Timeout => "4",
            Exit::HookFailed => "5",
            Exit::Sandbox => "6",
            Exit::Git => "7",
            Exit::Budget => "8",
            Exit::ChecksFailed => "9",
            Exit::Protected => "10",
            Exit::Internal => "70",
            Exit::Interrupted(_) => "130/143/129",
        }
    }

    /// In a word or three (`--help`'s line, the severity order).
    pub fn brief(self) -> &'static str {
        match self {
            Exit::Success => "success",
            Exit::NotFinished => "not finished",
            Exit::Usage => "usage or manifest error",
            Exit::AgentFailed => "agent failed",
            Exit::Timeout => "timeout",
            Exit::HookFailed => "hook failed",
            Exit::Sandbox => "sandbox or forge error",
            Exit::Git => "git error or merge conflict",
            Exit::Budget => "budget exceeded",
            Exit::ChecksFailed => "checks failed",
            Exit::Protected => "changed what steers eden",
            Exit::Internal => "internal error",
            Exit::Interrupted(_) => "interrupted",
        }
    }

    /// In full (the man pages and the book).
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Success => {
                "the completion signal was seen (or the structured output was valid), and the work merged or kept \
                 as the strategy says; also `max_iterations` used up when `require_completion = false`"
            }
            Exit::NotFinished => {
                "the run ended without its completion signal while `require_completion` is set (the default; the \
                 branch is kept unmerged, `exit_reason: \"incomplete\"`), or it finished but the agent left work \
                 uncommitted (`exit_reason: \"uncommitted_work\"`: its commits are merged as usual, the rest is in \
                 the kept worktree, whose path the error gives; `branch.commit_leftovers = true` commits it instead)"
            }
            Exit::Usage => "a bad flag or manifest, or a feature not supported yet; nothing was created",
            Exit::AgentFailed => {
                "non-zero exit without the completion signal, an error it reported, or it could not authenticate \
                 (`agent_failure = \"authentication\"`, with a hint saying how to log in)"
            }
            Exit::Timeout => "the agent was idle too long, or an iteration step or hook ran out of time",
            Exit::HookFailed => "a lifecycle hook exited non-zero",
            Exit::Sandbox => {
                "engine or bubblewrap missing, engine not running, image missing, container failed or gone, agent \
                 missing from the image, work could not be brought back from the sandbox; or the forge refused a \
                 pull request's token, repository, base or push (`exit_reason: \"forge_error\"`)"
            }
            Exit::Git => {
                "merge conflict, dirty checkout for `head` (or for the base of `merge-to-head`, found before the \
                 agent starts), branch locked or checked out elsewhere"
            }
            Exit::Budget => {
                "a `[budget]` cap (or a step's `budget`) was crossed and the agent was stopped at once; the work is \
                 kept on its branch, nothing merged; the record's `error.budget` says which cap (`scope`, `cap`, \
                 `limit`, `used`)"
            }
            Exit::ChecksFailed => {
                "the agent signalled completion, but a `[[check]]` still failed when `max_iterations` ran out \
                 (each failure went back to the agent in the next prompt); the work is kept on its branch, nothing \
                 merged; the record's `checks` has each run of each check. Also a followed pull request that is not \
                 green when its `max_rounds` or `timeout` ran out (labelled and left open)"
            }
            Exit::Protected => {
                "the run's commits change a file that steers eden's next run of the manifest (the manifest itself, \
                 its prompt files, a `cli` agent's script, the scripts its hooks and checks run, `Dockerfile.eden`), \
                 one its host hooks execute (what their scripts source, what their tools read: `Makefile`, \
                 `package.json`, `build.rs`, …; `hooks.host.reads`), the git hooks' folder when `core.hooksPath` \
                 is in the repository, or one `branch.protect` names (with a `[pull_request]`, also \
                 `.github/workflows/**`): nothing merged or pushed, the branch kept; or a \
                 host hook was not run because the agent changed what it executes. The error and the record's \
                 `error.conflicts` say which files; `eden diff RUN` to review, `eden merge RUN` to merge"
            }
            Exit::Internal => {
                "eden itself or the machine under it failed (an I/O error where none was expected; a full disk, \
                 said as such with a hint, whichever write found it — git's or eden's own) — not your input. \
                 Records and logs are written whole or not at all: a failed write leaves the record's last \
                 complete version and the log's last complete line"
            }
            Exit::Interrupted(_) => {
                "stopped by SIGINT, SIGTERM or SIGHUP (the terminal went away): 128 + the signal; the run's state \
                 is kept"
            }
        }
    }

    /// `Exit codes: 0 success · 1 not finished · …`, for `--help`.
    pub(crate) fn help_line() -> String {
        let codes: Vec<String> = Exit::ALL.iter().map(|exit| format!("{} {}", exit.shown(), exit.brief())).collect();
        format!("Exit codes: {}", codes.join(" · "))
    }

    /// `interrupted (130/143/129) > internal (70) > … > not finished (1)`: the severity order as
    /// the docs say it.
    pub fn severity_line() -> String {
        let order: Vec<String> = Exit::SEVERITY
            .iter()
            .filter(|exit| **exit != Exit::Success)
            .map(|exit| format!("{} ({})", exit.brief(), exit.shown()))
            .collect();
        order.join(" > ")
    }

    /// The book's table of exit codes.
    pub fn markdown_table() -> String {
        let mut table = String::from("| code | meaning |\n|---|---|\n");
        for exit in Exit::ALL {
            table.push_str(&format!("| {} | {}: {} |\n", exit.shown(), exit.brief(), exit.meaning()));
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_back_as_what_they_mean() {
        for exit in Exit::ALL {
            assert_eq!(Exit::from_code(exit.code()), exit);
        }
        assert_eq!(Exit::from_code(143), Exit::Interrupted(Signal(15)));
        assert_eq!(Exit::from_code(42), Exit::AgentFailed, "an agent's own code");
    }

    #[test]
    fn a_process_status_is_its_code_or_128_plus_its_signal() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(Exit::from_status(std::process::ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(Exit::from_status(std::process::ExitStatus::from_raw(9)), 137);
        assert_eq!(Signal(15).name(), "SIGTERM");
        assert_eq!(Signal(99).name(), "signal 99");
    }

    #[test]
    fn the_most_severe_exit_code_wins() {
        let worst = |codes: &[i32]| codes.iter().copied().max_by_key(|code| Exit::from_code(*code).severity()).unwrap();
        assert_eq!(worst(&[0, 1, 3]), 3);
        assert_eq!(worst(&[7, 6, 5]), 6);
        assert_eq!(worst(&[4, 5, 3, 1]), 5);
        assert_eq!(worst(&[6, 130]), 130);
        assert_eq!(worst(&[0, 0]), 0);
        assert_eq!(worst(&[1, 7]), 7);
        assert_eq!(worst(&[3, 8, 1]), 8);
        assert_eq!(worst(&[8, 4]), 4);
        assert_eq!(worst(&[42, 1]), 42, "an agent's own code ranks as a failed agent");
    }

    #[test]
    fn every_code_is_listed_once_in_each_order() {
        for exit in Exit::ALL {
            assert_eq!(Exit::SEVERITY.iter().filter(|other| **other == exit).count(), 1, "{exit:?}");
        }
        assert!(Exit::severity_line().starts_with("interrupted (130/143/129) > internal error (70) > "));
    }
}
