//! eden's integration tests: real git repositories, real processes and signals, one binary.
#![allow(clippy::print_stderr)]

mod support;

mod adapters;
mod boundary;
mod budget;
mod checks;
mod clean;
mod cli;
mod concurrency;
mod containers;
mod containment;
mod copy;
mod crash;
mod doctor;
mod env_secrets;
mod escape;
mod generated;
mod github;
mod held_keys;
mod hooks;
mod hostile_text;
mod image;
mod interactive;
mod isolated;
mod kubernetes;
mod locks;
mod loop_watchdogs;
mod manifest_errors;
mod model_server;
mod parallel;
mod prompts;
mod push;
mod real_agents;
mod remote;
mod remote_engines;
mod returns;
mod review;
mod sessions;
mod signals;
mod steps;
mod storage;
mod strategies;
mod structure;
mod structured;
mod usage_limits;
