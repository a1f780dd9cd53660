//! The speculative speedup's interval (issue 45), on `record::speculative::Speculative::derive`
//! itself: rounds whose plain and speculative rates share the round's swing (the pairing) and
//! each have their own noise, at a known true speedup. The 95% interval must cover it 95% of
//! the time at 3, 5 and 10 rounds, however large the shared swing.

use tpsbench::record::speculative::{SpecPrompts, SpecRound, Speculative};

use super::Noise;

fn record(rounds: Vec<SpecRound>) -> Speculative {
    let prompts = SpecPrompts {
        dataset: "mc".into(),
        sha256: String::new(),
        format: "prompts".into(),
        seed: 0,
        n_prompts: 1,
        prompt_tokens: 0,
        gen_tokens: 0,
    };
    Speculative::of_rounds(
        tpsbench::config::speculative::Drafter::DraftSimple,
        prompts,
        rounds,
    )
}

#[test]
fn the_speedup_interval_covers_the_true_speedup_95_percent_of_the_time() {
    const TRIALS: usize = 4000;
    let true_ratio = 1.4;
    println!("\nspeculative speedup interval, {TRIALS} trials each (true speedup {true_ratio}×)");
    println!("| rounds | shared swing | own noise | coverage | mean half-width |");
    println!("|---:|---:|---:|---:|---:|");
    let mut noise = Noise::new(45);
    for &(n_rounds, shared, own) in &[
        (3, 0.08, 0.03),
        (5, 0.08, 0.03),
        (10, 0.08, 0.03),
        (5, 0.3, 0.05),
    ] {
        let (mut covered, mut width) = (0usize, 0.0);
        for _ in 0..TRIALS {
            let rounds = (0..n_rounds)
                .map(|r| {
                    let swing = (shared * noise.z()).exp();
                    let plain = 100.0 * swing * (own * noise.z()).exp();
                    let spec = 100.0 * true_ratio * swing * (own * noise.z()).exp();
                    SpecRound {
                        plain_first: r % 2 == 0,
                        plain_tokens: 1000,
                        plain_ns: (1000.0 / plain * 1e9) as u64,
                        spec_tokens: 1000,
                        spec_ns: (1000.0 / spec * 1e9) as u64,
                    }
                })
                .collect();
            let sp = record(rounds).speedup.expect("2 rounds or more");
            if sp.lo <= true_ratio && true_ratio <= sp.hi {
                covered += 1;
            }
            width += (sp.hi / sp.lo).ln() / 2.0;
        }
        let cov = covered as f64 / TRIALS as f64;
        println!(
            "| {n_rounds} | {:.0}% | {:.0}% | {cov:.3} | {:.1}% |",
            shared * 100.0,
            own * 100.0,
            width / TRIALS as f64 * 100.0
        );
        // Three binomial standard errors either side of 0.95.
        let se = (0.95 * 0.05 / TRIALS as f64).sqrt();
        assert!(
            (cov - 0.95).abs() <= 3.0 * se,
            "{n_rounds} rounds: coverage {cov}"
        );
    }
}
