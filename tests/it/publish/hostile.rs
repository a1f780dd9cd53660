//! Hostile strings from a result file are escaped in every Markdown writer.

use super::*;

/// A hostile string from a result file: HTML, a cell separator, a line break and a heading.
const HOSTILE: &str = "<img src=x onerror=alert(1)>|x\n## owned <script>alert(2)</script>";

/// The published ladder run (speed and quality) with HOSTILE in its model names, test ids,
/// CPU, host name and an error.
fn hostile_file(dir: &Path) -> PathBuf {
    let src = json_files(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/published"))
        .into_iter()
        .map(|p| (p.clone(), serde_json::from_str::<Value>(&read(&p)).unwrap()))
        .find(|(_, v)| {
            v["tests"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["kind"] == "quality")
        })
        .expect("a published ladder run")
        .1;
    let mut v = src;
    let names: Vec<String> = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    let evil = |s: &str| format!("{s}{HOSTILE}");
    // Every string field named, where it is present, gets HOSTILE appended.
    let poison = |o: &mut Value, fields: &[&str]| {
        for f in fields {
            if let Some(x) = o[*f].as_str().map(str::to_string) {
                o[*f] = evil(&x).into();
            }
        }
        if let Some(r) = o["quality"]["reference"].as_str().map(str::to_string) {
            o["quality"]["reference"] = evil(&r).into();
        }
    };
    for m in v["models"].as_array_mut().unwrap() {
        poison(m, &["name", "model_type"]);
    }
    for t in v["tests"].as_array_mut().unwrap() {
        assert!(names.contains(&t["model"].as_str().unwrap().to_string()));
        poison(t, &["model", "id", "model_type"]);
    }
    v["run"]["system"]["cpu_model"] = evil("CPU").into();
    v["run"]["system"]["hostname"] = evil("host").into();
    v["run"]["published"]["label"] = evil("host").into();
    let p = dir.join("hostile.json");
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    p
}

/// No raw tag and no injected line or table cell in `md`.
fn assert_escaped(what: &str, md: &str) {
    assert!(
        md.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{what}: the string is shown, escaped:\n{md}"
    );
    for bad in ["<img", "<script", "\n## owned"] {
        assert!(!md.contains(bad), "{what}: {bad:?} got through:\n{md}");
    }
    // Every table keeps its shape: rows of one table have as many unescaped `|` as its header.
    let mut want = None;
    for l in md.lines() {
        if !l.starts_with('|') {
            want = None;
            continue;
        }
        let n = l.replace("\\|", "").matches('|').count();
        match want {
            None => want = Some(n),
            Some(w) => assert_eq!(n, w, "{what}: a row with another number of cells: {l}"),
        }
    }
}

#[test]
fn hostile_strings_from_a_result_file_are_escaped_in_every_markdown_writer() {
    let dir = tempfile::tempdir().unwrap();
    let f = hostile_file(dir.path());
    let stdout = |args: &[&std::ffi::OsStr]| {
        let r = tpsbench().args(args).output().unwrap();
        assert!(
            r.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        String::from_utf8(r.stdout).unwrap()
    };
    // `export --format md` is what `run --output md` prints.
    assert_escaped(
        "export md",
        &stdout(&[
            "export".as_ref(),
            f.as_os_str(),
            "--format".as_ref(),
            "md".as_ref(),
        ]),
    );
    assert_escaped(
        "compare",
        &stdout(&["compare".as_ref(), f.as_os_str(), f.as_os_str()]),
    );
    assert_escaped(
        "ladder table",
        &stdout(&["ladder".as_ref(), "--from".as_ref(), f.as_os_str()]),
    );
    let out = dir.path().join("board");
    let (code, stderr) = leaderboard(&[f.as_os_str(), "--out-dir".as_ref(), out.as_os_str()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_escaped("LEADERBOARD.md", &read(&out.join("LEADERBOARD.md")));
}
