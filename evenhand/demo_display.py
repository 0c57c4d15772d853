"""What ``evenhand demo`` prints: its candidates in words and its per-set and per-run text (issue 49:
what actually happened, at a glance).

``evenhand.demo`` decodes, scores and selects the candidates and writes the results; this module names
the candidates and lays out what is printed:

- **per set, a header naming the kept candidate and how it was made** (``kept_header``:
  ``EVENHAND — kept: plain + quote from a one-star reviewer``, ``kept: plain (no candidate beat it
  under the floors)``, ``kept: fair beam β=3``) and, in one line, the candidates that lost and why
  (``not_kept_line``: ``fair beam β=1, β=3: below the coverage and checker floors``); a candidate in
  words: ``candidate_label``;
- **selection scores**: the composite's components (whatever ``scorers`` names) and the floors'
  scores (``floor fluency``...) of plain and kept, with kept minus plain. They picked the evenhand
  summary, so they are no evidence that it is better, and the demo never names a winner on them.
  The composite itself is min-max normalized over the set's 3-5 candidates, so its values are not
  printed (a one-sentence difference reads as 0 vs 1): the line says which candidate it ranked first;
- **independent checks (not used to select)**: ROUGE-L F1 against the example's reference
  summaries (best over references, stemmed), FairSumm UER (N-gram target, lower is fairer), MINT
  abstractiveness and the length in words (``CHECKS``; computed by ``evenhand.demo.independent_checks``).
  Where the kept candidate was built to improve a check (``TARGETED``: the quote lowers UER by
  construction), that check's line says it is no evidence;
- **groups covered**, next to UER: for each group whether the summary states one of its points
  (``rerank.group_coverage``, on Equal Coverage's backend, named).

Each block has one ``scales:`` line from ``evaluation.scoring.legend`` (every value printed lies in
its range, or the range says unbounded).

``--example all`` ends with one row per example (``table_rows``, ``format_table``: the kept candidate,
ROUGE-L, UER and groups covered of both columns); the CSV of ``--out`` holds the same rows with the
selection composite and fluency floor too.
"""

from __future__ import annotations

import textwrap
from typing import Any

from evenhand.decoding.document_order import INTERLEAVED_RECIPE
from evenhand.decoding.groupwise import GROUPWISE_RECIPE
from evenhand.decoding.quote import QUOTE_RECIPE
from evenhand.evaluation.data.schema import Example
from evenhand.evaluation.scoring.legend import legend_line, meaning

#: Checks a recipe's candidate is built to improve (``decoding.quote`` picks the sentence that lowers FairSumm's
#: UER): where it is kept, that check is no evidence for it, and the demo says so beside the number.
TARGETED: dict[str, frozenset[str]] = {QUOTE_RECIPE: frozenset({"fairsumm_uer"})}
#: What the demo says beside a targeted check.
TARGETED_NOTE = "the kept quote was chosen to lower it: no evidence"

#: The independent checks: key -> label (range and direction: ``evaluation.scoring.legend``).
CHECKS: dict[str, str] = {
    "rouge_l_f1": "ROUGE-L F1 vs references",
    "fairsumm_uer": "FairSumm UER (N-gram)",
    "mint": "MINT abstractiveness",
    "words": "length (words)",
}


def floor_name(name: str) -> str:
    """A floor as a reader names it: ``calibrated:coverage`` -> ``coverage``."""
    return name.rpartition(":")[2]


def candidate_label(candidate: dict[str, Any], example: Example) -> str:
    """How a candidate was made, in words: ``plain``, ``plain + quote from a one-star reviewer``,
    ``fair beam β=3``, ``sampled (nucleus)``, ``plain under the 'labels' fair prompt``...

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document("a", "1"), Document("b", "5")], "rating")
    >>> candidate_label({"recipe": "beam+quote", "quoted_group": "1"}, ex), candidate_label({"recipe": "fair-beam β=3"}, ex)
    ('plain + quote from a one-star reviewer', 'fair beam β=3')
    """
    from evenhand.rerank.reranker import RECIPES

    recipe = str(candidate["recipe"])
    if recipe == "beam":
        return "plain"
    if recipe == QUOTE_RECIPE:
        group = candidate.get("quoted_group")
        if group is None:
            return "plain + one quote"
        from evenhand.decoding.groupwise import group_phrase

        who = group_phrase(example, str(group), 1)
        if who.startswith("The "):
            rest = who[len("The "):]
            vowel = rest[:1].lower() in ("a", "e", "i", "o") and not rest.lower().startswith("one")
            who = ("an " if vowel else "a ") + rest  # a one-star reviewer, an opponent
        return f"plain + quote from {who}"
    if recipe.startswith("fair-beam "):
        return "fair beam " + recipe[len("fair-beam "):]
    if recipe == GROUPWISE_RECIPE:
        return "group-wise (one sentence per group)"
    if recipe == INTERLEAVED_RECIPE:
        return "plain over documents interleaved by group"
    if recipe.startswith("beam+"):
        return f"plain under the {recipe[len('beam+'):]!r} fair prompt"
    if recipe in RECIPES:
        return f"sampled ({recipe})"
    return recipe


def kept_candidate(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """The candidate marked ``kept``."""
    return next(c for c in candidates if c.get("kept"))


def kept_header(candidates: list[dict[str, Any]], example: Example) -> str:
    """The right column's header: ``EVENHAND — kept: fair beam β=3``; when plain is kept, why."""
    kept = kept_candidate(candidates)
    head = f"EVENHAND — kept: {candidate_label(kept, example)}"
    if kept["recipe"] != "beam":
        return head
    others = [c for c in candidates if c is not kept]
    if not others:
        return f"{head} (no other candidate)"
    if all(not c.get("eligible", True) for c in others):
        return f"{head} (every other candidate fell below a floor)"
    return f"{head} (no candidate beat it under the floors)"


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def not_kept_line(candidates: list[dict[str, Any]], example: Example) -> str:
    """The candidates that lost, in one line, grouped by why: ``fair beam β=1, β=3: below the coverage
    and checker floors; plain: ranked lower by the composite``."""
    reasons: dict[str, list[str]] = {}
    for c in candidates:
        if c.get("kept"):
            continue
        below = c.get("below") or []
        reason = (f"below the {_and([floor_name(n) for n in below])} floor{'s' if len(below) > 1 else ''}"
                  if below else "ranked lower by the composite")
        reasons.setdefault(reason, []).append(candidate_label(c, example))
    if not reasons:
        return "not kept: none (one candidate)"
    parts = []
    for reason, labels in reasons.items():
        beams = [label[len("fair beam "):] for label in labels if label.startswith("fair beam ")]
        rest = [label for label in labels if not label.startswith("fair beam ")]
        named = ([f"fair beam {', '.join(beams)}"] if beams else []) + rest
        parts.append(f"{', '.join(named)}: {reason}")
    return "not kept: " + "; ".join(parts)


def _side_by_side(left: str, right: str, width: int = 44) -> str:
    a = textwrap.wrap(left, width, break_on_hyphens=False) or [""]
    b = textwrap.wrap(right, width, break_on_hyphens=False) or [""]
    n = max(len(a), len(b))
    a += [""] * (n - len(a))
    b += [""] * (n - len(b))
    return "\n".join(f"  {x:<{width}} | {y}" for x, y in zip(a, b))


def _num(value: float, width: int = 8) -> str:
    return f"{'n/a':>{width}}" if value != value else f"{value:{width}.3f}"


def _diff(p: float, f: float) -> str:
    return f"{'n/a':>12}" if p != p or f != f else f"{f - p:+12.3f}"


def _legend_key(key: str) -> str:
    """The legend column of a printed row: ``floor calibrated:coverage`` -> ``calibrated:coverage``."""
    return key[len("floor "):] if key.startswith("floor ") else key


def format_scores(composite: Any, scores: dict[str, dict[str, dict[str, Any]]], kept: str = "",
                  candidates: int = 0) -> str:
    """The score blocks under one example (see the module docstring); ``kept``: the kept candidate's
    recipe (a check it was built to improve, ``TARGETED``, is marked as no evidence); ``candidates``: how
    many the composite ranked. One ``scales:`` line per block, from ``evaluation.scoring.legend``."""
    weights = ", ".join(
        f"{n}×{w:g}" for n, w in zip(composite.config.names, composite.config.weight_list)
    )
    plain, kept_scores = scores["plain"]["selection"], scores["evenhand"]["selection"]
    rows = [k for k in plain if k != "composite"  # a floor equal to a component (same scorer, same text): once
            and not (k.startswith("floor ") and _legend_key(k) in plain
                     and (plain[k], kept_scores[k]) == (plain[_legend_key(k)], kept_scores[_legend_key(k)]))]
    lines = [
        "  selection scores (they picked the evenhand summary: no evidence that it is better)" if kept != "beam"
        else "  selection scores (the evenhand column is the plain summary: nothing beat it)",
        f"  {'':34s} {'plain':>8s} {'evenhand':>8s} {'kept - plain':>12s}",
    ]
    for key in rows:
        p, f = scores["plain"]["selection"][key], scores["evenhand"]["selection"][key]
        lines.append(f"  {key:34s} {_num(p)} {_num(f)} {_diff(p, f)}")
    lines += _wrapped(legend_line([_legend_key(k) for k in rows]))
    ranked = f"first of {candidates} candidates" if candidates else "first of its candidates"
    lines += _wrapped(f"kept: {ranked} on composite({weights}); min-max within the set, so its values rank "
                      "rather than measure and are not printed")
    lines += ["  independent checks (not used to select)", f"  {'':34s} {'plain':>8s} {'evenhand':>8s}"]
    for key, value in scores["plain"]["checks"].items():
        label = CHECKS.get(key, key)
        p, f = value, scores["evenhand"]["checks"][key]
        known = meaning(key)
        note = ""
        if known is not None and known.direction and p == p and f == f:
            note = "tie" if p == f else ("evenhand better" if (f > p) == (known.direction > 0) else "plain better")
        if key in TARGETED.get(kept, ()):
            note = f"{note}; {TARGETED_NOTE}" if note else TARGETED_NOTE
        lines.append(f"  {label:34s} {_num(p)} {_num(f)}" + (f"   ({note})" if note else ""))
    lines += _wrapped(legend_line(scores["plain"]["checks"]))
    return "\n".join(lines)


def _wrapped(text: str, width: int = 100) -> list[str]:
    """``text`` indented by two spaces and wrapped at ``width``, continuation lines by four."""
    return textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)


#: Said after the groups covered when the kept quote's group was chosen because plain left it out.
CHOSEN_NOTE = "the kept quote's group was chosen because plain did not cover it: not evidence"


def format_groups(scores: dict[str, dict[str, Any]], backend: str, width: int = 100, chosen: bool = False) -> str:
    """The ``groups covered`` lines: per column, each group in plain words (``rerank.group_coverage``);
    ``chosen``: the kept quote was drawn for a group plain leaves out, by this same reading (said)."""
    from evenhand.rerank.group_coverage import COVERED_AT

    head = (f"  groups covered (a summary sentence supported at p >= {COVERED_AT:g} by one of the group's "
            f"documents; backend {backend}" + (f"; {CHOSEN_NOTE})" if chosen else ")"))
    lines = textwrap.wrap(head, width, subsequent_indent="    ")
    for side in ("plain", "evenhand"):
        text = "; ".join(g["words"] for g in scores[side]["groups"])
        lines += textwrap.wrap(f"{side + ':':9s} {text}", width, initial_indent="    ", subsequent_indent="              ")
    return "\n".join(lines)


def table_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per example for the CSV: selection composite, fluency floor, ROUGE-L, UER and groups
    covered per column, then the kept candidate in words (``kept``, where the rows have it)."""
    out = []
    for r in rows:
        s = r["scores"]
        row: dict[str, Any] = {"id": r["id"]}
        for key, source, column in (("composite", "selection", "composite"),
                                    ("floor fluency", "selection", "fluency"),
                                    ("rouge_l_f1", "checks", "rouge_l_f1"),
                                    ("fairsumm_uer", "checks", "fairsumm_uer")):
            if key not in s["plain"][source]:
                continue
            for side in ("plain", "evenhand"):
                row[f"{column}_{side}"] = s[side][source][key]
        if "groups" in s["plain"]:
            for side in ("plain", "evenhand"):
                row[f"groups_covered_{side}"] = sum(g["covered"] for g in s[side]["groups"])
            row["groups"] = len(s["plain"]["groups"])
        if "kept" in r:
            row["kept"] = r["kept"]
        out.append(row)
    return out


#: Printed headers of the table's columns (the CSV keeps the column names).
_HEADS = {"rouge_l_f1_plain": "ROUGE-L plain", "rouge_l_f1_evenhand": "evenhand",
          "fairsumm_uer_plain": "UER plain", "fairsumm_uer_evenhand": "evenhand"}
#: Table columns not printed: the composite is min-max within each set (it ranks, it does not measure) and
#: the fluency floor is a selection score; both stay in the CSV.
_UNPRINTED = ("composite_", "fluency_", "groups")


def format_table(table: list[dict[str, Any]], kept: list[str] | None = None) -> str:
    """The ``--example all`` table as aligned text: per set the kept candidate, the independent checks and
    the groups covered of both columns, then a line per check; ``kept``: per row the kept candidate's
    recipe (how many rows kept one built to improve a check)."""
    columns = [c for c in table[0] if c not in ("id", "kept") and not c.startswith(_UNPRINTED)]
    width = max(len("example"), *(len(r["id"]) for r in table))
    labels = [str(r.get("kept", "")) for r in table]
    kept_width = max(len("kept"), *(len(x) for x in labels)) if any(labels) else 0
    covered = "groups_covered_plain" in table[0]

    def head(c: str) -> str:
        return _HEADS.get(c, c)

    def cell(r: dict[str, Any], c: str) -> str:
        return _num(r[c], max(len(head(c)), 8))

    first = f"  {'example':<{width}} " + (f"{'kept':<{kept_width}} " if kept_width else "")
    lines = [first + " ".join(f"{head(c):>{max(len(head(c)), 8)}}" for c in columns)
             + ("  groups covered plain, evenhand" if covered else "")]
    for r, label in zip(table, labels):
        row = f"  {r['id']:<{width}} " + (f"{label:<{kept_width}} " if kept_width else "")
        row += " ".join(cell(r, c) for c in columns)
        if covered:
            row += f"  {r['groups_covered_plain']}/{r['groups']}, {r['groups_covered_evenhand']}/{r['groups']}"
        lines.append(row)
    for key, label in (("rouge_l_f1", "ROUGE-L F1"), ("fairsumm_uer", "UER")):
        if f"{key}_plain" not in table[0]:
            continue
        found = meaning(key)
        better = "higher" if found is None or found.direction > 0 else "lower"
        pairs = [(r[f"{key}_plain"], r[f"{key}_evenhand"]) for r in table]
        pairs = [(p, f) for p, f in pairs if p == p and f == f]
        if not pairs:
            continue
        wins = sum((f > p) if better == "higher" else (f < p) for p, f in pairs)
        losses = sum((f < p) if better == "higher" else (f > p) for p, f in pairs)
        mean_p = sum(p for p, _ in pairs) / len(pairs)
        mean_f = sum(f for _, f in pairs) / len(pairs)
        targeted = sum(key in TARGETED.get(recipe, ()) for recipe in kept or ())
        lines.append(f"  {label} ({better} is better): mean plain {mean_p:.3f}, evenhand {mean_f:.3f}; "
                     f"evenhand better on {wins}, worse on {losses} of {len(pairs)} sets"
                     + (f" ({targeted} sets: {TARGETED_NOTE})" if targeted else ""))
    lines += _wrapped(legend_line(columns_keys(columns)))
    return "\n".join(lines)


def columns_keys(columns: list[str]) -> list[str]:
    """The legend columns of table columns: ``rouge_l_f1_plain`` -> ``rouge_l_f1``."""
    return [c.rsplit("_", 1)[0] for c in columns]


def format_set(example: Example, record: dict[str, Any], composite: Any, plain_header: str,
               coverage_backend: str) -> str:
    """Everything printed under one set's title: the two summaries under their headers, the candidates
    that lost, the score blocks and the groups covered."""
    candidates = record["candidates"]
    kept = kept_candidate(candidates)
    lines = [
        _side_by_side(plain_header, kept_header(candidates, example)),
        _side_by_side("-" * 44, "-" * 44),
        _side_by_side(record["plain"], record["evenhand"]),
        "",
        *textwrap.wrap(not_kept_line(candidates, example), 100, initial_indent="  ", subsequent_indent="    "),
        format_scores(composite, record["scores"], kept["recipe"], len(candidates)),
        format_groups(record["scores"], coverage_backend, chosen=kept.get("quote_for") == "uncovered"),
    ]
    return "\n".join(lines)
