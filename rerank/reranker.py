"""Sample N candidate summaries per example, score them, keep the best (Ri, Deas & McKeown 2025).

The paper's sampling recipe splits N candidates into equal thirds:

- ``nucleus``: top-p 0.9;
- ``top-k``: top-k 100;
- ``hybrid``: top-p 0.9, temperature 1.2, repetition penalty 1.2, no repeated 3-grams.

Candidate i uses recipe ``i % 3`` (N = 9: three of each). Nucleus and top-k
keep the base config's repetition settings (``GenerateConfig`` defaults
``no_repeat_ngram_size=3``, ``repetition_penalty=1.2``, because SmolLM2 loops
without them); pass ``no_repeat_ngram_size=0, repetition_penalty=1.0`` in the
base config for the paper's plain samplers. Each recipe samples its share of
an example's candidates in one batch (the example repeated), under its own
seed (``seed + 7919 * recipe index``), so the same inputs and seed give the
same candidates.

Every candidate is scored by the scorer (usually ``composite``); the one with
the highest score is kept (first on ties).

**Floors** (``RerankConfig.floors``, ``{scorer name: margin}``): the plain
beam-search summary (the base ``GenerateConfig``, recipe ``"beam"``) joins the
candidates as their reference, and a candidate whose floor scorer is below the
plain summary's by more than the margin cannot win: ``fluency`` keeps
incoherent samples out, ``calibrated:coverage`` keeps out a candidate that is
"fair" by saying nothing. The plain summary itself always qualifies, so the
kept summary is never worse than plain beam search by more than the margins.
A floor on the model's writing (``WRITING_FLOORS``: ``fluency``) reads a candidate's
``written`` text where it has one: the part the model wrote, without words quoted
verbatim from the source (``evenhand.decoding.quote``: the plain summary + one quoted
sentence is written = the plain summary); the other floors read the whole text.
Each candidate records its floor scores and ``eligible``. One JSONL record per example holds
all candidates and their scores; the file is appended per example and resumed
on restart (``evenhand.evaluation.io.resumable.ResumableJsonl``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..evaluation.data.configs import coerce_lists
from ..evaluation.data.lists import split_list
from ..evaluation.data.schema import Example
from ..evaluation.io.resumable import ResumableJsonl
from ..evaluation.scoring.scorer import Scorer

#: The paper's three samplers: GenerateConfig fields each one sets.
RECIPES: dict[str, dict[str, Any]] = {
    "nucleus": {"do_sample": True, "num_beams": 1, "top_p": 0.9, "top_k": 0, "temperature": 1.0},
    "top-k": {"do_sample": True, "num_beams": 1, "top_p": None, "top_k": 100, "temperature": 1.0},
    "hybrid": {
        "do_sample": True, "num_beams": 1, "top_p": 0.9, "top_k": 0, "temperature": 1.2,
        "repetition_penalty": 1.2, "no_repeat_ngram_size": 3,
    },
}


#: The default selection: calibrated coverage and faithfulness with Equal Coverage fairness
#: (composite, per-set min-max, equal weights) ...
DEFAULT_SCORERS = "calibrated:coverage,calibrated:faithfulness,equal-coverage"
#: ... under floors relative to the plain beam-search summary: fluency (mean token log-prob
#: without the source, nats) and calibrated coverage (predicted share of key points).
#: Margins measured on the bundled demo sets: docs/reranking.md. And the ``checker`` floor at margin
#: 0, issue 33's rule: no candidate that evenhand's checker rates as contradicting the source more
#: than plain can win (the default ``calibrated:faithfulness`` loads the checker anyway). On the dev
#: sweep it excludes one candidate the other floors kept (also above plain on UER); in both demo sets
#: where a fair-beam candidate won without it, that candidate added unsupported statements
#: (docs/reranking.md). On the long
#: news articles of the controlled summaries its exclusions are right only about half the time
#: (benchmarks/checker_floor.py): ``--floors`` without ``checker`` turns it off.
DEFAULT_FLOORS: dict[str, float] = {"fluency": 0.5, "calibrated:coverage": 0.1, "checker": 0.0}
#: Floors that judge the model's own writing: they read a candidate's ``written`` text (its words
#: without verbatim quotes of the source) where it has one. A quote is the source's wording, not the
#: model's: SmolLM2 without the source scores reviewers' own sentences 0.4-0.7 nats per token below its
#: summaries (docs/reranking.md), which is no sign of an incoherent candidate.
WRITING_FLOORS = frozenset({"fluency"})


def parse_floors(text: str) -> dict[str, float]:
    """``"fluency=0.5,calibrated:coverage=0.1"`` -> ``{name: margin}``; ``"none"`` -> ``{}``."""
    if text.strip().lower() == "none":
        return {}
    floors: dict[str, float] = {}
    for item in split_list(text, "floors", empty_ok=True):
        name, sep, margin = item.rpartition("=")
        try:
            value = float(margin)
        except ValueError:
            value = float("nan")
        if not sep or not name.strip() or not value >= 0:
            raise ValueError(
                f"`floors` item {item!r} must be NAME=MARGIN with a non-negative margin, "
                "e.g. fluency=0.5 (or 'none')"
            )
        floors[name.strip()] = value
    if not floors:
        raise ValueError("`floors` is empty; give NAME=MARGIN items or 'none'")
    return floors


@dataclass
class RerankConfig:
    """Settings of the reranker."""

    candidates: int = field(default=9, metadata={"help": "Candidates sampled per example (N)."})
    recipes: list[str] = field(
        default_factory=lambda: ["nucleus", "top-k", "hybrid"],
        metadata={"help": "Samplers cycled over candidates (a list or comma-separated)."},
    )
    seed: int = field(default=0, metadata={"help": "Base seed of the samplers."})
    floors: dict[str, float] = field(
        default_factory=dict,
        metadata={
            "help": "Scorer name -> margin: a candidate scoring below the plain beam-search summary "
            "by more than the margin cannot win (the plain summary joins the candidates)."
        },
    )
    quote: bool = field(
        default=False,
        metadata={"help": "Add the plain summary + one source sentence quoted verbatim, its writer's group "
                  "named, chosen to lower FairSumm's UER (recipe beam+quote; decoding.quote). Needs floors "
                  "(the plain summary is their reference)."},
    )

    def __post_init__(self) -> None:
        from ..evaluation.data.checks import check_count, check_flags, check_number, check_seed

        coerce_lists(self)
        check_count(self.candidates, "candidates")
        check_seed(self.seed)
        check_flags(self, "quote")
        if self.quote and not self.floors:
            raise ValueError("`quote` appends a quotation to the plain summary, which joins the candidates only "
                             "with `floors`: set floors, or drop quote")
        for name, margin in self.floors.items():
            check_number(margin, f"`floors`: the margin of {name!r}", low=0)
        unknown = [r for r in self.recipe_list if r not in RECIPES]
        if unknown:
            raise ValueError(f"`recipes` has unknown sampler(s) {unknown}; available: {', '.join(RECIPES)}")

    @property
    def recipe_list(self) -> list[str]:
        """The samplers in cycling order."""
        if not self.recipes:
            raise ValueError("`recipes` is empty; give at least one of " + ", ".join(RECIPES))
        return list(self.recipes)

    def plan(self) -> list[str]:
        """The sampler of each candidate: candidate i uses ``recipe_list[i % len]``."""
        recipes = self.recipe_list
        return [recipes[i % len(recipes)] for i in range(self.candidates)]

    def record_recipes(self) -> list[str]:
        """The recipes a record's candidates can have, in their order: the samplers, then the plain
        summary (``beam``) with floors, then ``decoding.quote.QUOTE_RECIPE`` with ``quote``.

        >>> RerankConfig(floors={"fluency": 0.5}, quote=True).record_recipes()
        ['nucleus', 'top-k', 'hybrid', 'beam', 'beam+quote']
        """
        from ..decoding.quote import QUOTE_RECIPE

        return [*self.recipe_list, *(["beam"] if self.floors else []), *([QUOTE_RECIPE] if self.quote else [])]


class Reranker:
    """Best-of-N summarization with a scorer.

    Args:
        model: generator model (``evenhand.decoding.models.load_generator``).
        tokenizer: its tokenizer.
        scorer: any ``Scorer`` (e.g. ``get_scorer("composite", scorers="llm-coverage,alignscore")``).
        config: N, samplers and seed.
        generate_config: base decoding settings (max_new_tokens, batch_size,
            repetition settings...); the sampler fields are overridden per recipe.
        floor_scorers: scorers for ``config.floors`` by name (default: the
            selection scorer's component of that name, else a fresh one).
        lora_request: with a ``VllmEngine`` model: the vLLM ``LoRARequest`` every candidate
            is decoded with (``generate``'s keyword; training samples its policy so).
    """

    def __init__(
        self, model: Any, tokenizer: Any, scorer: Scorer, config: RerankConfig | None = None,
        generate_config: Any = None, floor_scorers: dict[str, Scorer] | None = None,
        lora_request: Any = None,
    ) -> None:
        from ..decoding.config import GenerateConfig

        self.model = model
        self.tokenizer = tokenizer
        self.scorer = scorer
        self.config = config or RerankConfig()
        self.generate_config = generate_config or GenerateConfig()
        self.floor_scorers = (
            floor_scorers if floor_scorers is not None else build_floor_scorers(scorer, self.config.floors)
        )
        self.lora_request = lora_request

    def recipe_config(self, recipe: str, index: int) -> Any:
        """The GenerateConfig of one sampler (seeded by its index in the recipe list)."""
        values = dataclasses.asdict(self.generate_config)
        values.update(RECIPES[recipe])
        values["seed"] = self.config.seed + 7919 * index
        # fair beam search is a beam search: the sampled candidates keep the processors (α, λ) only;
        # the base config's beam candidate (``plain_candidate``) keeps fair_beam / fair_meaning
        values.update(fair_beam=0.0, fair_meaning=0.0)
        return type(self.generate_config)(**values)

    def candidates(
        self, examples: Sequence[Example], on_recipe: Callable[[str], None] | None = None,
    ) -> list[list[dict[str, Any]]]:
        """Per example its N candidates: ``{"text", "recipe", "index"}`` in candidate order.

        ``on_recipe(name)`` is called as each sampler starts (default: its step of ``progress_parts``
        on the innermost progress bar)."""
        from ..decoding.generate import generate
        from ..evaluation.io.progress import report_part, report_status

        plan = self.config.plan()
        out: list[list[dict[str, Any]]] = [[None] * len(plan) for _ in examples]  # type: ignore[list-item]
        parts = self.progress_parts()
        for r, recipe in enumerate(self.config.recipe_list):
            slots = [i for i, name in enumerate(plan) if name == recipe]
            if not slots:
                continue
            if on_recipe is not None:
                on_recipe(recipe)
            else:
                report_part(r, parts)
                report_status(f"sampling ({recipe})")
            repeated = [ex for ex in examples for _ in slots]
            texts = generate(
                self.model, self.tokenizer, repeated, self.recipe_config(recipe, r), progress=False,
                lora_request=self.lora_request,
            )
            for e in range(len(examples)):
                for k, slot in enumerate(slots):
                    out[e][slot] = {"text": texts[e * len(slots) + k], "recipe": recipe, "index": slot}
        return out

    def rerank(
        self, examples: Sequence[Example], out: str | Path | ResumableJsonl | None = None, resume: bool = True,
        progress: bool = True, on_example: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Sample, score and select for every example; return (and optionally append) records.

        A record: ``{"id", "summary", "best_index", "best_score", "scorer",
        "candidates": [{"text", "recipe", "index", "score", ...details}]}``.
        With ``out`` (a path, or an open ``ResumableJsonl`` carrying a manifest),
        records are appended per example and examples already in the file are
        skipped (their stored records are returned). Every example is sampled
        with the same seeds, so a resumed run equals an uninterrupted one.
        """
        from ..evaluation.io.progress import Progress

        if isinstance(out, ResumableJsonl) or out is None:
            store = out
        else:
            store = ResumableJsonl(out, resume=resume)
        records = []
        examples = list(examples)
        todo = sum(store is None or not store.done(ex.id) for ex in examples)
        # per example, with an estimate; each step named, the line redrawn while a step is silent
        with Progress(todo, "rerank", "ex", disable=not progress, heartbeat=10.0) as bar:
            for ex in examples:
                if store is not None and store.done(ex.id):
                    records.append(store.records[ex.id])
                    continue
                bar.begin(1)
                record = self.rerank_one(ex)
                if store is not None:
                    store.append([record])
                bar.update(1)
                if on_example is not None:
                    on_example(record)
                records.append(record)
        return records

    def plain_candidate(self, example: Example, index: int) -> dict[str, Any]:
        """The plain beam-search summary (base config) as candidate ``index``, recipe ``"beam"``."""
        from ..decoding.generate import generate

        text = generate(self.model, self.tokenizer, [example], self.generate_config, progress=False,
                        lora_request=self.lora_request)[0]
        return {"text": text, "recipe": "beam", "index": index}

    def progress_parts(self) -> int:
        """The steps of one example on the progress bar: each sampler, the plain beam (floors), scoring,
        each floor."""
        return len(self.config.recipe_list) + bool(self.config.floors) + 1 + len(self.config.floors)

    def rerank_one(self, example: Example) -> dict[str, Any]:
        """The record of one example (see ``rerank``)."""
        from ..evaluation.io.progress import report_part, report_status

        candidates = self.candidates([example])[0]
        parts = self.progress_parts()
        first = len(self.config.recipe_list)  # the plain beam, then scoring, then each floor
        if self.config.floors:
            report_part(first, parts)
            report_status("plain beam search")
            candidates.append(self.plain_candidate(example, len(candidates)))
        if self.config.quote:  # the plain summary + one attributed quote (no decoding; WRITING_FLOORS read plain)
            from ..decoding.quote import quote_candidate
            from .group_coverage import coverage_component, left_out_groups

            plain = candidates[-1]["text"]  # for a group plain leaves out (when the scorer reads coverage)
            coverage = coverage_component(self.scorer)
            left_out = None if coverage is None else left_out_groups(example, plain, coverage)
            quoted = quote_candidate(example, plain, self.generate_config.fairness or "ratio", len(candidates),
                                     left_out)
            if quoted is not None:
                candidates.append(quoted)
        steps = ["scoring", *self.config.floors]

        def on_step(step: str) -> None:
            report_part(first + bool(self.config.floors) + steps.index(step), parts)
            report_status(step if step == "scoring" else f"floor {step}")

        best = score_and_select(example, candidates, self.scorer, self.config.floors, self.floor_scorers, on_step)
        return {
            "id": example.id,
            "summary": candidates[best]["text"],
            "best_index": best,
            "best_score": candidates[best]["score"],
            "scorer": self.scorer.name,
            "candidates": candidates,
        }


def select_best(scores: Sequence[float], eligible: Sequence[bool] | None = None) -> int:
    """Index of the highest score among the eligible candidates (the first one on ties)."""
    if not scores:
        raise ValueError("no candidates to select from")
    allowed = [i for i in range(len(scores)) if eligible is None or eligible[i]]
    if not allowed:
        raise ValueError("no eligible candidate to select from")
    return max(allowed, key=lambda i: (scores[i], -i))


def build_floor_scorers(
    scorer: Scorer, floors: dict[str, float], cache_dir: Any = None,
    options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Scorer]:
    """The scorers behind ``floors``: the selection scorer's own component where it has one."""
    from ..evaluation.scoring.registry import get_scorer

    components = getattr(scorer, "components", {})
    options = options or {}
    return {
        name: components.get(name) or get_scorer(name, cache_dir=cache_dir, **options.get(name, {}))
        for name in floors
    }


def floor_texts(candidates: Sequence[Mapping[str, Any]], name: str) -> list[str]:
    """What the scorer ``name`` reads of each candidate as a floor or its score: the ``written`` text where
    a candidate has one and ``name`` is in ``WRITING_FLOORS``, else the whole text.

    >>> floor_texts([{"text": 'ab. X wrote: "cd"', "written": "ab."}, {"text": "ef"}], "fluency")
    ['ab.', 'ef']
    >>> floor_texts([{"text": 'ab. X wrote: "cd"', "written": "ab."}], "checker")
    ['ab. X wrote: "cd"']
    """
    if name in WRITING_FLOORS:
        return [c.get("written", c["text"]) for c in candidates]
    return [c["text"] for c in candidates]


def below_floors(
    floor_scores: Sequence[Mapping[str, float]], plain: int, floors: Mapping[str, float]
) -> list[list[str]]:
    """Per candidate, the floors it fails (in ``floors`` order): those on which it scores below
    the plain summary (index ``plain``, which fails none) by more than the floor's margin.

    >>> below_floors([{"f": 1.0}, {"f": 0.4}, {"f": 0.6}], 0, {"f": 0.5})
    [[], ['f'], []]
    """
    ref = floor_scores[plain]
    return [[] if i == plain else [n for n, m in floors.items() if s[n] < ref[n] - m]
            for i, s in enumerate(floor_scores)]


def score_and_select(
    example: Example, candidates: list[dict[str, Any]], scorer: Scorer,
    floors: dict[str, float] | None = None, scorers: dict[str, Scorer] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> int:
    """Score ``candidates`` (in place: score details, floor scores, ``eligible``); the winner's index.

    ``on_step(name)`` is called as each step starts: ``"scoring"`` (the selection scorer), then
    each floor's name (a progress bar moves per step).

    With ``floors``, the candidate whose recipe is ``"beam"`` is the reference:
    a candidate below it by more than a floor's margin is not eligible, and its
    ``below`` lists the floors it failed (in ``floors`` order). A floor of ``WRITING_FLOORS`` reads
    a candidate's ``written`` text where it has one.
    """
    texts = [c["text"] for c in candidates]
    if on_step is not None:
        on_step("scoring")
    for cand, detail in zip(candidates, scorer.score_details([example] * len(texts), texts)):
        cand.update(detail)
    eligible = [True] * len(candidates)
    if floors:
        plain = next((i for i, c in enumerate(candidates) if c["recipe"] == "beam"), None)
        if plain is None:
            raise ValueError("floors need the plain beam-search summary among the candidates (recipe 'beam')")
        scorers = scorers if scorers is not None else build_floor_scorers(scorer, floors)
        for name in floors:
            if on_step is not None:
                on_step(name)
            read = floor_texts(candidates, name)
            values = scorers[name].score([example] * len(read), read)
            for cand, value in zip(candidates, values):
                cand.setdefault("floors", {})[name] = value
        failed = below_floors([c["floors"] for c in candidates], plain, floors)
        for i, (cand, names) in enumerate(zip(candidates, failed)):
            if names:
                eligible[i] = False
                cand["below"] = names
            cand["eligible"] = eligible[i]
    return select_best([c["score"] for c in candidates], eligible)
