"""The sweep behind the demo's defaults (issue 33): which decoding setting, fair beams β, candidate
pool and floors make the evenhand column at least as faithful as plain and fairer, on DEV sets.

Dev sets (never the bundled demo sets, which are evaluation data): the source sets of
``benchmarks/data/checker_dev.jsonl`` (short, demo-like reviews and debates; the checker's rule
tuning set, never its training data) and, where the shared data is present, FairSumm
``amazon_gold-0`` and ``yelp_gold-0`` (~400 words each). ``--limit`` keeps the first K.

Per example the demo's candidates are decoded once per steering (``none``: no abstractiveness
constraint; ``λ4``; ``ext2``/``ext1``: the extraction reward at h 2 and 1; ``α1``/``α6``;
``labels``/``definition``: the fair prompts; ``groupwise``: the demo's defaults plus the group-wise
candidate, ``decoding.groupwise.GROUPWISE_RECIPE``, whose fair beams are ``none``'s; ``interleaved``: the same
with plain beam search over the documents interleaved by group, ``decoding.document_order.INTERLEAVED_RECIPE``;
``quote``: the same with plain + one attributed quote, ``decoding.quote.QUOTE_RECIPE``, nothing decoded, its
group chosen as the demo chooses it, by Equal Coverage's per-group coverage (rows of an ``--out`` written
before that rule chose by the UER terms alone); a set
where no quote lowers the UER gets a marker row and its pools are the rest): fair beam β ∈ {1, 3} (4 beams, α 3, ``ratio`` target) and 3 sampled
candidates (nucleus, top-k, hybrid: the N=2 pool is the first two), plus the plain beam-search
summary; a fair-prompt steering also decodes plain beam search under its prompt (``beam+labels``),
which its settings take into the pool or not (``+beam`` in the name; ``+gw`` for the group-wise candidate). Every candidate is scored once by the selection scorers (the demo's composite
components and the fluency floor), by the checker (what a ``checker`` floor reads) and by checks
never used to select: ``lm-likelihood`` (log p(summary | source) per token), ``rouge-l-precision``
against the source and FairSumm UER (lower is fairer). Rows go to ``--out`` (JSONL, one per
candidate, appended and resumed).

Each setting (steering × β set × N × floors) is then a *selection* over those rows, exactly as the
demo selects (composite of the min-max normalized components over the setting's pool, plain
included; a candidate below plain by more than a floor's margin is not eligible), so no setting
decodes twice. The table (``--table``, CSV) gives per setting: how many sets keep a non-plain
summary, the kept summary's means, and on how many sets it is below plain on the checker and on
lm-likelihood (less faithful) and above it on UER (less fair).

    .venv/bin/python benchmarks/demo_defaults.py --out /tmp/dd.jsonl --table /tmp/dd.csv
    .venv/bin/python benchmarks/demo_defaults.py --lambda-samples 0 --steerings none,quote --out /tmp/dd.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHECKER_DEV = ROOT / "benchmarks" / "data" / "checker_dev.jsonl"
SHARED = ROOT.parent / "shared" / "data" / "perspectivesumm"
#: The checker-dev source sets swept, in order (demo-like: 5 short documents each).
DEV_SOURCES = ("camping-tent", "pool-closure-debate", "dental-clinic", "pizza-delivery")
FAIRSUMM = (("amazon_gold.json", 0), ("yelp_gold.json", 0))
#: Steerings: name -> the DemoConfig fields it sets (none; the λ4 constraint; the extraction reward
#: of the same paper at h 2 and 1, which pulls the summary toward the sources' own words; the
#: group-coverage bonus α at 1 and 6 instead of the demo's 3, without λ; the fair prompts, Equal
#: Coverage's group labels and FairSumm's definition, at α 3, which add plain beam search under the
#: prompt to the pool: ``evenhand.demo.prompted_beam_recipe``).
STEERINGS: dict[str, dict[str, float | str]] = {
    "none": {}, "λ4": {"abstractiveness": 4.0}, "ext2": {"extractiveness": 2.0}, "ext1": {"extractiveness": 1.0},
    "α1": {"fairness_strength": 1.0}, "α6": {"fairness_strength": 6.0},
    "labels": {"fair_prompt": "labels"}, "definition": {"fair_prompt": "definition"},
    "groupwise": {"groupwise": True}, "interleaved": {"interleave": True}, "quote": {"quote": True},
}
#: Steerings whose fair beams are those of another steering (same α, β, λ and prompt): not decoded
#: again, their settings read that steering's rows (``groupwise`` only adds the group-wise candidate).
SHARED_BEAMS: dict[str, str] = {"groupwise": "none", "interleaved": "none", "quote": "none"}
BETAS = (1.0, 3.0)
SAMPLED = 3
#: Selection scorers: the demo's composite components (equal weights, min-max within the pool).
COMPONENTS = ("calibrated:coverage", "calibrated:faithfulness", "equal-coverage")
#: Floors the grid tries: name -> margin (the default floors, plus a checker floor at two margins,
#: and the fluency floor without the coverage floor).
FLOOR_GRID: dict[str, dict[str, float]] = {
    "default": {"fluency": 0.5, "calibrated:coverage": 0.1},
    "fluency": {"fluency": 0.5},
    "fluency+checker=0": {"fluency": 0.5, "checker": 0.0},
    "default+checker=0": {"fluency": 0.5, "calibrated:coverage": 0.1, "checker": 0.0},
    "default+checker=0.05": {"fluency": 0.5, "calibrated:coverage": 0.1, "checker": 0.05},
}
CHECKS = ("checker", "lm-likelihood", "rouge-l-precision")
SCORERS = (*COMPONENTS, "fluency", *CHECKS)


def dev_examples(limit: int | None = None) -> list[Any]:
    """The dev sets in sweep order (checker-dev sources, then FairSumm where the shared data is)."""
    from evenhand.evaluation.data.loaders import example_from_dict, load_fairsumm

    sources: dict[str, Any] = {}
    for line_no, line in enumerate(CHECKER_DEV.read_text(encoding="utf-8").splitlines(), 1):
        source = json.loads(line)["source"]
        sources.setdefault(source["id"], (source, line_no))
    examples = [example_from_dict(sources[name][0], str(CHECKER_DEV), sources[name][1]) for name in DEV_SOURCES]
    for name, index in FAIRSUMM:
        if (SHARED / name).is_file():
            examples.append(load_fairsumm(str(SHARED / name))[index])
    return examples[:limit]


def settings() -> list[dict[str, Any]]:
    """The grid: steering × β set × sampled N × floors, each a dict with a readable ``name``.

    A fair-prompt steering's pool may also hold plain beam search under its prompt (``prompted``,
    ``+beam`` in the name), alone (``β{}``) or beside the fair beams.
    """
    grid = []
    for steer, betas, n, floors in itertools.product(STEERINGS, ((), (1.0,), BETAS), (0, 2, SAMPLED), FLOOR_GRID):
        extra = extra_recipe(steer)
        # a steering that shares another's fair beams has settings with its extra candidate only
        for prompted in (True,) if steer in SHARED_BEAMS else (False, True) if extra is not None else (False,):
            if not betas and not prompted:  # plain alone: no setting
                continue
            beta_text = ",".join(f"{b:g}" for b in betas)
            kind = next((k for k in ("groupwise", "interleave", "quote") if STEERINGS[steer].get(k)), "prompt")
            suffix = {"groupwise": "+gw", "interleave": "+il", "quote": "+q", "prompt": "+beam"}[kind] if prompted else ""
            grid.append({"name": f"{steer} β{{{beta_text}}}{suffix} N{n} {floors}",
                         "steer": steer, "betas": betas, "prompted": prompted, "n": n, "floors": floors})
    return grid


def extra_recipe(steer: str) -> str | None:
    """The one extra candidate a steering adds beside its fair beams (its prompted beam, the group-wise
    summary), which a setting takes into its pool or not; None: none."""
    from evenhand.decoding.document_order import INTERLEAVED_RECIPE
    from evenhand.decoding.groupwise import GROUPWISE_RECIPE
    from evenhand.decoding.quote import QUOTE_RECIPE
    from evenhand.demo import prompted_beam_recipe

    fields = STEERINGS[steer]
    if fields.get("groupwise"):
        return GROUPWISE_RECIPE
    if fields.get("interleave"):
        return INTERLEAVED_RECIPE
    if fields.get("quote"):
        return QUOTE_RECIPE
    return prompted_beam_recipe(str(fields["fair_prompt"])) if "fair_prompt" in fields else None


def pool_recipes(setting: dict[str, Any]) -> list[str]:
    """The recipes in a setting's pool, plain (``beam``) last, as the demo orders them."""
    from evenhand.rerank.reranker import RerankConfig

    sampled = RerankConfig(candidates=setting["n"]).plan() if setting["n"] else []
    extra = extra_recipe(setting["steer"])
    prompted = [extra] if setting.get("prompted") and extra is not None else []
    return [*(f"fair-beam β={b:g}" for b in setting["betas"]), *prompted, *sampled, "beam"]


def row_steer(steer: str, recipe: str) -> str:
    """The steering whose rows hold ``recipe`` of a ``steer`` setting: plain's, a shared one's, its own."""
    if recipe == "beam":
        return "plain"
    return SHARED_BEAMS.get(steer, steer) if recipe.startswith("fair-beam") else steer


def select(pool: Sequence[dict[str, Any]], floors: dict[str, float]) -> int:
    """The index the demo keeps in ``pool`` (rows with raw scores; plain = recipe ``beam``)."""
    from evenhand.rerank.reranker import below_floors, select_best
    from evenhand.rerank.scorers.composite import set_composite

    composite = set_composite({c: [r[c] for r in pool] for c in COMPONENTS}, {c: 1.0 for c in COMPONENTS})
    plain = next(i for i, r in enumerate(pool) if r["recipe"] == "beam")
    return select_best(composite, [not failed for failed in below_floors(pool, plain, floors)])


def summarize(rows: Sequence[dict[str, Any]], ids: Sequence[str]) -> list[dict[str, Any]]:
    """Per setting: kept-not-plain count, means of the kept summaries, counts worse than plain."""
    by = {(r["id"], r["steer"], r["recipe"]): r for r in rows}
    table = []
    for s in settings():
        kept = []
        for ex_id in ids:
            keys = [(ex_id, row_steer(s["steer"], rec), rec) for rec in pool_recipes(s)]
            # a steering that decoded no extra candidate on this set (a quote that would not lower the UER)
            # leaves a marker row (recipe None): its pool is the rest
            keys = [k for k in keys if k in by or (ex_id, s["steer"], None) not in by]
            if not all(k in by for k in keys):
                break
            pool = [by[k] for k in keys]
            kept.append((pool[select(pool, FLOOR_GRID[s["floors"]])], pool[-1]))
        if len(kept) != len(ids) or not kept:
            continue
        row: dict[str, Any] = {"setting": s["name"], "sets": len(kept),
                               "not_plain": sum(k["recipe"] != "beam" for k, _ in kept)}
        for key in (*CHECKS, "uer"):
            row[key] = sum(k[key] for k, _ in kept) / len(kept)
        row["checker_below_plain"] = sum(k["checker"] < p["checker"] for k, p in kept)
        row["lm_likelihood_below_plain"] = sum(k["lm-likelihood"] < p["lm-likelihood"] for k, p in kept)
        row["uer_above_plain"] = sum(k["uer"] > p["uer"] for k, p in kept)
        row["uer_below_plain"] = sum(k["uer"] < p["uer"] for k, p in kept)
        table.append(row)
    return table


def format_table(table: Sequence[dict[str, Any]]) -> str:
    """The table as aligned text."""
    keys = [k for k in table[0] if k != "setting"]
    width = max(len(r["setting"]) for r in table)
    lines = [f"{'setting':{width}s} " + " ".join(f"{k:>10.10s}" for k in keys)]
    for r in table:
        lines.append(f"{r['setting']:{width}s} " + " ".join(
            f"{r[k]:>10.3f}" if isinstance(r[k], float) else f"{r[k]:>10d}" for k in keys))
    return "\n".join(lines)


def steering_config(steer: str, candidates: int = 0) -> Any:
    """The DemoConfig of a steering: its fields, fair beams ``BETAS``, ``candidates`` sampled."""
    from evenhand.demo import DemoConfig

    fields: dict[str, Any] = {"quote": False, **STEERINGS[steer]}  # the quote candidate: its own steering
    return DemoConfig(fair_beams=BETAS, candidates=candidates, **fields)


def generate_rows(examples: Sequence[Any], out: Path, lambda_samples: int = SAMPLED,
                  steerings: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Decode and score every candidate not yet in ``out`` (appended per example and steering);
    ``lambda_samples`` sampled candidates under each steering but none (0: their fair beams only,
    their N>0 settings left out); ``steerings``: only these (and plain; None: all)."""
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.base import open_engine
    from evenhand.decoding.generate import generate
    from evenhand.decoding.models import SMOLLM2
    from evenhand.demo import evenhand_candidates
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.evaluation.scoring.report import Scored, evaluate
    from evenhand.rerank.reranker import floor_texts
    from evenhand.rerank.sharing import share_model

    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] if out.exists() else []
    done = {(r["id"], r["steer"]) for r in rows}
    wanted = STEERINGS if steerings is None else [s for s in STEERINGS if s in steerings]
    todo = [(ex, steer) for ex in examples for steer in ("plain", *wanted) if (ex.id, steer) not in done]
    if not todo:
        return rows
    engine = open_engine(SMOLLM2)
    shared = engine.shared_model()
    scorers = {name: get_scorer(name, progress=False) for name in SCORERS}
    if shared is not None:
        for scorer in scorers.values():
            share_model(scorer, shared[0], shared[1], SMOLLM2)
    plains: dict[str, str] = {r["id"]: r["text"] for r in rows if r["steer"] == "plain"}
    for ex, steer in todo:
        if steer == "plain":
            config = GenerateConfig(max_new_tokens=72, seed=0, num_beams=4)
            plains[ex.id] = generate(engine, engine.tokenizer, [ex], config, progress=False)[0]
            cands = [{"text": plains[ex.id], "recipe": "beam"}]
        else:
            n = SAMPLED if not STEERINGS[steer] else lambda_samples
            config = steering_config(steer, n)
            if steer in SHARED_BEAMS:  # its fair beams are another steering's rows
                config = dataclasses.replace(config, fair_beams=())
            cands = evenhand_candidates(engine, engine.tokenizer, ex, config, scorers[COMPONENTS[0]],
                                        plains[ex.id], coverage=scorers["equal-coverage"])[:-1]  # plain: own row
        texts = [c["text"] for c in cands]
        if not texts:  # nothing to add on this set (no quote lowers the UER): a marker row, no scores
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"id": ex.id, "steer": steer, "recipe": None}) + "\n")
            rows.append({"id": ex.id, "steer": steer, "recipe": None})
            print(f"{ex.id} {steer}: no candidate", flush=True)
            continue
        scores = {name: scorer.score([ex] * len(texts), floor_texts(cands, name))  # fluency: the written part
                  for name, scorer in scorers.items()}
        uer = evaluate([Scored(f"{ex.id}#{i}", ex, t) for i, t in enumerate(texts)], ["fairsumm"]).rows
        new = [{"id": ex.id, "steer": steer, "recipe": c["recipe"], "text": c["text"],
                **{name: scores[name][i] for name in SCORERS}, "uer": float(uer[i]["fairsumm_uer"])}
               for i, c in enumerate(cands)]
        with out.open("a", encoding="utf-8") as f:  # one steering of one example at a time: resumable
            f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new))
        rows += new
        print(f"{ex.id} {steer}: " + "; ".join(f"{r['recipe']} checker {r['checker']:.3f} uer {r['uer']:.3f}"
                                               for r in new), flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Demo settings by measurement on dev sets.")
    parser.add_argument("--limit", type=int, default=None, help="Only the first K dev sets.")
    parser.add_argument("--out", required=True, help="JSONL of scored candidates (appended, resumed).")
    parser.add_argument("--lambda-samples", type=int, default=SAMPLED,
                        help="Sampled candidates under each steering but none (0: fair beams only; their N>0 "
                        "settings are left out).")
    parser.add_argument("--table", default=None, help="Also write the per-setting table as CSV here.")
    parser.add_argument("--steerings", default=None,
                        help=f"Comma-separated steerings to decode (plain always): {', '.join(STEERINGS)}; "
                        "default: all. A steering that reads another's fair beams needs that one too.")
    args = parser.parse_args(argv)
    steerings = None if args.steerings is None else [s.strip() for s in args.steerings.split(",")]
    unknown = sorted(set(steerings or ()) - set(STEERINGS))
    if unknown:
        parser.error(f"--steerings: unknown {unknown}; choose from {', '.join(STEERINGS)}")
    examples = dev_examples(args.limit)
    rows = generate_rows(examples, Path(args.out), args.lambda_samples, steerings)
    table = summarize(rows, [ex.id for ex in examples])
    print(f"\n{len(examples)} dev sets: " + ", ".join(ex.id for ex in examples))
    print(format_table(table))
    if args.table:
        from evenhand.evaluation.io.csv_file import write_csv

        write_csv(args.table, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
