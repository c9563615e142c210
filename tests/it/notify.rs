//! `[notify]`: a run's events told to a command on the host and to a webhook on 127.0.0.1, each
//! once, with nothing secret and the agent's text neutralized; a webhook that fails is a
//! warning, one that hangs delays the end by its timeout at most; the user-level config adds
//! its own; a mistake in either is located and changes nothing.

use crate::support::{Run, TestEnv};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the test's webhook answers each request, in turn (the last answer repeats).
#[derive(Clone, Copy)]
enum Answer {
    Ok,
    Fail,
    /// Reads the request and never answers.
    Hang,
}

/// A webhook on 127.0.0.1: the bodies it was sent, in order.
struct Hook {
    port: u16,
    bodies: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl Hook {
    fn start(answers: &[Answer]) -> Hook {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let (kept, answers) = (bodies.clone(), answers.to_vec());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                while !head.ends_with("\r\n\r\n") && reader.read_line(&mut head).unwrap_or(0) > 0 {}
                let length = head
                    .lines()
                    .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_owned))
                    .map_or(0, |length| length.trim().parse::<usize>().unwrap());
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                assert!(head.starts_with("POST /hook/SECRET-PATH-42 HTTP/1.1\r\n"), "{head}");
                assert!(head.to_ascii_lowercase().contains("content-type: application/json"), "{head}");
                kept.lock().unwrap().push(serde_json::from_slice(&body).unwrap());
                let answer = answers.get(n).or(answers.last()).copied().unwrap_or(Answer::Ok);
                let mut stream = stream;
                match answer {
                    Answer::Ok => {
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
                    }
                    Answer::Fail => {
                        let _ = stream.write_all(b"HTTP/1.1 503 Busy\r\ncontent-length: 4\r\n\r\nbusy");
                    }
                    Answer::Hang => held.push(stream),
                }
            }
        });
        Hook { port, bodies }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook/SECRET-PATH-42", self.port)
    }

    fn events(&self) -> Vec<String> {
        self.bodies.lock().unwrap().iter().map(|body| body["event"].as_str().unwrap().to_owned()).collect()
    }
}

/// A command that keeps each notice as `told/N.json` and its environment as `told/N.env`.
fn keeping_command(env: &TestEnv) -> String {
    let told = env.root().join("told");
    std::fs::create_dir_all(&told).unwrap();
    format!("f=$(mktemp -p {}); cat > $f.json; env > $f.env; rm $f", told.display())
}

/// What the command was told: (notice, environment), in the order the events happened.
fn told(env: &TestEnv) -> Vec<(serde_json::Value, String)> {
    let mut told: Vec<(serde_json::Value, String)> = std::fs::read_dir(env.root().join("told"))
        .unwrap()
        .filter_map(|entry| {
            let path = entry.unwrap().path();
            (path.extension()? == "json").then(|| {
                let notice = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                (notice, std::fs::read_to_string(path.with_extension("env")).unwrap())
            })
        })
        .collect();
    told.sort_by(|a, b| a.0["at"].as_str().cmp(&b.0["at"].as_str()));
    told
}

/// Claude's stream: a 429 on the first invocation (which says what the agent printed, hostile),
/// then the work, committed.
fn limited_then_done(env: &TestEnv) -> std::path::PathBuf {
    let limited = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · usage limit reached, try again in 1 seconds \u001b]52;c;cHduZWQ=\u0007 <!channel> sk-notify-agent-secret-77","session_id":"s-1","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;
    let done = r#"{"type":"result","subtype":"success","is_error":false,"result":"done <promise>COMPLETE</promise>","session_id":"s-1","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5}}"#;
    let root = env.root().display().to_string();
    env.script(
        "limited.sh",
        &format!(
            "n=$(cat {root}/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > {root}/count\ncat >/dev/null\n\
             if [ $n = 1 ]; then echo '{limited}'; exit 1; fi\n\
             echo done > done.txt && git add done.txt && git commit -qm done\necho '{done}'\n"
        ),
    )
}

fn cli(agent: &std::path::Path, extra: &str) -> String {
    format!(
        "name = \"told\"\nprompt = \"do the task\"\nredact = [\"AGENT_SECRET\"]\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n[loop]\nmax_iterations = 1\n{extra}",
        agent.display()
    )
}

/// eden with keys in its environment that no notification may carry.
fn eden_with_keys(env: &TestEnv, manifest: &std::path::Path) -> Run {
    let mut command = env.eden_command(&["run", manifest.to_str().unwrap(), "--json"]);
    command
        .env("ANTHROPIC_API_KEY", "sk-ant-notify-model-key-1")
        .env("GITHUB_TOKEN", "ghp_notifyforgetoken00000000000000000")
        .env("AGENT_SECRET", "sk-notify-agent-secret-77");
    Run::from(command.output().unwrap())
}

fn assert_nothing_secret(text: &str) {
    for secret in ["sk-ant-notify-model-key-1", "ghp_notifyforgetoken", "sk-notify-agent-secret-77", "SECRET-PATH-42"] {
        assert!(!text.contains(secret), "{secret} told in:\n{text}");
    }
}

#[test]
fn each_event_is_told_once_to_the_command_and_the_webhook_with_nothing_secret() {
    let env = TestEnv::new();
    let hook = Hook::start(&[Answer::Ok]);
    let agent = limited_then_done(&env);
    let manifest = env.write_manifest(&cli(
        &agent,
        &format!("[notify]\ncommand = \"{}\"\nwebhook = \"${{EDEN_TEST_HOOK}}\"\n", keeping_command(&env)),
    ));
    let mut command = env.eden_command(&["run", manifest.to_str().unwrap(), "--json"]);
    command
        .env("EDEN_TEST_HOOK", hook.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-notify-model-key-1")
        .env("GITHUB_TOKEN", "ghp_notifyforgetoken00000000000000000")
        .env("AGENT_SECRET", "sk-notify-agent-secret-77");
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["merged_into"], "main");

    let told = told(&env);
    let events: Vec<&str> = told.iter().map(|(notice, _)| notice["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["usage_limit_wait", "finished"]);
    assert_eq!(hook.events(), ["usage_limit_wait", "finished"]);
    let (finished, environment) = &told[1];
    assert_eq!(finished["run_id"], record["id"]);
    assert_eq!((finished["merged_into"].as_str(), finished["commits"].as_u64()), (Some("main"), Some(1)));
    assert!(finished["text"].as_str().unwrap().contains("1 commit(s) merged into `main`"), "{finished}");
    assert!(environment.contains("EDEN_EVENT=finished\n"), "{environment}");
    assert!(environment.contains(&format!("EDEN_RUN_ID={}\n", record["id"].as_str().unwrap())), "{environment}");
    assert!(!environment.contains("ANTHROPIC_API_KEY") && !environment.contains("GITHUB_TOKEN"), "{environment}");

    // What the agent printed is neutralized: no escape sequence, no chat markup, no secret.
    let limit = &told[0].0["usage_limit"];
    let said = limit["message"].as_str().unwrap();
    assert!(said.contains("usage limit reached") && said.contains("‹!channel›"), "{said}");
    assert!(!said.contains('\u{1b}') && !said.contains('\u{7}') && !said.contains("<!"), "{said:?}");
    assert_eq!(limit["wait_secs"], 1);
    for (notice, environment) in &told {
        assert_nothing_secret(&notice.to_string());
        assert_nothing_secret(environment);
    }
    for body in hook.bodies.lock().unwrap().iter() {
        assert_nothing_secret(&body.to_string());
    }
    // The webhook's URL is a secret: not in the record, the log or what eden printed.
    assert_nothing_secret(&run.stderr);
    assert_nothing_secret(&run.stdout);
    let log = std::fs::read_to_string(record["log"].as_str().unwrap()).unwrap();
    assert_nothing_secret(&log);
}

#[test]
fn failed_kept_and_budget_are_told_and_on_chooses() {
    let env = TestEnv::new();
    let command = keeping_command(&env);
    // Failed: what the agent printed as it failed is told neutralized.
    let failing = env.script(
        "fail.sh",
        "cat >/dev/null\necho 'boom \u{1b}[31m<!here> @channel sk-notify-agent-secret-77' >&2\nexit 3\n",
    );
    let manifest = env.write_manifest(&cli(&failing, &format!("[notify]\ncommand = \"{command}\"\n")));
    let run = eden_with_keys(&env, &manifest);
    assert_ne!(run.code, 0);
    // Kept: a change to a protected path keeps the work on its branch for a person (exit 10).
    let working = env.script(
        "work.sh",
        "cat >/dev/null\necho w > w.txt && git add w.txt && git commit -qm w\n\
         echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"<promise>COMPLETE</promise>\",\"session_id\":\"s\",\"total_cost_usd\":0.5,\"usage\":{\"input_tokens\":1500,\"output_tokens\":0}}'\n",
    );
    let kept = env.write_manifest(&cli(
        &working,
        &format!("[branch]\nprotect = [\"w.txt\"]\n[notify]\ncommand = \"{command}\"\n"),
    ));
    eden_with_keys(&env, &kept).assert_code(10);
    // Budget: told as such, then as failed; `on` leaves `failed` out.
    let capped = env.write_manifest(&cli(
        &working,
        &format!("[budget]\nmax_tokens = 1000\n[notify]\ncommand = \"{command}\"\non = [\"budget\", \"kept\"]\n"),
    ));
    eden_with_keys(&env, &capped).assert_code(8);

    let told = told(&env);
    let events: Vec<&str> = told.iter().map(|(notice, _)| notice["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["failed", "kept", "budget"]);
    let failed = &told[0].0;
    let error = failed["error"].as_str().unwrap();
    assert!(error.contains("boom") && error.contains("‹!here›"), "{error}");
    assert!(!error.contains('\u{1b}') && !error.contains("@channel"), "{error:?}");
    assert_eq!(failed["exit_reason"], "agent_failed");
    let kept = &told[1].0;
    assert!(kept["preserved_branch"].as_str().unwrap().starts_with("eden/"), "{kept}");
    assert!(kept["text"].as_str().unwrap().contains("needs review: its work is kept on"), "{kept}");
    assert_eq!(kept["exit_reason"], "protected");
    assert_eq!(told[2].0["budget"]["cap"], "max_tokens");
    for (notice, environment) in &told {
        assert_nothing_secret(&notice.to_string());
        assert_nothing_secret(environment);
    }
}

#[test]
fn a_hanging_webhook_delays_the_end_by_its_timeout_at_most_and_is_a_warning() {
    let env = TestEnv::new();
    let hook = Hook::start(&[Answer::Hang]);
    let manifest = format!(
        "name = \"hang\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\nlines = [\"<promise>COMPLETE</promise>\"]\n\
         [notify]\nwebhook = \"{}\"\ntimeout = \"2s\"\n",
        hook.url()
    );
    let started = Instant::now();
    let run = env.run_manifest(&manifest, &[]);
    let took = started.elapsed();
    run.assert_code(0);
    assert_eq!(run.record()["exit_reason"], "completed");
    assert_eq!(hook.events(), ["finished"]);
    assert!(took < Duration::from_secs(2) + Duration::from_secs(8), "the end waited {took:?}");
    assert!(run.stderr.contains("not delivered within 2s"), "{}", run.stderr);
    assert_nothing_secret(&run.stderr);
}

#[test]
fn a_failing_webhook_is_tried_three_times_and_the_user_config_tells_every_run() {
    let env = TestEnv::new();
    let hook = Hook::start(&[Answer::Fail, Answer::Fail, Answer::Ok]);
    let second = Hook::start(&[Answer::Fail]);
    let config = env.home().join(".config/eden");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[notify]\nwebhook = \"{}\"\non = [\"finished\"]\n", second.url()),
    )
    .unwrap();
    let manifest = format!(
        "name = \"retry\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\nlines = [\"<promise>COMPLETE</promise>\"]\n\
         [notify]\nwebhook = \"{}\"\non = [\"finished\", \"failed\"]\n",
        hook.url()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    // Two 503s, then told: three requests of the same notice, and no warning for it.
    assert_eq!(hook.events(), ["finished", "finished", "finished"]);
    let bodies = hook.bodies.lock().unwrap();
    assert_eq!(bodies[0], bodies[2]);
    // The user config's hook failed all three times: a warning naming the config, not the URL.
    assert_eq!(second.events(), ["finished", "finished", "finished"]);
    assert!(run.stderr.contains("config.toml") && run.stderr.contains("503 Busy"), "{}", run.stderr);
    assert!(run.stderr.contains("http://127.0.0.1:"), "{}", run.stderr);
    assert_nothing_secret(&run.stderr);
}

#[test]
fn a_mistake_in_notify_or_the_user_config_is_located_and_changes_nothing() {
    let env = TestEnv::new();
    let bad = env.run_manifest(
        "name = \"bad\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\n[notify]\nwebhook = \"http://hooks.example.com/SECRET-PATH-42\"\n",
        &[],
    );
    bad.assert_code(2);
    let text = bad.error_text();
    assert!(text.contains("plan.toml:6:11") && text.contains("plain http to `hooks.example.com`"), "{text}");
    assert_nothing_secret(&bad.stderr);

    let config = env.home().join(".config/eden");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[notify]\ncommand = \"true\"\non = [\"done\"]\n").unwrap();
    let broken = env.run_manifest("name = \"ok\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\n", &[]);
    broken.assert_code(2);
    let text = broken.error_text();
    assert!(text.contains("config.toml:3:") && text.contains("done"), "{text}");
    env.assert_pristine();
}
