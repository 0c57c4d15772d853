"""DPO+RR on TheFlipSide with the embedded SmolLM2, scaled down to ~20 min of 2-core CPU.

Recipe (Ri, Deas & McKeown 2025, scaled down; every reduction is a named constant;
on a shared 2-core CPU even this takes ~30-60 min of wall time):
TheFlipSide test records split by topic (about 150 train / 50 dev documents);
each iteration samples PROMPTS training prompts, CANDIDATES candidates each (the
paper's nucleus / top-k / hybrid thirds), scores them with ROUGE-L recall against
the target perspective's article (coverage proxy) and ``alignscore`` (here its
offline MiniLM fallback, a faithfulness proxy), keeps the TOP_GAP pairs with the
largest composite gaps per prompt and trains one DPO epoch of the LoRA. The first
DEV dev documents are summarized greedily after each iteration.

Baselines on the same dev documents: zero-shot greedy (``iter_0``) and reranking
without training (best of CANDIDATES by the same composite).

    nice -n 19 python scripts/dpo_rr_theflipside.py OUT_DIR
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "theflipside" / "test.json"
ITERATIONS = 2
PROMPTS = 2
CANDIDATES = 3
TOP_GAP = 2
DEV = 3
MAX_NEW_TOKENS = 40
WORDS = 120  # each article cut to its first WORDS words (prompt ~400 tokens instead of ~1560)
LEARNING_RATE = 2e-4
SCORERS = "rouge-l-recall,alignscore"


def main(out: str) -> None:
    from evenhand.evaluation.loaders import load_examples
    from evenhand.training import DPORRConfig, train_dpo_rr
    from evenhand.training.loop import split_dev

    examples = [truncate(ex, WORDS) for ex in load_examples(DATA)]
    train, dev = split_dev(examples, 50, key="topic", seed=0)
    dev = dev[:DEV]
    print(f"train {len(train)} / dev {len(dev)} documents (split by topic)", flush=True)
    config = DPORRConfig(
        out_dir=str(Path(out) / "run"), iterations=ITERATIONS, prompts_per_iteration=PROMPTS,
        candidates=CANDIDATES, max_new_tokens=MAX_NEW_TOKENS, generate_batch_size=2,
        scorers=SCORERS, score_source="target", pair_strategy="top-gap", top_gap_k=TOP_GAP,
        batch_size=2, learning_rate=LEARNING_RATE, max_length=4096, seed=0,
    )
    # iteration 1, the reranking baseline, then the rest (a resumed run: iteration 1 is kept)
    start = time.perf_counter()
    train_dpo_rr(dataclasses.replace(config, iterations=1), train=train, dev=dev)
    rerank = rerank_baseline(config, dev)
    print(f"rerank baseline: {rerank}", flush=True)
    manifest = train_dpo_rr(config, train=train, dev=dev)
    train_s = time.perf_counter() - start - rerank["seconds"]
    rows = [("zero-shot greedy (iter 0)", manifest["iterations"][0]["dev"], manifest["iterations"][0]["seconds"]["eval"])]
    for s in manifest["iterations"][1:]:
        rows.append((f"DPO+RR iter {s['iteration']} greedy", s["dev"], s["seconds"]["total"]))
    rows.append((f"rerank best-of-{CANDIDATES}, no training", rerank["dev"], rerank["seconds"]))
    names = ["composite", *config.scorer_names]
    print("\n| system | " + " | ".join(names) + " | seconds |")
    print("|---" * (len(names) + 2) + "|")
    for label, dev_means, seconds in rows:
        print(f"| {label} | " + " | ".join(f"{dev_means[n]:.4f}" for n in names) + f" | {seconds:.0f} |")
    result = {"rows": rows, "train_seconds": train_s, "config": config.to_dict(), "rerank": rerank}
    (Path(out) / "results.json").write_text(json.dumps(result, indent=2, default=str))


def truncate(ex, words: int):  # noqa: ANN001, ANN201
    """The example with every article cut to ``words`` words, its prompt rebuilt in the paper's layout."""
    import dataclasses as dc

    from evenhand.evaluation.schema import Document

    docs = [Document(" ".join(d.text.split()[:words]), d.group) for d in ex.documents]
    header = ex.prompt.split("\n\nLeft:")[0]
    body = "".join(f"\n\n{d.group.capitalize()}:\n{d.text}" for d in docs)
    meta = {**ex.meta, "document": " ".join(ex.meta["document"].split()[:words])}
    return dc.replace(ex, documents=docs, prompt=header + body, meta=meta)


def rerank_baseline(config, dev) -> dict:  # noqa: ANN001
    """Best of N by the candidate composite with the untrained model; dev means of raw scores."""
    from evenhand.decoding.generate import GenerateConfig
    from evenhand.decoding.models import load_generator
    from evenhand.rerank.reranker import RerankConfig, Reranker, select_best
    from evenhand.training.scoring import registry_scoring

    start = time.perf_counter()
    scoring = registry_scoring(config.scorer_names, config.weights, config.normalize, config.score_source)
    model, tok = load_generator(config.model, device="cpu")
    reranker = Reranker(
        model, tok, scorer=None, config=RerankConfig(candidates=config.candidates, seed=config.seed),
        generate_config=GenerateConfig(max_new_tokens=config.max_new_tokens, batch_size=2, num_beams=1),
    )
    best = []
    for ex in dev:
        texts = [c["text"] for c in reranker.candidates([ex])[0]]
        raw = scoring.raw([ex] * len(texts), texts)
        pick = select_best(scoring.candidate_composite(raw))
        best.append({name: raw[name][pick] for name in raw})
    means = {n: sum(b[n] for b in best) / len(best) for n in scoring.names}
    means["composite"] = sum(scoring.weighted({n: [means[n]] for n in scoring.names}))
    return {"dev": means, "seconds": time.perf_counter() - start}


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/train_meas")
