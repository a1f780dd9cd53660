"""Shared parts of scripts/compare-*: where the reference tools and tpsbench builds are, the
default models, interleaving, and the statistics (median of per-round ratios with a bootstrap
95% interval, and a verdict that says "inconclusive" rather than guess).

Loaded by the compare scripts with importlib (the file name has a hyphen on purpose: it is
not a module anyone should import from elsewhere)."""
import json, math, os, random, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = [
    os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"),
    os.path.join(ROOT, "models/gemma-3-270m-Q4_K_M.gguf"),
]
DEFAULT_REF = os.path.join(ROOT, "reference-tools/shared")


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_average():
    """The 1, 5 and 15 minute load averages, as uptime prints them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs"


def reference(ref_dir, tool):
    """Path of a reference tool and the environment that makes it (and a dynamic-link
    tpsbench) load the reference's own shared libraries."""
    exe = os.path.join(ref_dir, "bin", tool)
    if not os.access(exe, os.X_OK):
        fail(f"{exe} is missing: build the reference tools first (scripts/reference-tools)")
    return exe, lib_env(ref_dir)


def lib_env(ref_dir):
    env = dict(os.environ)
    lib = os.path.join(os.path.abspath(ref_dir), "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def tpsbench_builds(args, ref_dir):
    """{linkage: (executable, environment)} for the linkages asked for. The static build is
    the default `cargo build --release`; the dynamic one a `--features dynamic-link` build
    run on the reference's libraries, which `tpsbench info --json` must confirm."""
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    paths = {
        "static": args.tpsbench_static or os.path.join(target, "release/tpsbench"),
        "dynamic": args.tpsbench_dynamic or os.path.join(ROOT, "target-dyn/release/tpsbench"),
    }
    builds = {}
    for linkage in args.linkage.split(","):
        if linkage not in paths:
            fail(f"--linkage takes static and/or dynamic, not {linkage!r}")
        exe = paths[linkage]
        if not os.access(exe, os.X_OK):
            how = "cargo build --release" if linkage == "static" else \
                "CARGO_TARGET_DIR=target-dyn cargo build --release --features dynamic-link"
            fail(f"{exe} is missing ({how}, or pass --tpsbench-{linkage})")
        env = lib_env(ref_dir) if linkage == "dynamic" else dict(os.environ)
        info = json.loads(subprocess.run([exe, "info", "--json"], env=env, check=True,
                                         capture_output=True, text=True).stdout)
        lib = info.get("llama_cpp", {}).get("library", {})
        if lib.get("linkage") != linkage:
            fail(f"{exe} runs llama.cpp {lib.get('linkage')}ally linked, not {linkage}")
        if linkage == "dynamic" and not os.path.realpath(lib.get("path", "")).startswith(
                os.path.realpath(os.path.join(ref_dir, "lib"))):
            fail(f"{exe} loaded {lib.get('path')}, not the reference's libraries in {ref_dir}/lib")
        builds[linkage] = (exe, env)
    return builds


def run_tpsbench(exe, env, config, extra=()):
    out = subprocess.run([exe, "run", "--quiet", "--no-save", "--output", "json", "--config", config, *extra],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def williams_orders(k):
    """A Williams design for k sides: every side takes every position in a round equally
    often and follows every other side equally often (k rows for even k, 2k for odd k).
    For two sides it is A B, B A."""
    first, lo, hi = [0], 1, k - 1
    while len(first) < k:
        first.append(lo)
        lo += 1
        if len(first) < k:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % k for x in first] for i in range(k)]
    if k % 2 == 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def interleaved(rounds, sides):
    """The order of each round, cycling through a Williams design (A B, then B A for two
    sides): drift, position and the launch before hit every side alike. With three sides (a
    tpsbench build, llama-bench and its A/A launch) a fixed A B C / C B A would always put
    llama-bench in the middle, after the other tool; rounds in multiples of 6 balance it."""
    rows = williams_orders(len(sides))
    for r in range(rounds):
        yield r, [sides[i] for i in rows[r % len(rows)]]


def design_length(n_sides):
    return len(williams_orders(n_sides))


def bootstrap_median(ratios, n=10000, seed=1):
    """Median of the per-round ratios and a percentile-bootstrap 95% interval of it."""
    return bootstrap_median_strata([ratios], n, seed)


def bootstrap_median_strata(groups, n=10000, seed=1):
    """Median of all groups' ratios together, with a percentile-bootstrap 95% interval that
    resamples inside each group (a set taken in its own phase of the machine) and keeps each
    group's size, so a long set cannot stand in for a short one."""
    pooled = [x for g in groups for x in g]
    med = statistics.median(pooled)
    if len(pooled) < 3:
        return med, None, None
    rng = random.Random(seed)
    meds = sorted(statistics.median([x for g in groups for x in rng.choices(g, k=len(g))]) for _ in range(n))
    return med, meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def verdict(lo, hi, tolerance):
    """Within ±tolerance of 1 when the whole interval is, outside when none of it is."""
    if lo is None:
        return "inconclusive (fewer than 3 rounds)"
    if 1 - tolerance <= lo and hi <= 1 + tolerance:
        return f"within ±{tolerance:.0%}"
    if hi < 1 - tolerance or lo > 1 + tolerance:
        return f"outside ±{tolerance:.0%}"
    return "inconclusive: more rounds or a quieter machine"


def rounds_needed(aa_ratios, tolerance):
    """How many rounds a median ratio needs, on the machine whose A/A ratios these are, for its
    95% interval to be as narrow as ±tolerance: the spread of one round (sd of the log A/A
    ratio) times sqrt(pi/2) (a median's standard error over a mean's, for normal noise) times
    1.96, over tolerance, squared. It is the least: a ratio whose interval is ±tolerance wide
    is "within" only when it is exactly 1. Returns (sd, rounds), or None for fewer than 3."""
    if len(aa_ratios) < 3:
        return None
    sd = statistics.stdev(math.log(r) for r in aa_ratios)
    return sd, math.ceil((1.96 * math.sqrt(math.pi / 2) * sd / tolerance) ** 2)


def machine_note(aa_ratios, tolerance, rounds, what):
    """A line under an A/A row: the machine's spread per round and the rounds it needs."""
    got = rounds_needed(aa_ratios, tolerance)
    if got is None:
        return None
    sd, need = got
    return (f"{what}: one round spreads {sd:.1%} (sd of the log A/A ratio); an interval of ±{tolerance:.0%} "
            f"needs at least {need} rounds on this machine, this set has {rounds}.")


def write_rounds(path, rows, reference, load_before, load_after, started):
    """The --json file of a compare script: the command, the load and every round's figures,
    rows[(side, model)] being a list of (tpsbench's, the reference's) figures per round."""
    with open(path, "w") as f:
        json.dump({"command": sys.argv, "load_before": load_before, "load_after": load_after,
                   "started": started, "rounds": [{"linkage": l, "model": m, "tpsbench": [o for o, _ in v],
                                                   reference: [t for _, t in v]}
                                                  for (l, m), v in rows.items()]}, f, indent=1)


def ratio_cells(ratios, tolerance):
    med, lo, hi = bootstrap_median(ratios)
    ci = f"[{lo:.3f}, {hi:.3f}]" if lo is not None else "-"
    return f"{med:.3f}", ci, verdict(lo, hi, tolerance), " ".join(f"{x:.3f}" for x in ratios)
