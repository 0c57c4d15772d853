"""Best-of-N reranking on TheFlipSide examples next to zero-shot greedy decoding.

Writes one JSONL record per example (resumable) and prints, over the examples:
the composite score of the selected candidate, the mean over all candidates,
and the greedy summary's, the greedy one normalized inside each example's
candidate set (N candidates + greedy), plus each component's raw means.

    python scripts/rerank_flipside.py --limit 10 --candidates 6 --out /tmp/rerank.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "theflipside" / "test.json"
    parser.add_argument("--data", default=str(data))
    parser.add_argument("--out", required=True)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--candidates", type=int, default=9)
    parser.add_argument("--scorers", default="llm-coverage,alignscore")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--score-cache", default=None)
    args = parser.parse_args()

    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.generate import generate
    from evenhand.decoding.models import load_generator
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.io.resumable import ResumableJsonl
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.reranker import RerankConfig, Reranker

    examples = load_examples(args.data)[: args.limit]
    scorer = get_scorer("composite", cache_dir=args.score_cache, scorers=args.scorers)
    model, tok = load_generator("smollm2-135m-instruct", device="cpu")
    base = GenerateConfig(max_new_tokens=args.max_new_tokens, batch_size=9)
    reranker = Reranker(model, tok, scorer, RerankConfig(candidates=args.candidates), base)
    greedy_store = ResumableJsonl(args.out + ".greedy.jsonl")
    start = time.perf_counter()
    records = []
    for ex in examples:  # one example at a time: partial results are usable
        records.extend(reranker.rerank([ex], out=args.out, progress=False))
        if not greedy_store.done(ex.id):
            greedy = GenerateConfig(max_new_tokens=args.max_new_tokens, num_beams=1)
            (text,) = generate(model, tok, [ex], greedy, progress=False)
            raw = {n: s.score([ex], [text])[0] for n, s in scorer.components.items()}
            greedy_store.append([{"id": ex.id, "summary": text, "components": raw}])
        report(records, greedy_store, scorer, args, time.perf_counter() - start)
    return 0


def report(records, greedy_store, scorer, args, seconds) -> None:  # noqa: ANN001
    """Print and write the means over the examples done so far."""
    from evenhand.rerank.scorers.composite import normalize

    names = list(scorer.components)
    weights = dict(zip(scorer.config.names, scorer.config.weight_list))
    sel, mean_all, greedy_c = [], [], []
    raw_sel = {n: [] for n in names}
    raw_all = {n: [] for n in names}
    raw_greedy = {n: [] for n in names}
    for record in records:
        cands = record["candidates"]
        g = greedy_store.records[record["id"]]["components"]
        normed = {n: normalize([c["components"][n] for c in cands] + [g[n]]) for n in names}
        comp = [sum(weights[n] * normed[n][i] for n in names) / sum(weights.values())
                for i in range(len(cands) + 1)]
        sel.append(comp[record["best_index"]])
        mean_all.append(sum(comp[:-1]) / len(cands))
        greedy_c.append(comp[-1])
        for n in names:
            raw_sel[n].append(cands[record["best_index"]]["components"][n])
            raw_all[n].append(sum(c["components"][n] for c in cands) / len(cands))
            raw_greedy[n].append(g[n])

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    summary = {
        "examples": len(records), "candidates": args.candidates, "scorers": names,
        "composite_selected": mean(sel), "composite_all": mean(mean_all), "composite_greedy": mean(greedy_c),
        "raw_selected": {n: mean(v) for n, v in raw_sel.items()},
        "raw_all": {n: mean(v) for n, v in raw_all.items()},
        "raw_greedy": {n: mean(v) for n, v in raw_greedy.items()},
        "seconds": seconds,
    }
    print(json.dumps(summary), flush=True)
    Path(args.out + ".summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    raise SystemExit(main())
