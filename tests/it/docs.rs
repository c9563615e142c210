//! The documentation holds together: every relative link and anchor in the README, the book and
//! the man pages goes somewhere; the book lists every page it has; the front pages stay front
//! pages; and the manifest's JSON Schema agrees with eden on a corpus of manifests, valid and
//! not, checked by taplo as an editor would check them.

use crate::support::{TestEnv, EDEN};
use std::path::{Path, PathBuf};

fn source_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Markdown without its code: fenced blocks and inline code spans blanked (a link there is an
/// example, not a link).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if fenced {
            out.push('\n');
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            }
            out.push(if in_code { ' ' } else { c });
        }
        out.push('\n');
    }
    out
}

/// `[text](target)` targets in `text`'s prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            found.push(rest[..end].to_owned());
        }
    }
    found
}

/// The anchors of a Markdown file's headings, as mdBook (and GitHub) make them.
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let anchor = crate::reference::anchor(line.trim_start_matches('#').trim());
        found.push(anchor);
    }
    found
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = crate::generated::documents();
    files.push(source_dir().join("bench/README.md"));
    files.push(source_dir().join("ARCHITECTURE.md"));
    files
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            let shown = format!("{}: ({link})", file.strip_prefix(source_dir()).unwrap().display());
            if !target.exists() {
                broken.push(format!("{shown}: no such file"));
                continue;
            }
            if !anchor.is_empty()
                && !anchors(&std::fs::read_to_string(&target).unwrap_or_default()).iter().any(|a| a == anchor)
            {
                broken.push(format!("{shown}: no heading with that anchor"));
            }
        }
    }
    // The man pages name files of the source by path.
    for entry in std::fs::read_dir(source_dir().join("man")).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for word in text.split(|c: char| c.is_whitespace() || "()`'\"".contains(c)) {
            let word = word.trim_end_matches(['.', ',', ';', ':']);
            if word.ends_with(".md") && !source_dir().join(word).exists() {
                broken.push(format!("man/{}: {word}: no such file", entry.file_name().to_string_lossy()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every page of `docs/src` is in `SUMMARY.md` (mdBook builds only those), and every page it
/// lists exists.
#[test]
fn the_book_lists_every_page() {
    let src = source_dir().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: Vec<PathBuf> = links(&summary).iter().map(|link| src.join(link)).collect();
    for page in &listed {
        assert!(page.exists(), "SUMMARY.md lists {}, which is not there", page.display());
    }
    for page in crate::generated::documents().into_iter().filter(|page| page.starts_with(&src)) {
        if page.file_name().is_some_and(|name| name == "SUMMARY.md") {
            continue;
        }
        assert!(listed.contains(&page), "{} is not in SUMMARY.md", page.display());
    }
}

/// The README is a front page and ARCHITECTURE.md a map: the rest is the book's.
#[test]
fn the_front_pages_stay_short() {
    for (file, most) in [("README.md", 15_000), ("ARCHITECTURE.md", 20_000)] {
        let size = std::fs::metadata(source_dir().join(file)).unwrap().len();
        assert!(size <= most, "{file} is {size} bytes, more than {most}: move the detail into the book");
    }
}

/// The manifests of the corpus: `manifests/*.toml`, and every whole manifest (one with a
/// prompt) the README and the book show.
fn valid_corpus() -> Vec<(String, String, Option<PathBuf>)> {
    let mut corpus = Vec::new();
    for entry in std::fs::read_dir(source_dir().join("manifests")).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let name = format!("manifests/{}", entry.file_name().to_string_lossy());
            corpus.push((name, std::fs::read_to_string(&path).unwrap(), Some(path)));
        }
    }
    for file in crate::generated::documents() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, block) in text.split("```toml\n").skip(1).enumerate() {
            let block = block.split("\n```").next().unwrap();
            if block.lines().any(|line| line.starts_with("prompt")) && block.contains("[agent]") {
                let shown = format!("{}, toml block {}", file.strip_prefix(source_dir()).unwrap().display(), n + 1);
                corpus.push((shown, format!("{block}\n"), None));
            }
        }
    }
    corpus
}

/// What eden and the schema must both refuse: a typo, a wrong type, an unknown section, a bad
/// value.
const INVALID: [(&str, &str); 5] = [
    ("a typo in a key", "prompt = \"x\"\n[loop]\nmax_iteratons = 3\n"),
    ("a wrong type", "prompt = 3\n"),
    ("an unknown section", "prompt = \"x\"\n[sandbx]\nkind = \"docker\"\n"),
    ("a value not in the list", "prompt = \"x\"\n[sandbox]\nkind = \"vm\"\n"),
    ("a duration eden cannot read", "prompt = \"x\"\n[loop]\nidle_timeout = \"ten minutes\"\n"),
];

/// taplo, as `.ci/run` installs it (`@taplo/cli` from npm): `None` when this machine has none.
fn taplo() -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join("taplo")).find(|path| path.is_file())
}

/// Does taplo find `manifest` valid against the checked-in schema, as an editor would?
fn taplo_accepts(taplo: &Path, dir: &Path, manifest: &str) -> (bool, String) {
    let path = dir.join("manifest.toml");
    std::fs::write(&path, manifest).unwrap();
    let schema = format!("file://{}", source_dir().join("eden.schema.json").display());
    let out = std::process::Command::new(taplo)
        .args(["check", "--no-auto-config", "--schema", &schema])
        .arg(&path)
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Does eden read `manifest` (`eden run --dry-run`, in a repository, with the variables the
/// examples name set)? From `at` when it is a file of eden's (its paths are relative to it).
fn eden_accepts(env: &TestEnv, manifest: &str, at: Option<&Path>) -> (bool, String) {
    let path = at.map_or_else(|| env.root().join("corpus.toml"), Path::to_path_buf);
    if at.is_none() {
        std::fs::write(&path, manifest).unwrap();
    }
    // A prompt's `{{KEY}}` the example leaves to `--arg` is given one, as its reader would.
    let mut args: Vec<String> = Vec::new();
    loop {
        let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--dry-run"]);
        command.args(&args);
        for key in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "API_KEY", "DB_PASSWORD", "GITHUB_TOKEN", "MY_VAR"] {
            command.env(key, "corpus-value");
        }
        let out = command.output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        let missing = said.split("no value is given for `").nth(1).and_then(|rest| rest.split('`').next());
        match missing {
            Some(key) if args.len() < 10 => args.extend(["--arg".to_owned(), format!("{key}=corpus")]),
            // 2 is the manifest's (or a flag's) error; anything else was past reading it.
            _ => return (out.status.code() != Some(2), said),
        }
    }
}

#[test]
fn the_schema_and_eden_agree_on_the_corpus() {
    let Some(taplo) = taplo() else {
        crate::support::skip("taplo is not installed (`npm install -g @taplo/cli`)");
        return;
    };
    let env = TestEnv::new();
    // What the examples mount, as their reader's machine has it.
    std::fs::create_dir_all(env.root().join("home/.cache/cargo")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let corpus = valid_corpus();
    assert!(corpus.len() >= 5, "{:?}", corpus.iter().map(|(name, _, _)| name).collect::<Vec<_>>());
    for (name, manifest, at) in &corpus {
        let (taplo_ok, said) = taplo_accepts(&taplo, scratch.path(), manifest);
        assert!(taplo_ok, "the schema refuses {name}:\n{said}");
        // A catalogue of every key (some for one agent kind, some for another) is TOML the
        // schema takes, but no one run's manifest.
        if manifest.starts_with("# every key, side by side") {
            continue;
        }
        let (eden_ok, said) = eden_accepts(&env, manifest, at.as_deref());
        assert!(eden_ok, "eden refuses {name}:\n{said}");
    }
    for (what, manifest) in INVALID {
        assert!(!taplo_accepts(&taplo, scratch.path(), manifest).0, "the schema accepts {what}");
        assert!(!eden_accepts(&env, manifest, None).0, "eden accepts {what}");
    }
}

/// `eden schema` prints the checked-in schema, which names a description for every key.
#[test]
fn every_key_is_documented_in_the_schema() {
    let out = std::process::Command::new(EDEN).arg("schema").output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed, std::fs::read_to_string(source_dir().join("eden.schema.json")).unwrap());
    let schema: serde_json::Value = serde_json::from_str(&printed).unwrap();
    let mut undocumented = Vec::new();
    let mut tables = vec![("(top level)".to_owned(), &schema)];
    for (name, definition) in schema["definitions"].as_object().unwrap() {
        tables.push((name.clone(), definition));
    }
    for (table, definition) in tables {
        for (key, property) in definition["properties"].as_object().into_iter().flatten() {
            if property["description"].as_str().is_none_or(str::is_empty) {
                undocumented.push(format!("{table}.{key}"));
            }
        }
    }
    assert!(undocumented.is_empty(), "keys without a doc comment in src/manifest/schema.rs: {undocumented:?}");
}
