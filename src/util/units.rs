//! Sizes and counts as llama-bench prints them, for every table and progress line.

pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Sizes as llama-bench prints them: MiB below 1 GiB, GiB above.
pub fn format_size(bytes: u64) -> String {
    match bytes as f64 {
        b if b >= GIB => format!("{:.2} GiB", b / GIB),
        b => format!("{:.2} MiB", b / (1024.0 * 1024.0)),
    }
}

/// Parameter counts as llama-bench prints them: "134.52 M", "7.24 B".
pub fn format_params(n: u64) -> String {
    match n as f64 {
        x if x >= 1e9 => format!("{:.2} B", x / 1e9),
        x => format!("{:.2} M", x / 1e6),
    }
}

/// A figure for an error or refusal line: as Rust prints it when that is short, else to 9
/// significant digits, in exponent form outside 1e-4..1e15. Rust prints an f64 in full, so a
/// tampered `1e308` would fill a line with 309 digits; 9 digits still tell apart two figures
/// that the 6-digit checks of `record::verify` call different.
pub(crate) fn short_number(x: f64) -> String {
    let plain = x.to_string();
    if !x.is_finite() || x == 0.0 || plain.len() <= 12 {
        return plain;
    }
    let magnitude = x.abs().log10().floor();
    if (-4.0..15.0).contains(&magnitude) {
        let decimals = (8.0 - magnitude).max(0.0) as usize;
        return without_trailing_zeros(&format!("{x:.decimals$}")).to_string();
    }
    let sci = format!("{x:.8e}");
    match sci.split_once('e') {
        Some((mantissa, exponent)) => format!("{}e{exponent}", without_trailing_zeros(mantissa)),
        None => sci,
    }
}

/// "1.2300" -> "1.23", "5.000" -> "5"; a number without a decimal point is left alone.
fn without_trailing_zeros(s: &str) -> &str {
    match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.'),
        false => s,
    }
}

#[cfg(test)]
mod tests {
    use super::short_number;

    #[test]
    fn huge_and_tiny_figures_are_written_short() {
        assert_eq!(short_number(1e308), "1e308");
        assert_eq!(short_number(-1e308), "-1e308");
        assert_eq!(short_number(f64::MAX), "1.79769313e308");
        assert_eq!(short_number(1.5e-300), "1.5e-300");
        assert_eq!(short_number(f64::MIN_POSITIVE), "2.22507386e-308");
        assert_eq!(short_number(1.8446744073709552e19), "1.84467441e19");
    }

    #[test]
    fn ordinary_figures_keep_their_digits_up_to_nine() {
        assert_eq!(short_number(57.1), "57.1");
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(123456.0), "123456");
        assert_eq!(short_number(701.2999999999998), "701.3");
        assert_eq!(short_number(57.12345678901234), "57.1234568");
        assert_eq!(short_number(0.000123456789123), "0.000123456789");
        assert_eq!(short_number(123456789012345.0), "123456789012345");
        assert_eq!(short_number(f64::NAN), "NaN");
        assert_eq!(short_number(f64::INFINITY), "inf");
        // Every figure fits a line.
        for x in [1e308, -2.5e-310, 9.999999999e14, 1e15, 3.0e-5] {
            assert!(short_number(x).len() <= 16, "{x}: {}", short_number(x));
        }
    }
}
