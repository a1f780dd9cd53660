//! `scripts/slurm-local check` on a real one-node Slurm: deploy/slurm.sh's job array and merge
//! job, a merged file holding every test of the plan once, the leaderboard rebuilt, a shard
//! killed with scancel refused by the merge job, and `deploy/slurm.sh retry` completing it;
//! and deploy/k8s-job.yaml against the Kubernetes schemas (deploy/validate-k8s).
//!
//! Both run only with TPSBENCH_SLURM_TEST=1 (CI sets it in .ci/run). The Slurm test needs
//! root, installs Debian's slurm-wlm, slurmdbd, munge and mariadb-server when missing, and
//! fetches SmolLM2-135M with `scripts/setup --model` when models/ lacks it. When no Slurm
//! answers it runs `scripts/slurm-local up` first and `down` after; a Slurm already up is
//! left up.

use std::path::Path;
use std::process::{Command, Output};

fn slurm_local(arg: &str, work: &Path) -> Output {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-local"))
        .arg(arg)
        .env("TPSBENCH", env!("CARGO_BIN_EXE_tpsbench"))
        .env("SLURM_LOCAL_WORK", work)
        .output()
        .unwrap_or_else(|e| panic!("scripts/slurm-local {arg}: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_sharded_sweep_on_a_real_slurm_merges_whole_and_a_killed_shard_is_refused() {
    if std::env::var("TPSBENCH_SLURM_TEST").as_deref() != Ok("1") {
        eprintln!(
            "skipped: set TPSBENCH_SLURM_TEST=1 (as root) to run scripts/slurm-local check on a \
             real Slurm"
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let already_up = Command::new("sinfo")
        .arg("-h")
        .output()
        .is_ok_and(|o| o.status.success());
    if !already_up {
        let up = slurm_local("up", work.path());
        assert!(up.status.success(), "up failed:\n{}", text(&up.stderr));
    }
    let check = slurm_local("check", work.path());
    if !already_up {
        // Before any assertion: a failed check must not leave the daemons running.
        let down = slurm_local("down", work.path());
        assert!(
            down.status.success(),
            "down failed:\n{}",
            text(&down.stderr)
        );
    }
    let (stdout, stderr) = (text(&check.stdout), text(&check.stderr));
    assert!(check.status.success(), "check failed:\n{stderr}{stdout}");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("slurm-local check: ok: "))
        .unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    for part in [
        "tests each once (shards 0/2 1/2)",
        "leaderboard rebuilt",
        "FAILED, nothing published",
        "shard 1/2",
        "retry 1: merge",
    ] {
        assert!(summary.contains(part), "{part:?} not in: {summary}");
    }
    eprintln!("{summary}");
}

#[test]
fn the_kubernetes_jobs_pass_the_kubernetes_schemas_and_a_misspelled_field_does_not() {
    if std::env::var("TPSBENCH_SLURM_TEST").as_deref() != Ok("1") {
        eprintln!(
            "skipped: set TPSBENCH_SLURM_TEST=1 to run deploy/validate-k8s (kubernetes-validate \
             from PyPI on first use)"
        );
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let validate = |file: &Path| {
        Command::new(root.join("deploy/validate-k8s"))
            .arg(file)
            .output()
            .unwrap()
    };
    let ok = validate(&root.join("deploy/k8s-job.yaml"));
    let out = text(&ok.stdout) + &text(&ok.stderr);
    assert!(ok.status.success(), "{out}");
    assert_eq!(out.matches(" passed for resource job/").count(), 4, "{out}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let yaml = std::fs::read_to_string(root.join("deploy/k8s-job.yaml")).unwrap();
    std::fs::write(
        &bad,
        yaml.replace("backoffLimitPerIndex", "backoffLimitPerIdx"),
    )
    .unwrap();
    let refused = validate(&bad);
    let out = text(&refused.stdout) + &text(&refused.stderr);
    assert!(!refused.status.success(), "{out}");
    assert!(out.contains("'backoffLimitPerIdx' was unexpected"), "{out}");
}
