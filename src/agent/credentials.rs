//! How eden holds an agent's provider key (`proxy`): where each CLI sends its key and how it is
//! pointed at another base URL, from its environment (`Fronting::Env`) or from its own
//! configuration (`Fronting::Config`, read by the agent's own file: `pi::front`,
//! `opencode::front`), and a login eden can hold in place of a key (`claude::login_token`).

use serde::Serialize;
use std::path::{Path, PathBuf};

/// How eden finds an agent's provider and points the agent at its proxy instead.
#[derive(Clone, Copy)]
pub(crate) enum Fronting {
    /// Its provider is in its environment, the same way for every run.
    Env(Credentials),
    /// Its provider is chosen by its model and its own configuration, which eden reads for the
    /// run and rewrites in the run's private copy of its folder.
    Config(fn(&FrontQuery<'_>) -> Result<ConfigFront, NotHeld>),
}

/// What a `Fronting::Config` agent's provider is chosen from.
pub(crate) struct FrontQuery<'a> {
    pub(crate) model: Option<&'a str>,
    pub(crate) extra_args: &'a [String],
    /// The agent's environment over this machine's.
    pub(crate) env: &'a EnvLookup<'a>,
    /// The person's state folders of the agent (its spec's `state_dirs`, each resolved and with
    /// its `share`), where its configuration is.
    pub(crate) folders: &'a [PathBuf],
    /// The repository's working tree, for a project's own configuration.
    pub(crate) project: Option<&'a Path>,
}

/// A provider found in an agent's configuration.
#[derive(Debug, Clone)]
pub(crate) struct ConfigFront {
    /// The variables that may hold its key, the first one set being the one the agent uses.
    pub(crate) key_vars: Vec<String>,
    pub(crate) header: CredentialHeader,
    pub(crate) upstream: String,
    /// The configuration that points the agent at the relay instead.
    pub(crate) config: ConfigFile,
}

/// In a configuration file's template, where the relay's URL goes once the relay knows its port.
pub(crate) const RELAY_URL_MARK: &str = "@eden-relay-url@";

/// Configuration eden gives the agent: `template` with the relay's URL where `RELAY_URL_MARK`
/// is, as the file `file` in the private folder `var` points at, or without a file as the value
/// of `var` itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ConfigFile {
    pub(crate) var: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) file: Option<&'static str>,
    #[serde(skip)]
    pub(crate) template: String,
}

/// How an agent CLI sends its provider key, and where to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Credentials {
    /// The variables that hold a key, and the header each goes in.
    pub(crate) keys: &'static [(&'static str, CredentialHeader)],
    /// The variable that sets the API's base URL.
    pub(crate) base_url: &'static str,
    /// The API's base URL when that variable is not set; `None`: without it the CLI talks to
    /// its own service with its own login, which eden does not hold.
    pub(crate) default_upstream: Option<&'static str>,
    /// An option and its value that point the CLI at a base URL (`{url}` in the value), for a
    /// CLI that reads it from its configuration rather than its environment; given before the
    /// command's last argument.
    pub(crate) base_url_arg: Option<(&'static str, &'static str)>,
    /// Why not, when the CLI's own configuration (in the person's state folder, given) points
    /// it at a provider eden would not know of: its key would go where eden does not send it.
    pub(crate) configured_elsewhere: fn(&Path) -> Option<String>,
    /// A login eden can hold when no key is set: a token in a file of its state folder.
    pub(crate) login: Option<Login>,
}

/// A login token the CLI keeps in a file of its state folder (`state_dirs[0]`), sent as
/// `Authorization: Bearer` to the same API as a key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Login {
    /// The file, in the state folder.
    pub(crate) file: &'static str,
    /// The token in the person's state folder (given): `Ok(None)` when not logged in, `Err` why
    /// it cannot be held.
    pub(crate) read: fn(&Path) -> Result<Option<String>, NotHeld>,
    /// Put the placeholder in place of the token in the run's private copy of the file (the
    /// folder, the placeholder).
    pub(crate) hold: fn(&Path, &str) -> std::io::Result<()>,
}

/// Why eden cannot hold an agent's key, in the person's terms: said in `--dry-run`'s `held` and
/// the record, or, with `sandbox.hold_keys = true`, as the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotHeld(pub(crate) String);

impl From<String> for NotHeld {
    fn from(why: String) -> Self {
        NotHeld(why)
    }
}

impl From<&str> for NotHeld {
    fn from(why: &str) -> Self {
        NotHeld(why.to_owned())
    }
}

impl std::fmt::Display for NotHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotHeld {}

/// An environment, looked up by name.
pub(crate) type EnvLookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// For a CLI whose provider is all in its environment.
pub(crate) fn nowhere_else(_: &Path) -> Option<String> {
    None
}

/// The header a key travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CredentialHeader {
    /// `x-api-key: KEY` (Anthropic).
    XApiKey,
    /// `Authorization: Bearer KEY`.
    Bearer,
    /// Either of those, as the CLI's provider type has it.
    Either,
}
