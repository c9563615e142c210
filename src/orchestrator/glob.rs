//! Globs over paths relative to the repository's top, as `branch.protect` and
//! `hooks.host.reads` write them: `*` and `?` within a name, `**` any number of folders, a glob
//! without `/` a name at any depth, a folder everything in it.

/// Does `glob` match `path` (both relative to the repository's top)? `*` and `?` within a
/// folder's name, `**` any number of folders; a glob without `/` matches a name at any depth.
pub(crate) fn matches(glob: &str, path: &str) -> bool {
    let glob = glob.trim_start_matches("./").trim_end_matches('/');
    let path_parts: Vec<&str> = path.split('/').collect();
    if !glob.contains('/') {
        return path_parts.iter().any(|part| name_matches(glob.as_bytes(), part.as_bytes()));
    }
    let glob_parts: Vec<&str> = glob.split('/').collect();
    parts_match(&glob_parts, &path_parts)
        || (glob_parts.last() != Some(&"**") && prefix_match(&glob_parts, &path_parts))
}

/// A glob naming a folder covers what is in it.
fn prefix_match(glob: &[&str], path: &[&str]) -> bool {
    (1..path.len()).any(|end| parts_match(glob, &path[..end]))
}

fn parts_match(glob: &[&str], path: &[&str]) -> bool {
    match glob.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| parts_match(rest, &path[skip..])),
        Some((first, rest)) => path
            .split_first()
            .is_some_and(|(name, others)| name_matches(first.as_bytes(), name.as_bytes()) && parts_match(rest, others)),
    }
}

fn name_matches(glob: &[u8], name: &[u8]) -> bool {
    match glob.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| name_matches(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && name_matches(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && name_matches(rest, &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_documented() {
        assert!(matches(".github/workflows/**", ".github/workflows/ci.yml"));
        assert!(matches(".github/workflows/**", ".github/workflows/a/b.yml"));
        assert!(!matches(".github/workflows/**", ".github/other.yml"));
        assert!(matches(".claude/**", ".claude/settings.json"));
        assert!(matches(".claude", ".claude/settings.json"), "a folder covers what is in it");
        assert!(matches("*.lock", "deep/down/Cargo.lock"));
        assert!(matches("src/*.rs", "src/main.rs"));
        assert!(!matches("src/*.rs", "src/a/main.rs"));
        assert!(matches("src/**/*.rs", "src/main.rs") && matches("src/**/*.rs", "src/a/b/main.rs"));
        assert!(matches("Make?ile", "Makefile") && !matches("Make?ile", "Maakefile"));
    }
}
