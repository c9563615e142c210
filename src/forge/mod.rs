//! The forges eden opens pull requests on and follows. A kind is a file here and a row in
//! `KINDS` (`github` for now); everything above asks the `Forge` trait. The token is held in
//! eden's memory: it goes to the forge's API in a header and to eden's own `git push` through
//! `credential` (a helper answering from that memory), and nowhere else. What a forge answers
//! (check output, job logs, review comments) is written by whoever can push or comment: it is
//! data, bounded and neutralized before it reaches a prompt, a terminal or a record (`text`).

mod api;
pub(crate) mod credential;
pub(crate) mod github;
pub(crate) mod text;

use crate::error::Error;
pub(crate) use api::{
    Check, CheckState, Forge, ForgeKind, MergeMethod, NewPullRequest, PullRequest, Repository, Review, ReviewComment,
    Target,
};

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
