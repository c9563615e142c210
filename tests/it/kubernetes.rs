//! `sandbox.kind = "kubernetes"` against a real single-node cluster (`tests/kubernetes/`:
//! built once per machine by `.ci/run`, started here once per test process and stopped at its
//! exit). The cluster has no CNI, so NetworkPolicies are not enforced there.

use crate::containers::IMAGE;
use crate::support::{Run, TestEnv};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where `.ci/run` builds the cluster's binaries.
const BUILD: &str = "/var/tmp/eden-k8s";

pub struct Cluster {
    state: PathBuf,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kubernetes/cluster.sh")
}

/// The cluster of a test process that is gone (killed before its exit handler ran) still holds
/// the ports: stopped first.
fn reap_stale() {
    let Ok(entries) = std::fs::read_dir("/var/tmp") else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("eden-k8s-test-").and_then(|pid| pid.parse::<u32>().ok()) else { continue };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::process::Command::new("bash").arg(script()).arg("stop").arg(entry.path()).status();
        }
    }
}

pub fn cluster() -> Option<&'static Cluster> {
    let cluster = CLUSTER.get_or_init(|| {
        if !nix::unistd::geteuid().is_root() {
            return Err("not root".into());
        }
        if !Path::new(BUILD).join("bin/kubelet").exists() {
            return Err(format!("no cluster built in {BUILD} (tests/kubernetes/build.sh {BUILD})"));
        }
        if !crate::containers::ready("docker") {
            return Err("docker has no test image".into());
        }
        reap_stale();
        let state = PathBuf::from(format!("/var/tmp/eden-k8s-test-{}", std::process::id()));
        let started = std::process::Command::new("bash")
            .arg(script())
            .args(["start", BUILD])
            .arg(&state)
            .output()
            .map_err(|err| err.to_string())?;
        if !started.status.success() {
            let _ = std::process::Command::new("bash").arg(script()).arg("stop").arg(&state).status();
            return Err(format!("the cluster did not start: {}", String::from_utf8_lossy(&started.stdout)));
        }
        extern "C" fn stop() {
            if let Some(Ok(cluster)) = CLUSTER.get() {
                let _ = std::process::Command::new("bash").arg(script()).arg("stop").arg(&cluster.state).status();
            }
        }
        // SAFETY: `stop` is an `extern "C" fn()` with no arguments, as atexit takes.
        unsafe { nix::libc::atexit(stop) };
        Ok(Cluster { state })
    });
    match cluster {
        Ok(cluster) => Some(cluster),
        Err(why) => {
            crate::support::skip(&format!("no Kubernetes cluster here: {why}"));
            None
        }
    }
}

impl Cluster {
    /// What eden and kubectl need: the cluster's kubectl first on PATH, and a kubeconfig
    /// (`admin`, or `nobody`: a user the cluster lets do nothing).
    pub fn env(&self, user: &str) -> Vec<(String, String)> {
        let path = format!("{BUILD}/bin:{}", std::env::var("PATH").unwrap_or_default());
        vec![
            ("PATH".into(), path),
            ("KUBECONFIG".into(), self.state.join(format!("{user}.conf")).display().to_string()),
        ]
    }

    /// Is pod `name` there (and not being deleted)?
    fn has(&self, name: &str) -> bool {
        let output = std::process::Command::new(format!("{BUILD}/bin/kubectl"))
            .env("KUBECONFIG", self.state.join("admin.conf"))
            .args([
                "get",
                "pod",
                name,
                "--ignore-not-found",
                "-o",
                "jsonpath={.metadata.deletionTimestamp}/{.metadata.name}",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout) == format!("/{name}")
    }

    /// The names of the pods of runs in `repo`.
    pub fn pods(&self, repo: &Path) -> Vec<String> {
        let repo = std::fs::canonicalize(repo).unwrap().display().to_string();
        let output = std::process::Command::new(format!("{BUILD}/bin/kubectl"))
            .env("KUBECONFIG", self.state.join("admin.conf"))
            .args(["get", "pods", "-l", "app.kubernetes.io/managed-by=eden", "-o", "json"])
            .output()
            .unwrap();
        let pods: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
        pods["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|pod| pod["metadata"]["annotations"]["eden.repo"] == repo.as_str())
                    .filter_map(|pod| pod["metadata"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub fn manifest(script: &str, extra: &str) -> String {
    let script = script.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "name = \"pod\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; {script}\"]\n\
         [sandbox]\nkind = \"kubernetes\"\nimage = \"{IMAGE}\"\nimage_pull_policy = \"Never\"\n{extra}\n[loop]\nmax_iterations = 1\nidle_timeout = \"60s\"\n"
    )
}

fn run(env: &TestEnv, vars: &[(String, String)], manifest: &str) -> Run {
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(vars.iter().cloned());
    Run::from(command.output().unwrap())
}

const COMMIT_AND_LEAVE: &str = "cat README.md > copy.txt && git add copy.txt && git -c user.name=pod -c user.email=pod@example.com commit -qm 'made in a pod' && echo left > loose.txt && echo '<promise>COMPLETE</promise>'";

#[test]
fn a_run_in_a_pod_brings_its_work_back() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    // A sandbox hook runs in the pod, with its environment (through the channel's file).
    let hooks = "\n[hooks.sandbox]\non_sandbox_ready = [{ cmd = \"echo \\\"$GREETING from $(hostname)\\\" > hooked.txt\", env = { GREETING = \"hello\" } }]\n";
    let run = run(&env, &cluster.env("admin"), &format!("{}{hooks}", manifest(COMMIT_AND_LEAVE, "")));
    run.assert_code(1);
    assert_eq!(env.log_subjects("main")[0], "made in a pod", "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(env.repo.join("copy.txt")).unwrap(),
        "# test repo\n",
        "seeded through the channel"
    );
    let record = run.json();
    let kept = record["preserved_worktree"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(Path::new(kept).join("loose.txt")).unwrap(), "left\n");
    assert_eq!(record["sandbox"], "kubernetes");
    assert_eq!(record["container"]["engine"], "kubernetes");
    assert_eq!(record["container"]["node"], "eden-node");
    assert!(
        run.stderr.contains("kubernetes pod `eden-") && run.stderr.contains("started on node `eden-node`"),
        "{}",
        run.stderr
    );
    let mut listed = env.eden_command(&["sessions", "list"]);
    let listed = Run::from(listed.output().unwrap());
    assert!(
        listed.stdout.contains("HOST") && listed.stdout.contains("eden-node"),
        "the node in sessions list: {}",
        listed.stdout
    );
    let hooked = std::fs::read_to_string(Path::new(kept).join("hooked.txt")).unwrap();
    assert!(hooked.starts_with("hello from eden-"), "the hook ran in the pod: {hooked}");
    assert!(cluster.pods(&env.repo).is_empty(), "the pod is deleted");
}

#[test]
fn the_simulated_agent_runs_in_a_pod() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let manifest = format!("name = \"sim\"\nprompt = \"hi\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"kubernetes\"\nimage = \"{IMAGE}\"\nimage_pull_policy = \"Never\"\n");
    let run = run(&env, &cluster.env("admin"), &manifest);
    run.assert_code(0);
    assert!(run.stderr.contains("| simulated agent: working"), "{}", run.stderr);
    assert!(cluster.pods(&env.repo).is_empty());
}

/// Each failure before the agent runs is exit 6 in the person's terms, with a hint, and leaves
/// nothing behind: no record, branch, worktree or pod.
#[test]
fn errors_are_said_in_the_persons_terms() {
    let Some(cluster) = cluster() else { return };
    let admin = cluster.env("admin");
    let mut unreachable = admin.clone();
    let config =
        std::fs::read_to_string(cluster.state.join("admin.conf")).unwrap().replace("127.0.0.1:6443", "127.0.0.1:1");
    let env = TestEnv::new();
    let bad = env.root().join("unreachable.conf");
    std::fs::write(&bad, config).unwrap();
    unreachable[1].1 = bad.display().to_string();
    let mut missing = admin.clone();
    missing[1].1 = env.root().join("no-such.conf").display().to_string();
    let cases = [
        (
            admin.clone(),
            manifest("true", "").replace(IMAGE, "localhost/not-there:1"),
            "cannot get image `localhost/not-there:1`",
        ),
        (
            admin.clone(),
            manifest("true", "node_selector = { disk = \"none-such\" }\nstart_timeout = \"3s\""),
            "was not running after 3s (Unschedulable",
        ),
        (missing, manifest("true", ""), "kubectl has no kubeconfig"),
        (cluster.env("nobody"), manifest("true", ""), "does not let you create pods"),
        (unreachable, manifest("true", ""), "cannot reach the cluster"),
    ];
    for (vars, manifest, expected) in cases {
        let run = run(&env, &vars, &manifest);
        run.assert_code(6);
        assert!(run.stderr.contains(expected) && run.stderr.contains("hint:"), "{expected}: {}", run.stderr);
        env.assert_pristine();
        assert!(cluster.pods(&env.repo).is_empty(), "{expected}: no pod left");
    }
}

#[test]
fn what_a_pod_cannot_do_is_refused_at_load() {
    let env = TestEnv::new();
    for (extra, key) in
        [("pids_limit = 10", "pids_limit"), ("network = \"host\"", "network"), ("host = \"tcp://x:1\"", "host")]
    {
        let path = env.write_manifest(&manifest("true", extra));
        let run = env.eden(&["run", path.to_str().unwrap()]);
        run.assert_code(2);
        assert!(
            run.stderr.contains(&format!("`sandbox.{key}`")) || run.stderr.contains("`network = "),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("hint:"), "{}", run.stderr);
    }
    let path = env.write_manifest("prompt = \"x\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"docker\"\nimage = \"i\"\nnamespace = \"team\"\n");
    let run = env.eden(&["run", path.to_str().unwrap()]);
    run.assert_code(2);
    assert!(run.stderr.contains("`sandbox.namespace` applies to `kubernetes` only"), "{}", run.stderr);
}

/// Ctrl-C: the pod is deleted, the work comes back; eden killed: its guard saves what the pod
/// holds and deletes it.
#[test]
fn ctrl_c_or_a_killed_eden_leaves_no_pod() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let child = start_waiting(cluster, &env);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    assert!(cluster.pods(&env.repo).is_empty(), "deleted on Ctrl-C");
    assert_eq!(env.log_subjects(&env.branches().into_iter().find(|b| b.starts_with("eden/")).unwrap())[0], "killed");
    let env = TestEnv::new();
    let mut child = start_waiting(cluster, &env);
    assert_eq!(cluster.pods(&env.repo).len(), 1, "the pod runs");
    child.kill().unwrap();
    let _ = child.wait();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !cluster.pods(&env.repo).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the guard deletes the pod");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let patches = env.repo.join(".eden/patches");
    let saved: Vec<String> = std::fs::read_dir(&patches)
        .map(|dir| dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(saved.iter().any(|name| name.ends_with(".salvaged.patch")), "{saved:?}");
}

/// eden running an agent in a pod that commits, leaves a file and waits; returned once the
/// agent said `ready`.
fn start_waiting(cluster: &Cluster, env: &TestEnv) -> std::process::Child {
    let script = "echo c > c.txt && git add c.txt && git -c user.name=pod -c user.email=pod@example.com commit -qm killed && echo half > half.txt && echo ready; sleep 300";
    let path = env.write_manifest(&manifest(script, "").replace("idle_timeout = \"60s\"", "idle_timeout = \"10m\""));
    let mut command = env.eden_command(&["run", path.to_str().unwrap()]);
    command.envs(cluster.env("admin")).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    use std::io::BufRead;
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut lines = stderr.lines();
    for line in lines.by_ref().map_while(Result::ok) {
        if line.contains("| ready") {
            break;
        }
    }
    // The rest of stderr drained, so eden never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    child
}

/// SIGKILL for the run's eden and for the guard of its pod `pod`: the pod is left behind (until
/// its deadline).
fn kill_eden_and_its_guard(cluster: &Cluster, pod: &str, eden: &mut std::process::Child) {
    let guard = std::process::Command::new("pkill").args(["-9", "-f", &format!("__eden-guard .* {pod}$")]).status();
    assert!(guard.unwrap().success(), "the guard was running");
    eden.kill().unwrap();
    let _ = eden.wait();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(cluster.has(pod), "left behind");
}

/// eden and its guard both killed: the pod stays (until its deadline); `eden clean` finds it in
/// the cluster the record names, saves what it holds, and deletes it.
#[test]
fn eden_clean_finds_a_killed_runs_pod() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let mut child = start_waiting(cluster, &env);
    let pods = cluster.pods(&env.repo);
    assert_eq!(pods.len(), 1, "the pod runs");
    // What an agent with a service account could do from inside: point the pod's annotations
    // elsewhere. eden clean goes by its own records, never by them.
    let elsewhere = env.root().join("elsewhere");
    let annotated = std::process::Command::new(format!("{BUILD}/bin/kubectl"))
        .env("KUBECONFIG", cluster.state.join("admin.conf"))
        .args([
            "annotate",
            "pod",
            &pods[0],
            "--overwrite",
            &format!("eden.repo={}", elsewhere.display()),
            "eden.run=../../escape",
        ])
        .status()
        .unwrap();
    assert!(annotated.success());
    kill_eden_and_its_guard(cluster, &pods[0], &mut child);
    let mut clean = env.eden_command(&["clean", "--json"]);
    let clean = Run::from(clean.envs(cluster.env("admin")).output().unwrap());
    clean.assert_code(0);
    assert!(clean.stdout.contains(&format!("{} (kubernetes -/-)", pods[0])), "{}", clean.stdout);
    assert!(!cluster.has(&pods[0]), "deleted by eden clean");
    let patches = env.repo.join(".eden/patches");
    let saved: Vec<String> = std::fs::read_dir(&patches)
        .map(|dir| dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(saved.iter().any(|name| name.ends_with(".salvaged.patch")), "{saved:?}");
    assert!(
        !elsewhere.exists() && !env.root().join("escape.salvaged.patch").exists(),
        "nothing written where the pod said"
    );
}

/// eden and its guard both killed: `eden discard` of the run saves what its pod holds (through
/// the salvage channel, git's own settings passed in) and deletes the pod, as `eden clean`
/// does; the run's branch and worktree go too.
#[test]
fn eden_discard_removes_a_killed_runs_pod() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let mut child = start_waiting(cluster, &env);
    let pods = cluster.pods(&env.repo);
    assert_eq!(pods.len(), 1, "the pod runs");
    kill_eden_and_its_guard(cluster, &pods[0], &mut child);
    let mut discard = env.eden_command(&["discard", "last", "--force"]);
    let discard = Run::from(discard.envs(cluster.env("admin")).output().unwrap());
    discard.assert_code(0);
    assert!(discard.stderr.contains(&format!("pod `{}`", pods[0])), "{}", discard.stderr);
    assert!(!cluster.has(&pods[0]), "deleted by eden discard");
    let patches = env.repo.join(".eden/patches");
    let patch = std::fs::read_dir(&patches)
        .unwrap()
        .flatten()
        .find(|entry| entry.file_name().to_string_lossy().ends_with(".salvaged.patch"))
        .expect("the pod's uncommitted work saved");
    assert!(std::fs::read_to_string(patch.path()).unwrap().contains("half.txt"));
}

/// Several runs at once, each a pod of its own; the cluster places them, the merges queue here,
/// and the table says which node each ran on.
#[test]
fn several_runs_are_several_pods() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let mut paths = Vec::new();
    for n in 0..4 {
        let script = format!("echo {n} > run-{n}.txt && git add run-{n}.txt && git -c user.name=pod -c user.email=pod@example.com commit -qm 'pod {n}' && echo '<promise>COMPLETE</promise>'");
        let path = env.root().join(format!("pod-{n}.toml"));
        std::fs::write(&path, manifest(&script, "").replace("name = \"pod\"", &format!("name = \"pod-{n}\""))).unwrap();
        paths.push(path.display().to_string());
    }
    let mut args = vec!["run"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--jobs", "4", "--json"]);
    let mut command = env.eden_command(&args);
    let run = Run::from(command.envs(cluster.env("admin")).output().unwrap());
    run.assert_code(0);
    let records = run.json();
    for record in records.as_array().unwrap() {
        assert_eq!(record["container"]["node"], "eden-node", "{record:#}");
        assert_eq!(record["merged_into"], "main");
    }
    assert!(run.stderr.contains("HOST") && run.stderr.contains("eden-node"), "{}", run.stderr);
    assert!(cluster.pods(&env.repo).is_empty());
}

/// The node's address on this machine (`tests/kubernetes/cluster.sh`): what a pod reaches the
/// scripted model server at.
const NODE_ADDRESS: &str = "10.213.79.1";

/// The key the Claude Code in a pod is given, which eden's proxy holds.
const POD_KEY: &str = "sk-ant-pod-4711-real-key";

/// The test image with the real Claude Code's executable on its PATH (a pod mounts nothing from
/// this machine) and a spy in front of it (`held_keys::committing_spy`), built in the docker
/// the kubelet uses; once per test process.
fn claude_image(claude: &Path) -> &'static str {
    static BUILT: OnceLock<()> = OnceLock::new();
    const TAG: &str = "localhost/eden-test:claude";
    BUILT.get_or_init(|| {
        let context = tempfile::tempdir().unwrap();
        std::fs::copy(claude, context.path().join("claude")).unwrap();
        std::fs::write(context.path().join("spy"), crate::held_keys::committing_spy("/usr/local/bin/claude", POD_KEY))
            .unwrap();
        let dockerfile =
            format!("FROM {IMAGE}\nCOPY claude /usr/local/bin/claude\nCOPY spy /usr/local/bin/spy\nRUN chmod 755 /usr/local/bin/spy\n");
        std::fs::write(context.path().join("Dockerfile"), dockerfile).unwrap();
        let built =
            std::process::Command::new("docker").args(["build", "-q", "-t", TAG]).arg(context.path()).output().unwrap();
        assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    });
    TAG
}

/// The real Claude Code CLI in a pod, against the scripted model server on the node's address:
/// its commit merged, its transcript (written in the pod's state folder) captured, the pod gone.
/// Its key is held: the server receives the real key through eden's proxy here, reached through
/// `kubectl exec` (`proxy::tunnel`); in the pod only the placeholder exists.
#[test]
fn claude_code_runs_in_a_pod() {
    let Some(cluster) = cluster() else { return };
    let Some(claude) = crate::real_agents::require("claude") else { return };
    let image = claude_image(&std::fs::canonicalize(claude).unwrap());
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start_on(
        NODE_ADDRESS,
        std::fs::canonicalize(&env.repo).unwrap(),
        false,
        None,
    );
    let manifest = format!(
        "name = \"podded\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/usr/local/bin/spy\"\n\
         env = {{ ANTHROPIC_BASE_URL = \"${{ANTHROPIC_BASE_URL}}\", ANTHROPIC_API_KEY = \"{POD_KEY}\", \
         DISABLE_TELEMETRY = \"1\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", CLAUDE_CODE_MAX_RETRIES = \"0\" }}\n\
         [sandbox]\nkind = \"kubernetes\"\nimage = \"{image}\"\nimage_pull_policy = \"Never\"\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n"
    );
    let mut vars = crate::real_agents::claude_env(&env, &server);
    vars.extend(cluster.env("admin"));
    let run = run(&env, &vars, &manifest);
    run.assert_code(0);
    let record = run.json();
    assert_eq!(record["merged_into"], "main", "{record:#}");
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    crate::real_agents::assert_transcript(&env, &record, 0);
    assert!(!env.root().join("claude/projects").exists(), "nothing written to the person's folder");
    assert!(cluster.pods(&env.repo).is_empty(), "the pod is deleted");
    let keys = server.stats.keys.lock().unwrap().clone();
    assert!(!keys.is_empty() && keys.iter().all(|key| key == POD_KEY), "the server got {keys:?}");
    crate::held_keys::assert_spied(&env, &run, POD_KEY);
}

/// An agent's variables reach it in the pod exactly (a line break and quotes in a value), and
/// never go on a command line on this machine (`kubectl exec` has no `-e`: they travel on the
/// exec's stdin) or into the pod's spec.
#[test]
fn the_agents_environment_reaches_the_pod_off_the_command_line() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let secret = "pod-secret-4711\nsecond 'line' \"quoted\" $HOME \\";
    let script = "printf '%s' \"$SECRET_TOKEN\" > token.txt; sleep 3; git add token.txt && git -c user.name=pod -c user.email=pod@example.com commit -qm token && echo '<promise>COMPLETE</promise>'";
    let manifest = format!("{}\n[agent.env]\nSECRET_TOKEN = \"${{SECRET_TOKEN}}\"\n", manifest(script, ""));
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(cluster.env("admin")).env("SECRET_TOKEN", secret);
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut seen_pod = false;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline && !seen_pod {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
            let cmdline = String::from_utf8_lossy(&cmdline);
            assert!(!cmdline.contains("pod-secret-4711"), "a value on a command line: {cmdline}");
        }
        if let Some(pod) = cluster.pods(&env.repo).first() {
            let spec = std::process::Command::new(format!("{BUILD}/bin/kubectl"))
                .env("KUBECONFIG", cluster.state.join("admin.conf"))
                .args(["get", "pod", pod, "-o", "json"])
                .output()
                .unwrap();
            let spec = String::from_utf8_lossy(&spec.stdout);
            assert!(!spec.contains("pod-secret-4711"), "a value in the pod's spec: {spec}");
            seen_pod = spec.contains("Running");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(0);
    assert!(seen_pod, "the pod was never seen running");
    assert_eq!(std::fs::read_to_string(env.repo.join("token.txt")).unwrap(), secret);
    assert!(!run.stdout.contains("pod-secret-4711") && !run.stderr.contains("pod-secret-4711"));
}

/// A pod is hardened by default, as the "restricted" Pod Security Standard asks: never root
/// (uid 1000 when eden runs as root), no privilege escalation, every capability dropped, the
/// runtime's seccomp profile, no service links, no service-account token. Read back from the
/// API server while it runs, and seen from inside; `runtime_class` is its `runtimeClassName`.
/// Its network rules' init container and NetworkPolicy are there too.
#[test]
fn a_pod_is_hardened_by_default() {
    let Some(cluster) = cluster() else { return };
    let kubectl = |args: &[&str], input: Option<&str>| {
        let mut command = std::process::Command::new(format!("{BUILD}/bin/kubectl"));
        command.env("KUBECONFIG", cluster.state.join("admin.conf")).args(args);
        command.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        if let Some(input) = input {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        String::from_utf8_lossy(&child.wait_with_output().unwrap().stdout).into_owned()
    };
    // A RuntimeClass for the node's own runtime: what a gVisor or Kata one would be named. And
    // a service in the pod's namespace, whose address service links would hand the agent.
    kubectl(
        &["apply", "-f", "-"],
        Some("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: eden-test\nhandler: docker\n---\n\
              apiVersion: v1\nkind: Service\nmetadata:\n  name: eden-probe\n  namespace: default\nspec:\n  ports:\n  - port: 80\n"),
    );
    let env = TestEnv::new();
    let script = "echo \"uid $(id -u)\"; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; env | grep -c EDEN_PROBE_SERVICE | sed 's/^/links /'; \
                  sleep 3; echo '<promise>COMPLETE</promise>'";
    let path = env.write_manifest(&manifest(script, "runtime_class = \"eden-test\""));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(cluster.env("admin"));
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut spec = serde_json::Value::Null;
    let mut policy = serde_json::Value::Null;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline && spec.is_null() {
        if let Some(pod) = cluster.pods(&env.repo).first() {
            let read: serde_json::Value =
                serde_json::from_str(&kubectl(&["get", "pod", pod, "-o", "json"], None)).unwrap_or_default();
            if read["status"]["phase"] == "Running" {
                spec = read["spec"].clone();
                let read = kubectl(&["get", "networkpolicy", pod, "-o", "json"], None);
                policy = serde_json::from_str(&read).unwrap_or_default();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(0);
    assert!(!spec.is_null(), "the pod was never seen running: {}", run.stderr);
    let pod = &spec["securityContext"];
    let container = &spec["containers"][0]["securityContext"];
    let expected_uid = if nix::unistd::getuid().is_root() { 1000 } else { nix::unistd::getuid().as_raw() };
    assert_eq!(pod["runAsNonRoot"], true, "{spec:#}");
    assert_eq!(pod["runAsUser"], expected_uid);
    assert_eq!(pod["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(container["allowPrivilegeEscalation"], false);
    assert_eq!(container["capabilities"]["drop"][0], "ALL");
    assert_eq!(spec["enableServiceLinks"], false);
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(spec["runtimeClassName"], "eden-test");
    // The network rules' init container: root with `NET_ADMIN` alone; the agent's has none.
    let init = &spec["initContainers"][0];
    assert_eq!(init["name"], "eden-rules", "{spec:#}");
    assert_eq!(init["securityContext"]["capabilities"], serde_json::json!({"drop": ["ALL"], "add": ["NET_ADMIN"]}));
    assert_eq!(init["securityContext"]["allowPrivilegeEscalation"], false);
    assert!(container["capabilities"].get("add").is_none());
    // Its NetworkPolicy, owned by the pod: egress to the internet but private ranges.
    assert_eq!(policy["metadata"]["ownerReferences"][0]["kind"], "Pod", "{policy:#}");
    let except = &policy["spec"]["egress"][0]["to"][0]["ipBlock"]["except"];
    assert!(except.as_array().unwrap().iter().any(|net| net == "169.254.0.0/16"), "{policy:#}");
    // Seen from inside.
    assert!(run.stderr.contains(&format!("| uid {expected_uid}")), "{}", run.stderr);
    assert!(run.stderr.contains("| CapEff:\t0000000000000000"), "{}", run.stderr);
    assert!(run.stderr.contains("| NoNewPrivs:\t1"), "{}", run.stderr);
    assert!(run.stderr.contains("| links 0"), "no service's address in the environment: {}", run.stderr);
    kubectl(&["delete", "runtimeclass", "eden-test"], None);
    kubectl(&["delete", "service", "eden-probe", "-n", "default"], None);
}

/// The network rules hold in a pod, installed before the agent's container starts by an init
/// container that alone holds `NET_ADMIN`, and proved by the self-test: by default neither the
/// API server nor a listener on the node answers; with `network = "none"` neither does, and
/// the work merges; an allowlist lets through its address and port, not another port of the
/// same address. The API server listens on the node's address too (`cluster.sh`).
#[test]
fn network_rules_hold_in_a_pod() {
    let Some(cluster) = cluster() else { return };
    let listening = crate::remote::Listening::on(NODE_ADDRESS);
    let targets = [
        (NODE_ADDRESS.to_owned(), listening.ports[0]),
        (NODE_ADDRESS.to_owned(), listening.ports[1]),
        (NODE_ADDRESS.to_owned(), 6443),
    ];
    let script = crate::remote::trying(&targets);
    let tried = |env: &TestEnv| std::fs::read_to_string(env.repo.join("tried.txt")).unwrap();
    for network in ["", "network = \"none\""] {
        let env = TestEnv::new();
        let run = run(&env, &cluster.env("admin"), &manifest(&script, network));
        run.assert_code(0);
        let said = tried(&env);
        for (address, port) in &targets {
            assert!(said.contains(&format!("{address}:{port} 1")), "{network}: {address}:{port} refused: {said}");
        }
        assert!(run.json()["container"]["network_policy"].as_str().is_some_and(|name| name.starts_with("eden-")));
        assert!(cluster.pods(&env.repo).is_empty());
    }
    assert_eq!(listening.seen(0) + listening.seen(1), 0, "the node was reached");

    let env = TestEnv::new();
    let allow = format!("network = \"allowlist\"\nallow = [\"{NODE_ADDRESS}:{}\"]", listening.ports[0]);
    let run = run(&env, &cluster.env("admin"), &manifest(&script, &allow));
    run.assert_code(0);
    let said = tried(&env);
    assert!(said.contains(&format!("{NODE_ADDRESS}:{} 0", listening.ports[0])), "the allowed port answers: {said}");
    assert!(said.contains(&format!("{NODE_ADDRESS}:{} 1", listening.ports[1])), "another port is refused: {said}");
    assert!(said.contains(&format!("{NODE_ADDRESS}:6443 1")), "the API server is refused: {said}");
    assert_eq!(listening.seen(1), 0, "the other port was reached");
    assert!(listening.seen(0) >= 2, "the self-test and the agent reached the allowed port");
}

/// `eden interactive` in a pod holds the key as a run does: the agent sees a placeholder and a
/// base URL on its own loopback, where the relay answers (through the tunnel to eden's proxy
/// here), under the pod's network rules; the key is nowhere in what it prints.
#[test]
fn an_interactive_session_in_a_pod_holds_the_key() {
    let Some(cluster) = cluster() else { return };
    static BUILT: OnceLock<()> = OnceLock::new();
    const TAG: &str = "localhost/eden-test:show";
    BUILT.get_or_init(|| {
        let context = tempfile::tempdir().unwrap();
        let show = "#!/bin/sh\nenv | grep -E '^ANTHROPIC_(API_KEY|BASE_URL)=' | sort\n\
                    p=${ANTHROPIC_BASE_URL##*:}; p=${p%%/*}\n/opt/eden/bin/eden __eden-connect 127.0.0.1 \"$p\" && echo RELAY-ANSWERS\n";
        std::fs::write(context.path().join("show"), show).unwrap();
        let dockerfile = format!("FROM {IMAGE}\nCOPY show /opt/show\nRUN chmod 755 /opt/show\n");
        std::fs::write(context.path().join("Dockerfile"), dockerfile).unwrap();
        let built =
            std::process::Command::new("docker").args(["build", "-q", "-t", TAG]).arg(context.path()).output().unwrap();
        assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    });
    let env = TestEnv::new();
    let manifest = format!(
        "name = \"held\"\nprompt = \"\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/opt/show\"\nenv = {{ ANTHROPIC_API_KEY = \"{POD_KEY}\" }}\n\
         [sandbox]\nkind = \"kubernetes\"\nimage = \"{TAG}\"\nimage_pull_policy = \"Never\"\n"
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["interactive", path.to_str().unwrap(), "--no-tty"]);
    command.envs(cluster.env("admin"));
    let run = Run::from(command.stdin(std::process::Stdio::null()).output().unwrap());
    run.assert_code(0);
    assert!(run.stdout.contains("ANTHROPIC_API_KEY=eden-held-"), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:"), "{}", run.stdout);
    assert!(run.stdout.contains("RELAY-ANSWERS"), "the relay answers in the pod: {}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains(POD_KEY) && !run.stderr.contains(POD_KEY));
    assert!(cluster.pods(&env.repo).is_empty());
}

/// Attempts as pods (`attempts = 2`): each attempt a pod of its own under the default network
/// rules; only attempt 2 writes what the check wants, and only it lands; no pod is left.
#[test]
fn attempts_run_as_pods() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let script = "read -r p; echo \"$p\" > attempt.txt && git add attempt.txt && git -c user.name=pod -c user.email=pod@example.com commit -qm \"$p\" && echo '<promise>COMPLETE</promise>'";
    let manifest = manifest(script, "")
        .replace("prompt = \"go\"", "prompt = \"attempt {{ATTEMPT}}\"\nattempts = 2")
        .replace("cat >/dev/null; ", "")
        + "[[check]]\nname = \"two\"\ncmd = \"grep -q 'attempt 2' attempt.txt\"\n";
    let run = run(&env, &cluster.env("admin"), &manifest);
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "attempt 2", "{}", run.stderr);
    let attempts = run.json();
    let attempts = attempts.as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    for entry in attempts {
        let number = entry["attempt"]["number"].as_u64().unwrap();
        assert_eq!(entry["attempt"]["chosen"], number == 2, "{entry:#}");
        assert_eq!(entry["container"]["engine"], "kubernetes");
    }
    assert!(cluster.pods(&env.repo).is_empty(), "no pod left");
}

/// `[[service]]` in a pod: a container of the pod's own, reached by its name from the agent and
/// a check; its environment from a Secret the pod owns (gone with it); its own try to reach this
/// machine refused by the pod's rules, as the agent's is.
#[test]
fn services_are_containers_of_the_pod() {
    use crate::services::{got, machine_address, web_service, Listener, FETCH_AND_COMMIT, SECRET, SERVICE_IMAGE};
    let Some(cluster) = cluster() else { return };
    if !crate::services::services_ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let listener = Listener::open();
    let script = FETCH_AND_COMMIT.replace("OUTSIDE", &format!("{}:{}", machine_address(), listener.port()));
    let check = "\n[[check]]\nname = \"served\"\ncmd = \"busybox wget -qO- http://web:8080/ | grep -q 'hello from the service'\"\n";
    let manifest = format!("{}{}{check}", manifest(&script, ""), web_service(&format!("GATEWAY:{}", listener.port())))
        .replace(&format!("image = \"{IMAGE}\""), &format!("image = \"{SERVICE_IMAGE}\""));
    let mut vars = cluster.env("admin");
    vars.push(("SERVICE_SECRET".into(), SECRET.into()));
    let run = run(&env, &vars, &manifest);
    run.assert_code(0);
    assert_eq!(got(&env, "index.html"), "hello from the service", "{}", run.stderr);
    assert_eq!(got(&env, "secret"), SECRET, "the service got its environment");
    assert_eq!(got(&env, "probe"), "refused", "the service cannot reach this machine");
    assert_eq!(got(&env, "outside"), "refused");
    assert!(!listener.reached());
    let record = run.json();
    assert_eq!(record["checks"][0]["outcome"], "ok", "{}", record["checks"]);
    crate::services::assert_secret_kept(&env, &run);
    assert!(cluster.pods(&env.repo).is_empty(), "the pod is deleted");
    let secret = format!("{}-services", record["container"]["name"].as_str().unwrap());
    let left = std::process::Command::new(format!("{BUILD}/bin/kubectl"))
        .env("KUBECONFIG", cluster.state.join("admin.conf"))
        .args(["get", "secret", &secret, "--ignore-not-found", "-o", "name"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "", "the Secret goes with the pod");

    // A service never ready, and one whose image the node cannot get: exit 6 naming it, no pod.
    let service = |image: &str, extra: &str| {
        format!(
            "{}\n[[service]]\nname = \"db\"\nimage = \"{image}\"\n{extra}\n",
            self::manifest("echo '<promise>COMPLETE</promise>'", "")
        )
    };
    let cases = [
        (
            service(SERVICE_IMAGE, "command = [\"sh\", \"-c\", \"echo still warming up; exec sleep 300\"]\nready = \"false\"\nready_timeout = \"3s\""),
            ["service `db` (localhost/eden-test:services) was not ready after 3 s", "still warming up"],
        ),
        (
            service("localhost/not-there:1", ""),
            ["the cluster cannot get service `db`'s image `localhost/not-there:1`", "ErrImageNeverPull"],
        ),
    ];
    for (manifest, said) in cases {
        let env = TestEnv::new();
        let run = self::run(&env, &cluster.env("admin"), &manifest);
        run.assert_code(6);
        for said in said {
            assert!(run.stderr.contains(said), "{said}: {}", run.stderr);
        }
        assert!(cluster.pods(&env.repo).is_empty(), "the pod is deleted");
        env.assert_pristine();
    }
}

/// `artifacts` from a pod: through `kubectl exec`, as the rest of what comes back.
#[test]
fn artifacts_from_a_pod() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let sandbox = format!(
        "[sandbox]\nkind = \"kubernetes\"\nimage = \"{IMAGE}\"\nimage_pull_policy = \"Never\"\nmax_return = \"1m\""
    );
    let vars = cluster.env("admin");
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = crate::artifacts::run(&env, &crate::artifacts::manifest(&sandbox), &vars);
    crate::artifacts::assert_kept(&env, &run, true);
    assert!(cluster.pods(&env.repo).is_empty(), "the pod is deleted");
}

/// `eden steer` reaches an agent in a pod: interrupted through `kubectl exec`, the next
/// iteration has the prompt.
#[test]
fn an_agent_in_a_pod_is_steered() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let sandbox = format!("[sandbox]\nkind = \"kubernetes\"\nimage = \"{IMAGE}\"\nimage_pull_policy = \"Never\"");
    let path = env.write_manifest(&crate::steer::manifest(Path::new("/tmp"), &sandbox));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(cluster.env("admin"));
    let mut child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // The agent is at work when it has said so (the run's log). A busy machine starts pods slowly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let working =
        || {
            std::fs::read_dir(env.repo.join(".eden/logs")).into_iter().flatten().flatten().any(|entry| {
                std::fs::read_to_string(entry.path()).is_ok_and(|log| log.contains("\"text\":\"working\""))
            })
        };
    while !working() {
        if child.try_wait().unwrap().is_some() {
            let run = Run::from(child.wait_with_output().unwrap());
            panic!("the run ended before its agent worked: {}", run.stderr);
        }
        assert!(std::time::Instant::now() < deadline, "the agent never started");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let sent = std::time::Instant::now();
    env.eden(&["steer", "last", "STEERED: write it down instead"]).assert_code(0);
    let run = Run::from(child.wait_with_output().unwrap());
    crate::steer::assert_steered(&env, &run, sent.elapsed());
    assert!(cluster.pods(&env.repo).is_empty(), "the pod is deleted");
}

/// `eden pool …` with the cluster's kubectl and kubeconfig.
fn pool(cluster: &Cluster, env: &TestEnv, args: &[&str]) -> Run {
    let mut all = vec!["pool"];
    all.extend_from_slice(args);
    let mut command = env.eden_command(&all);
    Run::from(command.envs(cluster.env("admin")).output().unwrap())
}

/// The agent commits a file holding its pod's name (its hostname), and completes.
const COMMIT_POD_NAME: &str = "hostname > pod-$(date +%s%N).txt && git add . && git -c user.name=pod -c user.email=pod@example.com commit -qm pooled && echo '<promise>COMPLETE</promise>'";

/// A warm pool of pods, its members' network rules installed as they start (the default
/// `network = "none"`): two idle members, three runs at once; two claim one member each, the
/// third starts cold and says why; every run's work lands, each from its own pod. A run with
/// other pod settings never claims a member, and `pool down` leaves no pod on the cluster.
#[test]
fn a_warm_pool_of_pods() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    let path = env.write_manifest(&manifest(COMMIT_POD_NAME, ""));
    let up = pool(cluster, &env, &["up", path.to_str().unwrap(), "--size", "2", "--no-refill", "--json"]);
    up.assert_code(0);
    let mut made: Vec<String> =
        up.json()["made"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().into()).collect();
    made.sort(); // made together: in the order they came up
    assert_eq!(made.len(), 2, "{}", up.stdout);
    assert_eq!(up.json()["idle"], 2, "{}", up.stdout);
    let children: Vec<_> = (0..3)
        .map(|_| {
            let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
            command.envs(cluster.env("admin"));
            command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
            command.spawn().unwrap()
        })
        .collect();
    let runs: Vec<Run> = children.into_iter().map(|child| Run::from(child.wait_with_output().unwrap())).collect();
    let mut claimed = Vec::new();
    for run in &runs {
        run.assert_code(0);
        let name = run.record()["container"]["name"].as_str().unwrap().to_owned();
        if run.stderr.contains("claimed from the warm pool") {
            claimed.push(name);
        } else {
            assert!(run.stderr.contains("starting cold: the warm pool has no idle member left"), "{}", run.stderr);
            assert!(!made.contains(&name));
        }
    }
    claimed.sort();
    assert_eq!(claimed, made, "each member claimed once");
    let hosts: std::collections::HashSet<String> = std::fs::read_dir(&env.repo)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("pod-"))
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap().trim().to_owned())
        .collect();
    assert_eq!(hosts.len(), 3, "three pods: {hosts:?}");
    assert!(made.iter().all(|name| hosts.contains(name)), "{hosts:?}");
    assert!(cluster.pods(&env.repo).is_empty(), "each pod went with its run");

    let up = pool(cluster, &env, &["up", path.to_str().unwrap(), "--size", "1", "--no-refill"]);
    up.assert_code(0);
    let mut other = env.eden_command(&["run", path.to_str().unwrap(), "--set", "sandbox.memory=256m"]);
    let other = Run::from(other.envs(cluster.env("admin")).output().unwrap());
    other.assert_code(0);
    assert!(
        other.stderr.contains("no warm pool of this repository was made with this run's pod settings"),
        "{}",
        other.stderr
    );
    assert_eq!(cluster.pods(&env.repo).len(), 1, "the member waits on");
    let down = pool(cluster, &env, &["down"]);
    down.assert_code(0);
    assert!(down.stderr.contains("removed eden-pool-"), "{}", down.stderr);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !cluster.pods(&env.repo).is_empty() {
        assert!(std::time::Instant::now() < deadline, "pool down leaves no pod");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// eden killed while its run holds a claimed pod: its guard saves what the pod holds and
/// deletes it, and the pool never hands it out again (the next run starts cold).
#[test]
fn a_pod_claimed_by_a_dead_eden_is_never_reused() {
    let Some(cluster) = cluster() else { return };
    let env = TestEnv::new();
    // `start_waiting`'s manifest, pooled.
    let script = "echo c > c.txt && git add c.txt && git -c user.name=pod -c user.email=pod@example.com commit -qm killed && echo half > half.txt && echo ready; sleep 300";
    let path = env.write_manifest(&manifest(script, "").replace("idle_timeout = \"60s\"", "idle_timeout = \"10m\""));
    pool(cluster, &env, &["up", path.to_str().unwrap(), "--size", "1", "--no-refill"]).assert_code(0);
    let member = cluster.pods(&env.repo);
    assert_eq!(member.len(), 1);
    let mut child = start_waiting(cluster, &env);
    assert_eq!(cluster.pods(&env.repo), member, "the member is the run's pod");
    child.kill().unwrap();
    let _ = child.wait();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while cluster.has(&member[0]) {
        assert!(std::time::Instant::now() < deadline, "the guard deletes the claimed pod");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let saved: Vec<String> = std::fs::read_dir(env.repo.join(".eden/patches"))
        .map(|dir| dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(saved.iter().any(|name| name.ends_with(".salvaged.patch")), "{saved:?}");
    // Another agent command, the same pod settings: the same pool, which has nothing left.
    let next = env.root().join("next.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace("echo half > half.txt && ", "").replace("sleep 300", "echo '<promise>COMPLETE</promise>'");
    std::fs::write(&next, text).unwrap();
    let mut command = env.eden_command(&["run", next.to_str().unwrap()]);
    let next = Run::from(command.envs(cluster.env("admin")).output().unwrap());
    next.assert_code(0);
    assert!(next.stderr.contains("starting cold: the warm pool has no idle member left"), "{}", next.stderr);
    pool(cluster, &env, &["down"]).assert_code(0);
}
