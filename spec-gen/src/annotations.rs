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
/// sha256 of the policy file the spec was generated from.
pub const POLICY_SHA256: &str = "dev.sandboy.policy.sha256";
/// `wasm` selects OCI-wasm mode (crun's convention).
pub const OCI_HANDLER: &str = "run.oci.handler";
/// `compat` / `compat-smart` select OCI-wasm mode (the wasm OCI image variant).
pub const WASM_VARIANT: &str = "module.wasm.image/variant";

/// Every annotation key sandboy reads; `sandboy features` lists them.
pub const ALL: &[&str] = &[
    LANDLOCK,
    TIMEOUT,
    WASM_LIMITS,
    POLICY_SHA256,
    OCI_HANDLER,
    WASM_VARIANT,
];

/// How strictly Landlock must be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
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
#[error("annotation {key}: {message} at line {line} column {column}; fix the JSON value (see SPEC §5)")]
pub struct DecodeError {
    pub key: &'static str,
    pub message: String,
    pub line: usize,
    pub column: usize,
}

fn decode<T: serde::de::DeserializeOwned>(key: &'static str, value: &str) -> Result<T, DecodeError> {
    serde_json::from_str(value).map_err(|e| DecodeError {
        key,
        message: e.to_string(),
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

impl WasmLimits {
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("limits serialize")
    }

    pub fn decode(value: &str) -> Result<Self, DecodeError> {
        decode(WASM_LIMITS, value)
    }
}
