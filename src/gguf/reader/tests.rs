use super::*;
use crate::gguf::tiny;
use crate::gguf::writer::write_gguf;
use std::io::Cursor as IoCursor;

fn tiny_bytes() -> Vec<u8> {
    let mut v = Vec::new();
    write_gguf(&mut v, &tiny::document(1)).unwrap();
    v
}

fn parse(b: &[u8]) -> Result<Header, GgufError> {
    parse_header(IoCursor::new(b), b.len() as u64)
}

#[test]
fn reads_back_what_the_writer_wrote() {
    let b = tiny_bytes();
    let h = parse(&b).unwrap();
    assert_eq!(h.version, 3);
    assert_eq!(h.architecture(), Some("llama"));
    assert_eq!(h.file_type(), Some("F32"));
    let doc = tiny::document(1);
    assert_eq!(h.tensors.len(), doc.tensors.len());
    let last = h.tensors.last().unwrap();
    assert_eq!(h.data_offset + last.offset + last.n_bytes, b.len() as u64);
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let b = tiny_bytes();
    // Every prefix of the header, and a few cuts in the data.
    let h = parse(&b).unwrap();
    let cuts = (0..h.data_offset as usize).chain([b.len() - 1, b.len() / 2]);
    for n in cuts {
        assert!(parse(&b[..n]).is_err(), "prefix of {n} bytes parsed");
    }
}

#[test]
fn garbage_and_wrong_magic_are_named() {
    assert!(parse(b"").unwrap_err().to_string().contains("empty"));
    assert!(
        parse(b"hello world, not gguf")
            .unwrap_err()
            .to_string()
            .contains("magic")
    );
    let mut b = tiny_bytes();
    b[4] = 99;
    assert!(parse(&b).unwrap_err().to_string().contains("version 99"));
}

/// The tiny model's bytes with the metadata array `key` declaring `n` entries.
fn with_array_count(key: &str, n: u64) -> Vec<u8> {
    let mut b = tiny_bytes();
    let mut needle = (key.len() as u64).to_le_bytes().to_vec();
    needle.extend_from_slice(key.as_bytes());
    let at = b.windows(needle.len()).position(|w| w == needle).unwrap();
    // key, value type (array), element type, then the count
    let count_at = at + needle.len() + 4 + 4;
    b[count_at..count_at + 8].copy_from_slice(&n.to_le_bytes());
    b
}

#[test]
fn array_counts_beyond_the_file_or_the_entry_limit_are_refused() {
    let e = parse(&with_array_count("tokenizer.ggml.tokens", 1 << 40)).unwrap_err();
    assert!(e.to_string().contains("cannot fit in the file"), "{e}");
    // A file large enough to hold 2^24 + 1 one-byte entries, without writing one.
    let n = MAX_ARRAY_ENTRIES + 1;
    let mut b = Vec::new();
    b.extend_from_slice(b"GGUF");
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&5u64.to_le_bytes());
    b.extend_from_slice(b"bytes");
    b.extend_from_slice(&9u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&n.to_le_bytes());
    let size = b.len() as u64 + n;
    let e = parse_header(IoCursor::new(&b), size).unwrap_err();
    assert!(e.to_string().contains("more than 16777216 entries"), "{e}");
}

#[test]
fn gguf_cpp_layout_rules_are_enforced() {
    let b = tiny_bytes();
    let h = parse(&b).unwrap();
    // Moving the second tensor's data onto the first's: an overlap.
    let second = &h.tensors[1];
    let mut needle = (second.name.len() as u64).to_le_bytes().to_vec();
    needle.extend_from_slice(second.name.as_bytes());
    let at = b.windows(needle.len()).position(|w| w == needle).unwrap();
    let offset_at = at + needle.len() + 4 + 8 * second.dims.len() + 4;
    let mut c = b.clone();
    c[offset_at..offset_at + 8].copy_from_slice(&0u64.to_le_bytes());
    let e = parse(&c).unwrap_err().to_string();
    assert!(e.contains("overlaps tensor `token_embd.weight`"), "{e}");
    // A gap of one alignment unit.
    let mut c = b.clone();
    let gap = second.offset + h.alignment;
    c[offset_at..offset_at + 8].copy_from_slice(&gap.to_le_bytes());
    let e = parse(&c).unwrap_err().to_string();
    assert!(
        e.contains("should follow tensor `token_embd.weight`"),
        "{e}"
    );
    // general.alignment must be a uint32.
    let mut doc = tiny::document(1);
    doc.metadata
        .push(("general.alignment".into(), Value::U64(32)));
    let mut c = Vec::new();
    write_gguf(&mut c, &doc).unwrap();
    let e = parse(&c).unwrap_err().to_string();
    assert!(
        e.contains("must be a uint32 power of two, not uint64"),
        "{e}"
    );
}

#[test]
fn duplicate_or_empty_keys_and_long_tensor_names_are_refused() {
    let mut doc = tiny::document(1);
    doc.metadata
        .push(("general.name".into(), Value::String("again".into())));
    let mut c = Vec::new();
    write_gguf(&mut c, &doc).unwrap();
    assert!(
        parse(&c)
            .unwrap_err()
            .to_string()
            .contains("`general.name` appears twice")
    );
    let mut doc = tiny::document(1);
    doc.metadata.push((String::new(), Value::U32(1)));
    let mut c = Vec::new();
    write_gguf(&mut c, &doc).unwrap();
    assert!(parse(&c).unwrap_err().to_string().contains("is empty"));
    let mut doc = tiny::document(1);
    doc.tensors[1].name = "x".repeat(64);
    let mut c = Vec::new();
    write_gguf(&mut c, &doc).unwrap();
    assert!(parse(&c).unwrap_err().to_string().contains("64 bytes long"));
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    let mut b = tiny_bytes();
    b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(parse(&b).unwrap_err().to_string().contains("more than"));
}
