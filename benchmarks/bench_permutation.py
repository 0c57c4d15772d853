"""Time of the Equal Coverage permutation test (5000 permutations) per summary.

    python -m benchmarks.bench_permutation     (from the repository root)

Random coverage matrices P[s, d] (summary units × documents) with 2–5 groups;
reports the mean and worst time per summary over repeated calls, for the
document counts of the shared sets (8 reviews per Amazon/Yelp sample) and
larger inputs, and the authors' 1000-draw bootstrap for comparison. One seed
for the run, as in a corpus evaluation: the permutations of n documents are
drawn on the first summary with n documents (reported apart) and reused.
"""

from __future__ import annotations

import time

import numpy as np

from evenhand.evaluation.metrics.coverage import coverage_significance

CASES = [(8, 10, 3), (8, 10, 5), (20, 10, 3), (50, 15, 3), (100, 20, 2), (200, 20, 3)]
REPEATS = 30


def bench(n_docs: int, n_units: int, n_groups: int, method: str) -> tuple[float, ...]:
    rng = np.random.default_rng(0)
    times, cpu = [], []
    for _ in range(REPEATS + 1):
        p = rng.random((n_units, n_docs)) * (rng.random((n_units, n_docs)) < 0.3)
        p[:, 0] = np.maximum(p[:, 0], 0.1)
        groups = [str(i % n_groups) for i in range(n_docs)]
        start, start_cpu = time.perf_counter(), time.process_time()
        coverage_significance(p, groups, method=method, seed=0)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    ms = 1e3
    return times[0] * ms, np.mean(times[1:]) * ms, np.max(times[1:]) * ms, np.mean(cpu[1:]) * ms


def main() -> None:
    bench(3, 2, 2, "permutation")  # warm up numpy
    print(
        f"{'docs':>5} {'units':>5} {'groups':>6} {'perm. first ms':>14} {'perm. mean ms':>13} "
        f"{'perm. max ms':>12} {'perm. CPU ms':>12} "
        f"{'bootstrap mean ms':>17}"
    )
    for n_docs, n_units, n_groups in CASES:
        first, mean, worst, cpu = bench(n_docs, n_units, n_groups, "permutation")
        boot = bench(n_docs, n_units, n_groups, "bootstrap")[1]
        print(
            f"{n_docs:>5} {n_units:>5} {n_groups:>6} {first:>14.2f} {mean:>13.2f} {worst:>12.2f} {cpu:>12.2f} "
            f"{boot:>17.2f}"
        )
    print(
        f"5000 permutations per summary, {REPEATS} summaries per row after the first; wall-clock "
        "ms except the CPU column (process time, unaffected by other load); target < 20 ms."
    )


if __name__ == "__main__":
    main()
