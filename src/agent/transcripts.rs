//! Where an agent keeps the transcript of a session, as its spec row says (`transcripts`), and
//! what eden asks of that store: find a session's transcript, find the session its own UI
//! started (it reports no id), and where a session moved to another working directory goes.
//! Each agent's own layout is in its file (`claude.rs`: `projects/<slug>/<id>.jsonl`, ...);
//! this is the part they share, and the only way the rest of eden asks.

use super::facts::Store;
pub(crate) use super::facts::{dirs, files, plain_session_id, Found, Located, NotFound, Transcripts};
use super::AgentKind;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The agent's state folder (the first of its `state_dirs`), for an environment.
fn state_dir(kind: AgentKind, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    kind.spec().state_dirs.first().map(|dir| dir.resolve(env))
}

/// The store of an agent of `kind` that keeps files, and its state folder for `env`.
fn store(kind: AgentKind, env: &dyn Fn(&str) -> Option<String>) -> Option<(Store, PathBuf)> {
    match kind.spec().transcripts {
        Transcripts::Files(store) => Some((store, state_dir(kind, env)?)),
        Transcripts::None | Transcripts::Export(_) => None,
    }
}

/// Find the transcript of `session_id`, written by an agent of `kind` that ran in `cwd` with
/// `env` as its environment.
pub(crate) fn locate(
    kind: AgentKind,
    session_id: &str,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Located, NotFound> {
    if !plain_session_id(session_id) {
        return Err(NotFound { tried: format!("(the session id `{session_id}` is not one eden uses in a path)") });
    }
    match kind.spec().transcripts {
        Transcripts::None => Ok(Located::Nothing),
        Transcripts::Export(args) => Ok(Located::Export(args)),
        Transcripts::Files(_) => match store(kind, env) {
            Some((store, state)) => (store.locate)(&state, session_id, cwd).map(Located::File),
            None => Ok(Located::Nothing),
        },
    }
}

/// The session an agent of `kind` started in `cwd` since `since`, when it reports none (its own
/// UI in `eden interactive`): the newest transcript of that directory in its store, and its id.
pub(crate) fn newest_session(
    kind: AgentKind,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    since: SystemTime,
) -> Option<(String, PathBuf)> {
    let (store, state) = store(kind, env)?;
    (store.newest)(&state, cwd, since).filter(|(id, _)| plain_session_id(id))
}

/// Whether sessions of `kind` can be moved to another working directory.
pub(crate) fn transferable(kind: AgentKind) -> bool {
    matches!(kind.spec().transcripts, Transcripts::Files(Store { transfer: Some(_), .. }))
}

/// Where a session of `kind` moved to `cwd` is written, its transcript named `file_name`.
pub(crate) fn transfer_target(
    kind: AgentKind,
    session_id: &str,
    cwd: &Path,
    file_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    let (store, state) = store(kind, env)?;
    Some((store.transfer?)(&state, session_id, cwd, file_name))
}

/// Whether an agent of `kind` keeps transcript files, and the one place it resumes `session_id`
/// from in `cwd` when it looks nowhere else: `None` when it keeps no files; `Some(None)` when
/// it finds a session by its id anywhere in its store.
pub(crate) fn resumes_from(
    kind: AgentKind,
    session_id: &str,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Option<PathBuf>> {
    let (store, state) = store(kind, env)?;
    Some(store.resumes_from.map(|place| place(&state, session_id, cwd)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with<'a>(pairs: &'a [(&'a str, &'a Path)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v.display().to_string())
    }

    #[test]
    fn session_ids_with_path_characters_are_not_used() {
        assert!(plain_session_id("94113680-5d7e-4fed-bcfe-07b6d0cdda4f"));
        assert!(plain_session_id("ses_4f2a"));
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(!plain_session_id(bad), "{bad}");
        }
    }

    #[test]
    fn each_agent_is_found_where_it_writes() {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let cwd = temp.path().join("work dir");
        std::fs::create_dir_all(&cwd).unwrap();
        let id = "0190-abc";
        let write = |path: PathBuf, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        };
        let pairs = [("HOME", home.as_path())];
        let env = env_with(&pairs);
        let file = |main| Located::File(Found::alone(main));

        let claude = write(
            home.join(".claude/projects").join(super::super::claude::slug(&cwd)).join(format!("{id}.jsonl")),
            "{}\n",
        );
        let sub = write(claude.with_extension("").join("subagents/agent-1.jsonl"), "{}\n");
        assert_eq!(
            locate(AgentKind::ClaudeCode, id, &cwd, &env).unwrap(),
            Located::File(Found { main: claude.clone(), subagents: vec![sub] })
        );
        // Elsewhere (a cut slug, another working directory): found by the id.
        std::fs::rename(claude.parent().unwrap(), home.join(".claude/projects/-cut-1x2y")).unwrap();
        let Located::File(found) = locate(AgentKind::ClaudeCode, id, &cwd, &env).unwrap() else { panic!() };
        assert_eq!(found.main, home.join(format!(".claude/projects/-cut-1x2y/{id}.jsonl")));

        let meta = format!("{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\"}}}}\n");
        write(home.join(format!(".codex/sessions/2026/11/22/rollout-2026-11-22T10-00-00-{id}.jsonl")), "{}\n");
        let codex =
            write(home.join(format!(".codex/sessions/2026/11/23/rollout-2026-11-23T10-00-00-{id}.jsonl")), &meta);
        assert_eq!(locate(AgentKind::Codex, id, &cwd, &env).unwrap(), file(codex));

        let pi = write(home.join(format!(".pi/agent/sessions/--work-dir--/2026-11-23T10-00-00_{id}.jsonl")), "{}\n");
        assert_eq!(locate(AgentKind::Pi, id, &cwd, &env).unwrap(), file(pi));

        let copilot = write(home.join(format!(".copilot/session-state/{id}/events.jsonl")), "{}\n");
        assert_eq!(locate(AgentKind::Copilot, id, &cwd, &env).unwrap(), file(copilot));

        // The variable the agent reads wins over HOME.
        let elsewhere = temp.path().join("claude-config");
        let pairs = [("HOME", home.as_path()), ("CLAUDE_CONFIG_DIR", elsewhere.as_path())];
        let env = env_with(&pairs);
        let missing = locate(AgentKind::ClaudeCode, "other", &cwd, &env).unwrap_err();
        assert!(missing.tried.starts_with(&elsewhere.join("projects").display().to_string()), "{}", missing.tried);

        assert_eq!(locate(AgentKind::Opencode, id, &cwd, &env).unwrap(), Located::Export(&["export"]));
        assert_eq!(locate(AgentKind::Cursor, id, &cwd, &env).unwrap(), Located::Nothing);
        assert!(locate(AgentKind::ClaudeCode, "../../etc/passwd", &cwd, &env).is_err());
    }

    #[test]
    fn the_session_an_agents_own_ui_started_is_its_newest_there() {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let cwd = temp.path().join("wt");
        std::fs::create_dir_all(&cwd).unwrap();
        let pairs = [("HOME", home.as_path())];
        let env = env_with(&pairs);
        let since = SystemTime::now() - std::time::Duration::from_secs(5);
        let folder = home.join(format!(".pi/agent/sessions/{}", super::super::pi::folder(&cwd)));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("2026-11-27T10-00-00_s-9.jsonl"), "{}\n").unwrap();
        let (id, path) = newest_session(AgentKind::Pi, &cwd, &env, since).unwrap();
        assert_eq!((id.as_str(), path), ("s-9", folder.join("2026-11-27T10-00-00_s-9.jsonl")));
        assert!(
            newest_session(AgentKind::Pi, &cwd, &env, SystemTime::now() + std::time::Duration::from_secs(60)).is_none()
        );
        assert!(newest_session(AgentKind::Opencode, &cwd, &env, since).is_none());
        assert!(transferable(AgentKind::ClaudeCode) && transferable(AgentKind::Codex) && transferable(AgentKind::Pi));
        assert!(!transferable(AgentKind::Copilot) && !transferable(AgentKind::Opencode));
    }
}
