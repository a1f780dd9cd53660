//! The command line's rounds (`--rounds`, `--max-rounds`, `--max-rounds-seconds`) against
//! the configuration's: applied to a sweep, or a race's budget; what makes no sense refused.

use super::Request;
use crate::config::{self, Config};
use crate::runner;
use crate::runner::error::{OptionError, RunnerError};

/// `--rounds`: a number, or `auto` (rounds until the answer is established).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounds {
    Fixed(u32),
    Auto,
}

/// `--rounds`, `--max-rounds` and `--max-rounds-seconds`: they override `[sweep]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundsOverride {
    pub rounds: Option<Rounds>,
    pub max_rounds: Option<i64>,
    pub max_seconds: Option<f64>,
}

/// A race sets its own rounds and file: the options that shape a sweep's are refused rather
/// than ignored; `--max-rounds` and the seconds are its budget.
pub(super) fn race_budget(
    r: &Request,
    t: &mut crate::config::tune::Tune,
) -> Result<(), OptionError> {
    let refused = [
        (r.rounds.rounds.is_some(), "--rounds"),
        (r.isolate, "--isolate"),
        (r.resume.is_some(), "--resume"),
        (r.shard.is_some(), "--shard"),
        (r.only_model.is_some(), "--only-model"),
    ];
    if let Some((_, option)) = refused.iter().find(|(given, _)| *given) {
        return Err(OptionError::NotInTune {
            option,
            config: r.config.clone(),
        });
    }
    if let Some(n) = r.rounds.max_rounds {
        t.max_rounds = max_rounds(n)?;
    }
    if let Some(s) = r.rounds.max_seconds {
        // The option that gave it: `tune`'s own, or `run`'s.
        let flag = if r.tune {
            "--max-seconds"
        } else {
            "--max-rounds-seconds"
        };
        t.max_seconds = Some(max_seconds(s, flag)?);
    }
    Ok(())
}

fn max_rounds(n: i64) -> Result<u32, OptionError> {
    let ok = config::MAX_ROUNDS.contains(&n).then_some(n as u32);
    ok.ok_or(OptionError::MaxRounds { max_rounds: n })
}

/// A budget in seconds (`flag`): at least 1.
fn max_seconds(s: f64, flag: &'static str) -> Result<f64, OptionError> {
    let ok = (s.is_finite() && s >= 1.0).then_some(s);
    ok.ok_or(OptionError::MaxRoundsSeconds { flag, seconds: s })
}

/// Applies the rounds override to the configuration's settings.
pub(super) fn apply_rounds(
    s: &mut config::RunSettings,
    o: RoundsOverride,
) -> Result<(), OptionError> {
    match o.rounds {
        Some(Rounds::Fixed(r)) => {
            if r < 1 {
                return Err(OptionError::RoundsBelowOne);
            }
            s.rounds = r;
            s.auto_rounds = None;
        }
        Some(Rounds::Auto) if s.auto_rounds.is_none() => {
            s.auto_rounds = Some(config::AutoRounds {
                max_rounds: config::AutoRounds::DEFAULT_MAX_ROUNDS,
                max_seconds: None,
                budget_given: false,
            });
        }
        _ => {}
    }
    apply_budget(s, o)?;
    if let Some(a) = s.auto_rounds {
        s.rounds = a.max_rounds;
        if !s.repetitions_given {
            s.repetitions = config::AutoRounds::REPETITIONS;
        }
    }
    Ok(())
}

/// `--max-rounds` and `--max-rounds-seconds`: the budget of auto rounds, and only of them.
fn apply_budget(s: &mut config::RunSettings, o: RoundsOverride) -> Result<(), OptionError> {
    if o.max_rounds.is_none() && o.max_seconds.is_none() {
        return Ok(());
    }
    let Some(a) = s.auto_rounds.as_mut() else {
        return Err(OptionError::BudgetWithoutAuto);
    };
    if let Some(n) = o.max_rounds {
        a.max_rounds = max_rounds(n)?;
    }
    if let Some(t) = o.max_seconds {
        a.max_seconds = Some(max_seconds(t, "--max-rounds-seconds")?);
    }
    a.budget_given = true;
    Ok(())
}

/// Auto rounds need fixed-round children (no `--isolate`), and, without a budget,
/// something to resolve.
pub(super) fn check_auto_rounds(r: &Request, cfg: &Config) -> Result<(), RunnerError> {
    let Some(a) = cfg.settings.auto_rounds else {
        return Ok(());
    };
    if r.isolate {
        return Err(OptionError::AutoWithIsolate.into());
    }
    if !a.budget_given && !r.is_child() {
        let prep = runner::prepare::prepare(cfg, &r.filters, false)?;
        if !runner::auto::has_comparison(&prep.plan) {
            let config = r.config.clone();
            return Err(OptionError::AutoWithoutComparison { config }.into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::error::OptionError;

    #[test]
    fn a_budget_without_auto_rounds_is_refused() {
        let mut s = config::RunSettings {
            warmup: 1,
            repetitions: 5,
            ci_target: None,
            max_repetitions: 5,
            max_seconds: 10.0,
            seed: 1,
            rounds: 1,
            auto_rounds: None,
            repetitions_given: false,
        };
        let o = RoundsOverride {
            max_rounds: Some(5),
            ..Default::default()
        };
        let e = apply_rounds(&mut s, o).unwrap_err();
        assert_eq!(e, OptionError::BudgetWithoutAuto);
        assert!(e.to_string().contains("add --rounds auto"), "{e}");
    }
}
