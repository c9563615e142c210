//! `[notify]`: where a run's events are told — a command on the host, a webhook, or both — from
//! the manifest and from the user-level config (`~/.config/eden/config.toml`), which applies to
//! every run. A webhook's URL is a secret (one that carries its own token often is): it may
//! come from a `${VAR}`, is registered for redaction at once, and is shown as its origin only.

use super::load::{KeyPath, Source};
use super::schema::{NotifyOn, NotifySection};
use crate::error::Error;
use crate::redact::Secret;
use crate::values::{BaseUrl, Duration};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// How long one delivery may take unless `timeout` says otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Every `[notify]` that applies to a run, the manifest's first.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct NotifyPlan {
    pub(crate) targets: Vec<NotifyTarget>,
}

/// One `[notify]` section, resolved.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NotifyTarget {
    /// Where it was written: `manifest`, or the config file's path.
    pub(crate) from: String,
    pub(crate) command: Option<String>,
    pub(crate) webhook: Option<Webhook>,
    pub(crate) on: Vec<NotifyOn>,
    pub(crate) timeout: Duration,
}

/// A webhook's URL: sent to in full, shown as its scheme and host only.
#[derive(Debug, Clone)]
pub(crate) struct Webhook {
    pub(crate) url: Secret,
    pub(crate) shown: String,
}

impl Serialize for Webhook {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.shown)
    }
}

/// The user-level config's path: `$XDG_CONFIG_HOME/eden/config.toml`, else
/// `$HOME/.config/eden/config.toml`.
pub(crate) fn user_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    Some(crate::layout::user_config_dir(env)?.join("config.toml"))
}

/// The manifest's `[notify]` and the user config's, resolved; `process_env` finds the config,
/// `host_env` expands `${VAR}`s.
pub(crate) fn resolve_notify(
    section: Option<&NotifySection>,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
    process_env: &dyn Fn(&str) -> Option<String>,
) -> Result<NotifyPlan, Error> {
    let mut targets = Vec::new();
    if let Some(section) = section {
        targets.extend(resolve_target(section, "manifest", source, host_env)?);
    }
    if let Some(path) = user_config_path(process_env) {
        if let Some((config, config_source)) = super::load::load_user_config(&path)? {
            if let Some(section) = &config.notify {
                let from = path.display().to_string();
                targets.extend(resolve_target(section, &from, &config_source, host_env)?);
            }
        }
    }
    Ok(NotifyPlan { targets })
}

/// One section: something to tell, events to tell, a timeout that is one. `None` when `eden
/// doctor` found its webhook's variable unset (and noted it).
fn resolve_target(
    section: &NotifySection,
    from: &str,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<NotifyTarget>, Error> {
    let path = KeyPath::parse("notify");
    let command = match &section.command {
        Some(command) if command.trim().is_empty() => {
            return Err(source.error_at(&path.child("command"), "`notify.command` is empty").with_hint(
                "give a command line, e.g. `command = \"notify-send eden \\\"$EDEN_EVENT\\\"\"`, or leave the key out",
            ));
        }
        command => command.clone(),
    };
    let webhook = match &section.webhook {
        Some(written) => match webhook(written, &path.child("webhook"), source, host_env)? {
            Some(webhook) => Some(webhook),
            None => return Ok(None),
        },
        None => None,
    };
    if command.is_none() && webhook.is_none() {
        return Err(source
            .error_at_key(&path, "`[notify]` names neither a `command` nor a `webhook`: there is nowhere to tell")
            .with_hint("add `command = \"...\"` (run with the event on stdin) or `webhook = \"https://...\"`"));
    }
    let mut on = section.on.clone().unwrap_or_else(|| NotifyOn::ALL.to_vec());
    if on.is_empty() {
        return Err(source
            .error_at(&path.child("on"), "`notify.on` is empty: nothing would be told")
            .with_hint(format!("name events from: {}; or leave `on` out for all of them", names())));
    }
    on.sort();
    on.dedup();
    // A zero duration is refused as the manifest is read.
    let timeout = section.timeout.unwrap_or(DEFAULT_TIMEOUT);
    Ok(Some(NotifyTarget { from: from.to_owned(), command, webhook, on, timeout }))
}

fn names() -> String {
    NotifyOn::ALL.iter().map(|on| on.as_str()).collect::<Vec<_>>().join(", ")
}

/// The webhook's URL: `${VAR}`s expanded, `https://` (or `http://` to this machine), registered
/// as a secret.
fn webhook(
    written: &str,
    at: &KeyPath,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Webhook>, Error> {
    use super::env_plan::{expand_env, NotSet};
    let url = match (expand_env(written, host_env), &source.unset) {
        (Ok(url), _) => url,
        (Err(NotSet(missing)), Some(unset)) => {
            unset.borrow_mut().push(missing);
            return Ok(None);
        }
        (Err(NotSet(missing)), None) => {
            return Err(source
                .error_at(at, format!("`notify.webhook` refers to `${{{missing}}}`, which is not set"))
                .with_hint(format!("export `{missing}` before running eden, or add it to `.eden/.env`")))
        }
    };
    let from_var = url != written;
    let shown_as = if from_var { "its value" } else { "it" };
    let Some(parsed) = BaseUrl::parse(url.trim()).filter(|_| !url.trim().is_empty()) else {
        return Err(source
            .error_at(
                at,
                format!("`notify.webhook` is not an `https://` URL ({shown_as} begins `{}`)", scheme_of(&url)),
            )
            .with_hint("e.g. `webhook = \"https://hooks.example.com/...\"`, or `webhook = \"${EDEN_WEBHOOK}\"`"));
    };
    let loopback = matches!(parsed.host.as_str(), "127.0.0.1" | "localhost" | "::1");
    if !parsed.tls && !loopback {
        return Err(source
            .error_at(
                at,
                format!("`notify.webhook` is plain http to `{}`: the events would travel in the clear", parsed.host),
            )
            .with_hint("use the hook's https URL (plain http is for this machine only: 127.0.0.1, localhost, ::1)"));
    }
    crate::redact::register([url.trim().to_owned()]);
    let shown = format!("{}://{}/…", if parsed.tls { "https" } else { "http" }, parsed.authority());
    Ok(Some(Webhook { url: Secret(url.trim().to_owned()), shown }))
}

/// What a URL begins with, for an error that must not show the rest (which may be a secret).
fn scheme_of(url: &str) -> String {
    let head: String = url.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')).collect();
    match url[head.len()..].starts_with("://") {
        true => format!("{head}://"),
        false => url.chars().take(4).collect::<String>() + "…",
    }
}

/// Where a target's warnings say it came from.
pub(crate) fn origin(target: &NotifyTarget) -> String {
    match target.from.as_str() {
        "manifest" => "the manifest's `[notify]`".to_owned(),
        path => format!("`[notify]` in `{}`", Path::new(path).display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str, env: &[(&str, &str)]) -> Result<NotifyPlan, String> {
        let (manifest, source) = super::super::load::from_text(text)?;
        let lookup = |name: &str| env.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned());
        resolve_notify(manifest.notify.as_ref(), &source, &lookup, &lookup).map_err(|err| err.message)
    }

    #[test]
    fn a_section_resolves_with_its_defaults_and_its_url_shown_as_its_host() {
        let plan = resolve(
            "prompt = \"x\"\n[notify]\ncommand = \"true\"\nwebhook = \"${HOOK}\"\n",
            &[("HOOK", "https://hooks.example.com/services/T000/B000/XXXXSECRET")],
        )
        .unwrap();
        let target = &plan.targets[0];
        assert_eq!(target.on, NotifyOn::ALL.to_vec());
        assert_eq!(target.timeout, DEFAULT_TIMEOUT);
        let webhook = target.webhook.as_ref().unwrap();
        assert_eq!(webhook.shown, "https://hooks.example.com/…");
        assert!(!serde_json::to_string(&plan).unwrap().contains("XXXXSECRET"));
    }

    #[test]
    fn mistakes_are_located_and_never_show_the_url() {
        let cases = [
            ("[notify]\non = [\"failed\"]\n", "plan.toml:1:2: `[notify]` names neither"),
            ("[notify]\ncommand = \" \"\n", "plan.toml:2:11: `notify.command` is empty"),
            ("[notify]\ncommand = \"x\"\non = []\n", "plan.toml:3:6: `notify.on` is empty"),
            ("[notify]\nwebhook = \"${NOPE}\"\n", "refers to `${NOPE}`, which is not set"),
            ("[notify]\nwebhook = \"http://hooks.example.com/SECRETPATH\"\n", "plain http to `hooks.example.com`"),
            ("[notify]\nwebhook = \"ftp://x/SECRETPATH\"\n", "begins `ftp://`"),
            (
                "[notify]\ncommand = \"x\"\ntimeout = \"0s\"\n",
                "plan.toml:3:11: `notify.timeout`: duration `0s` is zero",
            ),
        ];
        for (text, expected) in cases {
            let err = resolve(text, &[]).expect_err(text);
            assert!(err.contains(expected), "{text:?}: {err}");
            assert!(!err.contains("SECRETPATH"), "{err}");
        }
        let unknown = resolve("[notify]\ncommand = \"x\"\non = [\"done\"]\n", &[]).unwrap_err();
        assert!(unknown.contains("plan.toml:3:7: `notify.on[0]` has an unknown value `done`"), "{unknown}");
    }

    #[test]
    fn plain_http_is_for_this_machine_and_the_user_config_adds_a_target() {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join(".config/eden");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), "[notify]\ncommand = \"cat\"\non = [\"failed\", \"failed\"]\n")
            .unwrap();
        let home_str = home.path().to_str().unwrap();
        let plan = resolve("[notify]\nwebhook = \"http://127.0.0.1:9/hook\"\n", &[("HOME", home_str)]).unwrap();
        assert_eq!(plan.targets.len(), 2);
        assert_eq!(plan.targets[0].from, "manifest");
        assert_eq!(plan.targets[1].on, [NotifyOn::Failed]);
        assert_eq!(plan.targets[1].command.as_deref(), Some("cat"));
        std::fs::write(config.join("config.toml"), "[notify]\ncommand = \"cat\"\nwhen = 1\n").unwrap();
        let err = resolve("prompt = \"x\"\n", &[("HOME", home_str)]).unwrap_err();
        assert!(err.contains("config.toml:3:1") && err.contains("unknown field `when`"), "{err}");
    }
}
