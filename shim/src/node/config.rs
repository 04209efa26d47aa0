//! The node configuration, `/etc/sandboy/config.toml` (or `--config FILE`,
//! or `SANDBOY_CONFIG`): where the node's policies live and what a container
//! may and must bring. Read from the spanned TOML tree so that every problem
//! is one located diagnostic (spec-gen's [`Diagnostic`], the same line
//! format and "did you mean" as policy errors); unknown keys are errors.

use std::path::{Path, PathBuf};

use sandboy_spec_gen::{closest, Diagnostic, Location};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::error::{Failure, Result};
use crate::supervisor::audit::Mode;

/// The node configuration read when neither `--config` nor `SANDBOY_CONFIG`
/// names one; its absence means the defaults.
pub const DEFAULT_FILE: &str = "/etc/sandboy/config.toml";
/// Where named policies live unless `policy_dir` says otherwise.
pub const DEFAULT_POLICY_DIR: &str = "/etc/sandboy/policies";
/// The environment variable that names the configuration file.
pub const ENV: &str = "SANDBOY_CONFIG";

const KEYS: &[&str] = &[
    "policy_dir",
    "default_policy",
    "require_policy",
    "allow_annotations",
    "allow_mounts",
    "audit",
];
const DOC: &str = "see docs/node.md";

/// The node's settings (docs/node.md).
#[derive(Debug, Clone)]
pub struct Config {
    /// The file these came from; `None` for the built-in defaults.
    pub file: Option<PathBuf>,
    /// Directory of `<name>.toml` policies.
    pub policy_dir: PathBuf,
    /// Policy for containers that name none.
    pub default_policy: Option<String>,
    /// A container with no policy (named or default) does not start.
    pub require_policy: bool,
    /// Whether containers may pass raw `dev.sandboy.*` annotations
    /// (Landlock rules, timeout, …) or only `dev.sandboy.policy` names.
    pub allow_annotations: bool,
    /// Whether a policy's `[[mount]]` binds are added to the container.
    pub allow_mounts: bool,
    /// Default for `--audit` (denial reports).
    pub audit: Option<Mode>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            file: None,
            policy_dir: PathBuf::from(DEFAULT_POLICY_DIR),
            default_policy: None,
            require_policy: false,
            allow_annotations: true,
            allow_mounts: false,
            audit: None,
        }
    }
}

impl Config {
    /// The configuration: `explicit` (from `--config` or `SANDBOY_CONFIG`)
    /// must exist; the default file may be missing (then the defaults).
    pub fn load(explicit: Option<&Path>) -> Result<Config> {
        let (path, required) = match explicit {
            Some(p) => (p, true),
            None => (Path::new(DEFAULT_FILE), false),
        };
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
                return Ok(Config::default())
            }
            Err(e) => {
                return Err(Failure::config(format!(
                    "{}: cannot read the node configuration: {e}; fix the --config path (or {ENV}), or remove the flag to use {DEFAULT_FILE}",
                    path.display()
                )))
            }
            Ok(_) => {}
        }
        // Trusted first, then read as a capped regular file: a FIFO (or a
        // link to one) given as --config hung create, /dev/zero filled
        // memory.
        super::policies::check_trusted(path, false)?;
        let src = sandboy_spec_gen::input::read_text(path, sandboy_spec_gen::input::TEXT_MAX)
            .map_err(|e| {
                Failure::config(format!(
                    "{}: cannot read the node configuration: {e}; give a regular file of TOML",
                    path.display()
                ))
            })?;
        Config::parse(&src, &path.display().to_string())
            .map_err(|diags| Failure::config(render(&diags)))
    }

    /// Parse configuration text; `file` labels the diagnostics.
    pub fn parse(src: &str, file: &str) -> std::result::Result<Config, Vec<Diagnostic>> {
        let mut r = Reader {
            file,
            src,
            diags: Vec::new(),
        };
        let doc = match DeTable::parse(src) {
            Ok(doc) => doc,
            Err(e) => {
                let span = e.span().unwrap_or(0..0);
                let message = e.message().trim().replace('\n', "; ");
                r.error(
                    span,
                    "(top level)",
                    message,
                    None,
                    "fix the TOML syntax at this position (strings need quotes)",
                );
                return Err(r.diags);
            }
        };
        let mut config = Config {
            file: Some(PathBuf::from(file)),
            ..Config::default()
        };
        for (key, value) in doc.get_ref().iter() {
            let name: &str = key.get_ref();
            match name {
                "policy_dir" => {
                    if let Some(dir) = r.string(name, value) {
                        if dir.starts_with('/') {
                            config.policy_dir = PathBuf::from(dir);
                        } else {
                            r.error(
                                value.span(),
                                name,
                                format!("policy_dir {dir:?} is not absolute"),
                                None,
                                "give an absolute directory, e.g. \"/etc/sandboy/policies\"",
                            );
                        }
                    }
                }
                "default_policy" => {
                    if let Some(p) = r.string(name, value) {
                        match super::policies::valid_name(p) {
                            Ok(()) => config.default_policy = Some(p.to_string()),
                            Err(why) => r.error(value.span(), name, why, None, "name a file of policy_dir without its .toml suffix, e.g. \"gate-step\""),
                        }
                    }
                }
                "require_policy" => config.require_policy = r.boolean(name, value).unwrap_or(false),
                "allow_annotations" => {
                    config.allow_annotations = r.boolean(name, value).unwrap_or(true)
                }
                "allow_mounts" => config.allow_mounts = r.boolean(name, value).unwrap_or(false),
                "audit" => {
                    if let Some(v) = r.string(name, value) {
                        match v.parse::<Mode>() {
                            Ok(m) => config.audit = Some(m),
                            Err(why) => {
                                let s = closest(v, ["enable", "if-enabled", "off"]);
                                r.error(
                                    value.span(),
                                    name,
                                    why,
                                    s,
                                    "use \"enable\", \"if-enabled\" or \"off\"",
                                );
                            }
                        }
                    }
                }
                other => {
                    let s = closest(other, KEYS.iter().copied());
                    r.error(
                        key.span(),
                        other,
                        format!("unknown key \"{other}\""),
                        s,
                        &format!("remove the key or use one of: {}", KEYS.join(", ")),
                    );
                }
            }
        }
        if r.diags.is_empty() {
            Ok(config)
        } else {
            r.diags.sort_by_key(|d| d.location);
            Err(r.diags)
        }
    }

    /// How the file is named in messages.
    pub fn label(&self) -> String {
        self.file.as_ref().map_or_else(
            || format!("{DEFAULT_FILE} (absent: defaults)"),
            |f| f.display().to_string(),
        )
    }
}

/// One compact line per diagnostic (spec-gen's `Display`), as logs show them.
pub fn render(diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

struct Reader<'s> {
    file: &'s str,
    src: &'s str,
    diags: Vec<Diagnostic>,
}

impl Reader<'_> {
    fn error(
        &mut self,
        span: std::ops::Range<usize>,
        key: &str,
        message: impl Into<String>,
        suggestion: Option<String>,
        hint: &str,
    ) {
        self.diags.push(Diagnostic {
            file: self.file.to_string(),
            location: Location::of_offset(self.src, span.start),
            span,
            key: key.to_string(),
            message: message.into(),
            suggestion,
            hint: format!("{hint}; {DOC}"),
        });
    }

    fn string<'v>(&mut self, key: &str, v: &'v Spanned<DeValue<'_>>) -> Option<&'v str> {
        match v.get_ref() {
            DeValue::String(s) => Some(s.as_ref()),
            _ => {
                self.error(v.span(), key, "expected a string", None, "quote the value");
                None
            }
        }
    }

    fn boolean(&mut self, key: &str, v: &Spanned<DeValue<'_>>) -> Option<bool> {
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.error(
                    v.span(),
                    key,
                    "expected true or false",
                    None,
                    "write true or false, without quotes",
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_values() {
        let c = Config::parse(
            "policy_dir = \"/p\"\ndefault_policy = \"gate\"\nrequire_policy = true\nallow_annotations = false\naudit = \"off\"\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.policy_dir, Path::new("/p"));
        assert_eq!(c.default_policy.as_deref(), Some("gate"));
        assert!(c.require_policy && !c.allow_annotations && !c.allow_mounts);
        assert_eq!(c.audit, Some(Mode::Off));
        let d = Config::parse("", "c.toml").unwrap();
        assert!(d.allow_annotations && d.default_policy.is_none());
    }

    #[test]
    fn located_errors() {
        let src = "policy_dir = \"/p\"\nrequire_polcy = true\naudit = \"of\"\ndefault_policy = \"../x\"\n";
        let d = Config::parse(src, "c.toml").unwrap_err();
        assert_eq!(d.len(), 3, "{d:?}");
        assert_eq!((d[0].location.line, d[0].location.column), (2, 1));
        assert_eq!(d[0].suggestion.as_deref(), Some("require_policy"));
        assert_eq!(d[1].suggestion.as_deref(), Some("off"));
        assert!(
            d[2].to_string().starts_with("c.toml:4:18: error:"),
            "{}",
            d[2]
        );
    }
}
