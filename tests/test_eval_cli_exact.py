"""MINT and the fragment statistics through the command users run (``evenhand evaluate``).

``test_eval_mint.py`` and ``test_eval_fragments.py`` hold the inner functions to the
authors' doctests and hand-computed values; here the same vectors go through
``evaluate --metrics mint,fragments`` (its loader, defaults and tables), so the
numbers a user publishes are the ones those tests check. FairSumm's CLI path is
``test_fairsumm_authors.py::test_evaluate_references_all_cli_matches_the_authors``.
"""

import json

import pytest

SOURCE = "The Supreme Court Thursday reserved its decision on a batch of pleas that have raised questions"
CLOSE = "The Supreme Court Thursday reserved its verdict on a batch of pleas which have raised questions"
FAR = "Supreme Court has reserved a verdict on the batch of the pleas which have raised some questions"

# (source, summary, MINT): the authors' doctests (mintscore/mint.py); evaluate lowercases with
# spaCy, which changes only FAR's value (0.9033765130600977 case-sensitive, test_eval_mint.py)
MINT = [
    ("a", "a a a b b c", 0.9232456140350878),
    (SOURCE, CLOSE, 0.3710535235740673),
    (SOURCE, FAR, 0.8925974884335757),
    ("x", "a b c d", 1.0),
]


def test_evaluate_mint_and_fragments_give_the_reference_values(tmp_path):
    from evenhand.cli import main

    data = tmp_path / "d.jsonl"
    rows = [*MINT, ("a b c d", "a b x", None)]
    data.write_text("".join(
        json.dumps({"id": f"e{i}", "documents": [{"text": source}], "references": [summary]}) + "\n"
        for i, (source, summary, _) in enumerate(rows)
    ))
    out = tmp_path / "E.jsonl"
    args = ["evaluate", "--data", str(data), "--summaries", "references", "--metrics", "mint,fragments",
            "--out", str(out), "--quiet"]
    assert main(args) in (0, None)
    got = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    for i, (_, _, expected) in enumerate(MINT):
        assert got[f"e{i}"]["mint"] == pytest.approx(expected, abs=1e-15)
    far = got["e2"]  # the authors' doctest components, lowercased: p1..p4 and LCSR of FAR
    assert far["mint_p1"] == far["mint_lcsr"] == pytest.approx(10 / 17, abs=1e-15)
    # article "a b c d", summary "a b x": one fragment "a b" (Grusky et al.'s greedy match)
    frag = got[f"e{len(MINT)}"]
    assert (frag["frag_coverage"], frag["frag_density"], frag["frag_compression"]) == pytest.approx(
        (2 / 3, 4 / 3, 4 / 3), abs=1e-15
    )
    assert [frag[f"novel_{n}"] for n in (1, 2, 3, 4)] == pytest.approx([1 / 3, 1 / 2, 1.0, 0.0], abs=1e-15)
