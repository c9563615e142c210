//! `[branch] push`: the run's branch goes to a remote after the run, kept or merged, with a
//! lease taken when the run began, so a push made meanwhile by someone else (or by another
//! run) is never overwritten; `push_base` sends the base too once the run merged into it. A
//! push that fails keeps everything local and says so.

use crate::error::Error;
use crate::forge::credential::ForRemote;
use crate::git::Git;
use crate::record::PushRecord;

/// Where the remote's copy of the branch was when the run began.
pub(crate) struct Lease {
    pub(crate) remote: String,
    pub(crate) branch: String,
    /// Its commit there (`Some("")`: it had none); `None` when the remote could not be asked.
    pub(crate) expected: Option<String>,
    /// A pull request's branch: only ever moved forward, never forced (what someone pushed to
    /// it, even before the lease was taken, is never overwritten).
    pub(crate) fast_forward_only: bool,
}

/// Ask `remote` where `branch` is. Never prompts for credentials: a run must not hang on one.
/// `credential`: the forge's token, held by eden, for this remote; `fast_forward_only`: a pull
/// request's branch, never forced.
pub(crate) fn take_lease(
    repo: &Git,
    (remote, branch): (&str, &str),
    credential: Option<&ForRemote>,
    fast_forward_only: bool,
) -> Lease {
    let asked = output(repo.command(["ls-remote", "--heads", remote, &format!("refs/heads/{branch}")]), credential);
    let expected = match asked {
        Ok(output) if output.success() => {
            Some(output.stdout.split_whitespace().next().map(str::to_owned).unwrap_or_default())
        }
        _ => None,
    };
    Lease { remote: remote.to_owned(), branch: branch.to_owned(), expected, fast_forward_only }
}

/// Run a git command to the remote: with the forge's token served to it alone, or never asking
/// for a credential.
fn output(
    command: crate::process::ProcessBuilder,
    credential: Option<&ForRemote>,
) -> std::io::Result<crate::process::Output> {
    let command = command.env("GIT_TERMINAL_PROMPT", "0").env("SSH_ASKPASS", "true");
    match credential {
        Some(credential) => credential.output(command),
        None => command.env("GIT_ASKPASS", "true").output(),
    }
}

/// Push `tip` as the lease's branch, and `base` (the target the run merged into) when given.
pub(crate) fn push(
    repo: &Git,
    lease: &Lease,
    tip: &str,
    base: Option<&str>,
    credential: Option<&ForRemote>,
) -> PushRecord {
    let refspec = format!("{tip}:refs/heads/{}", lease.branch);
    let mut args = vec!["push".to_owned(), "--porcelain".to_owned()];
    // The remote's branch must still be where it was: a new branch must still be absent.
    if let Some(expected) = lease.expected.as_ref().filter(|_| !lease.fast_forward_only) {
        args.push(format!("--force-with-lease=refs/heads/{}:{expected}", lease.branch));
    }
    args.extend([lease.remote.clone(), refspec]);
    let mut record = PushRecord {
        remote: lease.remote.clone(),
        branch: lease.branch.clone(),
        commit: tip.to_owned(),
        pushed: false,
        base: base.map(str::to_owned),
        base_pushed: None,
        error: None,
    };
    if let Err(why) = run(repo, &args, credential) {
        record.error = Some(why.message);
        return record;
    }
    record.pushed = true;
    if let Some(base) = base {
        // The base only ever moves forward: no force, no lease needed.
        let pushed = run(
            repo,
            &[
                "push".into(),
                "--porcelain".into(),
                lease.remote.clone(),
                format!("refs/heads/{base}:refs/heads/{base}"),
            ],
            credential,
        );
        record.base_pushed = Some(pushed.is_ok());
        record.error = pushed.err().map(|why| why.message);
    }
    record
}

/// Run git; `Err` is what git said, its last lines.
fn run(repo: &Git, args: &[String], credential: Option<&ForRemote>) -> Result<(), Error> {
    let output = output(repo.command(args), credential).map_err(|err| Error::git(format!("cannot run git: {err}")))?;
    if output.success() {
        return Ok(());
    }
    // What the remote said, and git's verdict; not the progress (`To …`, `Done`).
    let said: Vec<&str> = output
        .stderr
        .lines()
        .chain(output.stdout.lines())
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("To ") && *line != "Done")
        .filter(|line| !line.starts_with("error: failed to push some refs"))
        .collect();
    let tail = said[said.len().saturating_sub(6)..].join("; ");
    Err(Error::git(without_userinfo(&tail)))
}

/// `text` with the user and password of any URL in it (`https://user:token@host`) hidden.
fn without_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let end = after.find(|c: char| c.is_whitespace() || c == '/' || c == '\'' || c == '"').unwrap_or(after.len());
        match after[..end].rfind('@') {
            Some(user) => {
                out.push_str("***");
                out.push_str(&after[user..end]);
            }
            None => out.push_str(&after[..end]),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// What failed, for the person: the push is theirs to do once they see why. A pull request's
/// push is the forge refusing (exit 6), any other a git failure (exit 7).
pub(crate) fn error(record: &PushRecord, kept: Option<&str>, pull_request: bool) -> Error {
    let why = record.error.as_deref().unwrap_or("git did not say why");
    let (what, command) = match record.base_pushed {
        Some(false) => (
            format!("the base `{}`", record.base.as_deref().unwrap_or_default()),
            format!("git push {} {}", record.remote, record.base.as_deref().unwrap_or_default()),
        ),
        _ => (format!("`{}`", record.branch), format!("git push {} {}", record.remote, record.branch)),
    };
    let kept = kept.map(|branch| format!("; the branch is kept here as `{branch}`")).unwrap_or_default();
    let message = format!("the push of {what} to `{}` failed: {why}{kept}", record.remote);
    let kind = if pull_request { crate::error::ErrorKind::Forge } else { crate::error::ErrorKind::Git };
    Error::new(kind, message)
        .with_hint(format!("everything is kept in this repository; once the remote takes it: `{command}`"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_urls_user_and_password_are_hidden() {
        let said = "fatal: unable to access 'https://me:ghp_secret@github.com/o/r.git/': 403; see git://host/x";
        assert_eq!(
            super::without_userinfo(said),
            "fatal: unable to access 'https://***@github.com/o/r.git/': 403; see git://host/x"
        );
    }
}
