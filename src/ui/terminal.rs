//! Text bound for a terminal. Agents print whatever they (or the files they `cat`) contain, and a
//! terminal obeys escape sequences: retitle the window (OSC 0), write the clipboard (OSC 52),
//! clear the screen, move the cursor over eden's own lines. Every line the displays write passes
//! through `neutralize`: plain text and SGR colour sequences stay, every other control character
//! is replaced by a visible stand-in. Logs, records and JSON output keep the raw text.

use std::borrow::Cow;

/// Make `text` safe to write to a terminal. Newlines and tabs stay; `ESC [ … m` (colours and
/// styles) stays, followed by a reset at the end so an agent's colour cannot leak into the next
/// line; ESC in any other sequence becomes `␛`, other C0 controls their control pictures
/// (`␇`, `␍`, …), DEL `␡`, and C1 controls (`U+0080`–`U+009F`, such as the one-byte CSI) `\u{9b}`.
pub(crate) fn neutralize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_care) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut styled = false;
    let mut rest = text;
    while let Some(at) = rest.find(needs_care) {
        out.push_str(&rest[..at]);
        let c = rest[at..].chars().next().expect("found a char there");
        rest = &rest[at + c.len_utf8()..];
        match c {
            '\u{1b}' => match sgr_length(rest) {
                Some(length) => {
                    out.push('\u{1b}');
                    out.push_str(&rest[..length]);
                    rest = &rest[length..];
                    styled = true;
                }
                None => out.push('␛'),
            },
            '\u{7f}' => out.push('␡'),
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).expect("control pictures exist")),
            _ => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    out.push_str(rest);
    if styled {
        out.push_str("\u{1b}[0m");
    }
    Cow::Owned(out)
}

fn needs_care(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// The length of `[` parameters `m` after an ESC, if that is what follows: an SGR sequence.
fn sgr_length(after_escape: &str) -> Option<usize> {
    let body = after_escape.strip_prefix('[')?;
    let parameters = body.bytes().take_while(|b| b.is_ascii_digit() || matches!(b, b';' | b':')).count();
    (body.as_bytes().get(parameters) == Some(&b'm')).then_some(parameters + 2)
}

#[cfg(test)]
mod tests {
    use super::neutralize;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        let text = "héllo\tworld\nnext line ✓";
        assert!(matches!(neutralize(text), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn colours_stay_and_are_reset_at_the_end() {
        assert_eq!(neutralize("\u{1b}[1;31mred\u{1b}[0m plain"), "\u{1b}[1;31mred\u{1b}[0m plain\u{1b}[0m");
        assert_eq!(neutralize("\u{1b}[38:5:196mx"), "\u{1b}[38:5:196mx\u{1b}[0m");
    }

    #[test]
    fn everything_else_is_made_visible() {
        // Window title (OSC 0, BEL-terminated), clipboard (OSC 52, ST-terminated), clear screen,
        // cursor movement, carriage return, backspace, DEL, the one-byte CSI and OSC.
        let cases = [
            ("\u{1b}]0;pwned\u{7}", "␛]0;pwned␇"),
            ("\u{1b}]52;c;ZWNobyBoaQ==\u{1b}\\", "␛]52;c;ZWNobyBoaQ==␛\\"),
            ("\u{1b}[2J\u{1b}[H", "␛[2J␛[H"),
            ("\u{1b}[1A\u{1b}[2K", "␛[1A␛[2K"),
            ("safe\roverwritten\u{8}", "safe␍overwritten␈"),
            ("\u{7f}", "␡"),
            ("\u{9b}2J \u{9d}0;x", "\\u{9b}2J \\u{9d}0;x"),
            ("\u{1b}", "␛"),
            ("\u{1b}[", "␛["),
        ];
        for (raw, shown) in cases {
            assert_eq!(neutralize(raw), shown, "{raw:?}");
        }
    }
}
