//! Text an agent, a commit or a check prints is shown neutralized everywhere eden shows it:
//! escape sequences in `eden sessions show` in every output mode, and with `GITHUB_ACTIONS`
//! set, nothing that forms a workflow command. Raw text stays in the log, records and JSON.

use crate::support::TestEnv;

/// OSC 52 (write the clipboard), a title and a screen clear, in a tool call's name and in the
/// agent's text.
const OSC52: &str = "\\u001b]52;c;ZWNobyBwd25lZA==\\u0007";

fn claude_like(env: &TestEnv, name: &str) -> std::path::PathBuf {
    env.script(
        name,
        &format!(
            "cat >/dev/null\n\
             echo '{{\"type\":\"assistant\",\"message\":{{\"id\":\"m\",\"content\":[{{\"type\":\"text\",\"text\":\"look {OSC52}\\u001b]0;title\\u0007\\u001b[2J here\"}},{{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"{OSC52}Bash\",\"input\":{{\"command\":\"ls\"}}}}]}}}}'\n\
             echo '{{\"type\":\"user\",\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"ok\"}}]}}}}'\n\
             echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"<promise>COMPLETE</promise>\"}}'"
        ),
    )
}

#[test]
fn sessions_show_neutralizes_escape_sequences_in_every_mode() {
    let env = TestEnv::new();
    let agent = claude_like(&env, "claude-like");
    let manifest = format!(
        "name = \"t\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n[loop]\nmax_iterations = 1\n",
        agent.display()
    );
    env.run_manifest(&manifest, &[]).assert_code(0);
    for args in [&["sessions", "show", "last", "--no-pager"][..], &["sessions", "show", "last", "--full"]] {
        let mut command = env.eden_command(args);
        command.env("PAGER", "cat");
        let shown = crate::support::Run::from(command.output().unwrap());
        shown.assert_code(0);
        assert!(!shown.stdout.contains('\u{1b}') || !shown.stdout.contains("\u{1b}]"), "{:?}", shown.stdout);
        assert!(!shown.stdout.contains('\u{7}'), "a BEL reached the output: {:?}", shown.stdout);
        assert!(shown.stdout.contains("␛]52;c;"), "shown, visibly: {}", shown.stdout);
    }
    // The log and `--json` keep what the agent printed.
    let json = env.eden(&["sessions", "show", "last", "--json"]);
    assert!(json.stdout.contains("\\u001b]52;c;"), "{}", json.stdout);
}

/// Under `GITHUB_ACTIONS=true` nothing from the agent's text, a commit's subject or a check's
/// output forms a workflow command in what eden prints (stdout or stderr, plain or JSON);
/// without it, the text is as it was.
#[test]
fn no_workflow_command_reaches_a_github_runner() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho '::set-output name=pwned::yes'\necho '  ::error::indented'\necho 'text ##[error]legacy'\n\
         echo x > f.txt && git add f.txt && git -c user.name=a -c user.email=a@e commit -qm '::warning::from a commit subject'\n\
         echo '<promise>COMPLETE</promise>'",
    );
    let check = "[[check]]\nname = \"says\"\ncmd = \"echo '::add-mask::x'; echo '##[command]rm'; exit 1\"\n";
    let manifest = format!(
        "name = \"t\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n[loop]\nmax_iterations = 1\n{check}",
        agent.display()
    );
    let path = env.write_manifest(&manifest);
    for json_flag in ["--json", "--json-events"] {
        let mut command = env.eden_command(&["run", path.to_str().unwrap(), json_flag]);
        command.env("GITHUB_ACTIONS", "true");
        let run = crate::support::Run::from(command.output().unwrap());
        run.assert_code(9);
        for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            for line in text.lines() {
                assert!(!line.trim_start().starts_with("::"), "a workflow command on {stream}: {line}");
                assert!(!line.contains("##["), "a legacy workflow command on {stream}: {line}");
            }
        }
        assert!(run.stderr.contains("set-output name=pwned"), "the text is still shown: {}", run.stderr);
        if json_flag == "--json" {
            let record = run.json();
            assert_eq!(record["commits"][0]["subject"], "::warning::from a commit subject", "JSON keeps the text");
        }
    }
    // Outside a runner, nothing is changed.
    let run = env.eden(&["run", path.to_str().unwrap()]);
    assert!(run.stderr.contains("| ::set-output name=pwned::yes"), "{}", run.stderr);
}
