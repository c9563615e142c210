//! A run's pull request: before the run, the forge is asked whether the token works, the
//! repository is there and the base exists (nothing is made when one of them is wrong); after
//! it, the branch eden pushed (with the token served to git from memory, `forge::credential`)
//! gets its pull request opened, or the one already open for that branch is updated by the
//! push and found again: a branch never gets a second one.

pub(crate) mod feedback;
pub(crate) mod follow;
pub(crate) mod judge;

use crate::error::Error;
use crate::forge::credential::ForRemote;
use crate::forge::{NewPullRequest, Repository, Target};
use crate::git::Git;
use crate::manifest::plan::Plan;
use crate::record::{PullRequestRecord, RunRecord};
use std::collections::BTreeMap;

/// The folder (at the worktree's top, kept out of git through `info/exclude`) where a round's
/// whole logs are saved for the agent: not under `.eden/`, which never goes into a sandbox.
pub(crate) const FEEDBACK_DIR: &str = ".eden-feedback";

/// Where the run's pull request goes: the forge, and the push remote's URL (shown without a
/// user or password).
pub(crate) struct Destination {
    pub(crate) target: Target,
    pub(crate) remote_url: String,
}

/// The destination of a plan with `[pull_request]`: the repository from `[forge]`, or from the
/// push remote's URL.
pub(crate) fn destination(plan: &Plan, repo: &Git) -> Result<Option<Destination>, Error> {
    let (Some(pull_request), Some(forge)) = (&plan.pull_request, &plan.forge) else { return Ok(None) };
    let remote_url = push_url(repo, &pull_request.remote)?;
    let repository = match &forge.repository {
        Some(repository) => repository.clone(),
        None => Repository::from_remote_url(&remote_url).map(|(_, repository)| repository).ok_or_else(|| {
            Error::forge(format!("the push remote `{}` names no `owner/name` eden can read", pull_request.remote))
                .with_hint("name the repository: `[forge] repository = \"owner/name\"`")
        })?,
    };
    let target = Target { kind: forge.kind, api_url: forge.api_url.clone(), repository, token: forge.token.clone() };
    Ok(Some(Destination { target, remote_url: crate::forge::credential::without_userinfo(&remote_url) }))
}

/// The forge's token, served to eden's own git for the push remote (`None` without a pull
/// request, or for an ssh remote).
pub(crate) fn credential(plan: &Plan, repo: &Git) -> Result<Option<ForRemote>, Error> {
    let (Some(pull_request), Some(forge)) = (&plan.pull_request, &plan.forge) else { return Ok(None) };
    let url = push_url(repo, &pull_request.remote)?;
    // The token is for the forge's own git host: a remote elsewhere never gets it.
    let forge_host = (forge.kind.row().git_host)(&forge.api_url);
    if let Some((host, _)) = Repository::from_remote_url(&url).filter(|_| url.contains("://")) {
        if host != forge_host {
            return Err(Error::forge(format!(
                "the push remote `{}` is on `{host}`, not on the forge's `{forge_host}`: eden gives the forge's token to the forge only",
                pull_request.remote
            ))
            .with_hint("push to a remote on the forge (`[branch] push = \"origin\"`), or set `[forge] api_url` to that host's API"));
        }
    }
    ForRemote::new(&forge.token, &url)
}

/// Before anything is made: the token is taken, the repository is there, the base exists.
pub(crate) fn preflight(destination: &Destination, base: &str) -> Result<(), Error> {
    let mut forge = crate::forge::open(&destination.target)?;
    forge.repository()?;
    if forge.branch_tip(base)?.is_none() {
        return Err(Error::forge(format!(
            "the pull request's base `{base}` is not a branch of `{}` on the forge",
            destination.target.repository
        ))
        .with_hint("push the base first, or name an existing one: `[pull_request] base = \"main\"`"));
    }
    Ok(())
}

fn push_url(repo: &Git, remote: &str) -> Result<String, Error> {
    let url = repo.run(["remote", "get-url", "--push", remote]).map_err(|_| {
        Error::forge(format!("the pull request's branch goes to the remote `{remote}`, which this repository does not have"))
            .with_hint(format!("add it (`git remote add {remote} https://github.com/OWNER/NAME.git`), or name another: `[branch] push = \"upstream\"`"))
    })?;
    Ok(url.trim().to_owned())
}

/// After a run that pushed its branch: its pull request, opened or found open already.
pub(crate) fn open_for(plan: &Plan, record: &RunRecord) -> Result<Option<PullRequestRecord>, Error> {
    let Some(pull_request) = &plan.pull_request else { return Ok(None) };
    let Some(pushed) = record.push.as_ref().filter(|push| push.pushed) else { return Ok(None) };
    let repo = Git::new(&record.repo);
    let Some(destination) = destination(plan, &repo)? else { return Ok(None) };
    let base = pull_request.base.clone().or_else(|| record.base_branch.clone()).unwrap_or_else(|| "main".to_owned());
    let mut forge = crate::forge::open(&destination.target)?;
    let (pull, action) = match forge.find_open(&pushed.branch)? {
        Some(open) => (open, "updated"),
        None => {
            let values = placeholders(plan, record, &repo);
            let title = render(pull_request.title.as_deref(), &values, &default_title(plan, &values));
            let body = render(pull_request.body.as_deref(), &values, &default_body(record, &values));
            let new = NewPullRequest {
                head: &pushed.branch,
                base: &base,
                title: &title,
                body: &body,
                draft: pull_request.draft,
            };
            let opened = forge.open(&new)?;
            if !pull_request.labels.is_empty() {
                forge.add_labels(opened.number, &pull_request.labels)?;
            }
            (opened, "opened")
        }
    };
    Ok(Some(PullRequestRecord {
        forge: destination.target.kind.as_str().to_owned(),
        repository: destination.target.repository.to_string(),
        number: pull.number,
        url: pull.url,
        base: pull.base,
        head: pushed.branch.clone(),
        head_sha: pushed.commit.clone(),
        action: action.to_owned(),
        state: "open".to_owned(),
        rounds: Vec::new(),
    }))
}

fn placeholders(plan: &Plan, record: &RunRecord, repo: &Git) -> BTreeMap<String, String> {
    let first = repo
        .run([
            "log",
            "--reverse",
            "--format=%s",
            &format!("{}..{}", record.base_commit, record.push.as_ref().map_or("HEAD", |p| &p.commit)),
        ])
        .ok()
        .and_then(|subjects| subjects.lines().next().map(str::to_owned))
        .unwrap_or_default();
    let prompt = plan.steps.first().map(|step| &step.prompt);
    let mut values: BTreeMap<String, String> = prompt.map(|prompt| prompt.args.clone()).unwrap_or_default();
    values.insert("NAME".into(), plan.name.clone());
    values.insert("RUN_ID".into(), record.id.clone());
    values.insert("BRANCH".into(), record.branch.clone());
    values.insert("BASE_BRANCH".into(), record.base_branch.clone().unwrap_or_default());
    let task = prompt.map(|prompt| crate::manifest::prompt::render(&prompt.template, &prompt.args)).unwrap_or_default();
    values.insert("TASK".into(), task);
    values.insert("COMMIT_SUBJECT".into(), first);
    values
}

fn render(template: Option<&str>, values: &BTreeMap<String, String>, default: &str) -> String {
    let text =
        template.map_or_else(|| default.to_owned(), |template| crate::manifest::prompt::render(template, values));
    crate::redact::apply(&text).into_owned()
}

/// The run's name and its first commit's subject.
fn default_title(plan: &Plan, values: &BTreeMap<String, String>) -> String {
    match values.get("COMMIT_SUBJECT").filter(|subject| !subject.is_empty()) {
        Some(subject) => format!("{}: {subject}", plan.name),
        None => plan.name.clone(),
    }
}

/// The task, the iterations, the checks, the cost and the run's id.
fn default_body(record: &RunRecord, values: &BTreeMap<String, String>) -> String {
    let mut body = String::new();
    if let Some(task) = values.get("TASK").filter(|task| !task.trim().is_empty()) {
        body.push_str("## Task\n\n");
        body.push_str(task.trim());
        body.push_str("\n\n");
    }
    body.push_str(&format!("- iterations: {}\n", record.iterations.len()));
    let checks = record.last_checks();
    if !checks.is_empty() {
        let passed = checks.iter().filter(|check| check.outcome == crate::record::HookOutcome::Ok).count();
        body.push_str(&format!(
            "- checks: {passed}/{} passed ({})\n",
            checks.len(),
            checks.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(cost) = record.usage.as_ref().and_then(|usage| usage.cost_usd) {
        body.push_str(&format!("- cost: ${cost:.2}\n"));
    }
    body.push_str(&format!("- eden run: `{}`\n", record.id));
    body
}
