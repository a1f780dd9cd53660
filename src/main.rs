//! `tpsbench`: everything lives in the library; main only maps errors to one line and an
//! exit code.

fn main() {
    let code = match tpsbench::cli::main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    std::process::exit(code);
}
