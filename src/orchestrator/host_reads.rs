//! What a host hook executes from the repository besides its own command line: the scripts it
//! names, the files those scripts `source` (followed, as far as they can be named), the files
//! the tools it runs read by convention (`make` its `Makefile`, `npm ci` its `package.json`'s
//! scripts, `cargo` its `build.rs`), and what `hooks.host.reads` adds. A merge may not change
//! any of them unreviewed (`protect`), and a sandboxed agent's change to one stops the hook from
//! running on this machine in the same run (`HostGuard`). `--dry-run` and `eden doctor` say it.

use super::glob::Globs;
use crate::manifest::hooks_plan::{HookPlan, HooksPlan, Phase};
use crate::manifest::plan::Plan;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

/// Tools whose conventional files decide what they run, and those files (names at any depth,
/// or folders: everything in them).
const TOOLS: &[(&[&str], &[&str])] = &[
    (&["make", "gmake"], &["Makefile", "makefile", "GNUmakefile", "*.mk"]),
    (
        &["npm", "npx", "yarn", "pnpm", "bun", "corepack"],
        &[
            "package.json",
            "package-lock.json",
            "npm-shrinkwrap.json",
            "yarn.lock",
            "pnpm-lock.yaml",
            "pnpm-workspace.yaml",
            "bun.lock",
            "bun.lockb",
            ".npmrc",
            ".yarnrc",
            ".yarnrc.yml",
            ".yarn",
            ".pnpmfile.cjs",
        ],
    ),
    (
        &["cargo", "rustup"],
        &["Cargo.toml", "Cargo.lock", "build.rs", ".cargo", "rust-toolchain", "rust-toolchain.toml"],
    ),
    (
        &["pip", "pip3", "uv", "poetry", "pipenv"],
        &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements*.txt",
            "uv.lock",
            "poetry.lock",
            "Pipfile",
            "Pipfile.lock",
        ],
    ),
    (&["just"], &["justfile", "Justfile", ".justfile", "*.just"]),
    (&["bundle", "rake"], &["Gemfile", "Gemfile.lock", "Rakefile", "*.rake"]),
    (&["gradle", "gradlew"], &["*.gradle", "*.gradle.kts", "gradlew", "gradle"]),
    (&["mvn", "mvnw"], &["pom.xml", "mvnw", ".mvn"]),
    (&["go"], &["go.mod", "go.sum", "go.work"]),
];

/// How deep `source` is followed.
const MAX_DEPTH: usize = 8;
/// A script longer than this is not read for what it sources.
const MAX_SCRIPT: usize = 1 << 20;

/// What one host hook executes from the repository.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct HostHookReads {
    pub(crate) phase: &'static str,
    pub(crate) cmd: String,
    /// Paths and globs relative to the repository's top (a name without `/` at any depth, a
    /// folder with everything in it).
    pub(crate) reads: Vec<String>,
    /// What its scripts source that eden cannot name (a variable's value): for
    /// `hooks.host.reads`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) unresolved: Vec<String>,
    /// It runs after the agent began (an iteration's hooks, `on_close`): on the files as the
    /// agent left them.
    pub(crate) after_agent: bool,
}

/// Every host hook of `plan`, with what it reads; `read` gives a repository file's text (from
/// the commit the run is based on, or the person's checkout), `None` if there is none.
pub(crate) fn of(plan: &Plan, read: &dyn Fn(&str) -> Option<String>) -> Vec<HostHookReads> {
    let mut all = Vec::new();
    for phase in Phase::ALL {
        for hook in plan.hooks.get(crate::manifest::hooks_plan::Side::Host, phase) {
            all.push(hook_reads(hook, phase, &plan.hooks, read));
        }
    }
    all
}

/// Reads a repository file's text from the person's checkout (for `--dry-run` and
/// `eden doctor`, before any run).
pub(crate) fn in_checkout(checkout: &Path) -> impl Fn(&str) -> Option<String> + '_ {
    move |path: &str| {
        let full = checkout.join(path);
        let small = std::fs::metadata(&full).is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_SCRIPT as u64);
        small.then(|| std::fs::read_to_string(&full).ok()).flatten()
    }
}

/// What a host hook executes, in words (`eden doctor`).
pub(crate) fn describe(hook: &HostHookReads, sandboxed: bool) -> String {
    let mut text = match hook.reads.is_empty() {
        true => format!("`{}` ({}) runs on this machine and reads no file eden can name", hook.cmd, hook.phase),
        false => format!(
            "`{}` ({}) runs on this machine and reads {}: a run may not change them unreviewed",
            hook.cmd,
            hook.phase,
            hook.reads.iter().map(|read| format!("`{read}`")).collect::<Vec<_>>().join(", ")
        ),
    };
    if hook.after_agent && sandboxed {
        text.push_str("; it runs after the agent, and is not run if the agent changed one of them");
    }
    text
}

fn hook_reads(
    hook: &HookPlan,
    phase: Phase,
    hooks: &HooksPlan,
    read: &dyn Fn(&str) -> Option<String>,
) -> HostHookReads {
    let cwd = hook.cwd.as_deref().filter(|cwd| !Path::new(cwd).is_absolute()).unwrap_or("");
    let mut reads = BTreeSet::new();
    let mut unresolved = BTreeSet::new();
    for word in words(&hook.cmd) {
        if let Some((_, files)) = TOOLS.iter().find(|(names, _)| names.contains(&tool_name(&word))) {
            reads.extend(files.iter().map(|file| (*file).to_owned()));
        }
    }
    let mut scripts: Vec<(String, usize)> = scripts_in(&hook.cmd, cwd).into_iter().map(|path| (path, 0)).collect();
    // The command line sources too (`. ./env.sh && make`).
    let (named, vague) = sourced(&hook.cmd, cwd, cwd);
    scripts.extend(named.into_iter().map(|path| (path, 0)));
    unresolved.extend(vague);
    while let Some((script, depth)) = scripts.pop() {
        if !reads.insert(script.clone()) || depth >= MAX_DEPTH {
            continue;
        }
        let Some(text) = read(&script).filter(|text| text.len() <= MAX_SCRIPT) else { continue };
        let folder = Path::new(&script).parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        let (named, vague) = sourced(&text, cwd, &folder);
        scripts.extend(named.into_iter().map(|path| (path, depth + 1)));
        unresolved.extend(vague.into_iter().map(|name| format!("{name} (in `{script}`)")));
    }
    reads.extend(hooks.host_reads.iter().cloned());
    HostHookReads {
        phase: phase.as_str(),
        cmd: hook.cmd.clone(),
        reads: reads.into_iter().collect(),
        unresolved: unresolved.into_iter().collect(),
        after_agent: phase != Phase::OnWorktreeReady && phase != Phase::OnSandboxReady,
    }
}

/// The words of a shell command line (quotes removed; split on whitespace where the line is
/// not one `shlex` reads), with `;`, `&&` and `||` as words of their own.
fn words(cmd: &str) -> Vec<String> {
    let spaced = cmd.replace(';', " ; ").replace("&&", " && ").replace("||", " || ");
    shlex::split(&spaced).unwrap_or_else(|| spaced.split_whitespace().map(str::to_owned).collect())
}

/// `make` for `make`, `/usr/bin/make`, `./gradlew` and a subshell's `(make`.
fn tool_name(word: &str) -> &str {
    let word = word.trim_matches(['(', ')']);
    word.rsplit('/').next().unwrap_or(word)
}

/// The scripts a command runs from the repository: each word that is a relative path (`./x`,
/// `scripts/x.sh`), relative to the command's `cwd` in the worktree.
pub(crate) fn scripts_in(cmd: &str, cwd: &str) -> Vec<String> {
    let words = words(cmd);
    // A redirection's target is written or read as data, never run: `> report/out.txt`.
    let operator = |word: &str| word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&').to_owned();
    let redirect = |word: &str| operator(word).starts_with(['>', '<']);
    let bare = |word: &str| matches!(operator(word).as_str(), ">" | ">>" | "<" | ">|" | "<<" | "<>");
    words
        .iter()
        .enumerate()
        .filter(|(at, word)| {
            let target = *at > 0 && bare(&words[at - 1]);
            !(redirect(word) || target)
        })
        .map(|(_, word)| word)
        .filter(|word| word.contains('/') && !word.starts_with(['/', '-', '$', '~']) && !word.contains("://"))
        .filter_map(|word| normalize(&Path::new(cwd).join(word)))
        .collect()
}

/// What `text` (a script in `folder`, run from `cwd`) sources with `source FILE` or `. FILE`:
/// the files it names, relative to the repository (a relative name is read from the working
/// directory, or where a name starts with the script's own folder — `$(dirname "$0")/`,
/// `${BASH_SOURCE%/*}/` — from there), and the names eden cannot resolve.
fn sourced(text: &str, cwd: &str, folder: &str) -> (Vec<String>, Vec<String>) {
    let (mut named, mut vague) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let words = words(line);
        for index in 1..words.len() {
            let starts_command =
                index == 1 || matches!(words[index - 2].as_str(), ";" | "&&" | "||" | "then" | "do" | "else");
            if !starts_command || !matches!(words[index - 1].as_str(), "source" | ".") {
                continue;
            }
            match resolve_sourced(&words[index], cwd, folder) {
                Some(paths) => named.extend(paths),
                None => vague.push(words[index].clone()),
            }
        }
    }
    (named, vague)
}

/// The repository paths a sourced name may be: `None` when it cannot be named (a variable), an
/// empty list when it is outside the repository (an absolute path).
fn resolve_sourced(name: &str, cwd: &str, folder: &str) -> Option<Vec<String>> {
    const OWN_FOLDER: [&str; 6] = [
        "$(dirname $0)/",
        "$(dirname ${BASH_SOURCE[0]})/",
        "$(dirname $BASH_SOURCE)/",
        "${BASH_SOURCE%/*}/",
        "${BASH_SOURCE[0]%/*}/",
        "${0%/*}/",
    ];
    let name = name.replace(['"', '\''], "");
    if let Some(rest) = OWN_FOLDER.iter().find_map(|prefix| name.strip_prefix(prefix)) {
        if rest.contains(['$', '`']) {
            return None;
        }
        return Some(normalize(&Path::new(folder).join(rest)).into_iter().collect());
    }
    if name.contains(['$', '`']) {
        return None;
    }
    if name.starts_with('/') || name.starts_with('~') {
        return Some(Vec::new());
    }
    // Read from the working directory; a script run by path often means its own folder.
    let mut paths: Vec<String> =
        [cwd, folder].iter().filter_map(|base| normalize(&Path::new(base).join(&name))).collect();
    paths.dedup();
    Some(paths)
}

/// `path` without `.` components, or `None` when it leaves the repository.
pub(crate) fn normalize(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The folder of git hooks the person's git runs, when it is in the repository
/// (`core.hooksPath = .githooks`, husky's `.husky/_`): a file an agent can write there runs on
/// this machine at the person's next `git commit`. As a glob relative to the repository's top.
pub(crate) fn git_hooks_folder(repo: &crate::git::Git, top: &Path) -> Option<String> {
    // eden's own git sets `core.hooksPath` on its command line: the person's is the last of
    // the other scopes.
    let listed = repo.run(["config", "--show-scope", "--get-all", "core.hooksPath"]).ok()?;
    let value = listed.lines().rev().find(|line| !line.starts_with("command"))?.split_once('\t')?.1.to_owned();
    let path = Path::new(&value);
    let relative = match path.is_absolute() {
        true => path.strip_prefix(top).ok()?.to_path_buf(),
        false => path.to_path_buf(),
    };
    let folder = normalize(&relative)?;
    // husky's `_` folder only calls the hooks beside it.
    let folder = match folder.split_once('/') {
        Some((".husky", _)) => ".husky".to_owned(),
        _ => folder,
    };
    Some(format!("{folder}/**"))
}

/// The contents of what host hooks read, at one moment: a digest per file.
#[derive(Debug, Default, PartialEq, Eq)]
struct Snapshot(BTreeMap<String, [u8; 32]>);

/// Keeps what an agent changed from running on this machine within the run: the files each
/// host hook reads, as they were before any agent ran in the run (a sandboxed agent's changes
/// are found by comparing them again before each hook), and the files changed by commits the
/// run starts from that the person has not merged (`--from`). What a host hook itself changes
/// is the person's: taken as the new state once it ran.
pub(crate) struct HostGuard {
    hooks: Vec<HostHookReads>,
    worktree: std::path::PathBuf,
    /// `None` without a sandbox: the agent runs on this machine already.
    trusted: Option<std::sync::Mutex<Snapshot>>,
    /// Changed by the commits the run starts from, which are not the person's yet.
    unmerged: Vec<String>,
    run_id: String,
}

impl crate::hooks::HostGate for HostGuard {
    fn before(&self, phase: Phase, cmd: &str) -> Result<(), crate::error::Error> {
        let reads = self.reads_of(phase, cmd);
        let unmerged: Vec<String> = self
            .unmerged
            .iter()
            .filter(|path| reads.as_ref().is_some_and(|reads| reads.matches(path)))
            .cloned()
            .collect();
        let (changed, who) = match unmerged.is_empty() {
            true => (self.changed_for(phase, cmd), "the agent changed"),
            false => (unmerged, "the commits the run starts from (not merged yet) change"),
        };
        if changed.is_empty() {
            return Ok(());
        }
        let shown: Vec<String> = changed.iter().take(8).map(|path| format!("`{path}`")).collect();
        let run = &self.run_id;
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Protected { files: changed.clone() },
            format!(
                "{who} {}, which the host hook `{cmd}` ({}) runs on this machine: the hook was not run",
                shown.join(", "),
                phase.as_str()
            ),
        )
        .with_hint(format!(
            "run the hook in the sandbox (`[hooks.sandbox]`), or review the work (`eden diff {run}`) and merge it (`eden merge {run}`) before a host hook runs it"
        )))
    }

    fn after(&self, phase: Phase, cmd: &str) {
        self.ran(phase, cmd);
    }
}

impl HostGuard {
    /// The guard of a worktree about to be made ready: what its host hooks read, taken now
    /// where the agent is sandboxed (`sandboxed`); `unmerged`, the paths the commits the run
    /// starts from change. `None` when there is no host hook.
    pub(crate) fn take(
        hooks: Vec<HostHookReads>,
        worktree: &Path,
        sandboxed: bool,
        unmerged: Vec<String>,
        run_id: &str,
    ) -> Option<HostGuard> {
        if hooks.is_empty() {
            return None;
        }
        let globs = Globs::new(hooks.iter().flat_map(|hook| hook.reads.iter().map(String::as_str)));
        let trusted = sandboxed.then(|| std::sync::Mutex::new(snapshot(worktree, &globs)));
        Some(HostGuard { hooks, worktree: worktree.to_path_buf(), trusted, unmerged, run_id: run_id.to_owned() })
    }

    /// What `cmd` (a host hook of `phase`) reads; `None` when it reads nothing.
    fn reads_of(&self, phase: Phase, cmd: &str) -> Option<Globs> {
        let hook = self.hooks.iter().find(|hook| hook.phase == phase.as_str() && hook.cmd == cmd);
        hook.filter(|hook| !hook.reads.is_empty()).map(|hook| Globs::new(hook.reads.iter().map(String::as_str)))
    }

    /// The files `cmd` (a host hook of `phase`) reads that changed since they were trusted.
    fn changed_for(&self, phase: Phase, cmd: &str) -> Vec<String> {
        let (Some(trusted), Some(globs)) = (self.trusted.as_ref(), self.reads_of(phase, cmd)) else {
            return Vec::new();
        };
        let now = snapshot(&self.worktree, &globs);
        let trusted = trusted.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed: BTreeSet<String> = now
            .0
            .iter()
            .filter(|(path, digest)| trusted.0.get(*path) != Some(digest))
            .map(|(path, _)| path.clone())
            .collect();
        let gone = trusted.0.keys().filter(|path| globs.matches(path));
        changed.extend(gone.filter(|path| !now.0.contains_key(*path)).cloned());
        changed.into_iter().collect()
    }

    /// `cmd` ran: what it reads is as it left it.
    fn ran(&self, phase: Phase, cmd: &str) {
        let (Some(trusted), Some(globs)) = (self.trusted.as_ref(), self.reads_of(phase, cmd)) else { return };
        let now = snapshot(&self.worktree, &globs);
        let mut trusted = trusted.lock().unwrap_or_else(|e| e.into_inner());
        trusted.0.retain(|path, _| !globs.matches(path));
        trusted.0.extend(now.0);
    }
}

/// The worktree's files (tracked, and untracked ones git does not ignore) that `globs` match,
/// each with the SHA-256 of its bytes; a symlink by its target's name.
fn snapshot(worktree: &Path, globs: &Globs) -> Snapshot {
    let git = crate::git::Git::new(worktree);
    let listed = git.run(["ls-files", "-z", "--cached", "--others", "--exclude-standard"]).unwrap_or_default();
    let mut files = BTreeMap::new();
    for path in listed.split('\0').filter(|path| !path.is_empty()) {
        if !globs.matches(path) {
            continue;
        }
        let full = worktree.join(path);
        let bytes = match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.file_type().is_symlink() => {
                std::fs::read_link(&full).map(|target| target.into_os_string().into_encoded_bytes())
            }
            Ok(_) => std::fs::read(&full),
            Err(err) => Err(err),
        };
        let mut digest = [0u8; 32];
        if let Ok(bytes) = bytes {
            digest.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref());
        }
        files.insert(path.to_owned(), digest);
    }
    Snapshot(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(hooks: &str) -> Plan {
        let text = format!("name = \"t\"\nprompt = \"p\"\n[agent]\nkind = \"simulated\"\n{hooks}");
        crate::manifest::plan::tests::plan_from_text(&text)
    }

    #[test]
    fn tools_read_their_conventional_files() {
        let plan =
            plan_of("[hooks.host]\non_worktree_ready = [\"make -s setup && npm ci\", \"/usr/bin/cargo build\"]\n");
        let all = of(&plan, &|_| None);
        assert!(all[0].reads.contains(&"Makefile".to_owned()) && all[0].reads.contains(&"*.mk".to_owned()));
        assert!(all[0].reads.contains(&"package.json".to_owned()) && all[0].reads.contains(&".npmrc".to_owned()));
        assert!(all[1].reads.contains(&"build.rs".to_owned()) && all[1].reads.contains(&"Cargo.toml".to_owned()));
        assert!(!all[0].after_agent);
    }

    #[test]
    fn what_a_script_sources_is_followed() {
        let plan =
            plan_of("[hooks.host]\non_close = [{ cmd = \"./setup.sh\", cwd = \"tools\" }]\nreads = [\"conf/*.env\"]\n");
        let files: BTreeMap<&str, &str> = [
            (
                "tools/setup.sh",
                "#!/bin/sh\nset -e\n. \"$(dirname \"$0\")/lib/common.sh\"\nsource scripts/lib.sh\n. \"$HOME/x\"\n",
            ),
            ("tools/lib/common.sh", "if true; then . ./deeper.sh; fi\n# . ./commented.sh\n"),
            ("tools/scripts/lib.sh", "echo hi\n"),
        ]
        .into_iter()
        .collect();
        let all = of(&plan, &|path| files.get(path).map(|text| (*text).to_owned()));
        let reads = &all[0].reads;
        for expected in
            ["tools/setup.sh", "tools/lib/common.sh", "tools/scripts/lib.sh", "tools/deeper.sh", "conf/*.env"]
        {
            assert!(reads.contains(&expected.to_owned()), "{expected}: {reads:?}");
        }
        assert!(!reads.iter().any(|read| read.contains("commented")), "{reads:?}");
        assert_eq!(all[0].unresolved, ["$HOME/x (in `tools/setup.sh`)"]);
        assert!(all[0].after_agent);
    }

    #[test]
    fn a_git_hooks_folder_in_the_repository_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let git = crate::git::Git::new(dir.path());
        git.run(["init", "-q"]).unwrap();
        assert_eq!(git_hooks_folder(&git, dir.path()), None);
        git.run(["config", "core.hooksPath", ".githooks"]).unwrap();
        assert_eq!(git_hooks_folder(&git, dir.path()).as_deref(), Some(".githooks/**"));
        git.run(["config", "core.hooksPath", ".husky/_"]).unwrap();
        assert_eq!(git_hooks_folder(&git, dir.path()).as_deref(), Some(".husky/**"));
        git.run(["config", "core.hooksPath", "/etc/hooks"]).unwrap();
        assert_eq!(git_hooks_folder(&git, dir.path()), None);
    }
}
