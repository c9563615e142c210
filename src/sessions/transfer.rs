//! Moving a session to another working directory: the transcript copied into the agent's own
//! store where the agent looks for sessions of that directory, with every absolute path under
//! the old directory rewritten to the new one, so the agent can resume it there. Used by
//! `eden sessions transfer` and before a run that resumes a session Claude Code would not find.

use crate::agent::transcripts::{self, Found, Located};
use crate::agent::AgentKind;
use crate::error::Error;
use std::path::{Path, PathBuf};

/// What a transfer wrote.
#[derive(Debug)]
pub(crate) struct Transferred {
    pub(crate) path: PathBuf,
}

/// The agents whose sessions can be moved, as a person lists them.
pub(crate) fn transferable_kinds() -> String {
    crate::agent::spec::spoken(&crate::agent::spec::adapters_where(|spec| transcripts::transferable(spec.kind)))
}

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
    if !transcripts::transferable(kind) {
        return Err(Error::usage(format!("sessions of `{}` cannot be transferred", kind.as_str())).with_hint(format!(
            "{} sessions can; the other agents keep more than a transcript in stores of their own",
            transferable_kinds()
        )));
    }
    if !transcripts::plain_session_id(session_id) {
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
    let name = transcript.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let path = transcripts::transfer_target(kind, session_id, new_cwd, &name, env)
        .ok_or_else(|| Error::usage(format!("{} keeps no state folder eden can find", kind.as_str())))?;
    if path.exists() && !force {
        return Err(Error::usage(format!("`{}` exists already", path.display()))
            .with_hint("the agent has this session there already; `--force` overwrites it"));
    }
    write(&path, &rewrite(&text))?;
    // Subagents' transcripts (Claude Code's) beside it, as the agent keeps them.
    for sub in subagents {
        let target = path.with_extension("").join("subagents").join(sub.file_name().unwrap_or_default());
        let text = fs_err::read_to_string(sub)
            .map_err(|err| Error::usage(format!("cannot read `{}`", sub.display())).with_source(err))?;
        write(&target, &rewrite(&text))?;
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
) -> Result<Option<Found>, Error> {
    let Some(only_from) = transcripts::resumes_from(kind, session_id, cwd, env) else { return Ok(None) };
    match transcripts::locate(kind, session_id, cwd, env) {
        Ok(Located::File(found)) if only_from.as_ref().is_some_and(|place| *place != found.main) => Ok(Some(found)),
        Ok(_) => Ok(None),
        Err(not_found) => {
            let tried = only_from.map_or(not_found.tried, |place| place.display().to_string());
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
        let Found { main, subagents } = find_resumable(AgentKind::ClaudeCode, "s-1", cwd, &env).unwrap().unwrap();
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
    }
}
