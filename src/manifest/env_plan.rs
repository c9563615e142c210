//! `env` tables and `${VAR}` references: names checked, values expanded from the host
//! environment (and `.eden/.env`) into secrets.

use super::load::{KeyPath, Source};
use crate::error::Error;
use crate::redact::Secret;
use std::collections::BTreeMap;

/// An `env` table resolved: names checked, `${VAR}` references expanded from the host.
pub(crate) fn resolve_env(
    env: &BTreeMap<String, String>,
    path: &KeyPath,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, Secret>, Error> {
    let mut resolved = BTreeMap::new();
    for (key, value) in env {
        let key_path = path.child(key);
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(source
                .error_at_key(&key_path, format!("invalid environment variable name `{key}`"))
                .with_hint("names may not be empty or contain `=`"));
        }
        let value = match (expand_env(value, host_env), &source.unset) {
            (Ok(value), _) => value,
            (Err(NotSet(missing)), Some(unset)) => {
                unset.borrow_mut().push(missing);
                continue;
            }
            (Err(NotSet(missing)), None) => {
                return Err(source
                    .error_at(&key_path, format!("`{key_path}` refers to `${{{missing}}}`, which is not set"))
                    .with_hint(format!(
                        "export `{missing}` before running eden, add it to `.eden/.env`, or remove the reference"
                    )))
            }
        };
        resolved.insert(key.clone(), Secret(value));
    }
    Ok(resolved)
}

/// The names a value refers to with `${VAR}`.
pub(crate) fn env_references(value: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        names.push(&rest[start + 2..start + end]);
        rest = &rest[start + end + 1..];
    }
    names
}

/// A `${VAR}` reference to a variable that is not set: its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotSet(pub(crate) String);

/// Expand `${VAR}` references from the host environment; a missing one is the error.
pub(crate) fn expand_env(value: &str, host_env: &dyn Fn(&str) -> Option<String>) -> Result<String, NotSet> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + end];
        out.push_str(&rest[..start]);
        out.push_str(&host_env(name).ok_or_else(|| NotSet(name.to_owned()))?);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion() {
        let env = |name: &str| (name == "HOME_X").then(|| "/h".to_owned());
        assert_eq!(expand_env("a ${HOME_X}/b", &env).unwrap(), "a /h/b");
        assert_eq!(expand_env("${NOPE}", &env).unwrap_err(), NotSet("NOPE".into()));
        assert_eq!(expand_env("plain $X", &env).unwrap(), "plain $X");
    }
}
