//! A hermetic world per test: temp HOME, an empty `GIT_CONFIG_GLOBAL` file (checked to still be
//! empty at the end), a fresh repository with one commit, and helpers to run eden and git.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const EDEN: &str = env!("CARGO_BIN_EXE_eden");

pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub repo: PathBuf,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new().prefix("eden-it-").tempdir().expect("temp dir");
        let env = TestEnv { repo: dir.path().join("repo"), dir };
        std::fs::create_dir_all(env.home()).unwrap();
        std::fs::create_dir_all(env.tmp()).unwrap();
        std::fs::write(env.global_config(), "").unwrap();
        std::fs::create_dir_all(&env.repo).unwrap();
        env.git(&["init", "-q", "-b", "main"]);
        env.write("README.md", "# test repo\n");
        env.git(&["add", "README.md"]);
        env.git(&["commit", "-q", "-m", "initial commit"]);
        env
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// `TMPDIR` for everything the test runs (isolated copies live there): gone with the test.
    pub fn tmp(&self) -> PathBuf {
        self.root().join("tmp")
    }

    pub fn global_config(&self) -> PathBuf {
        self.root().join("gitconfig")
    }

    /// Environment every child gets: hermetic git, fixed identity, no inherited git state.
    pub fn apply_env(&self, command: &mut Command) {
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GIT_") {
                command.env_remove(key);
            }
        }
        command
            .env("HOME", self.home())
            .env("TMPDIR", self.tmp())
            .env("GIT_CONFIG_GLOBAL", self.global_config())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env_remove("NO_COLOR")
            // eden's user config (`[notify]`, prices) is the test's own `HOME`'s.
            .env_remove("XDG_CONFIG_HOME")
            // A test's runs never write the summary of the job the suite runs in.
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_OUTPUT");
    }

    pub fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.repo, args)
    }

    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let mut command = Command::new("git");
        command.args(args).current_dir(dir).env("PWD", dir).stdin(Stdio::null());
        self.apply_env(&mut command);
        let output = command.output().expect("git runs");
        assert!(output.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim_end().to_owned()
    }

    /// Write a file relative to the repository.
    pub fn write(&self, path: &str, content: &str) -> PathBuf {
        let path = self.repo.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// An executable bash script outside the repository.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.root().join(name);
        std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    pub fn eden_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(EDEN);
        // PWD too: a child that trusts $PWD must never find the developer's checkout there.
        command.args(args).current_dir(&self.repo).env("PWD", &self.repo).stdin(Stdio::null());
        self.apply_env(&mut command);
        command
    }

    pub fn eden(&self, args: &[&str]) -> Run {
        let output = self.eden_command(args).output().expect("eden runs");
        Run::from(output)
    }

    /// Write the manifest outside the repository (so `head` runs see a clean checkout) and run
    /// it from the repository with `--json` and extra args.
    pub fn run_manifest(&self, manifest: &str, args: &[&str]) -> Run {
        let path = self.write_manifest(manifest);
        let path = path.to_string_lossy().into_owned();
        let mut all = vec!["run", path.as_str(), "--json"];
        all.extend_from_slice(args);
        self.eden(&all)
    }

    pub fn write_manifest(&self, manifest: &str) -> PathBuf {
        let path = self.root().join("plan.toml");
        std::fs::write(&path, with_test_runtime(manifest)).unwrap();
        path
    }

    pub fn branches(&self) -> Vec<String> {
        self.git(&["branch", "--format=%(refname:short)"]).lines().map(str::to_owned).collect()
    }

    pub fn worktree_count(&self) -> usize {
        self.git(&["worktree", "list", "--porcelain"]).lines().filter(|l| l.starts_with("worktree ")).count()
    }

    /// The newest run record in `.eden/runs/`.
    pub fn last_record(&self) -> serde_json::Value {
        let mut records: Vec<std::path::PathBuf> = std::fs::read_dir(self.repo.join(".eden/runs"))
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        records.sort();
        serde_json::from_str(&std::fs::read_to_string(records.last().expect("a run record")).unwrap()).unwrap()
    }

    pub fn log_subjects(&self, rev: &str) -> Vec<String> {
        self.git(&["log", "--format=%s", rev]).lines().map(str::to_owned).collect()
    }

    /// Replace this test's temp paths so messages can be snapshotted.
    pub fn redact(&self, text: &str) -> String {
        let root = self.root().to_string_lossy().into_owned();
        let canonical = std::fs::canonicalize(self.root()).unwrap().to_string_lossy().into_owned();
        text.replace(&canonical, "[TMP]").replace(&root, "[TMP]")
    }

    /// Nothing eden-made may remain: only `main`, one worktree, no `.eden` state but runs/locks dirs.
    pub fn assert_pristine(&self) {
        assert_eq!(self.branches(), ["main"], "no branch may be left behind");
        assert_eq!(self.worktree_count(), 1, "no worktree may be left behind");
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let global = std::fs::read_to_string(self.global_config()).unwrap_or_default();
            assert!(global.is_empty(), "the global git config was written: {global}");
            // Every record the test's runs wrote reads back as a `RunRecord`, losslessly.
            for entry in std::fs::read_dir(self.repo.join(".eden/runs")).into_iter().flatten() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|ext| ext == "json") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert_round_trip(&serde_json::from_str(&text).unwrap(), &path.display().to_string());
                }
            }
        }
    }
}

/// `value` (a run record as eden wrote it) loads as `eden::record::RunRecord` and serializes
/// back to exactly the same JSON.
pub fn assert_round_trip(value: &serde_json::Value, what: &str) {
    let record: eden::record::RunRecord = serde_json::from_value(value.clone())
        .unwrap_or_else(|err| panic!("{what} does not load as a run record: {err}\n{value:#}"));
    let again = serde_json::to_value(&record).unwrap();
    assert_eq!(&again, value, "{what} changes when loaded and written again");
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        use std::os::unix::process::ExitStatusExt;
        let code = output.status.code().unwrap_or_else(|| 128 + output.status.signal().unwrap_or(0));
        Run {
            code,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    /// stdout as the run record (`--json`), checked to read back as one.
    pub fn record(&self) -> serde_json::Value {
        let record = self.json();
        assert_round_trip(&record, "the record on stdout");
        record
    }

    /// stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not JSON ({err}):\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }

    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "exit code\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }

    /// The `error:` and `hint:` lines of stderr.
    pub fn error_text(&self) -> String {
        let start = if self.stderr.starts_with("error:") {
            0
        } else {
            self.stderr.find("\nerror:").map_or(self.stderr.len(), |i| i + 1)
        };
        self.stderr[start..].trim_end().to_owned()
    }
}

/// A manifest for a `cli` agent running `script`.
pub fn cli_manifest(script: &Path, extra: &str) -> String {
    format!(
        "name = \"t\"\nprompt = \"iteration {{{{ITERATION}}}}\"\n{extra}\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n",
        script.display()
    )
}

/// Wait until the agent has touched `path` (its way of saying it is running).
pub fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {}", path.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Start eden on `manifest`, wait until the agent touched `ready`, send `signals` to eden (a
/// real SIGINT/SIGTERM, as a terminal or CI runner would), and collect the run and how long it
/// took from the first signal.
pub fn interrupt(
    env: &TestEnv,
    manifest: &str,
    ready: &Path,
    signals: &[nix::sys::signal::Signal],
) -> (Run, std::time::Duration) {
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    wait_for(ready);
    let sent = std::time::Instant::now();
    for signal in signals {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), *signal).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let output = child.wait_with_output().unwrap();
    (Run::from(output), sent.elapsed())
}

/// A number for `sleep 300.<number>`, a command line no other process has: whatever namespace
/// such a sleeper runs in (eden's PID namespaces, containers, bubblewrap), the host's process
/// table shows it, so `pgrep` from the test finds it where a pid written from inside would mean
/// nothing.
pub struct Marker(String);

impl Marker {
    pub fn new() -> Self {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        Marker(format!("{}{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst)))
    }

    /// The digits, for scripts that build the duration at run time (`A=300.; sleep $A${N}1`), so
    /// no command line but the sleeper's own carries it.
    pub fn digits(&self) -> &str {
        &self.0
    }

    /// `sleep 300.<digits>`, for scripts in files (their command line is the file's name).
    pub fn sleep(&self) -> String {
        format!("sleep 300.{}", self.0)
    }

    /// The processes whose command line carries the marker.
    pub fn alive(&self) -> Vec<String> {
        let output = Command::new("pgrep").args(["-af", &format!("300\\.{}", self.0)]).output().expect("pgrep runs");
        String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
    }

    /// Wait up to `within` for every marked process to be gone; the ones still there.
    pub fn gone_within(&self, within: std::time::Duration) -> Vec<String> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let alive = self.alive();
            if alive.is_empty() || std::time::Instant::now() >= deadline {
                return alive;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
    }
}

/// A test that cannot run here (an engine, bubblewrap or an agent CLI missing) says so instead
/// of passing quietly: a `SKIPPED` line on stderr, and a line in `target/tmp/skipped-tests.txt`,
/// which `.ci/run` and the README's note count. In CI (`CI` set) nothing may be skipped: it fails.
/// With `EDEN_TEST_RUNTIME` set (`.ci/run` runs the container suites again with `runsc`, gVisor),
/// every docker or podman manifest a test writes runs under that runtime, unless it names one.
pub fn with_test_runtime(manifest: &str) -> String {
    let Some(runtime) = std::env::var("EDEN_TEST_RUNTIME").ok().filter(|runtime| !runtime.is_empty()) else {
        return manifest.to_owned();
    };
    if manifest.contains("\nruntime = ") {
        return manifest.to_owned();
    }
    let mut out = String::new();
    for line in manifest.split_inclusive('\n') {
        out.push_str(line);
        if matches!(line.trim(), "kind = \"docker\"" | "kind = \"podman\"") {
            out.push_str(&format!("runtime = \"{runtime}\"\n"));
        }
    }
    out
}

pub fn skip(reason: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    assert!(std::env::var_os("CI").is_none(), "{test} cannot run in CI: {reason} (see .ci/run)");
    eprintln!("SKIPPED {test}: {reason}");
    use std::io::Write;
    let list = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.txt");
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(list) {
        // One write per line: appends from parallel tests do not interleave.
        let _ = file.write_all(format!("{test}: {reason}\n").as_bytes());
    }
}

/// Everything under `dir` as it is (symlinks not followed): each entry's relative path, kind,
/// mode and content (or link target), sorted. Equal digests mean an untouched tree.
pub fn tree_digest(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            let mode = meta.permissions().mode();
            if meta.file_type().is_symlink() {
                out.push(format!("{relative} link {:?}", std::fs::read_link(&path).ok()));
            } else if meta.is_dir() {
                out.push(format!("{relative} dir {mode:o}"));
                walk(root, &path, out);
            } else {
                out.push(format!("{relative} file {mode:o} {:?}", std::fs::read(&path).ok()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
