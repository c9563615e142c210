//! What comes back from a sandbox is data that can steer neither eden nor the person's next run:
//! commits under `.eden/` (a forged run record, a `.env`), a branch pointed at another branch,
//! uncommitted work in `.eden/`, a run that rewrites the manifest that started it.

use crate::support::TestEnv;

/// `script` as a `cli` agent (`sh -c`) in `sandbox` (`isolated`, or a container engine).
fn manifest(sandbox: &str, script: &str) -> String {
    match sandbox {
        "isolated" => {
            let script = script.replace('\\', "\\\\").replace('"', "\\\"");
            format!(
                "name = \"back\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; {script}\"]\n\
                 [sandbox]\nkind = \"isolated\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"60s\"\n"
            )
        }
        engine => crate::containers::manifest(engine, script, ""),
    }
}

fn ready(sandbox: &str) -> bool {
    match sandbox {
        "isolated" => crate::isolated::bwrap(),
        engine => crate::containers::ready(engine),
    }
}

const COMMIT: &str = "git -c user.name=a -c user.email=a@e commit -qm";

/// Commits under `.eden/` — a run record dated 2099 that would become `last`, a `.env` that
/// would reach the next run's hooks — are refused: exit 6, nothing merged, the person's
/// `.eden/` and branch as they were, and `last` is still the person's own run.
fn eden_state_is_never_merged(sandbox: &str) {
    if !ready(sandbox) {
        return;
    }
    let env = TestEnv::new();
    let forged = "{\"version\":1,\"id\":\"20991231-000000-forged\",\"kind\":\"run\",\"status\":\"finished\"}";
    let script = format!(
        "mkdir -p .eden/runs && printf '%s' '{forged}' > .eden/runs/20991231-000000-forged.json && \
         printf 'LD_PRELOAD=/tmp/evil.so\\n' > .eden/.env && git add -f .eden && {COMMIT} 'state'; \
         echo '<promise>COMPLETE</promise>'"
    );
    let before = env.git(&["rev-parse", "main"]);
    let run = env.run_manifest(&manifest(sandbox, &script), &[]);
    run.assert_code(6);
    assert!(run.error_text().contains("the agent's commits touch eden's own folder"), "{}", run.stderr);
    assert!(run.error_text().contains(".eden/.env"), "{}", run.stderr);
    assert_eq!(env.git(&["rev-parse", "main"]), before, "nothing merged");
    assert!(!env.repo.join(".eden/.env").exists(), "the person's .eden/ is untouched");
    assert!(!env.repo.join(".eden/runs/20991231-000000-forged.json").exists());
    let last = env.eden(&["sessions", "show", "last", "--json"]);
    let id = run.record()["id"].as_str().unwrap().to_owned();
    assert!(last.stdout.lines().next().unwrap_or_default().contains(&id), "`last` is eden's own run: {}", last.stdout);
    // Uncommitted, the same: `.eden/` is excluded in the sandbox's repository, and when the
    // agent lifts that, the patch naming it is kept for reading, never applied.
    let script = "mkdir -p .eden && echo 'LD_PRELOAD=/tmp/evil.so' > .eden/.env && : > .git/info/exclude; \
                  echo '<promise>COMPLETE</promise>'";
    let run = env.run_manifest(&manifest(sandbox, script), &[]);
    run.assert_code(6);
    assert!(run.error_text().contains("in eden's own folder"), "{}", run.stderr);
    assert!(!env.repo.join(".eden/.env").exists());
}

/// A branch the agent pointed at another of the person's branches is not merged as its work.
fn a_branch_pointed_elsewhere_is_refused(sandbox: &str) {
    if !ready(sandbox) {
        return;
    }
    let env = TestEnv::new();
    env.git(&["checkout", "-q", "--orphan", "unrelated"]);
    env.git(&["commit", "-q", "--allow-empty", "-m", "someone else's branch"]);
    env.git(&["checkout", "-q", "main"]);
    let script = "git reset -q --hard unrelated; echo '<promise>COMPLETE</promise>'";
    let before = env.git(&["rev-parse", "main"]);
    let run = env.run_manifest(&manifest(sandbox, script), &[]);
    run.assert_code(6);
    assert!(run.error_text().contains("does not grow from the run's start"), "{}", run.stderr);
    assert_eq!(env.git(&["rev-parse", "main"]), before, "nothing merged");
}

macro_rules! per_sandbox {
    ($($sandbox:ident),*) => {$(
        mod $sandbox {
            #[test]
            fn eden_state_is_never_merged() {
                super::eden_state_is_never_merged(stringify!($sandbox));
            }
            #[test]
            fn a_branch_pointed_elsewhere_is_refused() {
                super::a_branch_pointed_elsewhere_is_refused(stringify!($sandbox));
            }
            #[test]
            fn a_run_cannot_rewrite_what_steers_it() {
                super::a_run_cannot_rewrite_what_steers_it(stringify!($sandbox));
            }
            #[test]
            fn what_comes_back_is_bounded() {
                super::what_comes_back_is_bounded(stringify!($sandbox));
            }
            #[test]
            fn a_patch_bomb_is_refused() {
                super::a_patch_bomb_is_refused(stringify!($sandbox));
            }
        }
    )*};
}

per_sandbox!(isolated, docker, podman);

/// A run whose commits rewrite the manifest that started it — to `kind = "none"` with a host
/// hook, for the next run of a script that chains runs — is not merged: exit 10, the branch
/// kept, the files named; the next run of the manifest still runs what the person wrote, and
/// `eden merge RUN` merges the work once reviewed. `branch.protect` adds the person's own paths.
fn a_run_cannot_rewrite_what_steers_it(sandbox: &str) {
    if !ready(sandbox) {
        return;
    }
    let env = TestEnv::new();
    let marker = env.root().join("hook-ran-on-the-host");
    let rewrite = format!(
        "printf '[hooks.host]\\non_close = [\\\"touch {}\\\"]\\n' >> eden.toml && sed -i 's/^kind = \\\"{sandbox}\\\"/kind = \\\"none\\\"/' eden.toml && \
         echo work > work.txt && git add eden.toml work.txt && {COMMIT} 'steer the next run'; echo '<promise>COMPLETE</promise>'",
        marker.display()
    );
    env.write("eden.toml", &manifest(sandbox, &rewrite));
    env.git(&["add", "eden.toml"]);
    env.git(&["commit", "-q", "-m", "the manifest"]);
    let before = env.git(&["rev-parse", "main"]);
    let run = env.eden(&["run", "eden.toml", "--json"]);
    run.assert_code(10);
    let error = run.error_text();
    assert!(error.contains("`eden.toml`") && error.contains("not merged"), "{error}");
    let record = run.record();
    assert_eq!(record["exit_reason"], "protected");
    assert_eq!(record["error"]["conflicts"][0], "eden.toml");
    let id = record["id"].as_str().unwrap().to_owned();
    assert!(error.contains(&format!("eden merge {id}")), "{error}");
    assert_eq!(env.git(&["rev-parse", "main"]), before, "nothing merged");
    let kept = record["preserved_branch"].as_str().expect("the branch is kept").to_owned();
    assert!(env.git(&["show", &format!("{kept}:eden.toml")]).contains("kind = \"none\""));
    assert!(!marker.exists(), "the planted hook never ran");
    // The person reviews and merges: now the manifest is theirs to run.
    env.eden(&["merge", &id]).assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "steer the next run");

    // `branch.protect`: the person's own paths under the same rule.
    let env = TestEnv::new();
    let script = format!("mkdir -p .github/workflows && echo x > .github/workflows/ci.yml && git add .github && {COMMIT} ci; echo '<promise>COMPLETE</promise>'");
    let guarded =
        manifest(sandbox, &script).replace("[loop]", "[branch]\nprotect = [\".github/workflows/**\"]\n[loop]");
    let run = env.run_manifest(&guarded, &[]);
    run.assert_code(10);
    assert!(run.error_text().contains("`.github/workflows/ci.yml`"), "{}", run.stderr);
    let unguarded = env.run_manifest(&manifest(sandbox, &script), &[]);
    unguarded.assert_code(0);
}

/// What comes back is bounded: a 60 MB commit against `max_return = "20m"` is refused as it
/// streams (exit 6, naming `max_return`), nothing of it is fetched or merged, and the work stays
/// in the sandbox's workspace for the person; so is 30 MB left uncommitted; and a patch that
/// declares a file of 4 GiB (a fake `git` in the sandbox prints it) is refused unapplied.
fn what_comes_back_is_bounded(sandbox: &str) {
    if !ready(sandbox) {
        return;
    }
    let env = TestEnv::new();
    // `[loop]` follows `[sandbox]` in these manifests.
    let capped = |script: &str| manifest(sandbox, script).replace("[loop]", "max_return = \"20m\"\n[loop]");
    let big = "head -c 62914560 /dev/urandom > big.bin";
    let before = env.git(&["rev-parse", "main"]);
    let run = env.run_manifest(
        &capped(&format!("{big} && git add big.bin && {COMMIT} big; echo '<promise>COMPLETE</promise>'")),
        &[],
    );
    run.assert_code(6);
    let error = run.error_text();
    assert!(error.contains("more than `sandbox.max_return` (20 MiB) of commits"), "{error}");
    assert!(error.contains("is kept"), "the work stays where the person can get it: {error}");
    assert_eq!(env.git(&["rev-parse", "main"]), before, "nothing merged");
    let objects = std::process::Command::new("du").args(["-sk"]).arg(env.repo.join(".git/objects")).output().unwrap();
    let kib: u64 = String::from_utf8_lossy(&objects.stdout).split_whitespace().next().unwrap().parse().unwrap();
    assert!(kib < 20 * 1024, "nothing of it was fetched: {kib} KiB of objects");
    assert!(
        !env.repo.join(".eden/patches").read_dir().is_ok_and(|mut dir| dir.next().is_some()),
        "no salvage past the cap"
    );
    // Uncommitted, the same.
    let run = env.run_manifest(&capped(&format!("{big}; echo '<promise>COMPLETE</promise>'")), &[]);
    run.assert_code(6);
    assert!(run.error_text().contains("more than `sandbox.max_return` (20 MiB) of uncommitted work"), "{}", run.stderr);
    // `eden clean` finds what was kept (the engine's volumes: docker 20.10 too) and `--force`
    // removes it.
    let listed = env.eden(&["clean", "--dry-run"]);
    assert!(!listed.stderr.contains("cannot list"), "{}", listed.stderr);
    if sandbox == "isolated" {
        // A salvage brings back no more than the run would have: the copy stays for the person.
        let kept = env.eden(&["clean"]);
        let said = format!("{}{}", kept.stdout, kept.stderr);
        assert!(said.contains("more than its run's `sandbox.max_return` (20 MiB): kept"), "{said}");
    }
    env.eden(&["clean", "--force"]).assert_code(0);
    if sandbox != "isolated" {
        let volumes = std::process::Command::new(sandbox)
            .args(["volume", "ls", "-q", "--filter", "label=eden.run"])
            .output()
            .unwrap();
        let repo = std::fs::canonicalize(&env.repo).unwrap();
        let left = std::process::Command::new(sandbox)
            .args(["volume", "ls", "-q", "--filter", &format!("label=eden.repo={}", repo.display())])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&left.stdout).trim().is_empty(), "kept volumes removed: {volumes:?}");
    }
}

/// A patch bomb: the sandbox's own `git` (the agent, root in its container, can replace it)
/// prints a patch declaring a 4 GiB file; it is refused before `git apply` sees it.
fn a_patch_bomb_is_refused(sandbox: &str) {
    if sandbox == "isolated" || !ready(sandbox) {
        return;
    }
    let env = TestEnv::new();
    let fake = env.root().join("fake");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(
        fake.join("git"),
        "#!/bin/sh\ncase \"$*\" in *--binary*) printf 'diff --git a/z.bin b/z.bin\\nnew file mode 100644\\nGIT binary patch\\nliteral 4294967296\\nzcmeIu0Sy2E00062\\n\\n'; exit 0;; esac\nexec /usr/bin/git \"$@\"\n",
    )
    .unwrap();
    let script = "cp /fake/git /usr/local/bin/git && chmod 755 /usr/local/bin/git && echo x > loose.txt; echo '<promise>COMPLETE</promise>'";
    let mounts = format!("mounts = [{{ host = \"{}\", sandbox = \"/fake\", read_only = true }}]", fake.display());
    let manifest = crate::containers::manifest(sandbox, script, &mounts);
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(6);
    assert!(run.error_text().contains("binary files in its uncommitted work"), "{}", run.stderr);
}
