//! `tpsbench publish`: a file in, a redacted file out, refusals.

use super::*;

/// One of the committed published files, as a machine would have written it before
/// `publish`: absolute paths of its checkout and the host name "lab-host-7" put back in.
fn unpublished(dir: &Path) -> PathBuf {
    let src = json_files(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/published"))
        .into_iter()
        .min()
        .unwrap();
    let mut v: Value = serde_json::from_str(&read(&src)).unwrap();
    let run = v["run"].as_object_mut().unwrap();
    run.remove("published");
    run.insert(
        "config_file".into(),
        "/home/ann/bench/configs/smollm2.toml".into(),
    );
    run.insert(
        "command".into(),
        serde_json::json!([
            "/home/ann/bench/target/release/tpsbench",
            "run",
            "--config",
            "/home/ann/bench/configs/smollm2.toml"
        ]),
    );
    v["run"]["system"]["hostname"] = "lab-host-7".into();
    v["models"][0]["path"] = "/home/ann/models/SmolLM2-135M-Instruct.Q4_1.gguf".into();
    let p = dir.join("20261202T000000Z-lab-host-7.json");
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    p
}

#[test]
fn publish_redacts_a_file_into_the_set_and_the_page_built_from_it_passes_check() {
    let dir = tempfile::tempdir().unwrap();
    let raw = unpublished(dir.path());
    let set = dir.path().join("published");
    // Unpublished, the file fails --check's privacy rule, naming what it exposes.
    std::fs::create_dir_all(&set).unwrap();
    std::fs::copy(&raw, set.join("raw.json")).unwrap();
    let (code, _) = leaderboard(&[set.as_os_str(), "--out-dir".as_ref(), set.as_os_str()]);
    assert_eq!(code, Some(0));
    let (code, stderr) = leaderboard(&[
        set.as_os_str(),
        "--out-dir".as_ref(),
        set.as_os_str(),
        "--check".as_ref(),
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("raw.json exposes an absolute path at /models/0/path: /home/ann/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&set).unwrap();

    let r = tpsbench()
        .arg("publish")
        .arg(&raw)
        .args(["--as", "epyc-2c", "--out-dir"])
        .arg(&set)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    let out = json_files(&set);
    assert_eq!(out.len(), 1, "{stderr}");
    let name = out[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.ends_with("-epyc-2c.json"), "{name}");
    let text = read(&out[0]);
    assert!(!text.contains("/home/"), "no absolute path is left");
    assert!(!text.contains("lab-host-7"), "no host name is left");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["run"]["system"]["hostname"], "epyc-2c");
    assert_eq!(v["run"]["config_file"], "smollm2.toml");
    assert_eq!(v["run"]["command"][0], "tpsbench");
    assert_eq!(v["models"][0]["path"], "SmolLM2-135M-Instruct.Q4_1.gguf");
    assert_eq!(v["run"]["published"]["label"], "epyc-2c");
    // Hardware, file names and hashes stay.
    let src: Value = serde_json::from_str(&read(&raw)).unwrap();
    assert_eq!(
        v["run"]["system"]["cpu_model"],
        src["run"]["system"]["cpu_model"]
    );
    assert_eq!(v["models"][0]["sha256"], src["models"][0]["sha256"]);
    assert_eq!(v["tests"], src["tests"], "the figures are untouched");
    // Publishing again gives the same file under the same name.
    let again = tpsbench()
        .arg("publish")
        .arg(&raw)
        .args(["--as", "epyc-2c", "--out-dir"])
        .arg(&set)
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(json_files(&set).len(), 1);
    assert_eq!(read(&out[0]), text);
    // The page built from the set passes --check.
    let (code, stderr) = leaderboard(&[set.as_os_str(), "--out-dir".as_ref(), set.as_os_str()]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = leaderboard(&[
        set.as_os_str(),
        "--out-dir".as_ref(),
        set.as_os_str(),
        "--check".as_ref(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    // An edit that brings the host back fails --check.
    std::fs::write(
        &out[0],
        text.replace("\"hostname\": \"epyc-2c\"", "\"hostname\": \"lab-host-7\""),
    )
    .unwrap();
    let (code, stderr) = leaderboard(&[
        set.as_os_str(),
        "--out-dir".as_ref(),
        set.as_os_str(),
        "--check".as_ref(),
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("the host name \"lab-host-7\""), "{stderr}");
}

#[test]
fn publish_refuses_the_host_name_as_a_label_unless_asked_to_keep_it() {
    let dir = tempfile::tempdir().unwrap();
    let raw = unpublished(dir.path());
    let set = dir.path().join("published");
    let r = tpsbench()
        .arg("publish")
        .arg(&raw)
        .args(["--as", "lab-host-7", "--out-dir"])
        .arg(&set)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(stderr.contains("is the host name itself"), "{stderr}");
    assert!(
        !set.exists() || json_files(&set).is_empty(),
        "nothing written"
    );
    let r = tpsbench()
        .arg("publish")
        .arg(&raw)
        .args(["--keep-host", "--out-dir"])
        .arg(&set)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: Value = serde_json::from_str(&read(&json_files(&set)[0])).unwrap();
    assert_eq!(v["run"]["system"]["hostname"], "lab-host-7");
    assert_eq!(v["run"]["published"]["host_kept"], true);
    assert_eq!(
        v["run"]["config_file"], "smollm2.toml",
        "paths go either way"
    );
}
