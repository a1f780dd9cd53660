//! Peak resident memory of this process per test, from Linux's VmHWM, reset before each test
//! by writing 5 to /proc/self/clear_refs. Elsewhere the figure is absent.

/// Resets the peak-RSS mark; false where the kernel does not support it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Peak resident set size since the last reset, in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kib_field(&status, "VmHWM:")
}

/// Reads a `Key:   1234 kB` line of /proc/self/status as bytes.
pub fn parse_kib_field(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_status_fields() {
        let s = "Name:\ttpsbench\nVmHWM:\t  123456 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_kib_field(s, "VmHWM:"), Some(123_456 * 1024));
        assert_eq!(parse_kib_field(s, "VmSwap:"), None);
    }

    #[test]
    fn peak_rss_grows_with_a_large_allocation_after_a_reset() {
        if !reset_peak_rss() {
            return; // not Linux, or no clear_refs: nothing to check
        }
        let before = peak_rss_bytes().unwrap();
        let v = vec![1u8; 64 << 20];
        std::hint::black_box(&v);
        let after = peak_rss_bytes().unwrap();
        assert!(after >= before + (60 << 20), "{before} -> {after}");
    }
}
