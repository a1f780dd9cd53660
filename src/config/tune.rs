//! The `[tune]` table (`tpsbench tune`): what to maximise (`objective`) and the limits the
//! answer must meet, raced over the sweep's space within `max_rounds` and `max_seconds`.
//! docs/configuration.md shows each key.

use serde::Deserialize;
use toml::Spanned;

use crate::config::serving::ServingConfig;
use crate::config::speculative::SpeculativeConfig;
use crate::config::values::{float_opt, rounds, scalar_int};
use crate::config::{ConfigError, Ctx, Invalid};

mod slo;
pub use slo::{GoodputObjective, LatencyLimits, describe_slo, describe_slots};
mod device_memory;
pub use device_memory::DeviceMemory;
mod drafters;
pub use drafters::DecodeObjective;

/// The deepest objective: the sweep's own `n_depth` limit.
pub const MAX_DEPTH: u32 = 1 << 20;

/// What the race maximises: the rate of one llama-bench test, its sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Objective {
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
}

impl Objective {
    /// "tg128", "pp512", "pp512+tg128", each optionally "@d4096".
    pub fn parse(s: &str) -> Result<Objective, Invalid> {
        let bad = || {
            Invalid(format!(
                "objective {s:?}: expected \"tgN\", \"ppN\" or \"ppN+tgM\" (llama-bench's \
                 pg), optionally at a depth \"@dD\" (D at most {MAX_DEPTH}), e.g. \"tg128\" \
                 or \"pp512@d4096\"; or \"goodput\" (served, under [serving] slo); or \
                 \"speculative\" (decode on [speculative]'s prompts, drafters included)"
            ))
        };
        let t = s.trim();
        let (test, depth) = match t.split_once('@') {
            Some((a, d)) => {
                let d = d
                    .trim()
                    .strip_prefix('d')
                    .and_then(|x| x.parse::<u32>().ok());
                // The sweep's n_depth limit; beyond it the context's size overflows.
                (a.trim(), d.filter(|&d| d <= MAX_DEPTH).ok_or_else(bad)?)
            }
            None => (t, 0),
        };
        let size = |x: &str, p: &str| {
            let n = x.trim().strip_prefix(p)?.parse::<u32>().ok()?;
            (1..=1_000_000).contains(&n).then_some(n)
        };
        let (n_prompt, n_gen) = match test.split_once('+') {
            Some((p, g)) => (
                size(p, "pp").ok_or_else(bad)?,
                size(g, "tg").ok_or_else(bad)?,
            ),
            None => match (size(test, "pp"), size(test, "tg")) {
                (Some(p), _) => (p, 0),
                (_, Some(g)) => (0, g),
                _ => return Err(bad()),
            },
        };
        Ok(Objective {
            n_prompt,
            n_gen,
            n_depth: depth,
        })
    }

    pub fn n_ctx(&self) -> u32 {
        self.n_prompt + self.n_gen + self.n_depth
    }
}

/// llama-bench's name of the test, as test ids write it ("pp512@d4096").
impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n_prompt, n_gen, n_depth) = (self.n_prompt, self.n_gen, self.n_depth);
        let test = crate::config::TestParams {
            n_prompt,
            n_gen,
            n_depth,
            ..Default::default()
        };
        f.write_str(&test.name().replace(" @ ", "@"))
    }
}

/// The limits an answer must meet; each prunes before any speed is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// The most KLD (nats) against the ladder's reference, from its quality test.
    pub max_kld: Option<f64>,
    /// The most bytes the weights and the KV cache may take.
    pub max_memory_bytes: Option<u64>,
    /// Without `max_memory_bytes`: the host's RAM less this share must hold them.
    pub memory_margin: f64,
    /// The context the configuration must hold: the model's trained context at least, and
    /// its KV cache counted in the memory limit.
    pub min_ctx: Option<u32>,
    /// The most seconds a cold load (page cache evicted) may take, median of 3.
    pub max_load_seconds: Option<f64>,
    /// TTFT and ITL limits of a ppN or tgN objective, checked on the raced rounds.
    pub latency: LatencyLimits,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tune {
    /// The test the race maximises; for the goodput objective, the sizes of one request
    /// (the context the limits check).
    pub objective: Objective,
    /// `objective = "goodput"`: the SLO and the load; the race's figure is then goodput.
    pub goodput: Option<GoodputObjective>,
    /// `objective = "speculative"`: decode on `[speculative]`'s prompts, plain or drafted.
    pub decode: Option<DecodeObjective>,
    pub limits: Limits,
    /// The race's budget: the most rounds (2 or more: a paired look needs 2).
    pub max_rounds: u32,
    /// The race's budget in wall-clock seconds: no round starts that would end past it.
    pub max_seconds: Option<f64>,
    /// `max_device_memory_gib`: what each offload device may hold of a placement.
    pub device_memory: DeviceMemory,
    /// `bisect` (default true): a monotone placement axis with many values is bisected.
    pub bisect: bool,
}

impl Tune {
    pub const DEFAULT_MAX_ROUNDS: u32 = 20;
    pub const DEFAULT_MEMORY_MARGIN: f64 = 0.1;

    /// The objective as the answer and the record name it: "tg128", or the goodput
    /// objective with its load and SLO.
    pub fn objective_name(&self) -> String {
        match (&self.goodput, &self.decode) {
            (Some(g), _) => g.describe(),
            (None, Some(d)) => d.describe(),
            (None, None) => self.objective.to_string(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTune {
    objective: Option<Spanned<String>>,
    max_kld: Option<Spanned<toml::Value>>,
    max_memory_gib: Option<Spanned<toml::Value>>,
    memory_margin: Option<Spanned<toml::Value>>,
    min_ctx: Option<Spanned<toml::Value>>,
    max_load_seconds: Option<Spanned<toml::Value>>,
    max_rounds: Option<Spanned<toml::Value>>,
    max_seconds: Option<Spanned<toml::Value>>,
    max_ttft_ms: Option<Spanned<toml::Value>>,
    max_itl_ms: Option<Spanned<toml::Value>>,
    latency_quantile: Option<Spanned<toml::Value>>,
    slots: Option<Spanned<toml::Value>>,
    max_device_memory_gib: Option<Spanned<toml::Value>>,
    bisect: Option<Spanned<toml::Value>>,
}

/// Checks the table key by key; `has_ladder`: a `[[ladder]]` measures KLD; `serving`: the
/// `[serving]` table, whose requests and SLO the goodput objective serves.
pub(crate) fn parse(
    ctx: &Ctx,
    span: std::ops::Range<usize>,
    raw: RawTune,
    has_ladder: bool,
    (serving, speculative): (Option<&ServingConfig>, Option<&SpeculativeConfig>),
) -> Result<Tune, ConfigError> {
    let (objective, goodput, decode) = match &raw.objective {
        Some(o) if o.get_ref().trim() == "goodput" => {
            let (g, sizes) = slo::goodput(ctx, o.span(), serving, &raw.slots)?;
            (sizes, Some(g), None)
        }
        Some(o) if o.get_ref().trim() == "speculative" => {
            let (d, sizes) = drafters::objective(ctx, o.span(), speculative)?;
            (sizes, None, Some(d))
        }
        Some(o) => (
            Objective::parse(o.get_ref()).map_err(|m| ctx.err(o.span(), "tune.objective", m))?,
            None,
            None,
        ),
        None => {
            let msg = "the race needs an objective: objective = \"tg128\" (or \"pp512\", \"pp512+tg128\")";
            return Err(ctx.err(span, "tune.objective", msg));
        }
    };
    if let (None, Some(v)) = (&goodput, &raw.slots) {
        let msg = format!(
            "slots is the goodput objective's concurrency axis (sequences served at once); \
             objective {objective} serves no requests: remove slots or use objective = \"goodput\""
        );
        return Err(ctx.err(v.span(), "tune.slots", msg));
    }
    let kind = (goodput.is_some(), decode.is_some());
    let limits = limits(ctx, &raw, has_ladder, &objective, kind)?;
    let default_rounds = Tune::DEFAULT_MAX_ROUNDS;
    Ok(Tune {
        objective,
        goodput,
        decode,
        limits,
        max_rounds: rounds(ctx, "tune.max_rounds", &raw.max_rounds, default_rounds)?,
        max_seconds: float_opt(ctx, "tune.max_seconds", &raw.max_seconds, 1.0, 1e7)?,
        device_memory: (raw.max_device_memory_gib.as_ref())
            .map(|v| device_memory::parse(ctx, v))
            .transpose()?
            .unwrap_or_default(),
        bisect: match &raw.bisect {
            None => true,
            Some(v) => match v.get_ref() {
                toml::Value::Boolean(b) => *b,
                other => {
                    let msg = format!("expected true or false, got {}", other.type_str());
                    return Err(ctx.err(v.span(), "tune.bisect", msg));
                }
            },
        },
    })
}

fn limits(
    ctx: &Ctx,
    raw: &RawTune,
    has_ladder: bool,
    objective: &Objective,
    kind: (bool, bool),
) -> Result<Limits, ConfigError> {
    let max_kld = float_opt(ctx, "tune.max_kld", &raw.max_kld, 0.0, 100.0)?;
    if let (Some(_), false, Some(v)) = (max_kld, has_ladder, &raw.max_kld) {
        let msg = "max_kld limits a [[ladder]]'s variants by their KLD, and there is no [[ladder]] to measure it: add one or remove max_kld";
        return Err(ctx.err(v.span(), "tune.max_kld", msg));
    }
    let gib = float_opt(ctx, "tune.max_memory_gib", &raw.max_memory_gib, 1e-6, 1e6)?;
    let margin = float_opt(ctx, "tune.memory_margin", &raw.memory_margin, 0.0, 0.9)?;
    if let (Some(_), Some(m)) = (gib, &raw.memory_margin) {
        let msg = "memory_margin applies to the host's RAM when max_memory_gib is not given; with max_memory_gib set, put the margin in it";
        return Err(ctx.err(m.span(), "tune.memory_margin", msg));
    }
    let min_ctx = (raw.min_ctx.as_ref())
        .map(|v| scalar_int(ctx, "tune.min_ctx", v, 1, 16_777_216))
        .transpose()?
        .map(|n| n as u32);
    let load_s = &raw.max_load_seconds;
    let latency = (&raw.max_ttft_ms, &raw.max_itl_ms, &raw.latency_quantile);
    Ok(Limits {
        max_kld,
        max_memory_bytes: gib.map(|g| (g * crate::util::units::GIB) as u64),
        memory_margin: margin.unwrap_or(Tune::DEFAULT_MEMORY_MARGIN),
        min_ctx,
        max_load_seconds: float_opt(ctx, "tune.max_load_seconds", load_s, 0.001, 1e6)?,
        latency: slo::latency(ctx, objective, kind, latency)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_and_print_back() {
        for s in ["tg128", "pp512", "pp512+tg128", "tg64@d4096"] {
            assert_eq!(Objective::parse(s).unwrap().to_string(), s);
        }
        let o = Objective::parse("pp512+tg128@d1024").unwrap();
        assert_eq!(o.n_ctx(), 512 + 128 + 1024);
        for bad in [
            "",
            "tg",
            "tg0",
            "xx12",
            "tg128@4096",
            "pp512+pp512",
            "tg-1",
            "tg1@d1048577",
        ] {
            assert!(Objective::parse(bad).is_err(), "{bad}");
        }
        let deepest = Objective::parse("pp1000000+tg1000000@d1048576").unwrap();
        assert_eq!(deepest.n_ctx(), 3_048_576);
    }

    fn parsed(tune: &str, serving: &str) -> Result<Tune, ConfigError> {
        let text = format!(
            "[sweep]\nn_prompt = 8\n{serving}\n[[model]]\nname = \"m\"\npath = \"m.gguf\"\n\
             [tune]\n{tune}\n"
        );
        crate::config::parse(std::path::Path::new("m.toml"), &text, 2).map(|c| c.tune.unwrap())
    }

    #[test]
    fn the_goodput_objective_reads_its_slo_and_load_from_serving() {
        let serving = "[serving]\nn_prompt = 16\nn_gen = 8\nn_requests = 12\nslots = 3\n\
                       arrival_rate = [2.5]\nslo = { ttft_ms = 400, itl_p95_ms = 40 }";
        let t = parsed("objective = \"goodput\"", serving).unwrap();
        let g = t.goodput.clone().unwrap();
        assert_eq!((g.rate, g.slots.clone(), g.n_requests), (2.5, vec![3], 12));
        assert_eq!((g.slo.ttft_ms, g.slo.itl_ms), (Some(400.0), Some(40.0)));
        assert_eq!(g.slo.attainment, 0.95);
        // One tg test of a request's whole context per candidate: the limits check it.
        assert_eq!(t.objective.to_string(), "tg24");
        assert_eq!(
            t.objective_name(),
            "goodput at 2.5 req/s, 12 requests pp16+tg8, 3 slots: TTFT ≤ 400 ms, ITL ≤ 40 ms \
             for 95% of requests"
        );
        // `[tune] slots` makes the concurrency a candidate axis, each value once.
        let t = parsed("objective = \"goodput\"\nslots = [2, 4, 2]", serving).unwrap();
        assert_eq!(t.goodput.unwrap().slots, vec![2, 4]);
        let e = parsed("objective = \"tg8\"\nslots = [2]", serving)
            .unwrap_err()
            .to_string();
        assert!(e.contains("objective tg8 serves no requests"), "{e}");
        let e = parsed("objective = \"goodput\"\nslots = [0]", serving)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tune.slots"), "{e}");
        let e = parsed("objective = \"goodput\"", "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("add a [serving] table"), "{e}");
        let e = parsed("objective = \"goodput\"", "[serving]\narrival_rate = [1]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("and there is none"), "{e}");
    }

    #[test]
    fn the_speculative_objective_decodes_the_speculative_tables_prompts() {
        let spec = "[speculative]\ndataset = \"p.txt\"\nn_prompts = 3\nn_gen = 64\n\
                    drafters = [\"ngram-mod\"]";
        let t = parsed("objective = \"speculative\"", spec).unwrap();
        let d = t.decode.clone().unwrap();
        assert_eq!((d.dataset.as_str(), d.n_prompts, d.n_gen), ("p.txt", 3, 64));
        // The limits count a whole generation after the longest prompt vLLM keeps.
        assert_eq!(t.objective.to_string(), "tg64@d1024");
        assert_eq!(
            t.objective_name(),
            "decode after 3 prompts of p.txt, up to 64 tokens each, plain or drafted"
        );
        let e = parsed("objective = \"speculative\"", "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("add a [speculative] table"), "{e}");
        let e = parsed("objective = \"speculative\"\nmax_ttft_ms = 9", spec)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tune.max_ttft_ms"), "{e}");
    }

    #[test]
    fn latency_limits_need_an_objective_that_measures_them() {
        let t = parsed("objective = \"tg64\"\nmax_itl_ms = 25", "").unwrap();
        assert_eq!(t.limits.latency.max_itl_ms, Some(25.0));
        assert_eq!(t.limits.latency.quantile, 0.9);
        let t = parsed(
            "objective = \"pp512\"\nmax_ttft_ms = 300\nlatency_quantile = 0.99",
            "",
        )
        .unwrap();
        assert_eq!(
            (t.limits.latency.max_ttft_ms, t.limits.latency.quantile),
            (Some(300.0), 0.99)
        );
        for (tune, says) in [
            (
                "objective = \"pp512+tg64\"\nmax_itl_ms = 25",
                "needs a decode objective",
            ),
            (
                "objective = \"tg64\"\nmax_ttft_ms = 25",
                "needs a prefill objective",
            ),
            ("objective = \"tg64\"\nmax_itl_ms = -1", "out of range"),
            (
                "objective = \"tg64\"\nlatency_quantile = 0.5",
                "neither is given",
            ),
            (
                "objective = \"tg64\"\nmax_itl_ms = 5\nlatency_quantile = 1.5",
                "out of range",
            ),
        ] {
            let e = parsed(tune, "").unwrap_err().to_string();
            assert!(e.contains(says), "{tune}: {e}");
        }
    }

    /// A depth past u32 made the context's size overflow.
    #[test]
    fn a_depth_whose_context_overflows_is_refused() {
        let text = include_str!("../../fuzz/regressions/models_toml/tune-depth-overflow.toml");
        let e = crate::config::parse(std::path::Path::new("fuzz/models.toml"), text, 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tune.objective") && e.contains("1048576"), "{e}");
    }
}
