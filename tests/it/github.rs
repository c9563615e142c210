//! In a GitHub Actions step (`GITHUB_STEP_SUMMARY`, `GITHUB_OUTPUT` set): the job summary and
//! the step's outputs, for one run and for several; and the action's own script
//! (`action/run.sh`, what `action.yml` runs) run here as a job would run it.

use crate::support::{cli_manifest, Run, TestEnv};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The outputs in `GITHUB_OUTPUT`'s `name<<DELIMITER` form, checked to be well formed.
pub fn read_outputs(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut outputs = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let (name, delimiter) = line.split_once("<<").unwrap_or_else(|| panic!("not `name<<DELIMITER`: {line}"));
        let mut value = Vec::new();
        for line in lines.by_ref() {
            if line == delimiter {
                break;
            }
            value.push(line);
        }
        assert!(outputs.insert(name.to_owned(), value.join("\n")).is_none(), "{name} twice");
    }
    outputs
}

struct Github {
    summary: PathBuf,
    output: PathBuf,
}

impl Github {
    fn new(env: &TestEnv) -> Github {
        Github { summary: env.root().join("summary.md"), output: env.root().join("output.txt") }
    }

    fn apply(&self, command: &mut std::process::Command) {
        command.env("GITHUB_STEP_SUMMARY", &self.summary).env("GITHUB_OUTPUT", &self.output);
    }
}

fn committing_agent(env: &TestEnv) -> PathBuf {
    env.script(
        "agent.sh",
        "cat >/dev/null\necho work > work.txt && git add work.txt && git commit -qm work\necho '<promise>COMPLETE</promise>'",
    )
}

#[test]
fn a_run_writes_the_job_summary_and_the_step_outputs() {
    let env = TestEnv::new();
    let github = Github::new(&env);
    let agent = committing_agent(&env);
    let path = env.write_manifest(&cli_manifest(&agent, "[[check]]\nname = \"unit\"\ncmd = \"true\"\n"));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    github.apply(&mut command);
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.record();
    let outputs = read_outputs(&github.output);
    assert_eq!(outputs["branch"], "", "merged, and deleted: no branch to name");
    assert_eq!(outputs["merged_into"], "main");
    assert_eq!(outputs["status"], "success");
    assert_eq!(outputs["exit_reason"], "completed");
    assert_eq!(outputs["exit_code"], "0");
    assert_eq!(outputs["commits"], "1");
    assert_eq!(outputs["cost_usd"], "", "a cli agent reports no cost");
    let runs: serde_json::Value = serde_json::from_str(&outputs["runs"]).unwrap();
    assert_eq!(runs[0]["merged_into"], "main");
    let summary = std::fs::read_to_string(&github.summary).unwrap();
    assert!(summary.starts_with("### ✅ eden: `t` completed\n"), "{summary}");
    assert!(summary.contains("| t | cli | completed | 1 | 1 | 1/1 | merged into main |"), "{summary}");
    let branch = record["branch"].as_str().unwrap();
    assert!(summary.contains(&format!("branch `{branch}` merged into `main` (deleted here)")), "{summary}");
    assert!(summary.contains("- ✅ check `unit`: passed (iteration 1)"), "{summary}");

    // A run that fails says so, and appends: a job's steps share the files.
    let failing = env.write_manifest(&cli_manifest(
        &agent,
        "[loop]\nmax_iterations = 1\n[[check]]\nname = \"lint\"\ncmd = \"exit 4\"\n",
    ));
    let mut command = env.eden_command(&["run", failing.to_str().unwrap()]);
    github.apply(&mut command);
    Run::from(command.output().unwrap()).assert_code(9);
    let summary = std::fs::read_to_string(&github.summary).unwrap();
    assert!(summary.contains("### ❌ eden: `t` checks_failed"), "{summary}");
    assert!(summary.contains("- ❌ check `lint`: failed (exit 4) (iteration 1)"), "{summary}");
    let text = std::fs::read_to_string(&github.output).unwrap();
    assert_eq!(text.matches("status<<").count(), 2, "appended, not replaced");
}

/// Several runs: one summary and one set of outputs from the parent, none from each run.
#[test]
fn several_runs_write_one_summary() {
    let env = TestEnv::new();
    let github = Github::new(&env);
    let agent = committing_agent(&env);
    let a = env.root().join("a.toml");
    let b = env.root().join("b.toml");
    std::fs::write(&a, cli_manifest(&agent, "").replace("name = \"t\"", "name = \"a\"")).unwrap();
    std::fs::write(&b, cli_manifest(&agent, "").replace("name = \"t\"", "name = \"b\"")).unwrap();
    let mut command = env.eden_command(&["run", a.to_str().unwrap(), b.to_str().unwrap(), "--quiet"]);
    github.apply(&mut command);
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let summary = std::fs::read_to_string(&github.summary).unwrap();
    assert_eq!(summary.matches("### ").count(), 1, "{summary}");
    assert!(summary.starts_with("### ✅ eden: 2 runs, exit code 0"), "{summary}");
    assert!(summary.contains("| a | cli | completed |") && summary.contains("| b | cli | completed |"), "{summary}");
    let outputs = read_outputs(&github.output);
    let runs: serde_json::Value = serde_json::from_str(&outputs["runs"]).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert_eq!(outputs["merged_into"], "main\nmain");
    assert_eq!(outputs["status"], "success");
}

/// `action/run.sh` as the composite action runs it: the inputs as variables, eden from `PATH`.
fn action(env: &TestEnv, github: &Github, inputs: &[(&str, &str)], path_var: Option<&str>) -> Run {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("action/run.sh");
    let eden_dir = Path::new(crate::support::EDEN).parent().unwrap().to_path_buf();
    let mut command = std::process::Command::new("bash");
    env.apply_env(&mut command);
    command
        .arg(&script)
        .current_dir(&env.repo)
        .env("PATH", path_var.map_or_else(|| format!("{}:/usr/bin:/bin", eden_dir.display()), str::to_owned))
        .env("EDEN_ACTION_SOURCE", env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::null());
    for (name, value) in inputs {
        command.env(format!("EDEN_ACTION_{name}"), value);
    }
    github.apply(&mut command);
    Run::from(command.output().unwrap())
}

#[test]
fn the_actions_script_runs_the_manifest() {
    let env = TestEnv::new();
    let github = Github::new(&env);
    let agent = committing_agent(&env);
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let path = path.to_str().unwrap();
    let run = action(
        &env,
        &github,
        &[("MANIFEST", path), ("ARGS", "--quiet --arg UNUSED_IN_PROMPT=1"), ("INSTALL", "never")],
        None,
    );
    // The prompt uses no `{{UNUSED_IN_PROMPT}}`: eden refuses the argument, proving it got there.
    run.assert_code(2);
    assert!(run.stderr.contains("UNUSED_IN_PROMPT"), "{}", run.stderr);
    let run = action(&env, &github, &[("MANIFEST", path), ("ARGS", "--quiet"), ("INSTALL", "auto")], None);
    run.assert_code(0);
    assert_eq!(read_outputs(&github.output)["status"], "success");
    let run = action(&env, &github, &[("MANIFEST", path), ("INSTALL", "never")], Some("/usr/bin:/bin"));
    run.assert_code(2);
    assert!(run.stderr.contains("eden is not on PATH"), "{}", run.stderr);
    let run = action(&env, &github, &[("MANIFEST", path), ("INSTALL", "sometimes")], None);
    run.assert_code(2);
    assert!(run.stderr.contains("install must be auto, always or never"), "{}", run.stderr);
    let run = action(&env, &github, &[("MANIFEST", path), ("IMAGE", "yes")], None);
    run.assert_code(2);
    assert!(run.stderr.contains("image must be build or empty"), "{}", run.stderr);
    let run = action(&env, &github, &[("MANIFEST", ""), ("INSTALL", "never")], None);
    run.assert_code(1);
    assert!(run.stderr.contains("the action needs its manifest input"), "{}", run.stderr);
}

/// The workflow the README gives, as far as this machine can run it: `image: build` builds the
/// image the manifest names (`eden image build --manifest`, from the local test image through
/// `image-args`), the agent works in docker, and the `branch` output names only a branch that
/// is there after the run — none once its work merged, the kept one when a check fails.
#[test]
fn the_action_builds_the_manifests_image_and_names_only_branches_that_exist() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let github = Github::new(&env);
    env.eden(&["init", "--agent", "simulated", "--sandbox", "docker"]).assert_code(0);
    std::fs::remove_file(env.repo.join("eden.toml")).unwrap();
    let tag = format!("localhost/eden-action-{}:1", std::process::id());
    let commit = "echo work > w.txt && git add w.txt && git -c user.name=box -c user.email=box@example.com commit -qm work && echo '<promise>COMPLETE</promise>'";
    let manifest = crate::containers::manifest("docker", commit, "").replace(crate::containers::IMAGE, &tag);
    env.write("eden.toml", &manifest);
    env.git(&["add", "eden.toml", "Dockerfile.eden"]);
    env.git(&["commit", "-qm", "eden"]);
    let image_args = format!("--base {} --agent none", crate::containers::IMAGE);
    let run =
        action(&env, &github, &[("IMAGE", "build"), ("IMAGE_ARGS", &image_args), ("MANIFEST", "eden.toml")], None);
    let _ = std::process::Command::new("docker").args(["rmi", "-f", &tag]).output();
    run.assert_code(0);
    assert!(run.stderr.contains(&format!("built `{tag}`")), "{}", run.stderr);
    let outputs = read_outputs(&github.output);
    assert_eq!((outputs["status"].as_str(), outputs["commits"].as_str()), ("success", "1"));
    assert_eq!(outputs["merged_into"], "main");
    assert_eq!(outputs["branch"], "", "merged, and its branch deleted");
    let summary = std::fs::read_to_string(&github.summary).unwrap();
    assert!(summary.contains("merged into `main` (deleted here)"), "{summary}");

    // A check that fails keeps the branch: the output names it, and it is there.
    std::fs::remove_file(&github.output).unwrap();
    let failing = env.write_manifest(&cli_manifest(
        &committing_agent(&env),
        "[loop]\nmax_iterations = 1\n[[check]]\nname = \"lint\"\ncmd = \"exit 4\"\n",
    ));
    let mut command = env.eden_command(&["run", failing.to_str().unwrap()]);
    github.apply(&mut command);
    Run::from(command.output().unwrap()).assert_code(9);
    let branch = read_outputs(&github.output)["branch"].clone();
    assert!(branch.starts_with("eden/"), "{branch}");
    env.git(&["rev-parse", "--verify", &branch]);
    assert!(std::fs::read_to_string(&github.summary).unwrap().contains(&format!("branch `{branch}` kept")));
}

/// Every output `action.yml` declares is one eden writes, and its step runs the script.
#[test]
fn the_action_declares_what_eden_writes() {
    let action = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml")).unwrap();
    assert!(action.contains("run: '\"$GITHUB_ACTION_PATH/action/run.sh\"'"));
    let outputs = action.split("\noutputs:\n").nth(1).unwrap().split("\nruns:\n").next().unwrap();
    let declared: Vec<&str> = outputs
        .lines()
        .filter(|line| line.starts_with("  ") && !line.starts_with("    ") && line.trim_end().ends_with(':'))
        .map(|line| line.trim().trim_end_matches(':'))
        .collect();
    assert_eq!(
        declared,
        [
            "branch",
            "chosen_branch",
            "status",
            "exit_reason",
            "merged_into",
            "exit_code",
            "commits",
            "cost_usd",
            "artifacts",
            "pull_request_url",
            "pull_request_number",
            "runs"
        ]
    );
    for name in &declared {
        assert!(action.contains(&format!("value: ${{{{ steps.run.outputs.{name} }}}}")), "{name}");
    }
    let env = TestEnv::new();
    let github = Github::new(&env);
    let agent = committing_agent(&env);
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let mut command = env.eden_command(&["run", path.to_str().unwrap()]);
    github.apply(&mut command);
    Run::from(command.output().unwrap()).assert_code(0);
    let written: Vec<String> = read_outputs(&github.output).into_keys().collect();
    let mut expected: Vec<String> = declared.iter().map(|name| (*name).to_owned()).collect();
    expected.sort();
    assert_eq!(written, expected);
}

/// The book's CI page's workflow is `action/example-workflow.yml`, word for word, and what it gives the
/// action are inputs `action.yml` has.
#[test]
fn the_readmes_workflow_is_the_example_and_fits_the_action() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("docs/src/getting-started/ci.md")).unwrap();
    let start = readme.find("```yaml\nname: eden\n").expect("the CI page has the workflow") + "```yaml\n".len();
    let workflow = &readme[start..start + readme[start..].find("```\n").unwrap()];
    let example = std::fs::read_to_string(root.join("action/example-workflow.yml")).unwrap();
    assert!(example.ends_with(workflow), "action/example-workflow.yml is the README's workflow");
    let action = std::fs::read_to_string(root.join("action.yml")).unwrap();
    let inputs = action.split("\ninputs:\n").nth(1).unwrap().split("\noutputs:\n").next().unwrap();
    let with =
        workflow.split("        with:\n").nth(2).expect("the eden step's inputs").split("        env:").next().unwrap();
    for line in with.lines() {
        let name = line.trim().split(':').next().unwrap();
        assert!(inputs.contains(&format!("\n  {name}:\n")) || inputs.starts_with(&format!("  {name}:\n")), "{name}");
    }
    for output in ["status", "branch", "pull_request_url"] {
        assert!(workflow.contains(&format!("steps.eden.outputs.{output}")), "{output}");
    }
    // The pull-request loop's permissions, each named.
    for permission in ["contents: write", "pull-requests: write", "checks: read", "actions: read"] {
        assert!(workflow.contains(&format!("  {permission}")), "{permission}");
    }
}

/// Every workflow and action the project ships parses as YAML, as GitHub reads it (PyYAML,
/// which `.ci/run` installs): `action.yml`, `action/*.yml`, and every `yaml` block of the README
/// and the book.
#[test]
fn every_workflow_shipped_is_valid_yaml() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut shipped: Vec<(String, String)> = Vec::new();
    shipped.push(("action.yml".into(), std::fs::read_to_string(root.join("action.yml")).unwrap()));
    for entry in std::fs::read_dir(root.join("action")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".yml") || name.ends_with(".yaml") {
            shipped.push((format!("action/{name}"), std::fs::read_to_string(entry.path()).unwrap()));
        }
    }
    for path in crate::generated::documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, block) in text.split("```yaml\n").skip(1).enumerate() {
            shipped.push((
                format!("{}, yaml block {}", path.display(), n + 1),
                block.split("\n```").next().unwrap().to_owned(),
            ));
        }
    }
    assert!(shipped.len() >= 3, "{shipped:?}");
    for (what, text) in &shipped {
        let mut check = std::process::Command::new("python3")
            .args(["-c", "import sys, yaml; d = yaml.safe_load(sys.stdin); assert isinstance(d, dict), type(d)"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        std::io::Write::write_all(&mut check.stdin.take().unwrap(), text.as_bytes()).unwrap();
        let out = check.wait_with_output().unwrap();
        assert!(out.status.success(), "{what} is not valid YAML: {}", String::from_utf8_lossy(&out.stderr));
    }
}
