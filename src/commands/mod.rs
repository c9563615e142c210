//! One file per subcommand: arguments into settings, then the core.

pub mod run;
