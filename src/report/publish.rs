//! `tpsbench publish FILE... [--as LABEL] [--keep-host]`: validates each file as the
//! leaderboard must trust it (schema, `record::verify`, plausibility), redacts it
//! (`record::redact`) and writes `<started_at>-<label>.json`; nothing is written unless every
//! file passes (docs/leaderboard.md).

use std::path::{Path, PathBuf};

use super::leaderboard::load::plausible::{self, Flag};
use crate::record::{RunRecord, redact, results};

#[derive(clap::Args, Debug)]
pub struct Options {
    /// The result files to publish.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The machine's name on the board, in place of its host name (default: host- and 8 hex
    /// digits of the host name's SHA-256).
    #[arg(long = "as", value_name = "LABEL")]
    pub label: Option<String>,
    /// Keep the host name (it is replaced by the label otherwise).
    #[arg(long)]
    pub keep_host: bool,
    /// The published set to write into.
    #[arg(long, default_value = "results/published")]
    pub out_dir: PathBuf,
}

/// Why a file is not published: one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error(transparent)]
    Record(#[from] crate::record::error::RecordError),
    #[error("{0}")]
    Refused(String),
}

pub struct Prepared {
    pub from: PathBuf,
    pub to: PathBuf,
    pub bytes: Vec<u8>,
}

/// A label must name a machine in a file name and a heading: letters, digits, '.', '_', '-'.
fn check_label(l: &str) -> Result<(), PublishError> {
    let ok = !l.is_empty()
        && l.len() <= 64
        && l.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !l.starts_with(['.', '-']);
    if ok {
        Ok(())
    } else {
        Err(PublishError::Refused(format!(
            "--as {l:?}: a label is 1 to 64 letters, digits, '.', '_' or '-' (e.g. --as epyc-2c)"
        )))
    }
}

/// The stable file name: the run's start, compact, and the label.
fn file_name(run: &RunRecord, label: &str) -> String {
    let mut started = run.run.started_at.clone();
    started.retain(|c| c.is_ascii_alphanumeric());
    format!("{started}-{label}.json")
}

/// Validates and redacts one file; an error is one line naming the file.
pub fn prepare(path: &Path, o: &Options) -> Result<Prepared, PublishError> {
    let shown = path.display();
    let record = crate::record::verify::read(path)?;
    let mut flags = plausible::run_flags(&record.run);
    for t in &record.tests {
        let of_test = |f| match f {
            Flag::Roofline(s) => Flag::Roofline(format!("test {}: {s}", t.id)),
            other => other,
        };
        flags.extend(
            plausible::entry_flags(t, record.model_of(t))
                .into_iter()
                .map(of_test),
        );
    }
    if let Some(f) = flags.iter().min() {
        return Err(PublishError::Refused(format!(
            "{shown}: not publishable ({}): {}",
            f.badge(),
            f.detail()
        )));
    }
    let host = record.run.system.hostname.clone();
    let label = match (&o.label, o.keep_host) {
        (Some(l), _) => l.clone(),
        (None, true) => crate::util::file_safe(&host),
        (None, false) => format!(
            "host-{}",
            &crate::util::hash::sha256_hex(host.as_bytes())[..8]
        ),
    };
    check_label(&label)?;
    if !o.keep_host && !host.is_empty() && label == host {
        return Err(PublishError::Refused(format!(
            "{shown}: --as {label:?} is the host name itself: choose another label, or pass --keep-host to publish it"
        )));
    }
    let redacted = redact::redact_record(&record, &label, o.keep_host)
        .map_err(|e| PublishError::Refused(format!("{shown}: {e}")))?;
    let bytes = results::to_json_bytes(&redacted);
    // What is written must pass what `leaderboard --check` asks of the published set.
    let exposed = redact::exposed_in_json(&bytes)
        .map_err(|e| PublishError::Refused(format!("{shown}: {e}")))?;
    if let Some(what) = exposed.first() {
        return Err(PublishError::Refused(format!(
            "{shown}: still exposes {what} after redaction"
        )));
    }
    Ok(Prepared {
        from: path.to_path_buf(),
        to: o.out_dir.join(file_name(&redacted, &label)),
        bytes,
    })
}

/// The `publish` command: every file checked, then all written; returns the exit code.
pub fn command(o: &Options) -> i32 {
    let mut ready = Vec::new();
    for f in &o.files {
        match prepare(f, o) {
            Ok(p) => ready.push(p),
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        }
    }
    if let Err(e) = std::fs::create_dir_all(&o.out_dir) {
        eprintln!("error: cannot create {}: {e}", o.out_dir.display());
        return 2;
    }
    for p in &ready {
        if let Err(e) = super::write_atomic(&p.to, &p.bytes) {
            eprintln!("error: cannot write {}: {e}", p.to.display());
            return 2;
        }
        eprintln!("published {} as {}", p.from.display(), p.to.display());
    }
    eprintln!(
        "rebuild the page: tpsbench leaderboard {0} --out-dir {0}",
        o.out_dir.display()
    );
    0
}

/// `leaderboard --check`'s privacy rule: the first file under `paths` exposing an absolute
/// path or a host name; test fixtures are made-up machines and are not asked.
pub fn first_exposed(paths: &[PathBuf]) -> Option<String> {
    // The paths `leaderboard::load` has read: a missing one has already failed there.
    let files = super::leaderboard::load::collect_paths(paths).unwrap_or_default();
    for f in files {
        // Files that do not load are the loader's to report.
        let Ok(rec) = crate::record::results::read(&f) else {
            continue;
        };
        let flags = plausible::run_flags(&rec.run);
        if flags.iter().any(|x| matches!(x, Flag::Fixture(_))) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&f) else {
            continue;
        };
        let Ok(exposed) = redact::exposed_in_json(&bytes) else {
            continue;
        };
        if let Some(what) = exposed.first() {
            return Some(format!(
                "{} exposes {what}: publish it with tpsbench publish (docs/leaderboard.md)",
                f.display()
            ));
        }
    }
    None
}
