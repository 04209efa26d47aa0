//! A WASI preview-2 command (built for `wasm32-wasip2`, so it exports
//! `wasi:cli/run` and imports the WASI interfaces): the fixture that shows a
//! component program running as a container. It prints a greeting, its args
//! and `$GREETING`, writes `hello.txt` into its cwd (the one preopen), reads
//! it back, and exits with status 1 when its first arg is `fail`.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let greeting = std::env::var("GREETING").unwrap_or_else(|_| "(unset)".into());
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "hello from a WASI preview-2 component");
    let _ = writeln!(out, "args: {}", args[1..].join(" "));
    let _ = writeln!(out, "GREETING={greeting}");
    let written = std::fs::write("hello.txt", b"written by wasi-hello\n")
        .and_then(|()| std::fs::read_to_string("hello.txt"));
    match written {
        Ok(text) => {
            let _ = write!(out, "cwd file: {text}");
        }
        Err(e) => {
            eprintln!("wasi-hello: cannot write hello.txt in the cwd: {e}");
            std::process::exit(1);
        }
    }
    let _ = out.flush();
    if args.get(1).map(String::as_str) == Some("fail") {
        eprintln!("wasi-hello: failing as asked");
        std::process::exit(1);
    }
}
