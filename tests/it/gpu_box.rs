//! The GPU box's commands, shown on any machine: `tpsbench bench` (llama-bench's command
//! line) runs the plan its printed models.toml runs, `--dry-run` plans without loading a
//! model and the run records its estimate, and `scripts/backend` chooses CUDA with the
//! architecture of a fake `nvidia-smi` and refuses what the machine cannot build, in one
//! line each.

use std::path::Path;
use std::process::Command;

use crate::support::{read_json, tiny_dir, tpsbench};

/// llama-bench's line for the tiny model, as the bench tests start it.
const TINY_BENCH: [&str; 7] = ["bench", "-m", "tiny.gguf", "-p", "16", "-n", "4"];

#[test]
fn a_bench_dry_run_shows_the_plan_and_writes_no_file() {
    let dir = tiny_dir();
    let out = tpsbench()
        .current_dir(dir.path())
        .args(TINY_BENCH)
        .arg("--dry-run")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("plan of"), "{text}");
    assert!(!dir.path().join("results").exists(), "{text}");
}

#[test]
fn bench_runs_the_plan_of_the_models_toml_it_prints_and_writes_llama_bench_s_table() {
    let dir = tiny_dir();
    let args = [
        &TINY_BENCH[..],
        &["-t", "1", "-fa", "0,1", "-r", "2", "--rounds", "2"],
    ]
    .concat();
    let printed = tpsbench()
        .current_dir(dir.path())
        .args(&args)
        .arg("--print-config")
        .output()
        .unwrap();
    let toml = String::from_utf8(printed.stdout).unwrap();
    assert!(
        toml.contains("flash_attn = [0, 1]\n") && toml.contains("rounds = 2\n"),
        "{toml}"
    );
    std::fs::write(dir.path().join("models.toml"), &toml).unwrap();
    let out = tpsbench()
        .current_dir(dir.path())
        .args(&args)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("| model") && table.contains(" fa |") && table.contains("2 rounds"),
        "{table}"
    );
    let results: Vec<_> = std::fs::read_dir(dir.path().join("results"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let rec = read_json(
        results
            .iter()
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .unwrap(),
    );
    // The plan of the printed file, run as any models.toml is: the same tests.
    let run = tpsbench()
        .current_dir(dir.path())
        .args(["run", "--dry-run"])
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&run.stdout);
    for t in rec["tests"].as_array().unwrap() {
        let id = t["id"].as_str().unwrap();
        assert!(
            plan.contains(id.trim_start_matches("tiny/")),
            "{id} not in\n{plan}"
        );
    }
    assert_eq!(rec["run"]["rounds"], 2);
    assert!(
        rec["run"]["estimated_seconds"].as_f64().unwrap() > 0.0,
        "{}",
        rec["run"]
    );
}

#[test]
fn a_dry_run_prints_the_plan_the_files_to_write_and_an_estimate_and_loads_nothing() {
    let dir = tiny_dir();
    let cfg = "[sweep]\nn_prompt = 16\nn_gen = 4\nn_threads = 1\nrounds = 3\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n[[model]]\nname = \"big\"\npath = \"l3.gguf\"\nsynth = \"llama-3-8b:Q4_K_M\"\n";
    std::fs::write(dir.path().join("models.toml"), cfg).unwrap();
    let out = tpsbench()
        .current_dir(dir.path())
        .args(["run", "--dry-run"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("4 tests; rounds of the pp/tg tests: 3"),
        "{text}"
    );
    assert!(
        text.contains("model tiny (") && text.contains("memory: CPU"),
        "{text}"
    );
    assert!(
        text.contains("model big (to write, at most") && text.contains("files to write first"),
        "{text}"
    );
    assert!(text.contains("estimated wall time: "), "{text}");
    assert!(!dir.path().join("l3.gguf").exists() && !dir.path().join("results").exists());
}

#[test]
fn a_dataset_set_up_fetches_is_named_with_its_command_by_the_run_and_listed_by_the_dry_run() {
    let dir = tiny_dir();
    let cfg = "[sweep]\nn_prompt = 16\nn_gen = 0\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n[speculative]\ndataset = \"datasets/ShareGPT_V3_unfiltered_cleaned_split.json\"\ndrafters = [\"ngram-simple\"]\n";
    std::fs::write(dir.path().join("models.toml"), cfg).unwrap();
    let run = tpsbench()
        .current_dir(dir.path())
        .arg("run")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.trim().lines().count() == 1 && err.contains("run `scripts/setup --dataset sharegpt`"),
        "{err}"
    );
    let dry = tpsbench()
        .current_dir(dir.path())
        .args(["run", "--dry-run"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(
        text.contains("to fetch first: ") && text.contains("scripts/setup --dataset sharegpt"),
        "{text}"
    );
}

/// `scripts/backend` with `bin` first on PATH (fake `nvidia-smi`, `nvcc`), the rest of PATH
/// the system's; returns (exit code, stdout, stderr).
fn backend(bin: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/backend");
    let mut cmd = Command::new("bash");
    cmd.arg(script)
        .args(args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()));
    for k in ["TPSBENCH_BACKEND", "TPSBENCH_NO_INSTALL", "CUDA_PATH"] {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        s(&out.stdout),
        s(&out.stderr),
    )
}

fn fake(dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

const H100: &str = "case \"$*\" in *compute_cap*) echo 'NVIDIA H100 80GB HBM3, 9.0' ;; *) echo 'CUDA Version: 13.0' ;; esac";

#[test]
fn the_backend_script_chooses_cuda_with_the_gpu_s_architecture_and_refuses_what_cannot_build() {
    let real_gpu =
        Path::new("/dev/nvidia0").exists() || Path::new("/usr/local/cuda/bin/nvcc").exists();
    let bin = tempfile::tempdir().unwrap();
    fake(bin.path(), "nvidia-smi", H100);
    let (code, out, err) = backend(bin.path(), &[], &["--detect"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("TPSBENCH_FEATURES=\"--features cuda\"")
            && out.contains("CMAKE_CUDA_ARCHITECTURES=\"90\""),
        "{out}"
    );
    assert!(
        err.contains("cuda: an NVIDIA GPU: NVIDIA H100 80GB HBM3, compute capability 9.0")
            && err.contains("first build takes about"),
        "{err}"
    );
    let (code, _, err) = backend(bin.path(), &[("TPSBENCH_BACKEND", "rocm")], &[]);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
    if real_gpu {
        eprintln!(
            "SKIPPED: the no-GPU and no-toolkit cases (this machine has an NVIDIA GPU or CUDA)"
        );
        return;
    }
    let (code, _, err) = backend(bin.path(), &[("TPSBENCH_NO_INSTALL", "1")], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.lines()
            .last()
            .unwrap()
            .contains("no CUDA toolkit (nvcc)"),
        "{err}"
    );
    // An nvcc that knows sm_50 .. sm_90, and a GPU of compute capability 12.0.
    fake(
        bin.path(),
        "nvcc",
        "case \"$*\" in *list-gpu-arch*) printf 'compute_50\\ncompute_80\\ncompute_90\\n' ;; *) echo 'Cuda compilation tools, release 12.4, V12.4.131' ;; esac",
    );
    let (code, _, err) = backend(bin.path(), &[], &[]);
    assert_eq!(code, 0, "{err}");
    fake(bin.path(), "nvidia-smi", &H100.replace("9.0", "12.0"));
    let (code, _, err) = backend(bin.path(), &[], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("CUDA architecture 120") && err.contains("(12.4) builds only 50, 80, 90"),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = backend(empty.path(), &[("TPSBENCH_BACKEND", "cuda")], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("TPSBENCH_BACKEND=cuda, but this machine has no NVIDIA GPU"),
        "{err}"
    );
}

/// The default of a GPU box: models.toml with models-gpu.toml appended, as scripts/bench
/// writes it there, plans the 8B-shaped synthetic models beside the default ladder.
#[test]
fn the_gpu_box_default_adds_8b_shaped_synthetic_models_to_the_default_sweep() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap();
    let cfg = format!("{}\n{}", read("models.toml"), read("models-gpu.toml"));
    std::fs::write(dir.path().join("models.toml"), cfg).unwrap();
    // Only the plan: SmolLM2 need not be fetched for it, so a file of its name stands in.
    std::fs::create_dir(dir.path().join("models")).unwrap();
    let smol = dir.path().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    std::fs::copy(crate::support::synth(&[]), &smol).unwrap();
    let out = tpsbench()
        .current_dir(dir.path())
        .args(["run", "--dry-run", "--filter", "pp512"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for t in ["Q8_0", "Q4_K_M", "Q4_0"] {
        let m = format!("model llama-3-8b-synth-{t} (to write, at most");
        assert!(text.contains(&m), "{m}: {text}");
    }
    assert!(text.contains("model SmolLM2-135M-Q4_0"), "{text}");
}
