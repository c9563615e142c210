//! Never run what came back: nothing an agent writes runs on this machine without the person's
//! say. eden's own git runs no repository hook (a tracked `.githooks/` the person's
//! `core.hooksPath` names), and a host hook never runs a file the agent changed — the scripts it
//! names, what they `source`, what its tools read by convention (`make`'s `Makefile`) — neither
//! in the next run after a merge (the merge is refused, exit 10) nor in the same run (the hook is
//! not run, exit 10). Every payload appends where it ran (its PID namespace) to a file on this
//! machine: the file existing is the proof that it ran here, and says where.

use crate::support::TestEnv;
use std::path::Path;

/// `script` as a `cli` agent (`sh -c`) in `sandbox`.
fn manifest(sandbox: &str, script: &str, extra: &str) -> String {
    let quoted = script.replace('\\', "\\\\").replace('"', "\\\"");
    let sandbox = match sandbox {
        "none" | "isolated" => format!("[sandbox]\nkind = \"{sandbox}\"\n"),
        engine => format!("[sandbox]\nkind = \"{engine}\"\nimage = \"{}\"\n", crate::containers::IMAGE),
    };
    format!(
        "name = \"back\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; {quoted}\"]\n\
         {sandbox}{extra}\n[loop]\nmax_iterations = 1\nidle_timeout = \"60s\"\n"
    )
}

fn ready(sandbox: &str) -> bool {
    match sandbox {
        "none" => true,
        "isolated" => crate::isolated::bwrap(),
        engine => crate::containers::ready(engine),
    }
}

/// The payload: a line naming `what` and the PID namespace it ran in, appended to `proof`.
fn payload(proof: &Path, what: &str) -> String {
    format!("echo \"{what} ran in $(readlink /proc/self/ns/pid)\" >> {}", proof.display())
}

/// What ran on this machine, if anything: the proof file's lines.
fn ran(proof: &Path) -> String {
    std::fs::read_to_string(proof).unwrap_or_default()
}

const COMMIT: &str = "git -c user.name=a -c user.email=a@e commit -qm";
const DONE: &str = "echo '<promise>COMPLETE</promise>'";

/// The person's repository uses `core.hooksPath = .githooks`; the agent commits hooks there for
/// every git command eden runs in the repository. The merge is refused (the hooks folder is
/// protected); merged by `eden merge` after review, and then a second run that commits, leaves
/// a file for `commit_leftovers`, merges and pushes: none of the hooks ever runs in eden's git.
fn git_hooks_never_run_in_eden_s_git(sandbox: &str) {
    if !ready(sandbox) {
        return;
    }
    let env = TestEnv::new();
    let proof = env.root().join("proof");
    env.git(&["config", "core.hooksPath", ".githooks"]);
    let remote = env.root().join("remote.git");
    env.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    env.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    let hooks = [
        "post-checkout",
        "post-merge",
        "pre-merge-commit",
        "reference-transaction",
        "pre-commit",
        "commit-msg",
        "post-commit",
        "pre-push",
        "post-rewrite",
    ];
    let mut plant = String::from("mkdir -p .githooks && ");
    for hook in hooks {
        plant.push_str(&format!(
            "printf '#!/bin/sh\\n%s\\n' '{}' > .githooks/{hook} && chmod +x .githooks/{hook} && ",
            payload(&proof, hook)
        ));
    }
    plant.push_str(&format!("git add .githooks && {COMMIT} hooks; {DONE}"));
    let run = env.run_manifest(&manifest(sandbox, &plant, ""), &[]);
    run.assert_code(10);
    assert!(run.error_text().contains("`.githooks/post-merge`"), "{}", run.stderr);
    assert_eq!(ran(&proof), "", "a planted git hook ran on this machine");
    let id = run.record()["id"].as_str().unwrap().to_owned();
    env.eden(&["merge", &id]).assert_code(0);
    assert_eq!(ran(&proof), "", "`eden merge` ran a git hook on this machine");

    // The hooks are the person's now (their own git runs them); eden's never does.
    let work = format!("echo w > w.txt && git add w.txt && {COMMIT} work && echo left > left.txt; {DONE}");
    let extra = "[branch]\ncommit_leftovers = true\npush = \"origin\"\n";
    let run = env.run_manifest(&manifest(sandbox, &work, extra), &[]);
    run.assert_code(0);
    assert_eq!(
        env.log_subjects("main")[..2],
        ["Work the agent left uncommitted (eden: branch.commit_leftovers)", "work"],
        "{}",
        run.stderr
    );
    assert_eq!(ran(&proof), "", "eden's worktree, commit, merge or push ran a git hook on this machine");
    assert!(env.git(&["--git-dir", remote.to_str().unwrap(), "branch", "--list"]).contains("eden/"), "pushed");
}

/// `on_worktree_ready = ["make -s setup"]` and `./setup.sh`, which sources `scripts/lib.sh`:
/// the agent changes the `Makefile` (with a payload) and `scripts/lib.sh`; neither is merged
/// (exit 10, naming them), the next run's hooks run the person's files, and the payloads never
/// run here.
fn what_host_hooks_execute_is_never_merged_unreviewed(sandbox: &str) {
    if !ready(sandbox) {
        return;
    }
    let env = TestEnv::new();
    let proof = env.root().join("proof");
    env.write("Makefile", "setup:\n\t@echo setting up\n");
    env.write("setup.sh", "#!/bin/sh\n. scripts/lib.sh\necho set up\n");
    env.write("scripts/lib.sh", "echo the library\n");
    std::fs::set_permissions(env.repo.join("setup.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.git(&["add", "."]);
    env.git(&["commit", "-qm", "setup"]);
    let hooks = "[hooks.host]\non_worktree_ready = [\"make -s setup\", \"./setup.sh\"]\n";
    for (changed, file) in [
        (
            "Makefile",
            format!(
                "printf 'setup:\\n\\t@{}\\n' > Makefile",
                payload(&proof, "Makefile").replace('$', "$$").replace('"', "\\\"")
            ),
        ),
        ("scripts/lib.sh", format!("printf '%s\\n' '{}' > scripts/lib.sh", payload(&proof, "lib.sh"))),
    ] {
        let script = format!("{file} && git add -A && {COMMIT} 'change {changed}'; {DONE}");
        let run = env.run_manifest(&manifest(sandbox, &script, hooks), &[]);
        run.assert_code(10);
        let error = run.error_text();
        assert!(error.contains(&format!("`{changed}`")) && error.contains("not merged"), "{error}");
        assert_eq!(env.log_subjects("main")[0], "setup", "nothing merged");
    }
    // The next run's hooks run the person's files.
    let run = env.run_manifest(&manifest(sandbox, DONE, hooks), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("setting up") && run.stderr.contains("the library"), "{}", run.stderr);
    assert_eq!(ran(&proof), "", "a payload ran on this machine");
}

/// A host hook after the agent (`on_iteration_end`, `on_close`) never runs what the agent
/// changed in the same run: the `Makefile` rewritten, the hook is not run (exit 10, naming the
/// file and the hook), the branch is kept. A host hook that changes what it reads itself (a
/// generated `.mk`) is the person's doing: the next iteration runs it again. A `--from` run
/// starting from the refused work runs no host hook on it either.
fn host_hooks_never_run_the_agent_s_changes_in_the_run(sandbox: &str) {
    if !ready(sandbox) {
        return;
    }
    let env = TestEnv::new();
    let proof = env.root().join("proof");
    env.write("Makefile", "lint:\n\t@echo linting\ngen:\n\t@echo 'X = 1' > generated.mk\n-include generated.mk\n");
    env.write(".gitignore", "");
    env.git(&["add", "."]);
    env.git(&["commit", "-qm", "make"]);
    // Two iterations: the host's `make gen` rewrites `generated.mk` each time, and runs again
    // (on a named branch, which merges nothing, with what it wrote committed at the end).
    let gen = "[branch]\nstrategy = \"named\"\nname = \"gen\"\ncommit_leftovers = true\n[hooks.host]\non_iteration_end = [\"make -s gen\"]\n";
    let script = format!("echo $$ >> n.txt; git add n.txt && {COMMIT} n; [ $(wc -l < n.txt) = 2 ] && {DONE}; exit 0");
    let run =
        env.run_manifest(&manifest(sandbox, &script, gen).replace("max_iterations = 1", "max_iterations = 2"), &[]);
    run.assert_code(0);

    let lint = "[hooks.host]\non_iteration_end = [\"make -s lint\"]\non_close = [\"make -s lint\"]\non_worktree_ready = [\"make -s lint\"]\n";
    let rewrite = format!(
        "printf 'lint:\\n\\t@{}\\n' > Makefile && git add Makefile && {COMMIT} 'lint differently'; {DONE}",
        payload(&proof, "Makefile").replace('$', "$$").replace('"', "\\\"")
    );
    let run = env.run_manifest(&manifest(sandbox, &rewrite, lint), &[]);
    run.assert_code(10);
    let error = run.error_text();
    assert!(
        error.contains("the agent changed `Makefile`, which the host hook `make -s lint` (on_iteration_end) runs on this machine: the hook was not run"),
        "{error}"
    );
    assert_eq!(ran(&proof), "", "the agent's Makefile ran on this machine");
    let record = run.record();
    let branch = record["preserved_branch"].as_str().expect("the branch is kept").to_owned();
    assert_eq!(env.log_subjects(&branch)[0], "lint differently");
    let id = record["id"].as_str().unwrap().to_owned();
    // Going on from that run: its Makefile is not the person's yet.
    let path = env.write_manifest(&manifest(sandbox, DONE, lint));
    let from = env.eden(&["run", path.to_str().unwrap(), "--from", &id]);
    from.assert_code(10);
    assert!(
        from.error_text().contains("the commits the run starts from (not merged yet) change `Makefile`, which the host hook `make -s lint` (on_worktree_ready)"),
        "{}",
        from.stderr
    );
    assert_eq!(ran(&proof), "", "the earlier agent's Makefile ran on this machine");
}

macro_rules! per_sandbox {
    ($($sandbox:ident),*) => {$(
        mod $sandbox {
            #[test]
            fn git_hooks_never_run_in_eden_s_git() {
                super::git_hooks_never_run_in_eden_s_git(stringify!($sandbox));
            }
            #[test]
            fn what_host_hooks_execute_is_never_merged_unreviewed() {
                super::what_host_hooks_execute_is_never_merged_unreviewed(stringify!($sandbox));
            }
            #[test]
            fn host_hooks_never_run_the_agent_s_changes_in_the_run() {
                super::host_hooks_never_run_the_agent_s_changes_in_the_run(stringify!($sandbox));
            }
        }
    )*};
}

per_sandbox!(isolated, docker, podman);

/// `--dry-run` and `eden doctor` say what each host hook executes, and what a script sources
/// that eden cannot name (for `hooks.host.reads`).
#[test]
fn what_host_hooks_execute_is_said_before_a_run() {
    let env = TestEnv::new();
    env.write("setup.sh", "#!/bin/sh\n. \"$(dirname \"$0\")/lib/env.sh\"\n. \"$CONFIG\"\n");
    let path = env.write_manifest(
        "prompt = \"go\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"isolated\"\n\
         [hooks.host]\non_worktree_ready = [\"make -s setup\", \"./setup.sh\"]\non_close = [\"npm ci\"]\nreads = [\"conf/*.env\"]\n",
    );
    let run = env.eden(&["run", path.to_str().unwrap(), "--dry-run"]);
    run.assert_code(0);
    let hooks = run.json()["host_hooks"].clone();
    let reads = |index: usize| -> Vec<String> {
        hooks[index]["reads"].as_array().unwrap().iter().map(|read| read.as_str().unwrap().to_owned()).collect()
    };
    assert!(reads(0).contains(&"Makefile".to_owned()) && reads(0).contains(&"conf/*.env".to_owned()), "{hooks:#}");
    assert!(reads(1).contains(&"setup.sh".to_owned()) && reads(1).contains(&"lib/env.sh".to_owned()), "{hooks:#}");
    assert_eq!(hooks[1]["unresolved"][0], "$CONFIG (in `setup.sh`)");
    assert!(reads(2).contains(&"package.json".to_owned()) && hooks[2]["after_agent"] == true, "{hooks:#}");
    let doctor = env.eden(&["doctor", path.to_str().unwrap()]);
    assert!(
        doctor.stderr.contains("host hook: `make -s setup` (on_worktree_ready) runs on this machine and reads `*.mk`"),
        "{}",
        doctor.stderr
    );
    assert!(doctor.stderr.contains("it runs after the agent, and is not run if the agent changed one of them"));
    assert!(doctor.stderr.contains("`./setup.sh` sources $CONFIG (in `setup.sh`), which eden cannot name"));
}
