//! A run's place in a W3C trace (`TRACEPARENT`): the trace it belongs to (the caller's, a CI
//! job's, when eden's environment names one; else one of its own made from the run's id) and
//! the span ids of the run and its iterations, computed the same wherever they are needed: by
//! the exporter at the edge (`ui::otlp`) and for the agent's own `TRACEPARENT`, so its spans
//! join the run's. Nothing here sends anything.

/// The run's trace: its id, and the caller's span the run's is a child of (`TRACEPARENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TraceContext {
    pub(crate) trace_id: [u8; 16],
    pub(crate) parent: Option<[u8; 8]>,
}

impl TraceContext {
    /// The caller's (`TRACEPARENT`), else a trace of the run's own, its id made from the run's.
    pub(crate) fn of(run_id: &str, traceparent: Option<&str>) -> TraceContext {
        if let Some((trace_id, parent)) = traceparent.and_then(parse_traceparent) {
            return TraceContext { trace_id, parent: Some(parent) };
        }
        let (a, b) = (hash64(&[run_id, "trace"]), hash64(&[run_id, "trace", "2"]));
        let mut trace_id = [0u8; 16];
        trace_id[..8].copy_from_slice(&a.to_be_bytes());
        trace_id[8..].copy_from_slice(&b.to_be_bytes());
        TraceContext { trace_id, parent: None }
    }

    /// The run's context from eden's own environment.
    pub(crate) fn from_env(run_id: &str) -> TraceContext {
        TraceContext::of(run_id, std::env::var("TRACEPARENT").ok().as_deref())
    }
}

/// `00-<32 hex>-<16 hex>-<2 hex>`, neither id all zeros.
fn parse_traceparent(text: &str) -> Option<([u8; 16], [u8; 8])> {
    let parts: Vec<&str> = text.trim().split('-').collect();
    let [version, trace, span, _flags] = parts[..] else { return None };
    if version.len() != 2 || version == "ff" {
        return None;
    }
    let trace: [u8; 16] = hex_bytes(trace)?.try_into().ok()?;
    let span: [u8; 8] = hex_bytes(span)?.try_into().ok()?;
    (trace != [0; 16] && span != [0; 8]).then_some((trace, span))
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// FNV-1a over the parts: the same span ids wherever they are computed (the reporter, and the
/// agent's `TRACEPARENT`), never zero.
fn hash64(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash.max(1)
}

pub(crate) fn span_id(parts: &[&str]) -> [u8; 8] {
    hash64(parts).to_be_bytes()
}

/// The span id of `step`'s iteration `n` of run `run_id`.
pub(crate) fn iteration_span(run_id: &str, step: &str, n: u32) -> [u8; 8] {
    span_id(&[run_id, "iteration", step, &n.to_string()])
}

/// The span id of run `run_id`.
pub(crate) fn run_span(run_id: &str) -> [u8; 8] {
    span_id(&[run_id, "run"])
}

/// The span an agent's own spans are children of.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AgentSpan<'a> {
    /// `step`'s iteration `n`.
    Iteration { step: &'a str, n: u32 },
    /// The run's own (an interactive session, which has no iteration span).
    Run,
}

/// What the agent gets as `TRACEPARENT` (when the run's traces are exported): the run's trace,
/// and the span its own spans join.
pub(crate) fn agent_traceparent(run_id: &str, span: AgentSpan<'_>) -> String {
    let context = TraceContext::from_env(run_id);
    let id = match span {
        AgentSpan::Iteration { step, n } => iteration_span(run_id, step, n),
        AgentSpan::Run => run_span(run_id),
    };
    format!("00-{}-{}-01", hex(&context.trace_id), hex(&id))
}

static PROCESS_STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Noted as eden starts: what the run's timings count from.
pub(crate) fn note_process_start() {
    PROCESS_STARTED.get_or_init(std::time::Instant::now);
}

/// How long ago eden started (`note_process_start`; else the first time this is asked).
pub(crate) fn since_process_start() -> std::time::Duration {
    PROCESS_STARTED.get_or_init(std::time::Instant::now).elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_read_and_checked() {
        let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = TraceContext::of("run", Some(given));
        assert_eq!(hex(&context.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.parent.map(|p| hex(&p)).as_deref(), Some("00f067aa0ba902b7"));
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-XYZ-1-01",
        ] {
            assert_eq!(TraceContext::of("run", Some(bad)).parent, None, "{bad}");
        }
        assert_eq!(TraceContext::of("run", None), TraceContext::of("run", None), "the same run, the same trace");
    }
}
