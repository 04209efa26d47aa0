//! What commands print for the user: results on stdout, and the one-line
//! error on stderr (diagnostics go through `tracing`).

use std::io::Write;

pub fn line(s: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head`) is not a runtime failure.
    let _ = writeln!(out, "{s}");
}

/// The error a failed command reports (and the summaries on stderr),
/// its control characters escaped: it carries text from untrusted sources
/// (an adapter's message, a refused path). A closed stderr (an engine that
/// stopped listening) must not turn the exit status into a panic's 101.
pub fn error_line(s: &str) {
    crate::error::print_line(s);
}

/// Left-aligned columns separated by at least two spaces (runc's tabwriter).
pub fn table(rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut s = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}   ", w = widths[i]));
            }
        }
        line(s.trim_end());
    }
}
