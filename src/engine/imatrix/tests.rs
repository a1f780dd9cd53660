use super::*;
use crate::gguf::reader::TensorInfo;

fn sample() -> Imatrix {
    let mut m = Imatrix {
        datasets: vec!["calib.txt".into()],
        chunk_count: 2,
        chunk_size: 64,
        ..Imatrix::default()
    };
    let dense = Entry {
        sums: vec![4.0, 8.0, 12.0],
        counts: vec![4],
    };
    let experts = Entry {
        sums: vec![1.0, 2.0, 3.0, 4.0],
        counts: vec![2, 0],
    };
    m.entries.insert("blk.0.attn_q.weight".into(), dense);
    m.entries.insert("blk.0.ffn_up_exps.weight".into(), experts);
    m
}

fn header(tensors: &[(&str, &[u64])]) -> Header {
    Header {
        version: 3,
        metadata: vec![],
        tensors: (tensors.iter())
            .map(|(n, d)| TensorInfo {
                name: n.to_string(),
                dims: d.to_vec(),
                ggml_type: 0,
                offset: 0,
                n_bytes: 0,
            })
            .collect(),
        alignment: 32,
        data_offset: 0,
        file_size: 0,
    }
}

#[test]
fn a_written_imatrix_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.gguf");
    sample().write(&p).unwrap();
    assert_eq!(Imatrix::read(&p).unwrap(), sample());
}

#[test]
fn means_divide_each_slice_by_its_count_as_llama_quantize_does() {
    let m = sample();
    let means = m.means();
    assert_eq!(means[0], ("blk.0.attn_q.weight", vec![1.0, 2.0, 3.0]));
    // An expert that saw no token gets ones.
    assert_eq!(means[1].1, [0.5, 1.0, 1.0, 1.0]);
}

fn legacy(entries: &[(&str, i32, &[f32])], tail: bool) -> Vec<u8> {
    let mut b = (entries.len() as i32).to_le_bytes().to_vec();
    for (name, ncall, vals) in entries {
        b.extend((name.len() as i32).to_le_bytes());
        b.extend(name.as_bytes());
        b.extend(ncall.to_le_bytes());
        b.extend((vals.len() as i32).to_le_bytes());
        vals.iter().for_each(|v| b.extend(v.to_le_bytes()));
    }
    if tail {
        b.extend(7i32.to_le_bytes());
        b.extend(4i32.to_le_bytes());
        b.extend(b"a.tx");
    }
    b
}

#[test]
fn a_legacy_dat_file_is_read_and_its_sums_divided_by_its_calls() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.dat");
    std::fs::write(&p, legacy(&[("blk.0.attn_q.weight", 2, &[2.0, 4.0])], true)).unwrap();
    let m = Imatrix::read(&p).unwrap();
    assert!(m.legacy);
    assert_eq!(
        (m.chunk_count, m.datasets.clone()),
        (7, vec!["a.tx".to_string()])
    );
    assert_eq!(m.means()[0].1, [1.0, 2.0]);
}

#[test]
fn truncated_or_absurd_files_are_refused_without_allocating_their_claims() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.dat");
    let full = legacy(&[("blk.0.attn_q.weight", 2, &[2.0, 4.0])], false);
    for cut in [2, 10, full.len() - 1] {
        std::fs::write(&p, &full[..cut]).unwrap();
        let e = Imatrix::read(&p).unwrap_err().to_string();
        assert!(e.contains("not an imatrix llama.cpp reads"), "{e}");
    }
    // A name length and a value count of two billion in a 30-byte file.
    let mut huge = 1i32.to_le_bytes().to_vec();
    huge.extend(i32::MAX.to_le_bytes());
    std::fs::write(&p, &huge).unwrap();
    assert!(
        Imatrix::read(&p)
            .unwrap_err()
            .to_string()
            .contains("ends inside a name")
    );
    let mut huge = legacy(&[("x", 1, &[])], false);
    huge.truncate(huge.len() - 4);
    huge.extend(i32::MAX.to_le_bytes());
    std::fs::write(&p, &huge).unwrap();
    assert!(
        Imatrix::read(&p)
            .unwrap_err()
            .to_string()
            .contains("ends inside the values")
    );
}

#[test]
fn an_imatrix_of_another_model_is_refused() {
    let m = sample();
    let ok = header(&[
        ("blk.0.attn_q.weight", &[3, 8]),
        ("blk.0.ffn_up_exps.weight", &[2, 8, 2]),
    ]);
    assert_eq!(m.check_model(&ok), Ok(()));
    let e = m
        .check_model(&header(&[("blk.0.attn_q.weight", &[3, 8])]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("blk.0.ffn_up_exps.weight, a tensor the model lacks"),
        "{e}"
    );
    let wide = header(&[
        ("blk.0.attn_q.weight", &[4, 8]),
        ("blk.0.ffn_up_exps.weight", &[2, 8, 2]),
    ]);
    let e = m.check_model(&wide).unwrap_err().to_string();
    assert!(
        e.contains("holds 3 values, the model's tensor takes 4"),
        "{e}"
    );
}

#[test]
fn backend_decorations_are_stripped_from_weight_names() {
    assert_eq!(
        weight_name("CUDA0#blk.0.attn_k.weight#0"),
        "blk.0.attn_k.weight"
    );
    assert_eq!(weight_name("blk.0.attn_k.weight"), "blk.0.attn_k.weight");
}
