//! eden: run AI coding agents autonomously and safely. Each run gets its own git worktree and
//! branch, an iteration loop that stops on a completion signal, watchdogs for idle and hung
//! agents, and a clean merge (or a preserved branch) at the end.

pub mod agent;
pub mod clean;
pub mod cli;
pub mod commands;
pub mod coordinator;
pub mod error;
pub mod exit;
pub mod forge;
pub mod git;
pub mod hooks;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod net;
pub mod notify;
pub mod orchestrator;
pub mod output;
pub mod process;
pub mod proxy;
pub mod pull_request;
pub mod record;
pub mod redact;
pub mod report;
pub mod safe_fs;
pub mod sandbox;
pub mod sessions;
pub mod trace;
pub mod ui;
pub mod values;

use clap::Parser;

/// The whole command line: parse, dispatch, report an error. Returns the exit code.
pub fn main_with_args(args: Vec<std::ffi::OsString>) -> i32 {
    trace::note_process_start();
    // Before anything else: the init must fork while eden is still single-threaded.
    if args.get(1).is_some_and(|a| a == process::contain::INIT_SUBCOMMAND) {
        return process::contain::run_init(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == process::guard::GUARD_SUBCOMMAND) {
        return process::guard::run_guard(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == sandbox::SALVAGE_SUBCOMMAND) {
        return sandbox::run_salvage(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == sandbox::POOL_REFILL_SUBCOMMAND) {
        return orchestrator::premade::run_refill(&args[2..])
            .unwrap_or_else(|| sandbox::registry::run_pool_refill(&args[2..]));
    }
    if args.get(1).is_some_and(|a| a == sandbox::door::DOOR_CALL_SUBCOMMAND) {
        return sandbox::door::run_call(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == sandbox::door::DOOR_SUBCOMMAND) {
        return sandbox::door::run_serve(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == proxy::relay::RELAY_SUBCOMMAND) {
        return proxy::relay::run(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == proxy::tunnel::TUNNEL_SUBCOMMAND) {
        return proxy::tunnel::run(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == sandbox::remote_rules::LISTEN_SUBCOMMAND) {
        return sandbox::remote_rules::run_listen(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == sandbox::pack::LIST_SUBCOMMAND) {
        return sandbox::pack::run_list(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == sandbox::pack::PACK_SUBCOMMAND) {
        return sandbox::pack::run_pack();
    }
    if args.get(1).is_some_and(|a| a == forge::credential::CREDENTIAL_SUBCOMMAND) {
        return forge::credential::run_helper(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == sandbox::firewall::CONNECT_SUBCOMMAND) {
        return sandbox::firewall::run_connect(&args[2..]);
    }
    ui::configure_colors();
    if args.get(1).is_some_and(|a| a == agent::SIMULATED_SUBCOMMAND) {
        return agent::run_simulated_agent();
    }
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { exit::Exit::Usage.code() } else { exit::Exit::Success.code() };
        }
    };
    let result = commands::dispatch(cli.command);
    match result {
        Ok(code) => code,
        Err(error) => {
            ui::print_error(&error);
            error.kind.exit_code()
        }
    }
}
