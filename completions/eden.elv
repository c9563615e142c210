
use builtin;
use str;

set edit:completion:arg-completer[eden] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'eden'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'eden'= {
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand run 'Run an agent as a manifest (or flags) describes: worktree, iterations, merge back'
            cand interactive 'The agent''s own terminal UI, in a fresh worktree and sandbox, hooks and all'
            cand init 'Write a starter manifest (and, for container sandboxes, a Dockerfile)'
            cand image 'Build or remove the sandbox image'
            cand clean 'Remove what eden left behind: worktrees, branches, containers, locks, isolated copies'
            cand diff 'What a run changed against its base, through git''s pager and diff settings'
            cand merge 'Merge a kept run''s branch into its base, as the run''s own merge would'
            cand discard 'Remove a run''s branch, worktree and container; its record stays'
            cand steer 'Interrupt a live run''s agent and give its next iteration a new prompt'
            cand top 'A live dashboard of the runs: follow, steer, diff, merge, discard and stop them'
            cand mcp 'Serve eden to another agent over MCP (stdio): start, watch, steer and review runs'
            cand doctor 'Check what a first run needs, and say what to fix'
            cand completions 'Print a shell completion script for bash, zsh, fish, elvish or powershell'
            cand schema 'Print the manifest''s JSON Schema, for editors and checkers (taplo, Even Better TOML)'
            cand sessions 'The run history: list runs, replay one, total tokens and cost, remove runs'
            cand pr 'Open (or update) a run''s pull request, or follow it again (`eden pr follow RUN`)'
            cand pool 'Keep idle sandboxes warm for a manifest, so a run claims one instead of starting cold'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;run'= {
            cand -j 'With several runs: how many go at once (default: all of them, at most 8)'
            cand --jobs 'With several runs: how many go at once (default: all of them, at most 8)'
            cand --jobs-per-host 'With several runs spread over hosts (`sandbox.host = [..]`): at most N of them on one host'
            cand --attempts 'Run the manifest N times at once from the same base, each on a branch of its own; the first attempt to finish with its completion signal and every check passing lands, the others are stopped and keep their branches (the manifest''s `attempts`; this wins)'
            cand --from 'Start where another run left off: its branch''s tip (or with `RUN@N` the commit after its iteration N) and, where the agent can, its session (RUN: an id, a prefix or `last`)'
            cand --matrix 'Run each manifest once per value of a key, e.g. `--matrix agent.kind=claude-code,codex`; the run names get the value as a suffix (repeatable: every combination)'
            cand --set 'Override any manifest key, e.g. `--set agent.model=opus` (repeatable)'
            cand --arg 'A prompt argument for `{{KEY}}` in the prompt (repeatable)'
            cand --agent 'Agent kind'
            cand --binary 'The agent''s executable: a path, or a name looked up on PATH'
            cand --model 'Model passed to the agent'
            cand --prompt 'The task, as text'
            cand --prompt-file 'The task, from a file'
            cand --name 'Run name (used in branch names and logs)'
            cand --max-iterations 'Most agent iterations'
            cand --sandbox 'Sandbox kind (`docker` and `podman` also need an image: `--set sandbox.image=eden:NAME`)'
            cand --host 'The container engine to run on: `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a docker context / podman connection name (`sandbox.host`)'
            cand --strategy 'Branch strategy'
            cand --branch 'Branch name for strategy `named`'
            cand --base 'Branch to start from (and merge back into)'
            cand --repo 'The repository to work in (default: the current directory''s)'
            cand --fail-fast 'With several runs: stop the others (as Ctrl-C would) when one fails, start no more'
            cand --dry-run 'Print the resolved plan as JSON and stop'
            cand --json 'Print the run record as JSON on stdout (or, if the run cannot start, the error)'
            cand --json-events 'Print every event as a JSON line on stdout as it happens; the last, `run_finished`, carries the run record'
            cand -q 'No progress output (errors are still printed)'
            cand --quiet 'No progress output (errors are still printed)'
            cand --timings 'Say how long each step to the agent''s first byte took: worktree, the sandbox''s claim or start, its environment and seed, the first exec, the first byte (the record keeps them either way)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'eden;interactive'= {
            cand -j 'With several runs: how many go at once (default: all of them, at most 8)'
            cand --jobs 'With several runs: how many go at once (default: all of them, at most 8)'
            cand --jobs-per-host 'With several runs spread over hosts (`sandbox.host = [..]`): at most N of them on one host'
            cand --attempts 'Run the manifest N times at once from the same base, each on a branch of its own; the first attempt to finish with its completion signal and every check passing lands, the others are stopped and keep their branches (the manifest''s `attempts`; this wins)'
            cand --from 'Start where another run left off: its branch''s tip (or with `RUN@N` the commit after its iteration N) and, where the agent can, its session (RUN: an id, a prefix or `last`)'
            cand --matrix 'Run each manifest once per value of a key, e.g. `--matrix agent.kind=claude-code,codex`; the run names get the value as a suffix (repeatable: every combination)'
            cand --set 'Override any manifest key, e.g. `--set agent.model=opus` (repeatable)'
            cand --arg 'A prompt argument for `{{KEY}}` in the prompt (repeatable)'
            cand --agent 'Agent kind'
            cand --binary 'The agent''s executable: a path, or a name looked up on PATH'
            cand --model 'Model passed to the agent'
            cand --prompt 'The task, as text'
            cand --prompt-file 'The task, from a file'
            cand --name 'Run name (used in branch names and logs)'
            cand --max-iterations 'Most agent iterations'
            cand --sandbox 'Sandbox kind (`docker` and `podman` also need an image: `--set sandbox.image=eden:NAME`)'
            cand --host 'The container engine to run on: `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a docker context / podman connection name (`sandbox.host`)'
            cand --strategy 'Branch strategy'
            cand --branch 'Branch name for strategy `named`'
            cand --base 'Branch to start from (and merge back into)'
            cand --repo 'The repository to work in (default: the current directory''s)'
            cand --resume 'Continue this agent session (an id from `eden sessions list --json`)'
            cand --fail-fast 'With several runs: stop the others (as Ctrl-C would) when one fails, start no more'
            cand --dry-run 'Print the resolved plan as JSON and stop'
            cand --json 'Print the run record as JSON on stdout (or, if the run cannot start, the error)'
            cand --json-events 'Print every event as a JSON line on stdout as it happens; the last, `run_finished`, carries the run record'
            cand -q 'No progress output (errors are still printed)'
            cand --quiet 'No progress output (errors are still printed)'
            cand --timings 'Say how long each step to the agent''s first byte took: worktree, the sandbox''s claim or start, its environment and seed, the first exec, the first byte (the record keeps them either way)'
            cand --no-tty 'Without a terminal: the agent reads eden''s stdin and writes its stdout as they are'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'eden;init'= {
            cand --agent 'Agent kind for the manifest'
            cand --sandbox 'Sandbox for the manifest'
            cand --dir 'Folder to write into (default: the current directory)'
            cand --force 'Overwrite existing files'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;image'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand build 'Build the image from `Dockerfile.eden` with your uid/gid baked in'
            cand remove 'Remove the image'
            cand push 'Copy a local image to another engine (`docker save | docker --host HOST load`)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;image;build'= {
            cand --engine 'The container engine (default: docker when its daemon answers, else podman)'
            cand --host 'The engine to use, when not the client''s default: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name'
            cand --tag 'Image name (default: the manifest''s `sandbox.image`, else `eden:<repository folder name>`)'
            cand --file 'The Dockerfile, as `eden init` writes it'
            cand --agent 'Agent whose CLI to install from npm (`none`: install nothing) (default: the manifest''s agent, else claude-code)'
            cand --manifest 'Build the image this manifest runs in: its engine, `host`, `image` and agent, unless the options above say otherwise'
            cand --base 'Base image (default: the Dockerfile''s, `node:22-bookworm-slim`)'
            cand --build-arg 'A build argument for the Dockerfile (a proxy; `EXTRA_CA_CERT`, a CA certificate''s PEM text, not its path: `EXTRA_CA_CERT="$(cat ca.crt)"`): KEY=VALUE, or KEY to take its value from eden''s environment; repeatable. Values go to the engine in its environment, never on its command line'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;image;remove'= {
            cand --engine 'The container engine (default: docker when its daemon answers, else podman)'
            cand --host 'The engine to use, when not the client''s default: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name'
            cand --tag 'Image name (default: `eden:<repository folder name>`)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;image;push'= {
            cand --engine 'The container engine (default: docker when its daemon answers, else podman)'
            cand --host 'The engine to copy it to: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context / podman connection name'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;image;help'= {
            cand build 'Build the image from `Dockerfile.eden` with your uid/gid baked in'
            cand remove 'Remove the image'
            cand push 'Copy a local image to another engine (`docker save | docker --host HOST load`)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;image;help;build'= {
        }
        &'eden;image;help;remove'= {
        }
        &'eden;image;help;push'= {
        }
        &'eden;image;help;help'= {
        }
        &'eden;clean'= {
            cand --older-than 'Also remove logs, run records, sessions, patches and artifacts older than this (e.g. `7d`, `12h`)'
            cand --repo 'The repository to clean (default: the current directory''s)'
            cand --dry-run 'Only list what would be removed and what kept, and why'
            cand --force 'Also remove dirty worktrees, unmerged `eden/*` branches and isolated copies with work in them'
            cand --all-repos 'Containers and isolated copies of every repository, not just this one'
            cand --all 'Containers and isolated copies of every repository, not just this one'
            cand --json 'Print what was found and done as JSON on stdout'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;diff'= {
            cand --repo 'The repository whose runs to look in (default: the current directory''s)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;merge'= {
            cand --repo 'The repository whose runs to look in (default: the current directory''s)'
            cand --json 'Print the run''s record, as it is now, on stdout'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;discard'= {
            cand --repo 'The repository whose runs to look in (default: the current directory''s)'
            cand --json 'Print the run''s record, as it is now, on stdout'
            cand --force 'Also discard uncommitted changes in the run''s kept worktree'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;steer'= {
            cand --repo 'The repository whose runs to look in (default: the current directory''s)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;top'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;mcp'= {
            cand --allow 'The tools the client may call: names, `default` (all but merge and discard) or `all`'
            cand --repo 'The repository served (default: the current directory''s)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;doctor'= {
            cand --repo 'The repository (default: the current directory''s)'
            cand --host 'The container engine to check, as `eden run --host` names one (`tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, a docker context or podman connection name); default: each client''s own'
            cand --network 'Also try each agent''s model host over the network'
            cand --json 'The findings as JSON on stdout'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;completions'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;schema'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;sessions'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand list 'One line per run, newest first (from `.eden/runs/`)'
            cand show 'Replay a run: prompts, the agent''s text, tool calls, hooks, usage, the outcome'
            cand cost 'Token and cost totals by run, agent, model, branch or day'
            cand rm 'Remove runs: their records, logs, captured transcripts and patches'
            cand transfer 'Copy a captured session into the agent''s own store for another directory'
            cand resume 'Continue an agent session: a run with `agent.resume` on the session''s branch'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;sessions;list'= {
            cand --since 'Only runs started within this long (e.g. `7d`, `12h`)'
            cand --name 'Only runs of this name'
            cand --agent 'Only runs with this agent in one of their steps'
            cand --status 'Only runs with this status (running, finished, abandoned) or exit reason (completed, agent_failed, ...)'
            cand --branch 'Only runs on this branch'
            cand --repo 'The repository (default: the current directory''s)'
            cand --json 'Print the runs as a JSON array on stdout'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;sessions;show'= {
            cand --repo 'The repository (default: the current directory''s)'
            cand --full 'Whole prompts, texts and tool summaries (they are cut otherwise)'
            cand --raw 'Print the captured transcripts as stored (JSON lines)'
            cand --json 'Print the run''s events as JSON lines'
            cand --no-pager 'Never start a pager'
            cand -f 'Follow a run as it goes (from another terminal): its events as `eden run` shows them, until it ends; exits with the run''s exit code'
            cand --follow 'Follow a run as it goes (from another terminal): its events as `eden run` shows them, until it ends; exits with the run''s exit code'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;sessions;cost'= {
            cand --by 'Group the totals by'
            cand --since 'Only runs started within this long (e.g. `7d`)'
            cand --prices 'Price table (default: `~/.config/eden/prices.toml` when it exists)'
            cand --repo 'The repository (default: the current directory''s)'
            cand --json 'Print the totals as JSON on stdout'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;sessions;rm'= {
            cand --repo 'The repository (default: the current directory''s)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;sessions;transfer'= {
            cand --to 'The working directory the agent will resume it in'
            cand --repo 'The repository whose runs to look in (default: the current directory''s)'
            cand --force 'Overwrite a session already there'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;sessions;resume'= {
            cand --prompt 'The follow-up message (default: continue, and print the completion signal when done)'
            cand --set 'Override any manifest key (repeatable)'
            cand --repo 'The repository (default: the current directory''s)'
            cand --interactive 'Hand the terminal to the agent in that session (`eden interactive`)'
            cand --dry-run 'Print the resolved plan as JSON; create nothing'
            cand --json 'Print the run record as JSON on stdout'
            cand -q 'No progress output'
            cand --quiet 'No progress output'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;sessions;help'= {
            cand list 'One line per run, newest first (from `.eden/runs/`)'
            cand show 'Replay a run: prompts, the agent''s text, tool calls, hooks, usage, the outcome'
            cand cost 'Token and cost totals by run, agent, model, branch or day'
            cand rm 'Remove runs: their records, logs, captured transcripts and patches'
            cand transfer 'Copy a captured session into the agent''s own store for another directory'
            cand resume 'Continue an agent session: a run with `agent.resume` on the session''s branch'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;sessions;help;list'= {
        }
        &'eden;sessions;help;show'= {
        }
        &'eden;sessions;help;cost'= {
        }
        &'eden;sessions;help;rm'= {
        }
        &'eden;sessions;help;transfer'= {
        }
        &'eden;sessions;help;resume'= {
        }
        &'eden;sessions;help;help'= {
        }
        &'eden;pr'= {
            cand --manifest 'The manifest with the `[pull_request]` (default: the run''s own, when it is in the repository)'
            cand --repo 'The repository (default: the current directory''s)'
            cand --json 'Print the run record as JSON on stdout at the end'
            cand -q 'No progress output'
            cand --quiet 'No progress output'
            cand -h 'Print help'
            cand --help 'Print help'
            cand follow 'Follow a run''s pull request again until it is green'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;pr;follow'= {
            cand --manifest 'The manifest with the `[pull_request]` (default: the run''s own, when it is in the repository)'
            cand --repo 'The repository (default: the current directory''s)'
            cand --json 'Print the run record as JSON on stdout at the end'
            cand -q 'No progress output'
            cand --quiet 'No progress output'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;pr;help'= {
            cand follow 'Follow a run''s pull request again until it is green'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;pr;help;follow'= {
        }
        &'eden;pr;help;help'= {
        }
        &'eden;pool'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand up 'Start idle, generic sandboxes for a manifest''s sandbox settings (docker, podman and kubernetes)'
            cand status 'The repository''s warm pools and their members (idle, ended, claimed by a run)'
            cand down 'Remove every idle member of the repository''s warm pools, and the pools'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;pool;up'= {
            cand --size 'How many idle members to keep'
            cand --idle 'How long an unclaimed member waits before it ends (e.g. `30m`, `2h`)'
            cand --set 'Override any manifest key, as `eden run --set` does (repeatable)'
            cand --repo 'The repository (default: the current directory''s)'
            cand --no-refill 'Do not start a replacement behind each claim: the pool empties as runs claim it'
            cand --json 'What was done as JSON on stdout'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;pool;status'= {
            cand --repo 'The repository (default: the current directory''s)'
            cand --json 'As JSON on stdout'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;pool;down'= {
            cand --repo 'The repository (default: the current directory''s)'
            cand --json 'As JSON on stdout'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'eden;pool;help'= {
            cand up 'Start idle, generic sandboxes for a manifest''s sandbox settings (docker, podman and kubernetes)'
            cand status 'The repository''s warm pools and their members (idle, ended, claimed by a run)'
            cand down 'Remove every idle member of the repository''s warm pools, and the pools'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;pool;help;up'= {
        }
        &'eden;pool;help;status'= {
        }
        &'eden;pool;help;down'= {
        }
        &'eden;pool;help;help'= {
        }
        &'eden;help'= {
            cand run 'Run an agent as a manifest (or flags) describes: worktree, iterations, merge back'
            cand interactive 'The agent''s own terminal UI, in a fresh worktree and sandbox, hooks and all'
            cand init 'Write a starter manifest (and, for container sandboxes, a Dockerfile)'
            cand image 'Build or remove the sandbox image'
            cand clean 'Remove what eden left behind: worktrees, branches, containers, locks, isolated copies'
            cand diff 'What a run changed against its base, through git''s pager and diff settings'
            cand merge 'Merge a kept run''s branch into its base, as the run''s own merge would'
            cand discard 'Remove a run''s branch, worktree and container; its record stays'
            cand steer 'Interrupt a live run''s agent and give its next iteration a new prompt'
            cand top 'A live dashboard of the runs: follow, steer, diff, merge, discard and stop them'
            cand mcp 'Serve eden to another agent over MCP (stdio): start, watch, steer and review runs'
            cand doctor 'Check what a first run needs, and say what to fix'
            cand completions 'Print a shell completion script for bash, zsh, fish, elvish or powershell'
            cand schema 'Print the manifest''s JSON Schema, for editors and checkers (taplo, Even Better TOML)'
            cand sessions 'The run history: list runs, replay one, total tokens and cost, remove runs'
            cand pr 'Open (or update) a run''s pull request, or follow it again (`eden pr follow RUN`)'
            cand pool 'Keep idle sandboxes warm for a manifest, so a run claims one instead of starting cold'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'eden;help;run'= {
        }
        &'eden;help;interactive'= {
        }
        &'eden;help;init'= {
        }
        &'eden;help;image'= {
            cand build 'Build the image from `Dockerfile.eden` with your uid/gid baked in'
            cand remove 'Remove the image'
            cand push 'Copy a local image to another engine (`docker save | docker --host HOST load`)'
        }
        &'eden;help;image;build'= {
        }
        &'eden;help;image;remove'= {
        }
        &'eden;help;image;push'= {
        }
        &'eden;help;clean'= {
        }
        &'eden;help;diff'= {
        }
        &'eden;help;merge'= {
        }
        &'eden;help;discard'= {
        }
        &'eden;help;steer'= {
        }
        &'eden;help;top'= {
        }
        &'eden;help;mcp'= {
        }
        &'eden;help;doctor'= {
        }
        &'eden;help;completions'= {
        }
        &'eden;help;schema'= {
        }
        &'eden;help;sessions'= {
            cand list 'One line per run, newest first (from `.eden/runs/`)'
            cand show 'Replay a run: prompts, the agent''s text, tool calls, hooks, usage, the outcome'
            cand cost 'Token and cost totals by run, agent, model, branch or day'
            cand rm 'Remove runs: their records, logs, captured transcripts and patches'
            cand transfer 'Copy a captured session into the agent''s own store for another directory'
            cand resume 'Continue an agent session: a run with `agent.resume` on the session''s branch'
        }
        &'eden;help;sessions;list'= {
        }
        &'eden;help;sessions;show'= {
        }
        &'eden;help;sessions;cost'= {
        }
        &'eden;help;sessions;rm'= {
        }
        &'eden;help;sessions;transfer'= {
        }
        &'eden;help;sessions;resume'= {
        }
        &'eden;help;pr'= {
            cand follow 'Follow a run''s pull request again until it is green'
        }
        &'eden;help;pr;follow'= {
        }
        &'eden;help;pool'= {
            cand up 'Start idle, generic sandboxes for a manifest''s sandbox settings (docker, podman and kubernetes)'
            cand status 'The repository''s warm pools and their members (idle, ended, claimed by a run)'
            cand down 'Remove every idle member of the repository''s warm pools, and the pools'
        }
        &'eden;help;pool;up'= {
        }
        &'eden;help;pool;status'= {
        }
        &'eden;help;pool;down'= {
        }
        &'eden;help;help'= {
        }
    ]
    $completions[$command]
}
