//! Result files on disk: unique names, atomic writes, reading back. A run in progress
//! also keeps a journal beside its file (`journal.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::record::{RecordError, RunInfo, RunRecord, SCHEMA_VERSION};

/// Reserves a new, unique result file in `dir` (created if missing), named after the run's
/// start time and host: `20261130T025500Z-host.json`. The name is claimed by creating its
/// journal with `create_new`, so two runs started in the same second never share a file,
/// and the result file itself appears only with its first complete write: a run that dies
/// first leaves no empty `.json` behind.
pub fn new_result_path(dir: &Path, run: &RunInfo) -> Result<PathBuf, RecordError> {
    // create_dir_all on a file says "File exists (os error 17)": say what is wrong instead.
    if dir.exists() && !dir.is_dir() {
        return Err(RecordError::ResultsPathIsFile {
            dir: dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| RecordError::CreateDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let stamp: String = run
        .started_at
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let host: String = run
        .system
        .hostname
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    for n in 1..1000 {
        let suffix = if n == 1 {
            String::new()
        } else {
            format!("-{n}")
        };
        let p = dir.join(format!("{stamp}-{host}{suffix}.json"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(journal_path(&p))
        {
            // A finished run of the same second holds the name without a journal.
            Ok(_) if p.exists() => {
                let _ = std::fs::remove_file(journal_path(&p));
                continue;
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => {
                return Err(RecordError::Claim {
                    dir: dir.to_path_buf(),
                    source,
                });
            }
        }
    }
    Err(RecordError::NamesTaken {
        dir: dir.to_path_buf(),
    })
}

/// The result file's bytes: pretty JSON and a final newline (the `json` export is the same).
pub(crate) fn to_json_bytes(run: &RunRecord) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(run).expect("records always serialize");
    v.push(b'\n');
    v
}

/// Writes the run as JSON to a temporary file beside `path`, flushes it to disk, then
/// renames it over `path`: a reader (or a crash) sees the old file or the new, never half.
/// The complete file supersedes the journal beside it, which goes.
pub fn write_atomic(path: &Path, run: &RunRecord) -> Result<(), RecordError> {
    let bytes = to_json_bytes(run);
    let tmp = path.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        match std::fs::remove_file(journal_path(path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    };
    write().map_err(|source| RecordError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The journal of the result file `path`: `NAME.json.journal`, which no reader of result
/// files (`*.json`) picks up.
pub fn journal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".journal");
    PathBuf::from(name)
}

/// Reads a result file, refusing other schema versions with a clear message.
pub fn read(path: &Path) -> Result<RunRecord, RecordError> {
    let path_buf = || path.to_path_buf();
    let text = std::fs::read_to_string(path).map_err(|source| RecordError::Read {
        path: path_buf(),
        source,
    })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| RecordError::NotJson {
            path: path_buf(),
            source,
        })?;
    match v.get("schema_version").and_then(|x| x.as_u64()) {
        // Version 2 only added optional fields (serving, stats, resources, quality...), and
        // version 3 the test kind, which is inferred for older files (below).
        Some(x) if (1..=u64::from(SCHEMA_VERSION)).contains(&x) => {}
        Some(version) => {
            return Err(RecordError::SchemaVersion {
                path: path_buf(),
                version,
            });
        }
        None => return Err(RecordError::NoSchemaVersion { path: path_buf() }),
    }
    let mut v = v;
    fill_missing_kinds(&mut v);
    serde_json::from_value(v).map_err(|source| RecordError::Schema {
        path: path_buf(),
        source,
    })
}

/// Versions 1 and 2 did not record a test's kind: infer it, so every record read has one.
fn fill_missing_kinds(v: &mut serde_json::Value) {
    let Some(tests) = v.get_mut("tests").and_then(|t| t.as_array_mut()) else {
        return;
    };
    for t in tests {
        if t.get("kind").is_none() {
            let kind = crate::record::infer_kind(t);
            if let Some(o) = t.as_object_mut() {
                o.insert("kind".into(), serde_json::json!(kind));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn paths_are_unique_and_writes_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let run = fixtures::run();
        let a = new_result_path(dir.path(), &run.run).unwrap();
        let b = new_result_path(dir.path(), &run.run).unwrap();
        assert_ne!(a, b);
        write_atomic(&a, &run).unwrap();
        assert_eq!(read(&a).unwrap(), run);
        assert!(!a.with_extension("json.tmp").exists());
    }

    #[test]
    fn other_schema_versions_and_garbage_are_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        std::fs::write(&p, r#"{"schema_version": 99}"#).unwrap();
        assert!(
            read(&p)
                .unwrap_err()
                .to_string()
                .contains("schema_version 99 is not supported")
        );
        std::fs::write(&p, "garbage").unwrap();
        let e = read(&p).unwrap_err();
        assert!(matches!(e, RecordError::NotJson { .. }), "{e}");
        assert!(e.to_string().contains("not valid JSON"));
    }

    #[test]
    fn an_unwritable_directory_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let e = new_result_path(&file.join("sub"), &fixtures::run().run)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot create the results directory"), "{e}");
    }

    #[test]
    fn a_results_path_that_is_a_file_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("results");
        std::fs::write(&file, "").unwrap();
        let e = new_result_path(&file, &fixtures::run().run)
            .unwrap_err()
            .to_string();
        assert_eq!(e, format!("results path is a file: {}", file.display()));
        assert!(!e.contains("os error"), "{e}");
    }
}
