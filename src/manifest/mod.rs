//! The manifest: the TOML contract users write (`schema`), its self-validating values
//! (`values`), loading with file:line:col errors and `--set` overrides (`load`), resolution into
//! the settings of a run (`plan`), and prompt rendering (`prompt`).

mod agent_plan;
mod attempts_plan;
mod branch_plan;
mod budget_plan;
pub(crate) mod checks_plan;
pub(crate) mod dotenv;
mod env_plan;
pub(crate) mod held_plan;
pub(crate) mod hooks_plan;
mod kind_keys;
pub(crate) mod load;
pub(crate) mod logging_plan;
mod loop_plan;
pub(crate) mod notify_plan;
pub(crate) mod output_plan;
pub(crate) mod plan;
pub(crate) mod prompt;
pub(crate) mod pull_request_plan;
mod sandbox_plan;
pub(crate) mod schema;
pub(crate) mod services_plan;
mod steps_plan;

pub(crate) use load::load;
pub(crate) use plan::Plan;

/// The task line `eden init` writes into a new manifest's prompt. A run whose prompt still
/// holds it is refused: it would send a real (paid) agent a placeholder.
pub const PLACEHOLDER_TASK: &str = "Describe the task here.";

/// What an agent prints when the task is done, unless `[loop] completion_signal` says otherwise.
pub(crate) const DEFAULT_SIGNAL: &str = "<promise>COMPLETE</promise>";
