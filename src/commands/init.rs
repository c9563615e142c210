//! `eden init`: a starter manifest (and, for docker/podman, the Dockerfile `eden image build`
//! uses). Never overwrites without `--force`.

use crate::cli::InitArgs;
use crate::error::Error;
use std::path::Path;

pub const DOCKERFILE: &str = include_str!("templates/Dockerfile.eden");
pub const DOCKERFILE_NAME: &str = "Dockerfile.eden";
const AGENTS: [&str; 8] = ["claude-code", "codex", "opencode", "pi", "cursor", "copilot", "cli", "simulated"];
const SANDBOXES: [&str; 4] = ["none", "docker", "podman", "isolated"];

pub fn init(args: InitArgs) -> Result<i32, Error> {
    if !AGENTS.contains(&args.agent.as_str()) {
        return Err(Error::usage(format!("unknown agent kind `{}`", args.agent))
            .with_hint(format!("agent kinds: {}", AGENTS.join(", "))));
    }
    if !SANDBOXES.contains(&args.sandbox.as_str()) {
        return Err(Error::usage(format!("unknown sandbox kind `{}`", args.sandbox))
            .with_hint(format!("sandbox kinds: {}", SANDBOXES.join(", "))));
    }
    let current = crate::commands::current_dir()?;
    let dir = args.dir.map_or(current.clone(), |dir| current.join(dir));
    let container = matches!(args.sandbox.as_str(), "docker" | "podman");
    let mut files = vec![("eden.toml", manifest(&args.agent, &args.sandbox, &default_tag(&dir)))];
    if container {
        files.push((DOCKERFILE_NAME, DOCKERFILE.to_owned()));
    }
    // Check everything before writing anything.
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
            .map_err(|err| Error::usage(err.to_string()))?;
        crate::ui::print_note(&format!("wrote {}", path.display()));
    }
    let next = if container {
        let npm_agent = matches!(args.agent.as_str(), "claude-code" | "codex" | "opencode" | "pi" | "copilot");
        let agent = if npm_agent { args.agent.as_str() } else { "none" };
        format!("next: `eden image build --engine {} --agent {agent}`, then `eden run eden.toml`", args.sandbox)
    } else {
        "next: edit the prompt, then `eden run eden.toml`".to_owned()
    };
    crate::ui::print_note(&next);
    Ok(0)
}

/// `eden:<folder name>`, made a valid image name.
pub fn default_tag(dir: &Path) -> String {
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
    let key = match agent {
        "claude-code" => "# env = { ANTHROPIC_API_KEY = \"${ANTHROPIC_API_KEY}\" }\n",
        "codex" => "# env = { OPENAI_API_KEY = \"${OPENAI_API_KEY}\" }\n",
        "cli" => "binary = \"./my-agent.sh\"\n",
        _ => "",
    };
    let sandbox_lines = match sandbox {
        "docker" | "podman" => format!(
            "kind = \"{sandbox}\"\nimage = \"{tag}\"        # `eden image build` makes it\nnetwork = \"bridge\"\n"
        ),
        other => format!("kind = \"{other}\"\n"),
    };
    format!(
        r#"# eden manifest: `eden run eden.toml`. Reference: the README's "Manifest reference".
name = "task"
prompt = """
Describe the task here.
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
"#
    )
}
