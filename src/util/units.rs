//! Sizes and counts as llama-bench prints them, for every table and progress line.

/// Sizes as llama-bench prints them: MiB below 1 GiB, GiB above.
pub fn format_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else {
        format!("{:.2} MiB", b / (1024.0 * 1024.0))
    }
}

/// Parameter counts as llama-bench prints them: "134.52 M", "7.24 B".
pub fn format_params(n: u64) -> String {
    let x = n as f64;
    if x >= 1e9 {
        format!("{:.2} B", x / 1e9)
    } else {
        format!("{:.2} M", x / 1e6)
    }
}
