//! What every adapter component does with its input before converting it:
//! view the run's artifacts as `(name, bytes)` pairs and pick the one to
//! convert. Plain Rust with no dependencies, so the adapters stay
//! zero-import components.

/// `(name, bytes)` views of a run's artifacts (wit-bindgen generates the
/// artifact record in each adapter, so the caller says how to read one).
pub fn views<'a, A>(
    artifacts: &'a [A],
    view: impl Fn(&'a A) -> (&'a str, &'a [u8]),
) -> Vec<(&'a str, &'a [u8])> {
    artifacts.iter().map(view).collect()
}

/// The first artifact `wanted` accepts, else the first artifact, else the
/// tool's captured stdout when it printed anything; `missing` is the error
/// when there is none of these.
pub fn pick<'a>(
    artifacts: &[(&'a str, &'a [u8])],
    stdout: &'a [u8],
    wanted: impl Fn(&str) -> bool,
    missing: &str,
) -> Result<(&'a str, &'a [u8]), String> {
    artifacts
        .iter()
        .find(|(n, _)| wanted(n))
        .or_else(|| artifacts.first())
        .copied()
        .or(if stdout.is_empty() {
            None
        } else {
            Some(("stdout", stdout))
        })
        .ok_or_else(|| missing.to_string())
}

#[cfg(test)]
mod tests {
    use super::pick;

    #[test]
    fn wanted_then_first_then_stdout() {
        let a: [(&str, &[u8]); 2] = [("a.txt", b"1"), ("b.sarif", b"2")];
        let sarif = |n: &str| n.ends_with(".sarif");
        assert_eq!(pick(&a, b"", sarif, "none"), Ok(("b.sarif", &b"2"[..])));
        assert_eq!(pick(&a[..1], b"", sarif, "none"), Ok(("a.txt", &b"1"[..])));
        assert_eq!(
            pick(&[], b"out", sarif, "none"),
            Ok(("stdout", &b"out"[..]))
        );
        assert_eq!(pick(&[], b"", sarif, "none"), Err("none".to_string()));
    }
}
