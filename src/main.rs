//! `tpsbench`: main only maps errors to one line and an exit code. A closed stdout
//! (`tpsbench info | head -1`) ends the command quietly with exit 0, as other command-line
//! tools do. A value clap rejects is one line and exit 2, like every other bad input. A panic
//! is a bug, but the user still gets one line and exit 2 rather than a backtrace, unless
//! `RUST_BACKTRACE` asks for it.

use std::io::Write;
use std::panic::{self, PanicHookInfo};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// Set when a `println!` panicked because the reader of stdout has gone.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

fn main() {
    // Checked here so that a rejected value is one line; cli::main parses again (cheap).
    if let Err(e) = tpsbench::cli::Cli::try_parse() {
        match value_error_line(&e) {
            Some(line) => {
                eprintln!("{line}");
                std::process::exit(2);
            }
            None => e.exit(),
        }
    }
    let default_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let msg = panic_message(info);
        if msg.starts_with("failed printing to stdout") && is_broken_pipe_text(msg) {
            // println! into a closed pipe: not a bug, not an error.
            STDOUT_CLOSED.store(true, Ordering::SeqCst);
        } else if msg.starts_with("failed printing to stdout") {
            // Another write failure (a full disk): said as `run` says it.
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
        Ok(Ok(outcome)) => outcome.exit_code(),
        Ok(Err(e)) if is_broken_pipe(&e) => 0,
        Ok(Err(e)) => {
            eprintln!("error: {e:#}");
            2
        }
        Err(_) if STDOUT_CLOSED.load(Ordering::SeqCst) => 0,
        Err(_) => 2, // the hook has reported it
    };
    // Whatever is still buffered: a reader gone by now changes nothing.
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

/// The error (or one it wraps) is a write to a pipe whose reader has gone.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn is_broken_pipe_text(msg: &str) -> bool {
    msg.contains("Broken pipe") || msg.contains("(os error 32)")
}

/// One line for a value clap rejected: `error: --shard 2/2: <why>`; None for other errors.
fn value_error_line(e: &clap::Error) -> Option<String> {
    let kind = e.kind();
    if !matches!(kind, ErrorKind::ValueValidation | ErrorKind::InvalidValue) {
        return None;
    }
    let text = |k: ContextKind| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    // "--shard <INDEX/COUNT>" names the option; a positional argument is "<A>".
    let arg = text(ContextKind::InvalidArg)?;
    let name = arg.split_whitespace().next().unwrap_or(&arg).to_string();
    let value = text(ContextKind::InvalidValue).unwrap_or_default();
    let why = match (kind, std::error::Error::source(e)) {
        (ErrorKind::ValueValidation, Some(source)) => source.to_string(),
        _ => match e.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(v)) if !v.is_empty() => {
                format!("use one of {}", v.join(", "))
            }
            _ if value.is_empty() => "a value is required".to_string(),
            _ => "invalid value".to_string(),
        },
    };
    if value.is_empty() {
        return Some(format!("error: {name}: {why}"));
    }
    Some(format!("error: {name} {value}: {why}"))
}

fn backtrace_requested() -> bool {
    std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0")
}

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
