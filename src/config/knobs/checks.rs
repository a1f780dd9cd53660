//! The value checks of the text parameters, and what the engine and the runner read of
//! their canonical values.

use crate::config::Invalid;

pub(super) fn cpu_mask(s: &str) -> Result<String, Invalid> {
    let t = s.trim().to_ascii_lowercase();
    let hex = t.strip_prefix("0x").unwrap_or(&t);
    if hex.is_empty() || hex.len() > 128 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        let msg = format!("{s:?} is not a CPU mask: write it in hex, e.g. \"0xff\"");
        return Err(Invalid(msg));
    }
    Ok(format!("0x{hex}"))
}

/// "auto", "none", or device names joined by '/', as llama-bench's `-dev`. Whether each
/// device exists is checked against the engine's list before any test.
pub(super) fn devices(s: &str) -> Result<String, Invalid> {
    let t = s.trim();
    if t == "auto" || t == "none" {
        return Ok(t.to_string());
    }
    let names: Vec<&str> = t.split('/').map(str::trim).collect();
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "_-.:".contains(c);
    let bad = |n: &&str| n.is_empty() || n.len() > 64 || !n.chars().all(ok_char);
    if names.iter().any(bad) {
        return Err(Invalid(format!(
            "{s:?} is not a device list: name devices joined by '/', e.g. \"Vulkan0/CPU\", \
             or \"auto\" or \"none\""
        )));
    }
    Ok(names.join("/"))
}

/// Proportions joined by '/', non-negative, as llama-bench's `-ts`; written with two
/// decimals as llama-bench prints them. Its length is checked against the devices before
/// any test.
pub(super) fn tensor_split(s: &str) -> Result<String, Invalid> {
    let parts: Vec<&str> = s.split(['/', ',']).map(str::trim).collect();
    if parts.len() > 128 {
        return Err(Invalid(format!("{s:?}: at most 128 proportions")));
    }
    let mut out = Vec::new();
    for p in &parts {
        let x: f64 = p.parse().map_err(|_| {
            Invalid(format!(
                "{s:?} is not a tensor split: write proportions joined by '/', e.g. \"3/1\""
            ))
        })?;
        if !x.is_finite() || x < 0.0 {
            return Err(Invalid(format!(
                "{s:?}: a tensor split's proportions must be 0 or more, got {p}"
            )));
        }
        out.push(format!("{x:.2}"));
    }
    Ok(out.join("/"))
}

/// `pattern=buffer;...` as llama-bench's `-ot`, or "none". Each pattern must be a regular
/// expression (llama.cpp matches it with std::regex_search); each buffer type is checked
/// against the engine's list before any test.
pub(super) fn overrides(s: &str) -> Result<String, Invalid> {
    let t = s.trim();
    if t == "none" {
        return Ok(t.to_string());
    }
    let mut out = Vec::new();
    for part in t.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((pattern, buft)) = part.rsplit_once('=') else {
            return Err(Invalid(format!(
                "{part:?} is not an override: write pattern=buffer, e.g. \
                 \".ffn_.*_exps.=CPU\""
            )));
        };
        let (pattern, buft) = (pattern.trim(), buft.trim());
        if pattern.is_empty() || buft.is_empty() {
            return Err(Invalid(format!(
                "{part:?}: an override needs both a pattern and a buffer type"
            )));
        }
        check_regex(pattern)?;
        out.push(format!("{pattern}={buft}"));
    }
    if out.is_empty() {
        return Err(Invalid(
            "no override given: write pattern=buffer;... or \"none\"".into(),
        ));
    }
    Ok(out.join(";"))
}

/// Refuses a pattern that is not a regular expression, in one line.
pub fn check_regex(pattern: &str) -> Result<(), Invalid> {
    let Err(e) = fancy_regex::Regex::new(pattern) else {
        return Ok(());
    };
    let e = e.to_string();
    let why = e.lines().next().unwrap_or("invalid");
    Err(Invalid(format!(
        "{pattern:?} is not a valid regular expression: {why}"
    )))
}

/// The (pattern, buffer type) pairs of a canonical `tensor_buft_overrides` value.
pub fn override_pairs(v: &str) -> Vec<(String, String)> {
    if v == "none" {
        return Vec::new();
    }
    v.split(';')
        .filter_map(|p| p.rsplit_once('='))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Whether `pattern` matches `name` as llama.cpp's std::regex_search does (anywhere).
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let re = fancy_regex::Regex::new(pattern);
    re.is_ok_and(|r| matches!(r.is_match(name), Ok(true)))
}

/// The patterns llama-bench builds for `n_cpu_moe = n`: the expert tensors of layers 0 to
/// n-1 kept in the CPU buffer type.
pub fn cpu_moe_patterns(n: i64) -> Vec<String> {
    (0..n.max(0))
        .map(|i| format!("blk\\.{i}\\.ffn_(up|down|gate|gate_up)_(ch|)exps"))
        .collect()
}
