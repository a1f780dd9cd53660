//! The result file's journal, `NAME.json.journal` (docs/schema.md): a finished test is on
//! disk without rewriting the whole file each time (that cost 39 ms per test at 3,200 tests).
//! The first line is a full snapshot; each later line replaces one part. A line cut short by
//! a crash is the last and is ignored.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::record::results::{self, journal_path};
use crate::record::{ModelRecord, RecordError, RunInfo, RunRecord, TestRecord};

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Entry {
    Snapshot(Box<RunRecord>),
    /// A test's record, new or joined by a later round: replaces the one with its id.
    Test(Box<TestRecord>),
    Models(Vec<ModelRecord>),
    Run(Box<RunInfo>),
}

/// One line of the journal as written: [`Entry`]'s lines, serialized from the record itself.
/// Cloning the record to write its snapshot doubled a sweep's memory at each compaction;
/// a borrowed entry costs nothing.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Line<'a> {
    Snapshot(&'a RunRecord),
    Test(&'a TestRecord),
    Models(&'a [ModelRecord]),
}

/// Owns the result file of a run in progress.
pub(crate) struct Journal {
    path: PathBuf,
    file: std::fs::File,
    /// When the result file was last written: it is rewritten at twice that.
    tests_in_file: usize,
    /// As last journaled, to write them only when they change.
    models: Vec<ModelRecord>,
}

impl Journal {
    /// Starts the journal of the result file `path` with `record` as it stands, writing the
    /// result file first when it does not exist yet (its first write is complete: a run
    /// that dies before its first test leaves a file with no tests, never an empty file).
    pub fn start(path: &Path, record: &RunRecord) -> Result<Journal, RecordError> {
        results::write_atomic(path, record)?;
        Ok(Journal {
            path: path.to_path_buf(),
            file: open_fresh(path, record)?,
            tests_in_file: record.tests.len(),
            models: record.models.clone(),
        })
    }

    /// Records `test` (new, or its later round) and the models when they changed; on disk
    /// when this returns. Rewrites the result file when the tests have doubled since.
    pub fn test_done(&mut self, record: &RunRecord, test: &TestRecord) -> Result<(), RecordError> {
        if record.tests.len() >= (2 * self.tests_in_file).max(1) {
            return self.compact(record);
        }
        let mut lines = line(&Line::Test(test));
        if record.models != self.models {
            lines.extend(line(&Line::Models(&record.models)));
            self.models.clone_from(&record.models);
        }
        self.append(&lines)
    }

    /// A test whose record changed after it was journaled (a served test's ratio to its
    /// in-process twin).
    pub fn test_changed(&mut self, test: &TestRecord) -> Result<(), RecordError> {
        self.append(&line(&Line::Test(test)))
    }

    pub fn finish(self, record: &RunRecord) -> Result<(), RecordError> {
        results::write_atomic(&self.path, record)
    }

    fn compact(&mut self, record: &RunRecord) -> Result<(), RecordError> {
        results::write_atomic(&self.path, record)?;
        self.file = open_fresh(&self.path, record)?;
        self.tests_in_file = record.tests.len();
        self.models.clone_from(&record.models);
        Ok(())
    }

    fn append(&mut self, bytes: &[u8]) -> Result<(), RecordError> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.sync_data())
            .map_err(RecordError::io(JOURNAL, &journal_path(&self.path)))
    }
}

const JOURNAL: &str = "cannot write the result journal ";

fn line(e: &Line) -> Vec<u8> {
    let mut v = serde_json::to_vec(e).expect("records always serialize");
    v.push(b'\n');
    v
}

/// A new journal holding `record`'s snapshot, replacing any other atomically: a crash while
/// it is written leaves the older journal, or none, never half of a snapshot.
fn open_fresh(path: &Path, record: &RunRecord) -> Result<std::fs::File, RecordError> {
    let j = journal_path(path);
    let tmp = j.with_extension("journal.tmp");
    let err = RecordError::io(JOURNAL, &j);
    let f = std::fs::File::create(&tmp).map_err(&err)?;
    results::write_synced(&f, &Line::Snapshot(record), false)
        .and_then(|()| std::fs::rename(&tmp, &j))
        .map_err(err)?;
    // Appends go to the renamed file (the open handle follows it).
    Ok(f)
}

/// The record a run left at `path`: its journal replayed when there is one (a run that
/// crashed, or is still going), else the result file.
pub fn read_resumable(path: &Path) -> Result<RunRecord, RecordError> {
    let j = journal_path(path);
    match std::fs::read(&j) {
        // An empty journal is a name claimed before anything was written.
        Ok(bytes) => replay(&bytes).map_or_else(|| results::read(path), Ok),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => results::read(path),
        Err(e) => Err(RecordError::io("", &j)(e)),
    }
}

/// The record a journal describes; `None` when it has no snapshot. Lines that do not parse
/// (the last one, cut short by a crash) are skipped.
fn replay(bytes: &[u8]) -> Option<RunRecord> {
    let mut lines = bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    let Ok(Entry::Snapshot(mut record)) = serde_json::from_slice(lines.next()?) else {
        return None;
    };
    let ids = |r: &RunRecord| -> std::collections::HashMap<String, usize> {
        (r.tests.iter().enumerate())
            .map(|(i, t)| (t.id.clone(), i))
            .collect()
    };
    let mut index = ids(&record);
    for l in lines {
        match serde_json::from_slice(l) {
            Ok(Entry::Snapshot(r)) => {
                index = ids(&r);
                record = r;
            }
            Ok(Entry::Test(t)) => match index.get(&t.id) {
                Some(&i) => record.tests[i] = *t,
                None => {
                    index.insert(t.id.clone(), record.tests.len());
                    record.tests.push(*t);
                }
            },
            Ok(Entry::Models(m)) => record.models = m,
            Ok(Entry::Run(r)) => record.run = *r,
            Err(_) => {}
        }
    }
    Some(*record)
}

#[cfg(test)]
mod tests;
