//! A guard's cleanup (`eden __eden-salvage …`) when eden died: what the sandbox holds saved,
//! then the sandbox removed.

use super::{container, engine, pod};

/// `eden __eden-salvage …` (a guard's cleanup): saves what the sandbox holds, removes it, and
/// returns the exit code.
pub(crate) fn run_salvage(args: &[std::ffi::OsString]) -> i32 {
    let Some((name, target)) = args.split_last() else { return 2 };
    let Some(name) = name.to_str() else { return 2 };
    if let Some(kube) = pod::Kube::from_args(target) {
        let (Some(repo), Some(run_id)) = (target.get(3), target.get(4).and_then(|id| id.to_str())) else { return 2 };
        return pod::salvage_and_delete(&kube, name, std::path::Path::new(repo), run_id).map_or(1, |_| 0);
    }
    let Some(target) = engine::Target::from_args(target) else { return 2 };
    container::salvage_and_remove(&target, name).map_or(1, |_| 0)
}
