use super::*;

const SYSTEM_INFO: &str = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | \
    BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | \
    LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |";

const PROBED: &[(&str, bool)] = &[
    ("SSE3", true),
    ("AVX", true),
    ("AVX2", true),
    ("FMA", true),
    ("F16C", true),
    ("AVX512", true),
    ("AVX_VNNI", false),
    ("NEON", false),
];

/// Facts with every optional part present and values that show up only where they belong.
fn sample() -> MachineFacts {
    let stamp: BTreeMap<String, String> = [
        ("llama_cpp_sys_2", "0.1.161"),
        ("llama_cpp_rs_commit", "abcdef0123456789"),
        ("backend", "cuda"),
        ("built_at", "2026-11-30T00:00:00Z"),
        ("host", "builder"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into();
    let mut build = LlamaBuild {
        sys_crate_version: "0.1.161".into(),
        build_number: None,
        build_commit: Some("llama-cpp-rs@e7af607ebd5e".into()),
        system_info: SYSTEM_INFO.into(),
        gpu_backend: "cuda".into(),
        cmake_flags: "GGML_NATIVE=ON".into(),
        cpu_features: simd_features(PROBED, SYSTEM_INFO),
        library: Some(crate::engine::linkage::Library {
            linkage: "dynamic".into(),
            path: "/opt/llama/libllama.so".into(),
            ggml_version: "0.26.0".into(),
            stamp: Some(stamp),
        }),
    };
    build.build_number = Some(7000);
    MachineFacts {
        tool: ToolInfo {
            name: "tpsbench".into(),
            version: "0.1.0".into(),
            git_commit: Some("2134a7bc84a3".into()),
        },
        system: SystemInfo {
            cpu_model: "AMD EPYC 9654".into(),
            physical_cores: 96,
            logical_cores: 192,
            ram_bytes: 3 << 40,
            os: "Linux (Debian GNU/Linux 12)".into(),
            kernel: "6.1.0".into(),
            arch: "x86_64".into(),
            hostname: "node7".into(),
        },
        cmake_flags: build.cmake_flags.clone(),
        llama_cpp: build,
        cpu_features: feature_map(PROBED, SYSTEM_INFO),
        simd_missing: vec!["AVX512".into()],
        host_bandwidth: Bandwidth {
            read_gbs: 301.5,
            copy_gbs: 250.25,
            threads: 96,
            buffer_bytes: 512 << 20,
            llc_bytes: Some(384 << 20),
            llc_read_gbs: Some(1200.75),
            machine: "AMD EPYC 9654 | 192 cores".into(),
            measured_at: "2026-11-30T01:02:03Z".into(),
            load_average: Some([0.12, 0.2, 0.3]),
        },
        power_source: Some("rapl".into()),
        gpus: vec![GpuFacts {
            name: "NVIDIA H200".into(),
            memory_total: 141 << 30,
            compute_capability: Some("9.0".into()),
            driver_version: Some("570.1".into()),
        }],
        devices: vec![DeviceInfo {
            name: "CUDA0".into(),
            description: "NVIDIA H200".into(),
            backend: "CUDA".into(),
            kind: crate::engine::DeviceKind::Gpu,
            memory_total: 141 << 30,
            memory_free: 140 << 30,
        }],
    }
}

#[test]
fn every_fact_in_the_text_is_read_from_the_json() {
    let json = sample().to_json();
    let reader = Reader {
        v: &json,
        read: Default::default(),
    };
    let text = render(&reader);
    assert_eq!(text, sample().to_text());
    let read = reader.read.borrow();
    assert!(read.len() > 40, "the text reads {} facts", read.len());
    for path in read.iter() {
        let v = json.pointer(path);
        assert!(
            v.is_some_and(|v| !v.is_null()),
            "the text shows {path}, which the JSON lacks"
        );
    }
}

#[test]
fn the_json_holds_the_bandwidth_probe_and_the_power_source_the_text_prints() {
    let f = sample();
    let (json, text) = (f.to_json(), f.to_text());
    assert_eq!(json["host_bandwidth"]["read_gbs"], 301.5);
    assert_eq!(json["host_bandwidth"]["llc_read_gbs"], 1200.75);
    assert_eq!(json["power_source"], "rapl");
    assert!(
        text.contains("host DRAM read 301.5 GB/s, copy 250.2 GB/s (96 threads"),
        "{text}"
    );
    assert!(
        text.contains("cache-resident read 1200.8 GB/s (384 MiB"),
        "{text}"
    );
    assert!(text.contains("power:    rapl\n"), "{text}");
    // No power source: null in the JSON, said in words in the text.
    let none = MachineFacts {
        power_source: None,
        ..sample()
    };
    assert!(none.to_json().get("power_source").unwrap().is_null());
    assert!(
        none.to_text()
            .contains("power:    none readable (no NVML, no RAPL)")
    );
}

#[test]
fn the_simd_line_has_every_instruction_set_llama_cpp_lists_and_no_build_options() {
    let f = sample();
    let text = f.to_text();
    let simd = text.lines().find(|l| l.starts_with("SIMD:")).unwrap();
    assert_eq!(
        simd,
        "SIMD:     SSE3 AVX AVX2 FMA F16C AVX512 SSSE3 BMI2 AVX512_VBMI AVX512_VNNI AVX512_BF16"
    );
    let json = f.to_json();
    for k in ["AVX512_VNNI", "AVX512_BF16", "AVX512_VBMI"] {
        assert_eq!(json["cpu_features"][k], true, "{k}");
    }
    assert_eq!(
        json["cpu_features"]["NEON"], false,
        "probed features keep false"
    );
}

#[test]
fn only_the_cpu_section_of_system_info_is_read() {
    let info = "CUDA : ARCHS = 900 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | \
                CPU : SSE3 = 1 | AVX2 = 1 | AVX512_BF16 = 1 | OPENMP = 1 |";
    let got = cpu_backend_features(info);
    let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["SSE3", "AVX2", "AVX512_BF16", "OPENMP"]);
    assert_eq!(
        simd_features(&[("AVX2", true), ("NEON", false)], info),
        ["AVX2", "SSE3", "AVX512_BF16"]
    );
    assert!(cpu_backend_features("").is_empty());
}
