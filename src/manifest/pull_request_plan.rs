//! `[forge]` and `[pull_request]`: where the run's pull request is opened, the token eden holds
//! for it, and how the pull request is followed. The token comes from eden's environment (or
//! `.eden/.env`), never from the manifest's own text, and is registered as a secret at once.

use super::load::{KeyPath, Source};
use super::schema::{ForgeSection, Manifest, MergeSetting, PullRequestSection, Strategy};
use crate::error::Error;
use crate::forge::{ForgeKind, MergeMethod, Repository};
use crate::redact::Secret;
use crate::values::{BaseUrl, Duration};
use serde::Serialize;

/// `[forge]` resolved.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ForgePlan {
    pub(crate) kind: ForgeKind,
    #[serde(serialize_with = "as_url")]
    pub(crate) api_url: BaseUrl,
    /// `None`: read from the push remote's URL when the run begins.
    pub(crate) repository: Option<Repository>,
    /// Shown as `***`.
    pub(crate) token: Secret,
    /// Where the token came from: a variable's name.
    pub(crate) token_from: String,
}

fn as_url<S: serde::Serializer>(url: &BaseUrl, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&url.url())
}

/// `[pull_request]` resolved, with its defaults.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PullRequestPlan {
    /// `None`: the run's base branch.
    pub(crate) base: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) body: Option<String>,
    pub(crate) draft: bool,
    pub(crate) labels: Vec<String>,
    pub(crate) follow: bool,
    pub(crate) max_rounds: u32,
    pub(crate) give_up_label: String,
    pub(crate) poll: Duration,
    pub(crate) timeout: Duration,
    pub(crate) require_approval: bool,
    pub(crate) merge: Option<MergeMethod>,
    /// The remote the branch is pushed to (`branch.push`, default `origin`).
    pub(crate) remote: String,
}

/// The placeholders a pull request's title and body may use, beside `[prompt_args]`.
pub(crate) const PLACEHOLDERS: [&str; 6] = ["NAME", "RUN_ID", "BRANCH", "BASE_BRANCH", "TASK", "COMMIT_SUBJECT"];

/// `[forge]`, when it is written or a `[pull_request]` needs it.
pub(crate) fn resolve_forge(
    manifest: &Manifest,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ForgePlan>, Error> {
    if manifest.forge.is_none() && manifest.pull_request.is_none() {
        return Ok(None);
    }
    let section = manifest.forge.clone().unwrap_or_default();
    let path = KeyPath::parse("forge");
    let kind = section.kind.unwrap_or(ForgeKind::Github);
    let row = kind.row();
    let api_url = api_url(&section, row, &path, source, host_env)?;
    let repository = match &section.repository {
        Some(text) => Some(Repository::parse(text).ok_or_else(|| {
            source
                .error_at(&path.child("repository"), format!("`{text}` is not `owner/name`"))
                .with_hint("write the repository as the forge names it, e.g. `repository = \"octo-org/hello\"`")
        })?),
        None => None,
    };
    let at = if manifest.forge.is_some() { path.clone() } else { KeyPath::parse("pull_request") };
    let (token, token_from) = token(&section, row, &at, source, host_env)?;
    crate::redact::register([token.0.clone()]);
    Ok(Some(ForgePlan { kind, api_url, repository, token, token_from }))
}

fn api_url(
    section: &ForgeSection,
    row: &crate::forge::KindRow,
    path: &KeyPath,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<BaseUrl, Error> {
    let (text, from) = match (&section.api_url, host_env(row.api_url_var)) {
        (Some(text), _) => (text.clone(), "`forge.api_url`".to_owned()),
        (None, Some(text)) if !text.is_empty() => (text, format!("`{}`", row.api_url_var)),
        _ => (row.default_api_url.to_owned(), "the default".to_owned()),
    };
    let url = BaseUrl::parse(text.trim_end_matches('/')).ok_or_else(|| {
        source
            .error_at(&path.child("api_url"), format!("{from} `{text}` is not an `https://` URL"))
            .with_hint(format!("e.g. `{}`, or `https://HOST/api/v3` for GitHub Enterprise Server", row.default_api_url))
    })?;
    let loopback = matches!(url.host.as_str(), "127.0.0.1" | "localhost" | "::1");
    if !url.tls && !loopback {
        return Err(source
            .error_at(
                &path.child("api_url"),
                format!("{from} `{text}` is plain http: the token would travel in the clear"),
            )
            .with_hint("use the forge's https URL"));
    }
    Ok(url)
}

fn token(
    section: &ForgeSection,
    row: &crate::forge::KindRow,
    path: &KeyPath,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Secret, String), Error> {
    let key = path.child("token");
    let origin = source.origin(path, true);
    let Some(written) = &section.token else {
        let found = row.token_vars.iter().find_map(|var| host_env(var).filter(|v| !v.is_empty()).map(|v| (v, *var)));
        return found.map(|(value, var)| (Secret(value), (*var).to_owned())).ok_or_else(|| {
            Error::forge(format!(
                "{origin}: a pull request needs a token for {}, and neither {} is set",
                row.name,
                row.token_vars.iter().map(|var| format!("`{var}`")).collect::<Vec<_>>().join(" nor ")
            ))
            .with_hint(format!(
                "export `{var}` (in GitHub Actions: `env: {var}: ${{{{ secrets.{var} }}}}`), or name another variable: `[forge] token = \"${{MY_TOKEN}}\"`",
                var = row.token_vars[0]
            ))
        });
    };
    let names = super::env_plan::env_references(written);
    if names.len() != 1 || written.trim() != format!("${{{}}}", names[0]) {
        return Err(source
            .error_at(
                &key,
                "`forge.token` must be one `${VAR}` reference: a token written in the manifest is a leaked token",
            )
            .with_hint(format!("export the token and refer to it: `token = \"${{{}}}\"`", row.token_vars[0])));
    }
    match host_env(names[0]).filter(|value| !value.is_empty()) {
        Some(value) => Ok((Secret(value), names[0].to_owned())),
        None => Err(Error::forge(format!("{origin}: `forge.token` refers to `${{{}}}`, which is not set", names[0]))
            .with_hint(format!("export `{}` before running eden, or add it to `.eden/.env`", names[0]))),
    }
}

/// `[pull_request]`, checked against the branch settings and the prompt's arguments.
pub(crate) fn resolve_pull_request(
    manifest: &Manifest,
    strategy: Strategy,
    source: &Source,
) -> Result<Option<PullRequestPlan>, Error> {
    let Some(section) = &manifest.pull_request else { return Ok(None) };
    let path = KeyPath::parse("pull_request");
    if strategy == Strategy::Head {
        return Err(source
            .error_at(
                &KeyPath::parse("branch.strategy"),
                "a `[pull_request]` needs a branch of the run's own: strategy `head` commits on your checkout",
            )
            .with_hint("use `strategy = \"merge-to-head\"` (the default) or `\"named\"`"));
    }
    if manifest.attempts.is_some_and(|attempts| attempts > 1) {
        return Err(source
            .error_at(
                &KeyPath::parse("attempts"),
                "several attempts with a `[pull_request]` are not built yet: each would open a pull request of its own",
            )
            .with_hint("run one attempt with the pull request (leave `attempts` out, or `attempts = 1`)"));
    }
    if manifest.branch.push_base == Some(true) {
        return Err(source
            .error_at_key(
                &KeyPath::parse("branch.push_base"),
                "`branch.push_base` pushes a base the run merged into; with a `[pull_request]` nothing merges here",
            )
            .with_hint("leave `push_base` out: the pull request merges on the forge (`pull_request.merge`)"));
    }
    check_placeholders(section, manifest, &path, source)?;
    let merge = match section.merge {
        None | Some(MergeSetting::Flag(false)) => None,
        Some(MergeSetting::Method(method)) => Some(method),
        Some(MergeSetting::Flag(true)) => {
            return Err(source
                .error_at(&path.child("merge"), "`merge = true` does not say how to merge")
                .with_hint("name the method: `merge = \"squash\"` (or \"merge\", \"rebase\"), or `false`"))
        }
    };
    let durations = [("poll", section.poll), ("timeout", section.timeout)];
    if let Some((key, _)) = durations.iter().find(|(_, value)| value.is_some_and(|value| value.0.is_zero())) {
        return Err(source
            .error_at(&path.child(key), format!("`{key}` must be longer than 0"))
            .with_hint("e.g. \"30s\" or \"2h\""));
    }
    let labels = section.labels.clone().unwrap_or_default();
    let give_up_label = section.give_up_label.clone().unwrap_or_else(|| "needs-human".to_owned());
    if let Some(label) = labels.iter().chain([&give_up_label]).find(|label| label.trim().is_empty() || label.len() > 50)
    {
        return Err(source
            .error_at(&path.child("labels"), format!("`{label}` is not a label a forge takes (1 to 50 characters)"))
            .with_hint("e.g. `labels = [\"agent\"]`"));
    }
    Ok(Some(PullRequestPlan {
        base: section.base.clone(),
        title: section.title.clone(),
        body: section.body.clone(),
        draft: section.draft.unwrap_or(false),
        labels,
        follow: section.follow.unwrap_or(true),
        max_rounds: section.max_rounds.unwrap_or(3),
        give_up_label,
        poll: section.poll.unwrap_or(Duration::from_secs(30)),
        timeout: section.timeout.unwrap_or(Duration::from_secs(2 * 3600)),
        require_approval: section.require_approval.unwrap_or(false),
        merge,
        remote: manifest.branch.push.clone().unwrap_or_else(|| "origin".to_owned()),
    }))
}

fn check_placeholders(
    section: &PullRequestSection,
    manifest: &Manifest,
    path: &KeyPath,
    source: &Source,
) -> Result<(), Error> {
    for (key, template) in [("title", &section.title), ("body", &section.body)] {
        let Some(template) = template else { continue };
        let unknown = super::prompt::placeholders(template)
            .into_iter()
            .find(|name| !PLACEHOLDERS.contains(name) && !manifest.prompt_args.contains_key(*name));
        if let Some(name) = unknown {
            return Err(source
                .error_at(&path.child(key), format!("`{{{{{name}}}}}` is not a placeholder a pull request knows"))
                .with_hint(format!(
                    "use one of {} or a key of `[prompt_args]`",
                    PLACEHOLDERS.map(|p| format!("{{{{{p}}}}}")).join(", ")
                )));
        }
    }
    Ok(())
}
