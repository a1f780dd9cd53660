//! Progress and ETA on stderr. The estimate is pure and unit-tested; the reporter only prints.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::plan::TestParams;

/// The tests of one kind (prompt only, or generating): how many, their tokens (depth
/// included), and for tests done, their seconds.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Work {
    tests: usize,
    tokens: u64,
    secs: f64,
}

/// Counts test `p`, which took `secs`, in its kind's [`Work`]: 0 prompt only, 1 generating.
fn count(w: &mut [Work; 2], p: &TestParams, secs: f64) {
    let w = &mut w[usize::from(p.n_gen > 0)];
    w.tests += 1;
    w.tokens += p.n_tokens() + u64::from(p.n_depth);
    w.secs += secs;
}

/// The work left at each point of a list of tests: element `k` is that of `tests[k..]`, by
/// kind, and the last element is empty.
pub(crate) fn work_left<'a>(
    tests: impl DoubleEndedIterator<Item = &'a TestParams>,
) -> Vec<[Work; 2]> {
    let mut left = vec![[Work::default(); 2]];
    for p in tests.rev() {
        let mut w = *left.last().expect("starts with one");
        count(&mut w, p, 0.0);
        left.push(w);
    }
    left.reverse();
    left
}

/// Estimates the time left from the tests done so far, each kind priced by its own seconds
/// per token (prompt and generation tokens cost very differently). Kept as sums, so an
/// estimate costs the same at a sweep's 50,000th test as at its first.
#[derive(Debug, Default, Clone)]
pub(crate) struct Eta {
    done: [Work; 2],
}

impl Eta {
    pub(crate) fn done(&mut self, p: &TestParams, took: Duration) {
        count(&mut self.done, p, took.as_secs_f64());
    }

    /// The time `left` will take; None before the first test.
    pub(crate) fn left(&self, left: &[Work; 2]) -> Option<Duration> {
        let n = self.done[0].tests + self.done[1].tests;
        let mean = (self.done[0].secs + self.done[1].secs) / n as f64;
        let secs: f64 = (self.done.iter().zip(left))
            .map(|(done, left)| match done.tokens {
                0 => mean * left.tests as f64,
                t => done.secs / t as f64 * left.tokens as f64,
            })
            .sum();
        (n > 0).then(|| Duration::from_secs_f64(secs))
    }
}

/// `1:05:09` / `3:07`.
pub(crate) fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

pub trait Progress {
    fn test_started(&mut self, index: usize, total: usize, id: &str);
    fn repetition(&mut self, done: u32, total: u32);
    fn test_finished(&mut self, line: &str, elapsed: Duration, eta: Option<Duration>);
    fn note(&mut self, line: &str);
}

/// Prints to stderr; repetition counters redraw in place only on a terminal.
pub struct StderrProgress {
    tty: bool,
    quiet: bool,
    current: String,
}

impl StderrProgress {
    pub fn new(quiet: bool) -> Self {
        StderrProgress {
            tty: std::io::stderr().is_terminal(),
            quiet,
            current: String::new(),
        }
    }
}

impl Progress for StderrProgress {
    fn test_started(&mut self, index: usize, total: usize, id: &str) {
        self.current = format!("[{}/{}] {id}", index + 1, total);
        if !self.quiet && self.tty {
            eprint!("\r\x1b[2K{} ...", self.current);
        }
    }

    fn repetition(&mut self, done: u32, total: u32) {
        if !self.quiet && self.tty {
            eprint!("\r\x1b[2K{} rep {done}/{total}", self.current);
            let _ = std::io::stderr().flush();
        }
    }

    fn test_finished(&mut self, line: &str, elapsed: Duration, eta: Option<Duration>) {
        if self.quiet {
            return;
        }
        let clear = if self.tty { "\r\x1b[2K" } else { "" };
        let eta = eta.map_or(String::new(), |d| format!(", ETA {}", format_duration(d)));
        eprintln!(
            "{clear}{}  {line}  (elapsed {}{eta})",
            self.current,
            format_duration(elapsed)
        );
    }

    fn note(&mut self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

/// Discards everything (library use, tests).
pub struct NoProgress;

impl Progress for NoProgress {
    fn test_started(&mut self, _: usize, _: usize, _: &str) {}
    fn repetition(&mut self, _: u32, _: u32) {}
    fn test_finished(&mut self, _: &str, _: Duration, _: Option<Duration>) {}
    fn note(&mut self, _: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Axes;
    use crate::plan::expand_axes;

    /// The estimate after `done` (params, seconds) of the tests `left`.
    fn eta(done: &[(&TestParams, u64)], left: &[&TestParams]) -> Option<Duration> {
        let mut e = Eta::default();
        for (p, s) in done {
            e.done(p, Duration::from_secs(*s));
        }
        e.left(&work_left(left.iter().copied())[0])
    }

    #[test]
    fn eta_prices_prompt_and_generation_tokens_separately() {
        let mut a = Axes::llama_bench_defaults(1);
        a.n_prompt = vec![100, 200];
        a.n_gen = vec![10, 20];
        let p = expand_axes(&a); // pp100, pp200, tg10, tg20
        let eta = eta(&[(&p[0], 1), (&p[2], 5)], &[&p[1], &p[3]]).unwrap();
        // pp: 0.01 s/token × 200 = 2 s; tg: 0.5 s/token × 20 = 10 s
        assert!((eta.as_secs_f64() - 12.0).abs() < 1e-9, "{eta:?}");
    }

    #[test]
    fn eta_is_unknown_before_the_first_test_and_uses_the_mean_for_unseen_kinds() {
        let p = expand_axes(&Axes::llama_bench_defaults(1));
        assert!(eta(&[], &[&p[0]]).is_none());
        assert_eq!(eta(&[(&p[0], 4)], &[&p[1]]), Some(Duration::from_secs(4)));
        assert_eq!(eta(&[(&p[0], 4)], &[]), Some(Duration::ZERO));
    }

    #[test]
    fn the_work_left_is_that_of_each_suffix() {
        let mut a = Axes::llama_bench_defaults(1);
        a.n_prompt = vec![100, 200];
        a.n_gen = vec![10];
        let p = expand_axes(&a);
        let left = work_left(p.iter());
        assert_eq!(left.len(), p.len() + 1);
        for k in 0..=p.len() {
            let (mut pp, mut tg) = (Work::default(), Work::default());
            for t in &p[k..] {
                let w = if t.n_gen > 0 { &mut tg } else { &mut pp };
                w.tests += 1;
                w.tokens += t.n_tokens() + u64::from(t.n_depth);
            }
            assert_eq!(left[k], [pp, tg], "from test {k}");
        }
    }

    #[test]
    fn durations_format_as_clock_time() {
        assert_eq!(format_duration(Duration::from_secs(187)), "3:07");
        assert_eq!(format_duration(Duration::from_secs(3909)), "1:05:09");
    }
}
