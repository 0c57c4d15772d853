"""Summaries scored per second: a trained model's plain max-mean vs the `checker` scorer of today (rules on).

Each of ``--sources`` sources is a 400-word text (20 sentences written for this
benchmark, each source with its own numbers); each has ``--candidates``
3-sentence summaries; all are scored in one call per scorer (batched across
examples, as a reranker scores candidates), after a warm-up call on one source.
Prints summaries/s per setting, the ratio to the ``checker`` scorer with its
issue-33 rules over the issue-33 model, and the model each row ran (``--folder``,
else the shipped entailment model, else the issue-33 checker itself).

    .venv/bin/python benchmarks/entail_speed.py                 # the shipped model
    .venv/bin/python benchmarks/entail_speed.py --folder DIR --sources 4 --candidates 4
"""

from __future__ import annotations

import argparse
import sys
import time

SENTENCES = [
    "The city council met on Tuesday evening to discuss the proposed bike lane on Harbor Street.",
    "Council member Okafor said the lane would remove {n} parking spaces but make the route safer for children.",
    "Shop owners along the street told the council that deliveries would become harder without the spaces.",
    "A survey of {m} residents found that most of them cycle to work at least once a week.",
    "The transport department estimated the construction would cost about {n} thousand dollars.",
    "Reyes, who runs a bakery on the corner, said her customers mostly arrive on foot anyway.",
    "Lindqvist argued that the council should first study traffic on the parallel avenue.",
    "Several parents spoke in favour, describing near misses with cars outside the primary school.",
    "The police reported {m} collisions involving cyclists on Harbor Street in the last two years.",
    "A delivery company warned that its vans would have to double park during the morning rush.",
]


def source(i: int) -> str:
    """About 400 words (the issue's size): the sentences two and a half times, with this source's numbers."""
    text = " ".join(s.format(n=40 + i, m=120 + 7 * i) for s in SENTENCES * 2 + SENTENCES[:5])
    return text + " The council will vote on the plan next month after a final public hearing on the matter."


def summaries(i: int, count: int) -> list[str]:
    """``count`` 3-sentence summaries of source ``i``."""
    return [f"The council discussed a bike lane that would remove {40 + i + j} parking spaces. "
            f"Shop owners worried about deliveries, while parents supported the plan. "
            f"A survey of {120 + 7 * i} residents found that {'most' if j % 2 else 'few'} of them cycle weekly."
            for j in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--folder", default="", help="Entailment model folder (default: the shipped one).")
    parser.add_argument("--sources", type=int, default=8)
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer

    examples, outputs = [], []
    for i in range(args.sources):
        for j, summary in enumerate(summaries(i, args.candidates)):
            examples.append(Example(f"s{i}c{j}", [Document(source(i), None)]))
            outputs.append(summary)
    from evenhand.rerank.checker.model import build_checker

    today = {"rules": True, "folder": str(build_checker(progress=False))}  # the cache folder (built or copied)
    settings = [("checker today (issue-33 model, rules)", today),
                ("max-mean k=2 embedding", {"rules": False, "k": 2, "select": "embedding"}),
                ("max-mean k=2 words", {"rules": False, "k": 2, "select": "words"}),
                ("max-mean k=2 embedding int8", {"rules": False, "k": 2, "select": "embedding", "int8": True}),
                ("max-mean k=2 words int8", {"rules": False, "k": 2, "select": "words", "int8": True})]
    print(f"{len(outputs)} summaries ({args.sources} sources of {len(source(0).split())} words, "
          f"{args.candidates} 3-sentence candidates each), {args.threads} torch threads")
    base = None
    for label, config in settings:
        scorer = get_scorer("checker", **{"folder": args.folder, **config}, device="cpu", progress=False)
        if config.get("int8") and not getattr(scorer, "entail", False):
            print(f"{label:<32} skipped: int8 quantizes an entailment model only (this row's is the issue-33 checker)")
            continue
        scorer.score([Example("warm", [Document(source(99), None)])], summaries(99, 1))  # load the models
        start = time.monotonic()
        scorer.score(examples, outputs)
        rate = len(outputs) / (time.monotonic() - start)
        base = base or rate
        name = str(getattr(scorer, "backend_name", "")).split(" (")[0]
        print(f"{label:<32} {rate:7.2f} summaries/s  {rate / base:5.2f}x   {name}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
