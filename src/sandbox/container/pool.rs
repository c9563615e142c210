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

use super::exec::{
    label_template, listing, remove, run_user, KEEP_ALIVE_FILE, OBJECTS_INSIDE, PIDS_INSIDE, SEED_AHEAD_INSIDE,
};
use crate::error::Error;
use crate::layout::{Layout, LABEL_PID, LABEL_REPO, LABEL_RUN, LABEL_USER};
use crate::process::ProcessBuilder;
use crate::sandbox::carry::{first_line, EDEN_INSIDE};
use crate::sandbox::door::DOOR_INSIDE;
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

/// The idle member's keep-alive: writes its pid (`exec::KEEP_ALIVE_FILE`), waits for the claim (a workspace in the repository's worktrees
/// folder `$2`, made by the claim's one set-up exec), then becomes the container's keep-alive
/// (the same pid); exits at `$1` if unclaimed — only when `date` said so: a `date` that failed
/// or was killed (a claimed member's processes are swept while this loop may still be polling)
/// must not end the container under the run.
const IDLE_SCRIPT: &str = r#"echo $$ > "$3"
until [ -n "$(ls -A "$2" 2>/dev/null)" ]; do now=$(date +%s) && [ -n "$now" ] && [ "$now" -ge "$1" ] && exit 0; sleep 1; done
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
    /// The member's door's folder on this machine, removed with it.
    #[serde(default)]
    pub(super) door: Option<PathBuf>,
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
    // Only a folder of the pool's doors, whatever the claim file says.
    let doors = pool_dir(&layout).join("doors");
    let door = read_claim(repo, name).and_then(|claim| claim.door).filter(|door| door.parent() == Some(&doors));
    forget_door(door.as_deref());
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
    // Made under a name no claim takes, and renamed once it is ready: a run never gets a member
    // whose folders or repository are still being made.
    let ready = format!("{IDLE_PREFIX}{}-{}", pool.key, crate::record::new_run_id());
    let name = format!("{ready}{MAKING}");
    let host = crate::git::Git::new(&layout.root);
    let seed = match &pool.seed {
        Some(base) => host.branch_commit(base)?.unwrap_or_default(),
        None => String::new(),
    };
    let door = door_dir(layout, &ready).filter(|_| opens_a_door(pool));
    let until = now() + pool.idle_seconds;
    let made = start_member(pool, target, layout, &name, &seed, until, door.as_deref()).and_then(|id| {
        let opened = match &door {
            Some(door) => open_door(target, &name, door)?,
            None => false,
        };
        if !opened {
            // A plain member then, claimed through the engine.
            forget_door(door.as_deref());
        }
        let renamed = engine::run(target.command().args(["rename", &name, &ready]).finishing())?;
        if !renamed.success() {
            return Err(Error::sandbox(format!("cannot rename pool member `{name}`: {}", first_line(&renamed.stderr))));
        }
        if opened {
            let member = ReadyMember { name: ready.clone(), id, key: pool.key.clone(), until, seed: seed.clone() };
            member.write(layout)?;
        }
        Ok(())
    });
    match made {
        Ok(()) => Ok(ready),
        Err(err) => {
            let _ = remove(target, &name);
            forget_door(door.as_deref());
            Err(err)
        }
    }
}

/// `docker run` of an idle member (its door's folder mounted in, if it gets one), its folders
/// made ready for a claim and its repository made ahead; the engine's id for it.
fn start_member(
    pool: &PoolFile,
    target: &Target,
    layout: &Layout,
    name: &str,
    seed: &str,
    until: u64,
    door: Option<&Path>,
) -> Result<String, Error> {
    let until = until.to_string();
    let worktrees = layout.worktrees().display().to_string();
    let labels = [
        // Empty: a member is no run's until claimed, but `eden clean --all-repos` finds it.
        (LABEL_RUN, String::new()),
        (LABEL_POOL, pool.key.clone()),
        (LABEL_UNTIL, until.clone()),
        (LABEL_REPO, layout.root.display().to_string()),
        (LABEL_PID, "0".to_owned()),
        (LABEL_USER, run_user()),
        (LABEL_SEED, seed.to_owned()),
    ];
    let mut command = target.command().args(["run", "-d", "--init", "--name", name]);
    for (key, value) in &labels {
        command = command.args(["--label", &format!("{key}={value}")]);
    }
    if let Some(door) = door {
        fs_err::create_dir_all(door).map_err(|err| Error::sandbox(err.to_string()))?;
        command = command.args(["-v", &format!("{}:{DOOR_INSIDE}", door.display())]);
    }
    let command = command.args(&pool.args).args(["-w", "/"]).arg(&pool.image);
    let command = command.args(["sh", "-c", IDLE_SCRIPT, "sh", &until, &worktrees, KEEP_ALIVE_FILE]);
    let failed = |made: &crate::process::Output| {
        Error::sandbox(format!(
            "{} cannot start a pool member from `{}`: {}",
            target.describe(),
            pool.image,
            first_line(&made.stderr)
        ))
    };
    let made = engine::run(command.finishing())?;
    if !made.success() {
        return Err(failed(&made));
    }
    let prepare = target.command().args(["exec", "-u", "0", name, "sh", "-c", PREPARE_SCRIPT, "sh"]);
    let prepared = engine::run(prepare.args([run_user().as_str(), &worktrees, PIDS_INSIDE]))?;
    if !prepared.success() {
        return Err(failed(&prepared));
    }
    if !seed.is_empty() {
        seed_member(target, layout, name, seed)?;
    }
    Ok(made.stdout.trim().to_owned())
}

/// Where member `name` (as it is named when ready, `eden-pool-KEY-ID`) has its door's folder
/// on this machine: `.eden/pool/doors/ID`.
pub(super) fn door_dir(layout: &Layout, name: &str) -> Option<PathBuf> {
    let name = name.strip_suffix(MAKING).unwrap_or(name);
    let (_, id) = name.strip_prefix(IDLE_PREFIX)?.split_once('-')?;
    crate::record::is_run_id(id).then(|| pool_dir(layout).join("doors").join(id))
}

/// A member gets a door where eden's executable is mounted in (a local engine) and where a
/// socket made inside is one this machine can connect to (not under gVisor, whose sockets are
/// its own).
fn opens_a_door(pool: &PoolFile) -> bool {
    let eden_mounted = pool.args.iter().any(|arg| arg.ends_with(&format!(":{EDEN_INSIDE}:ro")));
    let gvisor = pool.args.windows(2).any(|pair| pair[0] == "--runtime" && super::exec::is_gvisor(&pair[1]));
    eden_mounted && !gvisor
}

/// The door started in member `name` as the run's user, and waited for (a member whose door
/// does not open is still a member: its claims go through the engine's `exec`).
fn open_door(target: &Target, name: &str, door: &Path) -> Result<bool, Error> {
    let socket = format!("{DOOR_INSIDE}/{}", crate::sandbox::door::SOCKET);
    let start = target.command().args(["exec", "-d", "-u", &run_user(), name, EDEN_INSIDE]);
    engine::run(start.args([crate::sandbox::door::DOOR_SUBCOMMAND, socket.as_str()]).finishing())?;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let socket = door.join(crate::sandbox::door::SOCKET);
    while std::time::Instant::now() < deadline {
        if crate::sandbox::door::Door::open(&socket).is_some() {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(false)
}

/// A door's folder, gone with its member.
pub(super) fn forget_door(door: Option<&Path>) {
    if let Some(door) = door {
        let _ = crate::safe_fs::remove_tree(door);
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

/// A member claimed: as it was listed, its door if it has one, and its rename to the run's
/// name if that is still under way (a claim at the door renames behind the claim).
pub(super) struct Claimed {
    pub(super) member: Member,
    pub(super) door: Option<crate::sandbox::door::Door>,
    pub(super) renaming: Option<std::thread::JoinHandle<Result<crate::process::Output, Error>>>,
}

/// Claim an idle member of pool `key` for the run: the claim written, then the member taken
/// (at its door, or by the engine's rename to `name`). `None` when no member could be claimed
/// (there is none, or others took them first).
pub(super) fn claim(
    target: &Target,
    layout: &Layout,
    key: &str,
    name: &str,
    claim: &Claim,
    start: &str,
) -> Result<Option<Claimed>, Error> {
    // One claim at a time in the repository: two `rename`s of one container at once can both
    // succeed (the engine's rename is not atomic under concurrency: seen with docker), so the
    // listing and the rename are done under this lock. A killed eden's lock goes with it.
    fs_err::create_dir_all(pool_dir(layout).join("claims")).map_err(|err| Error::sandbox(err.to_string()))?;
    let _held = claim_lock(layout)?;
    if let Some(claimed) = claim_at_the_door(target, layout, key, name, claim, start)? {
        return Ok(Some(claimed));
    }
    // Members with a door are claimed only at it: one listed idle here may be being renamed.
    let mut idle: Vec<Member> = members(target, &layout.root)?
        .into_iter()
        .filter(|member| member.key == key && member.claimable())
        .filter(|member| !door_dir(layout, &member.name).is_some_and(|door| door.exists()))
        .collect();
    // One holding the repository at the run's start first, then the newest: the oldest end
    // first, and a refill replaces what is taken.
    idle.sort_by_key(|member| (member.seed != start, std::cmp::Reverse(member.until)));
    let path = claim_path(layout, name);
    for member in idle {
        write_claim(layout, name, claim, None)?;
        let renamed = engine::run(target.command().args(["rename", &member.name, name]).finishing())?;
        if renamed.success() {
            return Ok(Some(Claimed { member, door: None, renaming: None }));
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(None)
}

/// The repository's claim lock (`.eden/pool/claims.lock`), held until dropped.
fn claim_lock(layout: &Layout) -> Result<nix::fcntl::Flock<std::fs::File>, Error> {
    let lock = std::fs::File::create(pool_dir(layout).join("claims.lock"))
        .map_err(|err| Error::sandbox(format!("cannot open the pool's claim lock: {err}")))?;
    nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, err)| Error::sandbox(format!("cannot take the pool's claim lock: {err}")))
}

/// The claim of member `name`, naming the member's door: written before the member is taken,
/// so that a salvage finds both.
fn write_claim(layout: &Layout, name: &str, claim: &Claim, door: Option<PathBuf>) -> Result<(), Error> {
    let claim = Claim { door, ..claim.clone() };
    let json = serde_json::to_value(&claim).map_err(|err| Error::internal(err.to_string()))?;
    crate::record::save_json(&claim_path(layout, name), &json).map_err(|err| Error::sandbox(err.to_string()))
}

/// A member ready at its door (`ReadyMember`) taken by removing its file, under the claim lock,
/// with no call to the engine: its door answering says it is there. Its rename to `name`
/// goes on behind the claim.
fn claim_at_the_door(
    target: &Target,
    layout: &Layout,
    key: &str,
    name: &str,
    claim: &Claim,
    start: &str,
) -> Result<Option<Claimed>, Error> {
    let mut ready: Vec<(PathBuf, ReadyMember)> = ReadyMember::all(layout)
        .into_iter()
        .filter(|(_, member)| member.key == key && member.until > now() + MARGIN)
        .collect();
    ready.sort_by_key(|(_, member)| (member.seed != start, std::cmp::Reverse(member.until)));
    for (path, ready) in ready {
        // Taken, whether its door answers or not: one that does not is gone, or going.
        let _ = std::fs::remove_file(&path);
        let Some(folder) = door_dir(layout, &ready.name) else { continue };
        let Some(door) = crate::sandbox::door::Door::open(&folder.join(crate::sandbox::door::SOCKET)) else { continue };
        write_claim(layout, name, claim, Some(folder))?;
        let rename = target.command().args(["rename", &ready.name, name]).finishing();
        let renaming = std::thread::spawn(move || engine::run(rename));
        let member = Member {
            name: ready.name,
            id: ready.id,
            key: ready.key,
            running: true,
            until: ready.until,
            seed: ready.seed,
        };
        return Ok(Some(Claimed { member, door: Some(door), renaming: Some(renaming) }));
    }
    Ok(None)
}

/// `.eden/pool/ready/ID.json`: a member with a door, ready to be claimed at it. Written by eden
/// once the member is ready, in a folder no sandbox sees; its claim removes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ReadyMember {
    name: String,
    id: String,
    key: String,
    until: u64,
    seed: String,
}

impl ReadyMember {
    fn folder(layout: &Layout) -> PathBuf {
        pool_dir(layout).join("ready")
    }

    fn write(&self, layout: &Layout) -> Result<(), Error> {
        let Some(door) = door_dir(layout, &self.name) else { return Ok(()) };
        let file = door.file_name().map(|id| Self::folder(layout).join(id).with_extension("json"));
        let json = serde_json::to_value(self).map_err(|err| Error::internal(err.to_string()))?;
        fs_err::create_dir_all(Self::folder(layout)).map_err(|err| Error::sandbox(err.to_string()))?;
        match file {
            Some(file) => crate::record::save_json(&file, &json).map_err(|err| Error::sandbox(err.to_string())),
            None => Ok(()),
        }
    }

    fn all(layout: &Layout) -> Vec<(PathBuf, ReadyMember)> {
        let files = crate::safe_fs::files_in(&Self::folder(layout));
        files
            .into_iter()
            .filter_map(|path| {
                let member: ReadyMember = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
                Some((path, member))
            })
            .collect()
    }
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
        if made.is_empty() {
            prune_doors(layout);
        }
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
                forget_door(door_dir(layout, &member.name).as_deref());
                removed.push(format!("{} ({})", member.name, target.describe()));
            }
        }
    }
    for (path, _) in ReadyMember::all(layout) {
        let _ = std::fs::remove_file(path);
    }
    prune_doors(layout);
    Ok(removed)
}

/// What doors leave behind, tidied (under the claim lock, so no claim is half made meanwhile):
/// a ready member's file once the member is gone; a member with a door that is neither ready
/// nor claimed by a live eden (its claim's eden died before the rename), removed; and a door's
/// folder no member has any more. A folder made in the last minute is spared: its member may
/// not be listed yet.
pub(super) fn prune_doors(layout: &Layout) {
    let Ok(_held) = claim_lock(layout) else { return };
    let mut targets: Vec<Target> = pools(layout).iter().filter_map(|pool| target_of(pool).ok()).collect();
    targets.dedup();
    let mut listed = Vec::new();
    for target in targets {
        let Ok(members) = members(&target, &layout.root) else { return };
        listed.extend(members.into_iter().map(|member| (target.clone(), member)));
    }
    let claims: Vec<Claim> = crate::safe_fs::files_in(&pool_dir(layout).join("claims"))
        .iter()
        .filter_map(|path| serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok())
        .collect();
    let ready = ReadyMember::all(layout);
    for (path, member) in &ready {
        if !listed.iter().any(|(_, listed)| listed.name == member.name && listed.running) {
            let _ = std::fs::remove_file(path);
        }
    }
    let recent = |path: &Path| {
        let modified = std::fs::metadata(path).and_then(|meta| meta.modified());
        modified.is_ok_and(|at| at.elapsed().unwrap_or_default() < Duration::from_secs(60))
    };
    let claimed_by = |door: &Path| claims.iter().find(|claim| claim.door.as_deref() == Some(door));
    let mut kept = Vec::new();
    for (target, member) in &listed {
        let Some(door) = door_dir(layout, &member.name).filter(|door| door.exists()) else { continue };
        let orphan = member.idle()
            && !member.name.ends_with(MAKING)
            && !ready.iter().any(|(_, ready)| ready.name == member.name)
            && !claimed_by(&door).is_some_and(|claim| claim.process.is_alive())
            && !recent(&door);
        if orphan && remove(target, &member.name).is_ok() {
            continue;
        }
        kept.push(door);
    }
    let Ok(entries) = std::fs::read_dir(pool_dir(layout).join("doors")) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if !kept.contains(&path) && claimed_by(&path).is_none() && !recent(&path) {
            let _ = crate::safe_fs::remove_tree(&path);
        }
    }
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
