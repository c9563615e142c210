//! A warm pool of pods: `eden pool up` with a `kubernetes` manifest makes idle pods with the
//! run's pod settings (image, user, limits, placement, runtime class) and nothing of any run:
//! no repository, environment, key or state. Their `emptyDir`s are at the repository's
//! worktrees folder and agent-state folder (where every run's workspace and state folders go),
//! eden's folder and the proxy's folder, so a run's files arrive after the claim, through the
//! channel, as they do for any pod.
//!
//! A pod cannot be renamed: a claim is a patch of the member's labels and annotations to the
//! run's (and its deadline to the run's), with the member's `resourceVersion` as the
//! precondition, so two claims of one member cannot both succeed; claims are also one at a
//! time in the repository, under `.eden/pool/kubernetes/<key>.lock`. The pool's file names its
//! members (eden made them): a claimed one leaves the list, and from then on the run's record
//! names it (`eden clean` and the guard find it there, as any run's pod). Nothing is trusted
//! from a pod's labels alone.
//!
//! An idle member waits in `IDLE_SCRIPT` until a claim makes its workspace in the worktrees
//! folder or its idle time is up (it exits; `eden pool` and `eden clean` delete it). Its
//! `activeDeadlineSeconds` is its idle time and the plan's deadline, brought down to the run's
//! own deadline at the claim (Kubernetes lets a deadline be lowered, never raised). A pool of
//! pods holds no network rules and no services: those are made per run.

use super::{agent_container, pod_labels, rules, run, run_annotations, spec_body, volumes, Kube, EXEC_DIR};
use super::{exec_in, install_rules, wait_for, Member, Ruled, Stage};
use crate::error::Error;
use crate::layout::{Layout, LABEL_REPO};
use crate::manifest::plan::{AllowEntry, PodPlan};
use crate::manifest::schema::Network;
use crate::process::Stdin;
use crate::sandbox::carry::EDEN_INSIDE;
use crate::sandbox::engine::kubectl_reason;
use crate::sandbox::RunSite;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The pool's key, on each member.
const LABEL_POOL: &str = "eden.pool";
/// When an idle member ends, and when it was made (seconds since the epoch).
const NOTE_UNTIL: &str = "eden.pool.until";
const NOTE_MADE: &str = "eden.pool.made";
/// A member's name starts so (and keeps it once claimed).
const PREFIX: &str = "eden-pool-";
/// A member this close to its end is not claimed.
const MARGIN: u64 = 3;
/// Between two members a refill makes.
const PACE: Duration = Duration::from_millis(500);
/// At most this many members are made at once.
const TOGETHER: usize = 4;

/// The member's keep-alive (pid 1): makes the exec folder, waits for a workspace in the
/// worktrees folder (`$2`), then becomes the pod's keep-alive; exits at `$1` if unclaimed.
const IDLE_SCRIPT: &str = r#"mkdir -p "$3" || exit 1
until [ -n "$(ls -A "$2" 2>/dev/null)" ]; do [ "$(date +%s)" -lt "$1" ] || exit 0; sleep 1; done
exec tail -f /dev/null"#;
/// Where `IDLE_SCRIPT`'s end time is in the agent container's command.
const UNTIL_ARG: usize = 4;

/// `.eden/pool/kubernetes/<key>.json`: a pool of pods of this repository.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PodPool {
    key: String,
    /// `CONTEXT/NAMESPACE` (`Kube::describe`).
    cluster: String,
    image: String,
    size: u32,
    idle_seconds: u64,
    refill: bool,
    manifest: Option<String>,
    /// The plan's deadline (seconds), after a member's idle time.
    deadline: u64,
    /// The `spec` every member is made with (its end time `0`).
    template: serde_json::Value,
    /// The network rules each member gets as it starts, and how long a member may take to.
    network: Network,
    #[serde(default)]
    allow: Vec<AllowEntry>,
    start_timeout: u64,
    /// The members made and not claimed.
    members: Vec<String>,
}

pub(super) enum Claimed {
    Member(Member),
    /// No member: why (`None`: the repository has no pool of pods).
    Cold(Option<String>),
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

fn dir(layout: &Layout) -> PathBuf {
    layout.eden_dir().join("pool").join("kubernetes")
}

fn file(layout: &Layout, key: &str) -> PathBuf {
    dir(layout).join(format!("{key}.json"))
}

fn read(layout: &Layout, key: &str) -> Option<PodPool> {
    serde_json::from_str(&std::fs::read_to_string(file(layout, key)).ok()?).ok()
}

fn write(layout: &Layout, pool: &PodPool) -> Result<(), Error> {
    let json = serde_json::to_value(pool).map_err(|err| Error::internal(err.to_string()))?;
    fs_err::create_dir_all(dir(layout)).map_err(|err| Error::sandbox(err.to_string()))?;
    crate::record::save_json(&file(layout, &pool.key), &json)
        .map_err(|err| Error::sandbox(format!("cannot write the pool of pods `{}`: {err}", pool.key)))
}

fn pools(layout: &Layout) -> Vec<PodPool> {
    let files = crate::safe_fs::files_in(&dir(layout));
    let files = files.iter().filter(|path| path.extension().is_some_and(|ext| ext == "json"));
    files.filter_map(|path| serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()).collect()
}

/// The pool's lock, held while its file changes (and so for each claim).
fn lock(layout: &Layout, key: &str) -> Result<nix::fcntl::Flock<std::fs::File>, Error> {
    fs_err::create_dir_all(dir(layout)).map_err(|err| Error::sandbox(err.to_string()))?;
    let file = std::fs::File::create(dir(layout).join(format!("{key}.lock")))
        .map_err(|err| Error::sandbox(format!("cannot open the pool's lock: {err}")))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, err)| Error::sandbox(format!("cannot take the pool's lock: {err}")))
}

/// Why a plan's pods cannot be pooled, if they cannot.
fn not_poolable(plan: &PodPlan) -> Option<&'static str> {
    if !plan.services.is_empty() {
        return Some("a pool of pods is made without `[[service]]`s, which are each run's own");
    }
    None
}

/// A member's `spec`, its end time `0`: the agent container waiting in `IDLE_SCRIPT`, with
/// `emptyDir`s where every run's workspace and state folders go.
fn template(plan: &PodPlan, layout: &Layout) -> serde_json::Value {
    let eden_folder = Path::new(EDEN_INSIDE).parent().expect("a folder").to_owned();
    let places = [
        ("worktrees".to_owned(), layout.worktrees()),
        ("agent-state".to_owned(), layout.agent_states()),
        ("eden".to_owned(), eden_folder),
        ("proxy".to_owned(), PathBuf::from(crate::sandbox::PROXY_INSIDE)),
    ];
    let (mounts, volumes) = volumes(&places);
    let worktrees = layout.worktrees().display().to_string();
    let command = serde_json::json!(["sh", "-c", IDLE_SCRIPT, "sh", "0", worktrees, EXEC_DIR]);
    let container = agent_container(plan, mounts, Path::new("/"), command);
    spec_body(plan, "", container, volumes, plan.deadline.as_secs().max(1))
}

/// The pool's key: the cluster, the members' spec, and eden's executable.
fn key(kube: &Kube, template: &serde_json::Value, eden: &Path) -> String {
    let identity =
        std::fs::metadata(eden).map(|meta| format!("{}:{:?}", meta.len(), meta.modified().ok())).unwrap_or_default();
    let text = format!("kubernetes\n{}\n{identity}\n{template}", kube.describe());
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref()[..8].iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A new member of `pool`: its pod, ending `pool.idle_seconds` from now.
fn member_pod(pool: &PodPool, repo: &Path, name: &str) -> serde_json::Value {
    let made = now();
    let until = made + pool.idle_seconds;
    let mut spec = pool.template.clone();
    spec["containers"][0]["command"][UNTIL_ARG] = serde_json::json!(until.to_string());
    spec["activeDeadlineSeconds"] = serde_json::json!(pool.idle_seconds + pool.deadline);
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/managed-by": "eden", LABEL_POOL: pool.key},
            "annotations": {
                LABEL_REPO: repo.display().to_string(),
                NOTE_UNTIL: until.to_string(),
                NOTE_MADE: made.to_string(),
            },
        },
        "spec": spec,
    })
}

/// A member as the cluster lists it.
struct Listed {
    name: String,
    uid: String,
    node: String,
    version: String,
    phase: String,
    /// A run's label: claimed.
    run: Option<String>,
    until: u64,
    made: u64,
}

impl Listed {
    fn ended(&self) -> bool {
        ["Succeeded", "Failed"].contains(&self.phase.as_str()) || self.until <= now()
    }

    fn claimable(&self) -> bool {
        self.run.is_none() && self.phase == "Running" && self.until > now() + MARGIN
    }
}

/// The pods labelled as members of pool `key` (which of them are, the pool's file says).
fn listed(kube: &Kube, key: &str) -> Result<Vec<Listed>, Error> {
    let got = run(kube.command().args(["get", "pods", "-l", &format!("{LABEL_POOL}={key}"), "-o", "json"]))?;
    if !got.success() {
        return Err(Error::sandbox(format!(
            "kubectl cannot list the warm pool's pods ({}): {}",
            kube.describe(),
            kubectl_reason(&got.stderr)
        )));
    }
    let pods: serde_json::Value = serde_json::from_str(&got.stdout).unwrap_or_default();
    let items = pods["items"].as_array().cloned().unwrap_or_default();
    let number = |pod: &serde_json::Value, note: &str| {
        pod["metadata"]["annotations"][note].as_str().and_then(|text| text.parse().ok()).unwrap_or(0)
    };
    Ok(items
        .iter()
        .filter(|pod| pod["metadata"]["deletionTimestamp"].is_null())
        .map(|pod| Listed {
            name: pod["metadata"]["name"].as_str().unwrap_or("").to_owned(),
            uid: pod["metadata"]["uid"].as_str().unwrap_or("").to_owned(),
            node: pod["spec"]["nodeName"].as_str().unwrap_or("").to_owned(),
            version: pod["metadata"]["resourceVersion"].as_str().unwrap_or("").to_owned(),
            phase: pod["status"]["phase"].as_str().unwrap_or("").to_owned(),
            run: pod["metadata"]["labels"]["eden.run"].as_str().map(str::to_owned),
            until: number(pod, NOTE_UNTIL),
            made: number(pod, NOTE_MADE),
        })
        .collect())
}

/// A member of this repository's pool of pods made with the run's settings, claimed for the
/// run; or why there is none. The run's labels, annotations and deadline are set by one patch
/// that fails if the member changed since it was listed.
pub(super) fn claim(plan: &PodPlan, site: &RunSite, kube: &Kube, base: &str, eden: &Path) -> Result<Claimed, Error> {
    let layout = Layout::new(&site.repo_root, &site.common_dir);
    if pools(&layout).is_empty() {
        return Ok(Claimed::Cold(None));
    }
    if let Some(why) = not_poolable(plan) {
        return Ok(Claimed::Cold(Some(why.to_owned())));
    }
    if site.worktree.parent() != Some(layout.worktrees().as_path()) {
        return Ok(Claimed::Cold(Some(format!(
            "the run works in `{}`, and members are made ready for a workspace in `{}`",
            site.worktree.display(),
            layout.worktrees().display()
        ))));
    }
    let key = key(kube, &template(plan, &layout), eden);
    if read(&layout, &key).is_none() {
        return Ok(Claimed::Cold(Some(
            "no warm pool of this repository was made with this run's pod settings (`eden pool status` lists them)"
                .into(),
        )));
    }
    let held = lock(&layout, &key)?;
    let Some(mut pool) = read(&layout, &key) else {
        return Ok(Claimed::Cold(Some("the warm pool was taken down".into())));
    };
    let mut idle: Vec<Listed> = listed(kube, &key)?
        .into_iter()
        .filter(|member| pool.members.contains(&member.name) && member.claimable())
        .collect();
    idle.sort_by_key(|member| std::cmp::Reverse(member.until));
    for member in idle {
        let patch = serde_json::json!({
            "metadata": {
                "resourceVersion": member.version,
                "labels": pod_labels(site),
                "annotations": run_annotations(site, base),
            },
            // Counted from the pod's start, no earlier than it was made: the run's own deadline
            // from now, or a little more.
            "spec": {"activeDeadlineSeconds": now().saturating_sub(member.made) + plan.deadline.as_secs().max(1)},
        });
        let patched =
            run(kube.command().args(["patch", "pod", &member.name, "--type=merge", "-p", &patch.to_string()]))?;
        if !patched.success() {
            continue; // changed since it was listed: another claim, or its end
        }
        pool.members.retain(|name| name != &member.name);
        write(&layout, &pool)?;
        drop(held);
        refill_behind(&layout, &pool);
        return Ok(Claimed::Member(Member { name: member.name, uid: member.uid, node: member.node }));
    }
    drop(held);
    refill_behind(&layout, &pool);
    Ok(Claimed::Cold(Some("the warm pool has no idle member left".into())))
}

/// After a claim: a detached eden tops the pool up again, unless it was made not to refill.
fn refill_behind(layout: &Layout, pool: &PodPool) {
    if pool.refill {
        crate::sandbox::refill_behind(&layout.root, &pool.key);
    }
}

/// `eden __eden-pool-refill REPO KEY` for a pool of pods: `None` when `KEY` is not one.
pub(super) fn run_refill(args: &[std::ffi::OsString]) -> Option<i32> {
    let [repo, key] = args else { return None };
    let key = key.to_str().filter(|key| key.chars().all(|c| c.is_ascii_hexdigit()))?;
    let repo = Path::new(repo);
    let layout = Layout::new(repo, repo.join(".git"));
    read(&layout, key)?;
    let lock = dir(&layout).join(format!("{key}.refill.lock"));
    Some(crate::sandbox::refill_alone(&lock, || top_up(&layout, key, PACE).map(drop)))
}

/// Members made, one by one `pace` apart, until pool `key` has its size of claimable ones;
/// those whose idle time is up are deleted. A member joins the pool's file once it runs (with
/// its rules installed and tried); the lock is held only while the file changes. Returns the
/// names made.
fn top_up(layout: &Layout, key: &str, pace: Duration) -> Result<Vec<String>, Error> {
    let mut made = Vec::new();
    loop {
        // Read each time: `eden pool down` removes it, and the refill stops.
        let pool = {
            let _held = lock(layout, key)?;
            let Some(mut pool) = read(layout, key) else { return Ok(made) };
            let kube = kube_of(&pool)?;
            let listed = listed(&kube, key)?;
            let ended: Vec<String> = listed
                .iter()
                .filter(|member| pool.members.contains(&member.name) && member.ended())
                .map(|member| member.name.clone())
                .collect();
            let alive = |name: &String| listed.iter().any(|member| &member.name == name);
            pool.members.retain(|name| alive(name) && !ended.contains(name));
            delete(&kube, &ended)?;
            write(layout, &pool)?;
            if pool.members.len() >= pool.size as usize || made.len() >= pool.size as usize {
                return Ok(made);
            }
            pool
        };
        // Paced one at a time (a refill), or at once, a few together (`eden pool up`): a member
        // with rules takes seconds to start.
        let want = (pool.size as usize).saturating_sub(pool.members.len().max(made.len()));
        let together = if pace.is_zero() { want.clamp(1, TOGETHER) } else { 1 };
        let results: Vec<Result<String, Error>> = std::thread::scope(|scope| {
            let making: Vec<_> = (0..together).map(|_| scope.spawn(|| make_member(layout, &pool))).collect();
            making
                .into_iter()
                .map(|handle| handle.join().unwrap_or_else(|_| Err(Error::internal("making a pool member panicked"))))
                .collect()
        });
        let _held = lock(layout, key)?;
        let names: Vec<String> = results.iter().filter_map(|result| result.as_ref().ok().cloned()).collect();
        let Some(mut now) = read(layout, key) else {
            delete(&kube_of(&pool)?, &names)?;
            return Ok(made);
        };
        now.members.extend(names.iter().cloned());
        write(layout, &now)?;
        made.extend(names);
        if let Some(Err(err)) = results.into_iter().find(Result::is_err) {
            return Err(err);
        }
        std::thread::sleep(pace);
    }
}

fn kube_of(pool: &PodPool) -> Result<Kube, Error> {
    Kube::from_described(&pool.cluster).ok_or_else(|| Error::internal("a pool of pods names no cluster"))
}

/// One member of `pool`, running: made, its network rules installed from its init container
/// and tried from its agent container. Deleted again if any of it fails.
fn make_member(layout: &Layout, pool: &PodPool) -> Result<String, Error> {
    let kube = kube_of(pool)?;
    let name = format!("{PREFIX}{}-{}", pool.key, crate::record::new_run_id());
    let pod = member_pod(pool, &layout.root, &name);
    let created = run(kube
        .command()
        .args(["create", "-f", "-", "-o", "name"])
        .stdin(Stdin::Bytes(pod.to_string().into_bytes())))?;
    if !created.success() {
        return Err(Error::sandbox(format!("the cluster refused a pool member: {}", kubectl_reason(&created.stderr)))
            .with_hint("see the cluster's message; `eden run --dry-run` shows the pod's settings"));
    }
    let started = std::time::Instant::now();
    let timeout = Duration::from_secs(pool.start_timeout.max(1));
    let scratch = layout.eden_dir().join("tmp").join(&name);
    let ready = (|| {
        let installed = match pool.network {
            Network::Bridge => None,
            network => {
                let eden_inside = std::sync::atomic::AtomicBool::new(false);
                let ruled = Ruled {
                    kube: &kube,
                    name: &name,
                    image: &pool.image,
                    eden_inside: &eden_inside,
                    network,
                    allow: &pool.allow,
                    timeout,
                };
                Some(install_rules(&ruled, &scratch, started)?)
            }
        };
        wait_for(&kube, &name, &pool.image, Stage::Running, started, timeout)?;
        match installed {
            Some(installed) => {
                rules::verify(&installed, &|command, stdin| exec_in(&kube, &name, "agent", command, stdin), &name)
            }
            None => Ok(()),
        }
    })();
    let _ = crate::safe_fs::remove_tree(&scratch);
    match ready {
        Ok(()) => Ok(name),
        Err(err) => {
            let _ = delete(&kube, std::slice::from_ref(&name));
            Err(err)
        }
    }
}

/// Delete pods now. Gone already is fine.
fn delete(kube: &Kube, names: &[String]) -> Result<(), Error> {
    super::delete_pods(kube, &names.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `eden pool up` for a `kubernetes` plan: the pool's file, and its members made, each waited
/// for until it runs (an image the cluster cannot get is said now, not at a run).
pub(super) fn up(
    plan: &PodPlan,
    request: &crate::sandbox::provider::PoolRequest<'_>,
) -> Result<crate::sandbox::provider::PoolUp, Error> {
    if let Some(why) = not_poolable(plan) {
        return Err(
            Error::usage(why).with_hint("remove them from the manifest to pool its pods, or run without a pool")
        );
    }
    let layout = request.layout;
    let kube = Kube::new(plan);
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
    let template = template(plan, layout);
    let key = key(&kube, &template, &eden);
    {
        let _held = lock(layout, &key)?;
        let members = read(layout, &key).map(|pool| pool.members).unwrap_or_default();
        let pool = PodPool {
            key: key.clone(),
            cluster: kube.describe(),
            image: plan.image.clone(),
            size: request.size,
            idle_seconds: request.idle.as_secs().max(1),
            refill: request.refill,
            manifest: request.manifest.clone(),
            deadline: plan.deadline.as_secs().max(1),
            template,
            network: plan.network,
            allow: plan.allow.clone(),
            start_timeout: plan.start_timeout.as_secs().max(1),
            members,
        };
        write(layout, &pool)?;
    }
    let made = top_up(layout, &key, Duration::ZERO)?;
    let idle = listed(&kube, &key)?.iter().filter(|member| member.claimable()).count();
    Ok(crate::sandbox::provider::PoolUp {
        pool: key,
        engine: format!("kubernetes {}", kube.describe()),
        image: plan.image.clone(),
        made,
        idle,
        worktrees: None,
    })
}

/// `eden pool status`: each pool of pods of the repository and its members.
pub(super) fn status(layout: &Layout) -> Result<Vec<crate::sandbox::provider::PoolStatus>, Error> {
    let mut found = Vec::new();
    for pool in pools(layout) {
        let Some(kube) = Kube::from_described(&pool.cluster) else { continue };
        let listed = listed(&kube, &pool.key)?;
        let members = listed.into_iter().filter(|member| pool.members.contains(&member.name) || member.run.is_some());
        let members = members.map(|member| {
            let (state, run) = match (&member.run, member.ended()) {
                (Some(run), _) => ("claimed", Some(run.clone())),
                (None, true) => ("ended", None),
                (None, false) => ("idle", None),
            };
            let until = (state == "idle")
                .then(|| humantime::format_rfc3339(UNIX_EPOCH + Duration::from_secs(member.until)).to_string());
            crate::sandbox::provider::PoolMember { name: member.name, state, run, idle_until: until }
        });
        found.push(crate::sandbox::provider::PoolStatus {
            pool: pool.key.clone(),
            engine: format!("kubernetes {}", pool.cluster),
            image: pool.image.clone(),
            size: pool.size,
            manifest: pool.manifest.clone(),
            members: members.collect(),
        });
    }
    Ok(found)
}

/// `eden pool down`: every member not claimed deleted, then the pools forgotten (a claimed
/// member is its run's, and goes with it).
pub(super) fn down(layout: &Layout) -> Result<Vec<String>, Error> {
    let mut removed = Vec::new();
    for pool in pools(layout) {
        let Some(kube) = Kube::from_described(&pool.cluster) else { continue };
        let _held = lock(layout, &pool.key)?;
        // The pool first: a refill that is running stops making members.
        let _ = std::fs::remove_file(file(layout, &pool.key));
        delete(&kube, &pool.members)?;
        removed.extend(pool.members.iter().map(|name| format!("{name} (kubernetes {})", pool.cluster)));
    }
    for name in ["", ".refill"].iter().flat_map(|tail| {
        crate::safe_fs::files_in(&dir(layout))
            .into_iter()
            .filter(move |path| path.to_string_lossy().ends_with(&format!("{tail}.lock")))
    }) {
        let _ = std::fs::remove_file(name);
    }
    Ok(removed)
}

/// What `eden clean` finds of the pools of pods: members whose idle time is up (deleted), and
/// idle ones (kept: `eden pool down` removes them).
pub(super) fn leftovers(layout: &Layout) -> crate::sandbox::provider::Leftovers {
    use crate::sandbox::provider::{Left, Leftover, Removal, Verdict};
    let mut found = crate::sandbox::provider::Leftovers::default();
    for pool in pools(layout) {
        let Some(kube) = Kube::from_described(&pool.cluster) else { continue };
        let listed = match listed(&kube, &pool.key) {
            Ok(listed) => listed,
            Err(err) => {
                found.warnings.push(err.message);
                continue;
            }
        };
        for member in listed.into_iter().filter(|member| pool.members.contains(&member.name)) {
            let name = format!("{} (kubernetes {})", member.name, pool.cluster);
            let leftover = match member.ended() {
                true => {
                    let (kube, layout, key, pod) =
                        (kube.clone(), layout.clone(), pool.key.clone(), member.name.clone());
                    let removal = Removal::new(move || {
                        delete(&kube, std::slice::from_ref(&pod))?;
                        let _held = lock(&layout, &key)?;
                        if let Some(mut pool) = read(&layout, &key) {
                            pool.members.retain(|name| name != &pod);
                            write(&layout, &pool)?;
                        }
                        Ok(())
                    });
                    Leftover {
                        what: Left::Sandbox,
                        name,
                        verdict: Verdict::Remove,
                        reason: "a warm pool's member whose idle time is up".into(),
                        removal: Some(removal),
                    }
                }
                false => Leftover {
                    what: Left::Sandbox,
                    name,
                    verdict: Verdict::Keep,
                    reason: "an idle member of this repository's warm pool (`eden pool down` removes it)".into(),
                    removal: None,
                },
            };
            found.found.push(leftover);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::plan::tests::plan_from_text;

    fn pod_plan(sandbox: &str) -> PodPlan {
        let image = if sandbox.contains("image") { "" } else { "image = \"img:1\"\n" };
        let text = format!("name = \"p\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n[sandbox]\nkind = \"kubernetes\"\n{image}{sandbox}");
        match plan_from_text(&text).sandbox {
            crate::manifest::plan::SandboxPlan::Kubernetes(pod) => *pod,
            _ => panic!("a pod plan"),
        }
    }

    #[test]
    fn the_key_changes_with_anything_a_claim_could_not_change() {
        let layout = Layout::new("/repo", "/repo/.git");
        let eden = Path::new("/nonexistent/eden");
        let kube = |plan: &PodPlan| Kube::new(plan);
        let of = |sandbox: &str| {
            let plan = pod_plan(sandbox);
            key(&kube(&plan), &template(&plan, &layout), eden)
        };
        let base = of("");
        assert_eq!(base, of(""), "the same settings, the same pool");
        assert_ne!(base, of("image = \"img:2\""), "another image");
        assert_ne!(base, of("memory = \"1g\""));
        assert_ne!(base, of("namespace = \"other\""));
        assert_ne!(
            base,
            key(&kube(&pod_plan("")), &template(&pod_plan(""), &Layout::new("/other", "/other/.git")), eden)
        );
    }

    #[test]
    fn a_member_waits_with_nothing_of_a_run() {
        let layout = Layout::new("/repo", "/repo/.git");
        let plan = pod_plan("");
        let pool = PodPool {
            key: "k".into(),
            cluster: "-/-".into(),
            image: "img:1".into(),
            size: 1,
            idle_seconds: 600,
            refill: true,
            manifest: None,
            deadline: 3600,
            template: template(&plan, &layout),
            network: Network::Bridge,
            allow: Vec::new(),
            start_timeout: 60,
            members: Vec::new(),
        };
        let pod = member_pod(&pool, Path::new("/repo"), "eden-pool-k-1");
        let command = &pod["spec"]["containers"][0]["command"];
        let before = now();
        let until: u64 = command[UNTIL_ARG].as_str().unwrap().parse().unwrap();
        assert!((before - 5 + 600..=now() + 600).contains(&until), "{until}");
        assert_eq!(command[5], "/repo/.eden/worktrees");
        assert_eq!(pod["spec"]["activeDeadlineSeconds"], 4200);
        assert_eq!(pod["metadata"]["labels"][LABEL_POOL], "k");
        let mounted: Vec<&str> = pod["spec"]["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|mount| mount["mountPath"].as_str().unwrap())
            .collect();
        assert_eq!(
            mounted,
            ["/repo/.eden/worktrees", "/repo/.eden/agent-state", "/opt/eden/bin", crate::sandbox::PROXY_INSIDE]
        );
        assert!(pod["spec"]["containers"][0].get("env").is_none(), "no environment of any run");
        assert!(not_poolable(&plan).is_none());
    }
}
