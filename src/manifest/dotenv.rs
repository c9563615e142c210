//! `.eden/.env`: `KEY=VALUE` lines (dotenv), for secrets that should not live in the manifest.
//! `#` comments and blank lines are skipped, `export ` is allowed, values may be unquoted
//! (trimmed, ` #` starts a comment), single-quoted (literal) or double-quoted (`\n`, `\"`,
//! `\\` escapes). No `${VAR}` expansion: the file holds values, the manifest references them.

use crate::error::Error;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub(crate) struct DotEnv {
    pub(crate) path: Option<PathBuf>,
    pub(crate) values: BTreeMap<String, String>,
}

impl DotEnv {
    /// Read `<root>/.eden/.env` if it exists.
    pub(crate) fn load(root: &Path) -> Result<DotEnv, Error> {
        let path = crate::layout::dotenv(root);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(DotEnv::default()),
            Err(err) => {
                return Err(Error::usage(format!("cannot read `{}`: {err}", path.display()))
                    .with_hint("fix its permissions, or remove it"))
            }
        };
        let values = parse(&text).map_err(|BadLine { line, problem }| {
            Error::usage(format!("{}:{line}: {problem}", path.display()))
                .with_hint("write each variable as `NAME=value` (quotes allowed); `#` starts a comment")
        })?;
        Ok(DotEnv { path: Some(path), values })
    }
}

/// A line of a `.env` file that cannot be read: its number (from 1) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadLine {
    pub(crate) line: usize,
    pub(crate) problem: &'static str,
}

/// The variables, or the first line that cannot be read.
pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, String>, BadLine> {
    let mut values = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((name, value)) = line.split_once('=') else {
            // Not a word of the line itself: it may be a secret that lost its `NAME=`.
            return Err(BadLine { line: line_no, problem: "the line is not `NAME=value`" });
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(BadLine {
                line: line_no,
                problem: "the name before `=` is not a valid variable name (letters, digits, `_`)",
            });
        }
        let value = value.trim_start();
        let value = if let Some(rest) = value.strip_prefix('"') {
            double_quoted(rest).ok_or(BadLine { line: line_no, problem: "the double quote is not closed" })?
        } else if let Some(rest) = value.strip_prefix('\'') {
            let end = rest.find('\'').ok_or(BadLine { line: line_no, problem: "the single quote is not closed" })?;
            rest[..end].to_owned()
        } else {
            let value = value.find(" #").map_or(value, |at| &value[..at]);
            value.trim_end().to_owned()
        };
        values.insert(name.to_owned(), value);
    }
    Ok(values)
}

fn double_quoted(rest: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        let text = "# comment\n\nA=1\nexport B = two words  # note\nC=\"x\\ny \\\"q\\\"\"\nD='lit $X \\n'\nE=\n";
        let values = parse(text).unwrap();
        assert_eq!(values["A"], "1");
        assert_eq!(values["B"], "two words");
        assert_eq!(values["C"], "x\ny \"q\"");
        assert_eq!(values["D"], "lit $X \\n");
        assert_eq!(values["E"], "");
    }

    #[test]
    fn reports_the_line() {
        assert_eq!(parse("A=1\nnot a pair\n").unwrap_err().line, 2);
        assert_eq!(parse("A=\"open\n").unwrap_err(), BadLine { line: 1, problem: "the double quote is not closed" });
        assert_eq!(
            parse("MY-VAR=1\n").unwrap_err().problem,
            "the name before `=` is not a valid variable name (letters, digits, `_`)"
        );
        // Nothing of the line is echoed: it may be a secret without its `NAME=`.
        assert_eq!(parse("sk-0123456789abcdef\n").unwrap_err().problem, "the line is not `NAME=value`");
    }
}
