//! `tpsbench run --shard i/n`: shard `i` of `n` (0-based, as Slurm array indices), computed
//! alike on every machine, every test in exactly one shard. The split follows load groups,
//! since loading is the expensive part: with enough groups, whole groups go largest first to
//! the emptiest shard; with fewer groups than shards, a group's tests are dealt back and forth
//! over a block of shards, so each shard loads one setting and gets both pp and tg tests.

use std::fmt;
use std::str::FromStr;

use super::PlannedTest;

/// Shard `index` of `count` (0 ≤ index < count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    /// Parses `i/n`, e.g. `0/4`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!("invalid shard {s:?}: expected INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4")
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The tests of shard `index` of `count`, in plan order. Empty when `count` is 0, `index` is
/// out of range, or there are fewer tests than shards and this shard got none.
pub fn shard(tests: &[PlannedTest], index: usize, count: usize) -> Vec<PlannedTest> {
    if count == 0 || index >= count {
        return Vec::new();
    }
    assign(tests, count)
        .into_iter()
        .zip(tests)
        .filter(|(s, _)| *s == index)
        .map(|(_, t)| t.clone())
        .collect()
}

/// The shard of every test: `result[k]` is the shard of `tests[k]`. `count` must be > 0.
pub fn assign(tests: &[PlannedTest], count: usize) -> Vec<usize> {
    let groups = load_groups(tests);
    let mut out = vec![0; tests.len()];
    if groups.len() >= count {
        // Largest group first, to the least loaded shard; ties go to the lower index.
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by_key(|&g| (std::cmp::Reverse(groups[g].len()), g));
        let mut load = vec![0usize; count];
        for g in order {
            let s = (0..count).min_by_key(|&s| (load[s], s)).unwrap_or(0);
            load[s] += groups[g].len();
            for &k in &groups[g] {
                out[k] = s;
            }
        }
        return out;
    }
    // Fewer groups than shards: one shard per group, then each spare shard to the group
    // with the most tests per shard (that still has a test for it).
    let mut shards_of: Vec<usize> = vec![1; groups.len()];
    for _ in groups.len()..count {
        let best = (0..groups.len())
            .filter(|&g| groups[g].len() > shards_of[g])
            .max_by(|&a, &b| {
                // a/ka vs b/kb without floats; ties prefer the lower index (max_by keeps the last).
                let lhs = groups[a].len() * shards_of[b];
                let rhs = groups[b].len() * shards_of[a];
                lhs.cmp(&rhs).then(b.cmp(&a))
            });
        match best {
            Some(g) => shards_of[g] += 1,
            None => break, // more shards than tests: the rest stay empty
        }
    }
    let mut first = 0;
    for (g, members) in groups.iter().enumerate() {
        let n = shards_of[g];
        for (j, &k) in members.iter().enumerate() {
            let (round, at) = (j / n, j % n);
            out[k] = first + if round % 2 == 0 { at } else { n - 1 - at };
        }
        first += shards_of[g];
    }
    out
}

/// Indices of consecutive tests that one model load serves.
fn load_groups(tests: &[PlannedTest]) -> Vec<Vec<usize>> {
    // Quality tests (no load key) of one model stay together too.
    let same =
        |(p, t): (&PlannedTest, &PlannedTest)| p.model == t.model && p.load_key() == t.load_key();
    let index: Vec<usize> = (0..tests.len()).collect();
    index
        .chunk_by(|&a, &b| same((&tests[a], &tests[b])))
        .map(<[usize]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Axes;
    use crate::plan::expand_axes;

    /// `groups[m]` tests for model m (one load group each), ids `m<model>/<k>`.
    fn plan(groups: &[usize]) -> Vec<PlannedTest> {
        let base = expand_axes(&Axes::llama_bench_defaults(2)).remove(0);
        let mut v = Vec::new();
        for (m, &n) in groups.iter().enumerate() {
            for k in 0..n {
                let mut params = base.clone();
                params.n_prompt = 16 * (k as u32 + 1);
                v.push(PlannedTest::bench(m, format!("m{m}/{k}"), params));
            }
        }
        v
    }

    fn check_partition(tests: &[PlannedTest], n: usize) -> Vec<Vec<PlannedTest>> {
        let shards: Vec<Vec<PlannedTest>> = (0..n).map(|i| shard(tests, i, n)).collect();
        let mut ids: Vec<String> = shards.iter().flatten().map(|t| t.id.clone()).collect();
        assert_eq!(
            ids.len(),
            tests.len(),
            "every test lands in exactly one shard"
        );
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), tests.len(), "no test lands in two shards");
        for s in &shards {
            let pos: Vec<usize> = s
                .iter()
                .map(|t| tests.iter().position(|x| x.id == t.id).unwrap())
                .collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]), "plan order kept");
        }
        shards
    }

    fn loads(shards: &[Vec<PlannedTest>]) -> usize {
        shards
            .iter()
            .map(|s| {
                let mut m: Vec<usize> = s.iter().map(|t| t.model).collect();
                m.dedup();
                m.len()
            })
            .sum()
    }

    #[test]
    fn whole_groups_when_there_are_enough_and_sizes_balance() {
        let tests = plan(&[6, 2, 3, 3]);
        let shards = check_partition(&tests, 2);
        assert_eq!(loads(&shards), 4, "each model is loaded on one shard only");
        let sizes: Vec<usize> = shards.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![8, 6], "6 → s0, 3 → s1, 3 → s1, 2 → s0");
        assert!(shards[0].iter().any(|t| t.model == 0));
    }

    #[test]
    fn one_model_over_many_shards_is_dealt_round_robin_back_and_forth() {
        let tests = plan(&[7]);
        let shards = check_partition(&tests, 3);
        let ids: Vec<Vec<&str>> = shards
            .iter()
            .map(|s| s.iter().map(|t| t.id.as_str()).collect())
            .collect();
        assert_eq!(ids[0], vec!["m0/0", "m0/5", "m0/6"]);
        assert_eq!(ids[1], vec!["m0/1", "m0/4"]);
        assert_eq!(ids[2], vec!["m0/2", "m0/3"]);
        // Alternating pp, tg tests over 2 shards: each shard gets both kinds.
        let two = shard(&tests, 0, 2);
        assert_eq!(
            two.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["m0/0", "m0/3", "m0/4"]
        );
        assert_eq!(loads(&shards), 3, "one load per shard");
    }

    #[test]
    fn spare_shards_go_to_the_bigger_groups_and_no_shard_loads_two_models() {
        let tests = plan(&[8, 2]);
        let shards = check_partition(&tests, 4);
        // 8 tests get 3 shards, 2 tests get 1
        assert_eq!(loads(&shards), 4);
        assert!(shards[..3].iter().all(|s| s.iter().all(|t| t.model == 0)));
        assert!(shards[3].iter().all(|t| t.model == 1) && shards[3].len() == 2);
    }

    #[test]
    fn more_shards_than_tests_leaves_some_empty_and_loses_nothing() {
        let tests = plan(&[1, 2]);
        let shards = check_partition(&tests, 5);
        assert_eq!(shards.iter().filter(|s| s.is_empty()).count(), 2);
        assert!(shard(&tests, 5, 5).is_empty() && shard(&tests, 0, 0).is_empty());
    }

    #[test]
    fn deterministic_and_one_shard_is_the_whole_plan() {
        let tests = plan(&[3, 5, 1, 4]);
        for n in 1..=8 {
            assert_eq!(assign(&tests, n), assign(&tests, n));
            check_partition(&tests, n);
        }
        assert_eq!(shard(&tests, 0, 1), tests);
    }

    #[test]
    fn gpu_layer_values_are_separate_load_groups() {
        let mut tests = plan(&[4]);
        tests[2].params.n_gpu_layers = 0;
        tests[3].params.n_gpu_layers = 0;
        let shards = check_partition(&tests, 2);
        assert_eq!(shards[0].len(), 2);
        assert!(shards[1].iter().all(|t| t.params.n_gpu_layers == 0));
    }

    #[test]
    fn parses_index_slash_count() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "3", "-1/2", ""] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("expected INDEX/COUNT"), "{bad}: {e}");
        }
        assert_eq!(Shard { index: 1, count: 3 }.to_string(), "1/3");
    }
}
