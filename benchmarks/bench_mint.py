"""MINT speed against the authors' pipeline re-run in the same process, on the shared data.

    python -m benchmarks.bench_mint [--repeats 5] [--first-score-runs 3]   (from the repository root)

Baseline: the authors' ``mintscore`` pipeline as they run it (Dreyer et al. 2023,
amazon-science/abstractive-factual-tradeoff), re-written here: per pair, both
texts tokenized with blank-English spaCy and lowercased (``tok.lower_``), n-gram
*sets* of the source in Python, every summary n-gram looked up, Chen & Cherry
smoothing, ``scipy.stats.hmean``, and a compiled-speed LCS: the project's
bit-parallel :func:`evenhand.evaluation.metrics.lcs.lcs_length` stands in for the
authors' C++ ``mintlcs`` (about as fast). No pure-Python DP is involved.

Passes over the same pairs, each timed ``--repeats`` times (min and median):

* fresh: the first pass of a new tokenizer (``spacy.blank("en")``, cold
  cache), tokenization included; spaCy imported and the tokenizer built
  before the timer (both, about 1.5 s and 70 ms, are in the first-score line);
* warm: the same again with the tokenizer's cache filled by the fresh pass;
* evenhand per pair: :func:`evenhand.evaluation.metrics.mint.mint` in a loop;
* evenhand corpus path: :func:`evenhand.evaluation.metrics.corpus.mint_corpus` (each
  distinct text tokenized once, n-grams matched for all pairs at once).

Each evenhand line shows its speed-up over the baseline pass of the same kind
(fresh against fresh, warm against warm) measured in this run, and the largest
difference of its values from the baseline's. Then the whole-process time of
scoring one pair from a cold start (a subprocess: imports included) for both.

Shared data: ``$EVENHAND_SHARED`` if set, else ``../shared/data`` from the
repository root; absent sets are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE_NAME = (
    "authors' pipeline re-run: spaCy blank-en + Python n-gram sets + scipy hmean + bit-parallel LCS"
)


def shared_dir() -> Path:
    """``$EVENHAND_SHARED``, else ``../shared/data`` next to the repository."""
    env = os.environ.get("EVENHAND_SHARED")
    return Path(env) if env else REPO.parent / "shared" / "data"


def fairsumm_pairs(shared: Path) -> list[tuple[str, str]]:
    """FairSumm amazon + yelp golds: (reviews joined by newlines, each of 3 references)."""
    pairs = []
    for name in ("amazon_gold.json", "yelp_gold.json"):
        data = json.loads((shared / "perspectivesumm" / name).read_text(encoding="utf-8"))
        pairs += [("\n".join(u["text"] for u in s["units"]), r) for s in data for r in s["gold_summary"]]
    return pairs


def metric_eval_pairs(shared: Path) -> list[tuple[str, str]]:
    """perspective_metric_eval dev: (articles joined by newlines, each controlled summary)."""
    path = shared / "perspective_metric_eval" / "controlled_summaries_dev.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return [("\n".join(s["source"]), x["summary"]) for s in data for x in s["summaries"]]


SETS: dict[str, Callable[[Path], list[tuple[str, str]]]] = {
    "FairSumm amazon+yelp golds": fairsumm_pairs,
    "perspective_metric_eval dev": metric_eval_pairs,
}

# ---------------------------------------------------------------- the baseline


def baseline_scorer() -> Callable[[object, str, str], tuple[float, ...]]:
    """The authors' per-pair MINT (see module doc); returns (mint, p1..p4, lcsr)."""
    from scipy.stats import hmean

    from evenhand.evaluation.metrics.lcs import lcs_length

    def score(nlp: object, source: str, summary: str) -> tuple[float, ...]:
        x = [t.lower_ for t in nlp(source)]  # type: ignore[operator]
        y = [t.lower_ for t in nlp(summary)]  # type: ignore[operator]
        m = [0]
        for n in range(1, 6):
            grams = set(zip(*(x[i:] for i in range(n))))
            m.append(sum(1 for g in zip(*(y[i:] for i in range(n))) if g in grams))
        m[0] = m[1] + 1
        for i in range(1, 5):
            m[i] = (m[i - 1] + m[i] + m[i + 1]) / 3.0
        p = [m[n] / (len(y) - n + 1) for n in range(1, 5)]
        lcsr = lcs_length(x, y) / len(y)
        value = 1.0 if lcsr == 0.0 else 1.0 - float(hmean([*p, lcsr]))
        return (value, *p, lcsr)

    return score


# ---------------------------------------------------------------- passes


def timed(fn: Callable[[], list], pairs: int) -> tuple[float, list]:
    start = time.perf_counter()
    out = fn()
    return 1e3 * (time.perf_counter() - start) / pairs, out


def run_set(name: str, pairs: list[tuple[str, str]], repeats: int) -> list[tuple[str, list[float], str, float]]:
    import spacy

    from evenhand.evaluation.metrics.corpus import mint_corpus
    from evenhand.evaluation.metrics.mint import mint
    from evenhand.evaluation.text import tokens as text

    sources = [p[0] for p in pairs]
    summaries = [p[1] for p in pairs]
    baseline = baseline_scorer()
    times: dict[str, list[float]] = {}
    values: dict[str, list] = {}

    def record(key: str, ms: float, out: list) -> None:
        times.setdefault(key, []).append(ms)
        values[key] = out

    def new_tokenizer() -> None:
        tokenizer[0] = spacy.blank("en")
        text._spacy_english.cache_clear()
        text._spacy_english()

    tokenizer: list = [None]
    for _ in range(repeats):
        new_tokenizer()
        for kind in ("fresh", "warm"):
            record(f"base {kind}", *timed(lambda: [baseline(tokenizer[0], s, y) for s, y in pairs], len(pairs)))
        for kind in ("fresh", "warm"):
            record(f"pair {kind}", *timed(lambda: [mint(s, y) for s, y in pairs], len(pairs)))
        new_tokenizer()
        for kind in ("fresh", "warm"):
            record(f"corpus {kind}", *timed(lambda: mint_corpus(sources, summaries), len(pairs)))

    def as_tuple(score: object) -> tuple[float, ...]:
        return score if isinstance(score, tuple) else tuple(score.as_dict().values())  # type: ignore[attr-defined]

    reference = values["base fresh"]

    def max_diff(key: str) -> float:
        return max(
            abs(a - b) for r, v in zip(reference, values[key]) for a, b in zip(r, as_tuple(v))
        )

    rows = []
    labels = {
        "base": BASELINE_NAME,
        "pair": "evenhand per pair: evaluation.metrics.mint.mint in a loop",
        "corpus": "evenhand corpus path: evaluation.metrics.corpus.mint_corpus",
    }
    for who in ("base", "pair", "corpus"):
        for kind in ("fresh", "warm"):
            key = f"{who} {kind}"
            base = min(times[f"base {kind}"])
            ratio = "" if who == "base" else f"{base / min(times[key]):.2f}x"
            rows.append((f"{labels[who]} [{kind}]", times[key], ratio, 0.0 if who == "base" else max_diff(key)))
    return rows


# ---------------------------------------------------------------- first score


FIRST_SCORE = {
    "baseline": (
        "import importlib.util, sys, spacy\n"
        "from scipy.stats import hmean\n"
        # the LCS module alone, without importing the evenhand package
        "spec = importlib.util.spec_from_file_location('lcs', sys.argv[1])\n"
        "lcs = importlib.util.module_from_spec(spec); spec.loader.exec_module(lcs)\n"
        "nlp = spacy.blank('en')\n"
        "x = [t.lower_ for t in nlp(sys.argv[2])]; y = [t.lower_ for t in nlp(sys.argv[3])]\n"
        "m = [0] + [sum(1 for g in zip(*(y[i:] for i in range(n))) "
        "if g in set(zip(*(x[i:] for i in range(n))))) for n in range(1, 6)]\n"
        "m[0] = m[1] + 1\n"
        "for i in range(1, 5): m[i] = (m[i - 1] + m[i] + m[i + 1]) / 3.0\n"
        "p = [m[n] / (len(y) - n + 1) for n in range(1, 5)] + [lcs.lcs_length(x, y) / len(y)]\n"
        "print(1.0 - hmean(p))\n"
    ),
    "evenhand": (
        "import sys\n"
        "from evenhand.evaluation import mint\n"
        "print(mint(sys.argv[2], sys.argv[3]).mint)\n"
    ),
}


def first_score_seconds(which: str, pair: tuple[str, str], runs: int) -> list[float]:
    """Wall time of a fresh ``python -c`` that imports what it needs and scores one pair."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", FIRST_SCORE[which], str(REPO / "evaluation" / "lcs.py"), *pair],
            check=True,
            capture_output=True,
            cwd=REPO,
        )
        out.append(time.perf_counter() - start)
    return out


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed passes of each kind (min and median)")
    parser.add_argument(
        "--first-score-runs", type=int, default=3, help="cold-start subprocesses per pipeline (0: skip)"
    )
    args = parser.parse_args(argv)
    shared = shared_dir()
    from evenhand.evaluation.text.tokens import import_spacy

    import_spacy()  # imports are timed separately (first score), not in the passes
    print(f"MINT ms/pair, {args.repeats} passes each (min / median); shared data: {shared}")
    first_pair = None
    for name, load in SETS.items():
        try:
            pairs = load(shared)
        except FileNotFoundError as err:
            print(f"\n{name}: skipped ({err.filename} not found; set EVENHAND_SHARED)")
            continue
        first_pair = first_pair or pairs[0]
        print(f"\n{name}: {len(pairs)} pairs, {len(set(p[0] for p in pairs))} distinct sources")
        print(f"{'pipeline [pass]':<110} {'min':>7} {'median':>7} {'speed-up':>8} {'max |diff|':>10}")
        for label, ms, ratio, diff in run_set(name, pairs, args.repeats):
            print(f"{label:<110} {min(ms):>7.3f} {statistics.median(ms):>7.3f} {ratio:>8} {diff:>10.1e}")
    if first_pair is not None and args.first_score_runs > 0:
        print(f"\nfirst score, whole process (python -c: imports + one pair), {args.first_score_runs} runs:")
        base = first_score_seconds("baseline", first_pair, args.first_score_runs)
        ours = first_score_seconds("evenhand", first_pair, args.first_score_runs)
        print(f"  baseline (import spacy + scipy.stats, score):  min {min(base):.2f} s  median {statistics.median(base):.2f} s")
        print(f"  evenhand (from evenhand.evaluation import mint): min {min(ours):.2f} s  median {statistics.median(ours):.2f} s"
              f"  ({min(base) / min(ours):.2f}x)")
    print(
        "\nspeed-up = baseline min / this min, same kind of pass; max |diff| = largest difference of "
        "(mint, p1..p4, lcsr) from the baseline's values."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
