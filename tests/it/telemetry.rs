//! OpenTelemetry traces over OTLP/HTTP, received by an OTLP receiver of the test's own on
//! 127.0.0.1 and decoded with `protoc` and the official protocol definitions (`tests/otlp/`).

use crate::support::{Run, TestEnv};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request as received: its path, its head, its body.
type Request = (String, String, Vec<u8>);

/// An OTLP/HTTP receiver: every request; with `hang`, it reads the request and never answers.
struct Receiver {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Receiver {
    fn start(hang: bool) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let kept = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut data = Vec::new();
                let mut buffer = [0u8; 65536];
                let (head, body) = loop {
                    let Ok(n) = stream.read(&mut buffer) else { break (String::new(), Vec::new()) };
                    if n == 0 {
                        break (String::new(), Vec::new());
                    }
                    data.extend_from_slice(&buffer[..n]);
                    let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
                    let head = String::from_utf8_lossy(&data[..end]).into_owned();
                    let length = head
                        .lines()
                        .find_map(|line| {
                            line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    let mut body = data[end + 4..].to_vec();
                    while body.len() < length {
                        let Ok(n) = stream.read(&mut buffer) else { break };
                        if n == 0 {
                            break;
                        }
                        body.extend_from_slice(&buffer[..n]);
                    }
                    break (head, body);
                };
                let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                kept.lock().unwrap().push((path, head, body));
                if hang {
                    std::thread::sleep(Duration::from_secs(30));
                } else {
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
                }
            }
        });
        Receiver { port, requests }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn bodies(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// One span as `protoc --decode` prints it: name, ids (as protoc escapes them), attributes.
#[derive(Debug, Default)]
struct Span {
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    attributes: Vec<(String, String)>,
    status: String,
}

/// The spans of an `ExportTraceServiceRequest`, decoded with the official definitions.
fn decode(body: &[u8]) -> (String, Vec<Span>) {
    let text =
        decode_as(body, "collector/trace/v1/trace_service.proto", "collector.trace.v1.ExportTraceServiceRequest");
    let mut spans = Vec::new();
    let mut current: Option<Span> = None;
    let mut key = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        let value = |prefix: &str| trimmed.strip_prefix(prefix).map(|v| v.trim_matches('"').to_owned());
        if line == "    spans {" {
            current = Some(Span::default());
        } else if line == "    }" {
            spans.extend(current.take());
        } else if let Some(span) = &mut current {
            if line.starts_with("      name: ") {
                span.name = value("name: ").unwrap();
            } else if let Some(v) = value("trace_id: ") {
                span.trace_id = v;
            } else if let Some(v) = value("span_id: ").filter(|_| line.starts_with("      span_id")) {
                span.span_id = v;
            } else if let Some(v) = value("parent_span_id: ") {
                span.parent = v;
            } else if let Some(v) = value("key: ") {
                key = v;
            } else if let Some(v) =
                value("string_value: ").or_else(|| value("int_value: ")).or_else(|| value("double_value: "))
            {
                span.attributes.push((key.clone(), v));
            } else if let Some(v) = value("code: ") {
                span.status = v;
            }
        }
    }
    (text, spans)
}

impl Span {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn find<'s>(spans: &'s [Span], name: &str) -> &'s Span {
    spans.iter().find(|span| span.name == name).unwrap_or_else(|| panic!("no span `{name}` in {spans:#?}"))
}

/// A `cli` agent that writes the `TRACEPARENT` it got and commits it, and a check.
const MANIFEST: &str = "name = \"traced\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
    args = [\"-c\", \"cat >/dev/null; echo \\\"$TRACEPARENT\\\" > traceparent.txt; git add traceparent.txt; git -c user.name=a -c user.email=a@b commit -qm traced; echo '<promise>COMPLETE</promise>'\"]\n\
    [loop]\nmax_iterations = 1\n[[check]]\nname = \"present\"\ncmd = \"test -s traceparent.txt\"\n";

fn run_with(env: &TestEnv, vars: &[(&str, String)]) -> Run {
    let path = env.write_manifest(MANIFEST);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env_remove("TRACEPARENT");
    for (key, value) in vars {
        command.env(key, value);
    }
    Run::from(command.output().unwrap())
}

#[test]
fn a_run_is_a_trace_whose_parent_is_the_callers() {
    let receiver = Receiver::start(false);
    let env = TestEnv::new();
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let run = run_with(
        &env,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret%21".into()),
            ("OTEL_SERVICE_NAME", "ci-agents".into()),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci".into()),
            ("TRACEPARENT", caller.into()),
        ],
    );
    run.assert_code(0);
    let requests = receiver.bodies();
    let paths: Vec<&str> = requests.iter().map(|(path, _, _)| path.as_str()).collect();
    assert_eq!(paths, ["/v1/traces", "/v1/metrics"], "one request of each per run");
    let (_, head, body) = &requests[0];
    assert!(head.contains("x-api-key: s3cret!") && head.contains("application/x-protobuf"), "{head}");
    let (text, spans) = decode(body);
    assert!(text.contains("string_value: \"ci-agents\"") && text.contains("deployment.environment"), "{text}");
    let root = find(&spans, "eden.run");
    let iteration = find(&spans, "eden.iteration 1");
    let check = find(&spans, "eden.check present");
    // The caller's trace and span: the run's span is its child.
    assert_eq!(root.trace_id, r#"K\371/5w\263M\246\243\316\222\235\016\016G6"#);
    assert_eq!(root.parent, r#"\000\360g\252\013\251\002\267"#);
    assert!(spans.iter().all(|span| span.trace_id == root.trace_id), "one trace");
    assert_eq!(iteration.parent, root.span_id);
    assert_eq!(check.parent, root.span_id);
    assert_eq!(find(&spans, "eden.merge").parent, root.span_id);
    let record = run.json();
    assert_eq!(root.attribute("eden.run.id"), record["id"].as_str());
    assert_eq!(root.attribute("eden.branch"), record["branch"].as_str());
    assert_eq!(root.attribute("eden.sandbox.kind"), Some("none"));
    assert_eq!(root.attribute("eden.exit_reason"), Some("completed"));
    assert_eq!(iteration.attribute("eden.outcome"), Some("completed"));
    assert_eq!(check.attribute("eden.outcome"), Some("ok"));
    assert_eq!(root.status, "STATUS_CODE_OK");
    // The agent got the iteration's span as its parent.
    let given = std::fs::read_to_string(env.repo.join("traceparent.txt")).unwrap();
    let parts: Vec<&str> = given.trim().split('-').collect();
    assert_eq!(parts[1], "4bf92f3577b34da6a3ce929d0e0e4736", "{given}");
    let escaped: String =
        (0..8).map(|i| u8::from_str_radix(&parts[2][2 * i..2 * i + 2], 16).unwrap()).map(escape).collect();
    assert_eq!(escaped, iteration.span_id, "the agent's parent is its iteration");
    // The metrics: a run, its iterations, its duration.
    let metrics = decode_as(
        &requests[1].2,
        "collector/metrics/v1/metrics_service.proto",
        "collector.metrics.v1.ExportMetricsServiceRequest",
    );
    for expected in [
        "name: \"eden.runs\"",
        "as_int: 1",
        "name: \"eden.iterations\"",
        "name: \"eden.run.duration\"",
        "AGGREGATION_TEMPORALITY_DELTA",
        "is_monotonic: true",
        "string_value: \"ci-agents\"",
    ] {
        assert!(metrics.contains(expected), "{expected} in {metrics}");
    }
}

/// `protoc --decode` of `body` as `message` (under `opentelemetry.proto.`) of `file` (under
/// `opentelemetry/proto/`).
fn decode_as(body: &[u8], file: &str, message: &str) -> String {
    let otlp = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp");
    let mut child = std::process::Command::new("protoc")
        .arg(format!("--decode=opentelemetry.proto.{message}"))
        .arg("-I")
        .arg(&otlp)
        .arg(format!("opentelemetry/proto/{file}"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("protoc (apt-get install protobuf-compiler)");
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "protoc could not decode it: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// protoc's escaping of one byte of a `bytes` field.
fn escape(byte: u8) -> String {
    match byte {
        b'"' => "\\\"".into(),
        b'\'' => "\\'".into(),
        b'\\' => "\\\\".into(),
        b'\n' => "\\n".into(),
        b'\r' => "\\r".into(),
        b'\t' => "\\t".into(),
        0x20..=0x7e => (byte as char).to_string(),
        _ => format!("\\{byte:03o}"),
    }
}

#[test]
fn json_when_asked_and_nothing_without_an_endpoint() {
    let receiver = Receiver::start(false);
    let env = TestEnv::new();
    let run = run_with(
        &env,
        &[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", format!("{}/custom/traces", receiver.endpoint())),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".into()),
        ],
    );
    run.assert_code(0);
    let requests = receiver.bodies();
    let (path, head, body) = &requests[0];
    assert_eq!(path, "/custom/traces");
    assert!(head.contains("application/json"), "{head}");
    let json: serde_json::Value = serde_json::from_slice(body).unwrap();
    let spans = &json["resourceSpans"][0]["scopeSpans"][0]["spans"];
    let root = spans.as_array().unwrap().iter().find(|span| span["name"] == "eden.run").unwrap();
    assert_eq!(root["traceId"].as_str().unwrap().len(), 32);
    assert!(root.get("parentSpanId").is_none(), "no caller: a root span");
    assert!(root["startTimeUnixNano"].is_string());
    // No endpoint: nothing sent.
    let quiet = Receiver::start(false);
    let env = TestEnv::new();
    run_with(&env, &[]).assert_code(0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(quiet.bodies().is_empty());
}

/// A receiver that is down, or that hangs: the run's result is the same, its end at most the
/// export's wait later, and a warning says so.
/// `eden interactive` builds the agent's command where a run does: its agent joins the trace
/// too (an interactive session's agent once went without `TRACEPARENT`).
#[test]
fn an_interactive_sessions_agent_joins_the_trace() {
    let receiver = Receiver::start(false);
    let env = TestEnv::new();
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let path = env.write_manifest(
        "name = \"i\"\nprompt = \"\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"echo \\\"$TRACEPARENT\\\" > traceparent.txt\"]\n",
    );
    let mut command = env.eden_command(&["interactive", path.to_str().unwrap(), "--no-tty", "--json"]);
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()).env("TRACEPARENT", caller);
    let run = Run::from(command.stdin(std::process::Stdio::null()).output().unwrap());
    run.assert_code(0);
    let worktree = run.record()["worktree"].as_str().map(std::path::PathBuf::from).unwrap();
    let given = std::fs::read_to_string(worktree.join("traceparent.txt"))
        .or_else(|_| std::fs::read_to_string(env.repo.join("traceparent.txt")))
        .unwrap();
    let parts: Vec<&str> = given.trim().split('-').collect();
    assert_eq!(parts.len(), 4, "{given:?}");
    assert_eq!(parts[1], "4bf92f3577b34da6a3ce929d0e0e4736", "{given}");
    let (_, _, body) = &receiver.bodies()[0];
    let (_, spans) = decode(body);
    let escaped: String =
        (0..8).map(|i| u8::from_str_radix(&parts[2][2 * i..2 * i + 2], 16).unwrap()).map(escape).collect();
    assert!(spans.iter().any(|span| span.span_id == escaped), "its parent is a span of the run: {spans:#?}");
}

#[test]
fn a_receiver_down_or_hanging_changes_nothing() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let hanging = Receiver::start(true);
    for endpoint in [format!("http://127.0.0.1:{closed}"), hanging.endpoint()] {
        let env = TestEnv::new();
        let started = Instant::now();
        let run = run_with(&env, &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone())]);
        let wall = started.elapsed();
        run.assert_code(0);
        assert!(run.stderr.contains("warning: the run's telemetry was not exported"), "{}", run.stderr);
        let record = run.json();
        let recorded = Duration::from_millis(record["duration_ms"].as_u64().unwrap());
        // The loose bound is the machine's; eden's own wait is at most 0.8 s.
        assert!(wall.saturating_sub(recorded) < Duration::from_secs(3), "{endpoint}: {wall:?} vs {recorded:?}");
    }
}

/// The real Claude Code: its tool calls are spans of its iteration, with the GenAI usage.
#[test]
fn claude_codes_tool_calls_and_usage_are_spans() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    let receiver = Receiver::start(false);
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let manifest = env.write_manifest(
        "name = \"real\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
    );
    let mut command = env.eden_command(&["run", manifest.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    command.env_remove("TRACEPARENT").env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let requests = receiver.bodies();
    let (_, spans) = decode(&requests[0].2);
    let metrics = decode_as(
        &requests[1].2,
        "collector/metrics/v1/metrics_service.proto",
        "collector.metrics.v1.ExportMetricsServiceRequest",
    );
    assert!(metrics.contains("name: \"eden.tokens\"") && metrics.contains("string_value: \"input\""), "{metrics}");
    let iteration = find(&spans, "eden.iteration 1");
    let tools: Vec<&Span> = spans.iter().filter(|span| span.name.starts_with("eden.tool ")).collect();
    assert!(!tools.is_empty(), "{spans:#?}");
    assert!(tools.iter().all(|tool| tool.parent == iteration.span_id && tool.attribute("gen_ai.tool.name").is_some()));
    let input = iteration.attribute("gen_ai.usage.input_tokens").unwrap().parse::<u64>().unwrap();
    assert!(input > 0, "{iteration:#?}");
    assert_eq!(iteration.attribute("gen_ai.conversation.id"), run.json()["session_id"].as_str());
    assert!(find(&spans, "eden.run").attribute("gen_ai.usage.output_tokens").is_some());
}

/// In a sandbox, bringing each iteration's work back is a span of its iteration; the push is one
/// of the run's.
#[test]
fn work_back_and_the_push_are_spans() {
    if !crate::isolated::bwrap() {
        return;
    }
    let receiver = Receiver::start(false);
    let env = TestEnv::new();
    let origin = env.root().join("origin.git");
    env.git(&["init", "-q", "--bare", origin.to_str().unwrap()]);
    env.git(&["remote", "add", "origin", origin.to_str().unwrap()]);
    env.git(&["push", "-q", "origin", "main"]);
    let manifest = MANIFEST.replace("[loop]", "[sandbox]\nkind = \"isolated\"\n[branch]\npush = \"origin\"\n[loop]");
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command
        .env_remove("TRACEPARENT")
        .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", format!("{}/v1/traces", receiver.endpoint()));
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let (_, spans) = decode(&receiver.bodies()[0].2);
    let root = find(&spans, "eden.run");
    let iteration = find(&spans, "eden.iteration 1");
    let back = find(&spans, "eden.work_back");
    assert_eq!(back.parent, iteration.span_id);
    let push = find(&spans, "eden.push");
    assert_eq!(push.parent, root.span_id);
    assert_eq!(push.attribute("eden.push.remote"), Some("origin"));
    assert_eq!(push.status, "STATUS_CODE_OK");
}

/// What reaches a collector is what the log holds: an agent's tool named with a `.eden/.env`
/// token and terminal escapes is a span whose name has neither; an endpoint's `user:password@`
/// goes as basic authentication, and is in no warning, no `--dry-run` and no request line.
#[test]
fn span_names_and_the_endpoint_keep_secrets() {
    let receiver = Receiver::start(false);
    let env = TestEnv::new();
    let token = "tok-4417-from-dotenv";
    env.write(".eden/.env", &format!("DEPLOY_TOKEN={token}\n"));
    let tool = format!(
        r#"{{"type":"assistant","message":{{"id":"m1","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"Bash {token} \u001b]0;owned\u0007\u001b[2J","input":{{}}}}]}},"session_id":"s-1"}}"#
    );
    let agent = env.script(
        "agent.sh",
        &format!("cat >/dev/null\necho '{tool}'\necho '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"<promise>COMPLETE</promise>\",\"session_id\":\"s-1\"}}'\n"),
    );
    let manifest = format!(
        "name = \"traced\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n[loop]\nmax_iterations = 1\n",
        agent.display()
    );
    let path = env.write_manifest(&manifest);
    let endpoint = receiver.endpoint().replace("http://", "http://me:pa%24%24word@");
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint).env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let requests = receiver.bodies();
    let (request_path, head, body) = &requests[0];
    assert_eq!(request_path, "/v1/traces");
    assert!(head.contains(&format!("Authorization: Basic {}", "bWU6cGEkJHdvcmQ=")), "{head}");
    let body = String::from_utf8_lossy(body);
    assert!(!body.contains(token), "the token reached the collector: {body}");
    assert!(!body.contains('\u{1b}') && !body.contains("\\u001b"), "a raw escape reached the collector: {body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let spans = json["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().unwrap().clone();
    let named = spans.iter().find(|span| span["name"].as_str().unwrap().starts_with("eden.tool ")).unwrap();
    assert!(named["name"].as_str().unwrap().contains("***"), "{named}");
    // The password is nowhere eden writes.
    let dry = {
        let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--dry-run"]);
        command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
        Run::from(command.output().unwrap())
    };
    assert!(dry.stdout.contains(&receiver.endpoint()), "{}", dry.stdout);
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut command = env.eden_command(&["run", path.to_str().unwrap()]);
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://me:pa%24%24word@127.0.0.1:{closed}"));
    let down = Run::from(command.output().unwrap());
    assert!(down.stderr.contains("telemetry was not exported"), "{}", down.stderr);
    for text in [&run.stdout, &run.stderr, &dry.stdout, &dry.stderr, &down.stderr] {
        assert!(!text.contains("pa%24%24word") && !text.contains("pa$$word"), "{text}");
    }
}
