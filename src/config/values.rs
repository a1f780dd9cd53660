//! The value checks behind `models.toml`'s keys: scalars or lists, integer ranges, flash
//! attention and split-mode spellings, KV cache types. Each error says what was expected;
//! `config` adds the file, line and key.

use toml::Spanned;

use super::{ConfigError, Ctx, FlashAttn, Invalid, KV_TYPES, SplitMode};
use crate::util::units::short_number;

/// The last part of `p`, as ids and records name a file ("" when it has none).
pub(crate) fn file_name(p: &std::path::Path) -> String {
    p.file_name().unwrap_or_default().to_string_lossy().into()
}

/// `raw` trimmed, when it can name a folder: non-empty, without '/' or control characters.
pub(crate) fn folder_name(raw: &str, what: &str) -> Result<String, Invalid> {
    let name = raw.trim();
    if name.is_empty() || name.contains('/') || name.chars().any(char::is_control) {
        return Err(Invalid(format!(
            "a {what} name must be non-empty and contain no '/' or control characters"
        )));
    }
    Ok(name.to_string())
}

/// `v` with each value once, in the order given.
pub(crate) fn once_each<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    v.into_iter().fold(Vec::new(), |mut out, x| {
        if !out.contains(&x) {
            out.push(x);
        }
        out
    })
}

pub(crate) fn as_list(v: &toml::Value) -> Vec<&toml::Value> {
    match v {
        toml::Value::Array(a) => a.iter().collect(),
        other => vec![other],
    }
}

/// The elements of a value that is a scalar or a non-empty list.
pub(crate) fn items(v: &toml::Value) -> Result<Vec<&toml::Value>, Invalid> {
    let items = as_list(v);
    if items.is_empty() {
        return Err(Invalid("the list is empty: give at least one value".into()));
    }
    Ok(items)
}

/// A value that is a scalar or a list, with each element checked by `f`.
pub(crate) fn list<T, E: std::fmt::Display>(
    ctx: &Ctx,
    key: &str,
    v: &Spanned<toml::Value>,
    f: impl Fn(&toml::Value) -> Result<T, E>,
) -> Result<Vec<T>, ConfigError> {
    let items = items(v.get_ref()).map_err(|m| ctx.err(v.span(), key, m))?;
    let each = |x| f(x).map_err(|m| ctx.err(v.span(), key, m));
    items.into_iter().map(each).collect()
}

impl Ctx<'_> {
    /// [`list`] of `v`, or `default` when the key is absent.
    pub(crate) fn list_or<T, E: std::fmt::Display>(
        &self,
        key: &str,
        v: &Option<Spanned<toml::Value>>,
        default: Vec<T>,
        f: impl Fn(&toml::Value) -> Result<T, E>,
    ) -> Result<Vec<T>, ConfigError> {
        v.as_ref().map_or(Ok(default), |v| list(self, key, v, f))
    }

    /// A list of integers in `min..=max`, or `default` when the key is absent.
    pub(crate) fn int_list<T: TryFrom<i64>>(
        &self,
        key: &str,
        v: &Option<Spanned<toml::Value>>,
        (min, max): (i64, i64),
        default: Vec<T>,
    ) -> Result<Vec<T>, ConfigError> {
        self.list_or(key, v, default, |x| {
            let n = int_value(x, min, max)?;
            T::try_from(n).map_err(|_| Invalid(format!("{n} is out of range")))
        })
    }
}

pub(crate) fn scalar_int(
    ctx: &Ctx,
    key: &str,
    v: &Spanned<toml::Value>,
    min: i64,
    max: i64,
) -> Result<i64, ConfigError> {
    if matches!(v.get_ref(), toml::Value::Array(_)) {
        return Err(ctx.err(v.span(), key, "expected a single integer, not a list"));
    }
    int_value(v.get_ref(), min, max).map_err(|m| ctx.err(v.span(), key, m))
}

/// A number of rounds (`max_rounds` of `[sweep]` and `[tune]`, `[speculative] rounds`), `default`
/// when absent: the one range and rule that `--max-rounds` is held to too.
pub(crate) fn rounds(
    ctx: &Ctx,
    key: &str,
    v: &Option<Spanned<toml::Value>>,
    default: u32,
) -> Result<u32, ConfigError> {
    let Some(v) = v else { return Ok(default) };
    let n = scalar_int(ctx, key, v, i64::MIN, i64::MAX)?;
    if !super::MAX_ROUNDS.contains(&n) {
        let msg = format!("{n} is out of range: {}", super::MAX_ROUNDS_RULE);
        return Err(ctx.err(v.span(), key, &msg));
    }
    Ok(n as u32)
}

pub(crate) fn int_or(
    ctx: &Ctx,
    key: &str,
    v: &Option<Spanned<toml::Value>>,
    (min, max): (i64, i64),
    default: i64,
) -> Result<i64, ConfigError> {
    v.as_ref()
        .map_or(Ok(default), |v| scalar_int(ctx, key, v, min, max))
}

pub(crate) fn float_opt(
    ctx: &Ctx,
    key: &str,
    v: &Option<Spanned<toml::Value>>,
    min: f64,
    max: f64,
) -> Result<Option<f64>, ConfigError> {
    v.as_ref()
        .map(|v| scalar_float(ctx, key, v, min, max))
        .transpose()
}

pub(crate) fn scalar_float(
    ctx: &Ctx,
    key: &str,
    v: &Spanned<toml::Value>,
    min: f64,
    max: f64,
) -> Result<f64, ConfigError> {
    let err = |m| ctx.err(v.span(), key, m);
    let x = match v.get_ref() {
        toml::Value::Float(f) => *f,
        toml::Value::Integer(i) => *i as f64,
        other => return Err(err(Invalid::expected("a number", other))),
    };
    if !(min..=max).contains(&x) {
        // Short figures: `1e300` is not written out as 301 digits.
        let [x, min, max] = [x, min, max].map(short_number);
        let msg = format!("{x} is out of range: must be between {min} and {max}");
        return Err(err(Invalid(msg)));
    }
    Ok(x)
}

pub(crate) fn int_value(x: &toml::Value, min: i64, max: i64) -> Result<i64, Invalid> {
    let n = x
        .as_integer()
        .ok_or_else(|| Invalid::expected("an integer", x))?;
    if !(min..=max).contains(&n) {
        let msg = format!("{n} is out of range: must be between {min} and {max}");
        return Err(Invalid(msg));
    }
    Ok(n)
}

pub(crate) fn flash_attn(x: &toml::Value) -> Result<FlashAttn, Invalid> {
    match x {
        toml::Value::Boolean(b) => Ok(FlashAttn::from_i32(i64::from(*b))),
        toml::Value::Integer(n @ -1..=1) => Ok(FlashAttn::from_i32(*n)),
        toml::Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(FlashAttn::Auto),
            "on" | "1" | "true" => Ok(FlashAttn::On),
            "off" | "0" | "false" => Ok(FlashAttn::Off),
            _ => Err(Invalid(format!(
                "{s:?} is not a flash attention policy: use \"auto\", \"on\" or \"off\""
            ))),
        },
        other => Err(Invalid::expected(
            r#""auto", "on", "off" or a boolean"#,
            other,
        )),
    }
}

pub(crate) fn split_mode(x: &toml::Value) -> Result<SplitMode, Invalid> {
    let choices = "\"none\", \"layer\", \"row\" or \"tensor\"";
    let s = x.as_str().ok_or_else(|| Invalid::expected(choices, x))?;
    SplitMode::parse(&s.to_ascii_lowercase())
        .ok_or_else(|| Invalid(format!("{s:?} is not a split mode: use {choices}")))
}

/// A boolean, also written 0/1 as llama-bench's `-nkvo 0,1`.
pub(crate) fn boolean(x: &toml::Value) -> Result<bool, Invalid> {
    match x {
        toml::Value::Boolean(b) => Ok(*b),
        toml::Value::Integer(0) => Ok(false),
        toml::Value::Integer(1) => Ok(true),
        other => Err(Invalid(format!(
            "expected true or false (or 0/1), got {}",
            match other {
                toml::Value::Integer(n) => n.to_string(),
                o => o.type_str().to_string(),
            }
        ))),
    }
}

pub(crate) fn kv_type(x: &toml::Value) -> Result<String, Invalid> {
    let s = x
        .as_str()
        .ok_or_else(|| Invalid::expected("a type name such as \"f16\"", x))?;
    let s = s.to_ascii_lowercase();
    if !KV_TYPES.contains(&s.as_str()) {
        let types = KV_TYPES.join(", ");
        let msg = format!("unknown KV cache type {s:?}: use one of {types}");
        return Err(Invalid(msg));
    }
    Ok(s)
}
