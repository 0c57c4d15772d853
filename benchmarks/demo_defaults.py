"""A small sweep behind the demo's defaults (issue 33): faithfulness and fairness of the fair-beam
candidate per decoding setting, on FairSumm dev examples (never the bundled demo sets).

Per example: the plain beam-search summary (4 beams), and per setting the demo's fair-beam
candidate (4 beams, ``fair_beam`` β, group bonus α, ``ratio`` target) under the abstractiveness
constraint λ_h (h = ``none``: no constraint; ``x<h>``: the extractiveness reward of the same h).
Each summary is scored by the checker (what the reranking floor reads) and by checks not used to
select: ``lm-likelihood`` (log p(summary | source) per token), ``rouge-l-precision`` against the
source, Equal Coverage (−EC, higher is fairer) and FairSumm UER (lower is fairer). Rows go to
``--out`` (JSONL, one per summary, appended and resumed); the table prints means per setting.

    .venv/bin/python benchmarks/demo_defaults.py --limit 2 --out /tmp/demo_defaults.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "perspectivesumm" / "amazon_gold.json"
#: name -> (h of λ_h or None; "x" prefix: extractiveness reward), α, β
SETTINGS: dict[str, tuple[str | None, float, float]] = {
    "λ4 α3 β1 (demo before)": ("4", 3.0, 1.0),
    "no λ α3 β1": (None, 3.0, 1.0),
    "no λ α1 β1": (None, 1.0, 1.0),
    "λ4 α3 β3": ("4", 3.0, 3.0),
}
SCORERS = ("checker", "lm-likelihood", "rouge-l-precision", "equal-coverage")


def setting_config(name: str, max_new_tokens: int, seed: int = 0) -> Any:
    """The GenerateConfig of a setting (``plain``: beam search without steering)."""
    from evenhand.decoding.config import GenerateConfig

    if name == "plain":
        return GenerateConfig(max_new_tokens=max_new_tokens, seed=seed, num_beams=4)
    h, alpha, beta = SETTINGS[name]
    constraint: dict[str, Any] = {}
    if h is not None:
        constraint = {"extractiveness": float(h[1:])} if h.startswith("x") else {"abstractiveness": float(h)}
    return GenerateConfig(max_new_tokens=max_new_tokens, seed=seed, num_beams=4, fairness="ratio",
                          fairness_strength=alpha, fair_beam=beta, **constraint)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Faithfulness and fairness per demo decoding setting.")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--settings", default=",".join(SETTINGS), help="Comma-separated setting names.")
    parser.add_argument("--max-new-tokens", type=int, default=72)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if not Path(args.data).is_file():
        print(f"skipped: {args.data} is absent (shared data)")
        return 0
    from evenhand.decoding.generate import generate
    from evenhand.decoding.models import load_generator
    from evenhand.evaluation.data.loaders import load_fairsumm
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.evaluation.scoring.report import Scored, evaluate

    examples = load_fairsumm(args.data)[: args.limit]
    names = ["plain", *[s for s in args.settings.split(",") if s]]
    out = Path(args.out)
    done = {(r["id"], r["setting"]): r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    model, tok = load_generator()
    scorers = {name: get_scorer(name, progress=False) for name in SCORERS}
    for ex in examples:
        for name in names:
            if (ex.id, name) in done:
                continue
            (text,) = generate(model, tok, [ex], setting_config(name, args.max_new_tokens), progress=False)
            row: dict[str, Any] = {"id": ex.id, "setting": name, "summary": text}
            for sname, scorer in scorers.items():
                row[sname] = scorer.score([ex], [text])[0]
            row["uer"] = float(evaluate([Scored(ex.id, ex, text)], ["fairsumm"]).rows[0]["fairsumm_uer"])
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            done[(ex.id, name)] = row
            print(f"{ex.id} {name}: checker {row['checker']:.3f} uer {row['uer']:.3f}", flush=True)
    keys = [*SCORERS, "uer"]
    print(f"{'setting':26s} " + " ".join(f"{k:>17s}" for k in keys) + "  (means over examples)")
    for name in names:
        rows = [r for (_, s), r in done.items() if s == name]
        if rows:
            print(f"{name:26s} " + " ".join(f"{sum(r[k] for r in rows) / len(rows):>17.3f}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
