//! Arbitrary bytes as a GGUF file: the reader and the validator must return Ok or Err,
//! never panic, overflow, or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tpsbench::gguf::{reader, validate};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = reader::parse_header(std::io::Cursor::new(data), data.len() as u64) {
        let _ = validate::validate(&h);
        let _ = (h.architecture(), h.file_type(), h.n_elements());
    }
});
