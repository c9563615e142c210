//! Finding the transcript an agent wrote for a session, and keeping a copy of it under
//! `.eden/sessions/<run-id>/`. Each agent keeps its transcripts in its own state folder
//! (`StateDir`), found through the same variables the agent reads:
//!
//! - Claude Code: `projects/<slug of the working directory>/<id>.jsonl`, with subagents in
//!   `<slug>/<id>/subagents/`; a slug over 200 characters is cut and hashed, so when the
//!   expected file is missing every project folder is searched for `<id>.jsonl`.
//! - Codex: `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, newest day first, its first line a
//!   `session_meta` naming the id.
//! - pi: `sessions/--<cwd>--/<time>_<id>.jsonl`.
//! - Copilot: `session-state/<id>/events.jsonl`.
//! - opencode keeps sessions in SQLite; its own `opencode export <id>` is the transcript (run by
//!   the orchestrator in the sandbox, where the agent ran).
//! - Cursor, `cli` and `simulated` write none: the run's log holds their stream.

use crate::agent::AgentKind;
use crate::record::TranscriptRecord;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Where an agent's transcript for one session is.
#[derive(Debug, PartialEq)]
pub(crate) enum Located {
    /// A file, with the transcripts of the subagents it started.
    File { main: PathBuf, subagents: Vec<PathBuf> },
    /// Only the agent's own CLI can produce it (`opencode export <id>`).
    Export,
    /// This agent writes no transcript of its own.
    Nothing,
}

/// A transcript that could not be found: where it was looked for.
#[derive(Debug)]
pub(crate) struct NotFound {
    pub(crate) tried: String,
}

/// Session ids become file names: only plain ones are used in paths.
pub(crate) fn plain_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The agent's state folder (the first of its `state_dirs`), for an environment.
pub(crate) fn state_dir(kind: AgentKind, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    kind.spec().state_dirs.first().map(|dir| dir.resolve(env))
}

/// Claude Code's project folder name for a working directory: every character outside
/// `[A-Za-z0-9]` becomes `-`.
pub(crate) fn claude_slug(cwd: &Path) -> String {
    let real = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    real.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// pi's session folder for a working directory: `--<path without its leading / , / as ->--`.
pub(crate) fn pi_folder(cwd: &Path) -> String {
    let path = cwd.to_string_lossy();
    format!("--{}--", path.trim_start_matches('/').replace('/', "-"))
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
    let Some(state) = state_dir(kind, env) else {
        return Ok(if kind == AgentKind::Opencode { Located::Export } else { Located::Nothing });
    };
    match kind {
        AgentKind::ClaudeCode => {
            let projects = state.join("projects");
            let expected = projects.join(claude_slug(cwd)).join(format!("{session_id}.jsonl"));
            let main = if expected.is_file() {
                Some(expected.clone())
            } else {
                dirs(&projects).into_iter().map(|dir| dir.join(format!("{session_id}.jsonl"))).find(|p| p.is_file())
            };
            let main = main.ok_or_else(|| NotFound {
                tried: format!("{} (and {}/*/{session_id}.jsonl)", expected.display(), projects.display()),
            })?;
            let subagents = main.with_extension("").join("subagents");
            let mut subagents: Vec<PathBuf> =
                files(&subagents).into_iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect();
            subagents.sort();
            Ok(Located::File { main, subagents })
        }
        AgentKind::Codex => {
            let sessions = state.join("sessions");
            let suffix = format!("-{session_id}.jsonl");
            let mut days: Vec<PathBuf> = Vec::new();
            for year in newest_first(dirs(&sessions)) {
                for month in newest_first(dirs(&year)) {
                    days.extend(newest_first(dirs(&month)));
                }
            }
            days.into_iter()
                .flat_map(files)
                .find(|path| {
                    let name = path.file_name().unwrap_or_default().to_string_lossy();
                    name.starts_with("rollout-") && name.ends_with(&suffix) && codex_meta_names(path, session_id)
                })
                .map(|main| Located::File { main, subagents: Vec::new() })
                .ok_or_else(|| NotFound { tried: format!("{}/YYYY/MM/DD/rollout-*{suffix}", sessions.display()) })
        }
        AgentKind::Pi => {
            let sessions = state.join("sessions");
            let suffix = format!("_{session_id}.jsonl");
            dirs(&sessions)
                .into_iter()
                .flat_map(files)
                .find(|path| path.file_name().unwrap_or_default().to_string_lossy().ends_with(&suffix))
                .map(|main| Located::File { main, subagents: Vec::new() })
                .ok_or_else(|| NotFound { tried: format!("{}/*/*{suffix}", sessions.display()) })
        }
        AgentKind::Copilot => {
            let dir = state.join("session-state");
            [dir.join(session_id).join("events.jsonl"), dir.join(format!("{session_id}.jsonl"))]
                .into_iter()
                .find(|path| path.is_file())
                .map(|main| Located::File { main, subagents: Vec::new() })
                .ok_or_else(|| NotFound { tried: dir.join(session_id).join("events.jsonl").display().to_string() })
        }
        AgentKind::Opencode => Ok(Located::Export),
        AgentKind::Cursor | AgentKind::Cli | AgentKind::Simulated => Ok(Located::Nothing),
    }
}

/// The session an agent of `kind` started in `cwd` since `since`, when it reports none (its own
/// UI in `eden interactive`): the newest transcript of that directory in its store, and its id.
/// opencode (SQLite), Cursor and the rest: none.
pub(crate) fn newest_session(
    kind: AgentKind,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    since: std::time::SystemTime,
) -> Option<(String, PathBuf)> {
    let state = state_dir(kind, env)?;
    let fresh = |path: &PathBuf| path.metadata().and_then(|m| m.modified()).ok().filter(|time| *time >= since);
    let newest = |paths: Vec<PathBuf>| -> Option<PathBuf> {
        paths.into_iter().filter_map(|path| fresh(&path).map(|time| (time, path))).max().map(|(_, path)| path)
    };
    let jsonl = |dir: &Path| -> Vec<PathBuf> {
        files(dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect()
    };
    let stem = |path: &Path| path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    let found = match kind {
        AgentKind::ClaudeCode => {
            let path = newest(jsonl(&state.join("projects").join(claude_slug(cwd))))?;
            (stem(&path), path)
        }
        AgentKind::Pi => {
            let path = newest(jsonl(&state.join("sessions").join(pi_folder(cwd))))?;
            let name = stem(&path);
            (name.rsplit_once('_').map_or(name.clone(), |(_, id)| id.to_owned()), path)
        }
        AgentKind::Copilot => {
            let events: Vec<PathBuf> =
                dirs(&state.join("session-state")).into_iter().map(|dir| dir.join("events.jsonl")).collect();
            let path = newest(events.into_iter().filter(|p| p.is_file()).collect())?;
            (path.parent()?.file_name()?.to_string_lossy().into_owned(), path)
        }
        AgentKind::Codex => {
            let mut days = Vec::new();
            let sessions = state.join("sessions");
            for year in newest_first(dirs(&sessions)).into_iter().take(1) {
                for month in newest_first(dirs(&year)).into_iter().take(1) {
                    days.extend(newest_first(dirs(&month)).into_iter().take(2));
                }
            }
            let path = newest(days.iter().flat_map(|day| jsonl(day)).collect())?;
            let text = std::fs::read_to_string(&path).ok()?;
            let meta: serde_json::Value = serde_json::from_str(text.lines().next()?).ok()?;
            let id = meta["payload"]["id"].as_str()?.to_owned();
            (id, path)
        }
        _ => return None,
    };
    plain_session_id(&found.0).then_some(found)
}

/// Codex's first line is `session_meta`; it must name the session (a file name alone could lie).
fn codex_meta_names(path: &Path, session_id: &str) -> bool {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(path) else { return false };
    let mut first = String::new();
    if std::io::BufReader::new(file).take(1 << 20).read_line(&mut first).is_err() {
        return false;
    }
    let Ok(meta) = serde_json::from_str::<serde_json::Value>(&first) else { return false };
    meta["type"] == "session_meta"
        && (meta["payload"]["id"] == session_id || meta["payload"]["session_id"] == session_id)
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map(|read| read.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default()
}

fn dirs(dir: &Path) -> Vec<PathBuf> {
    entries(dir).into_iter().filter(|p| p.is_dir()).collect()
}

fn files(dir: impl AsRef<Path>) -> Vec<PathBuf> {
    entries(dir.as_ref()).into_iter().filter(|p| p.is_file()).collect()
}

fn newest_first(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.reverse();
    paths
}

/// eden's own copy of a session's transcript, captured by an earlier run into `sessions`
/// (`.eden/sessions/<run>/<step>-<iteration>-<id>.jsonl`, the newest if several), with its
/// subagents' transcripts.
pub(crate) fn captured(sessions: &Path, session_id: &str) -> Option<(PathBuf, Vec<PathBuf>)> {
    if !plain_session_id(session_id) {
        return None;
    }
    let suffix = format!("-{session_id}.jsonl");
    let modified = |path: &PathBuf| path.metadata().and_then(|m| m.modified()).ok();
    let main = dirs(sessions)
        .into_iter()
        .flat_map(files)
        .filter(|path| path.file_name().unwrap_or_default().to_string_lossy().ends_with(&suffix))
        .max_by_key(modified)?;
    let mut subagents = files(main.with_extension("").join("subagents"));
    subagents.sort();
    Some((main, subagents))
}

/// The file name a captured transcript gets: `<step>-<iteration>-<session-id>`.
pub(crate) fn stem(step: &str, iteration: u32, session_id: &str) -> String {
    let step: String = step.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    format!("{step}-{iteration}-{session_id}")
}

/// Copy a located transcript (and its subagents') into `dir` as `<stem>.jsonl`, secrets
/// redacted like everything else eden writes. A transcript under `confined` (the run's private
/// state folders, which the agent wrote) is read without following any symlink there.
pub(crate) fn keep_file(
    main: &Path,
    subagents: &[PathBuf],
    dir: &Path,
    stem: &str,
    confined: &Path,
) -> std::io::Result<TranscriptRecord> {
    let path = dir.join(format!("{stem}.jsonl"));
    let bytes = store(main, &path, confined)?;
    let mut kept = Vec::new();
    for sub in subagents {
        let target = dir.join(stem).join("subagents").join(sub.file_name().unwrap_or_default());
        store(sub, &target, confined)?;
        kept.push(target);
    }
    Ok(TranscriptRecord { path, source: main.display().to_string(), bytes, subagents: kept })
}

/// The largest transcript eden copies.
const TRANSCRIPT_LIMIT: u64 = 1 << 30;

/// Keep `text` (an export) as the transcript `<stem>.json`.
pub(crate) fn keep_export(text: &[u8], dir: &Path, stem: &str, source: String) -> std::io::Result<TranscriptRecord> {
    let path = dir.join(format!("{stem}.json"));
    let bytes = write_redacted(&path, text)?;
    Ok(TranscriptRecord { path, source, bytes, subagents: Vec::new() })
}

fn store(from: &Path, to: &Path, confined: &Path) -> std::io::Result<u64> {
    let data = match from.strip_prefix(confined) {
        Ok(inside) => crate::safe_fs::Dir::open(confined)?.read(inside, TRANSCRIPT_LIMIT)?,
        Err(_) => fs_err::read(from)?,
    };
    write_redacted(to, &data)
}

fn write_redacted(path: &Path, data: &[u8]) -> std::io::Result<u64> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    let text = String::from_utf8_lossy(data);
    let redacted = crate::redact::apply(&text);
    let temporary = path.with_extension(format!("tmp.{}", std::process::id()));
    fs_err::write(&temporary, redacted.as_bytes())?;
    fs_err::rename(&temporary, path)?;
    Ok(redacted.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with<'a>(pairs: &'a [(&'a str, &'a Path)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v.display().to_string())
    }

    #[test]
    fn slugs_replace_everything_but_letters_and_digits() {
        assert_eq!(claude_slug(Path::new("/nonexistent/My Repo_v1.2")), "-nonexistent-My-Repo-v1-2");
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

        let claude = write(home.join(".claude/projects").join(claude_slug(&cwd)).join(format!("{id}.jsonl")), "{}\n");
        let sub = write(claude.with_extension("").join("subagents/agent-1.jsonl"), "{}\n");
        assert_eq!(
            locate(AgentKind::ClaudeCode, id, &cwd, &env).unwrap(),
            Located::File { main: claude.clone(), subagents: vec![sub] }
        );
        // Elsewhere (a cut slug, another working directory): found by the id.
        std::fs::rename(claude.parent().unwrap(), home.join(".claude/projects/-cut-1x2y")).unwrap();
        let Located::File { main, .. } = locate(AgentKind::ClaudeCode, id, &cwd, &env).unwrap() else { panic!() };
        assert_eq!(main, home.join(format!(".claude/projects/-cut-1x2y/{id}.jsonl")));

        let meta = format!("{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\"}}}}\n");
        write(home.join(format!(".codex/sessions/2026/11/22/rollout-2026-11-22T10-00-00-{id}.jsonl")), "{}\n");
        let codex =
            write(home.join(format!(".codex/sessions/2026/11/23/rollout-2026-11-23T10-00-00-{id}.jsonl")), &meta);
        assert_eq!(locate(AgentKind::Codex, id, &cwd, &env).unwrap(), Located::File { main: codex, subagents: vec![] });

        let pi = write(home.join(format!(".pi/agent/sessions/--work-dir--/2026-11-23T10-00-00_{id}.jsonl")), "{}\n");
        assert_eq!(locate(AgentKind::Pi, id, &cwd, &env).unwrap(), Located::File { main: pi, subagents: vec![] });

        let copilot = write(home.join(format!(".copilot/session-state/{id}/events.jsonl")), "{}\n");
        assert_eq!(
            locate(AgentKind::Copilot, id, &cwd, &env).unwrap(),
            Located::File { main: copilot, subagents: vec![] }
        );

        // The variable the agent reads wins over HOME.
        let elsewhere = temp.path().join("claude-config");
        let pairs = [("HOME", home.as_path()), ("CLAUDE_CONFIG_DIR", elsewhere.as_path())];
        let env = env_with(&pairs);
        let missing = locate(AgentKind::ClaudeCode, "other", &cwd, &env).unwrap_err();
        assert!(missing.tried.starts_with(&elsewhere.join("projects").display().to_string()), "{}", missing.tried);

        assert_eq!(locate(AgentKind::Opencode, id, &cwd, &env).unwrap(), Located::Export);
        assert_eq!(locate(AgentKind::Cursor, id, &cwd, &env).unwrap(), Located::Nothing);
        assert!(locate(AgentKind::ClaudeCode, "../../etc/passwd", &cwd, &env).is_err());
    }
}
