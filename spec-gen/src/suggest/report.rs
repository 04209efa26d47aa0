//! Reading a denial report: JSON lines with at least `kind` and `target`
//! (the shape `sandboy`'s supervisor writes, docs/denials.md).

use std::path::Path;

use serde::Deserialize;

use crate::{Diagnostic, Error, Location};

/// One refusal as the report states it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Refused {
    pub kind: String,
    pub target: String,
    /// The policy change the runtime named; `null` for a hard rule.
    #[serde(default)]
    pub allow: Option<String>,
    #[serde(skip)]
    pub line: usize,
}

/// Read and parse `path`.
pub fn load(path: &Path) -> Result<Vec<Refused>, Error> {
    let text = crate::input::read_text(path, crate::input::REPORT_MAX)
        .map_err(|e| Error::read("read the denial report", path, e))?;
    parse(&text, &path.display().to_string())
}

/// Parse report text; every bad line is a located diagnostic.
pub fn parse(text: &str, file: &str) -> Result<Vec<Refused>, Error> {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if body.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Refused>(body) {
            Ok(mut r) => {
                r.line = i + 1;
                out.push(r);
            }
            Err(e) => {
                let column = e.column().max(1);
                let at = start
                    + body
                        .char_indices()
                        .nth(column - 1)
                        .map_or(body.len(), |(b, _)| b);
                diags.push(Diagnostic {
                    file: file.to_owned(),
                    location: Location { line: i + 1, column },
                    span: at..(at + 1).min(start + body.len()),
                    key: format!("report line {}", i + 1),
                    message: format!("not a denial report line: {e}"),
                    suggestion: None,
                    hint: "give a report written by `sandboy run --report FILE` or a container's \
                           <root>/<id>/denials.jsonl (one JSON object per line with \"kind\" and \"target\")"
                        .into(),
                });
            }
        }
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(Error::Policy(diags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupted_line_is_located() {
        let text = "{\"kind\":\"read\",\"target\":\"/a\",\"allow\":null}\n{\"kind\":\"read\",\"target\":\n";
        let Err(Error::Policy(d)) = parse(text, "r.jsonl") else {
            panic!("accepted");
        };
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].location.line, 2);
        assert!(d[0].to_string().starts_with("r.jsonl:2:"), "{}", d[0]);
    }

    #[test]
    fn a_line_without_target_is_refused() {
        assert!(parse("{\"kind\":\"read\"}\n", "r").is_err());
        let ok = parse("\n{\"kind\":\"bind\",\"target\":\"80\",\"count\":2}\n", "r").unwrap();
        assert_eq!(ok[0].line, 2);
    }
}
