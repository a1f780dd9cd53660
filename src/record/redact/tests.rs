use serde_json::json;

use super::*;

#[test]
fn absolute_paths_become_file_names_wherever_they_are() {
    assert_eq!(strip_paths("/work/main/models/x.gguf"), "x.gguf");
    assert_eq!(
        strip_paths("cannot open /home/ann/m.gguf: no such file"),
        "cannot open m.gguf: no such file"
    );
    assert_eq!(
        strip_paths("--config=/etc/t/models.toml"),
        "--config=models.toml"
    );
    assert_eq!(strip_paths("file:/srv/wiki.txt"), "file:wiki.txt");
    assert_eq!(strip_paths("~/models/a.gguf"), "a.gguf");
    assert_eq!(strip_paths(r"C:\Users\ann\a.gguf"), "a.gguf");
    // Not paths: a URL, a ratio, a unit, a relative path.
    for s in [
        "http://127.0.0.1:8080/v1",
        "tok/s",
        "shard 0/4",
        "models/a.gguf",
        "a / b",
    ] {
        assert_eq!(strip_paths(s), s);
    }
}

#[test]
fn redacting_keeps_hardware_names_and_hashes_and_marks_the_file() {
    let mut f = json!({
        "run": {
            "config_file": "/work/main/configs/smollm2.toml",
            "command": ["/work/main/target/release/tpsbench", "run", "--config", "/work/main/c.toml"],
            "system": {"hostname": "vm", "cpu_model": "AMD EPYC"},
            "llama_cpp": {"library": {"path": "/work/main/target/release/tpsbench"}},
            "host_bandwidth": {"machine": "vm | AMD EPYC"},
        },
        "models": [{"path": "/work/main/models/../models/a.gguf", "sha256": "ab12", "model_filename": "a.gguf"}],
        "tests": [{"id": "x", "error": "llvm on vm failed", "serving": {"server": {"log": "/r/20261202T104550Z-vm.server.log"}}}]
    });
    // Six paths, and a host name that did not go through publish.
    assert_eq!(exposed(&f).len(), 7, "{:#?}", exposed(&f));
    redact(&mut f, "epyc-vm", false);
    assert_eq!(f["run"]["config_file"], "smollm2.toml");
    assert_eq!(
        f["run"]["command"],
        json!(["tpsbench", "run", "--config", "c.toml"])
    );
    assert_eq!(
        f["run"]["system"],
        json!({"hostname": "epyc-vm", "cpu_model": "AMD EPYC"})
    );
    assert_eq!(f["run"]["llama_cpp"]["library"]["path"], "tpsbench");
    assert_eq!(f["run"]["host_bandwidth"]["machine"], "epyc-vm | AMD EPYC");
    assert_eq!(f["models"][0]["path"], "a.gguf");
    assert_eq!(f["models"][0]["sha256"], "ab12");
    assert_eq!(f["tests"][0]["error"], "llvm on epyc-vm failed");
    assert_eq!(
        f["tests"][0]["serving"]["server"]["log"],
        "20261202T104550Z-epyc-vm.server.log"
    );
    assert_eq!(f["run"]["published"], json!({"label": "epyc-vm"}));
    assert!(exposed(&f).is_empty(), "{:#?}", exposed(&f));
    // Edited afterwards: the host is back.
    f["run"]["system"]["hostname"] = json!("vm");
    assert_eq!(
        exposed(&f),
        ["the host name \"vm\" where publish put the label \"epyc-vm\""]
    );
}

#[test]
fn a_kept_host_is_not_a_finding() {
    let mut f = json!({"run": {"system": {"hostname": "lab-3"}, "config_file": "/x/y.toml"}});
    redact(&mut f, "lab-3", true);
    assert_eq!(f["run"]["system"]["hostname"], "lab-3");
    assert_eq!(f["run"]["config_file"], "y.toml");
    assert!(exposed(&f).is_empty(), "{:#?}", exposed(&f));
}
