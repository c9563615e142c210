//! Moving a session to another working directory: the transcript copied into the agent's own
//! store where the agent looks for sessions of that directory, with every absolute path under
//! the old directory rewritten to the new one, so the agent can resume it there. Used by
//! `eden sessions transfer` and before a run that resumes a session Claude Code would not find.

use super::capture::{self, Located};
use crate::agent::AgentKind;
use crate::error::Error;
use std::path::{Path, PathBuf};

/// What a transfer wrote.
#[derive(Debug)]
pub(crate) struct Transferred {
    pub(crate) path: PathBuf,
}

/// The agents whose sessions can be moved, and how each finds one.
pub(crate) const TRANSFERABLE: [AgentKind; 3] = [AgentKind::ClaudeCode, AgentKind::Codex, AgentKind::Pi];

/// The working directory a transcript says it ran in: Claude's `cwd`, Codex's
/// `session_meta.payload.cwd`, pi's `session.cwd`, Copilot's `session.start` context.
pub(crate) fn transcript_cwd(text: &str) -> Option<String> {
    text.lines().take(200).find_map(|line| {
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        ["/cwd", "/payload/cwd", "/data/context/cwd"]
            .iter()
            .find_map(|pointer| value.pointer(pointer).and_then(|v| v.as_str()).map(str::to_owned))
    })
}

/// Replace `old` by `new` wherever it stands as a whole path or a path's leading part (`old` then
/// the end of the text or a character that cannot continue a file name in JSON: `/`, `"`, `\`,
/// whitespace, `'`, `:`, `,`). `/a/wt` is not rewritten inside `/a/wt2`.
pub(crate) fn rewrite_paths(text: &str, old: &str, new: &str) -> String {
    if old.is_empty() || old == new {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(old) {
        let after = &rest[at + old.len()..];
        let whole = after
            .chars()
            .next()
            .is_none_or(|c| matches!(c, '/' | '"' | '\\' | '\'' | ':' | ',' | ')') || c.is_whitespace());
        out.push_str(&rest[..at]);
        out.push_str(if whole { new } else { old });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Where the agent of `kind` looks for `session_id` when it runs in `cwd`, and whether a file
/// there counts: Claude Code only looks in the project folder of its working directory; Codex,
/// pi and Copilot find a session by its id wherever it is in their store.
pub(crate) fn expected_path(
    kind: AgentKind,
    session_id: &str,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    let state = capture::state_dir(kind, env)?;
    Some(match kind {
        AgentKind::ClaudeCode => {
            state.join("projects").join(capture::claude_slug(cwd)).join(format!("{session_id}.jsonl"))
        }
        AgentKind::Codex => state.join("sessions"),
        AgentKind::Pi => state.join("sessions").join(capture::pi_folder(cwd)),
        AgentKind::Copilot => state.join("session-state").join(session_id),
        _ => return None,
    })
}

/// Copy `transcript` (with `subagents`) of `session_id` into the store of an agent of `kind`
/// for `new_cwd`, rewriting `old_cwd` to it. Refuses to overwrite unless `force`.
pub(crate) fn transfer(
    kind: AgentKind,
    session_id: &str,
    transcript: &Path,
    subagents: &[PathBuf],
    new_cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    force: bool,
) -> Result<Transferred, Error> {
    if !TRANSFERABLE.contains(&kind) {
        return Err(Error::usage(format!("sessions of `{}` cannot be transferred", kind.as_str())).with_hint(
            "claude-code, codex and pi sessions can; opencode keeps sessions in its database (`opencode import` the export), copilot in its own session state",
        ));
    }
    if !capture::plain_session_id(session_id) {
        return Err(Error::usage(format!("the session id `{session_id}` is not one eden uses in a path")));
    }
    let text = fs_err::read_to_string(transcript).map_err(|err| {
        Error::usage(format!("cannot read the transcript `{}`", transcript.display()))
            .with_source(err)
            .with_hint("it may have been removed (`eden clean --older-than`)")
    })?;
    let old_cwd = transcript_cwd(&text);
    let new = new_cwd.to_string_lossy();
    let rewrite = |text: &str| old_cwd.as_deref().map_or_else(|| text.to_owned(), |old| rewrite_paths(text, old, &new));
    let store = expected_path(kind, session_id, new_cwd, env).expect("transferable kinds have a store");
    let name = transcript.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let path = match kind {
        AgentKind::ClaudeCode => store,
        AgentKind::Codex => {
            // Codex finds a rollout by its id anywhere under `sessions/`: keep its own file name
            // (captured copies are renamed, so rebuild it), filed under today.
            let today = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
            let (date, time) = (&today[..10], today[11..19].replace(':', "-"));
            let file = if name.starts_with("rollout-") {
                name.clone()
            } else {
                format!("rollout-{date}T{time}-{session_id}.jsonl")
            };
            store.join(&date[..4]).join(&date[5..7]).join(&date[8..10]).join(file)
        }
        AgentKind::Pi => {
            let file = if name.contains(&format!("_{session_id}")) {
                name.clone()
            } else {
                let now = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
                format!("{}_{session_id}.jsonl", now.trim_end_matches('Z').replace([':', '.'], "-"))
            };
            store.join(file)
        }
        _ => unreachable!("checked above"),
    };
    if path.exists() && !force {
        return Err(Error::usage(format!("`{}` exists already", path.display()))
            .with_hint("the agent has this session there already; `--force` overwrites it"));
    }
    write(&path, &rewrite(&text))?;
    if kind == AgentKind::ClaudeCode {
        for sub in subagents {
            let target = path.with_extension("").join("subagents").join(sub.file_name().unwrap_or_default());
            let text = fs_err::read_to_string(sub)
                .map_err(|err| Error::usage(format!("cannot read `{}`", sub.display())).with_source(err))?;
            write(&target, &rewrite(&text))?;
        }
    }
    Ok(Transferred { path })
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    let written = path.parent().map_or(Ok(()), fs_err::create_dir_all).and_then(|()| fs_err::write(path, text));
    written.map_err(|err| Error::usage(format!("cannot write `{}`", path.display())).with_source(err))
}

/// Where a session to resume without a sandbox is, when it is not where the agent will look
/// for it in `cwd`: Claude Code resumes sessions of its working directory only, so one kept
/// under another directory must be copied (`transfer`) first. `None`: it is in place, or the
/// agent finds sessions by id wherever they are. A session found nowhere is the error.
pub(crate) fn find_resumable(
    kind: AgentKind,
    session_id: &str,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<(PathBuf, Vec<PathBuf>)>, Error> {
    let Some(expected) = expected_path(kind, session_id, cwd, env) else { return Ok(None) };
    match capture::locate(kind, session_id, cwd, env) {
        Ok(Located::File { main, subagents }) if kind == AgentKind::ClaudeCode && main != expected => {
            Ok(Some((main, subagents)))
        }
        Ok(_) => Ok(None),
        Err(not_found) => {
            let tried = if kind == AgentKind::ClaudeCode { expected.display().to_string() } else { not_found.tried };
            Err(Error::usage(format!(
                "session `{session_id}` to resume is not where {} looks for it: {tried}",
                kind.as_str()
            ))
            .with_hint(
                "check the id (`eden sessions list --json` shows each run's `sessions`), or remove `agent.resume`",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_rewritten_whole_only() {
        let text = r#"{"cwd":"/a/wt","file":"/a/wt/src/x.rs","other":"/a/wt2/y","end":"/a/wt"}"#;
        assert_eq!(
            rewrite_paths(text, "/a/wt", "/b/new"),
            r#"{"cwd":"/b/new","file":"/b/new/src/x.rs","other":"/a/wt2/y","end":"/b/new"}"#
        );
        assert_eq!(rewrite_paths("cd /a/wt && ls", "/a/wt", "/n"), "cd /n && ls");
    }

    #[test]
    fn claude_sessions_of_another_directory_are_copied_where_it_resumes_them() {
        let temp = tempfile::tempdir().unwrap();
        let state = temp.path().join("claude");
        let old = state.join("projects/-old-wt");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("s-1.jsonl"), "{\"cwd\":\"/old/wt\",\"file\":\"/old/wt/a.rs\"}\n").unwrap();
        let state_path = state.display().to_string();
        let env = move |key: &str| (key == "CLAUDE_CONFIG_DIR").then(|| state_path.clone());
        let cwd = Path::new("/new/wt");
        let (main, subagents) = find_resumable(AgentKind::ClaudeCode, "s-1", cwd, &env).unwrap().unwrap();
        assert_eq!(main, old.join("s-1.jsonl"));
        // Finding it copies nothing: that is the run's, once it has a workspace.
        assert!(!state.join("projects/-new-wt").exists());
        transfer(AgentKind::ClaudeCode, "s-1", &main, &subagents, cwd, &env, false).unwrap();
        let copied = std::fs::read_to_string(state.join("projects/-new-wt/s-1.jsonl")).unwrap();
        assert_eq!(copied, "{\"cwd\":\"/new/wt\",\"file\":\"/new/wt/a.rs\"}\n");
        // Now where Claude looks: nothing more to do.
        assert!(find_resumable(AgentKind::ClaudeCode, "s-1", cwd, &env).unwrap().is_none());
        let missing = find_resumable(AgentKind::ClaudeCode, "s-2", cwd, &env).unwrap_err();
        assert!(missing.message.contains("projects/-new-wt/s-2.jsonl"), "{}", missing.message);
        assert!(find_resumable(AgentKind::Codex, "s-3", cwd, &env).is_err());
        assert!(find_resumable(AgentKind::Opencode, "s-4", cwd, &env).unwrap().is_none());
    }

    #[test]
    fn each_agents_cwd_is_read_from_its_transcript() {
        assert_eq!(transcript_cwd("{\"type\":\"x\"}\n{\"cwd\":\"/c\"}\n").as_deref(), Some("/c"));
        assert_eq!(transcript_cwd("{\"type\":\"session_meta\",\"payload\":{\"cwd\":\"/x\"}}").as_deref(), Some("/x"));
        assert_eq!(
            transcript_cwd("{\"type\":\"session.start\",\"data\":{\"context\":{\"cwd\":\"/y\"}}}").as_deref(),
            Some("/y")
        );
        assert_eq!(capture::pi_folder(Path::new("/tmp/a b/c")), "--tmp-a b-c--");
    }
}
