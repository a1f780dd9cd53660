//! `tpsbench`: everything lives in the library; main only maps errors to one line and an
//! exit code.
//!
//! A panic is a bug, but the user still gets one line, `error: internal error: ...`, and
//! exit code 2 rather than a backtrace; with `RUST_BACKTRACE` set the standard report
//! (with the backtrace) is printed instead, for whoever debugs it.

use std::panic::{self, PanicHookInfo};

fn main() {
    let default_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let msg = panic_message(info);
        if msg.starts_with("failed printing to stdout") {
            // println! into a closed pipe (`tpsbench info | head -1`): not a bug, and said
            // as `run` says it when its output cannot be written.
            let reason = msg.trim_start_matches("failed printing to stdout: ");
            eprintln!("error: writing to stdout: {reason}");
        } else if backtrace_requested() {
            default_hook(info);
        } else {
            eprintln!("error: internal error: {}", describe_panic(info));
        }
    }));
    let code = match panic::catch_unwind(|| {
        // Lets the integration tests check this hook end to end.
        if std::env::var_os("TPSBENCH_TEST_PANIC").is_some() {
            panic!("panic requested by TPSBENCH_TEST_PANIC");
        }
        tpsbench::cli::main()
    }) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            eprintln!("error: {e:#}");
            2
        }
        Err(_) => 2, // the hook has reported it
    };
    std::process::exit(code);
}

fn backtrace_requested() -> bool {
    std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0")
}

/// The first line of the panic message.
fn panic_message<'a>(info: &'a PanicHookInfo) -> &'a str {
    let payload = info.payload();
    let msg = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic");
    msg.lines().next().unwrap_or_default()
}

/// The panic message and where it happened, on one line.
fn describe_panic(info: &PanicHookInfo) -> String {
    let msg = panic_message(info);
    match info.location() {
        Some(l) => format!(
            "{msg} (at {}:{}; please report this bug; set RUST_BACKTRACE=1 for details)",
            l.file(),
            l.line()
        ),
        None => format!("{msg} (please report this bug; set RUST_BACKTRACE=1 for details)"),
    }
}
