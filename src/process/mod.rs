//! The one way eden starts processes (`ProcessBuilder`), and the supervisor that runs agents:
//! own process group, streamed output, idle/step/completion watchdogs, signal forwarding and a
//! guard that kills the whole group. No `Command::new` outside this module.

pub(crate) mod attached;
pub(crate) mod beside;
mod builder;
pub(crate) mod contain;
mod group;
pub(crate) mod guard;
mod lines;
mod liveness;
mod reader;
mod signals;
mod supervise;
mod watch;

pub(crate) use builder::{Output, ProcessBuilder, Stdin};
pub(crate) use group::GroupGuard;
pub(crate) use lines::{sandbox_note, LineSplitter, Tail};
pub(crate) use liveness::ProcessStamp;
pub(crate) use signals::{
    deliver_to as deliver_signals_to, flag as signal_flag, listen as listen_for_signals, listen_for_steering,
    note_all as note_signals, rearm as rearm_signals, received as signal_received, sleep_unless_stopped,
    stop_requested, stopping, Abort, STEER_REQUEST, STOP_REQUEST,
};
pub(crate) use supervise::{supervise, Flow, Handlers, Inside, Outcome, OutputTails, Stopping, Watchdogs};
