//! The manifest: the TOML contract users write (`schema`), its self-validating values
//! (`values`), loading with file:line:col errors and `--set` overrides (`load`), resolution into
//! the settings of a run (`plan`), and prompt rendering (`prompt`).

mod agent_plan;
mod attempts_plan;
mod branch_plan;
mod budget_plan;
pub mod checks_plan;
pub mod dotenv;
mod env_plan;
pub mod held_plan;
pub mod hooks_plan;
pub mod load;
pub mod logging_plan;
mod loop_plan;
pub mod output_plan;
pub mod plan;
pub mod prompt;
mod sandbox_plan;
pub mod schema;
pub mod services_plan;
mod steps_plan;

pub use load::{load, LoadRequest};
pub use plan::Plan;

/// The task line `eden init` writes into a new manifest's prompt. A run whose prompt still
/// holds it is refused: it would send a real (paid) agent a placeholder.
pub const PLACEHOLDER_TASK: &str = "Describe the task here.";

/// What an agent prints when the task is done, unless `[loop] completion_signal` says otherwise.
pub const DEFAULT_SIGNAL: &str = "<promise>COMPLETE</promise>";
