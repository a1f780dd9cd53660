//! `[[ladder]]` tables of models.toml: one base GGUF, the quantization types to build from
//! it, and how to measure their quality (docs/configuration.md shows one). Errors name file,
//! line and key, as config.rs does.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::config::quant_types::{QuantType, most_precise};
use crate::config::recipe::{self, RecipeVariant};
use crate::config::{self, Axes, ConfigError, Ctx, Invalid, RawSweep};

/// The evaluation text when none is given, beside the configuration: ShareGPT's
/// conversations, real text (`scripts/setup --dataset sharegpt` fetches it).
pub const DEFAULT_TEXT: &str = "datasets/ShareGPT_V3_unfiltered_cleaned_split.json";

const LADDER_NAME: (&str, &str) = ("ladder", "duplicate name");

#[derive(Debug, Clone, PartialEq)]
pub struct EvalSpec {
    /// A text file, or a ShareGPT file whose conversations are the text.
    pub text: PathBuf,
    /// `text` was named in the configuration, not defaulted.
    pub text_given: bool,
    /// Tokens per chunk (llama-perplexity's `-c`).
    pub n_ctx: u32,
    /// Chunks evaluated (llama-perplexity's `--chunks`).
    pub n_chunks: u32,
    /// Threads for the quality passes (default: physical cores). One
    /// thread avoids barrier spinning when the machine is oversubscribed.
    pub n_threads: Option<u32>,
}

/// A variant given as a GGUF file (a publisher's download), measured where it lies.
#[derive(Debug, Clone, PartialEq)]
pub struct FileVariant {
    /// Its model name: the one given, else the file name without `.gguf`.
    pub name: String,
    pub path: PathBuf,
}

/// What every variant of a ladder is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RefSpec {
    /// The variant of this type, built from `base`.
    Type(QuantType),
    /// The file variant at this index of `files`.
    File(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ladder {
    pub name: String,
    /// The file the types are quantized from: the reference file when none is given.
    pub base: PathBuf,
    pub types: Vec<QuantType>,
    /// The variants built by a recipe (`types`' tables, docs/configuration.md), in order.
    pub recipes: Vec<RecipeVariant>,
    /// The variants given as files, the reference file first when it is one.
    pub files: Vec<FileVariant>,
    pub reference: RefSpec,
    /// A base file llama-perplexity wrote (`--kl-divergence-base`): the reference's rows
    /// and the evaluation tokens, read instead of a reference pass.
    pub reference_logits: Option<PathBuf>,
    pub tokenizer: Option<PathBuf>,
    pub cache_dir: PathBuf,
    pub eval: EvalSpec,
    pub axes: Axes,
}

impl Ladder {
    /// The model name of one variant: `SmolLM2-135M-Q4_K_M`.
    pub fn variant_name(&self, t: QuantType) -> String {
        format!("{}-{}", self.name, t.name)
    }

    pub fn reference_name(&self) -> String {
        match self.reference {
            RefSpec::Type(t) => self.variant_name(t),
            RefSpec::File(i) => self.files[i].name.clone(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEval {
    text: Option<Spanned<String>>,
    ctx: Option<Spanned<toml::Value>>,
    chunks: Option<Spanned<toml::Value>>,
    threads: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLadder {
    name: Spanned<String>,
    base: Option<Spanned<String>>,
    types: Option<Spanned<toml::Value>>,
    files: Option<Spanned<toml::Value>>,
    reference: Option<Spanned<String>>,
    reference_logits: Option<Spanned<String>>,
    tokenizer: Option<Spanned<String>>,
    cache_dir: Option<Spanned<String>>,
    eval: Option<RawEval>,
    sweep: Option<Spanned<RawSweep>>,
}

/// The `[[ladder]]` tables of a configuration (none when it has none); `defaults` are the
/// `[sweep]` axes, which a `[ladder.sweep]` overrides. Called by `config::parse`.
pub(crate) fn parse(
    ctx: &Ctx,
    raw: Vec<RawLadder>,
    defaults: &Axes,
) -> Result<Vec<Ladder>, ConfigError> {
    let dir = ctx.dir();
    let mut ladders: Vec<Ladder> = Vec::new();
    for (i, l) in raw.into_iter().enumerate() {
        let key = |k: &str| format!("ladder[{i}].{k}");
        let taken = ladders.iter().map(|x| x.name.as_str());
        let name = config::unique_name(ctx, &key("name"), &l.name, LADDER_NAME, taken)?;
        let (types, recipes) = types_list(ctx, &key("types"), &l.types, dir)?;
        let mut files = files_list(ctx, &key("files"), &l.files, dir)?;
        let (reference, ref_file) = reference(ctx, &key, &l, &types, &mut files, dir)?;
        let base = match (&l.base, ref_file) {
            (Some(b), _) => ctx.path(&key("base"), b, "the base path is empty")?,
            (None, Some(f)) => f,
            (None, None) => {
                let msg =
                    "give `base`, the file the types are quantized from, or a `reference` file";
                return Err(ctx.err(l.name.span(), &key("base"), msg));
            }
        };
        let eval = eval_spec(ctx, &format!("ladder[{i}].eval"), l.eval)?;
        let mut axes = defaults.clone();
        if let Some(sweep) = l.sweep {
            // As a model's own sweep: axes only, run settings refused.
            config::model_sweep(ctx, &format!("ladder[{i}]"), sweep, &mut axes)?;
        }
        ladders.push(Ladder {
            name,
            base,
            types,
            recipes,
            files,
            reference,
            reference_logits: l.reference_logits.map(|t| dir.join(t.get_ref())),
            tokenizer: l.tokenizer.map(|t| dir.join(t.get_ref())),
            cache_dir: dir.join(l.cache_dir.as_ref().map_or("models/cache", |c| c.get_ref())),
            eval,
            axes,
        });
    }
    Ok(ladders)
}

/// The ladder's reference, and its file when it is one: a type listed in `types` (default:
/// the most precise), or a GGUF file (a name ending in `.gguf`), put first in `files`.
fn reference(
    ctx: &Ctx,
    key: &dyn Fn(&str) -> String,
    l: &RawLadder,
    types: &[QuantType],
    files: &mut Vec<FileVariant>,
    dir: &Path,
) -> Result<(RefSpec, Option<PathBuf>), ConfigError> {
    let Some(r) = &l.reference else {
        let msg = "give `reference`: the type or file the others are compared with";
        let t =
            most_precise(types).ok_or_else(|| ctx.err(l.name.span(), &key("reference"), msg))?;
        return Ok((RefSpec::Type(t), None));
    };
    if !r.get_ref().to_ascii_lowercase().ends_with(".gguf") {
        let t =
            QuantType::parse(r.get_ref()).map_err(|m| ctx.err(r.span(), &key("reference"), m))?;
        if !types.contains(&t) {
            let msg = format!("the reference {} is not in `types`", t.name);
            return Err(ctx.err(r.span(), &key("reference"), msg));
        }
        return Ok((RefSpec::Type(t), None));
    }
    let path = dir.join(r.get_ref());
    let i = files
        .iter()
        .position(|f| f.path == path)
        .unwrap_or_else(|| {
            let (name, path) = (file_stem(&path), path.clone());
            files.insert(0, FileVariant { name, path });
            0
        });
    if files.iter().filter(|f| f.name == files[i].name).count() > 1 {
        let msg = format!(
            "the name {} is taken: list the file in `files` with a name",
            files[i].name
        );
        return Err(ctx.err(r.span(), &key("reference"), msg));
    }
    Ok((RefSpec::File(i), Some(path)))
}

fn file_stem(p: &Path) -> String {
    let name = config::values::file_name(p);
    match name.len().checked_sub(5) {
        Some(n) if name.to_ascii_lowercase().ends_with(".gguf") => name[..n].to_string(),
        _ => name,
    }
}

/// `files`: paths, or `{ name, path }` tables; names unique; none without the key.
fn files_list(
    ctx: &Ctx,
    key: &str,
    v: &Option<Spanned<toml::Value>>,
    dir: &Path,
) -> Result<Vec<FileVariant>, ConfigError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let err = |m: String| ctx.err(v.span(), key, m);
    let mut out: Vec<FileVariant> = Vec::new();
    for x in config::values::as_list(v.get_ref()) {
        let (name, path) = match x {
            toml::Value::String(p) => (None, p.as_str()),
            toml::Value::Table(t) => {
                let known = t.keys().all(|k| k == "name" || k == "path");
                let name = t
                    .get("name")
                    .map(|n| n.as_str().ok_or("`name` must be a string"));
                match (known, t.get("path").and_then(toml::Value::as_str)) {
                    (true, Some(p)) => (Some(name.transpose().map_err(|m| err(m.into()))?), p),
                    _ => {
                        let msg = "a file is a path or { name = \"…\", path = \"….gguf\" }";
                        return Err(err(msg.into()));
                    }
                }
            }
            other => return Err(err(Invalid::expected("a GGUF path", other).0)),
        };
        if path.trim().is_empty() {
            return Err(err("a file path is empty".into()));
        }
        let path = dir.join(path);
        let name = name
            .flatten()
            .map_or_else(|| file_stem(&path), str::to_string);
        if name.is_empty() || name.contains('/') || name.chars().any(char::is_control) {
            return Err(err(format!(
                "{name:?}: a name must be non-empty, without '/' or control characters"
            )));
        }
        if out.iter().any(|f| f.name == name || f.path == path) {
            return Err(err(format!("{name} is listed twice")));
        }
        out.push(FileVariant { name, path });
    }
    Ok(out)
}

fn types_list(
    ctx: &Ctx,
    key: &str,
    v: &Option<Spanned<toml::Value>>,
    dir: &Path,
) -> Result<(Vec<QuantType>, Vec<RecipeVariant>), ConfigError> {
    let Some(v) = v else {
        return Ok(Default::default());
    };
    let items = config::values::items(v.get_ref())
        .map_err(|_| ctx.err(v.span(), key, "the list is empty: give at least one type"))?;
    let (mut out, mut recipes) = (Vec::<QuantType>::new(), Vec::<RecipeVariant>::new());
    for x in items {
        let name = if x.is_table() {
            let r = recipe::parse_variant(x, dir).map_err(|m| ctx.err(v.span(), key, m))?;
            recipes.push(r);
            recipes[recipes.len() - 1].name.clone()
        } else {
            let what = "a type name such as \"Q4_K_M\" or a recipe table";
            let t = x.as_str().ok_or_else(|| Invalid::expected(what, x));
            let t = t
                .and_then(QuantType::parse)
                .map_err(|m| ctx.err(v.span(), key, m))?;
            out.push(t);
            t.name.to_string()
        };
        let taken = out.iter().map(|t| t.name);
        let taken = taken.chain(recipes.iter().map(|r| r.name.as_str()));
        if taken.filter(|n| *n == name).count() > 1 {
            return Err(ctx.err(v.span(), key, format!("{name} is listed twice")));
        }
    }
    Ok((out, recipes))
}

fn eval_spec(ctx: &Ctx, table: &str, raw: Option<RawEval>) -> Result<EvalSpec, ConfigError> {
    let raw = raw.unwrap_or_default();
    let k = |name: &str| format!("{table}.{name}");
    let text = (raw.text.as_ref())
        .map(|t| ctx.path(&k("text"), t, "the text path is empty"))
        .transpose()?;
    let int = |name: &str, v: &Option<Spanned<toml::Value>>, range, default| {
        config::values::int_or(ctx, &k(name), v, range, default).map(|n| n as u32)
    };
    Ok(EvalSpec {
        text_given: text.is_some(),
        text: text.unwrap_or_else(|| ctx.dir().join(DEFAULT_TEXT)),
        // llama-perplexity scores the second half of each chunk: at least a few tokens.
        n_ctx: int("ctx", &raw.ctx, (16, 1 << 16), 512)?,
        n_chunks: int("chunks", &raw.chunks, (1, 100_000), 4)?,
        n_threads: (raw.threads.is_some())
            .then(|| int("threads", &raw.threads, (1, 4096), 0))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(src: &str) -> Result<config::Config, ConfigError> {
        config::parse(Path::new("dir/models.toml"), src, 2)
    }

    const LADDER: &str = r#"
[sweep]
repetitions = 3

[[ladder]]
name = "smol"
base = "base.gguf"
types = ["q8_0", "Q4_K_M", "F16", "Q2_K"]
"#;

    #[test]
    fn a_minimal_ladder_gets_defaults_and_the_most_precise_reference() {
        let c = parse_str(LADDER).unwrap();
        assert!(c.models.is_empty());
        assert_eq!(c.settings.repetitions, 3);
        let l = &c.ladders[0];
        assert_eq!(l.base, Path::new("dir/base.gguf"));
        let names: Vec<_> = l.types.iter().map(|t| t.name).collect();
        assert_eq!(names, ["Q8_0", "Q4_K_M", "F16", "Q2_K"]);
        assert_eq!(l.reference_name(), "smol-F16");
        assert_eq!(l.cache_dir, Path::new("dir/models/cache"));
        assert_eq!(l.eval.n_ctx, 512);
        assert_eq!(l.eval.n_chunks, 4);
        assert_eq!(l.eval.text, Path::new("dir").join(DEFAULT_TEXT));
        assert_eq!(l.variant_name(l.types[1]), "smol-Q4_K_M");
        assert_eq!(l.axes.n_threads, vec![2]);
    }

    #[test]
    fn eval_and_sweep_tables_are_read() {
        let src = format!(
            "{LADDER}reference = \"Q8_0\"\ntokenizer = \"tok.json\"\n[ladder.eval]\ntext = \"e.txt\"\nctx = 256\nchunks = 2\nthreads = 1\n[ladder.sweep]\nn_gen = 16\n"
        );
        let c = parse_str(&src).unwrap();
        let l = &c.ladders[0];
        assert_eq!(l.reference_name(), "smol-Q8_0");
        assert_eq!(l.tokenizer.as_deref(), Some(Path::new("dir/tok.json")));
        assert_eq!(l.eval.text, Path::new("dir/e.txt"));
        assert_eq!((l.eval.n_ctx, l.eval.n_chunks), (256, 2));
        assert_eq!(l.eval.n_threads, Some(1));
        assert_eq!(l.axes.n_gen, vec![16]);
    }

    #[test]
    fn mistakes_name_file_line_and_key() {
        let e = parse_str(&LADDER.replace("\"Q2_K\"", "\"Q9\"")).unwrap_err();
        assert_eq!(e.line, Some(8), "{e}");
        assert_eq!(e.key.as_deref(), Some("ladder[0].types"));
        assert!(
            e.to_string()
                .starts_with("dir/models.toml:8: key `ladder[0].types`: unknown")
        );

        let e = parse_str(&LADDER.replace("\"Q2_K\"", "\"IQ2_XXS\"")).unwrap_err();
        assert!(e.message.contains("importance matrix"), "{e}");

        let e = parse_str(&format!("{LADDER}reference = \"Q6_K\"\n")).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("ladder[0].reference"));
        assert_eq!(e.line, Some(9));

        let e = parse_str(&format!("{LADDER}[ladder.eval]\nctx = 4\n")).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("ladder[0].eval.ctx"), "{e}");

        let e = parse_str(&format!("{LADDER}[ladder.eval]\nbogus = 1\n")).unwrap_err();
        assert!(e.message.contains("unknown field `bogus`"), "{e}");

        let e = parse_str(&LADDER.replace("\"F16\", ", "\"Q8_0\", ")).unwrap_err();
        assert!(e.message.contains("listed twice"), "{e}");

        let e = parse_str(&format!("{LADDER}[ladder.sweep]\nrepetitions = 2\n")).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("ladder[0].sweep.repetitions"), "{e}");
    }

    #[test]
    fn a_ladder_only_configuration_is_valid_and_one_without_any_test_is_not() {
        assert_eq!(parse_str(LADDER).unwrap().ladders.len(), 1);
        let e = parse_str("[sweep]\nn_prompt = [0]\nn_gen = [0]\n[[model]]\nname='m'\npath='m'\n")
            .unwrap_err();
        assert!(e.message.contains("nothing to measure"), "{e}");
    }

    #[test]
    fn ladder_names_are_unique() {
        let second = LADDER.split("[[ladder]]").nth(1).unwrap();
        let e = parse_str(&format!("{LADDER}[[ladder]]{second}")).unwrap_err();
        assert!(e.message.contains("duplicate name"), "{e}");
        assert_eq!(e.key.as_deref(), Some("ladder[1].name"));
    }

    #[test]
    fn files_are_variants_and_a_reference_file_is_the_base_by_default() {
        let src = "[[ladder]]\nname = \"g\"\nreference = \"bf16.gguf\"\ntypes = [\"Q4_0\"]\nfiles = [\"a/x-Q4_K_M.gguf\", { name = \"ud\", path = \"y.GGUF\" }]\n";
        let l = &parse_str(src).unwrap().ladders[0];
        let names: Vec<&str> = l.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["bf16", "x-Q4_K_M", "ud"]);
        assert_eq!(l.files[2].path, Path::new("dir/y.GGUF"));
        assert_eq!(l.reference, RefSpec::File(0));
        assert_eq!(l.reference_name(), "bf16");
        assert_eq!(l.base, Path::new("dir/bf16.gguf"));
    }

    #[test]
    fn file_lists_without_a_reference_or_with_bad_entries_are_refused() {
        let e = parse_str("[[ladder]]\nname = \"g\"\nfiles = [\"a.gguf\"]\n").unwrap_err();
        assert!(e.message.contains("give `reference`"), "{e}");
        let bad = |files: &str| {
            let src =
                format!("[[ladder]]\nname = \"g\"\nreference = \"r.gguf\"\nfiles = {files}\n");
            parse_str(&src).unwrap_err().message
        };
        assert!(bad("[\"a.gguf\", \"a.gguf\"]").contains("listed twice"));
        assert!(bad("[{ path = \"a.gguf\", kind = 1 }]").contains("a file is a path or"));
        assert!(bad("[3]").contains("expected a GGUF path"));
        let e = parse_str("[[ladder]]\nname = \"g\"\ntypes = [\"Q4_0\"]\n").unwrap_err();
        assert!(e.message.contains("give `base`"), "{e}");
    }
}
