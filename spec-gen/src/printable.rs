//! Text from untrusted sources (report paths and process names, an
//! adapter's error message, registry fields) made safe to print on a
//! terminal: every control character but newline and tab, and every
//! invisible format character, becomes a visible `\u{…}` escape. A red
//! team's adapter message and report lines erased lines, drew a fake diff,
//! set the window title and wrote the clipboard (OSC 52) through raw escape
//! sequences; a key holding U+202E (RIGHT-TO-LEFT OVERRIDE) reordered the
//! rest of a diagnostic line ("Trojan Source").

use std::borrow::Cow;

/// Invisible format characters (Unicode Cf and the line/paragraph
/// separators): bidi embeddings, overrides, isolates and marks reorder what
/// follows them; zero-width and tag characters hide text from the reader.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{61c}' | '\u{180e}'
        | '\u{200b}'..='\u{200f}'   // zero-width space/joiners, LRM, RLM
        | '\u{2028}'..='\u{202e}'   // separators, LRE RLE PDF LRO RLO
        | '\u{2060}'..='\u{206f}'   // word joiner, LRI RLI FSI PDI, ...
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}' // tag characters
    )
}

/// Whether `c` is escaped: controls (C0 but `\n` and `\t`, DEL, C1) and
/// invisible format characters.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || invisible(c)
}

/// `s` with control and invisible format characters escaped as `\u{…}`.
pub fn printable(s: &str) -> Cow<'_, str> {
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
    use std::borrow::Cow;

    #[test]
    fn escapes_terminal_controls_and_keeps_lines() {
        assert_eq!(printable("plain\n\ttext"), "plain\n\ttext");
        assert_eq!(
            printable("a\x1b[2Kb\x07\u{9b}c\r"),
            "a\\u{1b}[2Kb\\u{7}\\u{9b}c\\u{d}"
        );
    }

    #[test]
    fn escapes_bidi_and_invisible_format_characters() {
        for (raw, shown) in [
            ("a\u{202e}b", "a\\u{202e}b"),
            (
                "\u{202a}\u{202b}\u{202c}\u{202d}",
                "\\u{202a}\\u{202b}\\u{202c}\\u{202d}",
            ),
            (
                "\u{2066}x\u{2067}\u{2068}\u{2069}",
                "\\u{2066}x\\u{2067}\\u{2068}\\u{2069}",
            ),
            ("\u{200e}\u{200f}\u{61c}", "\\u{200e}\\u{200f}\\u{61c}"),
            ("zero\u{200b}width\u{feff}", "zero\\u{200b}width\\u{feff}"),
            ("tag\u{e0041}", "tag\\u{e0041}"),
            ("line\u{2028}sep", "line\\u{2028}sep"),
        ] {
            assert_eq!(printable(raw), shown, "{raw:?}");
        }
        // Visible non-ASCII text is left alone, unallocated.
        for plain in ["héllo wörld", "日本語 – “quoted” → ok", "עברית", "emoji 🎉"]
        {
            assert!(matches!(printable(plain), Cow::Borrowed(p) if p == plain));
        }
    }
}
