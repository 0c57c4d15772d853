"""The demo says what actually happened, at a glance (issue 49): which candidate was kept and how it
was made, a short first line, scores on their legends' scales, groups covered, progress over every step."""

from __future__ import annotations

import io
import re
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from evenhand.demo import (
    DEFAULTS_WHY,
    DemoConfig,
    demo_examples,
    set_steps,
    settings_line,
)
from evenhand.demo_display import (
    CHECKS,
    candidate_label,
    format_scores,
    kept_header,
    not_kept_line,
)
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.legend import meaning, printable


def _example(eid: str) -> Example:
    (found,) = [ex for ex in demo_examples() if ex.id == eid]
    return found


def test_each_candidate_is_named_by_how_it_was_made():
    reviews, debate = _example("headphones"), _example("city-bikes-debate")
    assert candidate_label({"recipe": "beam"}, reviews) == "plain"
    assert candidate_label({"recipe": "beam+quote", "quoted_group": "1"}, reviews) == (
        "plain + quote from a one-star reviewer")
    assert candidate_label({"recipe": "beam+quote", "quoted_group": "Councillor Okafor"}, debate) == (
        "plain + quote from Councillor Okafor")
    assert candidate_label({"recipe": "fair-beam β=3"}, reviews) == "fair beam β=3"
    assert candidate_label({"recipe": "nucleus"}, reviews) == "sampled (nucleus)"
    assert candidate_label({"recipe": "beam+labels"}, reviews) == "plain under the 'labels' fair prompt"


def _pool(kept: int, below: dict[int, list[str]]) -> list[dict[str, Any]]:
    pool: list[dict[str, Any]] = [{"recipe": "fair-beam β=1"}, {"recipe": "fair-beam β=3"},
                                  {"recipe": "beam+quote", "quoted_group": "1"}, {"recipe": "beam"}]
    for i, c in enumerate(pool):
        c["eligible"] = i not in below
        if i in below:
            c["below"] = below[i]
    pool[kept]["kept"] = True
    return pool


def test_the_header_names_the_kept_candidate_and_the_losers_in_one_line():
    ex = _example("headphones")
    both = ["calibrated:coverage", "checker"]
    quoted = _pool(2, {0: both, 1: both})
    assert kept_header(quoted, ex) == "EVENHAND — kept: plain + quote from a one-star reviewer"
    assert not_kept_line(quoted, ex) == ("not kept: fair beam β=1, β=3: below the coverage and checker floors; "
                                         "plain: ranked lower by the composite")
    plain = _pool(3, {0: both, 1: ["fluency"]})
    assert kept_header(plain, ex) == "EVENHAND — kept: plain (no candidate beat it under the floors)"
    assert not_kept_line(plain, ex) == (
        "not kept: fair beam β=1: below the coverage and checker floors; fair beam β=3: below the fluency floor; "
        "plain + quote from a one-star reviewer: ranked lower by the composite")
    alone = _pool(3, {0: both, 1: both, 2: ["checker"]})
    assert kept_header(alone, ex) == "EVENHAND — kept: plain (every other candidate fell below a floor)"
    assert kept_header(_pool(1, {}), ex) == "EVENHAND — kept: fair beam β=3"


def test_the_first_line_is_short_and_the_reasons_print_on_request(capsys):
    from evenhand.cli import main

    line = settings_line(DemoConfig())
    assert len(line) <= 160 and DEFAULTS_WHY not in line and "smollm2-135m-instruct" in line
    assert "up to 4 candidates" in line and "--explain" in line
    assert "up to 5 candidates" in settings_line(DemoConfig(candidates=1))
    assert "; 3 candidates" in settings_line(DemoConfig(quote=False))
    assert main(["demo", "--explain"]) == 0
    out = capsys.readouterr().out
    assert DEFAULTS_WHY in " ".join(out.split()) and "loading" not in out


def _side(calibrated: float, faithful: float, ec: float, fluency: float, checker: float) -> dict[str, Any]:
    return {"selection": {"calibrated:coverage": calibrated, "calibrated:faithfulness": faithful,
                          "equal-coverage": ec, "composite": 1.0, "floor fluency": fluency,
                          "floor calibrated:coverage": calibrated, "floor checker": checker},
            "checks": {"rouge_l_f1": 0.31, "fairsumm_uer": 0.06, "mint": 0.4, "words": 42.0}}


class _Composite:
    class config:
        names = ["calibrated:coverage", "calibrated:faithfulness", "equal-coverage"]
        weight_list = [1.0, 1.0, 1.0]


def _printed_scores(block: str) -> list[tuple[str, float]]:
    """(legend column, value) of every plain and evenhand number printed in a score block."""
    labels = {label: key for key, label in CHECKS.items()}
    out = []
    for line in block.splitlines():
        match = re.match(r"  (\S.*?)\s{2,}(-?[\d.]+|n/a)\s+(-?[\d.]+|n/a)", line)
        if match is None:
            continue
        label = match.group(1).strip()
        key = labels.get(label, label.removeprefix("floor "))
        out += [(key, float(v)) for v in match.group(2, 3) if v != "n/a"]
    return out


def test_every_printed_score_lies_on_its_legends_scale_with_one_legend_line_per_block():
    # the demo's real values on city-bikes-debate under main 80d6104: a "0-1" fit at 2.787 and -0.043
    scores = {"plain": _side(2.787, -0.043, -0.12, -2.41, 0.21),
              "evenhand": _side(2.905, -0.031, -0.08, -2.41, 0.24)}
    block = format_scores(_Composite, scores, "beam+quote", 4)
    printed = _printed_scores(block)
    assert len(printed) == 2 * (5 + 4)  # five selection rows and four checks, both columns
    assert "floor calibrated:coverage" not in block  # the same scorer on the same text as its component: once
    assert "floor fluency" in block and "floor checker" in block
    for key, value in printed:
        found = meaning(key)
        assert found is not None and printable(key, value), (key, value, found)
    assert any(getattr(meaning(k), "unbounded", False) for k, _ in printed)  # the fits say so, not "~0-1"
    assert block.count("scales:") == 2 and "[" not in block  # one legend line per block, none per row
    assert "composite   " not in block and "1.000" not in block  # min-max values are not printed
    assert "kept: first of 4 candidates on composite(calibrated:coverage×1," in block
    assert "calibrated:coverage                   2.787    2.905       +0.118" in block  # kept minus plain
    assert "(evenhand better; the kept quote was chosen to lower it: no evidence)" not in block  # a tie on UER
    assert "(tie; the kept quote was chosen to lower it: no evidence)" in block
    assert "they picked the evenhand summary: no evidence that it is better" in block
    same = {"plain": scores["plain"], "evenhand": scores["plain"]}  # plain kept: nothing picked over it
    kept_plain = format_scores(_Composite, same, "beam", 3)
    assert "selection scores (the evenhand column is the plain summary: nothing beat it)" in kept_plain
    assert "they picked the evenhand summary" not in kept_plain


def test_group_coverage_says_per_group_whether_a_point_is_stated():
    from evenhand.rerank.group_coverage import GroupCoverage, coverage_words, group_coverage

    ex = Example("x", [Document("a", "Councillor Reyes"), Document("b", "Councillor Reyes"),
                       Document("c", "Councillor Okafor")], "speaker")

    class Backend:  # P[s, d]: two summary units, three documents
        def coverage_matrix(self, example, summary):
            return [[0.7, 0.2, 0.1], [0.3, 0.4, 0.45]], [d.group for d in example.documents], "labels"

    found = group_coverage(ex, "two sentences.", Backend())
    assert found == [GroupCoverage("Councillor Reyes", "Councillor Reyes", 2, 3, 0.7, True),
                     GroupCoverage("Councillor Okafor", "Councillor Okafor", 1, 3, 0.45, False)]
    assert coverage_words(found) == ("Councillor Reyes (2 of 3 documents): covered; "
                                     "Councillor Okafor (1 of 3 documents): not covered")
    assert group_coverage(ex, "", Backend(), threshold=0.46)[1].covered is False
    assert group_coverage(ex, "", Backend(), threshold=0.45)[1].covered is True


def test_group_coverage_reads_the_equal_coverage_backend():
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.group_coverage import backend_words, group_coverage

    scorer = get_scorer("equal-coverage")
    ex = Example("a", [Document("The hotel was clean and quiet.", "5"), Document("The staff was rude.", "1")],
                 "rating")
    five, one = group_coverage(ex, "The hotel was clean and quiet.", scorer)
    assert (five.name, five.documents, five.covered) == ("five-star reviewer", 1, True)
    assert five.support == pytest.approx(1.0, abs=1e-5) and one.support < five.support
    assert backend_words(scorer).startswith("alignscore-minilm-fallback (MiniLM cosine: similarity")


# ---------------------------------------------------------------- the whole demo on a slow fake engine

class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Writes(io.StringIO):
    """A stream that notes the fake time of every write."""

    def __init__(self, clock: _Clock, log: list[tuple[float, str]]) -> None:
        super().__init__()
        self.clock, self.log = clock, log

    def write(self, text: str) -> int:
        if text:
            self.log.append((self.clock(), text))
        return super().write(text)

    def isatty(self) -> bool:
        return False


class _SlowWork:
    """A slow fake engine and scorers: each call passes fake time, second by second, and notes where the
    innermost progress bar stands (the heartbeat's poll runs each fake second, as its thread would)."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.seen: list[tuple[str, float, float]] = []  # (phase, bar position, bar total)

    def note(self, phase: str) -> None:
        from evenhand.evaluation.io import progress

        bar = progress._OPEN[-1]
        self.seen.append((phase, bar.shown, float(bar.bar.total)))

    def wait(self, seconds: int) -> None:
        from evenhand.evaluation.io import progress

        for _ in range(seconds):
            self.clock.now += 1.0
            for bar in list(progress._OPEN):
                bar.keepalive()

    def generate(self, model, tokenizer, examples, config, *args, **kwargs) -> list[str]:
        from evenhand.evaluation.io.progress import report_fraction

        phase = f"decode β={config.fair_beam:g}"
        for step in range(4):  # four decoding steps of 6 s, each reported as decoding does
            self.note(phase)
            self.wait(6)
            report_fraction((step + 1) / 4)
        beta = f" Fair beam {config.fair_beam:g} said so." if config.fair_beam else ""
        return [f"Reviewers praised the sound and the fit of these headphones.{beta}" for _ in examples]


class _Composite2:
    name = "composite"

    class config:
        names = ["calibrated:coverage", "equal-coverage"]
        weight_list = [1.0, 1.0]

    def __init__(self, work: _SlowWork) -> None:
        self.work = work
        self.components = {"equal-coverage": _Coverage(work)}

    def score_details(self, sources, outputs):
        self.work.note("scoring")
        self.work.wait(45)  # silent for longer than 30 s: the heartbeat has to speak
        self.work.note("scoring")
        n = len(outputs)
        return [{"score": (2.0 if "wrote:" in o or "said:" in o else 1.0) + i / n / 10,
                 "components": {"calibrated:coverage": 2.5 + i / 10, "equal-coverage": -0.1}}
                for i, o in enumerate(outputs)]


class _Floor:
    def __init__(self, work: _SlowWork, name: str) -> None:
        self.work, self.name = work, name

    def score(self, sources, outputs):
        self.work.note(f"floor {self.name}")
        self.work.wait(20)
        value = {"fluency": -2.0, "calibrated:coverage": 2.5, "checker": 0.5}[self.name]  # on their scales
        return [0.0 if "Fair beam" in o and self.name == "checker" else value for o in outputs]


class _Coverage:
    backend_label = "fake-backend"

    def __init__(self, work: _SlowWork) -> None:
        self.work = work

    def coverage_matrix(self, example, summary):
        self.work.note("groups covered")
        self.work.wait(12)
        return [[0.9 if i == 0 else 0.1 for i in range(len(example.documents))]], [], "labels"


@pytest.fixture
def slow_demo(monkeypatch):
    """Run the demo's own loop over the slow fake engine and scorers; (stdout, writes, work)."""
    import evenhand.decoding.engines.base as engines
    import evenhand.decoding.generate as generating
    import evenhand.decoding.models as models
    import evenhand.evaluation.scoring.registry as registry
    import evenhand.evaluation.scoring.report  # noqa: F401  (bound to the real registry before the patch)
    import evenhand.rerank.reranker as reranker
    from evenhand.evaluation.io import progress

    clock = _Clock()
    work = _SlowWork(clock)
    log: list[tuple[float, str]] = []
    composite = _Composite2(work)
    monkeypatch.setattr(progress, "clock", clock)
    monkeypatch.setattr(progress, "HEARTBEAT_POLL", 3600.0)  # the thread sleeps; _SlowWork.wait polls instead
    monkeypatch.setattr(models, "check_local", lambda *a, **k: None)
    engine = SimpleNamespace(shared_model=lambda: None, tokenizer=None, kind="fake",
                             capabilities=SimpleNamespace(beam_with_raising_processors=True))
    monkeypatch.setattr(engines, "open_engine", lambda *a, **k: engine)
    monkeypatch.setattr(generating, "generate", work.generate)
    monkeypatch.setattr(registry, "get_scorer", lambda name, **k: composite if name == "composite" else None)
    monkeypatch.setattr(reranker, "build_floor_scorers",
                        lambda scorer, floors, **k: {n: _Floor(work, n) for n in floors})
    out = _Writes(clock, log)

    def run(example: str) -> str:
        from evenhand.cli import main

        monkeypatch.setattr(sys, "stdout", out)  # in the test's own phase: pytest's capture resumes before it
        monkeypatch.setattr(sys, "stderr", _Writes(clock, log))
        assert main(["demo", "--example", example]) == 0
        return out.getvalue()

    return run, log, work


def test_progress_covers_every_step_and_the_header_says_what_was_kept(slow_demo):
    run, log, work = slow_demo
    text = run("headphones")
    steps = set_steps(DemoConfig(), True)
    assert steps[0] == "decoding plain beam search" and steps[-1] == "independent checks and groups covered"
    phases = list(dict.fromkeys(phase for phase, _, _ in work.seen))
    # the quote step reads which groups plain leaves out (the composite's Equal Coverage) before scoring
    assert phases == ["decode β=0", "decode β=1", "decode β=3", "groups covered", "scoring", "floor fluency",
                      "floor calibrated:coverage", "floor checker"]
    total = work.seen[0][2]
    assert total == len(steps) == 9  # plain, 2 fair beams, quote, scoring, 3 floors, checks
    for phase in phases:  # the bar moves during each phase ...
        at = [shown for p, shown, _ in work.seen if p == phase]
        if phase.startswith("decode"):
            assert at == sorted(at) and len(set(at)) == 4
    starts = [next(shown for p, shown, _ in work.seen if p == phase) for phase in phases]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)  # ... and from phase to phase
    assert all(shown < total for _, shown, _ in work.seen)  # never at 100% with work left
    assert "9.0/9 step" in "".join(t for _, t in log)  # and at 100% once the set is done
    # the heartbeat redraws during the 45 s of silent scoring, naming the step
    scoring = [t for at, t in log if "scoring the candidates" in t]
    assert len(scoring) >= 4
    # the header says which candidate was kept and why the others lost
    assert "EVENHAND — kept: plain + quote from a" in text
    assert "not kept: fair beam β=1, β=3: below the checker floor; plain: ranked lower by the composite" in text
    block = text[text.index("== headphones"):text.index("kept (of 1 examples)")]
    assert len(block.splitlines()) <= 60
    assert "groups covered" in block and "fake-backend" in block
    covered = " ".join(block[block.index("groups covered"):].split())
    assert "evenhand: five-star reviewers (4 of 7 documents): covered; four-star reviewer (1 of 7 documents): " \
           "not covered; one-star reviewer (1 of 7 documents): not covered" in covered
    # the quote was drawn for a group the fake coverage finds left out (only the first document is covered),
    # and the groups line says that this reading chose it
    assert "EVENHAND — kept: plain + quote from a five-star" not in text
    assert "the kept quote's group was chosen because plain did not cover it: not evidence" in covered
    for key, value in _printed_scores(block):
        assert printable(key, value), (key, value)


def test_under_example_all_something_is_printed_at_least_every_30_seconds(slow_demo):
    run, log, work = slow_demo
    text = run("all")
    times = [at for at, _ in log]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert times[-1] > 12 * 200  # each set took minutes of fake time ...
    assert max(gaps) <= 30  # ... and no 30 s passed without a line
    table = text[text.index("== all examples"):].splitlines()
    for ex in demo_examples():  # the kept candidate named per set
        (row,) = [line for line in table if line.startswith(f"  {ex.id} ")]
        assert re.match(rf"  {re.escape(ex.id)} +plain( \+ quote from \S.*?)? {{2,}}", row), row
