//! What several commands share: where eden was started, the repository's layout, a run's last
//! commit.

/// The directory eden was started in.
pub(crate) fn current_dir() -> Result<std::path::PathBuf, crate::error::Error> {
    std::env::current_dir().map_err(|err| {
        crate::error::Error::internal("cannot read the current directory")
            .with_source(err)
            .with_hint("was it deleted while you were in it? `cd` there again")
    })
}

/// The repository's layout, from `--repo` or the current directory.
pub(crate) fn layout(repo: Option<&std::path::PathBuf>) -> Result<crate::layout::Layout, crate::error::Error> {
    let current = crate::commands::current_dir()?;
    let dir = repo.map_or_else(|| current.clone(), |repo| current.join(repo));
    let found = crate::git::Git::discover(&dir)?;
    Ok(crate::layout::Layout::new(found.root, found.common_dir))
}

/// The run's last commit: its branch's tip while it has one, else the last commit it recorded.
pub(crate) fn last_commit(
    git: &crate::git::Git,
    record: &crate::record::RunRecord,
) -> Result<Option<String>, crate::error::Error> {
    let branch = record.preserved_branch.as_deref().unwrap_or(&record.branch);
    // The branch's tip only where eden made the branch for that run: a record's word names no
    // branch of the person's.
    if let Some(tip) = git.branch_commit(branch)?.filter(|_| git.made_for(branch, &record.id)) {
        if tip != record.base_commit {
            return Ok(Some(tip));
        }
    }
    Ok(record.commits.last().map(|commit| commit.sha.clone()))
}
