//! Which corrupt GGUF files make llama.cpp crash rather than return an error, and does
//! tpsbench's validator refuse every one of them? The experiment behind gguf::validate and
//! docs/bad-input.md.
//!
//! ```sh
//! cargo build --release --example gguf_crash_probe
//! P=target/release/examples/gguf_crash_probe
//! $P structured /tmp/probe            # about 330 hand-made corruptions
//! $P bytes /tmp/probe [accepted]      # every header byte flipped three ways
//! ```
//!
//! Each case is written to DIR/case.gguf, checked by the validator in process, then loaded
//! and run (8 prompt tokens, 2 generated) by llama.cpp directly in a child process
//! (`$P load FILE`, no validator). The probe prints every crash, every file the validator
//! refuses although llama.cpp runs it, and with `structured` every other outcome too. A
//! line starting with `!!` is a crash the validator let through: a bug. `accepted` runs
//! llama.cpp only on the files the validator accepts (the fast check for such bugs).
//! `PROBE_POSITIONS=FILE` limits `bytes` to the byte offsets listed in FILE.

mod variants;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tpsbench::gguf::writer::write_gguf;
use tpsbench::gguf::{reader, tiny};

/// Loads `file` with llama.cpp without the validator and decodes a short prompt and two
/// single tokens: exit 0 ok, 3 load refused, 4 context or decode failed.
fn load_and_run(file: &Path) -> i32 {
    use llama_cpp_sys_2 as sys;
    tpsbench::engine::llama::init(true).unwrap();
    let path = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
    // SAFETY: plain llama.cpp C API use; every pointer is checked before use.
    unsafe {
        let mut mp = sys::llama_model_default_params();
        mp.n_gpu_layers = 0;
        let m = sys::llama_model_load_from_file(path.as_ptr(), mp);
        if m.is_null() {
            return 3;
        }
        let mut cp = sys::llama_context_default_params();
        (cp.n_ctx, cp.n_batch, cp.n_ubatch) = (16, 8, 8);
        (cp.n_threads, cp.n_threads_batch) = (1, 1);
        let ctx = sys::llama_init_from_model(m, cp);
        if ctx.is_null() {
            return 4;
        }
        let n_vocab = sys::llama_vocab_n_tokens(sys::llama_model_get_vocab(m)).max(1);
        let mut prompt: Vec<i32> = (0..8).map(|i| (i * 7919) % n_vocab).collect();
        if sys::llama_decode(ctx, sys::llama_batch_get_one(prompt.as_mut_ptr(), 8)) != 0 {
            return 4;
        }
        for t in 0..2 {
            let mut one = [t % n_vocab];
            if sys::llama_decode(ctx, sys::llama_batch_get_one(one.as_mut_ptr(), 1)) != 0 {
                return 4;
            }
        }
        sys::llama_synchronize(ctx);
        sys::llama_free(ctx);
        sys::llama_model_free(m);
    }
    0
}

/// Runs the child on `file`: (crashed, what happened).
fn outcome(exe: &Path, file: &Path) -> (bool, String) {
    let out = Command::new(exe).arg("load").arg(file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let last = |pats: &[&str]| -> String {
        let line = err
            .lines()
            .rev()
            .find(|l| pats.iter().any(|p| l.contains(p)));
        line.unwrap_or("").trim().chars().take(160).collect()
    };
    match (out.status.code(), out.status.signal()) {
        (Some(0), _) => (false, "loads and runs".into()),
        (Some(3), _) => (false, format!("load error: {}", last(&["error", "failed"]))),
        (Some(4), _) => (false, format!("run error: {}", last(&["error", "failed"]))),
        (code, signal) => (
            true,
            format!(
                "CRASH (exit {code:?}, signal {signal:?}): {}",
                last(&[
                    "GGML_ASSERT",
                    "GGML_ABORT",
                    "fatal error",
                    "terminate",
                    "what()"
                ])
            ),
        ),
    }
}

#[derive(Default)]
struct Tally {
    cases: u32,
    accepted: u32,
    crashes: u32,
    holes: u32,
    stricter: u32,
}

struct Probe {
    exe: PathBuf,
    file: PathBuf,
    only_accepted: bool,
    print_all: bool,
    tally: Tally,
}

impl Probe {
    fn case(&mut self, name: &str, bytes: &[u8]) {
        self.tally.cases += 1;
        std::fs::write(&self.file, bytes).unwrap();
        let verdict = reader::read_header(&self.file);
        self.tally.accepted += u32::from(verdict.is_ok());
        if self.only_accepted && verdict.is_err() {
            return;
        }
        let (crash, what) = outcome(&self.exe, &self.file);
        let hole = crash && verdict.is_ok();
        let stricter = verdict.is_err() && what == "loads and runs";
        self.tally.crashes += u32::from(crash);
        self.tally.holes += u32::from(hole);
        self.tally.stricter += u32::from(stricter);
        if self.print_all || crash || stricter {
            let v = match &verdict {
                Ok(_) => "accepted".to_string(),
                Err(e) => format!("refused: {e}"),
            };
            let mark = if hole { "!! " } else { "" };
            println!("{mark}{name} | {v} | {what}");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    if arg(1) == Some("load") {
        std::process::exit(load_and_run(Path::new(&args[2])));
    }
    let (Some(mode @ ("structured" | "bytes")), Some(dir)) = (arg(1), arg(2)) else {
        eprintln!("usage: gguf_crash_probe structured|bytes DIR [accepted] | load FILE");
        std::process::exit(2);
    };
    std::fs::create_dir_all(dir).unwrap();
    let mut probe = Probe {
        exe: std::env::current_exe().unwrap(),
        file: Path::new(dir).join("case.gguf"),
        only_accepted: arg(3) == Some("accepted"),
        print_all: mode == "structured",
        tally: Tally::default(),
    };
    if mode == "structured" {
        for (name, mutate) in variants::variants() {
            let mut doc = tiny::document(1);
            mutate(&mut doc);
            let mut b = Vec::new();
            match write_gguf(&mut b, &doc) {
                Ok(()) => probe.case(&name, &b),
                Err(e) => println!("{name} | cannot write: {e}"),
            }
        }
    } else {
        // One buffer, each flip undone after its case: the model is 5.5 MB.
        let mut b = Vec::new();
        write_gguf(&mut b, &tiny::document(1)).unwrap();
        let h = reader::parse_header(std::io::Cursor::new(&b), b.len() as u64).unwrap();
        let positions: Vec<usize> = match std::env::var("PROBE_POSITIONS") {
            Ok(f) => std::fs::read_to_string(f)
                .unwrap()
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect(),
            Err(_) => (0..h.data_offset as usize).collect(),
        };
        for pos in positions {
            for mask in [0xff, 0x01, 0x80] {
                b[pos] ^= mask;
                probe.case(&format!("byte {pos} xor {mask:02x}"), &b);
                b[pos] ^= mask;
            }
        }
        for cut in [0, 3, 4, 8, 16, 24, 100, h.data_offset as usize, b.len() - 1] {
            probe.case(&format!("truncated to {cut} bytes"), &b[..cut]);
        }
    }
    let t = &probe.tally;
    println!(
        "# {} cases: validator accepted {}; llama.cpp crashed on {}, of which the validator accepted {}; validator refused {} that llama.cpp runs",
        t.cases, t.accepted, t.crashes, t.holes, t.stricter
    );
}
