//! The structured corruptions of the tiny model: wrong, missing and out-of-range metadata,
//! odd vocabularies, missing or misshapen tensors, and every tensor type in four places.

use tpsbench::gguf::Value;
use tpsbench::gguf::writer::{Document, TensorData};

pub type Mutation = Box<dyn Fn(&mut Document)>;
type ArrayEdit = (&'static str, &'static str, fn(&mut Vec<Value>));

fn set(doc: &mut Document, key: &str, v: Option<Value>) {
    doc.metadata.retain(|(k, _)| k != key);
    doc.metadata.extend(v.map(|v| (key.to_string(), v)));
}

fn meta(key: &'static str, v: Option<Value>) -> Mutation {
    Box::new(move |d| set(d, key, v.clone()))
}

fn metas(pairs: Vec<(&'static str, Value)>) -> Mutation {
    Box::new(move |d| {
        for (k, v) in &pairs {
            set(d, k, Some(v.clone()));
        }
    })
}

fn edit_array(key: &'static str, f: fn(&mut Vec<Value>)) -> Mutation {
    Box::new(move |d| {
        for (k, v) in &mut d.metadata {
            if let (true, Value::Array(a)) = (k == key, v) {
                f(a)
            }
        }
    })
}

fn s(x: &str) -> Value {
    Value::String(x.into())
}

fn u(x: u32) -> Value {
    Value::U32(x)
}

pub fn variants() -> Vec<(String, Mutation)> {
    let mut v: Vec<(String, Mutation)> = vec![("unchanged".into(), Box::new(|_| {}))];
    let mut add = |name: String, m: Mutation| v.push((name, m));
    add("arch missing".into(), meta("general.architecture", None));
    for a in [u(1), s(""), s("bogus"), s("gpt2"), s("mamba"), s("clip")] {
        add(format!("arch {a:?}"), meta("general.architecture", Some(a)));
    }
    let odd_values = [
        s("x"),
        u(0),
        u(u32::MAX),
        Value::U64(1 << 40),
        Value::I32(-1),
        Value::F32(1.5),
        Value::F32(f32::NAN),
        Value::Array(vec![u(4)]),
        Value::Array(vec![s("a"), s("b")]),
    ];
    for key in [
        "llama.context_length",
        "llama.embedding_length",
        "llama.block_count",
        "llama.feed_forward_length",
        "llama.attention.head_count",
        "llama.attention.head_count_kv",
        "llama.rope.dimension_count",
        "llama.attention.layer_norm_rms_epsilon",
        "llama.rope.freq_base",
        "llama.vocab_size",
    ] {
        add(format!("{key} missing"), meta(key, None));
        for x in &odd_values {
            add(format!("{key} = {x:?}"), meta(key, Some(x.clone())));
        }
    }
    for (key, n) in [
        ("llama.block_count", 1),
        ("llama.block_count", 3),
        ("llama.block_count", 513),
        ("llama.attention.head_count", 3),
        ("llama.attention.head_count", 512),
        ("llama.attention.head_count_kv", 3),
        ("llama.attention.head_count_kv", 8),
        ("llama.attention.head_count_kv", 0x8000_0002),
        ("llama.embedding_length", 255),
        ("llama.feed_forward_length", 7),
        ("llama.rope.dimension_count", 16),
        ("llama.context_length", 1),
        ("llama.expert_count", 4),
        ("llama.expert_count", 1000),
        ("llama.expert_used_count", 2),
        ("llama.nextn_predict_layers", 5),
        ("llama.attention.key_length", 0),
        ("llama.attention.key_length", 32),
        ("llama.attention.value_length", 0),
        ("llama.vocab_size", 10),
        ("tokenizer.ggml.token_type_count", 1_000_000),
        ("general.alignment", 0),
        ("general.alignment", 3),
        ("general.alignment", 64),
        ("llama.pooling_type", 99),
        ("general.file_type", 999),
    ] {
        add(format!("{key} = {n}"), meta(key, Some(u(n))));
    }
    let per_layer = |a: Vec<u32>| Some(Value::Array(a.into_iter().map(u).collect()));
    for (key, a) in [
        ("llama.attention.head_count", vec![4, 4, 4]),
        ("llama.attention.head_count", vec![4, 0]),
        ("llama.feed_forward_length", vec![512, 0]),
    ] {
        add(format!("{key} = {a:?}"), meta(key, per_layer(a.clone())));
    }
    for (key, x) in [
        ("general.alignment", Value::U64(32)),
        ("llama.rope.scaling.type", s("bogus")),
        ("llama.rope.scaling.type", u(1)),
        ("llama.rope.scaling.factor", Value::F32(f32::NAN)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(-1.0)),
        ("general.file_type", s("q")),
        ("general.name", u(3)),
        ("tokenizer.ggml.model", u(1)),
        ("tokenizer.ggml.add_bos_token", u(1)),
        ("tokenizer.ggml.tokens", Value::Array(vec![])),
        ("tokenizer.ggml.tokens", Value::Array(vec![u(1); 375])),
        ("tokenizer.ggml.tokens", s("a")),
    ] {
        add(format!("{key} = {x:?}"), meta(key, Some(x)));
    }
    for key in [
        "tokenizer.ggml.model",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.scores",
        "tokenizer.ggml.token_type",
    ] {
        add(format!("{key} missing"), meta(key, None));
    }
    for m in [
        "bogus",
        "gpt2",
        "bert",
        "t5",
        "rwkv",
        "plamo2",
        "none",
        "no_vocab",
        "hybriddna",
        "whitespace",
        "",
    ] {
        add(
            format!("tokenizer {m:?}"),
            meta("tokenizer.ggml.model", Some(s(m))),
        );
    }
    let merges = |m: Vec<Value>| Value::Array(m);
    for (name, pairs) in [
        (
            "gpt2, empty merges",
            vec![("tokenizer.ggml.merges", merges(vec![]))],
        ),
        (
            "gpt2, u32 merges",
            vec![("tokenizer.ggml.merges", merges(vec![u(1)]))],
        ),
        (
            "gpt2, odd merges",
            vec![(
                "tokenizer.ggml.merges",
                merges(vec![s(""), s(" "), s("zz qq")]),
            )],
        ),
        (
            "gpt2, unknown pre-tokenizer",
            vec![
                ("tokenizer.ggml.merges", merges(vec![s("a b")])),
                ("tokenizer.ggml.pre", s("bogus")),
            ],
        ),
    ] {
        let mut pairs = pairs;
        pairs.push(("tokenizer.ggml.model", s("gpt2")));
        add(name.into(), metas(pairs));
    }
    add(
        "t5 with an 8-byte charsmap".into(),
        metas(vec![
            ("tokenizer.ggml.model", s("t5")),
            (
                "tokenizer.ggml.precompiled_charsmap",
                Value::Array(vec![Value::U8(255); 8]),
            ),
        ]),
    );
    let arrays: [ArrayEdit; 15] = [
        ("10 tokens", "tokenizer.ggml.tokens", |a| a.truncate(10)),
        ("one more token", "tokenizer.ggml.tokens", |a| {
            a.push(s("zzz"))
        }),
        ("duplicate token", "tokenizer.ggml.tokens", |a| {
            a[300] = a[299].clone()
        }),
        ("empty token", "tokenizer.ggml.tokens", |a| a[300] = s("")),
        ("empty token + [EMPTY_300]", "tokenizer.ggml.tokens", |a| {
            a[300] = s("");
            a[301] = s("[EMPTY_300]");
        }),
        ("no <0x0A> token", "tokenizer.ggml.tokens", |a| {
            a[13] = s("nl")
        }),
        ("5 scores", "tokenizer.ggml.scores", |a| a.truncate(5)),
        ("one more score", "tokenizer.ggml.scores", |a| {
            a.push(Value::F32(0.0))
        }),
        ("int32 scores", "tokenizer.ggml.scores", |a| {
            a.fill(Value::I32(1))
        }),
        ("string scores", "tokenizer.ggml.scores", |a| a.fill(s("s"))),
        ("NaN scores", "tokenizer.ggml.scores", |a| {
            a.fill(Value::F32(f32::NAN))
        }),
        ("5 token types", "tokenizer.ggml.token_type", |a| {
            a.truncate(5)
        }),
        ("uint32 token types", "tokenizer.ggml.token_type", |a| {
            a.fill(u(1))
        }),
        ("token type 99", "tokenizer.ggml.token_type", |a| {
            a[300] = Value::I32(99)
        }),
        ("all byte tokens", "tokenizer.ggml.token_type", |a| {
            a.fill(Value::I32(6))
        }),
    ];
    for (name, key, f) in arrays {
        add(name.into(), edit_array(key, f));
    }
    for key in [
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id",
        "tokenizer.ggml.padding_token_id",
        "tokenizer.ggml.eot_token_id",
    ] {
        add(format!("{key} missing"), meta(key, None));
        for x in [u(100_000), Value::I32(-1), s("x")] {
            add(format!("{key} = {x:?}"), meta(key, Some(x)));
        }
    }
    tensors(&mut add);
    v
}

fn tensors(add: &mut impl FnMut(String, Mutation)) {
    fn tensor<'a>(d: &'a mut Document, name: &str) -> &'a mut tpsbench::gguf::writer::Tensor {
        d.tensors.iter_mut().find(|t| t.name == name).unwrap()
    }
    for name in [
        "token_embd.weight",
        "output.weight",
        "output_norm.weight",
        "blk.0.attn_q.weight",
        "blk.1.ffn_down.weight",
    ] {
        add(
            format!("tensor {name} missing"),
            Box::new(move |d| d.tensors.retain(|t| t.name != name)),
        );
    }
    for (name, dims) in [
        ("blk.0.attn_q.weight", vec![256u64, 128]),
        ("blk.0.attn_q.weight", vec![256]),
        ("blk.0.attn_q.weight", vec![256, 256, 1]),
        ("blk.0.attn_q.weight", vec![256, 256, 2]),
        ("token_embd.weight", vec![256, 100]),
        ("token_embd.weight", vec![256, 1000]),
        ("output.weight", vec![256, 100]),
        ("output_norm.weight", vec![512]),
    ] {
        add(
            format!("tensor {name} dims {dims:?}"),
            Box::new(move |d| tensor(d, name).dims = dims.clone()),
        );
    }
    add(
        "extra tensor".into(),
        Box::new(|d| {
            let mut t = d.tensors[1].clone();
            t.name = "foo.weight".into();
            d.tensors.push(t);
        }),
    );
    add(
        "tensor name of 70 bytes".into(),
        Box::new(|d| d.tensors[1].name = "x".repeat(70)),
    );
    add(
        "empty tensor name".into(),
        Box::new(|d| d.tensors[1].name = String::new()),
    );
    let types = tpsbench::gguf::GGML_TYPES
        .iter()
        .map(|t| t.0)
        .filter(|&t| t != 0);
    for ty in types {
        for name in [
            "blk.0.attn_q.weight",
            "token_embd.weight",
            "output_norm.weight",
            "output.weight",
        ] {
            add(
                format!("tensor {name} type {ty}"),
                Box::new(move |d| {
                    let t = tensor(d, name);
                    t.ggml_type = ty;
                    t.data = TensorData::Zeros;
                }),
            );
        }
    }
}
