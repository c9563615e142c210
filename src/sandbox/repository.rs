//! The sandbox's own repository, and the one way work crosses the boundary.
//!
//! A sandbox never sees the host's `.git`, and the host never runs git against anything the
//! sandbox could write. Instead:
//!
//! - **In**: eden builds the sandbox repository's `.git` on the host, in a scratch folder of its
//!   own (HEAD on the run's branch, the host's refs as `packed-refs`, the person's identity, the
//!   host worktree's index, the host's object stores named as alternates — read-only inside), and
//!   streams it with the host worktree's files (`tar`, all but `.git` and `.eden`) into the
//!   sandbox's empty workspace through the sandbox's own channel (`exec -i`, or bubblewrap).
//!   Files the host side added (`copy_to_worktree`, what host hooks made) arrive too, and are
//!   excluded from the sandbox's git, so they are neither committed nor come back as its work.
//! - **Commits back**, after every iteration: a script inside prints the branch's tip and a
//!   `git bundle` of what the host lacks; eden fetches that bundle on the host with object
//!   checking on (`transfer.fsckObjects`: malformed objects and trees with `.git` entries are
//!   refused) and moves the host worktree to the tip with `git reset --keep`. Only objects and
//!   one commit id cross; the sandbox's config, hooks and attributes are never read on the host.
//! - **Uncommitted work**, at the end: a script inside prints `git diff --binary` of everything
//!   the agent left; eden saves it under `.eden/patches/`, checks every path it names (no `.git`
//!   component, nothing absolute or above the worktree) and applies it with `git apply`, which
//!   itself refuses to write through symlinks.
//!
//! What runs inside may lie (the agent can replace the image's `git`): everything it prints is
//! treated as untrusted data and checked on the host.

use crate::error::{Error, Reason};
use crate::git::Git;
use crate::layout::EDEN_DIR;
use crate::process::ProcessBuilder;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// Reaches inside the sandbox: the sandbox's side of the transport.
pub(crate) trait Channel {
    /// The host command that runs `command` (program, arguments, environment and working
    /// directory as the sandbox sees them) inside, as the agent's user, its stdin open for
    /// what `pipe_into` feeds it. An error when the sandbox cannot be asked at all.
    fn inside(&self, command: ProcessBuilder) -> Result<ProcessBuilder, Error>;
    /// The workspace as the sandbox sees it (the worktree's path, or the isolated copy).
    fn workspace(&self) -> &Path;
}

/// `sh -c SCRIPT sh ARGS...` in the sandbox's workspace, with git settings of its own: no
/// background maintenance (eden ends what a command leaves running), no prompts, no quoting of
/// non-ASCII paths, no system or global configuration; stopped after `SANDBOX_STEP`.
fn shell(channel: &dyn Channel, script: &str, args: &[&str]) -> Result<ProcessBuilder, Error> {
    shell_in(channel, channel.workspace(), script, args)
}

/// `shell`, from another folder than the workspace (one that may not exist yet).
fn shell_in(channel: &dyn Channel, cwd: &Path, script: &str, args: &[&str]) -> Result<ProcessBuilder, Error> {
    let command = ProcessBuilder::new("sh").args(["-c", script, "sh"]).args(args).cwd(cwd);
    let command = command.env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null");
    let command = crate::git::with_config(command, &crate::git::NO_BACKGROUND_WORK);
    let command = crate::git::with_config(command, &[("core.quotePath", "false")]);
    let command = channel.inside(command.env("GIT_TERMINAL_PROMPT", "0").env("LC_ALL", "C"))?;
    Ok(command.timeout(super::SANDBOX_STEP))
}

/// What seeding needs from the host.
pub(crate) struct SeedRequest<'a> {
    /// The run's worktree on the host: its files are the sandbox's starting point.
    pub(crate) host_worktree: &'a Path,
    /// The run's branch, checked out in the sandbox.
    pub(crate) branch: &'a str,
    /// A folder eden made for this run (`.eden/tmp/<run>`), for the `.git` it builds.
    pub(crate) scratch: &'a Path,
    /// The host's object stores as the sandbox sees them, first the repository's own; empty
    /// when it sees none (a remote engine): the history is packed and streamed in instead.
    pub(crate) alternates: &'a [String],
    /// Where the repository goes when the sandbox shares the host worktree's files
    /// (`expose_worktree`): its own folder, and only the `.git` is streamed in. `None`: the
    /// workspace gets the `.git` and a copy of the files.
    pub(crate) separate_git_dir: Option<&'a str>,
    /// The workspace does not exist yet, and the seed makes it (in a folder the sandbox's user
    /// may write), after running this script from `/` (its output comes back as
    /// `Seeded::said`): a claimed warm container's one set-up exec. `None`: the workspace is
    /// there, empty.
    pub(crate) first: Option<&'a str>,
    /// With `first`: the sandbox holds a copy of the repository made ahead (`seed_ahead`) at this
    /// folder, at this commit. At the worktree's commit, with no tracked file changed on the
    /// host, it is renamed into place: only the `.git` of the run's (without the index: the copy
    /// has its own) and the files git does not track go in.
    pub(crate) ahead: Option<(&'a str, &'a str)>,
}

/// What `seed` did.
pub(crate) struct Seeded {
    /// What `SeedRequest::first` printed.
    pub(crate) said: String,
}

/// The host's object stores: the repository's `objects`, and every store it borrows from
/// (`objects/info/alternates`, followed), as absolute paths. Read from the host's own `.git`.
pub(crate) fn object_stores(common_dir: &Path) -> Vec<PathBuf> {
    let mut stores = vec![common_dir.join("objects")];
    let mut next = 0;
    while next < stores.len() && stores.len() < 16 {
        let store = stores[next].clone();
        next += 1;
        let Ok(text) = std::fs::read_to_string(store.join("info").join("alternates")) else { continue };
        for line in text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')) {
            let path = crate::git::dunce_canonical(&store.join(line));
            if path.is_dir() && !stores.contains(&path) {
                stores.push(path);
            }
        }
    }
    stores
}

/// Extracts the stream into the workspace, then settles the index against the files.
const SEED_SCRIPT: &str = r#"set -e
tar -x -f - -C "$1"
git update-index -q --refresh >/dev/null 2>&1 || :
git rev-parse --verify -q HEAD"#;

/// `SEED_SCRIPT` into a workspace it makes (`$2`), after `$3` (`SeedRequest::first`): all
/// it prints but the last line is the latter's.
const FIRST_SEED_SCRIPT: &str = r#"set -e
sh -c "$3"
mkdir -- "$2"
cd -- "$2"
tar -x -f - -C "$1"
git update-index -q --refresh >/dev/null 2>&1 || :
git rev-parse --verify -q HEAD"#;

/// `FIRST_SEED_SCRIPT` with a copy made ahead (`$4`) renamed into the workspace instead of a
/// folder made: the stream holds the run's `.git` (no index) and what git does not track.
const AHEAD_SEED_SCRIPT: &str = r#"set -e
sh -c "$3"
mv -- "$4" "$2"
cd -- "$2"
tar -x -f - -C "$1"
git rev-parse --verify -q HEAD"#;

/// Fill the sandbox's empty workspace: its own repository on the run's branch at the host
/// worktree's commit, with the host worktree's files.
pub(crate) fn seed(channel: &dyn Channel, request: &SeedRequest<'_>) -> Result<Seeded, Error> {
    send(channel, request, prepare(request)?)
}

/// A seed made ready on the host (`prepare`), to be sent into a sandbox (`send`): the sandbox's
/// `.git` built in the scratch folder. Its `.git` is removed when it is dropped.
pub(crate) struct Ready {
    tip: String,
    dot_git: PathBuf,
    /// The host worktree beyond its commit.
    beyond: Beyond,
}

impl Drop for Ready {
    fn drop(&mut self) {
        let _ = crate::safe_fs::remove_tree(&self.dot_git);
    }
}

/// `seed`'s host half, which needs no sandbox: done while the sandbox is being made or claimed.
pub(crate) fn prepare(request: &SeedRequest<'_>) -> Result<Ready, Error> {
    let host = Git::new(request.host_worktree);
    let tip = host
        .resolve("HEAD")?
        .ok_or_else(|| Error::git(format!("the worktree `{}` has no commit", request.host_worktree.display())))?;
    let mut ready = Ready { tip, dot_git: request.scratch.join(".git"), beyond: Beyond::default() };
    ready.beyond = build_dot_git(&host, request, &ready.tip, &ready.dot_git)?;
    Ok(ready)
}

/// `seed`'s sandbox half: the `.git` `prepare` built and the worktree's files, streamed in.
pub(crate) fn send(channel: &dyn Channel, request: &SeedRequest<'_>, ready: Ready) -> Result<Seeded, Error> {
    let (dot_git, tip) = (&ready.dot_git, &ready.tip);
    let workspace = channel.workspace().to_string_lossy();
    let ahead = request.ahead.filter(|(_, at)| at == tip && !ready.beyond.changed && request.first.is_some());
    let (archive, extract) = match (ahead, request.separate_git_dir) {
        (Some((path, _)), _) => {
            let listed = request.scratch.join("untracked.list");
            let list: String = ready.beyond.untracked.iter().map(|path| format!("{path}\0")).collect();
            fs_err::write(&listed, list).map_err(|err| Error::sandbox(err.to_string()))?;
            let archive = ProcessBuilder::new("tar")
                .args(["-c", "-f", "-", "--exclude=.git/index", "-C"])
                .arg(request.scratch)
                .arg(".git")
                .arg("-C")
                .arg(request.host_worktree)
                .args(["--null", "-T"])
                .arg(&listed);
            let first = request.first.unwrap_or(":");
            (archive, shell_in(channel, Path::new("/"), AHEAD_SEED_SCRIPT, &[".", &workspace, first, path])?)
        }
        (None, Some(git_dir)) => (
            ProcessBuilder::new("tar").args(["-c", "-f", "-", "-C"]).arg(dot_git).arg("."),
            shell(channel, SEED_SCRIPT, &[git_dir])?,
        ),
        (None, None) => {
            let archive = ProcessBuilder::new("tar")
                .args(["-c", "-f", "-", "-C"])
                .arg(request.scratch)
                .arg(".git")
                // eden's own folder (with `head` the worktree is the checkout, which holds
                // it: other runs' worktrees, records, `.env` secrets) never goes in.
                .args(["--exclude=./.git".to_owned(), format!("--exclude=./{EDEN_DIR}"), "-C".to_owned()])
                .arg(request.host_worktree)
                .args(super::carry::top_level(request.host_worktree, &[".git", EDEN_DIR])?);
            let extract = match request.first {
                Some(first) => shell_in(channel, Path::new("/"), FIRST_SEED_SCRIPT, &[".", &workspace, first])?,
                None => shell(channel, SEED_SCRIPT, &["."])?,
            };
            (archive, extract)
        }
    };
    let (archived, extracted) = archive.pipe_into(&extract).map_err(|err| {
        Error::sandbox(format!("cannot copy the worktree into the sandbox: {err}"))
            .with_hint("is `tar` installed on this machine?")
    })?;
    if !extracted.success() {
        return Err(Error::sandbox(format!(
            "cannot set up the sandbox's repository: {}",
            last_line(&extracted.stderr)
        ))
        .with_hint("the image needs `sh`, `tar` and `git`, and its user must be able to write the workspace"));
    }
    if !archived.success() {
        return Err(Error::sandbox(format!("cannot read the worktree to copy it: {}", last_line(&archived.stderr))));
    }
    let printed = extracted.stdout.trim_end();
    let (said, seeded) = printed.rsplit_once('\n').unwrap_or(("", printed));
    if seeded != tip {
        return Err(Error::sandbox(format!(
            "the sandbox's repository is at `{seeded}`, not at the worktree's commit `{tip}`"
        ))
        .with_hint("the image's `git` may be too old to read the repository (git 2.20 or newer is needed)"));
    }
    Ok(Seeded { said: said.to_owned() })
}

/// The sandbox's `.git`, made by eden in its scratch folder: nothing in it comes from a place
/// the sandbox could write. What it asks the host's git is asked at once.
fn build_dot_git(host: &Git, request: &SeedRequest<'_>, tip: &str, dot_git: &Path) -> Result<Beyond, Error> {
    let write = |relative: &str, contents: &[u8]| -> Result<(), Error> {
        let path = dot_git.join(relative);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).map_err(|err| Error::sandbox(err.to_string()))?;
        }
        fs_err::write(&path, contents).map_err(|err| Error::sandbox(err.to_string()))
    };
    let _ = crate::safe_fs::remove_tree(dot_git);
    for folder in ["objects/pack", "refs/heads", "refs/tags", "info"] {
        fs_err::create_dir_all(dot_git.join(folder)).map_err(|err| Error::sandbox(err.to_string()))?;
    }
    let (config, listed, exclude, index) = std::thread::scope(|scope| {
        let config = scope.spawn(|| config(host));
        let exclude = scope.spawn(|| exclude(host));
        let index = scope.spawn(|| host.run(["rev-parse", "--path-format=absolute", "--git-path", "index"]));
        let listed =
            host.run(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags", "refs/remotes"]);
        (joined(config), listed, joined(exclude), joined(index))
    });
    write("HEAD", format!("ref: refs/heads/{}\n", request.branch).as_bytes())?;
    write("config", config?.as_bytes())?;
    let mut refs: Vec<(String, String)> = listed?
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(name, id)| (name.to_owned(), id.to_owned()))
        .filter(|(name, _)| name != &format!("refs/heads/{}", request.branch))
        .collect();
    refs.push((format!("refs/heads/{}", request.branch), tip.to_owned()));
    refs.sort();
    let packed: String = refs.iter().map(|(name, id)| format!("{id} {name}\n")).collect();
    write("packed-refs", format!("# pack-refs with: sorted \n{packed}").as_bytes())?;
    if request.alternates.is_empty() {
        pack_history(host, &refs, dot_git)?;
    } else {
        write("objects/info/alternates", format!("{}\n", request.alternates.join("\n")).as_bytes())?;
    }
    let (exclude, beyond) = exclude?;
    write("info/exclude", exclude.as_bytes())?;
    // The host worktree's index, so the sandbox's git knows the files without reading them all
    // (stat data is compared by size and mtime only: the copies have other inodes).
    let index = index?;
    if Path::new(&index).is_file() {
        fs_err::copy(&index, dot_git.join("index")).map_err(|err| Error::sandbox(err.to_string()))?;
    }
    Ok(beyond)
}

/// Makes the copy made ahead: the `.git` streamed in, the commit's files checked out from the
/// object stores, the index settled against them a second later (entries written in the second
/// their files were are "racily clean", and the first `git status` would read every file).
const AHEAD_SCRIPT: &str = r#"set -e
mkdir -p -- "$1"
cd -- "$1"
tar -x -f -
git read-tree -u --reset HEAD
sleep 1
git update-index -q --really-refresh >/dev/null 2>&1 || :
git rev-parse --verify -q HEAD"#;

/// In a sandbox no run has had yet (a warm pool's member): the repository at `commit`, made at
/// `path` for a claim to rename into its workspace (`SeedRequest::ahead`). Its `.git` is eden's
/// (built in `scratch`: `HEAD` detached at `commit`, the person's identity, the host's object
/// stores as `alternates`, which must be mounted), and the commit's files are checked out from
/// those stores inside, so nothing but the small `.git` crosses.
pub(crate) fn seed_ahead(
    channel: &dyn Channel,
    host: &Git,
    commit: &str,
    alternates: &[String],
    scratch: &Path,
    path: &str,
) -> Result<(), Error> {
    let dot_git = scratch.join(".git");
    let _ = crate::safe_fs::remove_tree(&dot_git);
    let made = (|| {
        let failed = |err: std::io::Error| Error::sandbox(err.to_string());
        for folder in ["objects/info", "refs/heads", "refs/tags", "info"] {
            fs_err::create_dir_all(dot_git.join(folder)).map_err(failed)?;
        }
        fs_err::write(dot_git.join("HEAD"), format!("{commit}\n")).map_err(failed)?;
        fs_err::write(dot_git.join("config"), config(host)?).map_err(failed)?;
        fs_err::write(dot_git.join("objects/info/alternates"), format!("{}\n", alternates.join("\n")))
            .map_err(failed)?;
        let archive = ProcessBuilder::new("tar").args(["-c", "-f", "-", "-C"]).arg(scratch).arg(".git");
        let extract = shell_in(channel, Path::new("/"), AHEAD_SCRIPT, &[path])?;
        let (archived, extracted) = archive
            .pipe_into(&extract)
            .map_err(|err| Error::sandbox(format!("cannot copy the repository into the sandbox: {err}")))?;
        if !archived.success() || !extracted.success() || extracted.stdout.trim() != commit {
            let why = if archived.success() { &extracted.stderr } else { &archived.stderr };
            return Err(Error::sandbox(format!("cannot make the repository ahead in the sandbox: {}", last_line(why)))
                .with_hint("the image needs `sh`, `tar` and `git` (2.20 or newer)"));
        }
        Ok(())
    })();
    let _ = crate::safe_fs::remove_tree(&dot_git);
    made
}

/// A thread's answer; its panic an error.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T, Error>>) -> Result<T, Error> {
    handle.join().unwrap_or_else(|_| Err(Error::internal("asking the host's git panicked")))
}

/// For a sandbox that cannot borrow the host's object stores: every object the refs reach, as
/// one pack in the `.git` being built (it travels with the rest of the stream).
fn pack_history(host: &Git, refs: &[(String, String)], dot_git: &Path) -> Result<(), Error> {
    let tips: String = refs.iter().map(|(_, id)| format!("{id}\n")).collect();
    let pack = host
        .command(["pack-objects", "--revs", "--quiet"])
        .arg(dot_git.join("objects/pack/pack"))
        .stdin(crate::process::Stdin::Bytes(tips.into_bytes()));
    let output = pack.output().map_err(|err| Error::sandbox(format!("cannot run `{pack}`: {err}")))?;
    if !output.success() {
        return Err(Error::sandbox(format!(
            "cannot pack the repository's history for the sandbox: {}",
            last_line(&output.stderr)
        )));
    }
    Ok(())
}

/// The sandbox repository's config: the object format, the person's identity (so the agent's
/// commits are theirs, as with their own git), stat checks that fit copied files.
fn config(host: &Git) -> Result<String, Error> {
    let format = host.run(["rev-parse", "--show-object-format"]).unwrap_or_else(|_| "sha1".to_owned());
    let mut config = String::from(
        "[core]\n\tbare = false\n\tlogallrefupdates = true\n\tcheckStat = minimal\n\ttrustctime = false\n",
    );
    if format == "sha1" {
        config.insert_str(0, "[core]\n\trepositoryformatversion = 0\n");
    } else {
        config.insert_str(
            0,
            &format!("[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = {format}\n"),
        );
    }
    // Who the person commits as, however their git knows it (config or `GIT_AUTHOR_*`).
    let mut user = String::new();
    if let Ok(ident) = host.run(["var", "GIT_AUTHOR_IDENT"]) {
        if let Some((name, rest)) = ident.split_once(" <") {
            let email = rest.split_once('>').map_or("", |(email, _)| email);
            for (key, value) in [("name", name.trim()), ("email", email)] {
                if !value.is_empty() && !value.contains(['\n', '"', '\\']) {
                    user.push_str(&format!("\t{key} = \"{value}\"\n"));
                }
            }
        }
    }
    if !user.is_empty() {
        config.push_str(&format!("[user]\n{user}"));
    }
    Ok(config)
}

/// The sandbox's `info/exclude`: the host's patterns, and every file the host worktree has that
/// git does not track (copied files, what host hooks made, ignored or not), each as a pattern
/// that matches whatever takes its place (a symlink where a folder was), so the agent's `git
/// add -A` and the uncommitted work that comes back leave them out.
/// What the host worktree has beyond its commit: the files git does not track (untracked and
/// ignored, folders as `dir/`), and whether any tracked file differs.
#[derive(Default)]
struct Beyond {
    untracked: Vec<String>,
    changed: bool,
}

fn exclude(host: &Git) -> Result<(String, Beyond), Error> {
    let exclude = host.run(["rev-parse", "--path-format=absolute", "--git-path", "info/exclude"])?;
    let mut text = std::fs::read_to_string(exclude).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let (status, _) = host.output(["status", "--porcelain", "-z", "--untracked-files=normal", "--ignored"])?;
    let mut added = String::new();
    let mut beyond = Beyond::default();
    for entry in status.stdout.split('\0').filter(|entry| !entry.is_empty()) {
        let untracked = entry.strip_prefix("?? ").or_else(|| entry.strip_prefix("!! "));
        beyond.changed |= untracked.is_none();
        if let Some(path) = untracked {
            beyond.untracked.push(path.to_owned());
            // No trailing slash: the pattern must also match what the agent may put in a
            // folder's place (a symlink), so that never comes back either.
            let path = path.trim_end_matches('/');
            added.push('/');
            for c in path.chars() {
                if matches!(c, '*' | '?' | '[' | '\\' | '!' | '#' | ' ') {
                    added.push('\\');
                }
                added.push(c);
            }
            added.push('\n');
        }
    }
    if !added.is_empty() {
        text.push_str("# added on the host before the sandbox started (eden)\n");
        text.push_str(&added);
    }
    Ok((text, beyond))
}

/// First in every script of eden's that reads the sandbox's repository once the agent has had it:
/// the repository's own config (the agent's to write: an `include` of a FIFO would hang eden's
/// git, an `fsmonitor` would run its program) is set aside for a config of eden's (the object
/// format read from the agent's file without following its includes; the checks that fit copied
/// files), and put back when the script ends. A config that is not a plain file is not read.
macro_rules! with_eden_config {
    ($script:expr) => {
        concat!(
            r#"g=.git
if [ -f .git ] && [ ! -L .git ]; then g=$(sed -n 's/^gitdir: //p' .git | head -n 1); fi
if [ -n "$g" ] && [ -d "$g" ]; then
  if [ ! -e "$g/config.eden-agent" ] && { [ -e "$g/config" ] || [ -L "$g/config" ]; }; then mv -f "$g/config" "$g/config.eden-agent"; fi
  format=sha1
  if [ -f "$g/config.eden-agent" ] && [ ! -L "$g/config.eden-agent" ]; then
    format=$(git config --no-includes --file "$g/config.eden-agent" --get extensions.objectformat 2>/dev/null) || format=sha1
  fi
  case $format in sha1|sha256) ;; *) format=sha1;; esac
  if [ $format = sha1 ]; then version=0; else version=1; fi
  printf '[core]
	repositoryformatversion = %s
	bare = false
	checkStat = minimal
	trustctime = false
' $version > "$g/config"
  [ $format = sha1 ] || printf '[extensions]
	objectformat = %s
' $format >> "$g/config"
  trap 'mv -f "$g/config.eden-agent" "$g/config" 2>/dev/null' EXIT
fi
"#,
            $script
        )
    };
}

/// git in the sandbox's workspace with eden's own configuration (the agent's set aside), for
/// eden's questions about its files: `git ARGS`, its output. What it prints is the sandbox's
/// word, used only for what eden then does inside the sandbox.
pub(crate) fn workspace_git(channel: &dyn Channel, args: &[&str]) -> Result<crate::process::Output, Error> {
    const GIT: &str = with_eden_config!(r#"GIT_LITERAL_PATHSPECS=1 git "$@""#);
    shell(channel, GIT, args)?
        .output()
        .map_err(|err| Error::sandbox(format!("cannot ask the sandbox's repository: {err}")))
}

/// Prints `tip <id>` for the branch (or `missing`), then, when the host lacks commits, a bundle
/// of them: everything reachable from the tip but not from what the host already has.
const BUNDLE_SCRIPT: &str = with_eden_config!(
    r#"branch=$1
shift
tip=$(git rev-parse -q --verify "refs/heads/$branch^{commit}") || { echo missing; exit 0; }
printf 'tip %s\n' "$tip"
for known in "$@"; do
  if [ "$tip" = "$known" ] || git merge-base --is-ancestor "$tip" "$known" 2>/dev/null; then exit 0; fi
done
exclude=
for known in "$@"; do
  if git cat-file -e "$known^{commit}" 2>/dev/null; then exclude="$exclude ^$known"; fi
done
git bundle create -q - "refs/heads/$branch" $exclude"#
);

/// How the host learns what the sandbox committed.
pub(crate) struct CommitsBack<'a> {
    pub(crate) channel: &'a dyn Channel,
    pub(crate) host_worktree: &'a Path,
    pub(crate) branch: &'a str,
    /// Commits the host has that the sandbox's branch started from or came back with (newest
    /// first; the last is where the run started).
    pub(crate) known: &'a [String],
    pub(crate) scratch: &'a Path,
    /// The repository lock, held while the fetch reads the repository's worktrees.
    pub(crate) repository_lock: &'a Path,
    pub(crate) run_id: &'a str,
    /// The sandbox writes the host worktree's files itself (`expose_worktree`): the branch
    /// and index are moved, the files left as they are; and no git runs there while the
    /// agent has made a repository of its own in it.
    pub(crate) shared_files: bool,
    /// `sandbox.max_return`: the most the bundle may be.
    pub(crate) limit: u64,
}

/// What an error of a sandbox that sent back more than `sandbox.max_return` says.
pub(crate) const OVER_MAX_RETURN: &str = "more than `sandbox.max_return`";

/// The error of `what` being more than `limit`: nothing of it was taken.
fn over_max_return(what: &str, limit: u64) -> Error {
    Error::sandbox(format!(
        "the sandbox sent back {OVER_MAX_RETURN} ({}) of {what}: nothing of it was taken",
        crate::values::format_size(limit)
    ))
    .with_hint("raise `sandbox.max_return` if the agent's work is meant to be that big")
    .with_reason(Reason::OverMaxReturn)
}

/// What came back.
pub(crate) enum Returned {
    /// The branch is where the host has it already.
    Nothing,
    /// The host worktree now stands on this commit.
    MovedTo(String),
}

/// Bring the sandbox branch's new commits into the host worktree: bundle inside, fetched with
/// object checks on the host, the worktree moved with `git reset --keep` (which refuses to
/// overwrite anything it would lose).
pub(crate) fn bring_commits(back: &CommitsBack<'_>) -> Result<Returned, Error> {
    fs_err::create_dir_all(back.scratch).map_err(|err| Error::sandbox(err.to_string()))?;
    let stream = back.scratch.join("incoming");
    let file = fs_err::File::create(&stream).map_err(|err| Error::sandbox(err.to_string()))?;
    let mut args = vec![back.branch];
    args.extend(back.known.iter().map(String::as_str));
    let output = shell(back.channel, BUNDLE_SCRIPT, &args)?.output_to_file_capped(file.into_parts().0, back.limit);
    let result = output
        .map_err(|err| Error::sandbox(format!("cannot ask the sandbox for its commits: {err}")))
        .and_then(|capped| {
            if capped.over {
                return Err(over_max_return("commits", back.limit));
            }
            let output = capped.output;
            if !output.success() {
                return Err(Error::sandbox(format!(
                    "cannot read the sandbox's commits: {}",
                    last_line(&output.stderr)
                )));
            }
            receive(back, &stream)
        });
    let _ = std::fs::remove_file(&stream);
    result
}

/// Read what the bundle script printed: the tip line, then (maybe) the bundle.
fn receive(back: &CommitsBack<'_>, stream: &Path) -> Result<Returned, Error> {
    let mut reader =
        std::io::BufReader::new(fs_err::File::open(stream).map_err(|err| Error::sandbox(err.to_string()))?);
    let mut first = Vec::new();
    (&mut reader).take(200).read_until(b'\n', &mut first).map_err(|err| Error::sandbox(err.to_string()))?;
    let first = String::from_utf8_lossy(&first);
    let first = first.trim_end();
    if first == "missing" {
        return Err(Error::sandbox(format!(
            "the run's branch `{}` is gone from the sandbox's repository",
            back.branch
        ))
        .with_hint("the agent deleted or renamed its branch; its work stays in the sandbox only"));
    }
    let Some(tip) = first.strip_prefix("tip ").filter(|id| is_object_id(id)) else {
        return Err(Error::sandbox(format!("the sandbox answered `{first}` instead of its branch's commit")));
    };
    if back.shared_files {
        refuse_nested_repository(back.host_worktree)?;
    }
    let host = Git::new(back.host_worktree);
    if host.resolve("HEAD")?.as_deref() == Some(tip) {
        return Ok(Returned::Nothing);
    }
    let bundle = back.scratch.join("incoming.bundle");
    let copied = fs_err::File::create(&bundle)
        .and_then(|mut file| std::io::copy(&mut reader, &mut file))
        .map_err(|err| Error::sandbox(format!("cannot keep the sandbox's commits: {err}")))?;
    if copied > 0 {
        // A fetch reads every worktree's metadata, which other runs add and remove under this
        // lock: without it, a worktree removed meanwhile fails the fetch.
        let lock = crate::lock::RepoLock::acquire(
            back.repository_lock,
            back.run_id,
            "fetching the agent's commits",
            &mut |_| {},
        )?;
        let fetched = host.run([
            "-c".as_ref(),
            "transfer.fsckObjects=true".as_ref(),
            "fetch".as_ref(),
            "--quiet".as_ref(),
            "--no-tags".as_ref(),
            "--no-recurse-submodules".as_ref(),
            "--no-write-fetch-head".as_ref(),
            bundle.as_os_str(),
            format!("refs/heads/{}", back.branch).as_ref(),
        ]);
        drop(lock);
        fetched.map_err(|err| {
            Error::sandbox(format!("the sandbox's commits were refused: {}", err.message))
                .with_hint("eden checks every object that comes back; the branch keeps what it had before")
        })?;
    }
    let _ = std::fs::remove_file(&bundle);
    // The tip must now be a commit the host has (fetched, or one it had).
    if host.resolve(tip)?.as_deref() != Some(tip) {
        return Err(Error::sandbox(format!("the sandbox's branch names `{tip}`, which did not come back")));
    }
    if let Some(base) = back.known.last() {
        check_what_came_back(&host, base, tip, back.branch)?;
    }
    let mode = if back.shared_files { "--mixed" } else { "--keep" };
    host.run(["reset", "--quiet", mode, tip]).map_err(|err| {
        Error::git(format!("cannot move the worktree to the agent's commit {}: {}", short(tip), err.message))
            .with_hint("a file the host side put in the worktree is in the way of the agent's commit")
    })?;
    Ok(Returned::MovedTo(tip.to_owned()))
}

/// What the sandbox's branch now holds must be the run's own work: it grows from where the run
/// started (an agent that pointed its branch at another of the person's branches would have
/// that branch merged), and no commit of it adds, changes or removes anything under `.eden/`,
/// eden's own state (records, sessions, `.env`), which a merge would otherwise write into the
/// person's checkout.
fn check_what_came_back(host: &Git, base: &str, tip: &str, branch: &str) -> Result<(), Error> {
    if !host.check(["merge-base", "--is-ancestor", base, tip])? {
        return Err(Error::sandbox(format!(
            "the sandbox's branch `{branch}` is at {}, which does not grow from the run's start {}",
            short(tip),
            short(base)
        ))
        .with_hint(
            "the agent pointed its branch elsewhere (another branch, a rewritten history); nothing of it is merged",
        ));
    }
    let touched = host.run(["log", "--no-renames", "--name-only", "--format=", "-z", &format!("{base}..{tip}")])?;
    let mut state: Vec<&str> = touched.split('\0').filter(|path| in_eden_state(path)).collect();
    state.sort_unstable();
    state.dedup();
    if state.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = state.iter().take(5).map(|path| format!("`{path}`")).collect();
    let more = if state.len() > 5 { format!(" and {} more", state.len() - 5) } else { String::new() };
    Err(Error::sandbox(format!("the agent's commits touch eden's own folder: {}{more}", shown.join(", ")))
        .with_hint("`.eden/` holds eden's records, sessions and your `.env`; nothing an agent commits there is merged"))
}

/// Is `path` (relative to the repository's top) under `.eden/` (in any case, as a filesystem
/// that folds case or trailing dots would see it)?
fn in_eden_state(path: &str) -> bool {
    let first = path.split('/').next().unwrap_or_default();
    first.trim_end_matches(['.', ' ']).eq_ignore_ascii_case(EDEN_DIR) && !path.is_empty()
}

/// In a worktree the agent wrote directly: a `.git` anywhere below its top (a repository, or a
/// pointer to one, of the agent's making) would have git on the host read its config (git
/// looks into submodules and nested repositories). eden runs no git there while one exists.
pub(crate) fn refuse_nested_repository(worktree: &Path) -> Result<(), Error> {
    let found = crate::safe_fs::Dir::open(worktree).ok().and_then(|dir| find_dot_git(&dir, Path::new(""), true));
    match found {
        None => Ok(()),
        Some(path) => Err(Error::sandbox(format!(
            "the agent made a git repository of its own in the worktree, at `{}`: eden runs no git in a worktree holding one",
            path.display()
        ))
        .with_hint(format!(
            "look at {} without git, and remove `{}` before running git there",
            worktree.display(),
            path.display()
        ))),
    }
}

fn find_dot_git(dir: &crate::safe_fs::Dir, at: &Path, top: bool) -> Option<PathBuf> {
    for (name, kind) in dir.entries().ok()? {
        let lower = name.to_string_lossy().to_ascii_lowercase();
        let path = at.join(&name);
        if lower.trim_end_matches(['.', ' ']) == ".git" || lower == "git~1" {
            if !top || lower != ".git" {
                return Some(path);
            }
            continue;
        }
        if kind == crate::safe_fs::Kind::Dir {
            if let Some(found) = dir.dir(Path::new(&name)).ok().and_then(|child| find_dot_git(&child, &path, false)) {
                return Some(found);
            }
        }
    }
    None
}

fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

/// Prints a binary diff of everything the agent left uncommitted (tracked and untracked, what
/// its git ignores aside) against the commit the host has, through a scratch index.
pub(crate) const PATCH_SCRIPT: &str = with_eden_config!(
    r#"set -e
index="$(git rev-parse --git-dir)/eden-patch-index"
cp "$(git rev-parse --git-path index)" "$index" 2>/dev/null || :
export GIT_INDEX_FILE="$index"
git add -A .
git diff --cached --binary --full-index --no-color --no-ext-diff --no-textconv --no-renames "$1" --
rm -f "$index""#
);

/// The agent's uncommitted work, saved as `patch` on the host (written in `scratch` first, so
/// no patch file or folder appears when there is nothing). `Ok(0)` when there is none; else how
/// many files it touches.
pub(crate) fn save_uncommitted(
    channel: &dyn Channel,
    tip: &str,
    scratch: &Path,
    patch: &Path,
    limit: u64,
) -> Result<usize, Error> {
    fs_err::create_dir_all(scratch).map_err(|err| Error::sandbox(err.to_string()))?;
    let incoming = scratch.join("uncommitted.patch");
    let file = fs_err::File::create(&incoming).map_err(|err| Error::sandbox(err.to_string()))?;
    let capped = shell(channel, PATCH_SCRIPT, &[tip])?
        .output_to_file_capped(file.into_parts().0, limit)
        .map_err(|err| Error::sandbox(format!("cannot ask the sandbox for its uncommitted work: {err}")))?;
    if capped.over {
        let _ = std::fs::remove_file(&incoming);
        return Err(over_max_return("uncommitted work", limit));
    }
    let output = capped.output;
    if !output.success() {
        let _ = std::fs::remove_file(&incoming);
        return Err(Error::sandbox(format!("cannot read the agent's uncommitted work: {}", last_line(&output.stderr))));
    }
    let files = check_patch(&incoming, limit);
    if files.as_ref().is_ok_and(|files| *files == 0) {
        let _ = std::fs::remove_file(&incoming);
        return Ok(0);
    }
    // Kept whether or not it passes the checks: the person may want to read it.
    if let Some(parent) = patch.parent() {
        fs_err::create_dir_all(parent).map_err(|err| Error::sandbox(err.to_string()))?;
    }
    fs_err::rename(&incoming, patch).map_err(|err| Error::sandbox(err.to_string()))?;
    files.map_err(|err| {
        Error::sandbox(err.message.clone())
            .with_hint(format!("the patch is kept at {} for you to read; nothing was applied", patch.display()))
    })
}

/// Every path a patch names must be a plain relative path with no `.git` component (in any
/// case): the patch is the agent's words. The files it writes whole (binary `literal` hunks)
/// may add up to at most `limit` bytes, and it may touch at most `MAX_PATCH_FILES` files.
/// Returns how many files it touches.
pub(crate) fn check_patch(patch: &Path, limit: u64) -> Result<usize, Error> {
    let file = fs_err::File::open(patch).map_err(|err| Error::sandbox(err.to_string()))?;
    let mut files = 0;
    let mut literal: u64 = 0;
    let refuse = |path: &str| {
        Error::sandbox(format!("the agent's uncommitted work names the path `{path}`, which eden does not apply"))
    };
    for line in std::io::BufReader::new(file).split(b'\n') {
        let line = line.map_err(|err| Error::sandbox(err.to_string()))?;
        let line = String::from_utf8_lossy(&line);
        if let Some(size) = line.strip_prefix("literal ").or_else(|| line.strip_prefix("delta ")) {
            literal = literal.saturating_add(size.trim().parse::<u64>().unwrap_or(u64::MAX));
            if literal > limit {
                return Err(over_max_return("binary files in its uncommitted work", limit));
            }
        }
        let paths: Vec<&str> = if let Some(rest) = line.strip_prefix("diff --git ") {
            files += 1;
            if files > MAX_PATCH_FILES {
                return Err(Error::sandbox(format!(
                    "the agent's uncommitted work touches more than {MAX_PATCH_FILES} files, which eden does not apply"
                )));
            }
            match rest.split_once(" b/") {
                Some((a, b)) => vec![a.strip_prefix("a/").unwrap_or(a), b],
                None => return Err(refuse(rest)),
            }
        } else if let Some(rest) = line.strip_prefix("--- ").or_else(|| line.strip_prefix("+++ ")) {
            match rest {
                "/dev/null" => vec![],
                _ => vec![rest.strip_prefix("a/").or_else(|| rest.strip_prefix("b/")).unwrap_or(rest)],
            }
        } else if let Some(rest) =
            ["rename from ", "rename to ", "copy from ", "copy to "].iter().find_map(|prefix| line.strip_prefix(prefix))
        {
            vec![rest]
        } else {
            vec![]
        };
        for path in paths {
            if !plain_path(path) {
                return Err(refuse(path));
            }
            if in_eden_state(path) {
                return Err(Error::sandbox(format!(
                    "the agent's uncommitted work names `{path}`, in eden's own folder, which eden does not apply"
                )));
            }
        }
    }
    Ok(files)
}

/// A path git may write in a worktree: relative, no `.`/`..` components, no `.git` (any case,
/// and its 8.3 short form), nothing quoted (git quotes unusual names; eden then refuses them
/// rather than guess).
fn plain_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.starts_with('"')
        && path.split('/').all(|part| {
            let lower = part.trim_end_matches(['.', ' ']).to_ascii_lowercase();
            !part.is_empty() && part != "." && part != ".." && lower != ".git" && lower != "git~1"
        })
}

/// The most files one patch of uncommitted work may touch.
const MAX_PATCH_FILES: usize = 100_000;

/// Apply a checked patch to the host worktree with git's own safety (`git apply` refuses paths
/// beyond a symlink and outside the worktree), no file it writes larger than `limit` (a binary
/// delta may inflate far past its own size).
pub(crate) fn apply_patch(host_worktree: &Path, patch: &Path, limit: u64) -> Result<(), Error> {
    let apply = Git::new(host_worktree)
        .command(["apply".as_ref(), "--whitespace=nowarn".as_ref(), patch.as_os_str()])
        .file_size_limit(limit);
    let applied = apply.output().map_err(|err| Error::sandbox(format!("cannot run `{apply}`: {err}")));
    use std::os::unix::process::ExitStatusExt;
    let (failed, over) = match applied {
        Ok(output) if output.success() => return Ok(()),
        Ok(output) if output.status.signal() == Some(nix::sys::signal::Signal::SIGXFSZ as i32) => {
            (format!("a file it writes would be {OVER_MAX_RETURN} ({})", crate::values::format_size(limit)), true)
        }
        Ok(output) => (last_line(&output.stderr).to_owned(), false),
        Err(err) => (err.message, false),
    };
    let error = Error::sandbox(format!("cannot apply the agent's uncommitted work to the worktree: {failed}"))
        .with_hint(format!("the patch is kept at {}; apply it by hand with `git apply`", patch.display()));
    Err(match over {
        true => error.with_reason(Reason::OverMaxReturn),
        false => error,
    })
}

/// Commits since `base` as a bundle, and every uncommitted change as a patch.
const SALVAGE_BUNDLE_SCRIPT: &str = with_eden_config!(r#"git bundle create -q - "refs/heads/$1" "^$2""#);

/// Save what a sandbox holds that did not come back, as data for the person: the branch's
/// commits since `base` as `<patches>/<run>.salvaged.bundle`, everything uncommitted as
/// `<run>.salvaged.patch`. Nothing is applied. Returns the files saved (none when there was
/// nothing, or the sandbox could not be asked).
pub(crate) fn salvage(
    channel: &dyn Channel,
    branch: &str,
    base: &str,
    patches: &Path,
    run_id: &str,
    limit: u64,
) -> Vec<PathBuf> {
    salvage_within(channel, branch, base, patches, run_id, limit).0
}

/// `salvage`, and whether anything was over `limit` (and so not saved).
pub(crate) fn salvage_within(
    channel: &dyn Channel,
    branch: &str,
    base: &str,
    patches: &Path,
    run_id: &str,
    limit: u64,
) -> (Vec<PathBuf>, bool) {
    let _ = fs_err::create_dir_all(patches);
    let (mut saved, mut over) = (Vec::new(), false);
    let jobs = [(SALVAGE_BUNDLE_SCRIPT, "bundle", vec![branch, base]), (PATCH_SCRIPT, "patch", vec!["HEAD"])];
    for (script, extension, args) in jobs {
        let path = patches.join(format!("{run_id}.salvaged.{extension}"));
        let Ok(file) = std::fs::File::create(&path) else { continue };
        let Ok(command) = shell(channel, script, &args) else { continue };
        let capped = command.output_to_file_capped(file, limit);
        over |= capped.as_ref().is_ok_and(|capped| capped.over);
        let ok = capped.is_ok_and(|capped| !capped.over && capped.output.success());
        if ok && std::fs::metadata(&path).is_ok_and(|meta| meta.len() > 0) {
            saved.push(path);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    (saved, over)
}

/// The error of work that could not be brought back, with where it was saved instead.
pub(crate) fn salvaged_error(error: Error, saved: &[PathBuf]) -> Error {
    let hint = error.hint.clone().unwrap_or_default();
    let saved = match saved {
        [] => "nothing else could be saved from the sandbox".to_owned(),
        files => format!(
            "what the sandbox held is saved as {} (fetch a bundle with `git -c transfer.fsckObjects=true fetch FILE BRANCH`; read a patch, then `git apply` it)",
            files.iter().map(|f| format!("`{}`", f.display())).collect::<Vec<_>>().join(" and ")
        ),
    };
    error.with_hint(if hint.is_empty() { saved } else { format!("{hint}; {saved}") })
}

fn last_line(text: &str) -> &str {
    text.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("no output").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_worktree_paths_pass() {
        for good in ["a.txt", "src/main.rs", "dir/.gitignore", "x/.github/workflows/ci.yml", "a..b"] {
            assert!(plain_path(good), "{good}");
        }
        for bad in [
            ".git/config",
            "sub/.GIT/hooks/x",
            "sub/.git",
            "../x",
            "/etc/passwd",
            "a/./b",
            "GIT~1/config",
            ".git. /x",
            "\"quoted\"",
            "",
        ] {
            assert!(!plain_path(bad), "{bad}");
        }
    }

    #[test]
    fn a_patch_naming_git_paths_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let patch = temp.path().join("p.patch");
        std::fs::write(
            &patch,
            "diff --git a/ok.txt b/ok.txt\nnew file mode 100644\n--- /dev/null\n+++ b/ok.txt\n@@ -0,0 +1 @@\n+x\n",
        )
        .unwrap();
        assert_eq!(check_patch(&patch, 1 << 30).unwrap(), 1);
        std::fs::write(&patch, "diff --git a/x b/x\nrename from x\nrename to .git/hooks/post-checkout\n").unwrap();
        assert!(check_patch(&patch, 1 << 30).unwrap_err().message.contains(".git/hooks/post-checkout"));
        std::fs::write(&patch, "diff --git a/a b/a\n--- a/a\n+++ b/../../escape\n").unwrap();
        assert!(check_patch(&patch, 1 << 30).is_err());
        for state in [".eden/.env", ".EDEN/runs/x.json", ".eden./sessions/x"] {
            std::fs::write(&patch, format!("diff --git a/{state} b/{state}\nnew file mode 100644\n")).unwrap();
            assert!(check_patch(&patch, 1 << 30).unwrap_err().message.contains("eden's own folder"), "{state}");
        }
        std::fs::write(&patch, "diff --git a/x b/y\nrename from x\nrename to .eden/runs/last.json\n").unwrap();
        assert!(check_patch(&patch, 1 << 30).is_err());
    }

    #[test]
    fn a_patch_whose_binary_files_would_be_too_big_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let patch = temp.path().join("p.patch");
        let bomb = "diff --git a/z.bin b/z.bin\nnew file mode 100644\nGIT binary patch\nliteral 4294967296\nzcmeIu0Sy2E00062\n\n";
        std::fs::write(&patch, bomb).unwrap();
        assert!(check_patch(&patch, 20 << 20).unwrap_err().message.contains(OVER_MAX_RETURN));
        assert_eq!(check_patch(&patch, 8 << 30).unwrap(), 1, "within the limit it is taken");
    }

    #[test]
    fn eden_state_is_the_top_folder_only() {
        assert!(in_eden_state(".eden/.env") && in_eden_state(".Eden/runs/a.json") && in_eden_state(".eden"));
        assert!(!in_eden_state("src/.eden/x") && !in_eden_state(".edenrc") && !in_eden_state(""));
    }

    #[test]
    fn ids_are_hex_of_a_hash_length() {
        assert!(is_object_id(&"a".repeat(40)));
        assert!(!is_object_id(&"A".repeat(40)));
        assert!(!is_object_id("abc"));
        assert!(!is_object_id(&format!("{}; rm -rf /", "a".repeat(40))));
    }
}
