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
