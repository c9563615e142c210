//! Loading a manifest: read the file, apply `--set` overrides, deserialize strictly, and turn
//! every error into a message that names the file, line and column (or the flag) it came from.
//!
//! Deserialization runs on a merged `toml::Table`, so serde errors carry only a key path
//! (tracked with `serde_path_to_error`); `Source::locate` maps that path back to a position
//! through a span-preserving parse of the same text.

use super::schema::Manifest;
use crate::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};
use toml_edit::{ImDocument, Item, Table, Value};

/// One segment of a key path: `step[1].agent.model`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KeyPath(pub(crate) Vec<Segment>);

impl KeyPath {
    pub(crate) fn parse(dotted: &str) -> KeyPath {
        KeyPath(
            dotted
                .split('.')
                .map(|part| match part.parse::<usize>() {
                    Ok(index) => Segment::Index(index),
                    Err(_) => Segment::Key(part.to_owned()),
                })
                .collect(),
        )
    }

    pub(crate) fn child(&self, key: &str) -> KeyPath {
        let mut path = self.clone();
        path.0.push(Segment::Key(key.to_owned()));
        path
    }

    pub(crate) fn index(&self, index: usize) -> KeyPath {
        let mut path = self.clone();
        path.0.push(Segment::Index(index));
        path
    }

    fn starts_with(&self, prefix: &KeyPath) -> bool {
        self.0.len() >= prefix.0.len() && self.0[..prefix.0.len()] == prefix.0[..]
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if i == 0 => write!(f, "{key}")?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// Where a key's value came from: the manifest file, or a flag.
#[derive(Debug, Clone)]
pub(crate) struct Override {
    pub(crate) path: KeyPath,
    /// How the user wrote it, e.g. `--set loop.max_iterations=3` or `--prompt`.
    pub(crate) flag: String,
    pub(crate) value: toml::Value,
}

impl Override {
    /// Parse `KEY=VALUE`: a value that reads as TOML (`3`, `true`, `"text"`, `["a", "b"]`) is
    /// taken as such, anything else as a plain string.
    pub(crate) fn parse_set(text: &str) -> Result<Override, Error> {
        let Some((key, raw)) = text.split_once('=') else {
            return Err(Error::usage(format!("`--set {text}` has no value"))
                .with_hint("write it as `--set KEY=VALUE`, e.g. `--set agent.model=opus`"));
        };
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(Error::usage(format!("`--set {text}` has an invalid key `{key}`"))
                .with_hint("keys are dotted paths like `loop.max_iterations`"));
        }
        let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut table| table.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_owned()));
        Ok(Override { path: KeyPath::parse(key), flag: format!("--set {text}"), value })
    }

    pub(crate) fn flag(path: &str, flag: &str, value: toml::Value) -> Override {
        Override { path: KeyPath::parse(path), flag: flag.to_owned(), value }
    }
}

/// The text a manifest came from, for locating errors. `file` is `None` in the flag-only form.
pub(crate) struct Source {
    pub(crate) file: Option<PathBuf>,
    /// The folder relative paths resolve against: the manifest's, or the current directory.
    pub(crate) base_dir: PathBuf,
    document: Option<ImDocument<String>>,
    overrides: Vec<Override>,
    /// What the overrides changed beyond the keys they name (for the person to see).
    pub(crate) notes: Vec<String>,
    /// A manifest without a prompt is fine (`eden interactive`: the person types it).
    pub(crate) prompt_optional: bool,
    /// `eden init`'s placeholder task may stay in the prompt (`eden doctor` says so itself).
    pub(crate) placeholder_allowed: bool,
    /// `eden doctor`: a `${VAR}` that is not set is noted here (and its entry left out), not an
    /// error, so that everything else is checked too.
    pub(crate) unset: Option<std::cell::RefCell<Vec<String>>>,
}

impl Source {
    fn new(
        file: Option<PathBuf>,
        base_dir: PathBuf,
        document: Option<ImDocument<String>>,
        overrides: Vec<Override>,
    ) -> Source {
        Source {
            file,
            base_dir,
            document,
            overrides,
            notes: Vec::new(),
            prompt_optional: false,
            placeholder_allowed: false,
            unset: None,
        }
    }

    /// An error about the value at `path`, located in the file or attributed to its flag.
    pub(crate) fn error_at(&self, path: &KeyPath, message: impl fmt::Display) -> Error {
        Error::usage(format!("{}: {message}", self.origin(path, false)))
    }

    /// Like `error_at`, pointing at the key itself rather than its value.
    pub(crate) fn error_at_key(&self, path: &KeyPath, message: impl fmt::Display) -> Error {
        Error::usage(format!("{}: {message}", self.origin(path, true)))
    }

    /// Where the key at `path` stands in the file (a byte offset), if it is there.
    fn offset(&self, path: &KeyPath) -> Option<usize> {
        let document = self.document.as_ref()?;
        Some(locate(document.as_table(), &path.0, true)?.start)
    }

    /// `plan.toml:3:9`, or `` `--set agent.model=x` `` when a flag set the value.
    pub(crate) fn origin(&self, path: &KeyPath, at_key: bool) -> String {
        if let Some(flag) = self.overrides.iter().rev().find(|o| path.starts_with(&o.path)) {
            return format!("`{}`", flag.flag);
        }
        let Some(file) = &self.file else {
            return "command line".to_owned();
        };
        let (line, column) = self
            .document
            .as_ref()
            .and_then(|document| {
                let span = locate(document.as_table(), &path.0, at_key)?;
                Some(line_column(document.raw(), span.start))
            })
            .unwrap_or((1, 1));
        format!("{}:{line}:{column}", file.display())
    }
}

/// What to load: an optional manifest file plus overrides in the order given.
pub(crate) struct LoadRequest<'a> {
    pub(crate) file: Option<&'a Path>,
    pub(crate) overrides: Vec<Override>,
    pub(crate) current_dir: &'a Path,
}

pub(crate) fn load(request: LoadRequest<'_>) -> Result<(Manifest, Source), Error> {
    let (text, file) = match request.file {
        Some(path) => {
            let shown = path.to_path_buf();
            let text = std::fs::read_to_string(path).map_err(|err| {
                let what = match err.kind() {
                    std::io::ErrorKind::NotFound => "not found".to_owned(),
                    _ => format!("cannot be read: {err}"),
                };
                Error::usage(format!("manifest `{}` {what}", shown.display())).with_hint(
                    "pass the path of a TOML manifest, or use flags alone: \
                     `eden run --agent simulated --prompt \"...\"`",
                )
            })?;
            (text, Some(shown))
        }
        None => (String::new(), None),
    };
    let base_dir = match request.file {
        Some(path) => match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) => request.current_dir.join(parent),
            None => request.current_dir.to_path_buf(),
        },
        None => request.current_dir.to_path_buf(),
    };

    let mut table: toml::Table = toml::from_str(&text).map_err(|err| {
        let (line, column) = err.span().map_or((1, 1), |span| line_column(&text, span.start));
        let file = file.as_deref().unwrap_or(Path::new("manifest"));
        Error::usage(format!("{}:{line}:{column}: invalid TOML: {}", file.display(), err.message().trim_end()))
            .with_hint("every key: `eden schema`, or docs/src/reference/manifest.md in eden's source")
    })?;
    let document = file.as_ref().map(|_| ImDocument::parse(text.clone()).expect("parsed as TOML above"));
    let mut source = Source::new(file, base_dir, document, request.overrides);

    for item in &source.overrides {
        if let Some(note) = apply_override(&mut table, item)? {
            source.notes.push(note);
        }
    }

    let manifest = deserialize(table, &source)?;
    Ok((manifest, source))
}

/// The user-level config (`UserConfig`) at `path`, with its source for located errors; `None`
/// when there is no such file.
pub(crate) fn load_user_config(path: &Path) -> Result<Option<(super::schema::UserConfig, Source)>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(Error::usage(format!("cannot read eden's config `{}`: {err}", path.display()))
                .with_hint("make it readable, or move it away"))
        }
    };
    let config = toml::from_str(&text).map_err(|err: toml::de::Error| {
        let (line, column) = err.span().map_or((1, 1), |span| line_column(&text, span.start));
        Error::usage(format!("{}:{line}:{column}: {}", path.display(), err.message().trim_end()))
            .with_hint("eden's config holds `[notify]` (`command`, `webhook`, `on`, `timeout`), as a manifest's does")
    })?;
    let base_dir = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let source = Source::new(Some(path.to_path_buf()), base_dir, ImDocument::parse(text.clone()).ok(), Vec::new());
    Ok(Some((config, source)))
}

/// A manifest read from `text` as if from `plan.toml` in the current folder, for the resolvers'
/// unit tests; `Err` holds the message of what `load` would refuse.
#[cfg(test)]
pub(crate) fn from_text(text: &str) -> Result<(Manifest, Source), String> {
    let table: toml::Table = toml::from_str(text).map_err(|err| err.to_string())?;
    let document = Some(ImDocument::parse(text.to_owned()).map_err(|err| err.to_string())?);
    let source = Source::new(Some(PathBuf::from("plan.toml")), PathBuf::from("."), document, Vec::new());
    let manifest = deserialize(table, &source).map_err(|err| err.message)?;
    Ok((manifest, source))
}

/// The manifest from its table, every independent mistake found in one pass: serde stops at the
/// first, so the key it named is set aside and the rest read again, up to `MAX_ERRORS`.
fn deserialize(table: toml::Table, source: &Source) -> Result<Manifest, Error> {
    let mut value = toml::Value::Table(table);
    let mut found = Vec::new();
    loop {
        match serde_path_to_error::deserialize::<_, Manifest>(value.clone()) {
            Ok(manifest) if found.is_empty() => return Ok(manifest),
            Ok(_) => break,
            Err(err) => {
                let described = describe_serde_error(source, err);
                let removed = error_path(&described).is_some_and(|path| remove(&mut value, &path));
                found.push(described);
                if !removed || found.len() >= crate::error::MAX_ERRORS {
                    break;
                }
            }
        }
    }
    // In the order they stand in the file (serde reads tables in key order).
    found.sort_by_key(|described| source.offset(&described.path).unwrap_or(usize::MAX));
    Err(Error::first_of(found.into_iter().map(|described| described.error).collect()).expect("at least one error"))
}

/// A described error, and the key it is about (to set aside before reading again).
struct Described {
    error: Error,
    path: KeyPath,
}

fn error_path(described: &Described) -> Option<KeyPath> {
    (!described.path.0.is_empty()).then(|| described.path.clone())
}

/// Remove the item at `path` from a TOML value; false when there is none.
fn remove(value: &mut toml::Value, path: &KeyPath) -> bool {
    let Some((last, parents)) = path.0.split_last() else { return false };
    let mut current = value;
    for segment in parents {
        current = match (segment, current) {
            (Segment::Key(key), toml::Value::Table(table)) => match table.get_mut(key) {
                Some(next) => next,
                None => return false,
            },
            (Segment::Index(index), toml::Value::Array(items)) => match items.get_mut(*index) {
                Some(next) => next,
                None => return false,
            },
            _ => return false,
        };
    }
    match (last, current) {
        (Segment::Key(key), toml::Value::Table(table)) => table.remove(key).is_some(),
        // An item of a list cannot go without shifting the others: not set aside.
        _ => false,
    }
}

/// Keys that belong to one agent kind: a flag that changes the kind drops the manifest's.
const KIND_BOUND_KEYS: [&str; 8] =
    ["binary", "args", "prompt_via", "parser", "lines", "line_delay", "exit_code", "resume"];

/// Set one override's value. Changing an agent's kind drops the keys of the old kind (a `cli`
/// agent's `binary` is not the new agent's); the note says which.
fn apply_override(table: &mut toml::Table, item: &Override) -> Result<Option<String>, Error> {
    let invalid = |why: &str| {
        Error::usage(format!("`{}`: {why}", item.flag))
            .with_hint("keys are dotted paths of the manifest, like `agent.model` or `step.0.prompt`")
    };
    let mut current = table;
    let (last, parents) = item.path.0.split_last().expect("key paths are never empty");
    for segment in parents {
        let next = match segment {
            Segment::Key(key) => current.entry(key.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new())),
            Segment::Index(index) => return Err(invalid(&format!("index {index} must follow a list key"))),
        };
        current = match next {
            toml::Value::Table(inner) => inner,
            toml::Value::Array(list) => {
                return Err(invalid(&format!(
                    "`{segment:?}` is a list with {} entries; name one by its number",
                    list.len()
                )))
            }
            _ => return Err(invalid("a parent of the key is not a table")),
        };
    }
    match last {
        Segment::Key(key) => {
            let note = drop_keys_of_old(current, parents.last(), key, item);
            // `--prompt-file` replaces the manifest's `prompt`, and the other way round.
            let other = match key.as_str() {
                "prompt" => Some("prompt_file"),
                "prompt_file" => Some("prompt"),
                _ => None,
            };
            if let Some(other) = other {
                current.remove(other);
            }
            current.insert(key.clone(), item.value.clone());
            Ok(note)
        }
        Segment::Index(_) => Err(invalid("the key must end with a name")),
    }
}

/// A flag that changes the agent's kind or the branch strategy drops the manifest's keys that
/// the old one used and the new one has no use for (see the rules in `agent_plan` and
/// `branch_plan`); the note says which.
fn drop_keys_of_old(current: &mut toml::Table, parent: Option<&Segment>, key: &str, item: &Override) -> Option<String> {
    let Some(Segment::Key(parent)) = parent else { return None };
    let new_kind = item.value.as_str();
    let agent_keys: Vec<&str> = match new_kind.and_then(crate::agent::AgentKind::from_name) {
        Some(kind) => super::kind_keys::agent_keys_unused_by(kind),
        None => KIND_BOUND_KEYS.to_vec(),
    };
    let network = current.get("network").and_then(toml::Value::as_str);
    let sandbox_keys: Vec<&str> = match new_kind.and_then(super::schema::SandboxKind::from_name) {
        Some(kind) => super::kind_keys::sandbox_keys_unused_by(kind, network),
        None => Vec::new(),
    };
    let (unused, what, prefix, for_it): (&[&str], &str, &str, &str) = match (parent.as_str(), key) {
        ("agent", "kind") => (&agent_keys, "agent kind", "agent.", " for it"),
        ("sandbox", "kind") => (&sandbox_keys, "sandbox kind", "sandbox.", " for it"),
        ("branch", "strategy") => {
            let unused: &[&str] = match item.value.as_str() {
                Some("head") => &["name", "reuse_worktree", "base"],
                Some("merge-to-head") => &["name", "reuse_worktree"],
                Some("named") => &["allow_dirty"],
                _ => &[],
            };
            (unused, "strategy", "branch.", "")
        }
        _ => return None,
    };
    let old = current.get(key).filter(|old| **old != item.value)?;
    let old = old.as_str().unwrap_or_default().to_owned();
    let dropped: Vec<String> = unused
        .iter()
        .filter(|bound| current.remove(**bound).is_some())
        .map(|bound| format!("`{prefix}{bound}`"))
        .collect();
    (!dropped.is_empty()).then(|| {
        format!(
            "`{}` replaces {what} `{old}`, so the manifest's {}{for_it} {} not used",
            item.flag,
            dropped.join(", "),
            if dropped.len() == 1 { "is" } else { "are" }
        )
    })
}

/// Turn a serde error into a located message with a hint.
fn describe_serde_error(source: &Source, err: serde_path_to_error::Error<toml::de::Error>) -> Described {
    let mut path = KeyPath(
        err.path()
            .iter()
            .filter_map(|segment| match segment {
                serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
                serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
                _ => None,
            })
            .collect(),
    );
    let message = err
        .inner()
        .message()
        .trim_end()
        .replace("expected u32", "expected a positive whole number")
        .replace("expected i32", "expected a whole number")
        .replace("expected f64", "expected a number");

    if let Some((unknown, expected)) = parse_unknown(&message, "unknown field `") {
        // Point at the key itself; name the table that holds it.
        if path.0.last() != Some(&Segment::Key(unknown.clone())) {
            path = path.child(&unknown);
        }
        let table = KeyPath(path.0[..path.0.len() - 1].to_vec()).to_string();
        let within = if table.is_empty() { "at the top level".to_owned() } else { format!("in `[{table}]`") };
        let error = source.error_at_key(&path, format!("unknown key `{unknown}` {within}"));
        return Described { error: with_suggestion(error, &unknown, &expected, "known keys"), path };
    }
    if let Some((unknown, expected)) = parse_unknown(&message, "unknown variant `") {
        let error = source.error_at(&path, format!("`{path}` has an unknown value `{unknown}`"));
        return Described { error: with_suggestion(error, &unknown, &expected, "expected one of"), path };
    }
    let error = source.error_at(&path, format!("`{path}`: {message}"));
    let error = if message.starts_with("invalid type") && source.origin(&path, false).starts_with('`') {
        error.with_hint(
            "a `--set` value that reads as TOML is taken as TOML; quote it to pass a string: `--set 'KEY=\"VALUE\"'`",
        )
    } else if message.starts_with("invalid duration") {
        error.with_hint("write a duration like `90s`, `10m`, `1h30m` or `2d` (each unit once, largest first), or a number of seconds")
    } else if message.starts_with("invalid size") {
        error.with_hint("write a number and a unit with no space: `512m`, `4g`; or a number of bytes")
    } else if message.starts_with("invalid type") && message.ends_with("expected a sequence") {
        error.with_hint("write a list in brackets, e.g. `[\"first\", \"second\"]`")
    } else {
        error
    };
    Described { error, path }
}

/// Split serde's "unknown field `x`, expected one of `a`, `b`" into `x` and `[a, b]`.
fn parse_unknown(message: &str, prefix: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix(prefix)?;
    let (name, rest) = rest.split_once('`')?;
    let expected = rest.split('`').skip(1).step_by(2).map(str::to_owned).collect();
    Some((name.to_owned(), expected))
}

fn with_suggestion(error: Error, unknown: &str, expected: &[String], list_label: &str) -> Error {
    let listed = expected.iter().map(|e| format!("`{e}`")).collect::<Vec<_>>().join(", ");
    match closest(unknown, expected) {
        Some(best) => error.with_hint(format!("did you mean `{best}`? {list_label}: {listed}")),
        None if expected.is_empty() => error.with_hint("this table takes no keys"),
        None => error.with_hint(format!("{list_label}: {listed}")),
    }
}

/// The candidate nearest to `word` by edit distance, if it is near enough to be a typo.
pub(crate) fn closest<'a>(word: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len().max(word.len()) / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.as_str())
}

/// Edit distance where swapping two neighbouring letters counts as one edit (`modle` → `model`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in table.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in table[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (table[i - 1][j] + 1).min(table[i][j - 1] + 1).min(table[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(table[i - 2][j - 2] + 1);
            }
            table[i][j] = best;
        }
    }
    table[a.len()][b.len()]
}

/// The byte span of the key (`at_key`) or value at `path` in a parsed document.
fn locate(table: &Table, path: &[Segment], at_key: bool) -> Option<std::ops::Range<usize>> {
    let (Segment::Key(first), rest) = path.split_first()? else {
        return None;
    };
    let (key, item) = table.get_key_value(first)?;
    if rest.is_empty() {
        return if at_key { key.span() } else { item.span().or_else(|| key.span()) };
    }
    locate_item(item, rest, at_key).or_else(|| key.span())
}

fn locate_item(item: &Item, path: &[Segment], at_key: bool) -> Option<std::ops::Range<usize>> {
    match (item, &path[0]) {
        (Item::Table(table), Segment::Key(_)) => locate(table, path, at_key),
        (Item::ArrayOfTables(tables), Segment::Index(index)) => {
            let table = tables.get(*index)?;
            if path.len() == 1 {
                return table.span();
            }
            locate(table, &path[1..], at_key).or_else(|| table.span())
        }
        (Item::Value(value), _) => locate_value(value, path, at_key),
        _ => None,
    }
}

fn locate_value(value: &Value, path: &[Segment], at_key: bool) -> Option<std::ops::Range<usize>> {
    match (value, &path[0]) {
        (Value::InlineTable(table), Segment::Key(name)) => {
            let (key, item) = table.get_key_value(name)?;
            if path.len() == 1 {
                return if at_key { key.span() } else { item.span().or_else(|| key.span()) };
            }
            locate_item(item, &path[1..], at_key).or_else(|| key.span())
        }
        (Value::Array(array), Segment::Index(index)) => {
            let element = array.get(*index)?;
            if path.len() == 1 {
                return element.span();
            }
            locate_value(element, &path[1..], at_key).or_else(|| element.span())
        }
        _ => None,
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// Why `name` cannot be a run's, a step's or a check's name (it goes into branch names).
pub(super) fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > 64 {
        return Some("it is longer than 64 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return Some("it may only contain letters, digits, `.`, `_` and `-`");
    }
    if name.starts_with(['.', '-']) || name.ends_with('.') || name.ends_with(".lock") || name.contains("..") {
        return Some("it may not start with `.` or `-`, end with `.` or `.lock`, or contain `..`");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let keys = ["model".to_owned(), "kind".to_owned(), "max_iterations".to_owned()];
        assert_eq!(closest("modle", &keys), Some("model"));
        assert_eq!(closest("max_iteration", &keys), Some("max_iterations"));
        assert_eq!(closest("zzzzzz", &keys), None);
        assert_eq!(closest("foo", &["loop".to_owned()]), None);
    }

    #[test]
    fn set_values_read_as_toml_or_string() {
        let value = |text: &str| Override::parse_set(text).unwrap().value;
        assert_eq!(value("loop.max_iterations=3"), toml::Value::Integer(3));
        assert_eq!(value("agent.model=gpt-5.5"), toml::Value::String("gpt-5.5".into()));
        assert_eq!(value("name=\"42\""), toml::Value::String("42".into()));
        assert_eq!(value("prompt=fix it = now"), toml::Value::String("fix it = now".into()));
        assert!(Override::parse_set("novalue").is_err());
        assert!(Override::parse_set("a..b=1").is_err());
    }

    #[test]
    fn line_columns() {
        assert_eq!(line_column("a\nbc\nd", 3), (2, 2));
        assert_eq!(line_column("", 0), (1, 1));
    }
}
