"""FairPO-like fairness option (Li, Zhang & Chaturvedi, ACL 2025): EC pairs, over-representation weights.

What FairPO does (paper; authors' ``FairPO/trainer_fairpo.py`` in
leehaoyuan/coverage_fairness): preference pairs whose chosen summary has the
lower Equal Coverage (summary-level fairness), and a DPO loss whose pairs are
re-weighted during training by corpus-level statistics: for every group k and
direction (over- or under-represented), the running, model-probability-weighted
mean amount by which candidates of that category mis-represent k; a candidate
in category c gets the factor 2 rho^p / (rho^p + 1) with rho the ratio of c's
statistic to the opposite direction's (raised to a temperature), which scales
its log-probabilities inside the DPO logits.

What is implemented here (an approximation, named as such):

1. Pairs: the per-prompt candidate scores are -EC (``rerank``'s
   ``equal-coverage`` scorer), turned into pairs by ``evenhand.training.pairs`` with the
   run's strategy, so chosen = the fairer candidate.
2. Corpus statistics, once per iteration over all of its scored candidates,
   equally weighted (FairPO: running, weighted by the policy's per-token
   probability). With delta_{x,k} the group-k coverage difference of candidate x
   (``EqualCoverage.group_diffs``: mean coverage of k's documents minus the
   mean over all documents):

       O_k = mean_{x: delta_xk > 0} delta_xk        U_k = mean_{x: delta_xk < 0} -delta_xk
       rho(k, over) = (O_k / U_k)^tau               rho(k, under) = (U_k / O_k)^tau

   (rho = 1 when either side has no candidate).
3. One weight per pair, from its rejected candidate r only: with C_r the
   categories of r (``(k, over)`` if delta_rk > 0, ``(k, under)`` if < 0),

       w = mean_{c in C_r} 2 rho_c / (rho_c + 1)       (w = 1 when C_r is empty)

   w lies in (0, 2) and exceeds 1 exactly when r errs in the direction the
   corpus already errs for that group (e.g. it over-represents a group that
   the model's candidates over-represent more than they under-represent it).
   The pair's DPO loss is multiplied by w (``evenhand.training.trainer``), where FairPO
   scales the chosen and rejected log-probabilities inside the logits
   and also re-weights the chosen side with 1/rho; FairPO's per-candidate
   exponent p is taken as 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Diffs = Mapping[str, float]


def representation_ratios(
    group_diffs: Sequence[Diffs], temperature: float = 1.0
) -> dict[tuple[str, str], float]:
    """rho per (group, direction) from candidates' group coverage differences (see module)."""
    if temperature <= 0:
        raise ValueError(f"`temperature` must be a positive float, got {temperature}")
    over: dict[str, list[float]] = {}
    under: dict[str, list[float]] = {}
    for diffs in group_diffs:
        for group, d in diffs.items():
            if d > 0:
                over.setdefault(group, []).append(float(d))
            elif d < 0:
                under.setdefault(group, []).append(-float(d))
    ratios: dict[tuple[str, str], float] = {}
    for group in sorted(set(over) | set(under)):
        o, u = over.get(group), under.get(group)
        if not o or not u:
            ratios[(group, "over")] = ratios[(group, "under")] = 1.0
            continue
        o_mean, u_mean = sum(o) / len(o), sum(u) / len(u)
        ratios[(group, "over")] = (o_mean / u_mean) ** temperature
        ratios[(group, "under")] = (u_mean / o_mean) ** temperature
    return ratios


def pair_weight(rejected_diffs: Diffs, ratios: Mapping[tuple[str, str], float]) -> float:
    """The weight of a pair from its rejected candidate's group differences (see module)."""
    factors = []
    for group, d in rejected_diffs.items():
        if d == 0:
            continue
        rho = ratios.get((group, "over" if d > 0 else "under"), 1.0)
        factors.append(2.0 * rho / (rho + 1.0))
    return sum(factors) / len(factors) if factors else 1.0
