"""Abstractiveness constraints on TheFlipSide: MINT, density and ROUGE-L per setting.

Recipe (the issue's acceptance check): each of the first ``--docs`` TheFlipSide
records becomes a single-document example (``meta['document']``, the target
perspective's article, with the default summarization instruction); the
embedded SmolLM2 summarizes it under five settings, greedy, ``--max-new-tokens``
tokens, otherwise ``GenerateConfig`` defaults:

    none, λ4, λ2, λ1 (``abstractiveness=h``), 1/λ2 (``extractiveness=2``)

and each summary is scored against its document: MINT (higher = more
abstractive), extractive-fragment density (Grusky et al.; lower = more
abstractive) and ROUGE-L F1. Summaries are appended to
``<out>/<setting>.jsonl`` four documents at a time under every setting
(resumable; a partial run stays balanced); the table, over the documents done
under every setting, is printed and written to ``<out>/table.json``.

    nice python scripts/abstractiveness_tradeoff.py --out /tmp/abst_quality --docs 30

Note: transformers' repetition penalty (1.2 by default here) also penalizes every
prompt token, the document included, so the unconstrained baseline is already
very abstractive; ``--repetition-penalty 1.0`` (in a fresh ``--out``) leaves the
constraint more room.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SETTINGS = {
    "none": {},
    "lambda4": {"abstractiveness": 4.0},
    "lambda2": {"abstractiveness": 2.0},
    "lambda1": {"abstractiveness": 1.0},
    "reward2": {"extractiveness": 2.0},
}
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "theflipside" / "test.json"


def single_document_examples(path: Path, limit: int) -> list:
    """The first ``limit`` records as one-document examples of their target article."""
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.data.schema import Document, Example

    return [
        Example(id=ex.id, documents=[Document(ex.meta["document"])], meta=ex.meta)
        for ex in load_examples(path)[:limit]
    ]


def main(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Generate every setting (resumably), then score and print the table."""
    import numpy as np

    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.generate import generate
    from evenhand.decoding.models import load_generator
    from evenhand.evaluation.io.jsonl import read_jsonl
    from evenhand.evaluation.io.resumable import ResumableJsonl
    from evenhand.evaluation.metrics.fragments import fragment_scores
    from evenhand.evaluation.metrics.mint import mint
    from evenhand.rerank.scorers.rouge import rouge_score_scorer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    examples = single_document_examples(Path(args.data), args.docs)
    stores = {name: ResumableJsonl(out / f"{name}.jsonl") for name in SETTINGS}
    model = tokenizer = None
    for start in range(0, len(examples), 4):  # document-major: partial runs stay balanced
        chunk = examples[start : start + 4]
        for name, extra in SETTINGS.items():
            store = stores[name]
            todo = [ex for ex in chunk if not store.done(ex.id)]
            if not todo:
                continue
            if model is None:
                model, tokenizer = load_generator(device="cpu")
            overrides = {}
            if args.repetition_penalty is not None:
                overrides["repetition_penalty"] = args.repetition_penalty
            config = GenerateConfig(
                max_new_tokens=args.max_new_tokens, num_beams=args.num_beams, batch_size=4,
                **overrides, **extra,
            )
            print(f"[{name}] documents {start}-{start + len(chunk) - 1}", flush=True)
            summaries = generate(model, tokenizer, todo, config, progress=False)
            store.append(
                {"id": ex.id, "setting": name, "summary": s} for ex, s in zip(todo, summaries)
            )

    scorer = rouge_score_scorer("rougeL", True)
    documents = {ex.id: ex.documents[0].text for ex in examples}
    table: dict[str, dict[str, float]] = {}
    done = [{r["id"] for r in read_jsonl(out / f"{name}.jsonl")} for name in SETTINGS]
    common = set(documents).intersection(*done)  # documents summarized under every setting
    for name in SETTINGS:
        rows = [r for r in read_jsonl(out / f"{name}.jsonl") if r["id"] in common]
        mints = [mint(documents[r["id"]], r["summary"]).mint for r in rows]
        density = [fragment_scores(documents[r["id"]], r["summary"]).density for r in rows]
        rouge = [scorer.score(documents[r["id"]], r["summary"])["rougeL"].fmeasure for r in rows]
        table[name] = {
            "n": len(rows),
            "mint": float(np.mean(mints)),
            "density": float(np.mean(density)),
            "rougeL_f": float(np.mean(rouge)),
            "words": float(np.mean([len(r["summary"].split()) for r in rows])),
        }
    (out / "table.json").write_text(json.dumps(table, indent=2))
    print(f"{'setting':<10}{'n':>4}{'MINT':>8}{'density':>9}{'ROUGE-L':>9}{'words':>7}")
    for name, row in table.items():
        print(
            f"{name:<10}{row['n']:>4}{row['mint']:>8.3f}{row['density']:>9.2f}"
            f"{row['rougeL_f']:>9.3f}{row['words']:>7.1f}"
        )
    return table


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(DATA), help="TheFlipSide test.json.")
    parser.add_argument("--out", default="/tmp/abst_quality", help="Output folder.")
    parser.add_argument("--docs", type=int, default=30, help="Number of records (first N).")
    parser.add_argument("--max-new-tokens", type=int, default=60, help="Summary length cap.")
    parser.add_argument("--num-beams", type=int, default=1, help="1 = greedy.")
    parser.add_argument(
        "--repetition-penalty", type=float, default=None,
        help="Override GenerateConfig's 1.2; transformers applies it to prompt tokens too, "
        "i.e. to the document, so 1.0 isolates the constraint's effect.",
    )
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args())
