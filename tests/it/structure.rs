//! The rules ARCHITECTURE.md states, checked (in the manner of rust-analyzer's `tidy`): where
//! processes start, which modules print, where a particular agent CLI is named, how long
//! functions in the core may be, which modules may use which (the table in ARCHITECTURE.md,
//! read from the file), no import circle between the files of one folder, and no file that
//! no module declares. A rule that breaks fails here, naming the place.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`, with its path relative to `src/`.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(src()).unwrap().to_string_lossy().into_owned();
            (relative, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// The text without comments, string and char literals (blanked to spaces, lines kept), and
/// without its `#[cfg(test)]` modules (blanked the same, wherever they are): only code that
/// ships.
fn code(text: &str) -> String {
    without_test_modules(blank_literals(text))
}

fn without_test_modules(mut code: String) -> String {
    while let Some(at) = code.find("#[cfg(test)]") {
        let Some(open) = code[at..].find('{').map(|offset| at + offset) else { break };
        let mut depth = 0;
        let mut end = code.len();
        for (offset, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 1 => {
                    end = open + offset + 1;
                    break;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        let blank: String = code[at..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
        code.replace_range(at..end, &blank);
    }
    code
}

fn blank_literals(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            out.push_str(&" ".repeat(end));
            i += end;
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") || rest.starts_with("br\"") {
            let hashes = rest.trim_start_matches('b').trim_start_matches('r').chars().take_while(|c| *c == '#').count();
            let open = rest.find('"').unwrap() + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = rest[open..].find(&close).map_or(rest.len(), |at| open + at + close.len());
            out.extend(rest[..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
            i += end;
        } else if rest.starts_with('"') {
            let mut j = 1;
            let chars = rest.as_bytes();
            while j < chars.len() && chars[j] != b'"' {
                j += if chars[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            out.extend(rest[..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
            i += end;
        } else if rest.starts_with("'") && rest.len() > 2 {
            // A char literal ('x', '\n', '{'), not a lifetime ('a).
            let literal = rest[1..].find('\'').filter(|&at| at <= 4 && (at == 1 || rest.as_bytes()[1] == b'\\'));
            match literal {
                Some(at) => {
                    out.push_str(&" ".repeat(at + 2));
                    i += at + 2;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The top-level module a file belongs to: `orchestrator` for `orchestrator/iterate.rs`,
/// `safe_fs` for `safe_fs.rs`.
fn module_of(file: &str) -> String {
    file.split('/').next().unwrap().trim_end_matches(".rs").to_owned()
}

#[test]
fn processes_start_only_in_process() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        if file.starts_with("process/") {
            continue;
        }
        let code = code(&text);
        for (n, line) in code.lines().enumerate() {
            if line.contains("Command::new") || line.contains("process::Command") {
                found.push(format!("src/{file}:{}", n + 1));
            }
        }
    }
    assert!(found.is_empty(), "processes start outside src/process (use ProcessBuilder): {found:#?}");
}

/// eden's own connections out (TCP, TLS, HTTP) are made in `src/net/`: one TLS configuration,
/// one HTTP client with its deadline, redirect and status rules. The only other is the
/// allowlist's probe, a helper that runs inside the sandbox (`__eden-connect`).
#[test]
fn connections_out_are_made_only_in_net() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        if file.starts_with("net/") || file == "sandbox/firewall.rs" {
            continue;
        }
        for (n, line) in code(&text).lines().enumerate() {
            let opens = ["TcpStream::connect", "ClientConnection::new", "ClientConfig::builder"];
            if opens.iter().any(|open| line.contains(open)) {
                found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "a connection out made outside src/net (use `net::connect` or `net::http`): {found:#?}");
}

/// A container engine's or a cluster's client starts in one place: docker and podman from a
/// `Target` (`sandbox/engine.rs`), kubectl from a `Kube` (`sandbox/pod/mod.rs`).
#[test]
fn engine_clients_start_in_one_place() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        // The literals are the point here: look at the text, comments and tests aside.
        let shipped = without_test_modules(
            text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n"),
        );
        for (n, line) in shipped.lines().enumerate() {
            for client in ["docker", "podman", "kubectl"] {
                let home = if client == "kubectl" { "sandbox/pod/mod.rs" } else { "sandbox/engine.rs" };
                if line.contains(&format!("ProcessBuilder::new(\"{client}\")")) && file != home {
                    found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "an engine's client started outside its home (use `Target` or `Kube`): {found:#?}");
}

/// eden's helper processes (hidden subcommands: the containment init, the allowlist's probes,
/// the simulated agent, the credential relay and its tunnel, a pool member's door and its calls)
/// talk on their own stdout and stderr, which eden reads.
const HELPERS: [&str; 9] = [
    "sandbox/door.rs",
    "sandbox/pack.rs",
    "forge/credential.rs",
    "process/contain.rs",
    "sandbox/firewall.rs",
    "sandbox/remote_rules.rs",
    "agent/simulated.rs",
    "proxy/relay.rs",
    "proxy/tunnel.rs",
];

#[test]
fn only_ui_and_main_print() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        if file.starts_with("ui/") || file == "main.rs" || HELPERS.contains(&file.as_str()) {
            continue;
        }
        let code = code(&text);
        for (n, line) in code.lines().enumerate() {
            // A child's stdio handed over (`process`) or a terminal asked about is not printing.
            let plumbing = file.starts_with("process/") && line.contains(".stdout(std::io::stderr())");
            let asks = line.contains(".is_terminal()");
            let prints = ["println!", "print!", "eprintln!", "eprint!", "io::stderr()", "io::stdout()"]
                .iter()
                .any(|call| line.contains(call))
                && !plumbing
                && !asks;
            if prints {
                found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "only `ui` writes to stdout and stderr: {found:#?}");
}

/// Where facts about a particular agent live: its row in `agent/spec.rs` and its own file in
/// `agent/` (command line, output parser, interactive flags, where its transcripts are and
/// whether they move). Everything else asks the row.
const KIND_FACTS: [&str; 1] = ["agent/"];

/// No agent kind is named outside `agent/`, so no `match` on one either: a fact about a
/// particular agent written elsewhere goes stale when its row changes (`sessions/` once kept a
/// `match` per kind of where transcripts live). The three shapes an agent comes in are
/// `agent::Family`.
#[test]
fn agent_kinds_are_named_only_where_their_facts_live() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        if KIND_FACTS.iter().any(|place| file.starts_with(place)) {
            continue;
        }
        for (n, line) in code(&text).lines().enumerate() {
            let named = line.match_indices("AgentKind::").any(|(at, call)| {
                let rest = &line[at + call.len()..];
                let mut chars = rest.chars();
                // A variant (`ClaudeCode`), not a function or a constant (`from_name`, `DEFAULT`).
                chars.next().is_some_and(|c| c.is_ascii_uppercase())
                    && chars.next().is_some_and(|c| c.is_ascii_lowercase())
            });
            if named {
                found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "an agent kind is named outside {KIND_FACTS:?} (ask its spec row instead): {found:#?}");
}

/// Where a sandbox kind may be named: its own folder, the registry that maps `[sandbox] kind`
/// to its provider, the manifest (its schema and resolution) and the record's engine enum.
const SANDBOX_KIND_PLACES: [&str; 7] = [
    "sandbox/none/",
    "sandbox/container/",
    "sandbox/isolated/",
    "sandbox/pod/",
    "sandbox/registry.rs",
    "manifest/",
    "record.rs",
];

/// A sandbox kind is a folder under `src/sandbox/` and a row in `sandbox/registry.rs`: outside
/// those (and the manifest and the record's engine), no variant of a kind's enum and no path
/// into a kind's folder, so adding a kind never means editing a `match` elsewhere.
#[test]
fn sandbox_kinds_are_named_only_in_their_folders() {
    // (`Engine::Docker`/`Podman` tell two clients of the container kind apart, in the engine
    // client and the mechanisms containers and pods share: not kinds.)
    let enums = ["SandboxPlan::", "SandboxKind::", "SandboxEngine::"];
    let folders = ["sandbox::none::", "sandbox::container::", "sandbox::isolated::", "sandbox::pod::"];
    let mut found = Vec::new();
    for (file, text) in sources() {
        if SANDBOX_KIND_PLACES.iter().any(|place| file.starts_with(place)) {
            continue;
        }
        for (n, line) in code(&text).lines().enumerate() {
            let variant = enums.iter().any(|name| {
                line.match_indices(name).any(|(at, call)| {
                    // `SandboxPlan::Container`, not `SandboxKind::NAMES` or `SandboxKind::from_name`.
                    let before = line[..at].chars().next_back();
                    let whole = before.is_none_or(|c| !c.is_alphanumeric() && c != '_');
                    let mut rest = line[at + call.len()..].chars();
                    whole
                        && rest.next().is_some_and(|c| c.is_ascii_uppercase())
                        && rest.next().is_some_and(|c| c.is_ascii_lowercase())
                })
            });
            // In `src/sandbox/`'s own files the kinds' folders are `super::…` away.
            let near = file.starts_with("sandbox/") && file.matches('/').count() == 1;
            let folder = folders.iter().any(|path| {
                line.contains(path) || near && line.contains(&format!("super::{}", &path["sandbox::".len()..]))
            });
            if variant || folder {
                found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a sandbox kind is named outside {SANDBOX_KIND_PLACES:?} (ask its provider through `sandbox::registry`): {found:#?}"
    );
}

/// A command is a file in `src/commands/` and a row in `commands/dispatch.rs`: the command
/// line's subcommands (`cli::Command`'s variants) are told apart there and nowhere else, so
/// adding one never means editing a `match` elsewhere.
#[test]
fn commands_are_told_apart_only_in_dispatch() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        if file == "cli.rs" || file == "commands/dispatch.rs" {
            continue;
        }
        for (n, line) in code(&text).lines().enumerate() {
            let named = line.match_indices("Command::").any(|(at, call)| {
                // `cli::Command::Run`, `Command::Run`; not `SessionsCommand::List` or `std::process::Command::new`.
                let before = line[..at].chars().next_back();
                let whole = before.is_none_or(|c| !c.is_alphanumeric() && c != '_');
                whole && line[at + call.len()..].starts_with(|c: char| c.is_ascii_uppercase())
            });
            if named {
                found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a subcommand is told apart outside commands/dispatch.rs (add its row there): {found:#?}"
    );
}

/// Every string literal of shipped code, with its line: the text between its quotes as written.
/// Literals in test modules and in attributes (`#[arg(default_value = "…")]`, clap's help
/// text: documentation, as doc comments are) are left out.
fn string_literals(text: &str) -> Vec<(usize, String)> {
    let skipped = skipped_lines(&blank_literals(text));
    let (bytes, mut literals, mut i, mut line) = (text.as_bytes(), Vec::new(), 0, 1);
    while i < bytes.len() {
        let rest = &text[i..];
        let (taken, literal) = if rest.starts_with("//") {
            (rest.find('\n').unwrap_or(rest.len()), None)
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|c| *c == '#').count();
            let open = rest.find('"').unwrap() + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = rest[open..].find(&close).map_or(rest.len(), |at| open + at);
            (end + close.len().min(rest.len() - end), Some(rest[open..end].to_owned()))
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() && rest.as_bytes()[j] != b'"' {
                j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
            }
            ((j + 1).min(rest.len()), Some(rest[1..j.min(rest.len())].to_owned()))
        } else if rest.starts_with("'")
            && rest.len() > 2
            && rest[1..].find('\'').is_some_and(|at| at <= 4 && (at == 1 || rest.as_bytes()[1] == b'\\'))
        {
            (rest[1..].find('\'').unwrap() + 2, None)
        } else {
            (rest.chars().next().unwrap().len_utf8(), None)
        };
        if let Some(literal) = literal.filter(|_| !skipped.contains(&line)) {
            literals.push((line, literal));
        }
        line += rest[..taken].matches('\n').count();
        i += taken;
    }
    literals
}

/// The lines (from 1) of test modules and attributes, in text whose literals are blanked.
fn skipped_lines(blanked: &str) -> BTreeSet<usize> {
    let mut skipped = BTreeSet::new();
    let lines: Vec<&str> = blanked.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let starts = lines[n].trim_start();
        let (open, close) = match () {
            () if starts.starts_with("#[cfg(test)]") => ('{', '}'),
            () if starts.starts_with("#[") => ('[', ']'),
            _ => {
                n += 1;
                continue;
            }
        };
        // To the line where what it opens closes (a test module: its braces).
        let (mut depth, mut opened, start) = (0i32, false, n);
        while n < lines.len() {
            for c in lines[n].chars() {
                if c == open {
                    depth += 1;
                    opened = true;
                } else if c == close {
                    depth -= 1;
                }
            }
            n += 1;
            if opened && depth <= 0 {
                break;
            }
        }
        skipped.extend(start + 1..=n);
    }
    skipped
}

/// Whether `text` holds `word` as a word of its own (`pi`, not `pip` or `api`).
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
        !part(before) && !part(after)
    })
}

/// An agent's name, or a variable only its key goes in, written into a string outside the
/// places its facts live: such a fact goes stale when the agent's spec changes (a hint that
/// lists the agents that report cost, a default binary). Ask the spec instead.
#[test]
fn agent_names_are_written_only_where_their_facts_live() {
    let specs = eden::agent::spec::SPECS.iter().filter(|spec| spec.binary.is_some());
    let words: BTreeSet<&str> =
        specs.flat_map(|spec| std::iter::once(spec.name).chain(spec.doctor.key_vars.iter().copied())).collect();
    let mut found = Vec::new();
    for (file, text) in sources() {
        // The forge's own token variables (`GITHUB_TOKEN`, `GH_TOKEN`) are also an agent's keys.
        if KIND_FACTS.iter().any(|place| file.starts_with(place)) || file.starts_with("forge/") {
            continue;
        }
        for (line, literal) in string_literals(&text) {
            for word in words.iter().filter(|word| has_word(&literal, word)) {
                found.push(format!("src/{file}:{line}: `{word}` in \"{literal}\""));
            }
        }
    }
    assert!(found.is_empty(), "an agent named outside {KIND_FACTS:?} (ask its spec instead): {found:#?}");
}

/// Errors are typed: no `Result<_, String>` in shipped code (`crate::error::Error`, or a type
/// of the error's own that says what went wrong).
#[test]
fn errors_are_not_strings() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        for (n, line) in code(&text).lines().enumerate() {
            let compact: String = line.split_whitespace().collect();
            // `String`, or a tuple with one (`(usize, String)`); a list of findings is data.
            let stringly = |error: String| error == "String" || (error.starts_with('(') && error.contains("String"));
            if compact.match_indices("Result<").any(|(at, open)| stringly(error_type(&compact[at + open.len()..]))) {
                found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "errors as strings: {found:#?}");
}

/// A process's end becomes an exit code in one place, `Exit::from_status` (128 + a signal's
/// number, `Exit::Interrupted`): nowhere else computes it.
#[test]
fn exit_codes_of_signals_are_computed_in_exit_only() {
    let mut found = Vec::new();
    for (file, text) in sources().into_iter().filter(|(file, _)| file != "exit.rs") {
        for (n, line) in code(&text).lines().enumerate() {
            let compact: String = line.split_whitespace().collect();
            if compact.contains("128+") || compact.contains("+128") {
                found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "an exit code computed outside `Exit`: {found:#?}");
}

/// The error type of the `Result<` whose arguments `rest` starts with (`T,E>…`): `E`.
fn error_type(rest: &str) -> String {
    let (mut depth, mut comma) = (0, None);
    for (at, c) in rest.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' if depth == 0 => return comma.map_or(String::new(), |from: usize| rest[from..at].to_owned()),
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => comma = Some(at + 1),
            _ => {}
        }
    }
    String::new()
}

/// Functions of more than `MAX_LINES` lines, by name and length.
const MAX_LINES: usize = 80;

fn long_functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let signature = [
            "fn ",
            "pub fn ",
            "pub(crate) fn ",
            "pub(super) fn ",
            "async fn ",
            "pub async fn ",
            "pub(crate) async fn ",
            "pub(super) async fn ",
            "const fn ",
            "pub const fn ",
        ]
        .iter()
        .find_map(|prefix| trimmed.strip_prefix(prefix));
        let Some(rest) = signature else { continue };
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // From the line of its opening brace to the line of the brace that closes it.
        let mut depth = 0i32;
        let mut opened = false;
        let mut end = start;
        'scan: for (offset, body) in lines[start..].iter().enumerate() {
            for c in body.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened => break 'scan,
                    _ => {}
                }
                if opened && depth == 0 {
                    end = start + offset;
                    break 'scan;
                }
            }
        }
        let length = end + 1 - start;
        if opened && length > MAX_LINES {
            found.push((name, start + 1, length));
        }
    }
    found
}

/// Every function in `src/`, with no list of exceptions.
#[test]
fn functions_are_short() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        for (name, line, length) in long_functions(&code(&text)) {
            found.push(format!("src/{file}:{line}: `{name}` is {length} lines"));
        }
    }
    assert!(found.is_empty(), "functions stay within {MAX_LINES} lines: {found:#?}");
}

/// The first names of the paths after each `prefix` in `code` (`crate::` in `crate::a::b`,
/// `use crate::{a::{b, c}, d as e}`: `a`, `d`), read as `use` trees: groups nested to any
/// depth, `self` left out. A prefix that is the tail of a longer path (`x::crate::`) is not one.
fn heads_after(code: &str, prefix: &str) -> Vec<String> {
    let mut heads = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        heads.extend(tree_heads(&code[at + prefix.len()..]));
    }
    heads
}

/// The first name of each path of the `use` tree at the start of `rest`.
fn tree_heads(rest: &str) -> Vec<String> {
    let ident =
        |text: &str| -> String { text.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)].into_iter().filter(|name| !name.is_empty() && name != "self").collect();
    };
    // The group's items, split at its own commas (not those of groups inside it).
    let (mut depth, mut item, mut heads) = (0, String::new(), Vec::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(ident(&item));
                item.clear();
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    heads.push(ident(&item));
    heads.into_iter().filter(|name| !name.is_empty() && name != "self").collect()
}

/// Which top-level modules each module's code names (`crate::x`, `use crate::{x, y::{z}}`).
fn actual_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = sources().iter().map(|(file, _)| module_of(file)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in sources() {
        let from = module_of(&file);
        if ["lib", "main"].contains(&from.as_str()) {
            continue;
        }
        for name in heads_after(&code(&text), "crate::") {
            if modules.contains(&name) && name != from {
                graph.entry(from.clone()).or_default().insert(name);
            }
        }
    }
    graph
}

/// The table in ARCHITECTURE.md's "Dependencies between modules": `a, b ─→ c, d` lines.
fn documented_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap();
    let section = &text[text.find("## Dependencies between modules").expect("the section is there")..];
    let table = section.split("```").nth(1).expect("the table is a code block");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in table.lines() {
        let Some((from, to)) = line.split_once("─→") else { continue };
        let targets: BTreeSet<String> = to
            .split(',')
            .map(|name| name.trim().split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("").to_owned())
            .filter(|name| !name.is_empty())
            .collect();
        for from in from.split(',').map(str::trim).filter(|name| !name.is_empty()) {
            graph.entry(from.to_owned()).or_default().extend(targets.iter().cloned());
        }
    }
    graph
}

#[test]
fn the_module_dependencies_are_the_documented_ones() {
    let actual = actual_dependencies();
    let documented = documented_dependencies();
    let mut missing = Vec::new();
    let mut stale = Vec::new();
    for (from, targets) in &actual {
        let allowed = documented.get(from).cloned().unwrap_or_default();
        if allowed.contains("everything") {
            continue;
        }
        for to in targets.difference(&allowed) {
            missing.push(format!("{from} ─→ {to}"));
        }
    }
    for (from, targets) in &documented {
        if targets.contains("everything") {
            continue;
        }
        let used = actual.get(from).cloned().unwrap_or_default();
        for to in targets.difference(&used) {
            stale.push(format!("{from} ─→ {to}"));
        }
    }
    assert!(missing.is_empty(), "uses ARCHITECTURE.md does not list: {missing:#?}");
    assert!(stale.is_empty(), "ARCHITECTURE.md lists uses the code does not have: {stale:#?}");
}

/// The documented table itself has no cycle between top-level modules (so neither has the code,
/// which may use only what it lists).
#[test]
fn the_documented_dependencies_have_no_cycle() {
    let documented: BTreeMap<String, BTreeSet<String>> =
        documented_dependencies().into_iter().filter(|(_, targets)| !targets.contains("everything")).collect();
    assert_eq!(cycle(&documented), None, "a cycle in ARCHITECTURE.md's table");
}

/// The edge: where eden talks to people and scripts and decides who hears of a run.
const EDGE: [&str; 4] = ["commands", "coordinator", "ui", "cli"];

/// The core never reaches the edge, directly or through another module: a run reports events to
/// the reporters it is handed and prints nothing (the telemetry exporter once sat outside `ui`
/// and was reached from the orchestrator, and with it `ui`).
#[test]
fn the_core_never_reaches_the_edge() {
    let documented = documented_dependencies();
    let mut found = Vec::new();
    for from in documented.keys().filter(|module| !EDGE.contains(&module.as_str())) {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from.clone()]);
        while let Some(module) = todo.pop() {
            for next in documented.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        found.extend(EDGE.iter().filter(|edge| seen.contains(**edge)).map(|edge| format!("{from} ─→ … ─→ {edge}")));
    }
    assert!(found.is_empty(), "the core reaches the edge: {found:#?}");
}

/// The names a `mod.rs` defines itself, at its top level: its types, functions, constants.
fn defined_items(code: &str) -> BTreeSet<String> {
    let mut items = BTreeSet::new();
    for line in code.lines().filter(|line| !line.starts_with(char::is_whitespace)) {
        let mut words =
            line.split_whitespace().skip_while(|word| word.starts_with("pub") || ["async", "unsafe"].contains(word));
        let (Some(kind), Some(name)) = (words.next(), words.next()) else { continue };
        if ["fn", "struct", "enum", "trait", "type", "const", "static"].contains(&kind) {
            items.insert(name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        }
    }
    items
}

/// A `mod.rs`'s re-exports (`pub use sibling::{A, b::C as D};`): each name it gives, and the
/// sibling it comes from.
fn reexports(code: &str, siblings: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(path) =
            ["pub use ", "pub(crate) use ", "pub(super) use "].iter().find_map(|p| statement.strip_prefix(p))
        else {
            continue;
        };
        let path = path.trim_start_matches("self::");
        let Some((sibling, rest)) = path.split_once("::") else { continue };
        if !siblings.contains(sibling) {
            continue;
        }
        // The last name of each item, or its `as` name.
        let rest = rest.replace(['{', '}'], ",");
        for item in rest.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let given = match item.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => item.rsplit("::").next().unwrap_or(item),
            };
            names.insert(given.to_owned(), sibling.to_owned());
        }
    }
    names
}

/// The files of one folder and which of them each depends on, `mod.rs` as a file like the
/// others: a file names a sibling (`super::x`, `crate::folder::x`, in `use` groups too), a name
/// `mod.rs` re-exports from a sibling (that sibling), or a name `mod.rs` defines (`mod`).
/// `mod.rs` depends on the siblings its own code names; its `mod x;` lines and its re-exports
/// are the folder's outline, not code.
fn folder_graphs() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut folders: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (file, text) in sources() {
        let Some((folder, name)) = file.rsplit_once('/') else { continue };
        folders.entry(folder.to_owned()).or_default().insert(name.trim_end_matches(".rs").to_owned(), code(&text));
    }
    let mut graphs = BTreeMap::new();
    for (folder, files) in folders {
        let siblings: BTreeSet<String> = files.keys().filter(|name| *name != "mod").cloned().collect();
        let outline = files.get("mod").cloned().unwrap_or_default();
        let defined = defined_items(&outline);
        let reexported = reexports(&outline, &siblings);
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (name, code) in &files {
            let uses: BTreeSet<String> = if name == "mod" {
                let logic = mod_logic(code);
                siblings
                    .iter()
                    .filter(|sibling| {
                        !heads_after(&logic, &format!("{sibling}::")).is_empty()
                            || logic.contains(&format!("self::{sibling}"))
                    })
                    .cloned()
                    .collect()
            } else {
                let named = heads_after(code, "super::")
                    .into_iter()
                    .chain(heads_after(code, &format!("crate::{}::", folder.replace('/', "::"))));
                named
                    .filter_map(|used| match () {
                        () if siblings.contains(&used) => Some(used),
                        () if reexported.contains_key(&used) => reexported.get(&used).cloned(),
                        () if defined.contains(&used) => Some("mod".to_owned()),
                        () => None,
                    })
                    .filter(|used| used != name)
                    .collect()
            };
            if !uses.is_empty() {
                graph.insert(name.clone(), uses);
            }
        }
        graphs.insert(folder, graph);
    }
    graphs
}

/// A `mod.rs` without its outline: `mod x;` lines and re-exports (`pub use …;`) blanked.
fn mod_logic(code: &str) -> String {
    let outline_starts = ["mod ", "pub mod ", "pub(crate) mod ", "pub use ", "pub(crate) use ", "pub(super) use "];
    let mut logic = String::new();
    let mut in_outline = false;
    for line in code.lines() {
        in_outline = in_outline || outline_starts.iter().any(|start| line.starts_with(start));
        if !in_outline {
            logic.push_str(line);
        }
        logic.push('\n');
        in_outline = in_outline && !line.contains(';');
    }
    logic
}

fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_import_circle_between_the_files_of_a_folder() {
    let mut found = Vec::new();
    for (folder, graph) in folder_graphs() {
        if let Some(circle) = cycle(&graph) {
            found.push(format!("src/{folder}: {}", circle.join(" → ")));
        }
    }
    assert!(found.is_empty(), "import circles: {found:#?}");
}

/// As jj's check for forgotten tests: a file in `tests/it/` that `main.rs` does not declare
/// never compiles and never runs, and nobody notices. The same for a file under `src/` that no
/// module declares.
#[test]
fn no_file_is_forgotten() {
    let it = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let main = std::fs::read_to_string(it.join("main.rs")).unwrap();
    let mut forgotten = Vec::new();
    for entry in std::fs::read_dir(&it).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".rs").filter(|stem| *stem != "main") else { continue };
        if !main.lines().any(|line| line.trim() == format!("mod {stem};")) {
            forgotten.push(format!("tests/it/{name}"));
        }
    }
    let files = sources();
    for (file, _) in &files {
        let path = Path::new(file);
        let stem = path.file_stem().unwrap().to_string_lossy();
        if ["lib", "main", "mod"].contains(&stem.as_ref()) {
            continue;
        }
        // Declared by `mod.rs` of its folder, by `<folder>.rs` beside it, or by `lib.rs`.
        let folder = path.parent().unwrap().to_string_lossy().into_owned();
        let parents = if folder.is_empty() {
            vec!["lib.rs".to_owned()]
        } else {
            vec![format!("{folder}/mod.rs"), format!("{folder}.rs")]
        };
        let declared = files.iter().filter(|(other, _)| parents.contains(other)).any(|(_, text)| {
            text.lines().any(|line| {
                let line = line.trim();
                line.ends_with(&format!("mod {stem};")) && (line.starts_with("mod ") || line.starts_with("pub"))
            })
        });
        if !declared {
            forgotten.push(format!("src/{file}"));
        }
    }
    assert!(forgotten.is_empty(), "files no module declares (they never compile): {forgotten:#?}");
}

#[test]
fn the_scanner_sees_what_it_must() {
    let text = "fn a() {\n    let s = \"}\";\n    // }\n    let c = '}';\n}\n";
    assert_eq!(code(text).matches('}').count(), 1);
    // A test module is not shipped code; what follows it is.
    let tested = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() { println!(); }\n}\nfn b() { println!(); }\n";
    assert_eq!(code(tested).matches("println!").count(), 1);
    assert_eq!(code(tested).lines().count(), tested.lines().count());
    let long = format!("fn long() {{\n{}}}\n", "    x();\n".repeat(MAX_LINES));
    assert_eq!(long_functions(&long), [("long".to_owned(), 1, MAX_LINES + 2)]);
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", "b"), ("b", "a")].iter().map(|(x, y)| (x.to_string(), [y.to_string()].into())).collect();
    assert!(cycle(&graph).is_some());
    // `use` trees, nested, with `self` and renames.
    let uses = "use crate::{a::{b, c}, d as e, self};\nuse crate::f::g;\nx::crate::h;\n";
    assert_eq!(heads_after(uses, "crate::"), ["a", "d", "f"]);
    // What a `mod.rs` defines, re-exports, and which of its code is logic.
    let outline =
        "mod a;\npub mod b;\npub use a::{A, x::B as C};\npub use b::D;\npub struct E;\npub(crate) fn f() { b::g(); }\n";
    let siblings: BTreeSet<String> = ["a".to_owned(), "b".to_owned()].into();
    assert_eq!(defined_items(outline), ["E".to_owned(), "f".to_owned()].into());
    let reexported = reexports(outline, &siblings);
    assert_eq!((reexported["A"].as_str(), reexported["C"].as_str(), reexported["D"].as_str()), ("a", "a", "b"));
    assert!(!mod_logic(outline).contains("a::") && mod_logic(outline).contains("b::g"));
    // Literals and words.
    let text = "#[arg(help = \"codex\")]\nfn f() { let x = \"uses pi\"; } // \"cursor\"\n";
    assert_eq!(string_literals(text), [(2, "uses pi".to_owned())]);
    assert_eq!(error_type("Vec<u8>,String>"), "String");
    assert_eq!(error_type("BTreeMap<String,String>,Error>"), "Error");
    assert_eq!(error_type("T,(usize,String)>"), "(usize,String)");
    assert!(has_word("uses pi now", "pi") && !has_word("api pip", "pi") && !has_word("./pi.sh", "pi"));
}
