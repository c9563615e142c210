//! `eden top`'s frames, drawn on ratatui's test backend from real files: records made from one
//! eden wrote (`tests/fixtures/top/record.json`), logs of real event lines, read by the model as
//! the dashboard reads them. Live runs name this test's own process (alive, so live).

use super::screen::{Key, Screen, View};
use super::{draw, Board};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, SystemTime};

const RECORD: &str = include_str!("../../../tests/fixtures/top/record.json");

/// 2026-11-28T09:00:00Z, the tests' now.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_856_400)
}

struct World {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("shop");
        std::fs::create_dir_all(root.join(".eden/runs")).unwrap();
        std::fs::create_dir_all(root.join(".eden/logs")).unwrap();
        World { _dir: dir, root }
    }

    /// A record: the fixture with `changes` laid over it.
    fn run(&self, id: &str, changes: Value) -> Value {
        let mut record: Value = serde_json::from_str(RECORD).unwrap();
        record["id"] = json!(id);
        record["branch"] = json!(format!("eden/{id}"));
        record["record_path"] = json!(self.root.join(format!(".eden/runs/{id}.json")));
        for (key, value) in changes.as_object().unwrap() {
            record[key] = value.clone();
        }
        if record["status"] == "running" {
            let me = crate::process::ProcessStamp::current();
            record["process"] = json!({"pid": me.pid, "start": me.start});
            record["finished_at"] = Value::Null;
        }
        std::fs::write(self.root.join(format!(".eden/runs/{id}.json")), record.to_string()).unwrap();
        record
    }

    /// A live run's log: `events` as it logged them.
    fn log(&self, id: &str, events: &[Value]) -> std::path::PathBuf {
        let path = self.root.join(format!(".eden/logs/{id}.jsonl"));
        let lines: Vec<String> = events
            .iter()
            .enumerate()
            .map(|(n, event)| {
                let mut line = json!({"ts": format!("2026-11-28T08:59:{:02}.000Z", 10 + n), "run_id": id});
                for (key, value) in event.as_object().unwrap() {
                    line[key] = value.clone();
                }
                line.to_string()
            })
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    fn board(&self) -> Board {
        let mut board = Board::new(&[crate::layout::Layout::new(&self.root, self.root.join(".git"))]);
        board.refresh(None);
        board
    }
}

fn usage(tokens: u64, cost: f64) -> Value {
    json!({"input_tokens": tokens, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": cost})
}

/// Three runs going (one in docker on another engine, one of them with a hostile last line),
/// two ended, and a group of three attempts.
fn busy(world: &World) {
    let live = |id: &str, name: &str, changes: Value| {
        let log = world.root.join(format!(".eden/logs/{id}.jsonl"));
        let mut record = json!({"status": "running", "phase": "iterating", "name": name, "started_at": "2026-11-28T08:58:37.000Z",
            "log": log, "steps": [], "iterations": [], "duration_ms": 0, "exit_code": null, "exit_reason": null});
        for (key, value) in changes.as_object().unwrap() {
            record[key] = value.clone();
        }
        world.run(id, record);
    };
    live("20261128-085837-aaaaaa", "fix-login", json!({"max_iterations": 5}));
    world.log(
        "20261128-085837-aaaaaa",
        &[
            json!({"event": "run_started", "kind": "run", "name": "fix-login", "agent": "cli", "strategy": "merge-to-head", "branch": "eden/fix-login", "base": "main", "worktree": "/w", "max_iterations": 5}),
            json!({"event": "iteration_started", "iteration": 1, "max_iterations": 5}),
            json!({"event": "tool_call", "iteration": 1, "name": "Read", "summary": "src/login.rs", "subagent": false}),
            json!({"event": "provider_request", "iteration": 1, "at": "08:59:12", "method": "POST", "host": "api.anthropic.com", "path": "/v1/messages", "status": 200, "bytes_up": 10, "bytes_down": 20, "duration_ms": 812, "refused": null}),
            json!({"event": "commit", "iteration": 1, "sha": "0123456789abcdef", "subject": "fix the login check"}),
            json!({"event": "iteration_finished", "iteration": 1, "outcome": "exited", "exit_code": 0, "duration_ms": 30000}),
            json!({"event": "check_finished", "name": "test", "iteration": 1, "outcome": "failed", "exit_code": 1, "duration_ms": 1200}),
            json!({"event": "iteration_started", "iteration": 2, "max_iterations": 5}),
            json!({"event": "usage", "iteration": 2, "usage": usage(12400, 0.31)}),
            json!({"event": "agent_text", "iteration": 2, "text": "Running the tests again \u{1b}]0;pwned\u{7}now"}),
        ],
    );
    live(
        "20261128-085900-bbbbbb",
        "docs-pass",
        json!({"sandbox": "docker", "container": {"engine": "docker", "host": "ssh://build-1", "name": "eden-b", "id": "c0ffee", "image": "eden:1"}}),
    );
    world.log(
        "20261128-085900-bbbbbb",
        &[
            json!({"event": "run_started", "kind": "run", "name": "docs-pass", "agent": "simulated", "strategy": "merge-to-head", "branch": "eden/docs", "base": "main", "worktree": "/w", "max_iterations": 10}),
            json!({"event": "iteration_started", "iteration": 1, "max_iterations": 10}),
            json!({"event": "agent_text", "iteration": 1, "text": "Reading docs/src/SUMMARY.md"}),
        ],
    );
    world.run(
        "20261128-080000-cccccc",
        json!({"name": "bump-deps", "merged_into": "main", "commits": [{"sha": "1", "subject": "a"}, {"sha": "2", "subject": "b"}],
            "usage": usage(50000, 1.25), "duration_ms": 754000, "started_at": "2026-11-28T08:00:00.000Z"}),
    );
    world.run(
        "20261128-070000-dddddd",
        json!({"name": "refactor", "exit_code": 10, "exit_reason": "protected", "preserved_branch": "eden/refactor",
            "commits": [{"sha": "3", "subject": "c"}], "duration_ms": 300000, "started_at": "2026-11-28T07:00:00.000Z"}),
    );
    for (n, chosen, score) in [(1, false, 3.0), (2, true, 1.0), (3, false, 2.0)] {
        world.run(
            &format!("20261128-06000{n}-eeeeee"),
            json!({"name": "speedup", "attempt": {"number": n, "of": 3, "group": "g-1", "chosen": chosen, "score": score},
                "merged_into": if chosen { json!("main") } else { Value::Null },
                "preserved_branch": if chosen { Value::Null } else { json!(format!("eden/speedup-{n}")) },
                "usage": usage(1000 * n, 0.1 * n as f64), "duration_ms": 60000 * n, "started_at": format!("2026-11-28T06:00:0{n}.000Z")}),
        );
    }
}

fn frame(board: &Board, screen: &Screen, (width, height): (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| draw(frame, board, screen, now())).unwrap();
    terminal.backend().to_string()
}

#[test]
fn the_list_at_80x24_and_200x50() {
    let world = World::new();
    busy(&world);
    let board = world.board();
    let screen = Screen::new(false);
    insta::assert_snapshot!("list_80x24", frame(&board, &screen, (80, 24)));
    insta::assert_snapshot!("list_200x50", frame(&board, &screen, (200, 50)));
}

#[test]
fn a_runs_timeline_and_its_output_followed() {
    let world = World::new();
    busy(&world);
    let board = world.board();
    let mut screen = Screen::new(false);
    screen.key(Key::Down, &board, now());
    screen.key(Key::Enter, &board, now());
    assert_eq!(screen.view, View::Run { id: "20261128-085837-aaaaaa".into(), follow: false });
    insta::assert_snapshot!("run_100x30", frame(&board, &screen, (100, 30)));
    screen.key(Key::Char('f'), &board, now());
    let followed = frame(&board, &screen, (80, 24));
    assert!(followed.contains("output (following)") && followed.contains("Running the tests again now"), "{followed}");
    assert!(!followed.contains('\u{1b}') && !followed.contains("pwned\u{7}"), "{followed}");
}

#[test]
fn the_attempts_side_by_side_and_the_keys_that_ask_first() {
    let world = World::new();
    busy(&world);
    let board = world.board();
    let mut screen = Screen::new(false);
    let lines = screen.lines(&board, now());
    let group = lines.iter().position(|line| matches!(line, super::screen::Line::Group { .. })).unwrap();
    screen.selected = group;
    let measure = screen.key(Key::Char('a'), &board, now());
    assert!(matches!(measure, Some(super::Action::Measure(ref ids)) if ids.len() == 3), "{measure:?}");
    screen.diffstats.insert("20261128-060001-eeeeee".into(), "2 files +10 -1".into());
    insta::assert_snapshot!("attempts_100x20", frame(&board, &screen, (100, 20)));
    // A merge asks first; any key but `y` does nothing.
    screen.key(Key::Down, &board, now());
    screen.key(Key::Down, &board, now());
    assert_eq!(screen.key(Key::Char('m'), &board, now()), None);
    assert!(frame(&board, &screen, (100, 20)).contains("merge attempt #3 into main? (y/n)"));
    assert_eq!(screen.key(Key::Char('y'), &board, now()), Some(super::Action::Merge("20261128-060003-eeeeee".into())));
    assert_eq!(screen.key(Key::Char('m'), &board, now()), None);
    assert_eq!(screen.key(Key::Char('n'), &board, now()), None);
    assert_eq!(screen.status.as_deref(), Some("nothing done"));
}

#[test]
fn filter_sort_and_a_run_that_goes_away() {
    let world = World::new();
    busy(&world);
    let mut board = world.board();
    let mut screen = Screen::new(false);
    for key in [Key::Char('/'), Key::Char('r'), Key::Char('e'), Key::Char('f'), Key::Enter] {
        screen.key(key, &board, now());
    }
    let shown = frame(&board, &screen, (80, 24));
    assert!(shown.contains("refactor") && !shown.contains("bump-deps"), "{shown}");
    screen.key(Key::Esc, &board, now());
    screen.key(Key::Char('t'), &board, now());
    screen.key(Key::Char('t'), &board, now());
    let by_cost = frame(&board, &screen, (80, 24));
    let (deps, speedup) = (by_cost.find("bump-deps").unwrap(), by_cost.find("speedup").unwrap());
    assert!(by_cost.contains("sort:cost") && deps < speedup, "{by_cost}");
    // A run removed while it is open: said so, nothing breaks.
    screen.key(Key::Home, &board, now());
    screen.key(Key::Enter, &board, now());
    let View::Run { id, .. } = screen.view.clone() else { panic!("a run is open") };
    std::fs::remove_file(world.root.join(format!(".eden/runs/{id}.json"))).unwrap();
    assert!(board.refresh(Some(&id)));
    assert!(frame(&board, &screen, (80, 24)).contains("is gone"));
    assert!(!Path::new(&world.root.join(format!(".eden/runs/{id}.json"))).exists());
}

#[test]
fn a_log_is_read_on_from_where_it_stopped() {
    let world = World::new();
    busy(&world);
    let mut board = world.board();
    let id = "20261128-085900-bbbbbb";
    assert!(!board.refresh(None), "nothing changed, nothing read");
    let log = world.root.join(format!(".eden/logs/{id}.jsonl"));
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    use std::io::Write;
    // Half a line, then the rest: the half is kept until its end comes.
    let line = json!({"ts": "2026-11-28T08:59:30.000Z", "run_id": id, "event": "agent_text", "iteration": 1, "text": "Second line"}).to_string();
    let (first, second) = line.split_at(20);
    file.write_all(first.as_bytes()).unwrap();
    assert!(board.refresh(None));
    assert_eq!(board.find(id).unwrap().log.last_line.as_deref(), Some("Reading docs/src/SUMMARY.md"));
    file.write_all(format!("{second}\n").as_bytes()).unwrap();
    board.refresh(None);
    assert_eq!(board.find(id).unwrap().log.last_line.as_deref(), Some("Second line"));
}

#[test]
fn several_repositories_on_one_board() {
    let (first, second) = (World::new(), World::new());
    busy(&first);
    second.run("20261128-085959-ffffff", json!({"name": "elsewhere", "merged_into": "main"}));
    let layouts: Vec<crate::layout::Layout> = [&first, &second]
        .iter()
        .map(|world| crate::layout::Layout::new(&world.root, world.root.join(".git")))
        .collect();
    let mut board = Board::new(&layouts);
    board.refresh(None);
    let shown = frame(&board, &Screen::new(false), (80, 24));
    assert!(shown.contains("2 repositories") && shown.contains("8 runs") && shown.contains("elsewhere"), "{shown}");
    assert_eq!(board.root_of("20261128-085959-ffffff"), Some(second.root.as_path()));
}
