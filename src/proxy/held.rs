//! A run's held keys while it runs: one proxy per upstream (a socket each in the run's proxy
//! folder), a placeholder per key, and the agent's command turned into one that goes through
//! the relay with placeholders for keys.

use super::{Audit, HeldKey, Proxy};
use crate::agent::credentials::ConfigFile;
use crate::error::Error;
use crate::manifest::held_plan::Held;
use crate::process::ProcessBuilder;
use std::path::{Path, PathBuf};

pub(crate) struct Holder {
    /// The proxy folder as the sandbox sees it.
    inside: PathBuf,
    /// Each upstream's proxy and its socket's name.
    proxies: Vec<(String, Proxy, String)>,
    /// Key variable (per upstream) to its placeholder.
    placeholders: Vec<(String, String, String)>,
    /// Configuration templates (`ConfigFile::template`) and their files' names in the folder.
    templates: Vec<(String, String)>,
}

impl Holder {
    /// Proxies for what the steps hold, listening in `dir` (which the sandbox sees as `inside`).
    pub(crate) fn start(steps: &[&Held], dir: &Path, inside: &Path) -> Result<Holder, Error> {
        let failed = |why: String| Error::sandbox(format!("cannot start the proxy that holds the agent's keys: {why}"));
        fs_err::create_dir_all(dir).map_err(|err| failed(err.to_string()))?;
        let mut upstreams: Vec<(String, Vec<HeldKey>)> = Vec::new();
        let mut placeholders = Vec::new();
        for held in steps {
            let Held::Keys { upstream, keys, .. } = held else { continue };
            let at = match upstreams.iter().position(|(known, _)| known == upstream) {
                Some(at) => at,
                None => {
                    upstreams.push((upstream.clone(), Vec::new()));
                    upstreams.len() - 1
                }
            };
            for key in keys {
                if placeholders.iter().any(|(u, var, _): &(String, String, String)| u == upstream && *var == key.var) {
                    continue;
                }
                let random = crate::values::random_hex(24).map_err(|err| failed(err.to_string()))?;
                let placeholder = format!("eden-held-{random}");
                upstreams[at].1.push(HeldKey {
                    header: key.header,
                    placeholder: placeholder.clone(),
                    value: key.value.clone(),
                });
                placeholders.push((upstream.clone(), key.var.clone(), placeholder));
            }
        }
        let mut templates: Vec<(String, String)> = Vec::new();
        for held in steps {
            let Held::Keys { config: Some(config), .. } = held else { continue };
            if templates.iter().all(|(known, _)| *known != config.template) {
                let name = format!("{}.{}", templates.len(), config.file.unwrap_or(config.var));
                fs_err::write(dir.join(&name), &config.template).map_err(|err| failed(err.to_string()))?;
                templates.push((config.template.clone(), name));
            }
        }
        let mut proxies = Vec::new();
        for (n, (upstream, keys)) in upstreams.into_iter().enumerate() {
            let parsed = super::upstream::Upstream::parse(&upstream)
                .ok_or_else(|| failed(format!("`{upstream}` is not a URL")))?;
            let name = format!("{n}.sock");
            let proxy = Proxy::start(&dir.join(&name), parsed, keys).map_err(|err| failed(err.message))?;
            proxies.push((upstream, proxy, name));
        }
        Ok(Holder { inside: inside.to_owned(), proxies, placeholders, templates })
    }

    /// `command` (the agent's, for a step that holds `held`) with placeholders for its keys, run
    /// behind the relay (`eden`, as the sandbox runs it) that points its base URL at the proxy.
    pub(crate) fn wrap(&self, held: &Held, command: ProcessBuilder, eden: &Path) -> ProcessBuilder {
        let Held::Keys { upstream, base_url_var, base_url_arg, config, login, keys, .. } = held else {
            return command;
        };
        let Some((_, _, socket)) = self.proxies.iter().find(|(known, _, _)| known == upstream) else { return command };
        let mut command = command;
        // A login's placeholder is in its file (`hold_login`), not in a variable.
        for key in keys.iter().filter(|key| login.as_ref().is_none_or(|login| key.var != login.file)) {
            let placeholder = self.placeholders.iter().find(|(u, var, _)| u == upstream && *var == key.var);
            if let Some((_, _, placeholder)) = placeholder {
                command = command.env(&key.var, placeholder);
            }
        }
        if let Some(var) = base_url_var {
            command = command.env_remove(var);
        }
        // An option that names the URL goes before the last argument (the prompt's `-`), the
        // relay's address in it once the relay knows its port.
        let mut args = command.get_args().to_vec();
        if let Some((option, value)) = base_url_arg {
            let at = args.len().saturating_sub(1);
            let value = value.replace("{url}", super::relay::URL_MARK);
            args.splice(at..at, [(*option).into(), value.into()]);
        }
        let program = command.program().to_owned();
        let mut relay_args: Vec<std::ffi::OsString> =
            vec![super::relay::RELAY_SUBCOMMAND.into(), self.inside.join(socket).into()];
        relay_args.extend(base_url_var.map(Into::into));
        // Configuration, made by the relay from the template in the proxy's folder: a file in
        // the agent's private folder (the variable's value, as the sandbox sees it), or the
        // variable's value.
        if let Some(config) = config {
            relay_args.extend(self.relay_config(config, &command));
        }
        relay_args.extend(["--".into(), program]);
        relay_args.extend(args);
        command.with_program(eden, relay_args)
    }

    /// The placeholder for `var` (a key's variable, or a login's file) on its way to `upstream`.
    pub(crate) fn placeholder(&self, upstream: &str, var: &str) -> Option<&str> {
        let found = self.placeholders.iter().find(|(u, known, _)| u == upstream && known == var);
        found.map(|(_, _, placeholder)| placeholder.as_str())
    }

    /// The relay's options that give the agent `config`.
    fn relay_config(&self, config: &ConfigFile, command: &ProcessBuilder) -> Vec<std::ffi::OsString> {
        let Some((_, name)) = self.templates.iter().find(|(template, _)| *template == config.template) else {
            return Vec::new();
        };
        let template = self.inside.join(name).into_os_string();
        let Some(file) = config.file else { return vec!["--env".into(), config.var.into(), template] };
        let folder = command.get_env().iter().find(|(key, _)| key == config.var).and_then(|(_, value)| value.clone());
        match folder {
            Some(folder) => vec!["--write".into(), std::path::Path::new(&folder).join(file).into(), template],
            None => Vec::new(),
        }
    }

    /// The requests the proxies answered since the last call.
    pub(crate) fn drain(&self) -> Vec<Audit> {
        self.proxies.iter().flat_map(|(_, proxy, _)| proxy.drain()).collect()
    }

    /// Is any request in flight?
    pub(crate) fn busy(&self) -> bool {
        self.proxies.iter().any(|(_, proxy, _)| proxy.busy())
    }

    /// The requests still in flight (the agent was stopped), each told once.
    pub(crate) fn in_flight(&self) -> Vec<Audit> {
        self.proxies.iter().flat_map(|(_, proxy, _)| proxy.in_flight()).collect()
    }
}
