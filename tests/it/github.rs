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
    assert_eq!(outputs["branch"], record["branch"].as_str().unwrap());
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
    assert!(summary.contains(&format!("branch `{}`", record["branch"].as_str().unwrap())), "{summary}");
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
    assert_eq!(outputs["branch"].lines().count(), 2);
    assert_eq!(outputs["status"], "success");
}

/// `action/run.sh` as the composite action runs it: inputs as variables, eden from PATH.
#[test]
fn the_actions_script_runs_the_manifest() {
    let env = TestEnv::new();
    let github = Github::new(&env);
    let agent = committing_agent(&env);
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("action/run.sh");
    let eden_dir = Path::new(crate::support::EDEN).parent().unwrap().to_path_buf();
    let path_var = format!("{}:/usr/bin:/bin", eden_dir.display());
    let action = |manifest: &str, args: &str, install: &str, path_var: &str| {
        let mut command = std::process::Command::new("bash");
        env.apply_env(&mut command);
        command
            .arg(&script)
            .current_dir(&env.repo)
            .env("PATH", path_var)
            .env("EDEN_ACTION_MANIFEST", manifest)
            .env("EDEN_ACTION_ARGS", args)
            .env("EDEN_ACTION_INSTALL", install)
            .env("EDEN_ACTION_SOURCE", env!("CARGO_MANIFEST_DIR"))
            .stdin(std::process::Stdio::null());
        github.apply(&mut command);
        Run::from(command.output().unwrap())
    };
    let run = action(path.to_str().unwrap(), "--quiet --arg UNUSED_IN_PROMPT=1", "never", &path_var);
    // The prompt uses no `{{UNUSED_IN_PROMPT}}`: eden refuses the argument, proving it got there.
    run.assert_code(2);
    assert!(run.stderr.contains("UNUSED_IN_PROMPT"), "{}", run.stderr);
    let run = action(path.to_str().unwrap(), "--quiet", "auto", &path_var);
    run.assert_code(0);
    assert_eq!(read_outputs(&github.output)["status"], "success");
    let run = action(path.to_str().unwrap(), "", "never", "/usr/bin:/bin");
    run.assert_code(2);
    assert!(run.stderr.contains("eden is not on PATH"), "{}", run.stderr);
    let run = action(path.to_str().unwrap(), "", "sometimes", &path_var);
    run.assert_code(2);
    assert!(run.stderr.contains("install must be auto, always or never"), "{}", run.stderr);
    let run = action("", "", "never", &path_var);
    run.assert_code(1);
    assert!(run.stderr.contains("the action needs its manifest input"), "{}", run.stderr);
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
        ["branch", "chosen_branch", "status", "exit_reason", "exit_code", "commits", "cost_usd", "artifacts", "runs"]
    );
    for name in declared {
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
    let mut expected: Vec<String> =
        ["branch", "chosen_branch", "status", "exit_reason", "exit_code", "commits", "cost_usd", "artifacts", "runs"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
    expected.sort();
    assert_eq!(written, expected);
}
