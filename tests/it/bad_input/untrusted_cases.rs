//! The bad-input table, continued: input from other people's machines and servers (issue
//! 35): a private CA file, a result file whose samples contradict its figures, `publish`.
//! The hostile servers themselves are in tests/it/served.rs (fake servers on loopback).

use std::ffi::OsString;
use std::path::Path;

use super::cases::*;

/// A published result file copied into `dir` as `name`, changed by `edit`.
fn result_file(dir: &Path, name: &str, edit: fn(&mut serde_json::Value)) -> OsString {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/published");
    let first = std::fs::read_dir(&src)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .min()
        .unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(first).unwrap()).unwrap();
    edit(&mut v);
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    p.into()
}

/// The first test with samples: its stored median raised by 10%.
fn tamper(v: &mut serde_json::Value) {
    let t = v["tests"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["median_ts"].is_number())
        .unwrap();
    t["median_ts"] = (t["median_ts"].as_f64().unwrap() * 1.1).into();
}

fn served(dir: &Path, extra: &str) -> Vec<OsString> {
    config_text(
        dir,
        &format!(
            "[[model]]\nname = \"m\"\nendpoint = \"https://127.0.0.1:9/v1\"\n{extra}\n[serving]\nmodes = [\"request\"]\n"
        ),
    )
}

pub fn untrusted_cases() -> Vec<Case> {
    vec![
        case(
            "ca_file missing",
            |d| served(d, "ca_file = \"nope.pem\""),
            2,
            "models.toml:4: key `model[0].ca_file`: cannot read",
        ),
        case(
            "ca_file not a certificate",
            |d| {
                std::fs::write(d.join("ca.pem"), "not a certificate\n").unwrap();
                served(d, "ca_file = \"ca.pem\"")
            },
            2,
            "holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" block)",
        ),
        case(
            "ca_file a private key, not a certificate",
            |d| {
                std::fs::write(
                    d.join("key.pem"),
                    "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIBm1\n-----END PRIVATE KEY-----\n",
                )
                .unwrap();
                served(d, "ca_file = \"key.pem\"")
            },
            2,
            "key `model[0].ca_file`:",
        ),
        case(
            "result file whose samples contradict its summaries (export)",
            |d| {
                vec![
                    "export".into(),
                    "--format".into(),
                    "md".into(),
                    result_file(d, "tampered.json", tamper),
                ]
            },
            2,
            "tampered.json: test ",
        ),
        case(
            "result file whose samples contradict its summaries (compare)",
            |d| {
                let good = result_file(d, "good.json", |_| {});
                vec![
                    "compare".into(),
                    good,
                    result_file(d, "tampered.json", tamper),
                ]
            },
            2,
            "but its samples give",
        ),
        case(
            "publish: a file whose samples contradict its summaries",
            |d| {
                vec![
                    "publish".into(),
                    result_file(d, "tampered.json", tamper),
                    "--out-dir".into(),
                    d.join("pub").into(),
                ]
            },
            2,
            "median_ts is ",
        ),
        case(
            "publish: a label that cannot name a file",
            |d| {
                vec![
                    "publish".into(),
                    result_file(d, "r.json", |_| {}),
                    "--as".into(),
                    "../x".into(),
                    "--out-dir".into(),
                    d.join("pub").into(),
                ]
            },
            2,
            "--as \"../x\": a label is 1 to 64 letters",
        ),
        case(
            "publish: a busy run",
            |d| {
                vec![
                    "publish".into(),
                    result_file(d, "busy.json", |v| {
                        v["run"]["load_average"] = serde_json::json!([2.5, 2.0, 1.0])
                    }),
                    "--out-dir".into(),
                    d.join("pub").into(),
                ]
            },
            2,
            "busy.json: not publishable (busy): started at a load average of 2.50",
        ),
    ]
}
