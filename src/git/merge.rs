//! Merging a run's branch back into its target. The merge is computed first with
//! `git merge-tree --write-tree`, which touches nothing: a conflict is reported with the target
//! exactly as it was. Only a clean merge is then carried out — with `git merge` in the worktree
//! that has the target checked out (so its files follow), or by updating the ref directly when
//! the target is not checked out anywhere.

use super::{Git, WorktreeList};
use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeResult {
    /// The target already contains the branch.
    UpToDate,
    FastForward {
        commit: String,
    },
    Merged {
        commit: String,
    },
    Conflict {
        files: Vec<String>,
    },
}

pub fn merge_into(git: &Git, branch: &str, target: &str) -> Result<MergeResult, Error> {
    let missing = |name: &str| Error::git(format!("branch `{name}` does not exist"));
    let target_commit = git.branch_commit(target)?.ok_or_else(|| missing(target))?;
    let branch_commit = git.branch_commit(branch)?.ok_or_else(|| missing(branch))?;
    let merge_base = git.run(["merge-base", &target_commit, &branch_commit])?;
    if merge_base == branch_commit {
        return Ok(MergeResult::UpToDate);
    }
    let fast_forward = merge_base == target_commit;
    let mut tree = String::new();
    if !fast_forward {
        let (preview, _) =
            git.output(["merge-tree", "--write-tree", "--name-only", "--no-messages", &target_commit, &branch_commit])?;
        let mut lines = preview.stdout.lines();
        tree = lines.next().unwrap_or_default().trim().to_owned();
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
    }
    // Merge commits need an identity; fast-forwards do not.
    let identity = if fast_forward { Vec::new() } else { identity_args(git)? };

    if let Some(checkout) = WorktreeList::read(git)?.find_branch(target).map(Git::new) {
        let mut args = identity;
        args.extend(["merge", "--no-edit", "--quiet", branch].map(String::from));
        let (output, _) = checkout.output(&args)?;
        if !output.success() {
            // merge-tree said it is clean, so git refused up front (local changes in the way).
            // Should a merge have started anyway, undo it: never leave a half-done merge.
            if checkout.resolve("MERGE_HEAD")?.is_some() {
                let _ = checkout.run(["merge", "--abort"]);
            }
            let reason = format!("{}{}", output.stdout, output.stderr);
            return Err(Error::git(format!(
                "cannot merge `{branch}` into `{target}` in `{}`: {}",
                checkout.dir.display(),
                reason.trim()
            ))
            .with_hint(format!(
                "commit or stash the changes there, then run `git merge {branch}`; the branch is kept"
            )));
        }
        let commit = checkout.resolve("HEAD")?.unwrap_or_default();
        return Ok(if fast_forward { MergeResult::FastForward { commit } } else { MergeResult::Merged { commit } });
    }

    let reference = format!("refs/heads/{target}");
    if fast_forward {
        git.run(["update-ref", &reference, &branch_commit, &target_commit])?;
        return Ok(MergeResult::FastForward { commit: branch_commit });
    }
    let message = format!("Merge branch '{branch}' into {target}");
    let mut args = identity;
    args.extend(["commit-tree", &tree, "-p", &target_commit, "-p", &branch_commit, "-m", &message].map(String::from));
    let commit = git.run(&args)?;
    // The old value guards against the target moving while we merged.
    git.run(["update-ref", &reference, &commit, &target_commit])?;
    Ok(MergeResult::Merged { commit })
}

/// `-c user.name/-c user.email` for merge commits when the user has no identity configured;
/// the user's own identity otherwise.
fn identity_args(git: &Git) -> Result<Vec<String>, Error> {
    let has_name = git.check(["config", "user.name"])?;
    let has_email = git.check(["config", "user.email"])?;
    let mut args = Vec::new();
    if !has_name {
        args.extend(["-c".to_owned(), "user.name=eden".to_owned()]);
    }
    if !has_email {
        args.extend(["-c".to_owned(), "user.email=eden@localhost".to_owned()]);
    }
    Ok(args)
}
