//! Peak resident memory of this process per test, from Linux's VmHWM, reset before each test
//! by writing 5 to /proc/self/clear_refs. Elsewhere the figure is absent.

/// Resets the peak-RSS mark; false where the kernel does not support it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Keeps glibc's allocations of 128 KiB and up in mappings of their own. glibc otherwise raises
/// that threshold as blocks are freed, and llama.cpp's per-test 2 MB blocks land among the
/// record's small allocations, leaving holes: a sweep grew by about 70 KB per test (367 MB at
/// 5,000 tests of `scripts/sweep-cost`, 111 MB fixed). Elsewhere than glibc, nothing to do.
pub fn keep_large_allocations_apart() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it has no memory-safety preconditions.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Peak resident set size since the last reset, in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kib_field(&status, "VmHWM:")
}

/// Reads a `Key:   1234 kB` line of /proc/self/status as bytes.
pub fn parse_kib_field(status: &str, key: &str) -> Option<u64> {
    let kib = status.lines().find_map(|l| l.strip_prefix(key))?;
    let kib: u64 = kib.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_large_block_has_its_own_mapping_after_a_larger_one_was_freed() {
        // In a process of its own: in the test binary's, blocks other tests freed sit in the
        // arena's free lists, and a 4 MB request may reuse one whatever the threshold (it
        // did once, in a clean clone's run: a thread arena's chunk, not a mapping).
        const CHILD: &str = "TPSBENCH_MMAP_TEST_CHILD";
        if std::env::var_os(CHILD).is_none() {
            let name = "machine::memory::tests::a_large_block_has_its_own_mapping_after_a_larger_one_was_freed";
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--test-threads=1"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{stdout}");
            assert!(
                stdout.contains("1 passed"),
                "the check did not run: {stdout}"
            );
            return;
        }
        keep_large_allocations_apart();
        // Freeing a mapped 16 MB block is what raises glibc's threshold when it is not fixed:
        // the next 4 MB block would then come from the heap.
        drop(std::hint::black_box(vec![1u8; 16 << 20]));
        let v = std::hint::black_box(vec![1u8; 4 << 20]);
        // glibc's chunk header, the word before the block: bit 1 marks a block mapped on
        // its own (IS_MMAPPED). The test's allocator is the system's malloc.
        let header = unsafe { *v.as_ptr().cast::<usize>().sub(1) };
        assert_ne!(
            header & 2,
            0,
            "a 4 MB block came from the heap: {header:#x}"
        );
    }

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
