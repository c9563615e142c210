//! The command line's commands, each to the file that carries it out: one way into each.

use super::{clean, completions, doctor, image, init, mcp, pool, pr, review, run, schema, sessions, steer, top};

/// Each command to the file that carries it out: one way into each.
pub(crate) fn dispatch(command: crate::cli::Command) -> Result<i32, crate::error::Error> {
    use crate::cli::Command;
    match command {
        Command::Run(args) => run::invoke(*args, None),
        Command::Interactive(args) => run::interactive(args),
        Command::Init(args) => init::init(args),
        Command::Image(command) => image::image(command),
        Command::Clean(args) => clean::clean(args),
        Command::Diff(args) => review::diff(args),
        Command::Merge(args) => review::merge(args),
        Command::Discard(args) => review::discard(args),
        Command::Steer(args) => steer::steer(args),
        Command::Top(args) => top::top(args),
        Command::Mcp(args) => mcp::mcp(args),
        Command::Doctor(args) => doctor::doctor(args),
        Command::Completions(args) => completions::completions(args),
        Command::Schema => schema::schema(),
        Command::Sessions(command) => sessions::sessions(command),
        Command::Pr(args) => pr::pr(args),
        Command::Pool(command) => pool::pool(command),
    }
}
