//! `kubernetes`: one pod per run on the person's cluster, reached with their own `kubectl`
//! (their kubeconfig, `KUBECONFIG`, the current context or `sandbox.context`). `kubectl` and not
//! a Rust client: it is what the person already has and trusts with their credentials (exec
//! plugins, cloud logins, proxies), it speaks the exec subresource's streaming protocol
//! (SPDY/WebSocket) that a lean client would have to reimplement, and it keeps eden's
//! dependency tree small.
//!
//! A pod shares no files with this machine, so everything crosses `kubectl exec -i` as it does
//! for a remote engine (`repository`: the history packed into the seeded `.git`, commits back
//! as a checked bundle, uncommitted work as a checked patch; the agent's state folders as tar
//! streams, read back as hostile input by `unpack`). Its workspace and state folders are
//! `emptyDir` volumes at the paths the agent is pointed at. `kubectl exec` has no way to pass
//! an environment, so a command's variables travel as a file written through the channel
//! (never on a command line) that the command's wrapper reads and removes. The pod carries a
//! deadline (`activeDeadlineSeconds`), so it ends even if eden and its guard both die. A run may
//! claim a pod made ahead instead (`pool`, asked by `provider`), whose workspace the seed makes.

mod pool;
mod rules;
mod services;

mod provider;

use crate::error::Error;
use crate::layout::{LABEL_BASE, LABEL_BRANCH, LABEL_PID, LABEL_REPO, LABEL_RUN, LABEL_WORKSPACE};
use crate::manifest::plan::PodPlan;
use crate::process::{ProcessBuilder, Stdin};
use crate::sandbox::agent_state::PrivateState;
use crate::sandbox::carry::{self, first_line, EDEN_INSIDE};
use crate::sandbox::engine::kubectl_reason;
use crate::sandbox::ledger::Ledger;
use crate::sandbox::repository::{self, Channel};
use crate::sandbox::{Prepared, RunSite, SandboxHandle};
pub(crate) use provider::{Provider, KIND};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Pid files and environment files of running commands, inside the pod.
const EXEC_DIR: &str = "/tmp/.eden-exec";

/// `sh -c WRAPPER sh ENV PIDFILE CWD PROGRAM ARGS...`: takes the command's variables (ENV `-`:
/// none; `<MARK`: on its stdin, up to a line MARK, ahead of the command's own input; otherwise
/// a file, read and removed), goes to its directory, and runs the command as every sandbox's
/// commands are (RUN: `carry::run_and_sweep`, its pid written to PIDFILE). `read` takes a pipe
/// a byte at a time, so the command's input starts right after the mark.
const WRAPPER: &str = r#"case $1 in
-) ;;
"<"*) eden_mark=${1#<}; eden_vars=; eden_nl='
'; while IFS= read -r eden_line; do [ "$eden_line" = "$eden_mark" ] && break; eden_vars=$eden_vars$eden_line$eden_nl; done; eval "$eden_vars"; unset eden_mark eden_vars eden_line eden_nl;;
*) . "$1"; rm -f "$1";;
esac
pid_file=$2; cd "$3" || exit 127; shift 3; RUN"#;

/// The workspace's folder is the pod volume's, owned by root, and the pod's user is not root:
/// git inside is told the repository there is to be trusted, per command (never through a
/// configuration file in the pod, which the agent could change).
const GIT_SAFE_DIRECTORY: [(&str, &str); 1] = [("safe.directory", "*")];

/// `sh -c SALVAGE_WRAPPER CWD env NAME=VALUE... PROGRAM ARGS...`: a salvage's command, in CWD,
/// with its variables (git's settings for eden's own scripts, git trusting the workspace:
/// `GIT_SAFE_DIRECTORY`; no secret ever goes this way).
const SALVAGE_WRAPPER: &str = r#"cd "$0" && exec "$@""#;

/// The `kubectl` that reaches the run's cluster and namespace.
#[derive(Debug, Clone)]
pub(crate) struct Kube {
    context: Option<String>,
    namespace: Option<String>,
}

impl Kube {
    pub(crate) fn new(plan: &PodPlan) -> Kube {
        Kube { context: plan.context.clone(), namespace: plan.namespace.clone() }
    }

    fn command(&self) -> ProcessBuilder {
        ProcessBuilder::new("kubectl")
            .option("--context", self.context.as_deref())
            .option("--namespace", self.namespace.as_deref())
    }

    /// `CONTEXT/NAMESPACE` as the record and messages show them (`-` for the defaults).
    pub(crate) fn describe(&self) -> String {
        format!("{}/{}", self.context.as_deref().unwrap_or("-"), self.namespace.as_deref().unwrap_or("-"))
    }

    /// The guard's arguments: `kubernetes CONTEXT NAMESPACE` (`-` for a default).
    fn to_args(&self) -> Vec<String> {
        vec![
            "kubernetes".into(),
            self.context.clone().unwrap_or("-".into()),
            self.namespace.clone().unwrap_or("-".into()),
        ]
    }

    /// The cluster a record names (`CONTEXT/NAMESPACE`, as `describe` wrote it).
    pub(crate) fn from_described(text: &str) -> Option<Kube> {
        let (context, namespace) = text.split_once('/')?;
        let given = |value: &str| (value != "-" && !value.is_empty()).then(|| value.to_owned());
        Some(Kube { context: given(context), namespace: given(namespace) })
    }

    pub(crate) fn from_args(args: &[std::ffi::OsString]) -> Option<Kube> {
        let text = |n: usize| args.get(n)?.to_str().map(str::to_owned);
        if text(0)? != "kubernetes" {
            return None;
        }
        let given = |value: String| (value != "-").then_some(value);
        Some(Kube { context: given(text(1)?), namespace: given(text(2)?) })
    }
}

fn run(command: ProcessBuilder) -> Result<crate::process::Output, Error> {
    let command = command.timeout(crate::sandbox::ENGINE_CALL);
    command.output().map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))
}

/// Checks that need no pod: kubectl is there, the cluster answers, and the person may make
/// pods in the namespace. Each failure in the person's terms, exit 6.
pub(crate) fn preflight(plan: &PodPlan) -> Result<(), Error> {
    if which::which("kubectl").is_err() {
        return Err(Error::sandbox("`kubectl` is not installed (sandbox kind `kubernetes`)")
            .with_hint("install kubectl and point it at your cluster (`kubectl get pods` should work)"));
    }
    let kube = Kube::new(plan);
    let asked = run(kube.command().args(["auth", "can-i", "create", "pods"]))?;
    let answer = asked.stdout.trim();
    if answer == "yes" {
        return Ok(());
    }
    if answer == "no" {
        return Err(Error::sandbox(format!("the cluster does not let you create pods in namespace `{}`", plan.namespace.as_deref().unwrap_or("(the context's)")))
            .with_hint("use a namespace you may create pods in (`sandbox.namespace`), or ask for that permission (`kubectl auth can-i create pods`)"));
    }
    let why = kubectl_reason(&asked.stderr);
    let lower = asked.stderr.to_lowercase();
    let hint = if lower.contains("localhost:8080")
        || lower.contains("config not found")
        || lower.contains("no configuration")
    {
        "kubectl has no kubeconfig: set `KUBECONFIG` or write `~/.kube/config` (`kubectl config view` shows what it reads)"
    } else if lower.contains("context") && lower.contains("does not exist") {
        "`kubectl config get-contexts` lists the contexts; fix `sandbox.context`"
    } else {
        "the cluster's API server does not answer: check `kubectl cluster-info`, the network, and that your credentials are current"
    };
    Err(Error::sandbox(format!("kubectl cannot reach the cluster: {why}")).with_hint(hint))
}

pub(crate) struct Pod {
    kube: Kube,
    name: String,
    uid: String,
    node: String,
    image: String,
    ledger: Ledger,
    next_exec: AtomicU64,
    states: Vec<PrivateState>,
    eden_inside: AtomicBool,
    /// Programs already found in the image.
    found: carry::Found,
    guard: Option<crate::process::guard::Guard>,
    /// The way to the held keys' proxy (`proxy::tunnel`), and its pid inside, which sweeps spare.
    tunnel: Option<crate::proxy::tunnel::Tunnel>,
    /// The NetworkPolicy made for the pod (it goes with the pod), if the cluster took it.
    network_policy: Option<String>,
    removed: bool,
}

/// A pod made for a run or a pool: its name, uid and node (known once it runs).
pub(super) struct Member {
    pub(super) name: String,
    pub(super) uid: String,
    pub(super) node: String,
}

/// The run's pod, claimed from a warm pool (`pool::claim`): what the run brings goes in, and
/// the workspace is made by the seed. Deleted if that fails.
pub(super) fn start_claimed(
    plan: &PodPlan,
    site: &RunSite,
    base: String,
    member: Member,
) -> Result<Box<dyn SandboxHandle>, Error> {
    let kube = Kube::new(plan);
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
    let mut pod = Pod::new(plan, site, &kube, member, base);
    pod.guard = guard(&eden, &kube, site, &pod.name);
    if rules::has_rules(plan) {
        pod.network_policy = make_network_policy(&kube, plan, &pod.name, &pod.uid, site);
    }
    match pod.bring_in(site, Some(":")) {
        Ok(()) => Ok(Box::new(pod)),
        Err(err) => {
            let _ = pod.delete();
            Err(err)
        }
    }
}

/// Start the run's own pod, wait until it runs, and seed it. Anything that fails after the pod
/// exists deletes it.
pub(super) fn start(plan: &PodPlan, site: &RunSite, base: String) -> Result<Box<dyn SandboxHandle>, Error> {
    let kube = Kube::new(plan);
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
    let name = format!("eden-{}", site.run_id);
    let spec = pod_spec(plan, site, &name, &base);
    services::create_secret(&|| kube.command(), plan, &name, &pod_labels(site))?;
    let created = run(kube
        .command()
        .args(["create", "-f", "-", "-o", "jsonpath={.metadata.uid}"])
        .stdin(Stdin::Bytes(spec.to_string().into_bytes())));
    let created = created.and_then(|created| match created.success() {
        true => Ok(created),
        false => Err(Error::sandbox(format!("the cluster refused the pod: {}", kubectl_reason(&created.stderr)))
            .with_hint("see the cluster's message; `--dry-run` shows the pod's settings")),
    });
    let created = created.inspect_err(|_| services::delete_secret(&|| kube.command(), &name))?;
    let made = Member { name: name.clone(), uid: created.stdout.trim().to_owned(), node: String::new() };
    let mut pod = Pod::new(plan, site, &kube, made, base);
    pod.guard = guard(&eden, &kube, site, &name);
    if rules::has_rules(plan) {
        pod.network_policy = make_network_policy(&kube, plan, &name, &pod.uid, site);
    }
    let set_up = services::own_secret(&|| kube.command(), plan, &name, &pod.uid).and_then(|()| pod.set_up(plan, site));
    match set_up {
        Ok(()) => Ok(Box::new(pod)),
        Err(err) => {
            let _ = pod.delete();
            Err(err)
        }
    }
}

/// The salvage a guard runs if eden dies with the pod still there.
fn guard(eden: &Path, kube: &Kube, site: &RunSite, name: &str) -> Option<crate::process::guard::Guard> {
    let salvage = ProcessBuilder::new(eden)
        .arg(crate::sandbox::SALVAGE_SUBCOMMAND)
        .args(kube.to_args())
        .arg(&site.repo_root)
        .arg(&site.run_id)
        .arg(name);
    crate::process::guard::Guard::start(&salvage).ok()
}

/// The pod's NetworkPolicy (`pod_rules::network_policy`), for clusters that enforce them: its
/// name, or `None` where the cluster would not take it (no permission, no such API). The rules
/// in the pod's namespace hold either way.
fn make_network_policy(kube: &Kube, plan: &PodPlan, name: &str, uid: &str, site: &RunSite) -> Option<String> {
    let labels = pod_labels(site);
    let selector = serde_json::json!({"eden.run": labels["eden.run"]});
    let policy = rules::network_policy(plan, name, uid, &selector).ok()?;
    let created = run(kube
        .command()
        .args(["create", "-f", "-", "-o", "name"])
        .stdin(Stdin::Bytes(policy.to_string().into_bytes())))
    .ok()?;
    created.success().then(|| name.to_owned())
}

/// The pod's labels (Kubernetes' spelling of the run's and branch's names).
fn pod_labels(site: &RunSite) -> serde_json::Value {
    let label = |text: &str| {
        let clean: String =
            text.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect();
        clean.trim_matches(|c: char| !c.is_ascii_alphanumeric()).chars().take(63).collect::<String>()
    };
    serde_json::json!({"eden.run": label(&site.run_id), "eden.branch": label(&site.branch), "app.kubernetes.io/managed-by": "eden"})
}

/// The pod: the image's keep-alive as the run's user, the workspace and state folders as
/// `emptyDir`s at their paths, the limits as requests and limits, the deadline.
fn pod_spec(plan: &PodPlan, site: &RunSite, name: &str, base: &str) -> serde_json::Value {
    let (mounts, volumes) = volumes(&places(site));
    let container = agent_container(plan, mounts, &site.worktree, serde_json::json!(["tail", "-f", "/dev/null"]));
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": pod_labels(site),
            "annotations": run_annotations(site, base),
        },
        "spec": spec_body(plan, name, container, volumes, plan.deadline.as_secs().max(1)),
    })
}

/// What a pod of a run says of it: its run, repository, branch, eden, workspace and base.
fn run_annotations(site: &RunSite, base: &str) -> serde_json::Value {
    serde_json::json!({
        LABEL_RUN: site.run_id,
        LABEL_REPO: site.repo_root.display().to_string(),
        LABEL_BRANCH: site.branch,
        LABEL_PID: std::process::id().to_string(),
        LABEL_WORKSPACE: site.worktree.display().to_string(),
        LABEL_BASE: base,
    })
}

/// A pod's `spec`: its agent container (and services, and the rules' init container), hardened,
/// placed, ending `deadline` seconds after it starts.
fn spec_body(
    plan: &PodPlan,
    name: &str,
    container: serde_json::Value,
    volumes: Vec<serde_json::Value>,
    deadline: u64,
) -> serde_json::Value {
    let tolerations: Vec<serde_json::Value> = plan
        .tolerations
        .iter()
        .map(|t| serde_json::json!({"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect, "tolerationSeconds": t.toleration_seconds}))
        .map(|mut value| {
            value.as_object_mut().expect("an object").retain(|_, v| !v.is_null());
            value
        })
        .collect();
    let mut spec = serde_json::json!({
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "activeDeadlineSeconds": deadline,
        "automountServiceAccountToken": plan.service_account.is_some(),
        // Every service's address in the agent's environment: not handed over.
        "enableServiceLinks": false,
        "securityContext": {
            "runAsUser": plan.run_as.0,
            "runAsGroup": plan.run_as.1,
            "fsGroup": plan.run_as.1,
            "runAsNonRoot": true,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": volumes,
    });
    if let Some(containers) = spec["containers"].as_array_mut() {
        containers.extend(services::containers(plan, name));
    }
    if let Some(aliases) = services::host_aliases(plan) {
        spec["hostAliases"] = aliases;
    }
    if rules::has_rules(plan) {
        let eden_folder = Path::new(EDEN_INSIDE).parent().expect("a folder");
        let mount = serde_json::json!({"name": "eden", "mountPath": eden_folder});
        spec["initContainers"] = serde_json::json!([rules::init_container(plan, mount)]);
    }
    if let Some(account) = &plan.service_account {
        spec["serviceAccountName"] = serde_json::json!(account);
    }
    if let Some(class) = &plan.runtime_class {
        spec["runtimeClassName"] = serde_json::json!(class);
    }
    if !plan.node_selector.is_empty() {
        spec["nodeSelector"] = serde_json::json!(plan.node_selector);
    }
    if !tolerations.is_empty() {
        spec["tolerations"] = serde_json::json!(tolerations);
    }
    spec
}

/// The pod's one container: `command` in `working_dir`, with the pod's volumes and the plan's
/// limits as requests and limits. No capability, no privilege to gain, never root: the
/// "restricted" Pod Security Standard (the pod adds the runtime's seccomp profile).
fn agent_container(
    plan: &PodPlan,
    mounts: Vec<serde_json::Value>,
    working_dir: &Path,
    command: serde_json::Value,
) -> serde_json::Value {
    let mut resources = serde_json::Map::new();
    if let Some(cpus) = plan.cpus {
        resources.insert("cpu".into(), serde_json::json!(format!("{}m", (cpus * 1000.0).round() as u64)));
    }
    if let Some(memory) = plan.memory {
        resources.insert("memory".into(), serde_json::json!(memory.to_string()));
    }
    let mut container = serde_json::json!({
        "name": "agent",
        "image": plan.image,
        "command": command,
        "workingDir": working_dir,
        "volumeMounts": mounts,
        "resources": {"requests": resources, "limits": resources},
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": true,
        },
    });
    if let Some(policy) = plan.image_pull_policy {
        container["imagePullPolicy"] = serde_json::to_value(policy).expect("policies serialize");
    }
    container
}

/// Where a run's pod has `emptyDir`s: the workspace, eden's executable, each state folder, the
/// held keys' proxy folder.
fn places(site: &RunSite) -> Vec<(String, PathBuf)> {
    let eden_folder = Path::new(EDEN_INSIDE).parent().expect("a folder").to_owned();
    let mut places: Vec<(String, PathBuf)> =
        vec![("workspace".into(), site.worktree.clone()), ("eden".into(), eden_folder)];
    for (n, state) in site.agent_state.iter().enumerate() {
        places.push((format!("state-{n}"), state.value.clone()));
    }
    if site.proxy.is_some() {
        places.push(("proxy".into(), PathBuf::from(crate::sandbox::PROXY_INSIDE)));
    }
    places
}

/// The `emptyDir`s at `places`, and their mounts.
fn volumes(places: &[(String, PathBuf)]) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let mounts = places.iter().map(|(name, path)| serde_json::json!({"name": name, "mountPath": path})).collect();
    let volumes = places.iter().map(|(name, _)| serde_json::json!({"name": name, "emptyDir": {}})).collect();
    (mounts, volumes)
}

impl Pod {
    fn new(plan: &PodPlan, site: &RunSite, kube: &Kube, pod: Member, base: String) -> Pod {
        Pod {
            kube: kube.clone(),
            name: pod.name,
            uid: pod.uid,
            node: pod.node,
            image: plan.image.clone(),
            ledger: Ledger::new(site, base),
            next_exec: AtomicU64::new(0),
            states: site.agent_state.clone(),
            eden_inside: AtomicBool::new(false),
            found: Default::default(),
            guard: None,
            tunnel: None,
            network_policy: None,
            removed: false,
        }
    }

    fn set_up(&mut self, plan: &PodPlan, site: &RunSite) -> Result<(), Error> {
        let started = std::time::Instant::now();
        let rules = match rules::has_rules(plan) {
            true => Some(self.install_rules(plan, site, started)?),
            false => None,
        };
        self.node = self.wait_for(Stage::Running, started, plan.start_timeout)?.node;
        let made = run(self.exec_plain(ProcessBuilder::new("mkdir").args(["-p", EXEC_DIR]), false))?;
        if !made.success() {
            return Err(Error::sandbox(format!(
                "cannot prepare pod `{}` (image `{}`): {}",
                self.name,
                self.image,
                first_line(&made.stderr)
            ))
            .with_hint("the image must have `sh`, `mkdir`, `tar` and `git`, and a writable `/tmp`"));
        }
        if let Some(rules) = rules {
            rules::verify(&rules, &|command, stdin| self.exec_plain(command, stdin), &self.name)?;
        }
        services::wait_ready(&|| self.kube.command(), &self.name, &plan.services)?;
        self.bring_in(site, None)
    }

    /// What a run brings, into its running pod: the agent's state folders, the way to the held
    /// keys' proxy, the repository (`first`: the workspace is not there yet, and the seed makes
    /// it after that script, as in a claimed pool member).
    fn bring_in(&mut self, site: &RunSite, first: Option<&str>) -> Result<(), Error> {
        let exec = |command, stdin| self.exec_plain(command, stdin);
        carry::push_state(&self.states, &exec, None, "pod")?;
        if let Some(proxy) = &site.proxy {
            carry::copy_eden_in(&self.eden_inside, &exec, "pod")?;
            self.tunnel = Some(carry::tunnel_proxy(proxy, &exec, "pod")?);
        }
        let seed = repository::SeedRequest {
            host_worktree: &site.worktree,
            branch: &site.branch,
            scratch: &site.scratch,
            alternates: &[],
            separate_git_dir: None,
            first,
            ahead: None,
        };
        repository::seed(self, &seed).map(|_| ())
    }

    /// The network rules, from the init container while it waits (`pod_rules`).
    fn install_rules(
        &self,
        plan: &PodPlan,
        site: &RunSite,
        started: std::time::Instant,
    ) -> Result<rules::Installed, Error> {
        let pod = Ruled {
            kube: &self.kube,
            name: &self.name,
            image: &self.image,
            eden_inside: &self.eden_inside,
            network: plan.network,
            allow: &plan.allow,
            timeout: plan.start_timeout,
        };
        install_rules(&pod, &site.scratch, started)
    }

    /// Until the pod is at `stage`: where it landed. Stuck pulling its image, or pending past
    /// `timeout` since `started`, is an error that says why, as the cluster does.
    fn wait_for(
        &self,
        stage: Stage,
        started: std::time::Instant,
        timeout: std::time::Duration,
    ) -> Result<Landed, Error> {
        wait_for(&self.kube, &self.name, &self.image, stage, started, timeout)
    }

    /// `kubectl exec [-i] POD -c agent -- PROGRAM ARGS…`: `command` with no environment and
    /// in the image's working directory.
    fn exec_plain(&self, command: ProcessBuilder, stdin: bool) -> ProcessBuilder {
        self.exec_in("agent", command, stdin)
    }

    fn exec_in(&self, container: &str, command: ProcessBuilder, stdin: bool) -> ProcessBuilder {
        exec_in(&self.kube, &self.name, container, command, stdin)
    }

    /// The variables of `command`, as `export` lines for the wrapper (empty for none).
    fn env_text(command: &ProcessBuilder) -> String {
        let mut text = String::new();
        for (key, value) in command.get_env() {
            let (Some(key), Some(value)) = (key.to_str(), value.as_ref().and_then(|v| v.to_str())) else { continue };
            if key == "PWD" || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            text.push_str(&format!("export {key}='{}'\n", value.replace('\'', r"'\''")));
        }
        text
    }

    /// `text` written inside as the `n`th command's env file (its path).
    fn env_file(&self, text: String, n: u64) -> Result<String, Error> {
        let path = format!("{EXEC_DIR}/{n}.env");
        let write = self
            .exec_plain(ProcessBuilder::new("sh").args(["-c", r#"umask 077 && cat > "$0""#, &path]), true)
            .stdin(Stdin::Bytes(text.into_bytes()));
        let written = run(write)?;
        if !written.success() {
            return Err(Error::sandbox(format!(
                "cannot pass the command's environment into pod `{}`: {}",
                self.name,
                first_line(&written.stderr)
            )));
        }
        Ok(path)
    }

    /// `command` inside, as the pod's user, in its directory, with its environment, behind the
    /// wrapper; its stdin `stdin`. The environment goes ahead of what eden writes to the
    /// command's stdin itself (no exec of its own); a terminal's, or a stream piped in later
    /// (`pipe_into`, `stdin` `None`), gets it through a file written first.
    fn wrapped(&self, command: &ProcessBuilder, stdin: Option<Stdin>) -> Result<(ProcessBuilder, String), Error> {
        let n = self.next_exec.fetch_add(1, Ordering::SeqCst);
        let command = crate::git::with_config(command.clone(), &GIT_SAFE_DIRECTORY);
        let command = &command;
        let text = Pod::env_text(command);
        let (env, stdin) = match stdin {
            _ if text.is_empty() => ("-".to_owned(), stdin),
            Some(Stdin::Null) => {
                let mark = mark()?;
                (format!("<{mark}"), Some(Stdin::Bytes(format!("{text}{mark}\n").into_bytes())))
            }
            Some(Stdin::Bytes(bytes)) => {
                let mark = mark()?;
                let mut all = format!("{text}{mark}\n").into_bytes();
                all.extend(bytes);
                (format!("<{mark}"), Some(Stdin::Bytes(all)))
            }
            stdin => (self.env_file(text, n)?, stdin),
        };
        let pid_file = format!("{EXEC_DIR}/{n}.pid");
        let cwd = command
            .get_cwd()
            .map(|cwd| cwd.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.ledger.worktree().to_string_lossy().into_owned());
        let note = match stdin {
            Some(Stdin::Terminal { .. }) => String::new(),
            _ => carry::tip_note(self.ledger.worktree(), self.ledger.branch()),
        };
        let script = WRAPPER.replace("RUN", &carry::run_and_sweep(r#""$pid_file""#, &self.keep(), &note));
        let flags: &[&str] = match stdin {
            Some(Stdin::Null) => &[],
            // A terminal inside, sized and resized by kubectl from ours.
            Some(Stdin::Terminal { tty: true }) => &["-i", "-t"],
            _ => &["-i"],
        };
        let exec = self.kube.command().arg("exec").args(flags);
        let mut exec = exec
            .args([self.name.as_str(), "-c", "agent", "--", "sh", "-c", &script, "sh"])
            .arg(&env)
            .arg(&pid_file)
            .arg(&cwd)
            .arg(command.program())
            .args(command.get_args());
        if let Some(stdin) = stdin {
            exec = exec.stdin(stdin);
        }
        Ok((exec, pid_file))
    }

    /// What sweeps spare besides the keep-alive: the tunnel.
    fn keep(&self) -> String {
        self.tunnel.as_ref().map_or_else(|| "1".to_owned(), |tunnel| tunnel.pid_inside().to_string())
    }

    fn delete(&mut self) -> Result<(), Error> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        self.tunnel = None;
        let _ = crate::safe_fs::remove_tree(self.ledger.scratch());
        delete_pod(&self.kube, &self.name)?;
        services::delete_secret(&|| self.kube.command(), &self.name);
        self.guard = None;
        Ok(())
    }
}

/// A pod whose network rules are to be installed: the rules of `network` (its `allow` list),
/// waited for up to `timeout`.
struct Ruled<'a> {
    kube: &'a Kube,
    name: &'a str,
    image: &'a str,
    eden_inside: &'a AtomicBool,
    network: crate::manifest::schema::Network,
    allow: &'a [crate::manifest::plan::AllowEntry],
    timeout: std::time::Duration,
}

/// The pod's network rules, from its init container while it waits (`pod_rules`), with the
/// helper files in `scratch`.
fn install_rules(pod: &Ruled<'_>, scratch: &Path, started: std::time::Instant) -> Result<rules::Installed, Error> {
    let (kube, name) = (pod.kube, pod.name);
    let waiting = wait_for(kube, name, pod.image, Stage::Init, started, pod.timeout)?;
    let rules = |command, stdin| exec_in(kube, name, rules::RULES_CONTAINER, command, stdin);
    let helper = exec_in(kube, name, rules::RULES_CONTAINER, ProcessBuilder::new("sh"), true);
    // Asked a few times: the cluster may not have noted the end yet.
    let init_succeeded = || {
        let path = "jsonpath={.status.initContainerStatuses[0].state.terminated.exitCode}";
        (0..20).any(|_| {
            let got = run(kube.command().args(["get", "pod", name, "-o", path]));
            let ended = got.is_ok_and(|got| got.success() && got.stdout.trim() == "0");
            if !ended {
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            ended
        })
    };
    let waiting = rules::WaitingPod {
        name,
        host_ip: waiting.host_ip,
        rules: &rules,
        helper,
        eden_inside: pod.eden_inside,
        scratch,
        init_succeeded: &init_succeeded,
    };
    rules::install(&waiting, pod.network, pod.allow)
}

/// `kubectl exec [-i] POD -c CONTAINER -- PROGRAM ARGS…`.
fn exec_in(kube: &Kube, name: &str, container: &str, command: ProcessBuilder, stdin: bool) -> ProcessBuilder {
    let mut exec = kube.command().arg("exec");
    if stdin {
        exec = exec.arg("-i");
    }
    exec.args([name, "-c", container, "--"]).arg(command.program()).args(command.get_args())
}

/// Until pod `name` is at `stage`: where it landed. Stuck pulling its image (`image`, as the
/// plan names it), or pending past `timeout` since `started`, is an error that says why, as the
/// cluster does.
fn wait_for(
    kube: &Kube,
    name: &str,
    image: &str,
    stage: Stage,
    started: std::time::Instant,
    timeout: std::time::Duration,
) -> Result<Landed, Error> {
    loop {
        if crate::process::stopping() {
            return Err(Error::interrupted(crate::process::signal_received().unwrap_or(crate::exit::Signal::INT)));
        }
        let got = run(kube.command().args(["get", "pod", name, "-o", "json"]))?;
        let pod: serde_json::Value = serde_json::from_str(&got.stdout).unwrap_or_default();
        let phase = pod["status"]["phase"].as_str().unwrap_or("");
        let landed = Landed {
            node: pod["spec"]["nodeName"].as_str().unwrap_or("").to_owned(),
            host_ip: pod["status"]["hostIP"].as_str().and_then(|ip| ip.parse().ok()),
        };
        let statuses = match stage {
            Stage::Init => "initContainerStatuses",
            Stage::Running => "containerStatuses",
        };
        // The first container stuck on its image or configuration (a service's too), else the first.
        let all = pod["status"][statuses].as_array().cloned().unwrap_or_default();
        let stuck =
            all.iter().find(|status| STUCK.contains(&status["state"]["waiting"]["reason"].as_str().unwrap_or("")));
        let status = stuck.or(all.first()).cloned().unwrap_or_default();
        let state = &status["state"];
        let waiting = &state["waiting"];
        let reason = waiting["reason"].as_str().unwrap_or("");
        let image = status["image"].as_str().unwrap_or(image);
        let service = status["name"].as_str().and_then(|name| name.strip_prefix("svc-"));
        let whose = service.map(|name| format!("service `{name}`'s ")).unwrap_or_default();
        let there = match stage {
            Stage::Init => state["running"].is_object(),
            Stage::Running => phase == "Running",
        };
        if there {
            return Ok(landed);
        }
        if STUCK[..4].contains(&reason) {
            return Err(Error::sandbox(format!("the cluster cannot get {whose}image `{image}` for the pod ({reason}: {})", waiting["message"].as_str().unwrap_or("")))
                    .with_hint("push the image where the cluster's nodes pull from, or load it on the node; `sandbox.image_pull_policy` says when nodes pull"));
        }
        if ["Failed", "Succeeded"].contains(&phase)
            || reason == "CreateContainerConfigError"
            || reason == "CreateContainerError"
        {
            return Err(Error::sandbox(format!(
                "the pod did not start ({}): {}",
                if reason.is_empty() { phase } else { reason },
                waiting["message"].as_str().or(pod["status"]["message"].as_str()).unwrap_or("")
            ))
            .with_hint("`kubectl describe pod` shows the cluster's events (eden deleted the pod)"));
        }
        if started.elapsed() >= timeout {
            return Err(not_running(&pod, phase, reason, timeout));
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// A container's waiting reasons that do not pass: its image (the first four), its configuration.
const STUCK: [&str; 6] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// How far `wait_for` waits: the rules' init container running, or the pod.
#[derive(Clone, Copy)]
enum Stage {
    Init,
    Running,
}

/// Where the pod landed: its node's name and address.
struct Landed {
    node: String,
    host_ip: Option<std::net::Ipv4Addr>,
}

/// Not running after `timeout`: the scheduler's reason, or the phase.
fn not_running(pod: &serde_json::Value, phase: &str, reason: &str, timeout: std::time::Duration) -> Error {
    let scheduled = pod["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "PodScheduled" && c["status"] == "False"))
        .map(|c| format!("{}: {}", c["reason"].as_str().unwrap_or(""), c["message"].as_str().unwrap_or("")));
    let why = scheduled.unwrap_or_else(|| {
        format!("phase {phase}{}", if reason.is_empty() { String::new() } else { format!(", {reason}") })
    });
    Error::sandbox(format!("the pod was not running after {} ({why})", crate::values::format_duration(timeout)))
        .with_hint("the scheduler's reason is above; check `sandbox.node_selector`, `tolerations` and the requests, or raise `sandbox.start_timeout`")
}

/// A line no environment holds: ends the variables the wrapper reads from stdin.
fn mark() -> Result<String, Error> {
    let random =
        crate::values::random_hex(16).map_err(|err| Error::sandbox(format!("cannot read /dev/urandom: {err}")))?;
    Ok(format!("eden-env-{random}"))
}

/// Delete a pod now (its processes killed at once). Gone already is fine.
fn delete_pod(kube: &Kube, name: &str) -> Result<(), Error> {
    delete_pods(kube, &[name])
}

/// Delete pods now (their processes killed at once). Gone already is fine.
fn delete_pods(kube: &Kube, names: &[&str]) -> Result<(), Error> {
    if names.is_empty() {
        return Ok(());
    }
    let output = run(kube
        .command()
        .finishing()
        .args(["delete", "pod", "--grace-period=0", "--force", "--wait=false", "--ignore-not-found"])
        .args(names))?;
    if output.success() {
        return Ok(());
    }
    Err(Error::sandbox(format!("cannot delete pod `{}`: {}", names.join("`, `"), first_line(&output.stderr))))
}

impl Channel for Pod {
    fn inside(&self, command: ProcessBuilder) -> Result<ProcessBuilder, Error> {
        // The transport's scripts carry no secrets; their few settings go through the file too.
        self.wrapped(&command, None).map(|(exec, _)| exec)
    }

    fn workspace(&self) -> &Path {
        self.ledger.worktree()
    }
}

impl SandboxHandle for Pod {
    fn workspace_git(&self, args: &[&str]) -> Option<Result<crate::process::Output, Error>> {
        Some(crate::sandbox::repository::workspace_git(self, args))
    }

    fn artifacts(
        &self,
        request: &crate::sandbox::artifacts::ArtifactRequest<'_>,
    ) -> Result<crate::sandbox::artifacts::Collected, Error> {
        carry::copy_eden_in(&self.eden_inside, &|command, stdin| self.exec_plain(command, stdin), "pod")?;
        let channel: &dyn Channel = self;
        let inside = crate::sandbox::artifacts::EdenInside {
            inside: &|command| channel.inside(command),
            eden: Path::new(EDEN_INSIDE),
            workspace: channel.workspace(),
        };
        crate::sandbox::artifacts::collect(&inside, request)
    }

    fn kind(&self) -> &'static str {
        "kubernetes"
    }

    fn container(&self) -> Option<crate::record::ContainerRecord> {
        Some(crate::record::ContainerRecord {
            engine: crate::record::SandboxEngine::Kubernetes,
            host: Some(self.kube.describe()),
            name: self.name.clone(),
            id: self.uid.clone(),
            image: self.image.clone(),
            node: Some(self.node.clone()),
            network_policy: self.network_policy.clone(),
        })
    }

    fn state_env(&self) -> Vec<(&'static str, PathBuf)> {
        self.states.iter().map(|state| (state.var, state.value.clone())).collect()
    }

    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error> {
        self.ledger.note_used();
        let mut command = command;
        let stdin = command.take_stdin();
        if carry::runs_eden(&command) {
            carry::copy_eden_in(&self.eden_inside, &|command, stdin| self.exec_plain(command, stdin), "pod")?;
            let args = command.get_args().to_vec();
            command = command.with_program(EDEN_INSIDE, args);
        }
        let sandbox = format!("pod `{}`", self.name);
        let exec = |command, stdin| self.exec_plain(command, stdin);
        for program in std::iter::once(command.program()).chain(carry::relayed_program(&command)) {
            carry::check_program(&self.found, &exec, program, &sandbox)?;
        }
        let (exec, pid_file) = self.wrapped(&command, Some(stdin))?;
        let (kube, name) = (self.kube.clone(), self.name.clone());
        let inside = carry::InsideSandbox {
            exec: Box::new(move |argv| kube.command().args(["exec", &name, "-c", "agent", "--"]).args(argv)),
            pid_file,
            keep: self.keep(),
            gone: None,
        };
        Ok(Prepared { command: exec, inside: Some(Box::new(inside)) })
    }

    fn sync(&self, reported_tip: Option<&str>) -> Result<Option<String>, Error> {
        self.ledger.sync(self, reported_tip, false)?;
        Ok(None)
    }

    fn bring_state_back(&self) -> Result<(), Error> {
        let scratch = self.ledger.scratch();
        let limit = self.ledger.limit();
        carry::pull_state(&self.states, &|command, stdin| self.exec_plain(command, stdin), scratch, "pod", limit)
    }

    fn close(&mut self) -> Result<Option<String>, Error> {
        if self.removed {
            return Ok(None);
        }
        let brought = self.ledger.bring_home(self, false);
        self.delete()?;
        brought
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// A pod known by its annotations only (its eden is gone), for salvage.
struct Annotated {
    kube: Kube,
    name: String,
    workspace: PathBuf,
}

impl Channel for Annotated {
    fn inside(&self, command: ProcessBuilder) -> Result<ProcessBuilder, Error> {
        let cwd = command
            .get_cwd()
            .map(|cwd| cwd.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.workspace.to_string_lossy().into_owned());
        let command = crate::git::with_config(command, &GIT_SAFE_DIRECTORY);
        let env = command.get_env().iter().filter_map(|(key, value)| {
            let value = value.as_ref()?;
            Some(format!("{}={}", key.to_string_lossy(), value.to_string_lossy()))
        });
        Ok(self
            .kube
            .command()
            .args(["exec", "-i", &self.name, "-c", "agent", "--", "sh", "-c", SALVAGE_WRAPPER, &cwd, "env"])
            .args(env.collect::<Vec<_>>())
            .arg(command.program())
            .args(command.get_args()))
    }

    fn workspace(&self) -> &Path {
        &self.workspace
    }
}

/// Is there a pod `name` (not already being deleted)?
pub(crate) fn exists(kube: &Kube, name: &str) -> Result<bool, Error> {
    let got = run(kube.command().args(["get", "pod", name, "--ignore-not-found", "-o", "json"]))?;
    if !got.success() {
        return Err(Error::sandbox(format!(
            "kubectl cannot look for pod `{name}` ({}): {}",
            kube.describe(),
            kubectl_reason(&got.stderr)
        )));
    }
    let pod: serde_json::Value = serde_json::from_str(&got.stdout).unwrap_or_default();
    Ok(pod["metadata"]["name"].is_string() && pod["metadata"]["deletionTimestamp"].is_null())
}

/// Saves what a killed run's pod holds (as `<repo>/.eden/patches/<run>.salvaged.*`), then
/// deletes it. `repo` and `run_id` come from eden (the guard's arguments, or a record): a pod's
/// annotations can be changed from inside it when it has a service account, so they only say
/// where to look inside the pod (branch, workspace, base), never where to write on this machine.
pub(crate) fn salvage_and_delete(kube: &Kube, name: &str, repo: &Path, run_id: &str) -> Result<Vec<PathBuf>, Error> {
    let got = run(kube.command().args(["get", "pod", name, "-o", "json"]))?;
    let pod: serde_json::Value = serde_json::from_str(&got.stdout).unwrap_or_default();
    let notes = &pod["metadata"]["annotations"];
    let note = |key: &str| notes[key].as_str().unwrap_or("").to_owned();
    let (branch, workspace, base) = (note(LABEL_BRANCH), note(LABEL_WORKSPACE), note(LABEL_BASE));
    let mut saved = Vec::new();
    let plain = !run_id.is_empty() && run_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if got.success() && pod["status"]["phase"] == "Running" && plain && !workspace.is_empty() {
        let patches = crate::layout::Layout::new(repo, repo.join(".git")).patches();
        let channel = Annotated { kube: kube.clone(), name: name.to_owned(), workspace: PathBuf::from(workspace) };
        saved = repository::salvage(&channel, &branch, &base, &patches, run_id, crate::sandbox::DEFAULT_MAX_RETURN);
    }
    delete_pod(kube, name)?;
    services::delete_secret(&|| kube.command(), name);
    Ok(saved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_finds_the_cluster_again() {
        let kube = Kube { context: Some("prod".into()), namespace: None };
        let args: Vec<std::ffi::OsString> = kube.to_args().into_iter().map(Into::into).collect();
        let back = Kube::from_args(&args).unwrap();
        assert_eq!((back.context.as_deref(), back.namespace.as_deref()), (Some("prod"), None));
        assert_eq!(back.describe(), "prod/-");
        assert!(Kube::from_args(&["docker".into()]).is_none());
    }
}
