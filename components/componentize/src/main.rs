//! `componentize CORE.wasm OUT.wasm`: wraps a `wit-bindgen` core module
//! (built for wasm32-unknown-unknown) into a component with `wit-component`,
//! then checks the result has zero imports (SPEC §6) and refuses it otherwise.

use std::process::ExitCode;

fn imports(component: &[u8]) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        match payload.map_err(|e| e.to_string())? {
            wasmparser::Payload::ModuleSection { .. }
            | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(s) if depth == 0 => {
                for import in s {
                    names.push(import.map_err(|e| e.to_string())?.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(names)
}

fn run(input: &str, output: &str) -> Result<(), String> {
    let core = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
    let component = wit_component::ComponentEncoder::default()
        .module(&core)
        .and_then(|e| e.validate(true).encode())
        .map_err(|e| format!("{input}: cannot componentize: {e:#}"))?;
    let found = imports(&component)?;
    if !found.is_empty() {
        return Err(format!(
            "{input}: the component imports {found:?}; adapters must have zero imports (build for wasm32-unknown-unknown, not wasip2)"
        ));
    }
    if let Some(dir) = std::path::Path::new(output).parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(output, &component).map_err(|e| format!("{output}: {e}"))?;
    eprintln!(
        "componentize: {output} ({} bytes, zero imports)",
        component.len()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: componentize CORE.wasm OUT.wasm");
        return ExitCode::from(2);
    };
    match run(input, output) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("componentize: {e}");
            ExitCode::FAILURE
        }
    }
}
