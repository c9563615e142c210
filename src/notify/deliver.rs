//! One notice to one target: the command run on the host with the notice on its stdin, the
//! webhook POSTed to (three tries, a while apart, when the failure may pass). What went wrong
//! comes back as warnings, which never show the webhook's URL beyond its host.

use super::notice::{plain, About};
use crate::manifest::notify_plan::{origin, NotifyTarget, Webhook};
use crate::manifest::schema::NotifyOn;
use crate::net::http::{Client, HttpError, Method, Request};
use crate::process::{ProcessBuilder, Stdin};
use std::time::Duration;

/// What of eden's environment a command gets: enough to find programs, a desktop's bus or a
/// terminal, and nothing else (eden's environment holds keys).
const PASSED: [&str; 14] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "TZ",
    "TMPDIR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
];

/// Why a delivery did not tell its notice, in words (never the webhook's URL).
#[derive(Debug)]
pub(super) struct NotTold(String);

impl std::fmt::Display for NotTold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Tries a webhook gets in all, and the waits between them.
const WEBHOOK_WAITS: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(2)];

/// Tell `body` (the notice as JSON) to `target`; the warnings of what failed.
pub(super) fn deliver(target: &NotifyTarget, event: NotifyOn, about: &About, body: &[u8]) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(command) = &target.command {
        if let Err(why) = run_command(command, target.timeout.0, event, about, body) {
            warnings.push(format!("{}: its command did not tell `{}`: {why}", origin(target), event.as_str()));
        }
    }
    if let Some(webhook) = &target.webhook {
        if let Err(why) = post(webhook, target.timeout.0, body) {
            warnings.push(format!(
                "{}: the webhook {} was not told `{}`: {why}",
                origin(target),
                webhook.shown,
                event.as_str()
            ));
        }
    }
    warnings
}

fn run_command(command: &str, timeout: Duration, event: NotifyOn, about: &About, body: &[u8]) -> Result<(), NotTold> {
    let mut builder = ProcessBuilder::new("sh").args(["-c", command]).cwd(&about.repository).env_clear();
    for name in PASSED.iter().copied().chain(lc_names().iter().map(String::as_str)) {
        if let Some(value) = std::env::var_os(name) {
            builder = builder.env(name, value);
        }
    }
    let builder = builder
        .env("EDEN_EVENT", event.as_str())
        .env("EDEN_RUN_ID", &about.run_id)
        .env("EDEN_NAME", &about.name)
        .env("EDEN_REPO", &about.repository)
        .stdin(Stdin::Bytes(body.to_vec()))
        .timeout(timeout);
    let started = std::time::Instant::now();
    let output = builder.output().map_err(|err| NotTold(format!("cannot start `sh`: {err}")))?;
    if output.status.success() {
        return Ok(());
    }
    if started.elapsed() >= timeout {
        let timeout = crate::values::format_duration(timeout);
        return Err(NotTold(format!("it ran past its timeout ({timeout}) and was stopped")));
    }
    let said = output.stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("");
    let code = output.status.code().map_or_else(|| "a signal".to_owned(), |code| format!("exit code {code}"));
    Err(NotTold(match said {
        "" => format!("it ended with {code}"),
        said => format!("it ended with {code}: {}", plain(said)),
    }))
}

/// The `LC_*` variables set in eden's environment.
fn lc_names() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.starts_with("LC_") && name != "LC_ALL")
        .collect()
}

fn post(webhook: &Webhook, timeout: Duration, body: &[u8]) -> Result<(), NotTold> {
    let tls = crate::net::connect::client_config(webhook.shown.starts_with("https"))
        .map_err(|err| NotTold(err.message.clone()))?;
    let client = Client::new(tls, timeout).max_body(64 << 10);
    let headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("User-Agent".to_owned(), format!("eden/{}", env!("CARGO_PKG_VERSION"))),
    ];
    let request = Request { method: Method::Post, url: &webhook.url.0, headers, body };
    let mut waits = WEBHOOK_WAITS.iter();
    loop {
        let error = match client.send(&request) {
            Ok(_) => return Ok(()),
            Err(error) => error,
        };
        let passing = match &error {
            HttpError::Status { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            HttpError::Connect { .. } | HttpError::Io(_) | HttpError::Timeout(_) | HttpError::Malformed(_) => true,
            _ => false,
        };
        let said = crate::redact::apply(&error.to_string()).into_owned();
        match waits.next().filter(|_| passing) {
            Some(wait) => std::thread::sleep(*wait),
            None if passing => return Err(NotTold(format!("{said} (three tries)"))),
            None => return Err(NotTold(said)),
        }
    }
}
