//! `tpsbench bench`: llama-bench's command line read into the models.toml it stands for.
//! A test parameter's flag (short, or llama-bench's long name) finds its row of the knob
//! table, whose check takes each value; lists, ranges and repeated flags are llama-bench's.
//! The text is then parsed as any models.toml is: a bench run and a `run --config` of the
//! printed file are one plan.

use std::path::Path;

use super::Invalid;
use super::knobs::{Kind, Knob, KnobValue, PARAMS};

#[derive(Debug, Default, PartialEq)]
pub struct BenchArgs {
    /// `[sweep]` keys with their values, in the order first given.
    sweep: Vec<(String, Vec<KnobValue>)>,
    repetitions: Option<u32>,
    no_warmup: bool,
    /// tpsbench's `--rounds N|auto` (not llama-bench's); 3 when not given.
    rounds: Option<String>,
    pub models: Vec<String>,
    /// `-o`: md, json, jsonl or csv.
    pub output: String,
    pub verbose: bool,
    /// tpsbench's `--print-config`: print the models.toml, run nothing.
    pub print_config: bool,
    /// tpsbench's `--dry-run`: the plan, nothing loaded.
    pub dry_run: bool,
}

/// A llama-bench command line tpsbench cannot run as asked: one line.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BenchArgError {
    /// The option, and what to use instead.
    #[error("bench: {0} is a llama-bench option tpsbench does not have{1}")]
    Lacks(String, &'static str),
    #[error("bench: unknown option {0} (tpsbench bench --help lists llama-bench's flags it takes)")]
    Unknown(String),
    #[error("bench: {0} needs a value")]
    NoValue(String),
    /// The flag, its value and why it is refused.
    #[error("bench: {0} {1}: {2}")]
    Value(String, String, String),
    #[error("bench: no model: give one with -m FILE (llama-bench's default path is not assumed)")]
    NoModel,
}

/// llama-bench's long names that are not the table's key with dashes.
const LONG_NAMES: &[(&str, &str)] = &[
    ("batch-size", "n_batch"),
    ("ubatch-size", "n_ubatch"),
    ("cache-type-k", "type_k"),
    ("cache-type-v", "type_v"),
    ("threads", "n_threads"),
    ("device", "devices"),
    ("override-tensor", "tensor_buft_overrides"),
    ("fit-ctx", "fit_min_ctx"),
];

/// llama-bench options tpsbench does not have (separated by spaces), and what to use instead.
const LACKS: &[(&str, &str)] = &[
    (
        "-pg",
        ": give -p and -n (pg tests are not in tpsbench's sweep)",
    ),
    (
        "-hf -hfr --hf-repo -hff --hf-file -hft --hf-token --offline",
        ": tpsbench downloads nothing; give a local file with -m",
    ),
    ("-rpc --rpc", ""),
    ("--numa --prio --delay -oe --output-err", ""),
    ("--list-devices", ": tpsbench info lists the devices"),
    ("--version", ": tpsbench --version"),
];

/// The table's entry an option names: `-ngl`, `--n-gpu-layers`, `--n_gpu_layers`.
fn knob_of(arg: &str) -> Option<&'static Knob> {
    if let Some(long) = arg.strip_prefix("--") {
        let long = long.replace('_', "-");
        let name = LONG_NAMES.iter().find(|(l, _)| *l == long).map(|(_, n)| *n);
        return PARAMS
            .iter()
            .find(|k| Some(k.name) == name || k.name.replace('_', "-") == long || k.flag == long);
    }
    let short = arg.strip_prefix('-')?;
    PARAMS.iter().find(|k| k.flag == short)
}

/// llama-bench's integer list: `1,2,4`, `8-32`, `8-32+8`, `1-64*2`.
fn int_range(s: &str, negative: bool) -> Result<Vec<i64>, Invalid> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let (first, rest) = match part.strip_prefix('-').filter(|_| negative) {
            Some(r) => r
                .split_once('-')
                .map_or((part, ""), |(a, b)| (&part[..a.len() + 1], b)),
            None => part.split_once('-').unwrap_or((part, "")),
        };
        let num = |x: &str| {
            x.parse::<i64>()
                .map_err(|_| Invalid(format!("{part:?} is not an integer or a range")))
        };
        let first = num(first)?;
        if rest.is_empty() {
            out.push(first);
            continue;
        }
        let (last, op, step) = match rest.find(['+', '*']) {
            Some(i) => (&rest[..i], &rest[i..i + 1], num(&rest[i + 1..])?),
            None => (rest, "+", 1),
        };
        let last = num(last)?;
        let mut i = first;
        while i <= last {
            out.push(i);
            let next = if op == "+" {
                i.saturating_add(step)
            } else {
                i.saturating_mul(step)
            };
            if next <= i || out.len() > 10_000 {
                return Err(Invalid(format!("{part:?} is not a range that grows")));
            }
            i = next;
        }
    }
    Ok(out)
}

/// The values of one flag, each checked by the table.
fn values(k: &Knob, flag: &str, raw: &str) -> Result<Vec<KnobValue>, BenchArgError> {
    let bad = |why: Invalid| BenchArgError::Value(flag.into(), raw.into(), why.0);
    let items: Vec<toml::Value> = match k.kind {
        Kind::Int { min, .. } => int_range(raw, min < 0)
            .map_err(bad)?
            .into_iter()
            .map(toml::Value::Integer)
            .collect(),
        // -ot groups are separated by ',', an empty group being no override.
        _ if k.name == "tensor_buft_overrides" => raw
            .split(',')
            .map(|g| toml::Value::String(if g.is_empty() { "none" } else { g }.into()))
            .collect(),
        _ => raw
            .split(',')
            .map(|v| match v.parse::<i64>() {
                Ok(n) => toml::Value::Integer(n),
                Err(_) => toml::Value::String(v.to_string()),
            })
            .collect(),
    };
    items.iter().map(|x| k.value(x).map_err(bad)).collect()
}

/// Reads llama-bench's arguments (and tpsbench's `--rounds`, `--print-config`,
/// `--dry-run`).
pub fn parse(args: &[String]) -> Result<BenchArgs, BenchArgError> {
    let mut b = BenchArgs {
        output: "md".into(),
        ..Default::default()
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| BenchArgError::NoValue(arg.clone()))
        };
        match arg.as_str() {
            "-m" | "--model" => b.models.extend(value()?.split(',').map(String::from)),
            "-r" | "--repetitions" => {
                let v = value()?;
                let n = v.parse::<u32>().ok().filter(|n| (1..=100_000).contains(n));
                let why = "the repetitions are a number from 1".into();
                b.repetitions = Some(n.ok_or_else(|| BenchArgError::Value(arg.clone(), v, why))?);
            }
            "-o" | "--output" => {
                let v = value()?;
                if !["md", "json", "jsonl", "csv"].contains(&v.as_str()) {
                    let why = "tpsbench writes md, json, jsonl or csv".into();
                    return Err(BenchArgError::Value(arg.clone(), v, why));
                }
                b.output = v;
            }
            "--rounds" => b.rounds = Some(value()?),
            "-v" | "--verbose" => b.verbose = true,
            "--no-warmup" => b.no_warmup = true,
            // tpsbench always shows its progress.
            "--progress" => {}
            "--print-config" => b.print_config = true,
            "--dry-run" => b.dry_run = true,
            a => match knob_of(a) {
                Some(k) => {
                    let vs = values(k, a, &value()?)?;
                    match b.sweep.iter_mut().find(|(n, _)| n == k.name) {
                        Some((_, old)) => old.extend(vs),
                        None => b.sweep.push((k.name.to_string(), vs)),
                    }
                }
                None => return Err(lacks(a)),
            },
        }
    }
    if b.models.is_empty() {
        return Err(BenchArgError::NoModel);
    }
    Ok(b)
}

fn lacks(arg: &str) -> BenchArgError {
    match LACKS
        .iter()
        .find(|(flags, _)| flags.split(' ').any(|f| f == arg))
    {
        Some((_, hint)) => BenchArgError::Lacks(arg.to_string(), hint),
        None => BenchArgError::Unknown(arg.to_string()),
    }
}

impl BenchArgs {
    /// The models.toml these arguments stand for. Model paths are written as given, or
    /// made absolute against `cwd` (a file written elsewhere than the current directory).
    pub fn to_toml(&self, cwd: Option<&Path>) -> String {
        let mut s = String::from("[sweep]\n");
        for (name, vs) in &self.sweep {
            let list: Vec<String> = vs.iter().map(toml_value).collect();
            s.push_str(&format!("{name} = [{}]\n", list.join(", ")));
        }
        if let Some(r) = self.repetitions {
            s.push_str(&format!("repetitions = {r}\n"));
        }
        if self.no_warmup {
            s.push_str("warmup = 0\n");
        }
        let rounds = self.rounds.as_deref().unwrap_or("3");
        match rounds.parse::<u32>() {
            Ok(n) => s.push_str(&format!("rounds = {n}\n")),
            Err(_) => s.push_str(&format!("rounds = {}\n", toml::Value::from(rounds))),
        }
        let mut names: Vec<String> = Vec::new();
        for m in &self.models {
            let stem = Path::new(m)
                .file_stem()
                .map_or("model".into(), |f| f.to_string_lossy().into_owned());
            let mut name = stem.clone();
            for n in 2.. {
                if !names.contains(&name) {
                    break;
                }
                name = format!("{stem}-{n}");
            }
            let path = match cwd {
                Some(d) if Path::new(m).is_relative() => d.join(m).display().to_string(),
                _ => m.clone(),
            };
            let (name_v, path) = (toml::Value::from(name.as_str()), toml::Value::from(path));
            s.push_str(&format!("\n[[model]]\nname = {name_v}\npath = {path}\n"));
            names.push(name);
        }
        s
    }
}

fn toml_value(v: &KnobValue) -> String {
    toml::Value::try_from(v).map_or_else(|_| String::new(), |x| x.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn llama_bench_ranges_expand_as_llama_bench_expands_them() {
        assert_eq!(int_range("1,2,4", false).unwrap(), vec![1, 2, 4]);
        assert_eq!(int_range("8-32+8", false).unwrap(), vec![8, 16, 24, 32]);
        assert_eq!(int_range("1-16*2", false).unwrap(), vec![1, 2, 4, 8, 16]);
        assert_eq!(int_range("-1,0-2", true).unwrap(), vec![-1, 0, 1, 2]);
        assert!(int_range("-1", false).is_err());
        assert!(int_range("4-8*1", false).is_err());
    }

    #[test]
    fn a_llama_bench_line_becomes_the_models_toml_it_stands_for() {
        let b = parse(&args(
            "-m a.gguf -m b.gguf -p 512 -n 128 -ngl 99 -fa 0,1 --n-prompt 64 -ctk q8_0 -r 3",
        ))
        .unwrap();
        let t = b.to_toml(None);
        assert!(t.contains("n_prompt = [512, 64]\n"), "{t}");
        assert!(t.contains("flash_attn = [0, 1]\n"), "{t}");
        assert!(t.contains("type_k = [\"q8_0\"]\n"), "{t}");
        assert!(t.contains("repetitions = 3\nrounds = 3\n"), "{t}");
        assert!(t.contains("name = \"a\"\npath = \"a.gguf\""), "{t}");
        let c = super::super::parse(Path::new("bench.toml"), &t, 2).unwrap();
        assert_eq!(c.models.len(), 2);
        assert_eq!(c.settings.repetitions, 3);
    }

    #[test]
    fn values_and_flags_llama_bench_refuses_or_tpsbench_lacks_are_one_line_each() {
        let e = |s: &str| parse(&args(s)).unwrap_err().to_string();
        assert!(
            e("-m a -fa maybe").starts_with("bench: -fa maybe: "),
            "{}",
            e("-m a -fa maybe")
        );
        assert!(e("-m a -ub 0").contains("-ub 0"));
        assert!(
            e("-m a -pg 512,128").contains("-pg is a llama-bench option tpsbench does not have")
        );
        assert!(e("-m a --frobnicate 1").contains("unknown option --frobnicate"));
        assert!(e("-m a -o sql").contains("md, json, jsonl or csv"));
        assert!(e("-m a -r 0").contains("-r 0"));
        assert!(e("-m").contains("-m needs a value"));
        assert_eq!(parse(&args("-p 1")).unwrap_err(), BenchArgError::NoModel);
    }
}
