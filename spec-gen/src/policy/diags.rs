//! The collector every check reports into: it turns a byte span into a
//! located [`Diagnostic`] and points each hint at the policy reference.

use std::ops::Range;

use crate::error::{Diagnostic, LineIndex, Location};

/// Sections of `docs/policy.md`, one per top-level key.
pub const DOC_SECTIONS: &[&str] = &[
    "version", "name", "landlock", "fs", "mount", "net", "syscalls", "process", "limits", "wasm",
    "context",
];

/// Where the reference for `key` lives: `docs/policy.md#fs` for `fs.read`,
/// `docs/policy.md#mount` for `mount[0].source`, the page itself otherwise.
pub fn doc_link(key: &str) -> String {
    let section = key.split(['.', '[']).next().unwrap_or_default();
    if DOC_SECTIONS.contains(&section) {
        format!("docs/policy.md#{section}")
    } else {
        "docs/policy.md".to_string()
    }
}

pub(crate) struct Diags<'s> {
    file: &'s str,
    src: &'s str,
    lines: LineIndex,
    list: Vec<Diagnostic>,
}

impl<'s> Diags<'s> {
    pub(crate) fn new(file: &'s str, src: &'s str) -> Diags<'s> {
        Diags {
            file,
            src,
            lines: LineIndex::new(src),
            list: Vec::new(),
        }
    }

    pub(crate) fn file(&self) -> &'s str {
        self.file
    }

    pub(crate) fn locate(&self, offset: usize) -> Location {
        self.lines.locate(self.src, offset)
    }

    pub(crate) fn error(
        &mut self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
        hint: &str,
    ) {
        self.suggest(span, key, message, None, hint);
    }

    pub(crate) fn suggest(
        &mut self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
        suggestion: Option<String>,
        hint: &str,
    ) {
        let d = diagnostic(
            self.file,
            self.locate(span.start),
            span,
            key,
            message,
            suggestion,
            hint,
        );
        self.list.push(d);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Everything reported, in file order (checks run table by table, and
    /// the parser's tables come sorted by name, not by position).
    pub(crate) fn into_sorted(self) -> Vec<Diagnostic> {
        let mut list = self.list;
        list.sort_by_key(|d| d.location);
        list
    }
}

/// One diagnostic; the hint gets the reference section appended.
pub(crate) fn diagnostic(
    file: &str,
    location: Location,
    span: Range<usize>,
    key: &str,
    message: impl Into<String>,
    suggestion: Option<String>,
    hint: &str,
) -> Diagnostic {
    Diagnostic {
        file: file.to_string(),
        location,
        span,
        key: key.to_string(),
        message: message.into(),
        suggestion,
        hint: format!("{hint}; see {}", doc_link(key)),
    }
}
