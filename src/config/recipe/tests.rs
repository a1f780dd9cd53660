use super::*;

fn variant(src: &str) -> Result<RecipeVariant, String> {
    let v: toml::Table = toml::from_str(&format!("v = {src}")).unwrap();
    parse_variant(&v["v"], Path::new("dir")).map_err(|e| e.0)
}

#[test]
fn a_full_recipe_is_read_with_paths_beside_the_configuration() {
    let v = variant(
        r#"{ name = "Q4_K_M-imat", type = "q4_k_m", imatrix = "x.imatrix", tensor_types = ["Attn_V=Q6_K", "ffn_down=q6_k"], output = "Q6_K", token_embd = "Q4_K", pure = true, template = "t.gguf" }"#,
    )
    .unwrap();
    assert_eq!((v.name.as_str(), v.quant.name), ("Q4_K_M-imat", "Q4_K_M"));
    let r = &v.recipe;
    assert_eq!(r.imatrix, Some(ImatrixSource::File("dir/x.imatrix".into())));
    assert_eq!(
        r.tensor_types,
        [("attn_v".to_string(), 14), ("ffn_down".to_string(), 14)]
    );
    assert_eq!((r.output, r.token_embd, r.pure), (Some(14), Some(12), true));
    assert_eq!(r.template.as_deref(), Some(Path::new("dir/t.gguf")));
    assert_eq!(
        r.overrides_text(),
        [
            "attn_v=Q6_K",
            "ffn_down=Q6_K",
            "output=Q6_K",
            "token_embd=Q4_K",
            "pure",
            "template=t.gguf"
        ]
    );
}

#[test]
fn an_imatrix_from_text_defaults_to_llama_imatrix_ctx_and_every_chunk() {
    let v = variant(r#"{ name = "iq", type = "IQ3_XXS", imatrix = { text = "c.txt" } }"#).unwrap();
    let text = ImatrixSource::Text {
        text: "dir/c.txt".into(),
        n_ctx: 512,
        n_chunks: None,
    };
    assert_eq!(v.recipe.imatrix, Some(text));
    let v = variant(
        r#"{ name = "iq", type = "IQ4_XS", imatrix = { text = "c.txt", ctx = 128, chunks = 3 } }"#,
    );
    assert!(matches!(
        v.unwrap().recipe.imatrix,
        Some(ImatrixSource::Text {
            n_ctx: 128,
            n_chunks: Some(3),
            ..
        })
    ));
}

#[test]
fn mistakes_say_what_is_wrong() {
    for (src, says) in [
        (
            r#"{ name = "a", type = "Q4_K_M", tensor_types = ["attn_v=Q9_K"] }"#,
            "unknown tensor type \"Q9_K\"",
        ),
        (
            r#"{ name = "a", type = "Q4_K_M", output = "bogus" }"#,
            "unknown tensor type",
        ),
        (
            r#"{ name = "a", type = "Q4_K_M", tensor_types = ["attn_v"] }"#,
            "is not pattern=type",
        ),
        (
            r#"{ name = "a", type = "Q4_K_M", tensor_types = ["blk.(0=Q6_K"] }"#,
            "not a valid regular expression",
        ),
        (
            r#"{ name = "a", type = "IQ3_XXS" }"#,
            "needs an importance matrix",
        ),
        (
            r#"{ name = "a", type = "Q4_K_M", tensor_types = ["attn_v=IQ2_XS"] }"#,
            "IQ2_XS tensors need an importance matrix",
        ),
        (
            r#"{ name = "a", type = "Q4_K_M", bogus = 1 }"#,
            "unknown field `bogus`",
        ),
        (r#"{ name = "a/b", type = "Q4_K_M" }"#, "no '/'"),
        (
            r#"{ name = "a", type = "Q4_K_M", imatrix = { text = "c.txt", ctx = 4 } }"#,
            "out of range",
        ),
        (
            r#"{ name = "a", type = "Q4_K_M", imatrix = 3 }"#,
            "give a file",
        ),
    ] {
        let e = variant(src).unwrap_err();
        assert!(e.contains(says), "{src}: {e}");
    }
}

#[test]
fn ggml_type_names_are_llama_quantizes() {
    assert_eq!(ggml_type("q8_0"), Ok(8));
    assert_eq!(ggml_type("IQ4_XS"), Ok(23));
    assert_eq!(
        tensor_type("blk\\.0\\..*=F16"),
        Ok(("blk\\.0\\..*".into(), 1))
    );
    assert!(needs_imatrix(18) && !needs_imatrix(23));
}
