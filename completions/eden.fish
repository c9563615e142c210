# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_eden_global_optspecs
    string join \n h/help V/version
end

function __fish_eden_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_eden_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_eden_using_subcommand
    set -l cmd (__fish_eden_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c eden -n "__fish_eden_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c eden -n "__fish_eden_needs_command" -s V -l version -d 'Print version'
complete -c eden -n "__fish_eden_needs_command" -f -a "run" -d 'Run an agent as a manifest (or flags) describes: worktree, iterations, merge back'
complete -c eden -n "__fish_eden_needs_command" -f -a "interactive" -d 'The agent\'s own terminal UI, in a fresh worktree and sandbox, hooks and all'
complete -c eden -n "__fish_eden_needs_command" -f -a "init" -d 'Write a starter manifest (and, for container sandboxes, a Dockerfile)'
complete -c eden -n "__fish_eden_needs_command" -f -a "image" -d 'Build or remove the sandbox image'
complete -c eden -n "__fish_eden_needs_command" -f -a "clean" -d 'Remove what eden left behind: worktrees, branches, containers, locks, isolated copies'
complete -c eden -n "__fish_eden_needs_command" -f -a "diff" -d 'What a run changed against its base, through git\'s pager and diff settings'
complete -c eden -n "__fish_eden_needs_command" -f -a "merge" -d 'Merge a kept run\'s branch into its base, as the run\'s own merge would'
complete -c eden -n "__fish_eden_needs_command" -f -a "discard" -d 'Remove a run\'s branch, worktree and container; its record stays'
complete -c eden -n "__fish_eden_needs_command" -f -a "steer" -d 'Interrupt a live run\'s agent and give its next iteration a new prompt'
complete -c eden -n "__fish_eden_needs_command" -f -a "top" -d 'A live dashboard of the runs: follow, steer, diff, merge, discard and stop them'
complete -c eden -n "__fish_eden_needs_command" -f -a "mcp" -d 'Serve eden to another agent over MCP (stdio): start, watch, steer and review runs'
complete -c eden -n "__fish_eden_needs_command" -f -a "doctor" -d 'Check what a first run needs, and say what to fix'
complete -c eden -n "__fish_eden_needs_command" -f -a "completions" -d 'Print a shell completion script for bash, zsh, fish, elvish or powershell'
complete -c eden -n "__fish_eden_needs_command" -f -a "schema" -d 'Print the manifest\'s JSON Schema, for editors and checkers (taplo, Even Better TOML)'
complete -c eden -n "__fish_eden_needs_command" -f -a "sessions" -d 'The run history: list runs, replay one, total tokens and cost, remove runs'
complete -c eden -n "__fish_eden_needs_command" -f -a "pr" -d 'Open (or update) a run\'s pull request, or follow it again (`eden pr follow RUN`)'
complete -c eden -n "__fish_eden_needs_command" -f -a "pool" -d 'Keep idle sandboxes warm for a manifest, so a run claims one instead of starting cold'
complete -c eden -n "__fish_eden_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand run" -s j -l jobs -d 'With several runs: how many go at once (default: all of them, at most 8)' -r
complete -c eden -n "__fish_eden_using_subcommand run" -l jobs-per-host -d 'With several runs spread over hosts (`sandbox.host = [..]`): at most N of them on one host' -r
complete -c eden -n "__fish_eden_using_subcommand run" -l attempts -d 'Run the manifest N times at once from the same base, each on a branch of its own; the first attempt to finish with its completion signal and every check passing lands, the others are stopped and keep their branches (the manifest\'s `attempts`; this wins)' -r
complete -c eden -n "__fish_eden_using_subcommand run" -l from -d 'Start where another run left off: its branch\'s tip (or with `RUN@N` the commit after its iteration N) and, where the agent can, its session (RUN: an id, a prefix or `last`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l matrix -d 'Run each manifest once per value of a key, e.g. `--matrix agent.kind=claude-code,codex`; the run names get the value as a suffix (repeatable: every combination)' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l set -d 'Override any manifest key, e.g. `--set agent.model=opus` (repeatable)' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l arg -d 'A prompt argument for `{{KEY}}` in the prompt (repeatable)' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l agent -d 'Agent kind' -r -f -a "claude-code\t''
codex\t''
opencode\t''
pi\t''
cursor\t''
copilot\t''
cli\t''
simulated\t''"
complete -c eden -n "__fish_eden_using_subcommand run" -l binary -d 'The agent\'s executable: a path, or a name looked up on PATH' -r -F
complete -c eden -n "__fish_eden_using_subcommand run" -l model -d 'Model passed to the agent' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l prompt -d 'The task, as text' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l prompt-file -d 'The task, from a file' -r -F
complete -c eden -n "__fish_eden_using_subcommand run" -l name -d 'Run name (used in branch names and logs)' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l max-iterations -d 'Most agent iterations' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l sandbox -d 'Sandbox kind (`docker` and `podman` also need an image: `--set sandbox.image=eden:NAME`)' -r -f -a "none\t''
docker\t''
podman\t''
isolated\t''
kubernetes\t''"
complete -c eden -n "__fish_eden_using_subcommand run" -l host -d 'The container engine to run on: `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a docker context / podman connection name (`sandbox.host`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l strategy -d 'Branch strategy' -r -f -a "head\t''
merge-to-head\t''
named\t''"
complete -c eden -n "__fish_eden_using_subcommand run" -l branch -d 'Branch name for strategy `named`' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l base -d 'Branch to start from (and merge back into)' -r -f
complete -c eden -n "__fish_eden_using_subcommand run" -l repo -d 'The repository to work in (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand run" -l fail-fast -d 'With several runs: stop the others (as Ctrl-C would) when one fails, start no more'
complete -c eden -n "__fish_eden_using_subcommand run" -l dry-run -d 'Print the resolved plan as JSON and stop'
complete -c eden -n "__fish_eden_using_subcommand run" -l json -d 'Print the run record as JSON on stdout (or, if the run cannot start, the error)'
complete -c eden -n "__fish_eden_using_subcommand run" -l json-events -d 'Print every event as a JSON line on stdout as it happens; the last, `run_finished`, carries the run record'
complete -c eden -n "__fish_eden_using_subcommand run" -s q -l quiet -d 'No progress output (errors are still printed)'
complete -c eden -n "__fish_eden_using_subcommand run" -l timings -d 'Say how long each step to the agent\'s first byte took: worktree, the sandbox\'s claim or start, its environment and seed, the first exec, the first byte (the record keeps them either way)'
complete -c eden -n "__fish_eden_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c eden -n "__fish_eden_using_subcommand interactive" -s j -l jobs -d 'With several runs: how many go at once (default: all of them, at most 8)' -r
complete -c eden -n "__fish_eden_using_subcommand interactive" -l jobs-per-host -d 'With several runs spread over hosts (`sandbox.host = [..]`): at most N of them on one host' -r
complete -c eden -n "__fish_eden_using_subcommand interactive" -l attempts -d 'Run the manifest N times at once from the same base, each on a branch of its own; the first attempt to finish with its completion signal and every check passing lands, the others are stopped and keep their branches (the manifest\'s `attempts`; this wins)' -r
complete -c eden -n "__fish_eden_using_subcommand interactive" -l from -d 'Start where another run left off: its branch\'s tip (or with `RUN@N` the commit after its iteration N) and, where the agent can, its session (RUN: an id, a prefix or `last`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l matrix -d 'Run each manifest once per value of a key, e.g. `--matrix agent.kind=claude-code,codex`; the run names get the value as a suffix (repeatable: every combination)' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l set -d 'Override any manifest key, e.g. `--set agent.model=opus` (repeatable)' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l arg -d 'A prompt argument for `{{KEY}}` in the prompt (repeatable)' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l agent -d 'Agent kind' -r -f -a "claude-code\t''
codex\t''
opencode\t''
pi\t''
cursor\t''
copilot\t''
cli\t''
simulated\t''"
complete -c eden -n "__fish_eden_using_subcommand interactive" -l binary -d 'The agent\'s executable: a path, or a name looked up on PATH' -r -F
complete -c eden -n "__fish_eden_using_subcommand interactive" -l model -d 'Model passed to the agent' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l prompt -d 'The task, as text' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l prompt-file -d 'The task, from a file' -r -F
complete -c eden -n "__fish_eden_using_subcommand interactive" -l name -d 'Run name (used in branch names and logs)' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l max-iterations -d 'Most agent iterations' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l sandbox -d 'Sandbox kind (`docker` and `podman` also need an image: `--set sandbox.image=eden:NAME`)' -r -f -a "none\t''
docker\t''
podman\t''
isolated\t''
kubernetes\t''"
complete -c eden -n "__fish_eden_using_subcommand interactive" -l host -d 'The container engine to run on: `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a docker context / podman connection name (`sandbox.host`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l strategy -d 'Branch strategy' -r -f -a "head\t''
merge-to-head\t''
named\t''"
complete -c eden -n "__fish_eden_using_subcommand interactive" -l branch -d 'Branch name for strategy `named`' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l base -d 'Branch to start from (and merge back into)' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l repo -d 'The repository to work in (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand interactive" -l resume -d 'Continue this agent session (an id from `eden sessions list --json`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand interactive" -l fail-fast -d 'With several runs: stop the others (as Ctrl-C would) when one fails, start no more'
complete -c eden -n "__fish_eden_using_subcommand interactive" -l dry-run -d 'Print the resolved plan as JSON and stop'
complete -c eden -n "__fish_eden_using_subcommand interactive" -l json -d 'Print the run record as JSON on stdout (or, if the run cannot start, the error)'
complete -c eden -n "__fish_eden_using_subcommand interactive" -l json-events -d 'Print every event as a JSON line on stdout as it happens; the last, `run_finished`, carries the run record'
complete -c eden -n "__fish_eden_using_subcommand interactive" -s q -l quiet -d 'No progress output (errors are still printed)'
complete -c eden -n "__fish_eden_using_subcommand interactive" -l timings -d 'Say how long each step to the agent\'s first byte took: worktree, the sandbox\'s claim or start, its environment and seed, the first exec, the first byte (the record keeps them either way)'
complete -c eden -n "__fish_eden_using_subcommand interactive" -l no-tty -d 'Without a terminal: the agent reads eden\'s stdin and writes its stdout as they are'
complete -c eden -n "__fish_eden_using_subcommand interactive" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c eden -n "__fish_eden_using_subcommand init" -l agent -d 'Agent kind for the manifest' -r -f -a "claude-code\t''
codex\t''
opencode\t''
pi\t''
cursor\t''
copilot\t''
cli\t''
simulated\t''"
complete -c eden -n "__fish_eden_using_subcommand init" -l sandbox -d 'Sandbox for the manifest' -r -f -a "none\t''
docker\t''
podman\t''
isolated\t''
kubernetes\t''"
complete -c eden -n "__fish_eden_using_subcommand init" -l dir -d 'Folder to write into (default: the current directory)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand init" -l force -d 'Overwrite existing files'
complete -c eden -n "__fish_eden_using_subcommand init" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand image; and not __fish_seen_subcommand_from build remove push help" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand image; and not __fish_seen_subcommand_from build remove push help" -f -a "build" -d 'Build the image from `Dockerfile.eden` with your uid/gid baked in'
complete -c eden -n "__fish_eden_using_subcommand image; and not __fish_seen_subcommand_from build remove push help" -f -a "remove" -d 'Remove the image'
complete -c eden -n "__fish_eden_using_subcommand image; and not __fish_seen_subcommand_from build remove push help" -f -a "push" -d 'Copy a local image to another engine (`docker save | docker --host HOST load`)'
complete -c eden -n "__fish_eden_using_subcommand image; and not __fish_seen_subcommand_from build remove push help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -l engine -d 'The container engine (default: docker when its daemon answers, else podman)' -r -f -a "docker\t''
podman\t''"
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -l host -d 'The engine to use, when not the client\'s default: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name' -r -f
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -l tag -d 'Image name (default: the manifest\'s `sandbox.image`, else `eden:<repository folder name>`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -l file -d 'The Dockerfile, as `eden init` writes it' -r -F
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -l agent -d 'Agent whose CLI to install from npm (`none`: install nothing) (default: the manifest\'s agent, else claude-code)' -r -f -a "claude-code\t''
codex\t''
opencode\t''
pi\t''
copilot\t''
none\t''"
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -l manifest -d 'Build the image this manifest runs in: its engine, `host`, `image` and agent, unless the options above say otherwise' -r -F
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -l base -d 'Base image (default: the Dockerfile\'s, `node:22-bookworm-slim`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -l build-arg -d 'A build argument for the Dockerfile (a proxy; `EXTRA_CA_CERT`, a CA certificate\'s PEM text, not its path: `EXTRA_CA_CERT="$(cat ca.crt)"`): KEY=VALUE, or KEY to take its value from eden\'s environment; repeatable. Values go to the engine in its environment, never on its command line' -r
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from build" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from remove" -l engine -d 'The container engine (default: docker when its daemon answers, else podman)' -r -f -a "docker\t''
podman\t''"
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from remove" -l host -d 'The engine to use, when not the client\'s default: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name' -r -f
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from remove" -l tag -d 'Image name (default: `eden:<repository folder name>`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from remove" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from push" -l engine -d 'The container engine (default: docker when its daemon answers, else podman)' -r -f -a "docker\t''
podman\t''"
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from push" -l host -d 'The engine to copy it to: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name' -r -f
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from push" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from help" -f -a "build" -d 'Build the image from `Dockerfile.eden` with your uid/gid baked in'
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from help" -f -a "remove" -d 'Remove the image'
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from help" -f -a "push" -d 'Copy a local image to another engine (`docker save | docker --host HOST load`)'
complete -c eden -n "__fish_eden_using_subcommand image; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand clean" -l older-than -d 'Also remove logs, run records, sessions, patches and artifacts older than this (e.g. `7d`, `12h`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand clean" -l repo -d 'The repository to clean (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand clean" -l dry-run -d 'Only list what would be removed and what kept, and why'
complete -c eden -n "__fish_eden_using_subcommand clean" -l force -d 'Also remove dirty worktrees, unmerged `eden/*` branches and isolated copies with work in them'
complete -c eden -n "__fish_eden_using_subcommand clean" -l all-repos -l all -d 'Containers and isolated copies of every repository, not just this one'
complete -c eden -n "__fish_eden_using_subcommand clean" -l json -d 'Print what was found and done as JSON on stdout'
complete -c eden -n "__fish_eden_using_subcommand clean" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand diff" -l repo -d 'The repository whose runs to look in (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand diff" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand merge" -l repo -d 'The repository whose runs to look in (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand merge" -l json -d 'Print the run\'s record, as it is now, on stdout'
complete -c eden -n "__fish_eden_using_subcommand merge" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand discard" -l repo -d 'The repository whose runs to look in (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand discard" -l json -d 'Print the run\'s record, as it is now, on stdout'
complete -c eden -n "__fish_eden_using_subcommand discard" -l force -d 'Also discard uncommitted changes in the run\'s kept worktree'
complete -c eden -n "__fish_eden_using_subcommand discard" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand steer" -l repo -d 'The repository whose runs to look in (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand steer" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand top" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand mcp" -l allow -d 'The tools the client may call: names, `default` (all but merge and discard) or `all`' -r -f
complete -c eden -n "__fish_eden_using_subcommand mcp" -l repo -d 'The repository served (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand mcp" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand doctor" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand doctor" -l host -d 'The container engine to check, as `eden run --host` names one (`tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, a docker context or podman connection name); default: each client\'s own' -r
complete -c eden -n "__fish_eden_using_subcommand doctor" -l network -d 'Also try each agent\'s model host over the network'
complete -c eden -n "__fish_eden_using_subcommand doctor" -l json -d 'The findings as JSON on stdout'
complete -c eden -n "__fish_eden_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand completions" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand schema" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand sessions; and not __fish_seen_subcommand_from list show cost rm transfer resume help" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand sessions; and not __fish_seen_subcommand_from list show cost rm transfer resume help" -f -a "list" -d 'One line per run, newest first (from `.eden/runs/`)'
complete -c eden -n "__fish_eden_using_subcommand sessions; and not __fish_seen_subcommand_from list show cost rm transfer resume help" -f -a "show" -d 'Replay a run: prompts, the agent\'s text, tool calls, hooks, usage, the outcome'
complete -c eden -n "__fish_eden_using_subcommand sessions; and not __fish_seen_subcommand_from list show cost rm transfer resume help" -f -a "cost" -d 'Token and cost totals by run, agent, model, branch or day'
complete -c eden -n "__fish_eden_using_subcommand sessions; and not __fish_seen_subcommand_from list show cost rm transfer resume help" -f -a "rm" -d 'Remove runs: their records, logs, captured transcripts and patches'
complete -c eden -n "__fish_eden_using_subcommand sessions; and not __fish_seen_subcommand_from list show cost rm transfer resume help" -f -a "transfer" -d 'Copy a captured session into the agent\'s own store for another directory'
complete -c eden -n "__fish_eden_using_subcommand sessions; and not __fish_seen_subcommand_from list show cost rm transfer resume help" -f -a "resume" -d 'Continue an agent session: a run with `agent.resume` on the session\'s branch'
complete -c eden -n "__fish_eden_using_subcommand sessions; and not __fish_seen_subcommand_from list show cost rm transfer resume help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from list" -l since -d 'Only runs started within this long (e.g. `7d`, `12h`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from list" -l name -d 'Only runs of this name' -r -f
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from list" -l agent -d 'Only runs with this agent in one of their steps' -r -f -a "claude-code\t''
codex\t''
opencode\t''
pi\t''
cursor\t''
copilot\t''
cli\t''
simulated\t''"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from list" -l status -d 'Only runs with this status (running, finished, abandoned) or exit reason (completed, agent_failed, ...)' -r -f -a "running\t''
finished\t''
abandoned\t''
completed\t''
output\t''
max_iterations\t''
session_ended\t''
incomplete\t''
uncommitted_work\t''
usage\t''
agent_failed\t''
timeout\t''
hook_failed\t''
sandbox_error\t''
git_error\t''
interrupted\t''
internal\t''
budget_exceeded\t''
checks_failed\t''
protected\t''"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from list" -l branch -d 'Only runs on this branch' -r -f
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from list" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from list" -l json -d 'Print the runs as a JSON array on stdout'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from show" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from show" -l full -d 'Whole prompts, texts and tool summaries (they are cut otherwise)'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from show" -l raw -d 'Print the captured transcripts as stored (JSON lines)'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from show" -l json -d 'Print the run\'s events as JSON lines'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from show" -l no-pager -d 'Never start a pager'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from show" -s f -l follow -d 'Follow a run as it goes (from another terminal): its events as `eden run` shows them, until it ends; exits with the run\'s exit code'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from cost" -l by -d 'Group the totals by' -r -f -a "run\t''
manifest\t''
agent\t''
model\t''
branch\t''
day\t''"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from cost" -l since -d 'Only runs started within this long (e.g. `7d`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from cost" -l prices -d 'Price table (default: `~/.config/eden/prices.toml` when it exists)' -r -F
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from cost" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from cost" -l json -d 'Print the totals as JSON on stdout'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from cost" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from rm" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from transfer" -l to -d 'The working directory the agent will resume it in' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from transfer" -l repo -d 'The repository whose runs to look in (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from transfer" -l force -d 'Overwrite a session already there'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from transfer" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from resume" -l prompt -d 'The follow-up message (default: continue, and print the completion signal when done)' -r -f
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from resume" -l set -d 'Override any manifest key (repeatable)' -r -f
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from resume" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from resume" -l interactive -d 'Hand the terminal to the agent in that session (`eden interactive`)'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from resume" -l dry-run -d 'Print the resolved plan as JSON; create nothing'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from resume" -l json -d 'Print the run record as JSON on stdout'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from resume" -s q -l quiet -d 'No progress output'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from resume" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "list" -d 'One line per run, newest first (from `.eden/runs/`)'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "show" -d 'Replay a run: prompts, the agent\'s text, tool calls, hooks, usage, the outcome'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "cost" -d 'Token and cost totals by run, agent, model, branch or day'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "rm" -d 'Remove runs: their records, logs, captured transcripts and patches'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "transfer" -d 'Copy a captured session into the agent\'s own store for another directory'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "resume" -d 'Continue an agent session: a run with `agent.resume` on the session\'s branch'
complete -c eden -n "__fish_eden_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand pr; and not __fish_seen_subcommand_from follow help" -l manifest -d 'The manifest with the `[pull_request]` (default: the run\'s own, when it is in the repository)' -r -F
complete -c eden -n "__fish_eden_using_subcommand pr; and not __fish_seen_subcommand_from follow help" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand pr; and not __fish_seen_subcommand_from follow help" -l json -d 'Print the run record as JSON on stdout at the end'
complete -c eden -n "__fish_eden_using_subcommand pr; and not __fish_seen_subcommand_from follow help" -s q -l quiet -d 'No progress output'
complete -c eden -n "__fish_eden_using_subcommand pr; and not __fish_seen_subcommand_from follow help" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand pr; and not __fish_seen_subcommand_from follow help" -a "follow" -d 'Follow a run\'s pull request again until it is green'
complete -c eden -n "__fish_eden_using_subcommand pr; and not __fish_seen_subcommand_from follow help" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand pr; and __fish_seen_subcommand_from follow" -l manifest -d 'The manifest with the `[pull_request]` (default: the run\'s own, when it is in the repository)' -r -F
complete -c eden -n "__fish_eden_using_subcommand pr; and __fish_seen_subcommand_from follow" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand pr; and __fish_seen_subcommand_from follow" -l json -d 'Print the run record as JSON on stdout at the end'
complete -c eden -n "__fish_eden_using_subcommand pr; and __fish_seen_subcommand_from follow" -s q -l quiet -d 'No progress output'
complete -c eden -n "__fish_eden_using_subcommand pr; and __fish_seen_subcommand_from follow" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand pr; and __fish_seen_subcommand_from help" -f -a "follow" -d 'Follow a run\'s pull request again until it is green'
complete -c eden -n "__fish_eden_using_subcommand pr; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand pool; and not __fish_seen_subcommand_from up status down help" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand pool; and not __fish_seen_subcommand_from up status down help" -f -a "up" -d 'Start idle, generic sandboxes for a manifest\'s sandbox settings (docker, podman and kubernetes)'
complete -c eden -n "__fish_eden_using_subcommand pool; and not __fish_seen_subcommand_from up status down help" -f -a "status" -d 'The repository\'s warm pools and their members (idle, ended, claimed by a run)'
complete -c eden -n "__fish_eden_using_subcommand pool; and not __fish_seen_subcommand_from up status down help" -f -a "down" -d 'Remove every idle member of the repository\'s warm pools, and the pools'
complete -c eden -n "__fish_eden_using_subcommand pool; and not __fish_seen_subcommand_from up status down help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from up" -l size -d 'How many idle members to keep' -r
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from up" -l idle -d 'How long an unclaimed member waits before it ends (e.g. `30m`, `2h`)' -r -f
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from up" -l set -d 'Override any manifest key, as `eden run --set` does (repeatable)' -r -f
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from up" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from up" -l no-refill -d 'Do not start a replacement behind each claim: the pool empties as runs claim it'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from up" -l json -d 'What was done as JSON on stdout'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from up" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from status" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from status" -l json -d 'As JSON on stdout'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from down" -l repo -d 'The repository (default: the current directory\'s)' -r -f -a "(__fish_complete_directories)"
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from down" -l json -d 'As JSON on stdout'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from down" -s h -l help -d 'Print help'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from help" -f -a "up" -d 'Start idle, generic sandboxes for a manifest\'s sandbox settings (docker, podman and kubernetes)'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from help" -f -a "status" -d 'The repository\'s warm pools and their members (idle, ended, claimed by a run)'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from help" -f -a "down" -d 'Remove every idle member of the repository\'s warm pools, and the pools'
complete -c eden -n "__fish_eden_using_subcommand pool; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "run" -d 'Run an agent as a manifest (or flags) describes: worktree, iterations, merge back'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "interactive" -d 'The agent\'s own terminal UI, in a fresh worktree and sandbox, hooks and all'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "init" -d 'Write a starter manifest (and, for container sandboxes, a Dockerfile)'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "image" -d 'Build or remove the sandbox image'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "clean" -d 'Remove what eden left behind: worktrees, branches, containers, locks, isolated copies'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "diff" -d 'What a run changed against its base, through git\'s pager and diff settings'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "merge" -d 'Merge a kept run\'s branch into its base, as the run\'s own merge would'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "discard" -d 'Remove a run\'s branch, worktree and container; its record stays'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "steer" -d 'Interrupt a live run\'s agent and give its next iteration a new prompt'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "top" -d 'A live dashboard of the runs: follow, steer, diff, merge, discard and stop them'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "mcp" -d 'Serve eden to another agent over MCP (stdio): start, watch, steer and review runs'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "doctor" -d 'Check what a first run needs, and say what to fix'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "completions" -d 'Print a shell completion script for bash, zsh, fish, elvish or powershell'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "schema" -d 'Print the manifest\'s JSON Schema, for editors and checkers (taplo, Even Better TOML)'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "sessions" -d 'The run history: list runs, replay one, total tokens and cost, remove runs'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "pr" -d 'Open (or update) a run\'s pull request, or follow it again (`eden pr follow RUN`)'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "pool" -d 'Keep idle sandboxes warm for a manifest, so a run claims one instead of starting cold'
complete -c eden -n "__fish_eden_using_subcommand help; and not __fish_seen_subcommand_from run interactive init image clean diff merge discard steer top mcp doctor completions schema sessions pr pool help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from image" -f -a "build" -d 'Build the image from `Dockerfile.eden` with your uid/gid baked in'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from image" -f -a "remove" -d 'Remove the image'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from image" -f -a "push" -d 'Copy a local image to another engine (`docker save | docker --host HOST load`)'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "list" -d 'One line per run, newest first (from `.eden/runs/`)'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "show" -d 'Replay a run: prompts, the agent\'s text, tool calls, hooks, usage, the outcome'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "cost" -d 'Token and cost totals by run, agent, model, branch or day'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "rm" -d 'Remove runs: their records, logs, captured transcripts and patches'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "transfer" -d 'Copy a captured session into the agent\'s own store for another directory'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "resume" -d 'Continue an agent session: a run with `agent.resume` on the session\'s branch'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from pr" -f -a "follow" -d 'Follow a run\'s pull request again until it is green'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from pool" -f -a "up" -d 'Start idle, generic sandboxes for a manifest\'s sandbox settings (docker, podman and kubernetes)'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from pool" -f -a "status" -d 'The repository\'s warm pools and their members (idle, ended, claimed by a run)'
complete -c eden -n "__fish_eden_using_subcommand help; and __fish_seen_subcommand_from pool" -f -a "down" -d 'Remove every idle member of the repository\'s warm pools, and the pools'
