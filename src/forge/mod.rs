//! The forges eden opens pull requests on and follows. A kind is a file here and a row in
//! `KINDS` (`github` for now); everything above asks the `Forge` trait. The token is held in
//! eden's memory: it goes to the forge's API in a header and to eden's own `git push` through
//! `credential` (a helper answering from that memory), and nowhere else. What a forge answers
//! (check output, job logs, review comments) is written by whoever can push or comment: it is
//! data, bounded and neutralized before it reaches a prompt, a terminal or a record (`text`).

pub(crate) mod credential;
pub(crate) mod github;
pub(crate) mod text;

use crate::error::Error;
use crate::redact::Secret;
use serde::{Deserialize, Serialize};

/// `[forge] kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ForgeKind {
    Github,
}

/// One row per kind: its name, its default API, and how its client is made.
pub(crate) struct KindRow {
    pub(crate) kind: ForgeKind,
    pub(crate) name: &'static str,
    /// The environment variable naming its API (as GitHub Actions sets `GITHUB_API_URL`).
    pub(crate) api_url_var: &'static str,
    pub(crate) default_api_url: &'static str,
    /// The variables its token is read from when `[forge] token` is not written, in order.
    pub(crate) token_vars: &'static [&'static str],
    /// The git host of a repository whose API is at this URL (`api.github.com` → `github.com`).
    pub(crate) git_host: fn(api: &crate::values::BaseUrl) -> String,
    pub(crate) open: fn(&Target) -> Result<Box<dyn Forge>, Error>,
}

pub(crate) const KINDS: &[KindRow] = &[KindRow {
    kind: ForgeKind::Github,
    name: "github",
    api_url_var: "GITHUB_API_URL",
    default_api_url: "https://api.github.com",
    token_vars: &["GITHUB_TOKEN", "GH_TOKEN"],
    git_host: github::git_host,
    open: github::open,
}];

impl ForgeKind {
    pub(crate) fn row(self) -> &'static KindRow {
        KINDS.iter().find(|row| row.kind == self).expect("every forge kind has its row")
    }

    pub(crate) fn as_str(self) -> &'static str {
        self.row().name
    }
}

/// `owner/name` on the forge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Repository {
    pub(crate) owner: String,
    pub(crate) name: String,
}

impl Repository {
    /// `owner/name`, each part a plain name (letters, digits, `-`, `_`, `.`; not `.` or `..`).
    pub(crate) fn parse(text: &str) -> Option<Repository> {
        let (owner, name) = text.split_once('/')?;
        let plain = |part: &str| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part.len() <= 100
                && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        (plain(owner) && plain(name)).then(|| Repository { owner: owner.to_owned(), name: name.to_owned() })
    }

    /// The repository a remote's URL names (`https://host/o/r.git`, `git@host:o/r.git`,
    /// `ssh://git@host/o/r`), and that URL's host.
    pub(crate) fn from_remote_url(url: &str) -> Option<(String, Repository)> {
        let url = url.trim();
        let (host, path) = match url.split_once("://") {
            Some((_, rest)) => {
                let (authority, path) = rest.split_once('/')?;
                let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
                (host.to_owned(), path)
            }
            None => {
                let (authority, path) = url.split_once(':')?;
                let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
                (host.to_owned(), path)
            }
        };
        let path = path.trim_end_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        // The last two parts: a GitHub Enterprise path has no prefix, a test forge may.
        let mut parts = path.rsplit('/');
        let name = parts.next()?;
        let owner = parts.next()?;
        Some((host, Repository::parse(&format!("{owner}/{name}"))?))
    }
}

impl std::fmt::Display for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// Where eden talks to: the kind, its API, the repository, and the token eden holds.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) kind: ForgeKind,
    pub(crate) api_url: crate::values::BaseUrl,
    pub(crate) repository: Repository,
    pub(crate) token: Secret,
}

/// A pull request as the forge has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PullRequest {
    pub(crate) number: u64,
    pub(crate) url: String,
    pub(crate) head_sha: String,
    pub(crate) head_branch: String,
    pub(crate) base: String,
    /// `open` or `closed`.
    pub(crate) state: String,
    pub(crate) merged: bool,
    /// `None` while the forge works it out.
    pub(crate) mergeable: Option<bool>,
    /// `clean`, `dirty` (a conflict), `blocked`, `behind`, `unstable`, …
    pub(crate) mergeable_state: Option<String>,
}

/// A pull request to open.
#[derive(Debug, Clone)]
pub(crate) struct NewPullRequest<'a> {
    pub(crate) head: &'a str,
    pub(crate) base: &'a str,
    pub(crate) title: &'a str,
    pub(crate) body: &'a str,
    pub(crate) draft: bool,
}

/// Where a check stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CheckState {
    Pending,
    Passed,
    Failed,
}

/// One check of a commit: a check run, or a legacy commit status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Check {
    pub(crate) name: String,
    pub(crate) state: CheckState,
    /// The forge's own word (`failure`, `timed_out`, `success`, `pending`, …).
    pub(crate) conclusion: String,
    /// An Actions job's id, whose log can be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) job: Option<u64>,
    /// The check's own output (title, summary, text), as the forge gave it: hostile text.
    #[serde(skip)]
    pub(crate) output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) details_url: Option<String>,
}

/// A review of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Review {
    pub(crate) id: u64,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED`, `PENDING`.
    pub(crate) state: String,
    pub(crate) commit: String,
    pub(crate) user: String,
    pub(crate) body: String,
}

/// An inline comment of a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReviewComment {
    pub(crate) review: Option<u64>,
    pub(crate) path: String,
    pub(crate) line: Option<u64>,
    pub(crate) body: String,
}

/// How a pull request is merged through the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MergeMethod {
    Merge,
    Squash,
    Rebase,
}

impl MergeMethod {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        }
    }
}

/// What eden asked of a forge: all requests, and those answered from its cache (`304`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Requests {
    pub(crate) sent: u64,
    pub(crate) not_modified: u64,
}

/// A forge's API, as the pull-request loop uses it. Every call may wait out a rate limit (and
/// returns `Interrupted` when eden is stopped meanwhile).
pub(crate) trait Forge {
    /// The open pull request whose head is `branch` (of this repository), if there is one.
    fn find_open(&mut self, branch: &str) -> Result<Option<PullRequest>, Error>;
    fn open(&mut self, new: &NewPullRequest<'_>) -> Result<PullRequest, Error>;
    fn pull(&mut self, number: u64) -> Result<PullRequest, Error>;
    /// A commit's check runs and statuses, one `Check` each.
    fn checks(&mut self, sha: &str) -> Result<Vec<Check>, Error>;
    fn reviews(&mut self, number: u64) -> Result<Vec<Review>, Error>;
    fn review_comments(&mut self, number: u64) -> Result<Vec<ReviewComment>, Error>;
    /// The log of a check's job, when the forge keeps one (at most `limit` bytes, its end).
    fn job_log(&mut self, check: &Check, limit: usize) -> Result<Option<Vec<u8>>, Error>;
    fn comment(&mut self, number: u64, body: &str) -> Result<(), Error>;
    fn add_labels(&mut self, number: u64, labels: &[String]) -> Result<(), Error>;
    /// Merge at `sha` (refused when the head moved).
    fn merge(&mut self, number: u64, method: MergeMethod, sha: &str) -> Result<(), Error>;
    /// The branch's tip on the forge, or `None` when it has no such branch.
    fn branch_tip(&mut self, branch: &str) -> Result<Option<String>, Error>;
    fn requests(&self) -> Requests;
}

/// The client of `target`'s kind.
pub(crate) fn open(target: &Target) -> Result<Box<dyn Forge>, Error> {
    (target.kind.row().open)(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_url_names_its_repository() {
        let of = |url: &str| Repository::from_remote_url(url).map(|(host, repo)| format!("{host} {repo}"));
        assert_eq!(of("https://github.com/octo/hello.git").as_deref(), Some("github.com octo/hello"));
        assert_eq!(of("git@github.com:octo/hello.git").as_deref(), Some("github.com octo/hello"));
        assert_eq!(of("ssh://git@ghe.example.com/octo/hello").as_deref(), Some("ghe.example.com octo/hello"));
        assert_eq!(of("http://127.0.0.1:4000/git/octo/hello.git").as_deref(), Some("127.0.0.1:4000 octo/hello"));
        assert_eq!(of("https://user:secret@github.com/octo/hello").as_deref(), Some("github.com octo/hello"));
        assert_eq!(of("/srv/git/hello.git"), None);
    }

    #[test]
    fn a_repository_is_two_plain_names() {
        assert!(Repository::parse("octo/hello-world.rs").is_some());
        for bad in ["octo", "octo/", "/x", "o/r/s", "../x", "o/..", "o/r x", "o/r?x"] {
            assert!(Repository::parse(bad).is_none(), "{bad}");
        }
    }
}
