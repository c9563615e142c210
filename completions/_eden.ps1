
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'eden' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'eden'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'eden' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run an agent as a manifest (or flags) describes: worktree, iterations, merge back')
            [CompletionResult]::new('interactive', 'interactive', [CompletionResultType]::ParameterValue, 'The agent''s own terminal UI, in a fresh worktree and sandbox, hooks and all')
            [CompletionResult]::new('init', 'init', [CompletionResultType]::ParameterValue, 'Write a starter manifest (and, for container sandboxes, a Dockerfile)')
            [CompletionResult]::new('image', 'image', [CompletionResultType]::ParameterValue, 'Build or remove the sandbox image')
            [CompletionResult]::new('clean', 'clean', [CompletionResultType]::ParameterValue, 'Remove what eden left behind: worktrees, branches, containers, locks, isolated copies')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'What a run changed against its base, through git''s pager and diff settings')
            [CompletionResult]::new('merge', 'merge', [CompletionResultType]::ParameterValue, 'Merge a kept run''s branch into its base, as the run''s own merge would')
            [CompletionResult]::new('discard', 'discard', [CompletionResultType]::ParameterValue, 'Remove a run''s branch, worktree and container; its record stays')
            [CompletionResult]::new('steer', 'steer', [CompletionResultType]::ParameterValue, 'Interrupt a live run''s agent and give its next iteration a new prompt')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'A live dashboard of the runs: follow, steer, diff, merge, discard and stop them')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve eden to another agent over MCP (stdio): start, watch, steer and review runs')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check what a first run needs, and say what to fix')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script for bash, zsh, fish, elvish or powershell')
            [CompletionResult]::new('schema', 'schema', [CompletionResultType]::ParameterValue, 'Print the manifest''s JSON Schema, for editors and checkers (taplo, Even Better TOML)')
            [CompletionResult]::new('sessions', 'sessions', [CompletionResultType]::ParameterValue, 'The run history: list runs, replay one, total tokens and cost, remove runs')
            [CompletionResult]::new('pr', 'pr', [CompletionResultType]::ParameterValue, 'Open (or update) a run''s pull request, or follow it again (`eden pr follow RUN`)')
            [CompletionResult]::new('pool', 'pool', [CompletionResultType]::ParameterValue, 'Keep idle sandboxes warm for a manifest, so a run claims one instead of starting cold')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;run' {
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'With several runs: how many go at once (default: all of them, at most 8)')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'With several runs: how many go at once (default: all of them, at most 8)')
            [CompletionResult]::new('--jobs-per-host', '--jobs-per-host', [CompletionResultType]::ParameterName, 'With several runs spread over hosts (`sandbox.host = [..]`): at most N of them on one host')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Run the manifest N times at once from the same base, each on a branch of its own; the first attempt to finish with its completion signal and every check passing lands, the others are stopped and keep their branches (the manifest''s `attempts`; this wins)')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Start where another run left off: its branch''s tip (or with `RUN@N` the commit after its iteration N) and, where the agent can, its session (RUN: an id, a prefix or `last`)')
            [CompletionResult]::new('--matrix', '--matrix', [CompletionResultType]::ParameterName, 'Run each manifest once per value of a key, e.g. `--matrix agent.kind=claude-code,codex`; the run names get the value as a suffix (repeatable: every combination)')
            [CompletionResult]::new('--set', '--set', [CompletionResultType]::ParameterName, 'Override any manifest key, e.g. `--set agent.model=opus` (repeatable)')
            [CompletionResult]::new('--arg', '--arg', [CompletionResultType]::ParameterName, 'A prompt argument for `{{KEY}}` in the prompt (repeatable)')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent kind')
            [CompletionResult]::new('--binary', '--binary', [CompletionResultType]::ParameterName, 'The agent''s executable: a path, or a name looked up on PATH')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model passed to the agent')
            [CompletionResult]::new('--prompt', '--prompt', [CompletionResultType]::ParameterName, 'The task, as text')
            [CompletionResult]::new('--prompt-file', '--prompt-file', [CompletionResultType]::ParameterName, 'The task, from a file')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Run name (used in branch names and logs)')
            [CompletionResult]::new('--max-iterations', '--max-iterations', [CompletionResultType]::ParameterName, 'Most agent iterations')
            [CompletionResult]::new('--sandbox', '--sandbox', [CompletionResultType]::ParameterName, 'Sandbox kind (`docker` and `podman` also need an image: `--set sandbox.image=eden:NAME`)')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'The container engine to run on: `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a docker context / podman connection name (`sandbox.host`)')
            [CompletionResult]::new('--strategy', '--strategy', [CompletionResultType]::ParameterName, 'Branch strategy')
            [CompletionResult]::new('--branch', '--branch', [CompletionResultType]::ParameterName, 'Branch name for strategy `named`')
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Branch to start from (and merge back into)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository to work in (default: the current directory''s)')
            [CompletionResult]::new('--fail-fast', '--fail-fast', [CompletionResultType]::ParameterName, 'With several runs: stop the others (as Ctrl-C would) when one fails, start no more')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the resolved plan as JSON and stop')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the run record as JSON on stdout (or, if the run cannot start, the error)')
            [CompletionResult]::new('--json-events', '--json-events', [CompletionResultType]::ParameterName, 'Print every event as a JSON line on stdout as it happens; the last, `run_finished`, carries the run record')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress output (errors are still printed)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress output (errors are still printed)')
            [CompletionResult]::new('--timings', '--timings', [CompletionResultType]::ParameterName, 'Say how long each step to the agent''s first byte took: worktree, the sandbox''s claim or start, its environment and seed, the first exec, the first byte (the record keeps them either way)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'eden;interactive' {
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'With several runs: how many go at once (default: all of them, at most 8)')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'With several runs: how many go at once (default: all of them, at most 8)')
            [CompletionResult]::new('--jobs-per-host', '--jobs-per-host', [CompletionResultType]::ParameterName, 'With several runs spread over hosts (`sandbox.host = [..]`): at most N of them on one host')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Run the manifest N times at once from the same base, each on a branch of its own; the first attempt to finish with its completion signal and every check passing lands, the others are stopped and keep their branches (the manifest''s `attempts`; this wins)')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Start where another run left off: its branch''s tip (or with `RUN@N` the commit after its iteration N) and, where the agent can, its session (RUN: an id, a prefix or `last`)')
            [CompletionResult]::new('--matrix', '--matrix', [CompletionResultType]::ParameterName, 'Run each manifest once per value of a key, e.g. `--matrix agent.kind=claude-code,codex`; the run names get the value as a suffix (repeatable: every combination)')
            [CompletionResult]::new('--set', '--set', [CompletionResultType]::ParameterName, 'Override any manifest key, e.g. `--set agent.model=opus` (repeatable)')
            [CompletionResult]::new('--arg', '--arg', [CompletionResultType]::ParameterName, 'A prompt argument for `{{KEY}}` in the prompt (repeatable)')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent kind')
            [CompletionResult]::new('--binary', '--binary', [CompletionResultType]::ParameterName, 'The agent''s executable: a path, or a name looked up on PATH')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model passed to the agent')
            [CompletionResult]::new('--prompt', '--prompt', [CompletionResultType]::ParameterName, 'The task, as text')
            [CompletionResult]::new('--prompt-file', '--prompt-file', [CompletionResultType]::ParameterName, 'The task, from a file')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Run name (used in branch names and logs)')
            [CompletionResult]::new('--max-iterations', '--max-iterations', [CompletionResultType]::ParameterName, 'Most agent iterations')
            [CompletionResult]::new('--sandbox', '--sandbox', [CompletionResultType]::ParameterName, 'Sandbox kind (`docker` and `podman` also need an image: `--set sandbox.image=eden:NAME`)')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'The container engine to run on: `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a docker context / podman connection name (`sandbox.host`)')
            [CompletionResult]::new('--strategy', '--strategy', [CompletionResultType]::ParameterName, 'Branch strategy')
            [CompletionResult]::new('--branch', '--branch', [CompletionResultType]::ParameterName, 'Branch name for strategy `named`')
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Branch to start from (and merge back into)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository to work in (default: the current directory''s)')
            [CompletionResult]::new('--resume', '--resume', [CompletionResultType]::ParameterName, 'Continue this agent session (an id from `eden sessions list --json`)')
            [CompletionResult]::new('--fail-fast', '--fail-fast', [CompletionResultType]::ParameterName, 'With several runs: stop the others (as Ctrl-C would) when one fails, start no more')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the resolved plan as JSON and stop')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the run record as JSON on stdout (or, if the run cannot start, the error)')
            [CompletionResult]::new('--json-events', '--json-events', [CompletionResultType]::ParameterName, 'Print every event as a JSON line on stdout as it happens; the last, `run_finished`, carries the run record')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress output (errors are still printed)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress output (errors are still printed)')
            [CompletionResult]::new('--timings', '--timings', [CompletionResultType]::ParameterName, 'Say how long each step to the agent''s first byte took: worktree, the sandbox''s claim or start, its environment and seed, the first exec, the first byte (the record keeps them either way)')
            [CompletionResult]::new('--no-tty', '--no-tty', [CompletionResultType]::ParameterName, 'Without a terminal: the agent reads eden''s stdin and writes its stdout as they are')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'eden;init' {
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent kind for the manifest')
            [CompletionResult]::new('--sandbox', '--sandbox', [CompletionResultType]::ParameterName, 'Sandbox for the manifest')
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'Folder to write into (default: the current directory)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Overwrite existing files')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;image' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('build', 'build', [CompletionResultType]::ParameterValue, 'Build the image from `Dockerfile.eden` with your uid/gid baked in')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove the image')
            [CompletionResult]::new('push', 'push', [CompletionResultType]::ParameterValue, 'Copy a local image to another engine (`docker save | docker --host HOST load`)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;image;build' {
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'The container engine (default: docker when its daemon answers, else podman)')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'The engine to use, when not the client''s default: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name')
            [CompletionResult]::new('--tag', '--tag', [CompletionResultType]::ParameterName, 'Image name (default: the manifest''s `sandbox.image`, else `eden:<repository folder name>`)')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'The Dockerfile, as `eden init` writes it')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent whose CLI to install from npm (`none`: install nothing) (default: the manifest''s agent, else claude-code)')
            [CompletionResult]::new('--manifest', '--manifest', [CompletionResultType]::ParameterName, 'Build the image this manifest runs in: its engine, `host`, `image` and agent, unless the options above say otherwise')
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Base image (default: the Dockerfile''s, `node:22-bookworm-slim`)')
            [CompletionResult]::new('--build-arg', '--build-arg', [CompletionResultType]::ParameterName, 'A build argument for the Dockerfile (a proxy; `EXTRA_CA_CERT`, a CA certificate''s PEM text, not its path: `EXTRA_CA_CERT="$(cat ca.crt)"`): KEY=VALUE, or KEY to take its value from eden''s environment; repeatable. Values go to the engine in its environment, never on its command line')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;image;remove' {
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'The container engine (default: docker when its daemon answers, else podman)')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'The engine to use, when not the client''s default: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name')
            [CompletionResult]::new('--tag', '--tag', [CompletionResultType]::ParameterName, 'Image name (default: `eden:<repository folder name>`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;image;push' {
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'The container engine (default: docker when its daemon answers, else podman)')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'The engine to copy it to: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;image;help' {
            [CompletionResult]::new('build', 'build', [CompletionResultType]::ParameterValue, 'Build the image from `Dockerfile.eden` with your uid/gid baked in')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove the image')
            [CompletionResult]::new('push', 'push', [CompletionResultType]::ParameterValue, 'Copy a local image to another engine (`docker save | docker --host HOST load`)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;image;help;build' {
            break
        }
        'eden;image;help;remove' {
            break
        }
        'eden;image;help;push' {
            break
        }
        'eden;image;help;help' {
            break
        }
        'eden;clean' {
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Also remove logs, run records, sessions, patches and artifacts older than this (e.g. `7d`, `12h`)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository to clean (default: the current directory''s)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Only list what would be removed and what kept, and why')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Also remove dirty worktrees, unmerged `eden/*` branches and isolated copies with work in them')
            [CompletionResult]::new('--all-repos', '--all-repos', [CompletionResultType]::ParameterName, 'Containers and isolated copies of every repository, not just this one')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Containers and isolated copies of every repository, not just this one')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print what was found and done as JSON on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;diff' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository whose runs to look in (default: the current directory''s)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;merge' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository whose runs to look in (default: the current directory''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the run''s record, as it is now, on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;discard' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository whose runs to look in (default: the current directory''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the run''s record, as it is now, on stdout')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Also discard uncommitted changes in the run''s kept worktree')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;steer' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository whose runs to look in (default: the current directory''s)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;top' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;mcp' {
            [CompletionResult]::new('--allow', '--allow', [CompletionResultType]::ParameterName, 'The tools the client may call: names, `default` (all but merge and discard) or `all`')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository served (default: the current directory''s)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;doctor' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'The container engine to check, as `eden run --host` names one (`tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, a docker context or podman connection name); default: each client''s own')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Also try each agent''s model host over the network')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The findings as JSON on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;completions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;schema' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;sessions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'One line per run, newest first (from `.eden/runs/`)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Replay a run: prompts, the agent''s text, tool calls, hooks, usage, the outcome')
            [CompletionResult]::new('cost', 'cost', [CompletionResultType]::ParameterValue, 'Token and cost totals by run, agent, model, branch or day')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove runs: their records, logs, captured transcripts and patches')
            [CompletionResult]::new('transfer', 'transfer', [CompletionResultType]::ParameterValue, 'Copy a captured session into the agent''s own store for another directory')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'Continue an agent session: a run with `agent.resume` on the session''s branch')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;sessions;list' {
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only runs started within this long (e.g. `7d`, `12h`)')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Only runs of this name')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Only runs with this agent in one of their steps')
            [CompletionResult]::new('--status', '--status', [CompletionResultType]::ParameterName, 'Only runs with this status (running, finished, abandoned) or exit reason (completed, agent_failed, ...)')
            [CompletionResult]::new('--branch', '--branch', [CompletionResultType]::ParameterName, 'Only runs on this branch')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the runs as a JSON array on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;sessions;show' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--full', '--full', [CompletionResultType]::ParameterName, 'Whole prompts, texts and tool summaries (they are cut otherwise)')
            [CompletionResult]::new('--raw', '--raw', [CompletionResultType]::ParameterName, 'Print the captured transcripts as stored (JSON lines)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the run''s events as JSON lines')
            [CompletionResult]::new('--no-pager', '--no-pager', [CompletionResultType]::ParameterName, 'Never start a pager')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Follow a run as it goes (from another terminal): its events as `eden run` shows them, until it ends; exits with the run''s exit code')
            [CompletionResult]::new('--follow', '--follow', [CompletionResultType]::ParameterName, 'Follow a run as it goes (from another terminal): its events as `eden run` shows them, until it ends; exits with the run''s exit code')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;sessions;cost' {
            [CompletionResult]::new('--by', '--by', [CompletionResultType]::ParameterName, 'Group the totals by')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only runs started within this long (e.g. `7d`)')
            [CompletionResult]::new('--prices', '--prices', [CompletionResultType]::ParameterName, 'Price table (default: `~/.config/eden/prices.toml` when it exists)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the totals as JSON on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;sessions;rm' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;sessions;transfer' {
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'The working directory the agent will resume it in')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository whose runs to look in (default: the current directory''s)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Overwrite a session already there')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;sessions;resume' {
            [CompletionResult]::new('--prompt', '--prompt', [CompletionResultType]::ParameterName, 'The follow-up message (default: continue, and print the completion signal when done)')
            [CompletionResult]::new('--set', '--set', [CompletionResultType]::ParameterName, 'Override any manifest key (repeatable)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--interactive', '--interactive', [CompletionResultType]::ParameterName, 'Hand the terminal to the agent in that session (`eden interactive`)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the resolved plan as JSON; create nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the run record as JSON on stdout')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress output')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress output')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;sessions;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'One line per run, newest first (from `.eden/runs/`)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Replay a run: prompts, the agent''s text, tool calls, hooks, usage, the outcome')
            [CompletionResult]::new('cost', 'cost', [CompletionResultType]::ParameterValue, 'Token and cost totals by run, agent, model, branch or day')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove runs: their records, logs, captured transcripts and patches')
            [CompletionResult]::new('transfer', 'transfer', [CompletionResultType]::ParameterValue, 'Copy a captured session into the agent''s own store for another directory')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'Continue an agent session: a run with `agent.resume` on the session''s branch')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;sessions;help;list' {
            break
        }
        'eden;sessions;help;show' {
            break
        }
        'eden;sessions;help;cost' {
            break
        }
        'eden;sessions;help;rm' {
            break
        }
        'eden;sessions;help;transfer' {
            break
        }
        'eden;sessions;help;resume' {
            break
        }
        'eden;sessions;help;help' {
            break
        }
        'eden;pr' {
            [CompletionResult]::new('--manifest', '--manifest', [CompletionResultType]::ParameterName, 'The manifest with the `[pull_request]` (default: the run''s own, when it is in the repository)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the run record as JSON on stdout at the end')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress output')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress output')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('follow', 'follow', [CompletionResultType]::ParameterValue, 'Follow a run''s pull request again until it is green')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;pr;follow' {
            [CompletionResult]::new('--manifest', '--manifest', [CompletionResultType]::ParameterName, 'The manifest with the `[pull_request]` (default: the run''s own, when it is in the repository)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the run record as JSON on stdout at the end')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress output')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress output')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;pr;help' {
            [CompletionResult]::new('follow', 'follow', [CompletionResultType]::ParameterValue, 'Follow a run''s pull request again until it is green')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;pr;help;follow' {
            break
        }
        'eden;pr;help;help' {
            break
        }
        'eden;pool' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('up', 'up', [CompletionResultType]::ParameterValue, 'Start idle, generic sandboxes for a manifest''s sandbox settings (docker, podman and kubernetes)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'The repository''s warm pools and their members (idle, ended, claimed by a run)')
            [CompletionResult]::new('down', 'down', [CompletionResultType]::ParameterValue, 'Remove every idle member of the repository''s warm pools, and the pools')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;pool;up' {
            [CompletionResult]::new('--size', '--size', [CompletionResultType]::ParameterName, 'How many idle members to keep')
            [CompletionResult]::new('--idle', '--idle', [CompletionResultType]::ParameterName, 'How long an unclaimed member waits before it ends (e.g. `30m`, `2h`)')
            [CompletionResult]::new('--set', '--set', [CompletionResultType]::ParameterName, 'Override any manifest key, as `eden run --set` does (repeatable)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--no-refill', '--no-refill', [CompletionResultType]::ParameterName, 'Do not start a replacement behind each claim: the pool empties as runs claim it')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'What was done as JSON on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;pool;status' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'As JSON on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;pool;down' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'The repository (default: the current directory''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'As JSON on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'eden;pool;help' {
            [CompletionResult]::new('up', 'up', [CompletionResultType]::ParameterValue, 'Start idle, generic sandboxes for a manifest''s sandbox settings (docker, podman and kubernetes)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'The repository''s warm pools and their members (idle, ended, claimed by a run)')
            [CompletionResult]::new('down', 'down', [CompletionResultType]::ParameterValue, 'Remove every idle member of the repository''s warm pools, and the pools')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;pool;help;up' {
            break
        }
        'eden;pool;help;status' {
            break
        }
        'eden;pool;help;down' {
            break
        }
        'eden;pool;help;help' {
            break
        }
        'eden;help' {
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run an agent as a manifest (or flags) describes: worktree, iterations, merge back')
            [CompletionResult]::new('interactive', 'interactive', [CompletionResultType]::ParameterValue, 'The agent''s own terminal UI, in a fresh worktree and sandbox, hooks and all')
            [CompletionResult]::new('init', 'init', [CompletionResultType]::ParameterValue, 'Write a starter manifest (and, for container sandboxes, a Dockerfile)')
            [CompletionResult]::new('image', 'image', [CompletionResultType]::ParameterValue, 'Build or remove the sandbox image')
            [CompletionResult]::new('clean', 'clean', [CompletionResultType]::ParameterValue, 'Remove what eden left behind: worktrees, branches, containers, locks, isolated copies')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'What a run changed against its base, through git''s pager and diff settings')
            [CompletionResult]::new('merge', 'merge', [CompletionResultType]::ParameterValue, 'Merge a kept run''s branch into its base, as the run''s own merge would')
            [CompletionResult]::new('discard', 'discard', [CompletionResultType]::ParameterValue, 'Remove a run''s branch, worktree and container; its record stays')
            [CompletionResult]::new('steer', 'steer', [CompletionResultType]::ParameterValue, 'Interrupt a live run''s agent and give its next iteration a new prompt')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'A live dashboard of the runs: follow, steer, diff, merge, discard and stop them')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve eden to another agent over MCP (stdio): start, watch, steer and review runs')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check what a first run needs, and say what to fix')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script for bash, zsh, fish, elvish or powershell')
            [CompletionResult]::new('schema', 'schema', [CompletionResultType]::ParameterValue, 'Print the manifest''s JSON Schema, for editors and checkers (taplo, Even Better TOML)')
            [CompletionResult]::new('sessions', 'sessions', [CompletionResultType]::ParameterValue, 'The run history: list runs, replay one, total tokens and cost, remove runs')
            [CompletionResult]::new('pr', 'pr', [CompletionResultType]::ParameterValue, 'Open (or update) a run''s pull request, or follow it again (`eden pr follow RUN`)')
            [CompletionResult]::new('pool', 'pool', [CompletionResultType]::ParameterValue, 'Keep idle sandboxes warm for a manifest, so a run claims one instead of starting cold')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'eden;help;run' {
            break
        }
        'eden;help;interactive' {
            break
        }
        'eden;help;init' {
            break
        }
        'eden;help;image' {
            [CompletionResult]::new('build', 'build', [CompletionResultType]::ParameterValue, 'Build the image from `Dockerfile.eden` with your uid/gid baked in')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove the image')
            [CompletionResult]::new('push', 'push', [CompletionResultType]::ParameterValue, 'Copy a local image to another engine (`docker save | docker --host HOST load`)')
            break
        }
        'eden;help;image;build' {
            break
        }
        'eden;help;image;remove' {
            break
        }
        'eden;help;image;push' {
            break
        }
        'eden;help;clean' {
            break
        }
        'eden;help;diff' {
            break
        }
        'eden;help;merge' {
            break
        }
        'eden;help;discard' {
            break
        }
        'eden;help;steer' {
            break
        }
        'eden;help;top' {
            break
        }
        'eden;help;mcp' {
            break
        }
        'eden;help;doctor' {
            break
        }
        'eden;help;completions' {
            break
        }
        'eden;help;schema' {
            break
        }
        'eden;help;sessions' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'One line per run, newest first (from `.eden/runs/`)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Replay a run: prompts, the agent''s text, tool calls, hooks, usage, the outcome')
            [CompletionResult]::new('cost', 'cost', [CompletionResultType]::ParameterValue, 'Token and cost totals by run, agent, model, branch or day')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove runs: their records, logs, captured transcripts and patches')
            [CompletionResult]::new('transfer', 'transfer', [CompletionResultType]::ParameterValue, 'Copy a captured session into the agent''s own store for another directory')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'Continue an agent session: a run with `agent.resume` on the session''s branch')
            break
        }
        'eden;help;sessions;list' {
            break
        }
        'eden;help;sessions;show' {
            break
        }
        'eden;help;sessions;cost' {
            break
        }
        'eden;help;sessions;rm' {
            break
        }
        'eden;help;sessions;transfer' {
            break
        }
        'eden;help;sessions;resume' {
            break
        }
        'eden;help;pr' {
            [CompletionResult]::new('follow', 'follow', [CompletionResultType]::ParameterValue, 'Follow a run''s pull request again until it is green')
            break
        }
        'eden;help;pr;follow' {
            break
        }
        'eden;help;pool' {
            [CompletionResult]::new('up', 'up', [CompletionResultType]::ParameterValue, 'Start idle, generic sandboxes for a manifest''s sandbox settings (docker, podman and kubernetes)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'The repository''s warm pools and their members (idle, ended, claimed by a run)')
            [CompletionResult]::new('down', 'down', [CompletionResultType]::ParameterValue, 'Remove every idle member of the repository''s warm pools, and the pools')
            break
        }
        'eden;help;pool;up' {
            break
        }
        'eden;help;pool;status' {
            break
        }
        'eden;help;pool;down' {
            break
        }
        'eden;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
