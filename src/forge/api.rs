//! What a forge is, to the rest of eden: the repository, the target (API, token), a pull
//! request, its checks and reviews, and the `Forge` trait every kind's client implements.

use crate::error::Error;
use crate::redact::Secret;
use serde::{Deserialize, Serialize};

/// `[forge] kind`; each has its row in `KINDS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ForgeKind {
    Github,
}

impl ForgeKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ForgeKind::Github => "github",
        }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
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
    /// The repository is there, and the token sees it.
    fn repository(&mut self) -> Result<(), Error>;
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
