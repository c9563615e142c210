//! `eden completions SHELL`: a completion script generated from the clap definitions, on stdout.

use crate::cli::{Cli, CompletionsArgs};
use crate::error::Error;
use clap::CommandFactory;

pub(crate) fn completions(args: CompletionsArgs) -> Result<i32, Error> {
    crate::ui::print_raw(&script(args.shell))
        .map(|()| 0)
        .map_err(|err| Error::internal("cannot write the completion script").with_source(err))
}

/// The completion script for `shell`, as `completions/` holds it.
pub fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "eden", &mut script);
    script
}
