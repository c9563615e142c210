//! Structured output with the real Claude Code CLI against the scripted model server: a valid
//! answer, an invalid one fixed on a retry in the same (resumed) session, and one invalid to the
//! end. And the implement → review manifest in `manifests/`, run end to end.

use crate::model_server::{Answers, ModelServer};
use crate::real_agents::{claude_env, pi_env};
use crate::support::{Run, TestEnv};

const SCHEMA: &str = r#"{"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}, "notes": {"type": "string"}}}"#;
const VALID: &str = "Looks good.\n<verdict>\n```json\n{\"approved\": true, \"notes\": \"clean\"}\n```\n</verdict>";
const INVALID: &str = "<verdict>{\"approved\": \"yes\"}</verdict>";

fn installed(binary: &str) -> bool {
    match which::which(binary) {
        Ok(_) => true,
        Err(_) => {
            crate::support::skip(&format!("`{binary}` is not installed (npm install -g ...; see .ci/run)"));
            false
        }
    }
}

fn claude() -> bool {
    installed("claude")
}

/// The agent CLI a review runs with: its manifest lines and its environment.
struct Cli {
    binary: &'static str,
    agent: &'static str,
    env: fn(&TestEnv, &ModelServer) -> Vec<(String, String)>,
}

const CLAUDE: Cli = Cli { binary: "claude", agent: "kind = \"claude-code\"", env: claude_env };
const PI: Cli = Cli { binary: "pi", agent: "kind = \"pi\"\nmodel = \"mockant/mock-model\"", env: pi_env };

/// A review run whose model answers `replies` in turn.
fn review(replies: &[&str], max_retries: u32) -> Option<(TestEnv, Run)> {
    review_with(&CLAUDE, replies, max_retries)
}

fn review_with(cli: &Cli, replies: &[&str], max_retries: u32) -> Option<(TestEnv, Run)> {
    if !installed(cli.binary) {
        return None;
    }
    let env = TestEnv::new();
    std::fs::write(env.root().join("verdict.schema.json"), SCHEMA).unwrap();
    let answers = Answers { trigger: "<verdict>".into(), replies: replies.iter().map(|r| r.to_string()).collect() };
    let server = ModelServer::start_with(std::fs::canonicalize(&env.repo).unwrap(), false, Some(answers));
    let manifest = format!(
        "prompt = \"Review the change. Answer inside <verdict>...</verdict> as JSON.\"\n[agent]\n{}\n\
         [loop]\nidle_timeout = \"90s\"\n[output]\ntag = \"verdict\"\nschema = \"verdict.schema.json\"\nmax_retries = {max_retries}\n",
        cli.agent
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    for (key, value) in (cli.env)(&env, &server) {
        command.env(key, value);
    }
    Some((env, Run::from(command.output().unwrap())))
}

#[test]
fn a_valid_answer_is_the_runs_output() {
    let Some((env, run)) = review(&[VALID], 2) else { return };
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["output"], serde_json::json!({"approved": true, "notes": "clean"}));
    assert_eq!(record["exit_reason"], "output");
    assert_eq!(record["iterations"].as_array().unwrap().len(), 1);
    env.assert_pristine();
}

#[test]
fn an_invalid_answer_is_fixed_on_a_retry_in_the_same_session() {
    let Some((env, run)) = review(&[INVALID, VALID], 2) else { return };
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["output"]["approved"], true);
    let iterations = record["iterations"].as_array().unwrap();
    assert_eq!(iterations.len(), 2, "the first answer and the retry: {record:#}");
    assert_eq!(iterations[0]["outcome"], "output_invalid");
    let retry_prompt = iterations[1]["prompt"].as_str().unwrap();
    assert!(retry_prompt.contains("at /approved: \"yes\" is not of type \"boolean\""), "{retry_prompt}");
    // The retry resumed the same conversation.
    assert_eq!(iterations[0]["session_id"], iterations[1]["session_id"]);
    assert!(run.stderr.contains("asking again in the same session (retry 1/2)"), "{}", run.stderr);
    env.assert_pristine();
}

#[test]
fn pi_fixes_an_invalid_answer_on_a_retry_in_its_session_too() {
    let Some((env, run)) = review_with(&PI, &[INVALID, VALID], 2) else { return };
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["output"]["approved"], true, "{}", run.stderr);
    let iterations = record["iterations"].as_array().unwrap();
    assert_eq!(iterations.len(), 2);
    assert_eq!(iterations[0]["session_id"], iterations[1]["session_id"], "pi resumed its session");
    env.assert_pristine();
}

#[test]
fn an_answer_invalid_to_the_end_exits_3_with_the_errors_raw_text_and_session() {
    let Some((env, run)) = review(&[INVALID], 1) else { return };
    run.assert_code(3);
    let record = run.record();
    let session = record["iterations"][1]["session_id"].as_str().unwrap().to_owned();
    let error = run.error_text();
    assert!(error.starts_with("error: the agent's structured output is not usable after 2 attempt(s):\n  - at /approved: \"yes\" is not of type \"boolean\"\n"), "{error}");
    assert!(error.contains(&format!("session id: {session}")), "{error}");
    assert!(error.contains("  <verdict>{\"approved\": \"yes\"}</verdict>"), "the raw answer: {error}");
    assert!(error.contains(&format!(
        "hint: fix the prompt or the schema; to continue that conversation, set `agent.resume = \"{session}\"`"
    )));
    assert_eq!(record["output"], serde_json::Value::Null);
    env.assert_pristine();
}

/// `manifests/implement-review.toml`, as shipped: Claude implements (writes and commits), then
/// reviews with a structured verdict that sees the implementation's summary.
#[test]
fn the_implement_review_manifest_runs_end_to_end() {
    if !claude() {
        return;
    }
    let env = TestEnv::new();
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
    let dir = env.repo.join("eden");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["implement-review.toml", "implement.md", "review.md", "review.schema.json"] {
        std::fs::copy(shipped.join(file), dir.join(file)).unwrap();
    }
    env.git(&["add", "eden"]);
    env.git(&["commit", "-q", "-m", "add the manifest"]);
    let answers = Answers {
        trigger: "<verdict>".into(),
        replies: vec![
            "<verdict>{\"approved\": true, \"summary\": \"hello.txt added\", \"issues\": []}</verdict>".into()
        ],
    };
    let server = ModelServer::start_with(std::fs::canonicalize(&env.repo).unwrap(), false, Some(answers));
    let mut command = env.eden_command(&[
        "run",
        "eden/implement-review.toml",
        "--json",
        "--arg",
        "TASK=create hello.txt and commit it",
    ]);
    for (key, value) in claude_env(&env, &server) {
        command.env(key, value);
    }
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.record();
    let steps = record["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!((steps[0]["name"].as_str(), steps[0]["status"].as_str()), (Some("implement"), Some("ok")));
    assert_eq!((steps[1]["name"].as_str(), steps[1]["status"].as_str()), (Some("review"), Some("ok")));
    assert_eq!(record["output"]["approved"], true);
    assert_eq!(record["merged_into"], "main");
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    // The review step's prompt carried the implementation's commits.
    let review = record["iterations"].as_array().unwrap().iter().find(|i| i["step"] == "review").unwrap().clone();
    assert!(review["prompt"].as_str().unwrap().contains("add hello.txt"), "{review:#}");
    env.assert_pristine();
}
