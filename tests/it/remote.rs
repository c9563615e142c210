//! Runs on remote docker and podman engines (`sandbox.host`, `--host`, the clients' own
//! conventions), against the real engines of `remote_engines`, which see none of this
//! machine's files.

use crate::containers::IMAGE;
use crate::remote_engines::{engines, RemoteEngines, RemoteHost};
use crate::support::{Run, TestEnv};

/// `containers::manifest` with the engine's bridge as it is (the default network's rules and
/// their self-test are `network_rules_hold_on_a_remote_engine`'s, and cost each run a helper).
fn manifest(engine: &str, script: &str, extra: &str) -> String {
    match extra.contains("network =") {
        true => crate::containers::manifest(engine, script, extra),
        false => crate::containers::manifest(engine, script, &format!("network = \"bridge\"\n{extra}")),
    }
}

const COMMIT_AND_LEAVE: &str = "cat README.md > copy.txt && git add copy.txt && git -c user.name=far -c user.email=far@example.com commit -qm 'made far away' && echo left > loose.txt && echo '<promise>COMPLETE</promise>'";

fn run_on(env: &TestEnv, engines: &RemoteEngines, manifest: &str, args: &[&str], vars: &[(String, String)]) -> Run {
    let path = env.write_manifest(manifest);
    let mut all = vec!["run", path.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let mut command = env.eden_command(&all);
    command.envs(engines.tls_env()).envs(vars.iter().cloned());
    Run::from(command.output().unwrap())
}

fn assert_far_work_landed(env: &TestEnv, run: &Run, host: &RemoteHost, engines: &RemoteEngines) {
    // The commit came back as checked objects and merged; the file it made holds what the
    // worktree held (so the repository really was seeded over the channel).
    assert_eq!(env.log_subjects("main")[0], "made far away", "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(env.repo.join("copy.txt")).unwrap(), "# test repo\n");
    // The uncommitted file came back as a patch, applied in the kept worktree.
    let record = run.json();
    let kept = record["preserved_worktree"].as_str().unwrap_or_else(|| panic!("{}", run.stderr));
    assert_eq!(std::fs::read_to_string(std::path::Path::new(kept).join("loose.txt")).unwrap(), "left\n");
    assert!(host.containers(engines, &env.repo).is_empty(), "nothing left on {}", host.name);
}

#[test]
fn a_run_on_a_tls_host_brings_its_work_back() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let env = TestEnv::new();
    let run = run_on(&env, engines, &manifest("docker", COMMIT_AND_LEAVE, ""), &["--host", &host.docker], &[]);
    run.assert_code(1);
    assert_far_work_landed(&env, &run, host, engines);
    let record = run.json();
    assert_eq!(record["container"]["host"], host.docker.as_str());
    assert!(run.stderr.contains(&format!("started on {}", host.docker)), "{}", run.stderr);
}

#[test]
fn docker_host_and_a_context_are_honoured() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[1];
    // DOCKER_HOST, as the docker client itself reads it.
    let env = TestEnv::new();
    let vars = [
        ("DOCKER_HOST".to_owned(), host.docker.clone()),
        ("DOCKER_TLS_VERIFY".to_owned(), String::new()),
        ("DOCKER_CERT_PATH".to_owned(), String::new()),
    ];
    let run = run_on(&env, engines, &manifest("docker", COMMIT_AND_LEAVE, ""), &[], &vars);
    run.assert_code(1);
    assert_far_work_landed(&env, &run, host, engines);
    assert_eq!(run.json()["container"]["host"], host.docker.as_str(), "the address the client resolved");
    // A docker context, named in the manifest.
    let env = TestEnv::new();
    let config = env.root().join("docker-config");
    let made = std::process::Command::new("docker")
        .env("DOCKER_CONFIG", &config)
        .args(["context", "create", "far", "--docker", &format!("host={}", host.docker)])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let vars = [
        ("DOCKER_CONFIG".to_owned(), config.display().to_string()),
        ("DOCKER_TLS_VERIFY".to_owned(), String::new()),
        ("DOCKER_CERT_PATH".to_owned(), String::new()),
    ];
    let run = run_on(&env, engines, &manifest("docker", COMMIT_AND_LEAVE, "host = \"far\""), &[], &vars);
    run.assert_code(1);
    assert_far_work_landed(&env, &run, host, engines);
    assert_eq!(run.json()["container"]["host"], "far");
}

#[test]
fn podman_remote_brings_its_work_back() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let url = host.podman.as_deref().unwrap();
    // `--host`, then podman's own CONTAINER_HOST.
    for (args, vars) in [(vec!["--host", url], vec![]), (vec![], vec![("CONTAINER_HOST".to_owned(), url.to_owned())])] {
        let env = TestEnv::new();
        let run = run_on(&env, engines, &manifest("podman", COMMIT_AND_LEAVE, ""), &args, &vars);
        run.assert_code(1);
        assert_eq!(env.log_subjects("main")[0], "made far away", "{}", run.stderr);
        let record = run.json();
        assert_eq!(record["container"]["host"], url);
        let kept = record["preserved_worktree"].as_str().unwrap().to_owned();
        assert_eq!(std::fs::read_to_string(std::path::Path::new(&kept).join("loose.txt")).unwrap(), "left\n");
        let listed = std::process::Command::new("podman")
            .args(["--remote", "--url", url, "ps", "-a", "--filter", "label=eden.run", "--format", "{{.Labels}}"])
            .output()
            .unwrap();
        let repo = std::fs::canonicalize(&env.repo).unwrap();
        assert!(
            !String::from_utf8_lossy(&listed.stdout).contains(&repo.display().to_string()),
            "nothing left on podman"
        );
    }
}

#[test]
fn the_simulated_agent_runs_on_a_remote_engine() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let env = TestEnv::new();
    let manifest = format!("name = \"sim\"\nprompt = \"hi\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"docker\"\nimage = \"{IMAGE}\"\nnetwork = \"bridge\"\nhost = \"{}\"\n", host.docker);
    let run = run_on(&env, engines, &manifest, &[], &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("| simulated agent: working"), "eden's executable was copied in: {}", run.stderr);
}

#[test]
fn what_needs_this_machines_files_is_refused_on_a_remote_engine() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let env = TestEnv::new();
    std::fs::create_dir_all(env.root().join("cache")).unwrap();
    for (extra, what) in [
        ("expose_worktree = true", "`sandbox.expose_worktree`"),
        ("mounts = [{ host = \"cache\", sandbox = \"/cache\" }]", "`sandbox.mounts`"),
    ] {
        let run = run_on(&env, engines, &manifest("docker", "true", extra), &["--host", &host.docker], &[]);
        run.assert_code(2);
        assert!(run.stderr.contains(what) && run.stderr.contains("remote engine"), "{}", run.stderr);
        assert!(run.stderr.contains("hint:"), "{}", run.stderr);
        assert!(!env.repo.join(".eden/runs").exists(), "nothing created");
        env.assert_pristine();
    }
    assert!(host.containers(engines, &env.repo).is_empty());
}

#[test]
fn a_missing_image_or_an_unreachable_host_is_a_clear_error() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let env = TestEnv::new();
    let missing = manifest("docker", "true", "").replace(IMAGE, "localhost/not-there:1");
    let run = run_on(&env, engines, &missing, &["--host", &host.docker], &[]);
    run.assert_code(6);
    assert!(run.stderr.contains(&format!("not available to docker at {}", host.docker)), "{}", run.stderr);
    assert!(run.stderr.contains("eden image push --engine docker --host"), "{}", run.stderr);
    // Nobody listens there.
    let run = run_on(&env, engines, &manifest("docker", "true", ""), &["--host", "tcp://10.213.77.99:2376"], &[]);
    run.assert_code(6);
    assert!(run.stderr.contains("cannot reach the engine (docker at tcp://10.213.77.99:2376)"), "{}", run.stderr);
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
    assert!(!env.repo.join(".eden/runs").exists(), "nothing created");
    env.assert_pristine();
}

/// Starts a run on `host` whose agent commits, leaves a file and prints `ready`, then sleeps;
/// returns eden once `ready` is on its stderr, with the rest of its stderr still to read.
struct Started {
    child: std::process::Child,
    stderr: std::sync::mpsc::Receiver<String>,
    seen: String,
}

const COMMIT_THEN_WAIT: &str = "echo c > c.txt && git add c.txt && git -c user.name=far -c user.email=far@example.com commit -qm 'far and killed' && echo half > half.txt && echo ready; sleep 300";

fn start_waiting(env: &TestEnv, engines: &RemoteEngines, host: &RemoteHost) -> Started {
    use std::io::BufRead;
    let path = env.write_manifest(
        &manifest("docker", COMMIT_THEN_WAIT, "").replace("idle_timeout = \"60s\"", "idle_timeout = \"10m\""),
    );
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json", "--host", &host.docker]);
    command.envs(engines.tls_env()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let (sender, stderr) = std::sync::mpsc::channel();
    let pipe = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while !seen.contains("| ready") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match stderr.recv_timeout(left) {
            Ok(line) => seen.push_str(&format!("{line}\n")),
            Err(_) => panic!("the agent never got ready:\n{seen}"),
        }
    }
    Started { child, stderr, seen }
}

impl Started {
    fn finish(self) -> Run {
        let output = self.child.wait_with_output().unwrap();
        let rest: String = self.stderr.try_iter().map(|line| format!("{line}\n")).collect();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: self.seen + &rest,
        }
    }
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn ctrl_c_stops_the_remote_run_and_brings_its_work_back() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let env = TestEnv::new();
    let started = start_waiting(&env, engines, host);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(started.child.id() as i32), nix::sys::signal::Signal::SIGINT)
        .unwrap();
    let run = started.finish();
    run.assert_code(130);
    assert!(host.containers(engines, &env.repo).is_empty(), "nothing left on {}", host.name);
    let record = run.json();
    let worktree = record["preserved_worktree"].as_str().expect("the dirty worktree is kept");
    assert_eq!(std::fs::read_to_string(format!("{worktree}/half.txt")).unwrap(), "half\n");
    assert_eq!(env.log_subjects(record["branch"].as_str().unwrap())[0], "far and killed");
}

#[test]
fn a_killed_eden_leaves_nothing_on_the_remote_engine() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    // eden is killed: its guard saves what the container held and removes it, on that engine.
    let env = TestEnv::new();
    let mut started = start_waiting(&env, engines, host);
    started.child.kill().unwrap();
    let _ = started.child.wait();
    wait_until("the guard removes the remote container", || host.containers(engines, &env.repo).is_empty());
    let patches = env.repo.join(".eden/patches");
    wait_until("the guard saves the work", || {
        std::fs::read_dir(&patches)
            .is_ok_and(|dir| dir.flatten().any(|e| e.file_name().to_string_lossy().ends_with(".salvaged.patch")))
    });
    // eden and its guard both die: `eden clean` finds the container on the engine the record
    // names, saves what it holds, and removes it.
    let env = TestEnv::new();
    let mut started = start_waiting(&env, engines, host);
    let record = || -> serde_json::Value {
        let runs = env.repo.join(".eden/runs");
        let path = std::fs::read_dir(&runs).unwrap().flatten().next().unwrap().path();
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let container = record()["container"]["name"].as_str().unwrap().to_owned();
    assert_eq!(record()["container"]["host"], host.docker.as_str());
    let guard =
        std::process::Command::new("pkill").args(["-9", "-f", &format!("__eden-guard .* {container}$")]).status();
    assert!(guard.unwrap().success(), "the guard was running");
    started.child.kill().unwrap();
    let _ = started.child.wait();
    assert_eq!(host.containers(engines, &env.repo), [container.as_str()], "left behind");
    let mut clean = env.eden_command(&["clean", "--json"]);
    let clean = Run::from(clean.envs(engines.tls_env()).output().unwrap());
    clean.assert_code(0);
    assert!(clean.stdout.contains(&format!("{container} (docker at {})", host.docker)), "{}", clean.stdout);
    assert!(host.containers(engines, &env.repo).is_empty(), "removed by eden clean");
    let id = record()["id"].as_str().unwrap().to_owned();
    let patch = std::fs::read_to_string(env.repo.join(format!(".eden/patches/{id}.salvaged.patch"))).unwrap();
    assert!(patch.contains("b/half.txt"), "{patch}");
}

/// A docker context per test host (the first with its TLS material), in a config folder of the
/// test's own: how people name several engines.
fn contexts(env: &TestEnv, engines: &RemoteEngines) -> std::path::PathBuf {
    let config = env.root().join("docker-config");
    for host in &engines.hosts {
        let mut endpoint = format!("host={}", host.docker);
        if host.tls {
            let certs = engines.tls_env()[1].1.clone();
            endpoint.push_str(&format!(",ca={certs}/ca.pem,cert={certs}/cert.pem,key={certs}/key.pem"));
        }
        let made = std::process::Command::new("docker")
            .env("DOCKER_CONFIG", &config)
            .args(["context", "create", &host.name, "--docker", &endpoint])
            .output()
            .unwrap();
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    }
    config
}

#[test]
fn several_runs_are_spread_over_several_hosts() {
    let Some(engines) = engines() else { return };
    let env = TestEnv::new();
    let config = contexts(&env, engines);
    let names: Vec<String> = engines.hosts.iter().map(|host| format!("\"{}\"", host.name)).collect();
    let mut paths = Vec::new();
    for n in 0..4 {
        let script = format!("echo {n} > run-{n}.txt && git add run-{n}.txt && git -c user.name=far -c user.email=far@example.com commit -qm 'run {n}' && sleep 2 && echo '<promise>COMPLETE</promise>'");
        let manifest = manifest("docker", &script, &format!("host = [{}]", names.join(", ")))
            .replace("name = \"box\"", &format!("name = \"far-{n}\""));
        let path = env.root().join(format!("far-{n}.toml"));
        std::fs::write(&path, manifest).unwrap();
        paths.push(path.display().to_string());
    }
    let mut args = vec!["run"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--jobs", "4", "--json"]);
    let mut command = env.eden_command(&args);
    command.env("DOCKER_CONFIG", &config).env_remove("DOCKER_HOST");
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let records = run.json();
    let placed: Vec<&str> =
        records.as_array().unwrap().iter().map(|record| record["container"]["host"].as_str().unwrap()).collect();
    assert_eq!(placed, ["h1", "h2", "h1", "h2"], "each on the host with the fewest of the invocation's runs");
    let mut subjects: Vec<String> =
        env.git(&["log", "--no-merges", "--format=%s", "main"]).lines().map(str::to_owned).collect();
    subjects.truncate(4);
    subjects.sort();
    assert_eq!(subjects, ["run 0", "run 1", "run 2", "run 3"], "every run merged, one after the other");
    for host in &engines.hosts {
        assert!(host.containers(engines, &env.repo).is_empty());
    }
    // The table and the sessions list show where each ran.
    assert!(run.stderr.contains("HOST"), "{}", run.stderr);
    let listed = env.eden(&["sessions", "list"]);
    assert!(listed.stdout.contains("HOST") && listed.stdout.contains(" h2 "), "{}", listed.stdout);
    // With `--jobs-per-host 1`, two runs over two hosts go at once, the other two after them.
    let env = TestEnv::new();
    let config = contexts(&env, engines);
    let mut command = env.eden_command(
        &[
            &["run"],
            &paths.iter().map(String::as_str).collect::<Vec<_>>()[..],
            &["--jobs", "4", "--jobs-per-host", "1", "--json"],
        ]
        .concat(),
    );
    command.env("DOCKER_CONFIG", &config).env_remove("DOCKER_HOST");
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let records = run.json();
    let records = records.as_array().unwrap();
    for host in ["h1", "h2"] {
        let mut spans: Vec<(String, String)> = records
            .iter()
            .filter(|record| record["container"]["host"] == host)
            .map(|record| {
                (record["started_at"].as_str().unwrap().to_owned(), record["finished_at"].as_str().unwrap().to_owned())
            })
            .collect();
        spans.sort();
        assert_eq!(spans.len(), 2, "{host}");
        assert!(spans[0].1 <= spans[1].0, "one at a time on {host}: {spans:?}");
    }
}

#[test]
fn images_are_built_on_and_copied_to_a_remote_engine() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[1];
    let env = TestEnv::new();
    let plain = [("DOCKER_TLS_VERIFY", ""), ("DOCKER_CERT_PATH", "")];
    // Built there: the build runs on that engine (the context streamed to it).
    let tag = format!("localhost/eden-remote-build:{}", std::process::id());
    std::fs::write(
        env.root().join("Dockerfile.far"),
        format!("FROM {IMAGE}\nARG UID\nARG GID\nARG AGENT_PACKAGE\nRUN echo built-there > /built\n"),
    )
    .unwrap();
    let file = env.root().join("Dockerfile.far");
    let mut build = env.eden_command(&[
        "image",
        "build",
        "--host",
        &host.docker,
        "--agent",
        "none",
        "--tag",
        &tag,
        "--file",
        file.to_str().unwrap(),
    ]);
    let built = Run::from(build.envs(plain).output().unwrap());
    built.assert_code(0);
    let inspect =
        |image: &str| host.docker_command(engines).args(["image", "inspect", image]).output().unwrap().status.success();
    assert!(inspect(&tag), "on the remote engine: {}", built.stderr);
    let local = std::process::Command::new("docker").args(["image", "inspect", &tag]).output().unwrap();
    assert!(!local.status.success(), "not on the local one");
    // Copied there: a local image, then a run that uses it.
    let copied = format!("localhost/eden-remote-copy:{}", std::process::id());
    assert!(std::process::Command::new("docker").args(["tag", IMAGE, &copied]).status().unwrap().success());
    let mut push = env.eden_command(&["image", "push", &copied, "--host", &host.docker]);
    let pushed = Run::from(push.envs(plain).output().unwrap());
    pushed.assert_code(0);
    assert!(inspect(&copied), "{}", pushed.stderr);
    let vars: Vec<(String, String)> = plain.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let run = run_on(
        &env,
        engines,
        &manifest("docker", COMMIT_AND_LEAVE, "").replace(IMAGE, &copied),
        &["--host", &host.docker],
        &vars,
    );
    run.assert_code(1);
    assert_far_work_landed(&env, &run, host, engines);
    let _ = std::process::Command::new("docker").args(["rmi", &copied]).output();
    let _ = host.docker_command(engines).args(["rmi", &copied, &tag]).output();
    // Nothing to push is a clear error.
    let mut push = env.eden_command(&["image", "push", "localhost/none-such:1", "--host", &host.docker]);
    let missing = Run::from(push.envs(plain).output().unwrap());
    missing.assert_code(6);
    assert!(
        missing.stderr.contains("is not available to the local docker") && missing.stderr.contains("hint:"),
        "{}",
        missing.stderr
    );
}

/// The key the remote Claude Code is given, which eden's proxy holds.
const KEY: &str = "sk-ant-far-4711-real-key";

/// The test image with Claude Code's native executable in it, and a spy in front of it
/// (`/opt/spy`, see `SPIED`), built on `host`'s engine (the files sent as the build context): on
/// another machine nothing can be mounted in.
fn claude_image(
    engines: &RemoteEngines,
    host: &RemoteHost,
    claude: &std::path::Path,
    scratch: &std::path::Path,
) -> String {
    let tag = "localhost/eden-test:claude".to_owned();
    let context = scratch.join("claude-context");
    std::fs::create_dir_all(&context).unwrap();
    std::fs::copy(claude, context.join("claude")).unwrap();
    let spy = crate::held_keys::committing_spy("/opt/claude", KEY);
    std::fs::write(context.join("spy"), spy).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        format!("FROM {IMAGE}\nCOPY claude /opt/claude\nCOPY spy /opt/spy\nRUN chmod 755 /opt/spy\n"),
    )
    .unwrap();
    let built = host
        .docker_command(engines)
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "-q", "-t", &tag])
        .arg(&context)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    tag
}

/// The real Claude Code, in a container on a remote engine over TLS and over ssh, against the
/// scripted model server on this machine: it commits, the commit is merged here, and its
/// transcript (written in the container's private state folder) is copied back and captured.
/// Its key is held: the server receives the real key through eden's proxy here, reached
/// through the engine's exec channel (`proxy::tunnel`), while every process and file in the
/// container holds only the placeholder.
#[test]
fn claude_code_works_on_a_remote_engine() {
    let Some(claude) = crate::real_agents::require("claude") else { return };
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let scratch = TestEnv::new();
    let image = claude_image(engines, host, &std::fs::canonicalize(claude).unwrap(), scratch.root());
    // Over TLS, then over ssh (the same engine: the sshd's sessions reach it).
    for address in [host.docker.clone(), host.ssh.clone().unwrap()] {
        let env = TestEnv::new();
        let server = crate::model_server::ModelServer::start_on(
            &engines.local_address(),
            std::fs::canonicalize(&env.repo).unwrap(),
            false,
            None,
        );
        let manifest = format!(
            "name = \"far\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n\
             binary = \"/opt/spy\"\nenv = {{ ANTHROPIC_BASE_URL = \"${{ANTHROPIC_BASE_URL}}\", ANTHROPIC_API_KEY = \"{KEY}\", \
             DISABLE_TELEMETRY = \"1\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", CLAUDE_CODE_MAX_RETRIES = \"0\" }}\n\
             [sandbox]\nkind = \"docker\"\nimage = \"{image}\"\nnetwork = \"bridge\"\nhost = \"{address}\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n"
        );
        let mut vars = crate::real_agents::claude_env(&env, &server);
        if address.starts_with("ssh://") {
            vars.push(("PATH".into(), engines.ssh_config(env.root())));
            vars.push(("DOCKER_TLS_VERIFY".into(), String::new()));
            vars.push(("DOCKER_CERT_PATH".into(), String::new()));
        }
        let run = run_on(&env, engines, &manifest, &[], &vars);
        run.assert_code(0);
        let record = run.json();
        assert_eq!(record["merged_into"], "main", "{address}: {}", run.stderr);
        assert!(env.repo.join("hello.txt").exists(), "the agent's commit, merged here");
        crate::real_agents::assert_transcript(&env, &record, 0);
        let source = record["iterations"][0]["transcript"]["source"].as_str().unwrap();
        let private = std::fs::canonicalize(&env.repo).unwrap().join(".eden/agent-state");
        assert!(source.starts_with(&private.display().to_string()), "copied back into the private folder: {source}");
        assert!(!env.root().join("claude/projects").exists(), "nothing written to the person's folder");
        assert!(host.containers(engines, &env.repo).is_empty());
        // Held: the real key reached the server, and only there.
        let keys = server.stats.keys.lock().unwrap().clone();
        assert!(!keys.is_empty() && keys.iter().all(|key| key == KEY), "{address}: the server got {keys:?}");
        assert_eq!(record["held_keys"][0]["var"], "ANTHROPIC_API_KEY", "{record:#}");
        crate::held_keys::assert_spied(&env, &run, KEY);
        assert!(!run.stderr.contains("not held"), "{}", run.stderr);
    }
}

/// Over ssh, as `DOCKER_HOST=ssh://root@build1` people use: the docker client's own ssh
/// transport, with the person's ssh configuration (here the test's `HOME`).
#[test]
fn a_run_over_ssh_brings_its_work_back() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let ssh = host.ssh.as_deref().unwrap();
    let env = TestEnv::new();
    let path = engines.ssh_config(env.root());
    let vars = [
        ("DOCKER_TLS_VERIFY".to_owned(), String::new()),
        ("DOCKER_CERT_PATH".to_owned(), String::new()),
        ("PATH".to_owned(), path),
    ];
    let run = run_on(&env, engines, &manifest("docker", COMMIT_AND_LEAVE, ""), &["--host", ssh], &vars);
    run.assert_code(1);
    assert_far_work_landed(&env, &run, host, engines);
    assert_eq!(run.json()["container"]["host"], ssh);
}

/// A private registry works as usual: an image pushed there from one engine, pulled by another
/// (eden never pulls: the person does, as they would for any image), and a run on it.
#[test]
fn an_image_from_a_private_registry_runs_on_a_remote_engine() {
    let Some(engines) = engines() else { return };
    let (from, to) = (&engines.hosts[0], &engines.hosts[1]);
    let shared = format!("{}/eden-test:shared-{}", engines.registry, std::process::id());
    let ok = |command: &mut std::process::Command| {
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    };
    ok(from.docker_command(engines).args(["tag", IMAGE, &shared]));
    ok(from.docker_command(engines).args(["push", &shared]));
    ok(to.docker_command(engines).args(["pull", &shared]));
    let env = TestEnv::new();
    let vars = [("DOCKER_TLS_VERIFY".to_owned(), String::new()), ("DOCKER_CERT_PATH".to_owned(), String::new())];
    let run = run_on(
        &env,
        engines,
        &manifest("docker", COMMIT_AND_LEAVE, "").replace(IMAGE, &shared),
        &["--host", &to.docker],
        &vars,
    );
    run.assert_code(1);
    assert_far_work_landed(&env, &run, to, engines);
}

/// Limits go to the remote engine's `run` and hold there.
#[test]
fn limits_hold_on_a_remote_engine() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let env = TestEnv::new();
    let script = "n=$(sh -c 'for i in $(seq 200); do sleep 30 >/dev/null 2>&1 & echo x; done' 2>/dev/null | wc -l); echo \"started $n\"; \
                  head -c 300000000 /dev/zero | tail > /dev/null; echo \"tail exit $?\"; echo '<promise>COMPLETE</promise>'";
    let run = run_on(
        &env,
        engines,
        &manifest("docker", script, "pids_limit = 30\nmemory = \"64m\""),
        &["--host", &host.docker],
        &[],
    );
    run.assert_code(0);
    let started = crate::containers::started_count(&run);
    assert!(started < 30, "pids_limit caps the processes: {started} started");
    assert!(run.stderr.contains("| tail exit 137"), "the memory hog is OOM-killed: {}", run.stderr);
    assert!(host.containers(engines, &env.repo).is_empty());
}

/// Held keys reach a remote engine through its own exec channel: `hold_keys = true` is taken
/// there, the record names what is held, and nothing is left on the engine, also when the run
/// is refused later (the tunnel goes with the container). The real key's way there and back is
/// `claude_code_works_on_a_remote_engine`.
#[test]
fn held_keys_are_held_on_a_remote_engine() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let env = TestEnv::new();
    // A stand-in that calls the proxy through the relay, as Claude Code would (git's own HTTP
    // client: the image has no other), and commits what it sees.
    let script = "#!/bin/sh\ngit -c http.extraHeader=\"x-api-key: $ANTHROPIC_API_KEY\" ls-remote \"$ANTHROPIC_BASE_URL/v1/far\" > called.txt 2>&1\n\
                  ls -l /run/eden-proxy > proxy.txt\ngit add called.txt proxy.txt && git -c user.name=far -c user.email=far@example.com commit -qm called\n\
                  echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"<promise>COMPLETE</promise>\"}'\n";
    let context = env.root().join("stand-in");
    std::fs::create_dir_all(&context).unwrap();
    std::fs::write(context.join("agent"), script).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        format!("FROM {IMAGE}\nCOPY agent /opt/agent\nRUN chmod 755 /opt/agent\n"),
    )
    .unwrap();
    let image = "localhost/eden-test:stand-in";
    let built = host
        .docker_command(engines)
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "-q", "-t", image])
        .arg(&context)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let manifest = format!(
        "name = \"far\"\nprompt = \"x\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/opt/agent\"\n\
         env = {{ ANTHROPIC_API_KEY = \"sk-far-4711\", ANTHROPIC_BASE_URL = \"{}\" }}\n\
         [sandbox]\nkind = \"docker\"\nimage = \"{image}\"\nnetwork = \"none\"\nhold_keys = true\n[loop]\nmax_iterations = 1\n",
        server.url()
    );
    let run = run_on(&env, engines, &manifest, &["--host", &host.docker], &[]);
    run.assert_code(0);
    assert!(!run.stderr.contains("not held"), "{}", run.stderr);
    assert_eq!(run.json()["held_keys"][0]["var"], "ANTHROPIC_API_KEY", "{}", run.stdout);
    // With no network at all, the request reached the server on this machine, with the key.
    let keys = server.stats.keys.lock().unwrap().clone();
    assert!(!keys.is_empty() && keys.iter().all(|key| key == "sk-far-4711"), "{keys:?}: {}", run.stderr);
    assert!(server.stats.paths.lock().unwrap()[0].starts_with("GET /v1/far/info/refs"));
    let proxy = std::fs::read_to_string(env.repo.join("proxy.txt")).unwrap();
    assert!(
        proxy.contains("srw-rw-rw- 1 root root") && proxy.contains("0.sock"),
        "the tunnel's socket, root's: {proxy}"
    );
    assert!(host.containers(engines, &env.repo).is_empty());
}

/// Accepts connections on `address` (two ports), counting each port's.
pub struct Listening {
    pub ports: [u16; 2],
    seen: [std::sync::Arc<std::sync::atomic::AtomicU32>; 2],
}

impl Listening {
    pub fn on(address: &str) -> Listening {
        let mut ports = [0; 2];
        let seen = [std::sync::Arc::default(), std::sync::Arc::default()];
        for (n, count) in seen.iter().enumerate() {
            let listener = std::net::TcpListener::bind((address, 0)).unwrap();
            ports[n] = listener.local_addr().unwrap().port();
            let count: std::sync::Arc<std::sync::atomic::AtomicU32> = std::sync::Arc::clone(count);
            std::thread::spawn(move || {
                for _ in listener.incoming().flatten() {
                    count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
        Listening { ports, seen }
    }

    pub fn seen(&self, n: usize) -> u32 {
        self.seen[n].load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// An agent that tries `targets` (address and port) with eden's own probe and commits what
/// each came to (`eden __eden-connect`: 0 connected, 1 refused, 2 no answer).
pub fn trying(targets: &[(String, u16)]) -> String {
    let tries: String = targets
        .iter()
        .map(|(address, port)| {
            format!("/opt/eden/bin/eden __eden-connect {address} {port}; echo \"{address}:{port} $?\" >> tried.txt; ")
        })
        .collect();
    format!("{tries}git add tried.txt && git -c user.name=far -c user.email=far@example.com commit -qm tried && echo '<promise>COMPLETE</promise>'")
}

/// The network rules hold on a remote engine, installed there by a helper container that
/// alone holds `NET_ADMIN`, and proved by the self-test against eden's probe on that engine:
/// the default network refuses this machine (a private address), an allowlist lets through
/// only its address and port (another port of the same address is refused), on docker and on
/// podman's remote API; the work merges each time, and no helper or probe is left there.
#[test]
fn network_rules_hold_on_a_remote_engine() {
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let here = engines.local_address();
    let listening = Listening::on(&here);
    let targets = [(here.clone(), listening.ports[0]), (here.clone(), listening.ports[1])];
    let tried = |env: &TestEnv| std::fs::read_to_string(env.repo.join("tried.txt")).unwrap();
    // This run's probe (other tests' runs share the engine).
    let left = |env: &TestEnv, run: &Run| {
        let probe = format!("{}-probe", run.json()["container"]["name"].as_str().unwrap());
        let all = host.docker_command(engines).args(["ps", "-a", "--format", "{{.Names}}"]).output().unwrap();
        let names = String::from_utf8_lossy(&all.stdout).into_owned();
        assert!(!names.lines().any(|name| name == probe), "a probe left on the engine: {names}");
        assert!(host.containers(engines, &env.repo).is_empty());
    };

    // The default: the internet, not this machine.
    let env = TestEnv::new();
    let manifest = crate::containers::manifest("docker", &trying(&targets), "");
    let run = run_on(&env, engines, &manifest, &["--host", &host.docker], &[]);
    run.assert_code(0);
    let said = tried(&env);
    assert!(said.contains(&format!("{here}:{} 1", listening.ports[0])), "refused: {said}");
    assert_eq!(listening.seen(0) + listening.seen(1), 0, "this machine was reached");
    left(&env, &run);

    // An allowlist: its address and port, nothing else.
    let env = TestEnv::new();
    let allow = format!("network = \"allowlist\"\nallow = [\"{here}:{}\"]", listening.ports[0]);
    let manifest = crate::containers::manifest("docker", &trying(&targets), &allow);
    let run = run_on(&env, engines, &manifest, &["--host", &host.docker], &[]);
    run.assert_code(0);
    let said = tried(&env);
    assert!(said.contains(&format!("{here}:{} 0", listening.ports[0])), "the allowed port answers: {said}");
    assert!(said.contains(&format!("{here}:{} 1", listening.ports[1])), "another port is refused: {said}");
    assert_eq!(listening.seen(1), 0, "the other port was reached");
    assert!(listening.seen(0) >= 2, "the self-test and the agent reached the allowed port");
    left(&env, &run);

    // The same on podman over its remote API.
    let env = TestEnv::new();
    let url = host.podman.as_deref().unwrap();
    let manifest = crate::containers::manifest("podman", &trying(&targets), &allow);
    let run = run_on(&env, engines, &manifest, &["--host", url], &[]);
    run.assert_code(0);
    let said = tried(&env);
    assert!(said.contains(&format!("{here}:{} 0", listening.ports[0])), "podman: {said}");
    assert!(said.contains(&format!("{here}:{} 1", listening.ports[1])), "podman: {said}");
    assert_eq!(listening.seen(1), 0, "the other port was reached");
}

/// Under gVisor on a remote engine (`runtime = "runsc"`, registered there with its network on
/// the namespace's own stack) the rules hold the same: the helper installs them in the
/// sandbox's namespace, the self-test's probes after them run inside gVisor, this machine is
/// refused and the work merges.
#[test]
fn network_rules_hold_under_gvisor_on_a_remote_engine() {
    let Some(engines) = engines() else { return };
    if !std::path::Path::new(crate::remote_engines::RUNSC).exists() {
        return crate::support::skip("gVisor (runsc) is not installed");
    }
    let host = &engines.hosts[0];
    let here = engines.local_address();
    let listening = Listening::on(&here);
    let targets = [(here.clone(), listening.ports[0])];
    let env = TestEnv::new();
    let manifest = crate::containers::manifest("docker", &trying(&targets), "runtime = \"runsc\"");
    let run = run_on(&env, engines, &manifest, &["--host", &host.docker], &[]);
    run.assert_code(0);
    let said = std::fs::read_to_string(env.repo.join("tried.txt")).unwrap();
    assert!(said.contains(&format!("{here}:{} 1", listening.ports[0])), "refused under gVisor: {said}");
    assert_eq!(listening.seen(0), 0, "this machine was reached");
    let inspected = host.docker_command(engines).args(["info", "--format", "{{json .Runtimes}}"]).output().unwrap();
    assert!(String::from_utf8_lossy(&inspected.stdout).contains("runsc"));
    assert!(host.containers(engines, &env.repo).is_empty());
}

/// `[[service]]` on a remote engine (docker over TLS, podman over its remote API): the service
/// runs there, in the sandbox's namespace; the agent and a check reach it by its name; its own
/// try to reach this machine is refused by the rules the helper installed; nothing is left.
#[test]
fn services_run_beside_a_remote_sandbox() {
    use crate::services::{
        assert_secret_kept, build_service_image, got, web_service, Listener, FETCH_AND_COMMIT, SECRET, SERVICE_IMAGE,
    };
    let Some(engines) = engines() else { return };
    let host = &engines.hosts[0];
    let here = engines.local_address();
    let url = host.podman.as_deref().unwrap();
    let mut podman = std::process::Command::new("podman");
    podman.args(["--remote", "--url", url]);
    build_service_image(host.docker_command(engines));
    build_service_image(podman);
    let listener = Listener::open();
    let script = FETCH_AND_COMMIT.replace("OUTSIDE", &format!("{here}:{}", listener.port()));
    let check = "\n[[check]]\nname = \"served\"\ncmd = \"busybox wget -qO- http://web:8080/ | grep -q 'hello from the service'\"\n";
    for (engine, address) in [("docker", host.docker.as_str()), ("podman", url)] {
        let env = TestEnv::new();
        let manifest = format!(
            "{}{}{check}",
            crate::containers::manifest(engine, &script, ""),
            web_service(&format!("{here}:{}", listener.port()))
        )
        .replace(&format!("image = \"{IMAGE}\""), &format!("image = \"{SERVICE_IMAGE}\""));
        let vars = [("SERVICE_SECRET".to_owned(), SECRET.to_owned())];
        let run = run_on(&env, engines, &manifest, &["--host", address], &vars);
        run.assert_code(0);
        assert_eq!(got(&env, "index.html"), "hello from the service", "{engine}: {}", run.stderr);
        assert_eq!(got(&env, "secret"), SECRET, "{engine}: the service got its environment");
        assert_eq!(got(&env, "probe"), "refused", "{engine}: the service cannot reach this machine");
        assert_eq!(got(&env, "outside"), "refused", "{engine}");
        assert!(!listener.reached(), "{engine}: this machine was reached");
        assert_eq!(run.json()["checks"][0]["outcome"], "ok", "{engine}");
        assert_secret_kept(&env, &run);
        if engine == "docker" {
            assert!(host.containers(engines, &env.repo).is_empty(), "nothing left on {}", host.name);
        }
        let listed = std::process::Command::new("podman")
            .args(["--remote", "--url", url, "ps", "-a", "--filter", "label=eden.service", "--format", "{{.Names}}"])
            .output()
            .unwrap();
        let name = run.json()["container"]["name"].as_str().unwrap().to_owned();
        assert!(!String::from_utf8_lossy(&listed.stdout).contains(&name), "nothing left on podman");
    }
}
