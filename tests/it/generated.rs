//! `completions/` and `man/` hold files generated from the clap definitions, for packagers.
//! These tests regenerate them and fail when the checked-in copies are stale.

use crate::support::EDEN;
use clap::{CommandFactory, ValueEnum};
use clap_complete::Shell;
use clap_mangen::roff::{bold, roman, Roff};
use eden::exit::Exit;
use std::path::{Path, PathBuf};

const REFRESH: &str = "EDEN_REFRESH_GENERATED=1 cargo test --test it generated";

fn source_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every generated file, by its path in the repository.
fn generated() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for shell in Shell::value_variants() {
        let name = clap_complete::Generator::file_name(shell, "eden");
        files.push((Path::new("completions").join(name), eden::commands::completions::script(*shell)));
    }
    let mut cli = eden::cli::Cli::command().disable_help_subcommand(true);
    cli.build();
    man_pages(&cli, &mut files);
    files.extend(crate::reference::pages());
    files
}

fn man_pages(command: &clap::Command, files: &mut Vec<(PathBuf, Vec<u8>)>) {
    let man = clap_mangen::Man::new(command.clone())
        .source(format!("eden {}", env!("CARGO_PKG_VERSION")))
        .manual("eden manual");
    files.push((Path::new("man").join(man.get_filename()), man_page(command, &man)));
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        man_pages(sub, files);
    }
}

/// clap_mangen's sections, then what `--help` has no room for: exit status, environment, files.
fn man_page(command: &clap::Command, man: &clap_mangen::Man) -> Vec<u8> {
    let mut page = Vec::new();
    let write = |result: std::io::Result<()>| result.expect("writing to memory");
    write(man.render_title(&mut page));
    write(man.render_name_section(&mut page));
    write(man.render_synopsis_section(&mut page));
    write(man.render_description_section(&mut page));
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        write(man.render_options_section(&mut page));
    }
    if command.has_subcommands() {
        write(man.render_subcommands_section(&mut page));
    }
    let name = command.get_display_name().unwrap_or(command.get_name()).to_owned();
    let root = name == "eden";
    let mut roff = Roff::new();
    if let (false, Some(notes)) = (root, command.get_after_help()) {
        roff.control("SH", ["NOTES"]).text([roman(notes.to_string())]);
    }
    if root || name == "eden-run" {
        table(
            &mut roff,
            "EXIT STATUS",
            &Exit::ALL.map(|exit| (exit.shown(), format!("{}: {}", exit.brief(), exit.meaning()))),
        );
        table(&mut roff, "ENVIRONMENT", &eden::cli::ENVIRONMENT.map(|(name, text)| (name, text.to_owned())));
    }
    if root || ["eden-run", "eden-clean", "eden-init"].contains(&name.as_str()) {
        table(&mut roff, "FILES", &eden::cli::FILES.map(|(path, text)| (path, text.to_owned())));
    }
    roff.control("SH", ["SEE ALSO"]);
    let mut see_also: Vec<String> = if root {
        command
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(|sub| format!("eden-{}(1)", sub.get_name()))
            .collect()
    } else {
        vec!["eden(1)".to_owned()]
    };
    see_also.extend(["git-worktree(1)".to_owned(), "docker(1)".to_owned(), "podman(1)".to_owned()]);
    roff.text([roman(see_also.join(", "))]);
    write(roff.to_writer(&mut page));
    page
}

fn table(roff: &mut Roff, heading: &str, rows: &[(&str, String)]) {
    roff.control("SH", [heading]);
    for (term, text) in rows {
        roff.control("TP", []).text([bold(*term)]).text([roman(text.as_str())]);
    }
}

#[test]
fn generated_files_are_fresh() {
    let refresh = std::env::var_os("EDEN_REFRESH_GENERATED").is_some();
    let mut stale = Vec::new();
    for (path, contents) in generated() {
        let on_disk = source_dir().join(&path);
        if std::fs::read(&on_disk).ok().as_deref() == Some(contents.as_slice()) {
            continue;
        }
        if refresh {
            std::fs::create_dir_all(on_disk.parent().unwrap()).unwrap();
            std::fs::write(&on_disk, contents).unwrap();
        }
        stale.push(path.display().to_string());
    }
    assert!(
        refresh || stale.is_empty(),
        "stale generated files: {}\nrefresh them with `{REFRESH}` and commit the result",
        stale.join(", ")
    );
}

/// The parts of the README and the book that come from the code: (name, contents) of each
/// region between `<!-- name… -->` and `<!-- /name -->`.
fn regions() -> Vec<(&'static str, String)> {
    vec![("exit-codes", format!("\n{}", Exit::markdown_table())), ("exit-severity", Exit::severity_line())]
}

/// The README and every page of the book.
pub fn documents() -> Vec<PathBuf> {
    let mut found = vec![source_dir().join("README.md")];
    let mut folders = vec![source_dir().join("docs/src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn the_docs_say_what_the_code_does() {
    let refresh = std::env::var_os("EDEN_REFRESH_GENERATED").is_some();
    let mut stale = Vec::new();
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut fresh = text.clone();
        for (name, contents) in regions() {
            let Some(open) = fresh.find(&format!("<!-- {name}")) else { continue };
            let start = open + fresh[open..].find("-->").unwrap() + 3;
            let end = fresh.find(&format!("<!-- /{name} -->")).unwrap_or_else(|| panic!("`{name}` is not closed"));
            fresh.replace_range(start..end, &contents);
        }
        if fresh != text {
            if refresh {
                std::fs::write(&path, &fresh).unwrap();
            }
            stale.push(path.display().to_string());
        }
    }
    assert!(refresh || stale.is_empty(), "generated regions are stale in {stale:?}; refresh them with `{REFRESH}`");
}

#[test]
fn no_stray_generated_files() {
    let expected: Vec<PathBuf> = generated().into_iter().map(|(path, _)| path).collect();
    for dir in ["completions", "man", "docs/src/reference"] {
        for entry in std::fs::read_dir(source_dir().join(dir)).unwrap() {
            let path = Path::new(dir).join(entry.unwrap().file_name());
            assert!(expected.contains(&path), "`{}` is no longer generated: remove it", path.display());
        }
    }
}

#[test]
fn the_completions_command_prints_the_checked_in_scripts() {
    for shell in Shell::value_variants() {
        let output = std::process::Command::new(EDEN).args(["completions", &shell.to_string()]).output().unwrap();
        assert!(output.status.success(), "{shell}: {}", String::from_utf8_lossy(&output.stderr));
        let name = clap_complete::Generator::file_name(shell, "eden");
        let checked_in = std::fs::read(source_dir().join("completions").join(name)).unwrap();
        assert!(output.stdout == checked_in, "`eden completions {shell}` differs from completions/; {REFRESH}");
    }
}

#[test]
fn completions_offer_values_and_files() {
    let bash = String::from_utf8(eden::commands::completions::script(Shell::Bash)).unwrap();
    assert!(bash.contains("claude-code codex opencode pi cursor copilot cli simulated"), "agent kinds");
    assert!(bash.contains("none docker podman isolated"), "sandbox kinds");
    assert!(bash.contains("head merge-to-head named"), "strategies");
    let zsh = String::from_utf8(eden::commands::completions::script(Shell::Zsh)).unwrap();
    assert!(zsh.contains("*::manifests -- The TOML manifest to run"), "manifest arguments: {zsh}");
    assert!(zsh.contains("each a run of its own:_files"), "{zsh}");
}

#[test]
fn man_pages_render() {
    if which("man").is_none() {
        crate::support::skip("`man` is not installed (apt install man-db)");
        return;
    }
    for page in ["eden.1", "eden-run.1", "eden-clean.1"] {
        let output = std::process::Command::new("man")
            .args(["--warnings", "-l", "-P", "cat"])
            .arg(source_dir().join("man").join(page))
            .env("MANWIDTH", "100")
            .env("LANG", "C.UTF-8")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        let warnings = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success() && warnings.trim().is_empty(), "{page}: {warnings}");
        for section in ["NAME", "SYNOPSIS", "OPTIONS", "SEE ALSO"] {
            assert!(text.contains(section), "{page} has no {section}:\n{text}");
        }
        if page != "eden-clean.1" {
            assert!(text.contains("EXIT STATUS") && text.contains("interrupted"), "{page}:\n{text}");
        }
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|path| path.is_file())
}

/// Bash, as a user's shell runs the checked-in script: the completions offered after `words`.
fn bash_completions(words: &[&str]) -> Vec<String> {
    let script = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _eden eden \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        source_dir().join("completions/eden.bash").display(),
        words.iter().map(|word| format!("'{word}'")).collect::<Vec<_>>().join(" "),
        words.len() - 1,
    );
    let output = std::process::Command::new("bash").args(["--norc", "-c", &script]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().filter(|line| !line.is_empty()).map(str::to_owned).collect()
}

#[test]
fn bash_completes_values_subcommands_and_flags() {
    assert_eq!(
        bash_completions(&["eden", "run", "--agent", "c"]),
        ["claude-code", "codex", "cursor", "copilot", "cli"]
    );
    assert_eq!(bash_completions(&["eden", "run", "--strategy", ""]), ["head", "merge-to-head", "named"]);
    assert_eq!(bash_completions(&["eden", "init", "--sandbox", "p"]), ["podman"]);
    assert_eq!(bash_completions(&["eden", "cl"]), ["clean"]);
    assert_eq!(bash_completions(&["eden", "run", "--json-"]), ["--json-events"]);
    assert_eq!(bash_completions(&["eden", "completions", "f"]), ["fish"]);
}
