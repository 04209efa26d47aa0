//! The annotation codec: what `sandboy-spec-gen` writes into `config.json` and
//! what the runtime reads back (SPEC §5). Encoding and decoding live in one
//! place so that both binaries agree byte for byte.

use serde::{Deserialize, Serialize};

use crate::units::{ByteSize, Span};

/// Landlock ruleset, JSON.
pub const LANDLOCK: &str = "dev.sandboy.landlock";
/// Wall-clock deadline for the whole container, e.g. `600s`.
pub const TIMEOUT: &str = "dev.sandboy.timeout";
/// JSON of the policy's `[wasm]` table.
pub const WASM_LIMITS: &str = "dev.sandboy.wasm.limits";
/// Name of a policy of the node's policy directory (`sandboy policy list`),
/// applied by the runtime at create.
pub const POLICY: &str = "dev.sandboy.policy";
/// sha256 of the policy file the spec was generated from.
pub const POLICY_SHA256: &str = "dev.sandboy.policy.sha256";
/// JSON of `[net] allow/deny/allow_cidr` and the proxy port: the egress
/// gateway's rules (see docs/egress.md).
pub const EGRESS: &str = "dev.sandboy.egress";
/// The whole policy, its TOML text as one JSON string (one line, so YAML
/// and podman's CSV keep it intact), `[[mount]]` tables blanked: what
/// `annotate` prints for an engine's container. The runtime applies it
/// onto the engine's spec exactly as a node policy (docs/node.md).
pub const POLICY_TEXT: &str = "dev.sandboy.policy.text";
/// `wasm` selects OCI-wasm mode (crun's convention).
pub const OCI_HANDLER: &str = "run.oci.handler";
/// `compat` / `compat-smart` select OCI-wasm mode (the wasm OCI image variant).
pub const WASM_VARIANT: &str = "module.wasm.image/variant";

/// Every annotation key sandboy reads; `sandboy features` lists them.
pub const ALL: &[&str] = &[
    LANDLOCK,
    TIMEOUT,
    WASM_LIMITS,
    POLICY,
    POLICY_SHA256,
    EGRESS,
    POLICY_TEXT,
    OCI_HANDLER,
    WASM_VARIANT,
];

/// The prefix of sandboy's own keys; a key under it that is not one of
/// [`ALL`] is refused ([`check_key`]).
pub const PREFIX: &str = "dev.sandboy.";

/// A key that claims sandboy's prefix but is none of its keys.
#[derive(Debug, thiserror::Error)]
#[error("annotation {key:?} is not one of sandboy's keys ({hint}); a misspelled key would leave the container without the confinement it names")]
pub struct UnknownKey {
    pub key: String,
    hint: String,
}

/// Refuse a key under [`PREFIX`] (compared trimmed and in any case, as a
/// person would read it) that is not exactly one of sandboy's keys: it
/// would be ignored, and a `dev.sandboy.landlok` ran its container with
/// no Landlock and no seccomp. Keys of other prefixes are the engine's.
pub fn check_key(key: &str) -> Result<(), UnknownKey> {
    let read = key.trim().to_ascii_lowercase();
    if !read.starts_with(PREFIX) || ALL.contains(&key) {
        return Ok(());
    }
    let ours = ALL.iter().copied().filter(|k| k.starts_with(PREFIX));
    let hint = match crate::error::closest(&read, ours.clone()) {
        Some(k) => format!("did you mean \"{k}\"?"),
        None => format!("known: {}", ours.collect::<Vec<_>>().join(", ")),
    };
    Err(UnknownKey {
        key: key.to_owned(),
        hint,
    })
}

/// How strictly Landlock must be applied.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockMode {
    /// Refuse to start unless every requested right is enforced.
    #[default]
    Enforce,
    /// Apply what the kernel supports, warn about the rest.
    BestEffort,
    /// Apply nothing.
    Off,
}

/// One access right on a path: a name (group or single right) or a raw
/// Landlock `LANDLOCK_ACCESS_FS_*` bit value, so rights that a newer kernel
/// adds need no sandboy release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Access {
    Raw(u64),
    Named(String),
}

/// Filesystem rule: `access` on everything beneath `path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsRule {
    pub path: String,
    pub access: Vec<Access>,
}

/// TCP ports reachable through Landlock's network rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NetRules {
    #[serde(default)]
    pub connect: Vec<u16>,
    #[serde(default)]
    pub bind: Vec<u16>,
}

/// Landlock scopes (ABI 6).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    AbstractUnixSocket,
    Signal,
}

/// Value of the `dev.sandboy.landlock` annotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandlockRuleset {
    #[serde(default)]
    pub mode: LandlockMode,
    #[serde(default)]
    pub fs: Vec<FsRule>,
    /// `None`: TCP is not restricted by Landlock at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetRules>,
    #[serde(default)]
    pub scope: Vec<Scope>,
}

/// Value of the `dev.sandboy.wasm.limits` annotation: the policy's `[wasm]`
/// table as JSON, same keys. Every field is optional; the runtime fills in
/// the SPEC §4 defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WasmLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<ByteSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input: Option<ByteSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<ByteSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u64>,
}

/// Why an annotation could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error(
    "annotation {key}: {message} at line {line} column {column}; fix the JSON value (see docs/policy.md#annotations)"
)]
pub struct DecodeError {
    pub key: &'static str,
    pub message: String,
    pub line: usize,
    pub column: usize,
}

fn decode<T: serde::de::DeserializeOwned>(
    key: &'static str,
    value: &str,
) -> Result<T, DecodeError> {
    serde_json::from_str(value).map_err(|e| DecodeError {
        key,
        message: crate::error::json_message(&e),
        line: e.line(),
        column: e.column(),
    })
}

impl LandlockRuleset {
    /// Canonical JSON for the annotation value.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("ruleset serializes")
    }

    pub fn decode(value: &str) -> Result<Self, DecodeError> {
        decode(LANDLOCK, value)
    }
}

impl crate::policy::egress::EgressWire {
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("egress rules serialize")
    }

    pub fn decode(value: &str) -> Result<Self, DecodeError> {
        decode(EGRESS, value)
    }
}

impl WasmLimits {
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("limits serialize")
    }

    pub fn decode(value: &str) -> Result<Self, DecodeError> {
        decode(WASM_LIMITS, value)
    }
}

// Landlock filesystem access rights, bit values from the kernel UAPI
// (`LANDLOCK_ACCESS_FS_*`, include/uapi/linux/landlock.h). The runtime and
// spec-gen share this table so that a name means the same bits everywhere.
pub const FS_EXECUTE: u64 = 1 << 0;
pub const FS_WRITE_FILE: u64 = 1 << 1;
pub const FS_READ_FILE: u64 = 1 << 2;
pub const FS_READ_DIR: u64 = 1 << 3;
pub const FS_REMOVE_DIR: u64 = 1 << 4;
pub const FS_REMOVE_FILE: u64 = 1 << 5;
pub const FS_MAKE_CHAR: u64 = 1 << 6;
pub const FS_MAKE_DIR: u64 = 1 << 7;
pub const FS_MAKE_REG: u64 = 1 << 8;
pub const FS_MAKE_SOCK: u64 = 1 << 9;
pub const FS_MAKE_FIFO: u64 = 1 << 10;
pub const FS_MAKE_BLOCK: u64 = 1 << 11;
pub const FS_MAKE_SYM: u64 = 1 << 12;
/// ABI 2.
pub const FS_REFER: u64 = 1 << 13;
/// ABI 3.
pub const FS_TRUNCATE: u64 = 1 << 14;
/// ABI 5.
pub const FS_IOCTL_DEV: u64 = 1 << 15;

/// Rights that make sense on a regular file (or device node) rather than a
/// directory. `landlock_add_rule` rejects directory-only rights on a
/// non-directory with EINVAL, so the runtime intersects a rule's bits with
/// this mask when the path is not a directory.
pub const FS_FILE_RIGHTS: u64 =
    FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;

/// `"read"` group: read files and list directories.
pub const GROUP_READ: u64 = FS_READ_FILE | FS_READ_DIR;
/// `"exec"` group: execute, plus read (a binary must be readable to load).
pub const GROUP_EXEC: u64 = FS_EXECUTE | GROUP_READ;
/// `"write"` group: write, truncate, create and remove entries, and re-link
/// (refer) within allowed trees. `ioctl_dev` is deliberately not included:
/// device ioctls are not "writing a file".
pub const GROUP_WRITE: u64 = FS_WRITE_FILE
    | FS_TRUNCATE
    | FS_MAKE_CHAR
    | FS_MAKE_DIR
    | FS_MAKE_REG
    | FS_MAKE_SOCK
    | FS_MAKE_FIFO
    | FS_MAKE_BLOCK
    | FS_MAKE_SYM
    | FS_REMOVE_DIR
    | FS_REMOVE_FILE
    | FS_REFER;

/// Every access name a rule may use, with its Landlock bits: the three
/// groups first, then the single rights (kernel names without the
/// `LANDLOCK_ACCESS_FS_` prefix, lower case).
pub const ACCESS_NAMES: &[(&str, u64)] = &[
    ("read", GROUP_READ),
    ("exec", GROUP_EXEC),
    ("write", GROUP_WRITE),
    ("execute", FS_EXECUTE),
    ("write_file", FS_WRITE_FILE),
    ("read_file", FS_READ_FILE),
    ("read_dir", FS_READ_DIR),
    ("remove_dir", FS_REMOVE_DIR),
    ("remove_file", FS_REMOVE_FILE),
    ("make_char", FS_MAKE_CHAR),
    ("make_dir", FS_MAKE_DIR),
    ("make_reg", FS_MAKE_REG),
    ("make_sock", FS_MAKE_SOCK),
    ("make_fifo", FS_MAKE_FIFO),
    ("make_block", FS_MAKE_BLOCK),
    ("make_sym", FS_MAKE_SYM),
    ("refer", FS_REFER),
    ("truncate", FS_TRUNCATE),
    ("ioctl_dev", FS_IOCTL_DEV),
];

/// An access item that names no known right.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    #[error("unknown Landlock access right {0:?}; use read, exec, write or a single right such as read_file, write_file, make_dir (see docs/policy.md#annotations)")]
    UnknownName(String),
    #[error("raw Landlock access value 0 grants nothing; remove it or use a right name")]
    Zero,
}

/// Landlock `LANDLOCK_ACCESS_FS_*` bits of one access item. Raw integers are
/// passed through unchanged (bits a newer kernel knows are the runtime's to
/// check against the running ABI).
pub fn access_bits(access: &Access) -> Result<u64, AccessError> {
    match access {
        Access::Raw(0) => Err(AccessError::Zero),
        Access::Raw(bits) => Ok(*bits),
        Access::Named(name) => ACCESS_NAMES
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, bits)| bits)
            .ok_or_else(|| AccessError::UnknownName(name.clone())),
    }
}

/// Union of the bits of every item of a rule.
pub fn rule_bits(access: &[Access]) -> Result<u64, AccessError> {
    access
        .iter()
        .try_fold(0, |acc, a| Ok(acc | access_bits(a)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_names() {
        assert_eq!(access_bits(&Access::Named("read".into())).unwrap(), 0b1100);
        assert_eq!(access_bits(&Access::Named("exec".into())).unwrap(), 0b1101);
        assert_eq!(access_bits(&Access::Named("write".into())).unwrap(), 0x7ff2);
        assert_eq!(
            access_bits(&Access::Named("ioctl_dev".into())).unwrap(),
            1 << 15
        );
        assert_eq!(access_bits(&Access::Raw(6)).unwrap(), 6);
        assert!(access_bits(&Access::Raw(0)).is_err());
        assert!(access_bits(&Access::Named("reed".into())).is_err());
        let rule = [Access::Named("read".into()), Access::Named("write".into())];
        assert_eq!(rule_bits(&rule).unwrap(), GROUP_READ | GROUP_WRITE);
    }

    #[test]
    fn raw_and_named_decode() {
        let r = LandlockRuleset::decode(
            r#"{"mode":"best-effort","fs":[{"path":"/usr","access":["read",1]}],"net":{"connect":[443]},"scope":["signal"]}"#,
        )
        .unwrap();
        assert_eq!(r.mode, LandlockMode::BestEffort);
        assert_eq!(
            r.fs[0].access,
            vec![Access::Named("read".into()), Access::Raw(1)]
        );
        assert_eq!(r.net.unwrap().connect, vec![443]);
        assert!(LandlockRuleset::decode(r#"{"fs":[],"extra":1}"#).is_err());
    }
}
