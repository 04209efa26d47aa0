//! The one error type of the library, and located policy diagnostics.
//!
//! Every policy problem, syntactic or semantic, becomes a [`Diagnostic`]
//! that names the file, line and column, the offending key, and a hint. Its
//! `Display` is one compact line (what logs and the runtime show);
//! [`Diagnostic::render_snippet`] draws the rustc-style view with the
//! source line and a caret (what the CLI prints). The binary maps
//! [`Error::exit_code`] to its exit status: 2 for policy and usage errors, 1
//! for I/O failures.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

impl Location {
    pub const START: Location = Location { line: 1, column: 1 };

    /// Location of byte `offset` in `src` (clamped to the end of `src`).
    pub fn of_offset(src: &str, offset: usize) -> Location {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &src[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Location { line, column }
    }
}

/// Line starts of a source text, so that many offsets can be located in
/// `O(log lines)` each instead of rescanning the text (a policy with 100,000
/// rules may carry as many locations).
#[derive(Debug, Clone)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(src: &str) -> LineIndex {
        let starts = std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { starts }
    }

    /// Same result as [`Location::of_offset`].
    pub(crate) fn locate(&self, src: &str, offset: usize) -> Location {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let column = src[start..offset].chars().count() + 1;
        Location { line, column }
    }
}

/// One located problem in a policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The policy file as the user named it.
    pub file: String,
    pub location: Location,
    /// Byte range in the policy text that the diagnostic points at (empty
    /// when the problem is something missing, located where it belongs).
    pub span: Range<usize>,
    /// Dotted key path, e.g. `syscalls.deny` or `mount[1].source`.
    pub key: String,
    /// What is wrong.
    pub message: String,
    /// A likely intended value (`did you mean "ptrace"?`).
    pub suggestion: Option<String>,
    /// How to fix it.
    pub hint: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {} in {}",
            self.file, self.location.line, self.location.column, self.message, self.key
        )?;
        if let Some(s) = &self.suggestion {
            write!(f, " — did you mean \"{s}\"?")?;
        }
        write!(f, " hint: {}", self.hint)
    }
}

impl Diagnostic {
    /// rustc-style view: the message, `--> file:line:col`, the source line
    /// with a caret under the offending text, and the hint. `src` is the
    /// policy text the diagnostic was made from; `color` adds ANSI styles
    /// (callers decide, e.g. only when stderr is a terminal).
    pub fn render_snippet(&self, src: &str, color: bool) -> String {
        use annotate_snippets::{Level, Renderer, Snippet};
        let title = format!("{} in {}", self.message, self.key);
        let label = self
            .suggestion
            .as_ref()
            .map(|s| format!("did you mean \"{s}\"?"))
            .unwrap_or_default();
        let span = self.caret_span(src);
        let message = Level::Error
            .title(&title)
            .snippet(
                Snippet::source(src)
                    .line_start(1)
                    .origin(&self.file)
                    .fold(true)
                    .annotation(Level::Error.span(span).label(&label)),
            )
            .footer(Level::Help.title(&self.hint));
        let renderer = if color {
            Renderer::styled()
        } else {
            Renderer::plain()
        };
        let mut out = renderer.render(message).to_string();
        out.push('\n');
        out
    }

    /// The span clamped into `src` and at least one character wide, so the
    /// caret shows even for "missing" diagnostics (empty spans) and at the
    /// end of the file.
    fn caret_span(&self, src: &str) -> Range<usize> {
        let floor = |mut i: usize| {
            i = i.min(src.len());
            while !src.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let start = floor(self.span.start);
        let end = floor(self.span.end.max(start));
        if end > start {
            // One line is enough to point at; a multi-line table or array
            // would drag its whole body into the snippet.
            let line_end = src[start..end].find('\n').map_or(end, |i| start + i);
            return start..line_end.max(start + 1).min(end);
        }
        let next = src[start..].chars().next().map_or(0, char::len_utf8);
        start..start + next
    }
}

/// Everything that can go wrong in the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written (exit 1).
    #[error("{}: error: cannot {action}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An input that is not a regular file, or too large (exit 2).
    #[error("{}: error: cannot {action}: {what} hint: {hint}", path.display())]
    Input {
        action: &'static str,
        path: PathBuf,
        what: String,
        hint: &'static str,
    },
    /// The policy is invalid; one or more located diagnostics (exit 2).
    #[error("{}", render_all(.0))]
    Policy(Vec<Diagnostic>),
    /// The `--base` config.json is not a valid OCI runtime spec (exit 2).
    #[error("{}:{line}:{column}: error: invalid OCI config.json given as --base: {message} hint: pass a runtime-spec config.json, e.g. one written by `sandboy spec`", path.display())]
    Base {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The OCI spec types refused a value we built (a bug, or an impossible
    /// combination in `--base`) (exit 2).
    #[error("error: cannot build the OCI spec: {0} hint: check the --base config.json")]
    Spec(String),
}

fn render_all(diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl Error {
    /// The error of reading input `path` for `action`: an I/O failure
    /// (exit 1), or an input that is missing, no regular file or too large
    /// (exit 2).
    pub fn read(action: &'static str, path: &std::path::Path, e: crate::input::ReadError) -> Self {
        use crate::input::ReadError;
        match e {
            // A file named on the command line that is not there is the
            // caller's mistake (exit 2), as `sandboy wrap --policy` says it.
            ReadError::Io(source) if source.kind() == std::io::ErrorKind::NotFound => {
                Error::Input {
                    action,
                    path: path.to_path_buf(),
                    what: "no such file".into(),
                    hint: "check the path",
                }
            }
            ReadError::Io(source) => Error::Io {
                action,
                path: path.to_path_buf(),
                source,
            },
            ReadError::NotUtf8 { line, column } => Error::Input {
                action,
                path: format!("{}:{line}:{column}", path.display()).into(),
                what: "not UTF-8 text".into(),
                hint: "save the file as UTF-8",
            },
            other => Error::Input {
                action,
                path: path.to_path_buf(),
                what: other.to_string(),
                hint: "name the file itself",
            },
        }
    }

    /// Process exit status for this error (SPEC §3).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Io { .. } => 1,
            Error::Policy(_) | Error::Base { .. } | Error::Spec(_) | Error::Input { .. } => 2,
        }
    }

    /// The diagnostics, if this is a policy error.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Policy(d) => d,
            _ => &[],
        }
    }
}

/// serde_json's message without the " at line L column C" it appends,
/// for messages that give the location themselves (file:line:column, or
/// an annotation's "at line L column C" once).
pub fn json_message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    if err.line() == 0 {
        return text;
    }
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

/// Edit distance, for "did you mean" suggestions.
pub(crate) fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate within a small edit distance (a third of the
/// word, at least 2, at most 3), ties going to the first candidate.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let limit = (word.chars().count() / 3).clamp(2, 3);
    candidates
        .into_iter()
        .map(|c| (levenshtein(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let src = "a = 1\nbé = 2\n";
        assert_eq!(Location::of_offset(src, 0), Location { line: 1, column: 1 });
        assert_eq!(Location::of_offset(src, 6), Location { line: 2, column: 1 });
        // "bé = " is 6 bytes but 5 characters.
        assert_eq!(
            Location::of_offset(src, 12),
            Location { line: 2, column: 6 }
        );
    }

    #[test]
    fn line_index_agrees_with_of_offset() {
        let src = "a = 1\nbé = 2\n\nlast";
        let index = LineIndex::new(src);
        for offset in 0..=src.len() + 2 {
            assert_eq!(
                index.locate(src, offset),
                Location::of_offset(src, offset),
                "{offset}"
            );
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(closest("ptarce", ["ptrace", "read"]), Some("ptrace".into()));
        assert_eq!(closest("zzzzzz", ["ptrace"]), None);
    }
}
