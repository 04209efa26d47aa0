//! Linux syscall tables (name -> number) for the architectures sandboy
//! supports, used to compile OCI `linux.seccomp` profiles and to validate
//! the `[syscalls]` names of a policy.
//!
//! The tables in `syscalls/x86_64.rs` and `syscalls/aarch64.rs` (each
//! architecture's own numbers) and `syscalls/common.rs` (the numbers from
//! 424 on, which every architecture shares since Linux 5.1) are generated
//! by `syscalls/generate.sh` from the kernel UAPI headers (Debian
//! `linux-libc-dev`) plus the syscalls added up to Linux 6.18; rerun it
//! rather than editing them by hand.

mod aarch64;
mod common;
mod x86_64;

/// A CPU architecture with its own syscall numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// `x86_64` (AUDIT_ARCH_X86_64, OCI `SCMP_ARCH_X86_64`).
    X86_64,
    /// `aarch64` (AUDIT_ARCH_AARCH64, OCI `SCMP_ARCH_AARCH64`).
    Aarch64,
}

impl Arch {
    /// Every supported architecture.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// The architecture this binary runs on, if it is a supported one.
    pub fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }

    /// The OCI / libseccomp name of the architecture (`SCMP_ARCH_X86_64`, …).
    pub fn oci_name(self) -> &'static str {
        match self {
            Arch::X86_64 => "SCMP_ARCH_X86_64",
            Arch::Aarch64 => "SCMP_ARCH_AARCH64",
        }
    }

    /// The plain name (`x86_64`, `aarch64`).
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// `(name, number)` of every syscall, in number order: the
    /// architecture's own table, then the shared one.
    fn table(self) -> impl Iterator<Item = &'static (&'static str, i64)> + Clone {
        self.own().iter().chain(common::TABLE)
    }

    /// The architecture's own numbers (below the shared range).
    fn own(self) -> &'static [(&'static str, i64)] {
        match self {
            Arch::X86_64 => x86_64::TABLE,
            Arch::Aarch64 => aarch64::TABLE,
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The number of syscall `name` on `arch`, or `None` if `arch` has no such
/// syscall (for example `open` on aarch64).
pub fn number(arch: Arch, name: &str) -> Option<i64> {
    let index = by_name(arch);
    index
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .map(|i| index[i].1)
}

/// `arch`'s table sorted by name, built once: compiling a profile looks up
/// every name it lists (hundreds for an engine's default profile), and a
/// scan of the number-ordered table per name was a quarter of `wrap`'s
/// instructions before the command ran.
fn by_name(arch: Arch) -> &'static [(&'static str, i64)] {
    use std::sync::OnceLock;
    static INDEX: [OnceLock<Vec<(&'static str, i64)>>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = match arch {
        Arch::X86_64 => &INDEX[0],
        Arch::Aarch64 => &INDEX[1],
    };
    slot.get_or_init(|| {
        let mut v: Vec<_> = arch.table().copied().collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    })
}

/// The name of syscall number `nr` on `arch`.
pub fn name(arch: Arch, nr: i64) -> Option<&'static str> {
    // Both tables are in number order (`tables_are_consistent`).
    [arch.own(), common::TABLE].into_iter().find_map(|t| {
        t.binary_search_by_key(&nr, |&(_, n)| n)
            .ok()
            .map(|i| t[i].0)
    })
}

/// The highest syscall number known for `arch`: the newest syscall these
/// tables were reviewed against.
pub fn newest(arch: Arch) -> Option<i64> {
    arch.table().map(|&(_, nr)| nr).max()
}

/// Every syscall name known for `arch`, in syscall-number order.
pub fn names(arch: Arch) -> impl Iterator<Item = &'static str> {
    arch.table().map(|&(name, _)| name)
}

/// Whether `name` is a syscall on any supported architecture (what a policy
/// may name without being in error).
pub fn is_known(name: &str) -> bool {
    Arch::ALL.iter().any(|&a| number(a, name).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn known_numbers() {
        assert_eq!(number(Arch::X86_64, "ptrace"), Some(101));
        assert_eq!(number(Arch::Aarch64, "ptrace"), Some(117));
        for arch in Arch::ALL {
            assert_eq!(number(arch, "landlock_create_ruleset"), Some(444));
            assert_eq!(number(arch, "landlock_restrict_self"), Some(446));
            assert_eq!(number(arch, "mseal"), Some(462));
            assert_eq!(number(arch, "io_uring_setup"), Some(425));
        }
        assert_eq!(number(Arch::X86_64, "read"), Some(0));
        assert_eq!(number(Arch::X86_64, "mount"), Some(165));
        assert_eq!(number(Arch::X86_64, "bpf"), Some(321));
        assert_eq!(number(Arch::X86_64, "kexec_load"), Some(246));
        assert_eq!(number(Arch::Aarch64, "mount"), Some(40));
        assert_eq!(number(Arch::Aarch64, "bpf"), Some(280));
        assert_eq!(number(Arch::Aarch64, "newfstatat"), Some(79));
        assert_eq!(number(Arch::Aarch64, "clone3"), Some(435));
    }

    #[test]
    fn arch_specific_names() {
        assert_eq!(number(Arch::X86_64, "open"), Some(2));
        assert_eq!(number(Arch::Aarch64, "open"), None);
        assert_eq!(number(Arch::X86_64, "nonexistent_syscall"), None);
        assert!(is_known("open"));
        assert!(!is_known("nonexistent_syscall"));
        assert_eq!(name(Arch::X86_64, 101), Some("ptrace"));
    }

    #[test]
    fn tables_are_consistent() {
        for arch in Arch::ALL {
            let mut seen_names = HashSet::new();
            let mut seen_numbers = HashSet::new();
            let mut last = -1;
            for &(name, nr) in arch.table() {
                assert!(seen_names.insert(name), "{arch}: duplicate name {name}");
                assert!(seen_numbers.insert(nr), "{arch}: duplicate number {nr}");
                assert!(nr > last, "{arch}: table not sorted at {name}");
                // The indexed lookups agree with the table, entry by entry.
                assert_eq!(number(arch, name), Some(nr), "{arch}: {name}");
                assert_eq!(super::name(arch, nr), Some(name), "{arch}: {nr}");
                last = nr;
            }
            assert!(names(arch).count() > 300, "{arch}: table too small");
        }
    }

    #[test]
    fn native_is_supported_here() {
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert!(Arch::native().is_some());
        }
    }
}
