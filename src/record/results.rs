//! Result files on disk: unique names, atomic writes, reading back. A run in progress
//! also keeps a journal beside its file (`journal.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;

use crate::record::{RecordError, RunInfo, RunRecord, SCHEMA_VERSION};

/// The `*.json` files directly in `dir`, sorted by name (result files are named by their
/// start time: oldest first).
pub fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    Ok(v)
}

/// Reserves a new result file in `dir`, `20261130T025500Z-host.json`, claimed by creating its
/// journal with `create_new` (two runs of one second never share a file); the `.json` itself
/// appears only with its first complete write.
pub fn new_result_path(dir: &Path, run: &RunInfo) -> Result<PathBuf, RecordError> {
    // create_dir_all on a file says "File exists (os error 17)": say what is wrong instead.
    if dir.exists() && !dir.is_dir() {
        return Err(RecordError::ResultsPathIsFile(dir.to_path_buf()));
    }
    std::fs::create_dir_all(dir)
        .map_err(RecordError::io("cannot create the results directory ", dir))?;
    let mut stamp = run.started_at.clone();
    stamp.retain(|c| c.is_ascii_alphanumeric());
    let host = crate::util::file_safe(&run.system.hostname);
    let claim = RecordError::io("cannot write to the results directory ", dir);
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
            Err(e) => return Err(claim(e)),
        }
    }
    Err(RecordError::NamesTaken(dir.to_path_buf()))
}

/// Pretty JSON and a final newline, as a result file is (the `json` export is the same as
/// what [`write_atomic`] writes).
pub(crate) fn to_json_bytes(value: &impl serde::Serialize) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(value).expect("records always serialize");
    v.push(b'\n');
    v
}

/// Writes the run to a temporary file beside `path`, flushed, then renamed over it (never
/// half a file), and removes the journal.
pub fn write_atomic(path: &Path, run: &RunRecord) -> Result<(), RecordError> {
    let tmp = path.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        write_synced(&std::fs::File::create(&tmp)?, run, true)?;
        std::fs::rename(&tmp, path)?;
        match std::fs::remove_file(journal_path(path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    };
    write().map_err(RecordError::io("cannot write the result file ", path))
}

/// `value` as JSON (`pretty` or on one line) and a newline, streamed into `f` and flushed to
/// disk: a buffer of a record as large as a long sweep's is one more copy of it in memory.
pub(crate) fn write_synced(
    f: &std::fs::File,
    value: &impl serde::Serialize,
    pretty: bool,
) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(f);
    if pretty {
        serde_json::to_writer_pretty(&mut w, value)?;
    } else {
        serde_json::to_writer(&mut w, value)?;
    }
    w.write_all(b"\n")?;
    w.flush()?;
    drop(w);
    f.sync_all()
}

/// The journal of the result file `path`: `NAME.json.journal`, which no reader of result
/// files (`*.json`) picks up.
pub fn journal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".journal");
    PathBuf::from(name)
}

/// Reads a result file, refusing other schema versions. The current version is read straight
/// from its text: a `serde_json::Value` tree took 1.26 GB for a 132 MB file; only older
/// versions, whose tests' kinds are inferred, take that way.
pub fn read(path: &Path) -> Result<RunRecord, RecordError> {
    let text = std::fs::read_to_string(path).map_err(RecordError::io("", path))?;
    let parse = |what| {
        move |source| RecordError::Parse {
            what,
            path: path.to_path_buf(),
            source,
        }
    };
    let schema = parse("invalid result file");
    match schema_version(&text).map_err(parse("not valid JSON"))? {
        Some(x) if x == u64::from(SCHEMA_VERSION) => serde_json::from_str(&text).map_err(schema),
        // Version 2 only added optional fields (serving, stats, resources, quality...), and
        // version 3 the test kind, which is inferred for older files (below).
        Some(x) if (1..u64::from(SCHEMA_VERSION)).contains(&x) => {
            let mut v: serde_json::Value = serde_json::from_str(&text).map_err(schema)?;
            fill_missing_kinds(&mut v);
            serde_json::from_value(v).map_err(schema)
        }
        Some(version) => Err(RecordError::SchemaVersion {
            path: path.to_path_buf(),
            version,
        }),
        None => Err(RecordError::NoSchemaVersion(path.to_path_buf())),
    }
}

/// The `schema_version` of a JSON text, read without building the rest: None when the text
/// is JSON but not an object with a whole-number version; an error when it is not JSON.
fn schema_version(text: &str) -> Result<Option<u64>, serde_json::Error> {
    match serde_json::from_str::<Head>(text) {
        Ok(Head(v)) => Ok(v.and_then(|v| v.as_u64())),
        // Valid JSON of another shape (an array, a number) has no version to read; text
        // that is not JSON at all is an error of its own.
        Err(e) if e.is_data() => serde_json::from_str::<IgnoredAny>(text).map(|_| None),
        Err(e) => Err(e),
    }
}

/// A JSON object's `schema_version`, every other member skipped as it is parsed. A visitor of
/// its own, as a derived struct would also take an array's first element for the version.
struct Head(Option<serde_json::Value>);

impl<'de> serde::Deserialize<'de> for Head {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Head, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Head;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Head, A::Error> {
                let mut version = None;
                while let Some(key) = m.next_key::<String>()? {
                    if key == "schema_version" {
                        // A repeated key: the last one counts, as in a `serde_json::Value`.
                        version = Some(m.next_value()?);
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Head(version))
            }
        }
        d.deserialize_map(Members)
    }
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

    /// `publish` wrote them: reading one and writing it again gives its bytes back, every
    /// field (absent, null or set) as it was.
    #[test]
    fn the_published_files_read_and_write_back_byte_for_byte() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/published");
        let mut n = 0;
        for p in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
            if p.extension().is_some_and(|x| x == "json") {
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    to_json_bytes(&read(&p).unwrap()) == bytes,
                    "{}",
                    p.display()
                );
                n += 1;
            }
        }
        if n == 0 {
            eprintln!("SKIPPED: results/published holds no result file");
        }
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
        assert!(
            matches!(
                e,
                RecordError::Parse {
                    what: "not valid JSON",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("not valid JSON"));
    }

    #[test]
    fn the_schema_version_is_read_before_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        // JSON that is no object, or has no whole-number version, has no schema version.
        for text in [
            "[1, 2]",
            "5",
            r#"{"schema_version": "3"}"#,
            r#"{"tests": []}"#,
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read(&p).unwrap_err();
            assert!(matches!(e, RecordError::NoSchemaVersion(_)), "{text}: {e}");
        }
        for text in ["{", r#"{"schema_version": 3} x"#, ""] {
            std::fs::write(&p, text).unwrap();
            let e = read(&p).unwrap_err();
            assert!(
                matches!(
                    e,
                    RecordError::Parse {
                        what: "not valid JSON",
                        ..
                    }
                ),
                "{text}: {e}"
            );
        }
        std::fs::write(&p, r#"{"schema_version": 3, "tests": 5}"#).unwrap();
        let e = read(&p).unwrap_err();
        assert!(
            matches!(
                e,
                RecordError::Parse {
                    what: "invalid result file",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_compact_file_and_an_older_version_read_as_the_pretty_one() {
        let dir = tempfile::tempdir().unwrap();
        let run = fixtures::run();
        let p = dir.path().join("x.json");
        std::fs::write(&p, serde_json::to_vec(&run).unwrap()).unwrap();
        assert_eq!(read(&p).unwrap(), run);
        // Version 2 had no kinds: they are inferred, as before.
        let mut v = serde_json::to_value(&run).unwrap();
        v["schema_version"] = 2.into();
        for t in v["tests"].as_array_mut().unwrap() {
            t.as_object_mut().unwrap().remove("kind");
        }
        std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        let old = read(&p).unwrap();
        assert_eq!(old.tests, run.tests);
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
