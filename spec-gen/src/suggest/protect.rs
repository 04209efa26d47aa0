//! Paths no suggestion or learned policy grants without being forced.

/// The whole filesystem, process memory, credentials, the runtime's state.
const PROTECTED: &[&str] = &[
    "/",
    "/proc/*/mem",
    "/proc/kcore",
    "/dev/mem",
    "/etc/shadow",
    "/etc/gshadow",
    "/run/sandboy",
    "/var/run/sandboy",
];
/// Directory names protected wherever they are (`~/.ssh` and friends).
const PROTECTED_NAMES: &[&str] = &[".ssh", ".gnupg", ".aws"];

/// Whether granting `path` would grant something protected: the path is
/// one, lies inside one, or holds one (a listed path, or one of `hidden`).
pub fn protected(path: &str, hidden: &[String]) -> bool {
    PROTECTED.iter().any(|p| glob_match(p, path))
        || path.split('/').any(|c| PROTECTED_NAMES.contains(&c))
        || hidden.iter().any(|h| under(path, h) || under(h, path))
        || path != "/"
            && PROTECTED
                .iter()
                .any(|p| !p.contains('*') && *p != "/" && under(p, path))
}

/// Whether `path` is `dir` or below it.
pub fn under(path: &str, dir: &str) -> bool {
    dir == "/"
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The directory holding `path` (`/` for a top-level entry).
pub fn parent(path: &str) -> String {
    match path.trim_end_matches('/').rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].to_owned(),
    }
}

/// `*` matches one path component.
fn glob_match(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let q: Vec<&str> = path.split('/').collect();
    p.len() == q.len() && p.iter().zip(&q).all(|(a, b)| *a == "*" || a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_protected() {
        for p in [
            "/",
            "/etc/shadow",
            "/proc/1/mem",
            "/home/u/.ssh/id",
            "/etc",
            "/run",
            "/data",
        ] {
            assert!(protected(p, &["/data/secret".into()]), "{p}");
        }
        for p in ["/usr", "/etc/passwd", "/proc/1/maps", "/home/u/src"] {
            assert!(!protected(p, &[]), "{p}");
        }
    }
}
