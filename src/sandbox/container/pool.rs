//! A warm pool: idle containers made ahead (`eden pool up`), each claimed by one run.
//!
//! A member is made exactly as a run's container would be (`create::shape`: engine and host,
//! image, runtime, network, limits, mounts, the repository's object stores and eden's
//! executable on a local engine) but with nothing of any run: no workspace, environment, key,
//! state folder or proxy. What a claim could not change afterwards is hashed into the pool's
//! key, so a run only ever claims a member made for its own settings; everything per run
//! arrives after the claim, through the same channel a remote engine uses (`carry`).
//!
//! A claim is a rename (`eden-pool-…` → `eden-<run>`) under the repository's claim lock
//! (`.eden/pool/claims.lock`): the engine's rename alone is not atomic when two runs rename one
//! container at once (both can succeed), so claims are one at a time. Before renaming, eden writes
//! the claim (whose run, branch, workspace, base, pid) to `.eden/pool/claims/<name>.json`, where
//! no sandbox writes: that is what a salvage and `eden clean` read for a claimed member, since
//! its labels were set before any run. A renamed member never looks idle again, so one claimed
//! by a dead eden is salvaged and removed (its guard, the next run's prune, `eden clean`),
//! never reused.
//!
//! A member is made with its folders ready for a claim (`PREPARE_SCRIPT`), so that a claim's
//! set-up is one exec as the run's user (`create::warm`). An idle member waits in `IDLE_SCRIPT`
//! until a claim makes its workspace in the repository's worktrees folder or its idle time
//! is up (then it exits, and `eden pool`/`eden clean` remove it). After a claim, a detached
//! `eden __eden-pool-refill` tops the pool up again, one member at a time.

use super::exec::{label_template, listing, remove, run_user, OBJECTS_INSIDE, PIDS_INSIDE, SEED_AHEAD_INSIDE};
use crate::error::Error;
use crate::layout::{Layout, LABEL_PID, LABEL_REPO, LABEL_RUN, LABEL_USER};
use crate::process::ProcessBuilder;
use crate::sandbox::carry::first_line;
use crate::sandbox::engine::{self, Target};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The pool's key, on each member.
pub(super) const LABEL_POOL: &str = "eden.pool";
/// When an idle member ends (seconds since the epoch).
const LABEL_UNTIL: &str = "eden.pool.until";
/// The commit of the repository a member holds made ahead (empty: none).
const LABEL_SEED: &str = "eden.pool.seed";
/// An idle member's name starts so; a claimed one is renamed `eden-<run>`.
pub(super) const IDLE_PREFIX: &str = "eden-pool-";
/// A member still being made ends so (it is idle, but not claimable).
const MAKING: &str = "-making";
/// A member this close to its end is not claimed (it could exit under the run: its wait
/// looks at the clock every second).
const MARGIN: u64 = 3;
/// Between two members a refill makes.
const PACE: Duration = Duration::from_millis(500);

/// The idle member's keep-alive: waits for the claim (a workspace in the repository's worktrees
/// folder `$2`, made by the claim's one set-up exec), then becomes the container's keep-alive
/// (the same pid); exits at `$1` if unclaimed.
const IDLE_SCRIPT: &str = r#"until [ -n "$(ls -A "$2" 2>/dev/null)" ]; do [ "$(date +%s)" -lt "$1" ] || exit 0; sleep 1; done
exec tail -f /dev/null"#;

/// Made ahead in a member, as root, for the run's user (`$1`): the repository's worktrees folder
/// (`$2`, where a claim makes its workspace) and the exec pid folder (`$3`).
const PREPARE_SCRIPT: &str = r#"mkdir -p "$2" "$3" && chown "$1" "$2" "$3""#;

/// `.eden/pool/<key>.json`: a pool of this repository, as `eden pool up` made it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct PoolFile {
    pub(super) key: String,
    /// `ENGINE [HOST]` (`Target::to_args`).
    pub(super) target: Vec<String>,
    pub(super) image: String,
    /// `create::shape`'s arguments.
    pub(super) args: Vec<String>,
    pub(super) size: u32,
    pub(super) idle_seconds: u64,
    /// A replacement is started behind each claim.
    #[serde(default = "refills")]
    pub(super) refill: bool,
    /// The manifest it was made from, for `eden pool status`.
    pub(super) manifest: Option<String>,
    /// The branch runs start from: each member holds the repository at its tip, made ahead
    /// (`repository::seed_ahead`; a local engine only, whose members borrow the object stores).
    #[serde(default)]
    pub(super) seed: Option<String>,
}

fn refills() -> bool {
    true
}

/// Whose a claimed member is, written before the rename (`.eden/pool/claims/<name>.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Claim {
    pub(super) run_id: String,
    pub(super) branch: String,
    pub(super) workspace: String,
    pub(super) base: String,
    pub(super) user: String,
    pub(super) process: crate::process::ProcessStamp,
    /// The run ended with work too big to come back, kept in the member.
    #[serde(default)]
    pub(super) kept: bool,
}

/// The pool's key: the engine, the image, every argument a member is made with, and eden's
/// executable (mounted into members on a local engine).
pub(super) fn key(target: &Target, image: &str, args: &[String], eden: &Path) -> String {
    let identity =
        std::fs::metadata(eden).map(|meta| format!("{}:{:?}", meta.len(), meta.modified().ok())).unwrap_or_default();
    let mut text = format!("{}\n{image}\n{identity}\n", target.to_args().join(" "));
    for arg in args {
        text.push_str(arg);
        text.push('\n');
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref()[..8].iter().map(|byte| format!("{byte:02x}")).collect()
}

pub(super) fn pool_dir(layout: &Layout) -> PathBuf {
    layout.eden_dir().join("pool")
}

fn claim_path(layout: &Layout, name: &str) -> PathBuf {
    pool_dir(layout).join("claims").join(format!("{name}.json"))
}

pub(super) fn read_pool(layout: &Layout, key: &str) -> Option<PoolFile> {
    let text = std::fs::read_to_string(pool_dir(layout).join(format!("{key}.json"))).ok()?;
    serde_json::from_str(&text).ok()
}

/// Every pool of this repository.
pub(super) fn pools(layout: &Layout) -> Vec<PoolFile> {
    let files = crate::safe_fs::files_in(&pool_dir(layout));
    let files = files.iter().filter(|path| path.extension().is_some_and(|ext| ext == "json"));
    files.filter_map(|path| serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()).collect()
}

pub(super) fn write_pool(layout: &Layout, pool: &PoolFile) -> Result<(), Error> {
    let path = pool_dir(layout).join(format!("{}.json", pool.key));
    let json = serde_json::to_value(pool).map_err(|err| Error::internal(err.to_string()))?;
    fs_err::create_dir_all(pool_dir(layout)).map_err(|err| Error::sandbox(err.to_string()))?;
    crate::record::save_json(&path, &json)
        .map_err(|err| Error::sandbox(format!("cannot write `{}`: {err}", path.display())))
}

/// The claim of member `name`, if eden wrote one there: a claim naming no run id eden makes is
/// not taken (its id names the files a salvage writes).
pub(super) fn read_claim(repo: &Path, name: &str) -> Option<Claim> {
    let layout = Layout::new(repo, repo.join(".git"));
    let claim: Claim = serde_json::from_str(&std::fs::read_to_string(claim_path(&layout, name)).ok()?).ok()?;
    crate::record::is_run_id(&claim.run_id).then_some(claim)
}

/// The run's work is kept in its claimed member (too big to come back): `eden clean` then
/// removes it only with `--force`.
pub(super) fn mark_kept(repo: &Path, name: &str) {
    let layout = Layout::new(repo, repo.join(".git"));
    let path = claim_path(&layout, name);
    let Some(mut claim) = read_claim(repo, name) else { return };
    claim.kept = true;
    if let Ok(json) = serde_json::to_value(&claim) {
        let _ = crate::record::save_json(&path, &json);
    }
}

pub(super) fn forget_claim(repo: &Path, name: &str) {
    let layout = Layout::new(repo, repo.join(".git"));
    let _ = std::fs::remove_file(claim_path(&layout, name));
}

/// `ps`'s `{{.State}}`: docker says `running`, podman 4 `Up 2 minutes ago`.
pub(super) fn is_running(state: &str) -> bool {
    let state = state.trim();
    state.eq_ignore_ascii_case("running") || state.starts_with("Up ")
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

/// Make one idle member of `pool`, its folders for a claim made ahead.
pub(super) fn make_member(pool: &PoolFile, target: &Target, layout: &Layout) -> Result<String, Error> {
    let repo = &layout.root;
    // Made under a name no claim takes, and renamed once it is ready: a run never gets a member
    // whose folders or repository are still being made.
    let ready = format!("{IDLE_PREFIX}{}-{}", pool.key, crate::record::new_run_id());
    let name = format!("{ready}{MAKING}");
    let until = (now() + pool.idle_seconds).to_string();
    let worktrees = layout.worktrees().display().to_string();
    let host = crate::git::Git::new(&layout.root);
    let seed = match &pool.seed {
        Some(base) => host.branch_commit(base)?.unwrap_or_default(),
        None => String::new(),
    };
    let labels = [
        // Empty: a member is no run's until claimed, but `eden clean --all-repos` finds it.
        (LABEL_RUN, String::new()),
        (LABEL_POOL, pool.key.clone()),
        (LABEL_UNTIL, until.clone()),
        (LABEL_REPO, repo.display().to_string()),
        (LABEL_PID, "0".to_owned()),
        (LABEL_USER, run_user()),
        (LABEL_SEED, seed.clone()),
    ];
    let mut command = target.command().args(["run", "-d", "--init", "--name", &name]);
    for (key, value) in &labels {
        command = command.args(["--label", &format!("{key}={value}")]);
    }
    let command = command.args(&pool.args).args(["-w", "/"]).arg(&pool.image).args([
        "sh",
        "-c",
        IDLE_SCRIPT,
        "sh",
        &until,
        &worktrees,
    ]);
    let made = engine::run(command.finishing()).and_then(|made| match made.success() {
        true => {
            engine::run(target.command().args(["exec", "-u", "0", &name, "sh", "-c", PREPARE_SCRIPT, "sh"]).args([
                run_user().as_str(),
                &worktrees,
                PIDS_INSIDE,
            ]))
        }
        false => Ok(made),
    });
    let made = made.and_then(|made| match made.success() && !seed.is_empty() {
        true => seed_member(target, layout, &name, &seed).map(|()| made),
        false => Ok(made),
    });
    let made = made.and_then(|made| match made.success() {
        true => engine::run(target.command().args(["rename", &name, &ready]).finishing()),
        false => Ok(made),
    });
    match made {
        Ok(made) if made.success() => Ok(ready),
        Ok(made) => {
            let _ = remove(target, &name);
            Err(Error::sandbox(format!(
                "{} cannot start a pool member from `{}`: {}",
                target.describe(),
                pool.image,
                first_line(&made.stderr)
            )))
        }
        Err(err) => {
            let _ = remove(target, &name);
            Err(err)
        }
    }
}

/// The repository at `commit` made ahead in member `name` (`SEED_AHEAD_INSIDE`), its files
/// checked out from the object stores mounted in.
fn seed_member(target: &Target, layout: &Layout, name: &str, commit: &str) -> Result<(), Error> {
    struct Member<'a>(&'a Target, &'a str);
    impl crate::sandbox::repository::Channel for Member<'_> {
        fn inside(&self, command: ProcessBuilder) -> Result<ProcessBuilder, Error> {
            Ok(super::exec::exec_in(self.0, self.1, Some(&run_user()), command, &["-i"], &[]))
        }
        fn workspace(&self) -> &Path {
            Path::new("/")
        }
    }
    let stores = crate::sandbox::repository::object_stores(&layout.common_dir);
    let alternates: Vec<String> = (0..stores.len()).map(|n| format!("{OBJECTS_INSIDE}/{n}")).collect();
    let scratch = layout.eden_dir().join("tmp").join(name);
    let host = crate::git::Git::new(&layout.root);
    let seeded = crate::sandbox::repository::seed_ahead(
        &Member(target, name),
        &host,
        commit,
        &alternates,
        &scratch,
        SEED_AHEAD_INSIDE,
    );
    let _ = crate::safe_fs::remove_tree(&scratch);
    seeded
}

/// A pool member, as `ps` lists it.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) name: String,
    /// The engine's id for it.
    pub(crate) id: String,
    pub(crate) key: String,
    pub(crate) running: bool,
    /// When an idle member ends.
    pub(crate) until: u64,
    /// The commit of the repository it holds made ahead (empty: none).
    pub(crate) seed: String,
}

impl Member {
    pub(crate) fn idle(&self) -> bool {
        self.name.starts_with(IDLE_PREFIX)
    }

    /// Idle, ready (not still being made), running, and not about to end.
    fn claimable(&self) -> bool {
        self.idle() && !self.name.ends_with(MAKING) && self.running && self.until > now() + MARGIN
    }
}

/// The pool members of `repo` on `target`, idle and claimed (of every pool).
pub(super) fn members(target: &Target, repo: &Path) -> Result<Vec<Member>, Error> {
    let label = |name: &str| label_template(target.engine, name);
    let fields = [
        "{{.Names}}".to_owned(),
        "{{.ID}}".to_owned(),
        "{{.State}}".to_owned(),
        label(LABEL_POOL),
        label(LABEL_UNTIL),
        label(LABEL_SEED),
    ];
    let args = [
        "ps",
        "-a",
        "--filter",
        &format!("label={LABEL_REPO}={}", repo.display()),
        "--filter",
        &format!("label={LABEL_POOL}"),
    ];
    let rows = listing(target, &args, &fields, "the pool")?;
    Ok(rows
        .iter()
        .filter_map(|fields| {
            let [name, id, state, key, until, seed] = &fields[..] else { return None };
            Some(Member {
                name: name.trim().to_owned(),
                id: id.trim().to_owned(),
                key: key.to_owned(),
                running: is_running(state),
                until: until.trim().parse().unwrap_or(0),
                seed: seed.trim().chars().filter(char::is_ascii_hexdigit).collect(),
            })
        })
        .collect())
}

/// Claim an idle member of pool `key` for the run: the claim written, then the member renamed
/// `name`. The member as it was listed; `None` when no member could be claimed (there is none,
/// or others took them first).
pub(super) fn claim(
    target: &Target,
    layout: &Layout,
    key: &str,
    name: &str,
    claim: &Claim,
    start: &str,
) -> Result<Option<Member>, Error> {
    // One claim at a time in the repository: two `rename`s of one container at once can both
    // succeed (the engine's rename is not atomic under concurrency: seen with docker), so the
    // listing and the rename are done under this lock. A killed eden's lock goes with it.
    fs_err::create_dir_all(pool_dir(layout)).map_err(|err| Error::sandbox(err.to_string()))?;
    let lock = std::fs::File::create(pool_dir(layout).join("claims.lock"))
        .map_err(|err| Error::sandbox(format!("cannot open the pool's claim lock: {err}")))?;
    let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, err)| Error::sandbox(format!("cannot take the pool's claim lock: {err}")))?;
    let mut idle: Vec<Member> =
        members(target, &layout.root)?.into_iter().filter(|member| member.key == key && member.claimable()).collect();
    // One holding the repository at the run's start first, then the newest: the oldest end
    // first, and a refill replaces what is taken.
    idle.sort_by_key(|member| (member.seed != start, std::cmp::Reverse(member.until)));
    let path = claim_path(layout, name);
    let json = serde_json::to_value(claim).map_err(|err| Error::internal(err.to_string()))?;
    fs_err::create_dir_all(path.parent().unwrap_or(layout.eden_dir().as_path()))
        .map_err(|err| Error::sandbox(err.to_string()))?;
    crate::record::save_json(&path, &json).map_err(|err| Error::sandbox(err.to_string()))?;
    for member in idle {
        let renamed = engine::run(target.command().args(["rename", &member.name, name]).finishing())?;
        if renamed.success() {
            return Ok(Some(member));
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(None)
}

/// After a claim: a detached eden tops the pool up again (one refill at a time per pool),
/// unless the pool was made not to refill.
pub(super) fn refill_behind(layout: &Layout, key: &str) {
    if read_pool(layout, key).is_some_and(|pool| !pool.refill) {
        return;
    }
    crate::sandbox::refill_behind(&layout.root, key);
}

/// `eden __eden-pool-refill REPO KEY`: makes members until the pool has its size of claimable
/// ones, paced, under the pool's lock. `None` when `KEY` names no pool of containers here; else
/// the exit code.
pub(super) fn run_refill(args: &[std::ffi::OsString]) -> Option<i32> {
    let [repo, key] = args else { return None };
    let key = key.to_str().filter(|key| key.chars().all(|c| c.is_ascii_hexdigit()))?;
    let repo = Path::new(repo);
    let layout = Layout::new(repo, repo.join(".git"));
    read_pool(&layout, key)?;
    let lock = pool_dir(&layout).join(format!("{key}.lock"));
    Some(crate::sandbox::refill_alone(&lock, || top_up(&layout, key, PACE).map(drop)))
}

/// Members made until pool `key` has its size of claimable ones; returns their names.
pub(super) fn top_up(layout: &Layout, key: &str, pace: Duration) -> Result<Vec<String>, Error> {
    let mut made = Vec::new();
    loop {
        // Read each time: `eden pool down` removes it, and the refill stops.
        let Some(pool) = read_pool(layout, key) else { return Ok(made) };
        let target = target_of(&pool)?;
        let members = members(&target, &layout.root)?;
        let waiting = members.iter().filter(|member| member.key == pool.key && member.idle() && member.running).count();
        // At most a pool's size at a time, whatever the engine says meanwhile.
        if waiting >= pool.size as usize || made.len() >= pool.size as usize {
            return Ok(made);
        }
        let member = make_member(&pool, &target, layout)?;
        // Taken down while it was being made: it goes too, never left idle for its whole wait.
        if read_pool(layout, key).is_none() {
            remove(&target, &member)?;
            return Ok(made);
        }
        made.push(member);
        std::thread::sleep(pace);
    }
}

/// `eden pool up` on `target` for members made with `args` (`create::shape`'s) from `image`.
pub(super) fn up(
    target: &Target,
    image: &str,
    args: Vec<String>,
    eden: &Path,
    request: &crate::sandbox::provider::PoolRequest<'_>,
    seed: Option<String>,
) -> Result<crate::sandbox::provider::PoolUp, Error> {
    let layout = request.layout;
    let key = key(target, image, &args, eden);
    let pool = PoolFile {
        key: key.clone(),
        target: target.to_args(),
        image: image.to_owned(),
        args,
        size: request.size,
        idle_seconds: request.idle.as_secs().max(1),
        refill: request.refill,
        manifest: request.manifest.clone(),
        seed,
    };
    write_pool(layout, &pool)?;
    remove_ended(target, &layout.root, Some(&key))?;
    let made = top_up(layout, &key, Duration::ZERO)?;
    let idle = members(target, &layout.root)?.iter().filter(|member| member.key == key && member.claimable()).count();
    Ok(crate::sandbox::provider::PoolUp {
        pool: key,
        engine: target.describe(),
        image: image.to_owned(),
        made,
        idle,
        worktrees: None,
    })
}

/// Idle members whose idle time is up (they exited), removed.
fn remove_ended(target: &Target, repo: &Path, key: Option<&str>) -> Result<Vec<String>, Error> {
    let mut removed = Vec::new();
    for member in members(target, repo)? {
        if member.idle() && !member.running && key.is_none_or(|key| member.key == key) {
            remove(target, &member.name)?;
            removed.push(member.name);
        }
    }
    Ok(removed)
}

fn target_of(pool: &PoolFile) -> Result<Target, Error> {
    let args: Vec<std::ffi::OsString> = pool.target.iter().map(Into::into).collect();
    Target::from_args(&args)
        .ok_or_else(|| Error::internal(format!("pool `{}` names an engine eden cannot read", pool.key)))
}

/// `eden pool status`: each pool of the repository and its members.
pub(super) fn status(layout: &Layout) -> Result<Vec<crate::sandbox::provider::PoolStatus>, Error> {
    let mut found = Vec::new();
    for pool in pools(layout) {
        let target = target_of(&pool)?;
        let members = members(&target, &layout.root)?;
        let members = members.into_iter().filter(|member| member.key == pool.key).map(|member| {
            let (state, run) = match (member.idle(), member.running) {
                (true, true) if member.name.ends_with(MAKING) => ("starting", None),
                (true, true) => ("idle", None),
                (true, false) => ("ended", None),
                (false, _) => ("claimed", read_claim(&layout.root, &member.name).map(|claim| claim.run_id)),
            };
            let until = member
                .idle()
                .then(|| humantime::format_rfc3339(UNIX_EPOCH + Duration::from_secs(member.until)).to_string());
            crate::sandbox::provider::PoolMember { name: member.name, state, run, idle_until: until }
        });
        found.push(crate::sandbox::provider::PoolStatus {
            pool: pool.key.clone(),
            engine: target.describe(),
            image: pool.image.clone(),
            size: pool.size,
            manifest: pool.manifest.clone(),
            members: members.collect(),
        });
    }
    Ok(found)
}

/// `eden pool down`: every idle member of the repository's pools removed, then the pools
/// forgotten (a claimed member is its run's, and goes with it).
pub(super) fn down(layout: &Layout) -> Result<Vec<String>, Error> {
    let mut removed = Vec::new();
    for pool in pools(layout) {
        let target = target_of(&pool)?;
        // The pool first: a refill that is running stops making members.
        let _ = std::fs::remove_file(pool_dir(layout).join(format!("{}.json", pool.key)));
        let _ = std::fs::remove_file(pool_dir(layout).join(format!("{}.lock", pool.key)));
        for member in members(&target, &layout.root)? {
            if member.idle() && member.key == pool.key {
                remove(&target, &member.name)?;
                removed.push(format!("{} ({})", member.name, target.describe()));
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_changes_with_anything_a_claim_could_not_change() {
        let eden = Path::new("/nonexistent/eden");
        let docker = Target::new(crate::manifest::plan::Engine::Docker, None);
        let podman = Target::new(crate::manifest::plan::Engine::Podman, None);
        let args = |network: &str| vec!["--network".to_owned(), network.to_owned()];
        let base = key(&docker, "img:1", &args("none"), eden);
        assert_eq!(base, key(&docker, "img:1", &args("none"), eden), "the same settings, the same pool");
        assert_eq!(base.len(), 16);
        assert_ne!(base, key(&podman, "img:1", &args("none"), eden));
        assert_ne!(base, key(&docker, "img:2", &args("none"), eden));
        assert_ne!(base, key(&docker, "img:1", &args("bridge"), eden));
    }

    #[test]
    fn both_engines_states_read_as_running() {
        assert!(is_running("running"));
        assert!(is_running("Up 2 minutes ago"));
        assert!(!is_running("exited"));
        assert!(!is_running("Exited (0) 5 seconds ago"));
    }

    #[test]
    fn a_member_is_claimable_only_while_idle_running_and_not_about_to_end() {
        let member = |name: &str, running: bool, until: u64| Member {
            name: name.into(),
            id: String::new(),
            key: "k".into(),
            running,
            until,
            seed: String::new(),
        };
        let later = now() + 600;
        assert!(member("eden-pool-k-1", true, later).claimable());
        assert!(!member("eden-20261127-000000-abcdef", true, later).claimable(), "claimed already");
        assert!(!member("eden-pool-k-1", false, later).claimable(), "ended");
        assert!(!member("eden-pool-k-1", true, now() + 1).claimable(), "about to end");
        assert!(!member("eden-pool-k-1-making", true, later).claimable(), "still being made");
    }
}
