//! The adapter registry (`adapters.toml`): which component converts which
//! tool's output, the input it reads (kind, `--artifact` name, the file
//! names `--all` looks for) and the tool's phases. Found next to the
//! installed binary (`<exe>/../share/sandboy/adapters.toml`) unless
//! `--registry` or `SANDBOY_REGISTRY` names another; the components live in
//! `components/` beside it unless `--components` or `SANDBOY_COMPONENTS`
//! says otherwise. Every problem of the file is reported at its line and
//! column.

use std::ops::Range;
use std::path::{Path, PathBuf};

use sandboy_spec_gen::error::Location;
use serde::Deserialize;
use toml::Spanned;

use crate::error::{Failure, Result};

/// Raw file shape; unknown keys are errors (a typo must not go unnoticed).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    adapter: Vec<Spanned<Raw>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    tool: Spanned<String>,
    component: Spanned<String>,
    inputs: Vec<String>,
    artifact: Spanned<String>,
    #[serde(default)]
    files: Vec<Spanned<String>>,
    output: Spanned<String>,
    #[serde(default)]
    phases: Vec<String>,
}

/// One `[[adapter]]` entry, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adapter {
    pub tool: String,
    /// The component file, resolved in the components directory.
    pub component: PathBuf,
    /// Input kinds (e.g. `sarif-2.1`), for `--list`.
    pub inputs: Vec<String>,
    /// The `--artifact` name the component looks for.
    pub artifact: String,
    /// File names (relative) `--all DIR` looks for, first present wins.
    pub files: Vec<String>,
    /// The tool's phases, in order (CodeQL: db-build, analyze).
    pub phases: Vec<String>,
}

/// The loaded registry.
#[derive(Debug, Clone)]
pub struct Registry {
    pub file: PathBuf,
    pub components: PathBuf,
    pub adapters: Vec<Adapter>,
}

/// Where the registry and the components are: flag, then environment, then
/// the installed layout relative to the executable.
pub fn locate(registry: Option<&Path>, components: Option<&Path>) -> Result<(PathBuf, PathBuf)> {
    let from_env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let file = match registry
        .map(Path::to_path_buf)
        .or_else(|| from_env("SANDBOY_REGISTRY"))
    {
        Some(f) => f,
        None => {
            let exe = crate::host::sealed_exe::original().ok_or_else(|| {
                Failure::runtime("adapt: cannot tell where the sandboy binary is")
            })?;
            let share = exe
                .parent()
                .and_then(Path::parent)
                .map(|p| p.join("share/sandboy"))
                .unwrap_or_default();
            share.join("adapters.toml")
        }
    };
    let components = components
        .map(Path::to_path_buf)
        .or_else(|| from_env("SANDBOY_COMPONENTS"))
        .unwrap_or_else(|| file.parent().unwrap_or(Path::new(".")).join("components"));
    Ok((file, components))
}

impl Registry {
    /// Reads and checks the registry; every error names file:line:column.
    pub fn load(file: &Path, components: &Path) -> Result<Registry> {
        let src = std::fs::read_to_string(file).map_err(|e| {
            Failure::config(format!(
                "adapt: registry {}: {e}; install with `make install` or point --registry (SANDBOY_REGISTRY) at an adapters.toml",
                file.display()
            ))
        })?;
        Registry::parse(&src, file, components)
    }

    /// [`Registry::load`] on text already read.
    pub fn parse(src: &str, file: &Path, components: &Path) -> Result<Registry> {
        let at = |span: Range<usize>, msg: String| {
            let l = Location::of_offset(src, span.start);
            Failure::config(format!("{}:{}:{}: {msg}", file.display(), l.line, l.column))
        };
        let raw: File = toml::from_str(src).map_err(|e| {
            at(
                e.span().unwrap_or(0..0),
                format!(
                    "{} (see the [[adapter]] keys in docs/adapt.md)",
                    e.message().trim()
                ),
            )
        })?;
        let mut adapters: Vec<Adapter> = Vec::new();
        for entry in raw.adapter {
            let span = entry.span();
            let r = entry.into_inner();
            let tool = r.tool.get_ref();
            if tool.is_empty()
                || !tool
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(at(
                    r.tool.span(),
                    format!("tool {tool:?}: use letters, digits, '-', '_' or '.'"),
                ));
            }
            if adapters.iter().any(|a| &a.tool == tool) {
                return Err(at(r.tool.span(), format!("tool {tool:?} is listed twice")));
            }
            let plain = |s: &Spanned<String>, what: &str| -> Result<()> {
                let v = s.get_ref();
                if v.is_empty() || v.contains('/') || v == ".." || v == "." {
                    return Err(at(
                        s.span(),
                        format!("{what} {v:?} must be a plain file name"),
                    ));
                }
                Ok(())
            };
            plain(&r.component, "component")?;
            plain(&r.artifact, "artifact")?;
            if r.output.get_ref() != "sarif-2.1.0" {
                return Err(at(
                    r.output.span(),
                    format!(
                        "output {:?}: the only output is \"sarif-2.1.0\"",
                        r.output.get_ref()
                    ),
                ));
            }
            for f in &r.files {
                let v = f.get_ref();
                if v.is_empty() || v.starts_with('/') || v.split('/').any(|c| c == "..") {
                    return Err(at(f.span(), format!("files entry {v:?} must be a relative path inside the audited directory")));
                }
            }
            if r.inputs.is_empty() {
                return Err(at(
                    span,
                    format!("tool {tool:?}: inputs must name at least one input kind"),
                ));
            }
            adapters.push(Adapter {
                tool: tool.clone(),
                component: components.join(r.component.get_ref()),
                inputs: r.inputs,
                artifact: r.artifact.into_inner(),
                files: r.files.into_iter().map(Spanned::into_inner).collect(),
                phases: r.phases,
            });
        }
        Ok(Registry {
            file: file.to_path_buf(),
            components: components.to_path_buf(),
            adapters,
        })
    }

    /// The entry for `tool`, or a usage error listing the known tools.
    pub fn get(&self, tool: &str) -> Result<&Adapter> {
        self.adapters.iter().find(|a| a.tool == tool).ok_or_else(|| {
            let known: Vec<&str> = self.adapters.iter().map(|a| a.tool.as_str()).collect();
            Failure::usage(format!(
                "adapt: unknown tool {tool:?} (registry {}: {}); see `sandboy adapt --list`, or run a component of your own with --component FILE",
                self.file.display(),
                known.join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> std::result::Result<Registry, String> {
        Registry::parse(src, Path::new("r.toml"), Path::new("/c")).map_err(|f| f.message)
    }

    #[test]
    fn the_shipped_registry_parses() {
        let r = parse(include_str!("../../../components/adapters.toml")).unwrap();
        let tools: Vec<&str> = r.adapters.iter().map(|a| a.tool.as_str()).collect();
        assert_eq!(tools, ["infersharp", "roslyn", "codeql"]);
        assert_eq!(r.get("codeql").unwrap().phases, ["db-build", "analyze"]);
        assert_eq!(
            r.get("infersharp").unwrap().component,
            Path::new("/c/infersharp.wasm")
        );
    }

    #[test]
    fn errors_are_located() {
        let e = parse("[[adapter]]\ntool = \"a\"\ncomponent = \"a.wasm\"\ninputs = [\"x\"]\nartifact = \"r\"\noutput = \"sarif-2.1.0\"\nbogus = 1\n").unwrap_err();
        assert!(e.starts_with("r.toml:7:1: unknown field `bogus`"), "{e}");
        let two = "[[adapter]]\ntool = \"a\"\ncomponent = \"a.wasm\"\ninputs = [\"x\"]\nartifact = \"r\"\noutput = \"sarif-2.1.0\"\n";
        let e = parse(&format!("{two}{two}")).unwrap_err();
        assert!(
            e.starts_with("r.toml:8:8: tool \"a\" is listed twice"),
            "{e}"
        );
        let e = parse(&two.replace("a.wasm", "../x.wasm")).unwrap_err();
        assert!(e.starts_with("r.toml:3:13:"), "{e}");
        assert!(parse("[[adapter]]\ntool = ")
            .unwrap_err()
            .starts_with("r.toml:2:"));
    }
}
