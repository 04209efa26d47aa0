//! Text from untrusted sources (report paths and process names, an
//! adapter's error message) made safe to print on a terminal: every
//! control character but newline and tab becomes a visible `\u{…}`
//! escape. A red team's adapter message and report lines erased lines,
//! drew a fake diff, set the window title and wrote the clipboard (OSC 52)
//! through raw escape sequences.

use std::borrow::Cow;

/// `s` with control characters (C0 but `\n` and `\t`, DEL, C1) escaped.
pub fn printable(s: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn escapes_terminal_controls_and_keeps_lines() {
        assert_eq!(printable("plain\n\ttext"), "plain\n\ttext");
        assert_eq!(
            printable("a\x1b[2Kb\x07\u{9b}c\r"),
            "a\\u{1b}[2Kb\\u{7}\\u{9b}c\\u{d}"
        );
    }
}
