//! Progress and ETA on stderr. The estimate is pure and unit-tested; the reporter only prints.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::plan::TestParams;

/// Estimates the time left from the tests done so far. Prompt and generation tokens cost
/// very differently, so each kind is priced by its own seconds per token; a kind not yet
/// seen is priced by the mean test duration.
pub(crate) fn eta(done: &[(TestParams, Duration)], remaining: &[&TestParams]) -> Option<Duration> {
    if done.is_empty() {
        return None;
    }
    let per_token = |generation: bool| {
        let (secs, tokens) = done
            .iter()
            .filter(|(p, _)| (p.n_gen > 0) == generation)
            .fold((0.0, 0u64), |(s, n), (p, d)| {
                (s + d.as_secs_f64(), n + p.n_tokens() + u64::from(p.n_depth))
            });
        (tokens > 0).then(|| secs / tokens as f64)
    };
    let (pp, tg) = (per_token(false), per_token(true));
    let mean = done.iter().map(|(_, d)| d.as_secs_f64()).sum::<f64>() / done.len() as f64;
    let secs: f64 = remaining
        .iter()
        .map(|p| {
            let rate = if p.n_gen > 0 { tg } else { pp };
            rate.map_or(mean, |r| r * (p.n_tokens() + u64::from(p.n_depth)) as f64)
        })
        .sum();
    Some(Duration::from_secs_f64(secs))
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

/// Receives the runner's events.
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

    #[test]
    fn eta_prices_prompt_and_generation_tokens_separately() {
        let mut a = Axes::llama_bench_defaults(1);
        a.n_prompt = vec![100, 200];
        a.n_gen = vec![10, 20];
        let p = expand_axes(&a); // pp100, pp200, tg10, tg20
        let done = vec![
            (p[0].clone(), Duration::from_secs(1)),
            (p[2].clone(), Duration::from_secs(5)),
        ];
        let eta = eta(&done, &[&p[1], &p[3]]).unwrap();
        // pp: 0.01 s/token × 200 = 2 s; tg: 0.5 s/token × 20 = 10 s
        assert!((eta.as_secs_f64() - 12.0).abs() < 1e-9, "{eta:?}");
    }

    #[test]
    fn eta_is_unknown_before_the_first_test_and_uses_the_mean_for_unseen_kinds() {
        let p = expand_axes(&Axes::llama_bench_defaults(1));
        assert!(eta(&[], &[&p[0]]).is_none());
        let e = eta(&[(p[0].clone(), Duration::from_secs(4))], &[&p[1]]).unwrap();
        assert_eq!(e, Duration::from_secs(4));
    }

    #[test]
    fn durations_format_as_clock_time() {
        assert_eq!(format_duration(Duration::from_secs(187)), "3:07");
        assert_eq!(format_duration(Duration::from_secs(3909)), "1:05:09");
    }
}
