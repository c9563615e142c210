//! `eden init`: a starter manifest (and, for docker/podman, the Dockerfile `eden image build`
//! uses). Never overwrites without `--force`.

use crate::agent::AgentKind;
use crate::cli::InitArgs;
use crate::error::Error;
use crate::git::Git;
use crate::manifest::schema::SandboxKind;
use std::path::{Path, PathBuf};

pub(crate) const DOCKERFILE: &str = include_str!("templates/Dockerfile.eden");
pub(crate) const DOCKERFILE_NAME: &str = "Dockerfile.eden";
pub(crate) fn init(args: InitArgs) -> Result<i32, Error> {
    if AgentKind::from_name(&args.agent).is_none() {
        return Err(Error::usage(format!("unknown agent kind `{}`", args.agent))
            .with_hint(format!("agent kinds: {}", AgentKind::names().join(", "))));
    }
    if !SandboxKind::NAMES.contains(&args.sandbox.as_str()) {
        return Err(Error::usage(format!("unknown sandbox kind `{}`", args.sandbox))
            .with_hint(format!("sandbox kinds: {}", SandboxKind::NAMES.join(", "))));
    }
    let current = crate::commands::current_dir()?;
    let dir = args.dir.as_ref().map_or(current.clone(), |dir| crate::values::normalize_path(&current.join(dir)));
    let repo = repository_of(&dir);
    // A pod runs an image too: built the same way, then pushed where the cluster pulls from.
    let container = matches!(args.sandbox.as_str(), "docker" | "podman" | "kubernetes");
    // The image is named after the repository, as `eden image build` names it.
    let tag = default_tag(repo.as_deref().unwrap_or(&dir));
    // The manifest names the schema an editor checks it with (taplo, Even Better TOML):
    // eden's folder at the repository's root, which git is told to leave out.
    let schema_at = repo.as_deref().unwrap_or(&dir).join(crate::layout::EDEN_DIR).join(SCHEMA_NAME);
    let schema_line = format!("#:schema {}\n", relative(&schema_at, &dir));
    let mut files = vec![("eden.toml", format!("{schema_line}{}", manifest(&args.agent, &args.sandbox, &tag)))];
    if container {
        files.push((DOCKERFILE_NAME, DOCKERFILE.to_owned()));
    }
    // Check everything before writing anything.
    let existing = dir.ancestors().find(|ancestor| ancestor.exists()).unwrap_or(Path::new("/"));
    if !existing.is_dir() {
        return Err(Error::usage(format!(
            "`{}` cannot be a folder: `{}` is a file",
            dir.display(),
            existing.display()
        ))
        .with_hint("give `--dir` a folder (one that does not exist yet is made)"));
    }
    for (name, _) in &files {
        let path = dir.join(name);
        if path.exists() && !args.force {
            return Err(Error::usage(format!("`{}` already exists", path.display()))
                .with_hint("pass `--force` to overwrite it, or `--dir` to write elsewhere"));
        }
    }
    for (name, text) in &files {
        let path = dir.join(name);
        fs_err::create_dir_all(&dir)
            .and_then(|()| fs_err::write(&path, text))
            .map_err(|err| Error::internal(format!("cannot write `{}`", path.display())).with_source(err))?;
        crate::ui::print_note(&format!("wrote {}", shown(&path, &current)));
    }
    write_schema(&schema_at, &current)?;
    if repo.is_none() {
        crate::ui::print_note(&format!(
            "warning: `{}` is not in a git repository, and eden runs need one: `git init` there first",
            shown(&dir, &current)
        ));
    }
    for line in next_steps(&args, &dir, &current) {
        crate::ui::print_note(&line);
    }
    Ok(0)
}

/// The manifest's JSON Schema, as `eden schema` prints it.
pub(crate) const SCHEMA_NAME: &str = "eden.schema.json";

/// The schema written (refreshed if it is there), and its folder kept out of git.
fn write_schema(path: &Path, current: &Path) -> Result<(), Error> {
    let text = super::schema::text();
    if std::fs::read_to_string(path).is_ok_and(|on_disk| on_disk == text) {
        return Ok(());
    }
    let folder = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(folder)
        .and_then(|()| fs_err::write(path, text))
        .map_err(|err| Error::internal(format!("cannot write `{}`", path.display())).with_source(err))?;
    if let Ok(found) = Git::discover(folder) {
        Git::exclude_folder(&found.common_dir, crate::layout::EDEN_DIR)?;
    }
    crate::ui::print_note(&format!("wrote {} (the manifest's schema, for editors)", shown(path, current)));
    Ok(())
}

/// `path` relative to the folder `from` (both absolute), as `#:schema` takes it.
fn relative(path: &Path, from: &Path) -> String {
    let common = path.components().zip(from.components()).take_while(|(a, b)| a == b).count();
    let up = from.components().count() - common;
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_owned(), up).collect();
    parts.extend(path.components().skip(common).map(|part| part.as_os_str().to_string_lossy().into_owned()));
    match up {
        0 => format!("./{}", parts.join("/")),
        _ => parts.join("/"),
    }
}

/// What to do next, as commands that work when pasted where `init` was run.
fn next_steps(args: &InitArgs, dir: &Path, current: &Path) -> Vec<String> {
    let manifest = shown(&dir.join("eden.toml"), current);
    let mut steps = vec![format!("next: edit the prompt in {manifest}")];
    let npm_agent = AgentKind::from_name(&args.agent).is_some_and(|kind| kind.spec().npm_package.is_some());
    let agent = if npm_agent { args.agent.as_str() } else { "none" };
    let file = shown(&dir.join(DOCKERFILE_NAME), current);
    let file = if file == DOCKERFILE_NAME { String::new() } else { format!(" --file {file}") };
    match args.sandbox.as_str() {
        engine @ ("docker" | "podman") => {
            steps.push(format!("then: eden image build --engine {engine} --agent {agent}{file}"));
        }
        "kubernetes" => steps.push(format!(
            "then: eden image build --agent {agent}{file}, push the image where your cluster's nodes pull from, and name it in `sandbox.image`"
        )),
        _ => {}
    }
    // `eden run` alone runs `./eden.toml`.
    let run =
        if manifest == super::run::DEFAULT_MANIFEST { "eden run".to_owned() } else { format!("eden run {manifest}") };
    steps.push(format!("then: {run}"));
    steps.push("(commit the manifest first if you use strategy `head`, which needs a clean checkout)".to_owned());
    steps
}

/// The repository `dir` is (or will be) in: the nearest existing folder's.
fn repository_of(dir: &Path) -> Option<PathBuf> {
    let existing = dir.ancestors().find(|folder| folder.is_dir())?;
    Git::discover(existing).ok().map(|found| found.root)
}

/// `path` as the person typed it, relative to where they are when it is inside.
fn shown(path: &Path, current: &Path) -> String {
    match path.strip_prefix(current) {
        Ok(rest) if rest.as_os_str().is_empty() => ".".to_owned(),
        Ok(rest) => rest.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// `eden:<folder name>`, made a valid image name.
pub(crate) fn default_tag(dir: &Path) -> String {
    let name: String = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect();
    let name = name.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("eden:{}", if name.is_empty() { "sandbox" } else { name })
}

fn manifest(agent: &str, sandbox: &str, tag: &str) -> String {
    let init_key = crate::agent::AgentKind::from_name(agent).and_then(|kind| kind.spec().init_key);
    // A sandboxed agent gets only the variables the manifest hands it: its key, from eden's
    // environment (held by eden: the agent sees a placeholder). Without a sandbox it has yours.
    let key = match (agent, init_key) {
        (_, Some(var)) if sandbox != "none" => {
            format!("env = {{ {var} = \"${{{var}}}\" }}   # from your environment; eden holds it, the agent sees a placeholder\n")
        }
        (_, Some(var)) => format!("# env = {{ {var} = \"${{{var}}}\" }}\n"),
        ("cli", None) => "binary = \"./my-agent.sh\"\n".to_owned(),
        _ => String::new(),
    };
    let sandbox_lines = match sandbox {
        "docker" | "podman" => format!(
            "kind = \"{sandbox}\"\nimage = \"{tag}\"        # `eden image build` makes it\nnetwork = \"internet\"   # the internet, not this machine; \"none\", \"allowlist\", \"bridge\" (reaches this machine)\n"
        ),
        "kubernetes" => format!(
            "kind = \"kubernetes\"\nimage = \"{tag}\"        # an image your cluster's nodes can get: build it, push it to their registry\n# namespace = \"agents\"   # default: the context's\n"
        ),
        "isolated" => "kind = \"isolated\"\n# network = \"host\"     # default none: only the provider, through eden's relay\n".to_owned(),
        other => format!("kind = \"{other}\"\n"),
    };
    let services = match sandbox {
        "docker" | "podman" | "kubernetes" => "\n# [[service]]                     # a database or a cache beside the sandbox, reached by its name\n# name = \"db\"\n# image = \"postgres:16\"           # on the engine (eden never pulls)\n# ready = \"pg_isready -h 127.0.0.1 -q\"\n",
        _ => "",
    };
    format!(
        r#"# eden manifest: `eden run` runs it. Every key: docs/src/reference/manifest.md, or `eden schema`.
name = "task"
prompt = """
{placeholder}
When everything is done and committed, print <promise>COMPLETE</promise>.
"""

[agent]
kind = "{agent}"
# model = "..."
{key}
[sandbox]
{sandbox_lines}
[branch]
strategy = "merge-to-head"        # merge back into the current branch when done

[loop]
max_iterations = 10
completion_signal = "<promise>COMPLETE</promise>"
idle_timeout = "10m"
{services}"#,
        placeholder = crate::manifest::PLACEHOLDER_TASK
    )
}
