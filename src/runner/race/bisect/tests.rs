use super::*;

/// The probes `boundary` runs over `n` values of which the first `fits` pass.
fn probes(n: usize, fits: usize) -> (Option<usize>, Probes) {
    let mut f = |k: usize| Ok::<bool, ()>(k < fits);
    boundary(n, &mut f).unwrap()
}

#[test]
fn the_most_offload_is_probed_first_and_one_probe_suffices_when_it_fits() {
    assert_eq!(probes(33, 33), (Some(32), vec![(32, true)]));
    assert_eq!(probes(0, 0), (None, vec![]));
}

#[test]
fn the_boundary_is_found_in_a_logarithmic_number_of_probes_for_every_split() {
    for n in 1..=40usize {
        for fits in 0..=n {
            let (b, p) = probes(n, fits);
            assert_eq!(b, fits.checked_sub(1), "n {n}, fits {fits}");
            // The top, then at most ceil(log2(n)) halvings.
            let most = 1 + (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize;
            assert!(p.len() <= most, "n {n} fits {fits}: {p:?}");
            // The boundary's pass and the next value's failure were both seen (when they exist).
            if let Some(k) = b {
                assert!(p.contains(&(k, true)), "{p:?}");
            }
            if fits < n {
                assert!(p.contains(&(fits, false)), "n {n} fits {fits}: {p:?}");
            }
        }
    }
    // 33 values (n_gpu_layers 0..=32), 20 fit: 6 probes, not 33 tests.
    assert_eq!(probes(33, 20).1.len(), 6);
}

#[test]
fn a_probe_that_errs_stops_the_bisection() {
    let mut f = |k: usize| if k == 32 { Ok(false) } else { Err(k) };
    assert_eq!(boundary(33, &mut f), Err(16));
}

fn cand(model: usize, ngl: i32, ncmoe: i64, ub: u32) -> PlannedTest {
    let mut params =
        crate::plan::expand_axes(&crate::config::Axes::llama_bench_defaults(1))[0].clone();
    params.n_gpu_layers = ngl;
    params.n_ubatch = ub;
    params.knobs.set("n_cpu_moe", KnobValue::Int(ncmoe));
    PlannedTest {
        model,
        id: format!("m{model}/ngl={ngl}/ncmoe={ncmoe}/ub={ub}"),
        params,
        kind: crate::plan::TestKind::Tg,
        detail: crate::plan::Detail::Bench,
        identity: String::new(),
    }
}

#[test]
fn groups_hold_the_candidates_that_differ_only_in_the_axis_in_order_of_offload() {
    let c = vec![
        cand(0, 99, 0, 64),
        cand(0, 0, 0, 64),
        cand(0, 99, 0, 128),
        cand(0, -1, 0, 64),
        cand(0, 5, 0, 64),
        cand(1, 5, 0, 64),
    ];
    let ngl = &AXES[0];
    let g = groups(&c, ngl, &mut |_| true);
    // ngl 0 < 5 < 99 < -1 (every layer) for model 0 at ub 64.
    assert_eq!(g, vec![vec![1, 4, 0, 3], vec![2], vec![5]]);
    let c = vec![cand(0, 99, 0, 64), cand(0, 99, 4, 64), cand(0, 99, 2, 64)];
    // n_cpu_moe: fewer layers' experts on the CPU is more offload.
    assert_eq!(groups(&c, &AXES[1], &mut |_| true), vec![vec![1, 2, 0]]);
    assert!(groups(&c, &AXES[1], &mut |_| false).is_empty());
}
