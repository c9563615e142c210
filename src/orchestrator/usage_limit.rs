//! The provider's usage or rate limit: when the agent reports one, how long to wait before the
//! same session goes on. The reset time is read from what the agent said (Claude's
//! `usage limit reached|<epoch>`, `resets at <time>`, `try again in N seconds`, `retry after
//! N`); without one, eden waits a minute, doubling each time, within `[loop] usage_limit_wait`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The prompt that continues a session after the wait.
pub(crate) const CONTINUE_PROMPT: &str =
    "The previous request stopped at the model provider's usage limit, which has now reset. Continue the task where you left off.";

/// How long to wait for the limit `message` speaks of, at `now`; `attempt` counts the waits of
/// this run so far (for the fallback's doubling).
pub(crate) fn wait_for(message: &str, now: SystemTime, attempt: u32) -> Duration {
    reset_in(message, now).unwrap_or_else(|| Duration::from_secs(60) * 2u32.saturating_pow(attempt.min(6)))
}

/// The wait a message names, if it names one (at least a second: a reset just passed).
fn reset_in(message: &str, now: SystemTime) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let now_secs = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    // `Claude AI usage limit reached|1767312000`: the reset as a Unix time.
    if let Some((_, after)) = lower.split_once('|') {
        let digits: String = after.trim().chars().take_while(char::is_ascii_digit).collect();
        if let Ok(epoch) = digits.parse::<u64>() {
            if epoch > 1_000_000_000 {
                return Some(Duration::from_secs(epoch.saturating_sub(now_secs).max(1)));
            }
        }
    }
    // `resets at 2026-11-23T18:00:00Z`.
    if let Some((_, after)) = lower.split_once("resets at ") {
        let stamp = after.split_whitespace().next().unwrap_or("").trim_end_matches(['.', ',', ')']);
        if let Ok(at) = humantime::parse_rfc3339_weak(&stamp.to_ascii_uppercase()) {
            return Some(at.duration_since(now).unwrap_or_default().max(Duration::from_secs(1)));
        }
    }
    // `try again in 30 seconds`, `retry after 2m`, `retry-after: 5`.
    for marker in ["try again in ", "retry after ", "retry-after: ", "retry in "] {
        if let Some((_, after)) = lower.split_once(marker) {
            let mut words = after.split_whitespace();
            let Some(first) = words.next() else { continue };
            let first = first.trim_end_matches(['.', ',', ')']);
            if let Ok(seconds) = first.parse::<f64>() {
                let unit = words.next().unwrap_or("seconds");
                let scale = match unit {
                    u if u.starts_with("min") => 60.0,
                    u if u.starts_with("hour") || u == "h" => 3600.0,
                    u if u.starts_with("ms") || u.starts_with("millisecond") => 0.001,
                    _ => 1.0,
                };
                return Some(Duration::from_secs_f64((seconds * scale).max(1.0)));
            }
            if let Ok(duration) = humantime::parse_duration(first) {
                return Some(duration.max(Duration::from_secs(1)));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reset_is_read_from_what_the_agent_said() {
        let now = UNIX_EPOCH + Duration::from_secs(1_767_300_000);
        let wait = |message: &str| reset_in(message, now).map(|d| d.as_secs());
        assert_eq!(wait("Claude AI usage limit reached|1767300600"), Some(600));
        assert_eq!(wait("usage limit reached; resets at 2026-01-01T21:00:00Z."), Some(1_767_301_200 - 1_767_300_000));
        assert_eq!(wait("API Error: Request rejected (429) · try again in 30 seconds"), Some(30));
        assert_eq!(wait("rate limited, retry after 2 minutes"), Some(120));
        assert_eq!(wait("Retry-After: 5"), Some(5));
        assert_eq!(wait("retry after 1m30s"), Some(90));
        assert_eq!(wait("usage limit reached|1767299000"), Some(1), "a reset just passed");
        assert_eq!(wait("This request would exceed your account's rate limit."), None);
        assert_eq!(wait_for("no time given", now, 0).as_secs(), 60);
        assert_eq!(wait_for("no time given", now, 2).as_secs(), 240);
    }
}
