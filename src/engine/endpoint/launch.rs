//! Starting and stopping the server a served test measures: spawn it with its output in a
//! log file, wait until `/health` says it is ready, and stop it (SIGTERM, then SIGKILL)
//! when the tests are done or when tpsbench is interrupted (`Drop`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::client::Client;

pub(crate) struct Launched {
    child: Option<Child>,
    pub command: Vec<String>,
    pub log: PathBuf,
}

/// The llama-server of `scripts/reference-tools --server`: `$TPSBENCH_LLAMA_SERVER`, else the
/// newest build in the per-user cache (`~/.cache/tpsbench/llama-server-*/bin/llama-server`).
pub fn pinned_llama_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TPSBENCH_LLAMA_SERVER") {
        return Some(PathBuf::from(p));
    }
    let cache = crate::util::system::user_cache_dir()?;
    let builds = std::fs::read_dir(&cache).ok()?.flatten();
    (builds.filter(|e| e.file_name().to_string_lossy().starts_with("llama-server-")))
        .map(|e| e.path().join("bin/llama-server"))
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
}

/// The offload backends a llama-server binary sees, from `--list-devices` ("CUDA0: NVIDIA
/// H100 ..." is CUDA); empty for one that sees only the CPU. None when it cannot be asked.
pub fn server_backends(binary: &Path) -> Option<Vec<String>> {
    let out = Command::new(binary)
        .arg("--list-devices")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("Available devices"));
    lines.next()?;
    Some(crate::util::sorted_unique(
        lines
            .filter_map(|l| l.trim().split_once(':').map(|(n, _)| n))
            .map(|n| n.trim_end_matches(|c: char| c.is_ascii_digit()).to_string()),
    ))
}

/// The `sources=` line of the stamp `scripts/reference-tools --server` writes beside its
/// build (`DIR/llama-server.stamp` for `DIR/bin/llama-server`).
pub(crate) fn stamp_sources(binary: &Path) -> Option<String> {
    let stamp = binary.parent()?.parent()?.join("llama-server.stamp");
    let text = std::fs::read_to_string(stamp).ok()?;
    let sources = text.lines().find_map(|l| l.strip_prefix("sources="))?;
    Some(sources.split(" extra_cmake_args=").next()?.to_string())
}

/// A free TCP port on 127.0.0.1 (the OS picks it; free when this returns).
pub(crate) fn free_loopback_port() -> Result<u16, LaunchError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| LaunchError::Port(e.to_string()))
}

/// Why a server tpsbench starts did not come up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot find a free loopback port: {0}")]
    Port(String),
    #[error("the server command is empty")]
    EmptyCommand,
    #[error("{}: {reason}", path.display())]
    Log { path: PathBuf, reason: String },
    #[error("cannot start {program}: {reason}")]
    Spawn { program: String, reason: String },
    #[error("the server exited ({status}) before it was ready; its log ends: {log_tail}")]
    Exited { status: String, log_tail: String },
    #[error("the server was not ready within {secs} s ({health}); its log ends: {log_tail}")]
    NotReady {
        secs: f64,
        health: String,
        log_tail: String,
    },
}

impl Launched {
    /// Starts `command` with its stdout and stderr in `log`, then waits up to `ready` for
    /// `client`'s `/health` to answer 200.
    pub fn start(
        command: &[String],
        log: &Path,
        client: &Client,
        ready: Duration,
    ) -> Result<Launched, LaunchError> {
        let (prog, args) = command.split_first().ok_or(LaunchError::EmptyCommand)?;
        let log_error = |e: std::io::Error| LaunchError::Log {
            path: log.to_path_buf(),
            reason: e.to_string(),
        };
        let out = File::create(log).map_err(log_error)?;
        let err = out.try_clone().map_err(log_error)?;
        let child = Command::new(prog)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| LaunchError::Spawn {
                program: prog.clone(),
                reason: e.to_string(),
            })?;
        let mut me = Launched {
            child: Some(child),
            command: command.to_vec(),
            log: log.to_path_buf(),
        };
        let health = format!("{}/health", client.root());
        let start = Instant::now();
        loop {
            if let Some(status) = me.exited() {
                return Err(LaunchError::Exited {
                    status,
                    log_tail: tail(log),
                });
            }
            if let Ok(200) = client.status_of(&health, Duration::from_secs(2)) {
                return Ok(me);
            }
            if start.elapsed() > ready {
                me.stop();
                return Err(LaunchError::NotReady {
                    secs: ready.as_secs_f64(),
                    health,
                    log_tail: tail(log),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn exited(&mut self) -> Option<String> {
        let c = self.child.as_mut()?;
        c.try_wait()
            .map_or_else(|e| Some(e.to_string()), |s| s.map(|s| s.to_string()))
    }

    /// SIGTERM, up to 10 s to exit, then SIGKILL.
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: kill(2) on our own child's pid; at worst it has already exited.
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) && !matches!(c.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }

    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.stop();
    }
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}
