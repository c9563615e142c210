//! `kind = "cli"`: any executable. Arguments are templates (`{model}`, `{prompt}`); the prompt
//! goes on stdin unless `prompt_via = "arg"`.

use super::{Agent, CliPlan, Invocation, Parser, PromptVia, MAX_ARGV_PROMPT};
use crate::error::Error;
use crate::process::{ProcessBuilder, Stdin};

pub(crate) struct CliAgent {
    plan: CliPlan,
}

impl CliAgent {
    pub(crate) fn new(plan: CliPlan) -> Self {
        CliAgent { plan }
    }
}

impl Agent for CliAgent {
    fn command(&self, invocation: &Invocation<'_>) -> Result<ProcessBuilder, Error> {
        let model = self.plan.model.as_deref().unwrap_or_default();
        let via_arg = self.plan.prompt_via == PromptVia::Arg;
        // The template itself was checked at load; grown by `` !`cmd` `` output or arguments,
        // it is a failure to start the agent (the run is under way: exit 2 would claim
        // nothing was made).
        if via_arg && invocation.prompt.len() > MAX_ARGV_PROMPT {
            return Err(Error::agent(format!(
                "the rendered prompt is {} KiB, over the {} KiB eden passes on the command line",
                invocation.prompt.len() / 1024,
                MAX_ARGV_PROMPT / 1024
            ))
            .with_hint("set `agent.prompt_via = \"stdin\"` if the agent reads its prompt from standard input"));
        }
        let args = self.plan.args.iter().map(|arg| {
            let arg = arg.replace("{model}", model);
            if via_arg {
                arg.replace("{prompt}", invocation.prompt)
            } else {
                arg
            }
        });
        let mut command = ProcessBuilder::new(&self.plan.binary).args(args).cwd(invocation.worktree);
        for (key, value) in &self.plan.env {
            command = command.env(key, &value.0);
        }
        if !via_arg {
            command = command.stdin(Stdin::Bytes(invocation.prompt.as_bytes().to_vec()));
        }
        Ok(command)
    }

    fn parser(&self) -> Box<dyn Parser> {
        self.plan.parser.parser()
    }
}
