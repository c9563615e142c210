//! Globs over paths relative to the repository's top, as `branch.protect`, `hooks.host.reads`
//! and `artifacts` write them: `*` and `?` within a name, `**` any number of folders, a glob
//! without `/` a name at any depth, a folder everything in it. `[`, `]`, `{`, `}` and `\` are
//! plain characters. Compiled once into a `globset` set, whose matching time grows with the
//! path, never with how the glob's stars can be arranged over it.

/// A compiled list of globs: does any of them match a path?
pub(crate) struct Globs(globset::GlobSet);

impl Globs {
    pub(crate) fn new<'a>(globs: impl IntoIterator<Item = &'a str>) -> Globs {
        let mut set = globset::GlobSetBuilder::new();
        for glob in globs.into_iter().flat_map(compiled) {
            set.add(glob);
        }
        Globs(set.build().unwrap_or_else(|_| globset::GlobSet::empty()))
    }

    /// Does a glob match `path` (relative to the repository's top, `/`-separated)?
    pub(crate) fn matches(&self, path: &str) -> bool {
        self.0.is_match(path)
    }
}

/// One glob as globset's: every special character but `*` and `?` is escaped, so each of its
/// patterns builds (`every_glob_compiles` holds that: a glob that did not would protect nothing).
fn compiled(glob: &str) -> Vec<globset::Glob> {
    let build =
        |pattern: &String| globset::GlobBuilder::new(pattern).literal_separator(true).backslash_escape(false).build();
    patterns(glob).iter().filter_map(|pattern| build(pattern).ok()).collect()
}

/// The globset patterns of one glob: itself (anywhere, when it has no `/`), and what is in it.
fn patterns(glob: &str) -> Vec<String> {
    let glob = glob.trim_start_matches("./").trim_end_matches('/');
    if glob.is_empty() {
        return Vec::new();
    }
    let plain = plain_brackets(glob);
    let at = if glob.contains('/') { plain } else { format!("**/{plain}") };
    let mut patterns = vec![format!("{at}/**")];
    // `a/**` is also the folder `a` itself.
    patterns.push(at.strip_suffix("/**").map(str::to_owned).unwrap_or(at));
    patterns
}

/// `glob` with globset's classes and alternatives turned into the characters they are spelt with.
fn plain_brackets(glob: &str) -> String {
    let mut plain = String::with_capacity(glob.len());
    for c in glob.chars() {
        match c {
            '[' | ']' | '{' | '}' | '\\' => {
                plain.push('[');
                plain.push(c);
                plain.push(']');
            }
            c => plain.push(c),
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(glob: &str, path: &str) -> bool {
        Globs::new([glob]).matches(path)
    }

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
        assert!(matches("./scripts/", "scripts/lib.sh"));
        assert!(matches("node_modules", "web/node_modules/x/index.js"), "a name at any depth covers what is in it");
        assert!(!matches("*.lock", "Cargo.lock.d/x"));
        assert!(!matches("", "anything"));
    }

    #[test]
    fn brackets_and_braces_are_plain_characters() {
        assert!(matches("pages/[id].tsx", "pages/[id].tsx"));
        assert!(!matches("pages/[id].tsx", "pages/i.tsx"));
        assert!(matches("{a,b}.txt", "{a,b}.txt") && !matches("{a,b}.txt", "a.txt"));
        assert!(matches(r"back\slash", r"back\slash"));
    }

    #[test]
    fn many_stars_over_a_long_name_answer_at_once() {
        // Backtracking over this took exponential time; an automaton reads the path once.
        let glob = format!("{}b", "*a".repeat(40));
        let path = format!("{}/{}", "a".repeat(4000), "a".repeat(4000));
        assert!(!matches(&glob, &path));
        assert!(matches(&glob, &format!("{path}b")));
    }

    #[test]
    fn every_glob_compiles() {
        let odd = [
            "a**b", "**", "***", "x/**/", "[", "]", "{", "}", "[!a]", "{a,", "\\", "a\\*", "?*?", "**/**/x", "é*ñ",
            "a b/c d",
        ];
        for glob in odd {
            assert_eq!(compiled(glob).len(), 2, "{glob:?} would protect nothing");
        }
    }
}
