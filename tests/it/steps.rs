//! `[[step]]` chains with `cli` agents: shared worktree and branch, `when`, failures stopping
//! the chain or not, `PREVIOUS_STEP_RESULT`, hooks per step.

use crate::support::TestEnv;

/// A `cli` step running `script` (a shell snippet; the prompt is on stdin).
fn step(env: &TestEnv, name: &str, script: &str, extra: &str) -> String {
    let path = env.script(&format!("{name}.sh"), script);
    format!(
        "[[step]]\nname = \"{name}\"\nprompt = \"{name}: {{{{PROMPT_{}}}}}\"\nagent = {{ kind = \"cli\", binary = \"{}\" }}\n{extra}",
        name.to_uppercase(),
        path.display()
    )
}

fn manifest(steps: &[String], args: &[&str]) -> String {
    let args: String = args.iter().map(|a| format!("PROMPT_{} = \"do it\"\n", a.to_uppercase())).collect();
    format!("name = \"chain\"\n[prompt_args]\n{args}\n{}", steps.join("\n"))
}

const DONE: &str = "echo '<promise>COMPLETE</promise>'";

#[test]
fn implement_then_review_share_the_branch_and_pass_the_result() {
    let env = TestEnv::new();
    let seen = env.root().join("review-prompt.txt");
    let implement = step(
        &env,
        "implement",
        &format!("cat >/dev/null\necho code > code.txt && git add code.txt && git commit -qm 'implement'\necho '<result>{{\"summary\": \"added code.txt\"}}</result>'\n{DONE}"),
        "[step.output]\nkind = \"object\"\n",
    );
    let review = step(
        &env,
        "review",
        &format!("cat > '{}'\ntest -f code.txt && echo '<result>approve</result>'", seen.display()),
        "when = \"commits\"\n[step.output]\n",
    )
    .replace(
        "prompt = \"review: {{PROMPT_REVIEW}}\"",
        "prompt = \"review {{PREVIOUS_STEP_RESULT}}, answer in <result>\"",
    );
    let hooks = format!(
        "[hooks.host]\non_iteration_start = [\"echo $EDEN_STEP $EDEN_ITERATION >> '{}'\"]\n",
        env.root().join("hooks.log").display()
    );
    let text = manifest(&[implement, review], &["implement"]);
    let text = text.replace("[prompt_args]", &format!("{hooks}[prompt_args]"));
    let text = text.replace("implement: {{PROMPT_IMPLEMENT}}\"", "implement, answer in <result>\"");
    let run = env.run_manifest(&text, &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "review {\"summary\":\"added code.txt\"}, answer in <result>");
    assert_eq!(record["steps"][0]["output"], serde_json::json!({"summary": "added code.txt"}));
    assert_eq!(record["steps"][1]["output"], "approve");
    assert_eq!(record["output"], "approve", "the run's output is the last step's");
    let steps: Vec<&str> =
        record["iterations"].as_array().unwrap().iter().map(|i| i["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["implement", "review"]);
    assert_eq!(std::fs::read_to_string(env.root().join("hooks.log")).unwrap(), "implement 1\nreview 1\n");
    assert_eq!(env.log_subjects("main")[0], "implement");
    env.assert_pristine();
}

#[test]
fn a_failing_step_stops_the_chain_with_its_exit_code_but_always_steps_run() {
    let env = TestEnv::new();
    let marker = env.root().join("report-ran");
    let steps = [
        step(&env, "build", "cat >/dev/null\necho 'broken build' >&2\nexit 1", ""),
        step(&env, "review", &format!("cat >/dev/null\n{DONE}"), ""),
        step(&env, "report", &format!("cat >/dev/null\ntouch '{}'\n{DONE}", marker.display()), "when = \"always\"\n"),
    ];
    let run = env.run_manifest(&manifest(&steps, &["build", "review", "report"]), &[]);
    run.assert_code(3);
    assert!(run.error_text().starts_with("error: the agent exited with code 1 in iteration 1"), "{}", run.stderr);
    let record = run.record();
    let statuses: Vec<&str> =
        record["steps"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["failed", "skipped", "ok"]);
    assert_eq!(record["steps"][0]["exit_code"], 3);
    assert_eq!(record["steps"][1]["reason"], "an earlier step failed");
    assert!(marker.exists(), "the `always` step ran");
    env.assert_pristine();
}

#[test]
fn continue_on_failure_and_when_commits() {
    let env = TestEnv::new();
    let steps = [
        step(&env, "lint", "cat >/dev/null\nexit 2", "continue_on_failure = true\n"),
        step(&env, "check", &format!("cat >/dev/null\n{DONE}"), ""),
        step(&env, "review", &format!("cat >/dev/null\n{DONE}"), "when = \"commits\"\n"),
    ];
    let run = env.run_manifest(&manifest(&steps, &["lint", "check", "review"]), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("step `lint` failed and the chain goes on"), "{}", run.stderr);
    let record = run.record();
    let statuses: Vec<&str> =
        record["steps"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["failed", "ok", "skipped"]);
    assert_eq!(record["steps"][2]["reason"], "no earlier step made commits");
    env.assert_pristine();
}
