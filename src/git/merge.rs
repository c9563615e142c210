//! Merging a run's branch back into its target without ever losing or clobbering anything. The
//! caller holds the repository lock (`lock::RepoLock`), so no other eden process merges, adds or
//! removes a worktree meanwhile.
//!
//! The merge is made first as objects only — `git merge-tree --write-tree`, then
//! `git commit-tree` — so a conflict is found with nothing touched. Then the target moves to the
//! result by a fast-forward, which either happens whole or not at all:
//! - target not checked out anywhere: `git update-ref` with the old value (compare-and-swap);
//! - target checked out: `git merge --ff-only <commit>` in that checkout, which carries the
//!   index and the files along and keeps the person's unrelated changes. It never starts a merge
//!   that could stop half-way, so eden never has anything to abort.
//!
//! Before touching a checkout, eden refuses when the person's uncommitted changes touch a file
//! the merge changes, when an untracked file stands where the merge adds one, or when the
//! checkout is in the middle of a merge, rebase, cherry-pick or revert: the checkout then stays
//! byte-identical. If the target moves while eden computes (someone commits), eden computes again.
//!
//! With `rebase`, a branch the target has moved away from is first replayed onto the target's
//! tip, commit by commit, again as objects only (`merge-tree --merge-base`, `commit-tree` with
//! each commit's author and message); when every commit replays without a conflict the target
//! fast-forwards to the replayed tip (linear history), otherwise eden merges as without it. The
//! run's branch itself is not moved (its worktree has it checked out).

use super::{Git, WorktreeList};
use crate::error::Error;
use std::collections::HashSet;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MergeResult {
    /// The target already contains the branch.
    UpToDate,
    FastForward {
        commit: String,
        /// The target's commit before: what the branch landed on.
        onto: String,
    },
    Merged {
        commit: String,
        onto: String,
    },
    /// The branch's commits replayed onto the target's tip, which fast-forwarded to them.
    Rebased {
        commit: String,
        onto: String,
        /// The replayed commits, oldest first.
        commits: Vec<super::Commit>,
    },
    Conflict {
        files: Vec<String>,
    },
}

/// How often to compute again when the target moved or the checkout's index was busy.
const ATTEMPTS: u32 = 6;

enum Attempt {
    Done(MergeResult),
    /// Nothing was changed, and trying again may succeed (why not this time).
    Again(String),
}

pub(crate) fn merge_into(git: &Git, branch: &str, target: &str, rebase: bool) -> Result<MergeResult, Error> {
    let mut why = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(100 << attempt.min(4)));
        }
        match try_merge(git, branch, target, rebase)? {
            Attempt::Done(result) => return Ok(result),
            Attempt::Again(reason) => why = reason,
        }
    }
    Err(Error::git(format!(
        "cannot merge `{branch}` into `{target}` after {ATTEMPTS} attempts: {why}; `{target}` was left untouched and `{branch}` is kept"
    ))
    .with_hint(format!("when the repository is quiet, merge by hand: `git switch {target} && git merge {branch}`")))
}

fn try_merge(git: &Git, branch: &str, target: &str, rebase: bool) -> Result<Attempt, Error> {
    let (target_commit, branch_commit) = tips(git, target, branch)?;
    let merge_base = git.run(["merge-base", &target_commit, &branch_commit])?;
    if merge_base == branch_commit {
        return Ok(Attempt::Done(MergeResult::UpToDate));
    }
    let onto = target_commit.clone();
    let replayed = match rebase && merge_base != target_commit {
        true => replay(git, &merge_base, &branch_commit, &target_commit)?,
        false => None,
    };
    let result = if merge_base == target_commit {
        MergeResult::FastForward { commit: branch_commit.clone(), onto }
    } else if let Some(commits) = replayed {
        let commit = commits.last().expect("a diverged branch has commits").sha.clone();
        MergeResult::Rebased { commit, onto, commits }
    } else {
        match three_way(git, (branch, &branch_commit), (target, &target_commit))? {
            conflict @ MergeResult::Conflict { .. } => return Ok(Attempt::Done(conflict)),
            merged => merged,
        }
    };
    let (MergeResult::FastForward { commit, .. }
    | MergeResult::Merged { commit, .. }
    | MergeResult::Rebased { commit, .. }) = &result
    else {
        unreachable!("only these move the target")
    };

    let Some(checkout) = WorktreeList::read(git)?.find_branch(target).map(Git::new) else {
        let reference = format!("refs/heads/{target}");
        let (output, command) = git.output(["update-ref", &reference, commit, &target_commit])?;
        if output.success() {
            return Ok(Attempt::Done(result));
        }
        if git.branch_commit(target)?.as_deref() != Some(target_commit.as_str()) {
            return Ok(Attempt::Again(format!("`{target}` moved while eden merged")));
        }
        return Err(super::git_failure(&command, &output.stderr));
    };

    refuse_if_busy(&checkout, target)?;
    let in_the_way = in_the_way(&checkout, &target_commit, commit)?;
    if !in_the_way.is_empty() {
        return Err(checkout_in_the_way(branch, target, &checkout, &in_the_way));
    }
    let (output, _) = checkout.output(["merge", "--ff-only", "--quiet", commit])?;
    if output.success() {
        return Ok(Attempt::Done(result));
    }
    if checkout.branch_commit(target)?.as_deref() != Some(target_commit.as_str()) {
        return Ok(Attempt::Again(format!("`{target}` moved while eden merged")));
    }
    // The ref did not move, but git updates the index and the files before the ref (a ref
    // another process holds locked fails only at the end): put them back where they were, the
    // person's own changes kept, so the checkout matches the branch that did not move.
    put_back(&checkout, commit, &target_commit)?;
    let reason = format!("{}{}", output.stdout, output.stderr);
    if reason.contains("index.lock") {
        return Ok(Attempt::Again(format!(
            "another git process is using the index of `{}` (`index.lock`)",
            checkout.dir.display()
        )));
    }
    Err(Error::git(format!(
        "cannot merge `{branch}` into `{target}` in `{}`: {}; `{target}` was left untouched and `{branch}` is kept",
        checkout.dir.display(),
        reason.trim()
    ))
    .with_hint(format!("once the checkout is ready, merge by hand there: `git merge {branch}`")))
}

/// A merge commit of `branch` into `target` (each with its tip), made without a checkout
/// (`git merge-tree`), or the files that conflict.
fn three_way(
    git: &Git,
    (branch, branch_commit): (&str, &str),
    (target, target_commit): (&str, &str),
) -> Result<MergeResult, Error> {
    let (preview, _) =
        git.output(["merge-tree", "--write-tree", "--name-only", "--no-messages", target_commit, branch_commit])?;
    let mut lines = preview.stdout.lines();
    let tree = lines.next().unwrap_or_default().trim().to_owned();
    match preview.status.code() {
        Some(0) => {}
        Some(1) => {
            let files = lines.map(str::to_owned).filter(|l| !l.is_empty()).collect();
            return Ok(MergeResult::Conflict { files });
        }
        _ => {
            return Err(Error::git(format!("`git merge-tree` failed: {}", preview.stderr.trim()))
                .with_hint("eden needs git 2.38 or newer"))
        }
    }
    let message = format!("Merge branch '{branch}' into {target}");
    let mut args = identity_args(git)?;
    args.extend(["commit-tree", &tree, "-p", target_commit, "-p", branch_commit, "-m", &message].map(String::from));
    Ok(MergeResult::Merged { commit: git.run(&args)?, onto: target_commit.to_owned() })
}

/// After a fast-forward that moved the index and files but not the ref: back from `advanced`
/// to `kept` (a two-tree `read-tree -m -u`, which keeps unrelated local changes), then checked:
/// every path the merge changes must be as `kept` has it, in the index and in the files.
fn put_back(checkout: &Git, advanced: &str, kept: &str) -> Result<(), Error> {
    let restored = checkout.run(["read-tree", "-m", "-u", advanced, kept]);
    let changed = checkout.run(["diff", "--name-only", "-z", kept, advanced])?;
    let paths: Vec<&str> = changed.split('\0').filter(|path| !path.is_empty()).collect();
    let mut check = vec!["diff-index", "--quiet", kept, "--"];
    check.extend(&paths);
    let index_back = checkout.check(&check)?;
    let mut cached = vec!["diff-index", "--quiet", "--cached", kept, "--"];
    cached.extend(&paths);
    if restored.is_ok() && index_back && checkout.check(&cached)? {
        return Ok(());
    }
    let by_hand =
        format!("`git -C {} read-tree -m -u {advanced} {kept}` puts the merge's files back", checkout.dir.display());
    // A full disk stopped the putting back too: the machine's failure (exit 70), said as such.
    if let Some(full) = restored.as_ref().err().filter(|err| err.kind == crate::error::ErrorKind::Internal) {
        return Err(Error::internal(format!(
            "a failed fast-forward left the checkout `{}` holding part of the merge, and eden could not put it back: {}",
            checkout.dir.display(),
            full.message
        ))
        .with_hint(format!("{}; then {by_hand}", super::repo::DISK_FULL_HINT)));
    }
    Err(Error::git(format!(
        "a failed fast-forward left the checkout `{}` holding part of the merge, and eden could not put it back",
        checkout.dir.display()
    ))
    .with_hint(format!(
        "its branch did not move; `git -C {} status` shows what differs — `git -C {} read-tree -m -u {advanced} {kept}` puts the merge's files back",
        checkout.dir.display(),
        checkout.dir.display()
    )))
}

/// The commits of `base..tip` replayed one by one onto `onto`, as new commits with the same
/// authors and messages; `None` when one of them would conflict, or the range holds a merge
/// (a rebase would flatten it). Nothing but objects is written.
fn replay(git: &Git, base: &str, tip: &str, onto: &str) -> Result<Option<Vec<super::Commit>>, Error> {
    let range = format!("{base}..{tip}");
    let log = git.run(["rev-list", "--reverse", "--parents", range.as_str()])?;
    let mut parent = onto.to_owned();
    let mut replayed = Vec::new();
    let identity = identity_args(git)?;
    for line in log.lines() {
        let mut shas = line.split_whitespace();
        let (Some(commit), Some(original_parent), None) = (shas.next(), shas.next(), shas.next()) else {
            return Ok(None);
        };
        let (tree, _) = git.output([
            "merge-tree",
            "--write-tree",
            "--no-messages",
            &format!("--merge-base={original_parent}"),
            &parent,
            commit,
        ])?;
        if tree.status.code() != Some(0) {
            return Ok(None);
        }
        let tree = tree.stdout.lines().next().unwrap_or_default().trim().to_owned();
        let about = git.run(["log", "-1", "--format=%an%x00%ae%x00%ad%x00%s%x00%B", "--date=raw", commit])?;
        let fields: Vec<&str> = about.splitn(5, '\0').collect();
        let [name, email, date, subject, message] = fields[..] else {
            return Err(Error::git(format!("cannot read commit {commit}")));
        };
        let mut args = identity.clone();
        args.extend(["commit-tree", &tree, "-p", &parent, "-F", "-"].map(String::from));
        let command = git
            .command(&args)
            .env("GIT_AUTHOR_NAME", name)
            .env("GIT_AUTHOR_EMAIL", email)
            .env("GIT_AUTHOR_DATE", date)
            .stdin(crate::process::Stdin::Bytes(message.as_bytes().to_vec()));
        let output = command.output().map_err(|err| Error::git(format!("cannot run `{command}`")).with_source(err))?;
        if !output.success() {
            return Err(super::git_failure(&command.to_string(), &output.stderr));
        }
        parent = output.stdout.trim().to_owned();
        replayed.push(super::Commit { sha: parent.clone(), subject: subject.to_owned() });
    }
    Ok(Some(replayed))
}

/// The commits two local branches point at, with one git call when both exist.
fn tips(git: &Git, first: &str, second: &str) -> Result<(String, String), Error> {
    let spec = |name: &str| format!("refs/heads/{name}^{{commit}}");
    let (output, _) = git.output(["rev-parse", "--quiet", &spec(first), &spec(second)])?;
    let mut lines = output.stdout.lines();
    if let (true, Some(a), Some(b)) = (output.success(), lines.next(), lines.next()) {
        return Ok((a.trim().to_owned(), b.trim().to_owned()));
    }
    for name in [first, second] {
        if git.branch_commit(name)?.is_none() {
            return Err(Error::git(format!("branch `{name}` does not exist")));
        }
    }
    Err(Error::git(format!("cannot read the branches `{first}` and `{second}`: {}", output.stderr.trim())))
}

/// A checkout in the middle of something the person started must be left alone.
fn refuse_if_busy(checkout: &Git, target: &str) -> Result<(), Error> {
    const STATES: [(&str, &str); 5] = [
        ("MERGE_HEAD", "a merge"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase or `git am`"),
    ];
    let git_dir = git_dir_of(&checkout.dir)?;
    for (name, what) in STATES {
        if git_dir.join(name).exists() {
            return Err(Error::git(format!(
                "the checkout `{}` of `{target}` is in the middle of {what}, so eden does not merge into it",
                checkout.dir.display()
            ))
            .with_hint("finish or abort it there; the run's branch is kept, merge it by hand afterwards"));
        }
    }
    Ok(())
}

/// A worktree's own git directory: its `.git` folder, or where its `.git` file points (linked
/// worktrees), read directly rather than by starting git.
fn git_dir_of(checkout: &std::path::Path) -> Result<std::path::PathBuf, Error> {
    let dot_git = checkout.join(".git");
    if dot_git.is_dir() {
        return Ok(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git)
        .map_err(|err| Error::git(format!("cannot read `{}`: {err}", dot_git.display())))?;
    let pointed = text.trim().strip_prefix("gitdir:").map(str::trim).unwrap_or_default();
    if pointed.is_empty() {
        return Err(Error::git(format!("`{}` does not say where the worktree's git directory is", dot_git.display())));
    }
    Ok(checkout.join(pointed))
}

/// Files the fast-forward from `from` to `to` would change that the checkout has uncommitted
/// changes to, and files it would add where an untracked (or ignored) file already is.
fn in_the_way(checkout: &Git, from: &str, to: &str) -> Result<Vec<String>, Error> {
    let changes = checkout.run(["diff", "--name-status", "-z", "--no-renames", from, to])?;
    let status = checkout.run(["status", "--porcelain=v1", "-z", "--untracked-files=no"])?;
    // `XY path`, and for renames and copies the source path as the next field.
    let mut dirty = HashSet::new();
    let mut fields = status.split('\0').filter(|field| !field.is_empty());
    while let Some(entry) = fields.next() {
        if let Some(path) = entry.get(3..) {
            dirty.insert(path.to_owned());
        }
        if matches!(entry.as_bytes().first(), Some(b'R' | b'C')) {
            if let Some(source) = fields.next() {
                dirty.insert(source.to_owned());
            }
        }
    }
    let mut blocked = Vec::new();
    let mut fields = changes.split('\0').filter(|field| !field.is_empty());
    while let (Some(kind), Some(path)) = (fields.next(), fields.next()) {
        let added_over_a_file = kind == "A" && checkout.dir.join(path).symlink_metadata().is_ok();
        if dirty.contains(path) || added_over_a_file {
            blocked.push(path.to_owned());
        }
    }
    Ok(blocked)
}

fn checkout_in_the_way(branch: &str, target: &str, checkout: &Git, files: &[String]) -> Error {
    let listed: Vec<String> = files.iter().take(20).map(|file| format!("  {file}")).collect();
    let more = if files.len() > 20 { format!("\n  … and {} more", files.len() - 20) } else { String::new() };
    Error::git(format!(
        "cannot merge `{branch}` into `{target}`: uncommitted changes in `{}` touch files the merge changes; `{target}` and the checkout were left untouched and `{branch}` is kept\nfiles:\n{}{more}",
        checkout.dir.display(),
        listed.join("\n")
    ))
    .with_hint(format!(
        "commit or stash your changes to those files, then `git merge {branch}`; to keep runs off a busy checkout, use strategy `named`"
    ))
}

/// `-c user.name/-c user.email` for merge commits when the user has no identity configured;
/// the user's own identity otherwise.
fn identity_args(git: &Git) -> Result<Vec<String>, Error> {
    let (output, _) = git.output(["config", "--get-regexp", r"^user\.(name|email)$"])?;
    let set = |key: &str| output.stdout.lines().any(|line| line.split_whitespace().next() == Some(key));
    let (has_name, has_email) = (set("user.name"), set("user.email"));
    let mut args = Vec::new();
    if !has_name {
        args.extend(["-c".to_owned(), "user.name=eden".to_owned()]);
    }
    if !has_email {
        args.extend(["-c".to_owned(), "user.email=eden@localhost".to_owned()]);
    }
    Ok(args)
}
