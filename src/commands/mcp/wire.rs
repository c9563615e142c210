//! JSON-RPC 2.0 over stdio as MCP frames it: one message per line on stdin and stdout, every
//! line written whole (and redacted) through `ui::print_data`. What a client sends is hostile
//! input: a line that is not JSON is a parse error, a message that is not a request or a
//! notification an invalid request, and neither ends the server.

use serde_json::{json, Value};

/// The protocol revisions eden speaks, newest first.
pub(crate) const REVISIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The longest line read from the client (a request larger than this is refused).
pub(crate) const MAX_LINE: usize = 1 << 20;

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// One message from the client.
#[derive(Debug)]
pub(crate) enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// An answer to a request of ours (eden sends none), ignored.
    Response,
    /// Not a message: the error to answer with (and the id, when one could be read).
    Bad {
        id: Value,
        code: i64,
        message: String,
    },
}

/// Read one line as a message.
pub(crate) fn parse(line: &str) -> Incoming {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Incoming::Bad { id: Value::Null, code: PARSE_ERROR, message: "Parse error: not JSON".into() };
    };
    let id = value.get("id").cloned().filter(|id| id.is_string() || id.is_number());
    let bad = |message: &str| Incoming::Bad {
        id: id.clone().unwrap_or(Value::Null),
        code: INVALID_REQUEST,
        message: format!("Invalid Request: {message}"),
    };
    if !value.is_object() {
        return bad("a message is a JSON object");
    }
    if value.get("jsonrpc") != Some(&json!("2.0")) {
        return bad("`jsonrpc` must be \"2.0\"");
    }
    let params = value.get("params").cloned().unwrap_or(json!({}));
    if !params.is_object() && !params.is_array() {
        return bad("`params` must be an object");
    }
    match (value.get("method").and_then(Value::as_str), id.clone()) {
        (Some(method), Some(id)) => Incoming::Request { id, method: method.to_owned(), params },
        (Some(method), None) if value.get("id").is_none() => {
            Incoming::Notification { method: method.to_owned(), params }
        }
        (Some(_), None) => bad("`id` must be a string or a number"),
        (None, _) if value.get("result").is_some() || value.get("error").is_some() => Incoming::Response,
        (None, _) => bad("no `method`"),
    }
}

/// Write a message to the client.
pub(crate) fn send(message: &Value) {
    crate::ui::print_data(&message.to_string());
}

pub(crate) fn respond(id: &Value, result: Value) {
    send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
}

pub(crate) fn fail(id: &Value, code: i64, message: &str) {
    send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
}

pub(crate) fn notify(method: &str, params: Value) {
    send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
}

/// The revision to speak: the client's when eden speaks it, else eden's newest.
pub(crate) fn revision(asked: Option<&str>) -> &'static str {
    REVISIONS.iter().find(|revision| Some(**revision) == asked).copied().unwrap_or(REVISIONS[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_mistakes() {
        assert!(matches!(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), Incoming::Request { .. }));
        assert!(matches!(
            parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"),
            Incoming::Notification { .. }
        ));
        assert!(matches!(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"), Incoming::Response));
        let code = |line: &str| match parse(line) {
            Incoming::Bad { code, .. } => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(code("{not json"), PARSE_ERROR);
        assert_eq!(code("[1,2]"), INVALID_REQUEST);
        assert_eq!(code("{\"id\":1,\"method\":\"ping\"}"), INVALID_REQUEST);
        assert_eq!(code("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}"), INVALID_REQUEST);
        assert_eq!(code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}"), INVALID_REQUEST);
        assert_eq!(revision(Some("2025-06-18")), "2025-06-18");
        assert_eq!(revision(Some("1999-01-01")), REVISIONS[0]);
    }
}
