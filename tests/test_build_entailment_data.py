"""scripts/build_entailment_data.py: the corruption functions on hand-checked sentences, the
leakage filter, and byte-identical rebuilds from a small git snapshot."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "build_entailment_data.py"
_spec = importlib.util.spec_from_file_location("build_entailment_data", SCRIPT)
assert _spec is not None and _spec.loader is not None
bed: Any = importlib.util.module_from_spec(_spec)
sys.modules["build_entailment_data"] = bed
_spec.loader.exec_module(bed)

T = TypeVar("T")


class First(random.Random):
    """An rng that always takes the first option: random() is 0, choice() the first item."""

    def random(self) -> float:
        return 0.0

    def choice(self, seq: Sequence[T]) -> T:  # type: ignore[override]
        return seq[0]


# ------------------------------------------------------------------ negatives


def test_negate_inserts_after_the_first_auxiliary() -> None:
    assert bed.negate("The hotel was clean.", First()) == "The hotel was not clean."


def test_negate_removes_a_contraction_or_a_not() -> None:
    assert bed.negate("The room wasn't clean.", First()) == "The room was clean."
    assert bed.negate("They did not come back.", First()) == "They did come back."


def test_negate_without_auxiliary_or_negation_gives_none() -> None:
    assert bed.negate("Staff greeted us warmly.", First()) is None
    # "had" as a main verb or in "had to": no "not" after it
    assert bed.negate("We had to leave early.", First()) is None
    assert bed.negate("If you have a pet you can bring it.", First()) == "If you have a pet you can not bring it."
    assert bed.negate("They have left the room.", First()) == "They have not left the room."


def test_antonym_swaps_both_ways_keeping_case() -> None:
    assert bed.swap_antonym("The staff were friendly.", First()) == "The staff were rude."
    assert bed.swap_antonym("Bad food, slow service.", First()) == "Good food, slow service."
    assert bed.swap_antonym("The walls are blue.", First()) is None


def test_quantifier_prefers_the_longest_phrase_and_moves_both_directions() -> None:
    assert bed.swap_quantifier("One of the guests complained.", First()) == "Most of the guests complained."
    assert bed.swap_quantifier("Most guests liked the pool.", First()) == "Few guests liked the pool."
    assert bed.swap_quantifier("The bus is always late.", First()) == "The bus is occasionally late."


def test_number_changes_digits_years_and_words() -> None:
    assert bed.change_number("It cost 40 dollars.", First()) == "It cost 41 dollars."
    assert bed.change_number("In 2010 he left.", First()) == "In 2005 he left."
    assert bed.change_number("It cost 1,200 dollars.", First()) == "It cost 1,201 dollars."
    assert bed.change_number("No numbers here.", First()) is None


def test_entity_swap_exchanges_two_names_but_not_the_opening_word() -> None:
    assert bed.swap_entities("The report says Smith thanked Jones.", First()) == "The report says Jones thanked Smith."
    assert bed.swap_entities("Smith thanked Jones.", First()) is None


def test_role_swap_exchanges_two_heads() -> None:
    assert bed.swap_roles("Then the dog bit the man.", First()) == "Then the man bit the dog."


def test_attribution_swap_names_another_person_from_the_premise() -> None:
    got = bed.swap_attribution('"It works," said Maria Lopez.', ["Maria Lopez", "Tom Reed"], First())
    assert got == '"It works," said Tom Reed.'
    assert bed.swap_attribution("It works well.", ["Tom Reed"], First()) is None
    # a name is a whole word: "McLeish" is neither cut to "Leish" nor replaced by itself
    got = bed.swap_attribution('McLeish told the BBC: "We blew it."', ["Alex McLeish", "Walter Smith"], First())
    assert got == 'Walter Smith told the BBC: "We blew it."'


def test_invented_adjective_is_new_to_the_premise_and_fixes_the_article() -> None:
    assert bed.invent_adjective("She booked a room.", "She booked a room.", First()) == "She booked an expensive room."
    premise = "She booked an expensive room."
    assert bed.invent_adjective("She booked a room.", premise, First()) == "She booked a cheap room."


def test_invented_circumstance_is_absent_from_the_premise() -> None:
    assert bed.invent_circumstance("He left.", "He left.", First()) == "He left on Monday."
    assert bed.invent_circumstance("He left.", "He left on Monday.", First()) == "He left last year."


# ------------------------------------------------------------------ positives


def test_compress_drops_a_trailing_phrase_or_clause() -> None:
    assert bed.compress("The team won the cup in May.", First()) == "The team won the cup."
    assert bed.compress("The hotel, which opened in 1990, has a pool.", First()) == "The hotel has a pool."


def test_compress_drops_only_an_adverbial_opener() -> None:
    assert bed.compress("In the morning, the staff cleaned the lobby.", First()) == "The staff cleaned the lobby."
    assert bed.compress("About a million lost power, and crops failed badly.", First()) is None


def test_compress_never_drops_a_negation() -> None:
    assert not bed._keeps_meaning("He was not happy with it.", "He was happy with it.")
    assert bed.compress("They sat outside without umbrellas.", First()) is None


def test_fuse_joins_adjacent_sentences() -> None:
    assert bed.fuse("The hotel is old.", "It was renovated in 2010.") == "The hotel is old, and it was renovated in 2010."
    assert bed.fuse("The hotel is old.", "Paris is near.") == "The hotel is old, and Paris is near."
    assert bed.fuse("Is it old?", "It is.") is None


def test_window_holds_the_source_and_respects_the_word_limit() -> None:
    units = [bed.Unit(f"Sentence number {i} has five words.") for i in range(10)]  # 6 words each
    for seed in range(50):
        rng = random.Random(seed)
        span = bed.window(units, 4, rng, max_words=20)
        assert span is not None
        a, b = span
        assert a <= 4 < b and 2 <= b - a <= 3  # 3 x 6 = 18 <= 20 < 24
    assert bed.window(units, 4, random.Random(0), max_words=10) is None


# ------------------------------------------------------------------ leakage filter


def test_ngrams_are_lowercased_word_8grams() -> None:
    assert bed.ngrams("A b C d e f g h i") == {"a b c d e f g h", "b c d e f g h i"}
    assert bed.ngrams("too short to count") == set()


# ------------------------------------------------------------------ end to end


def _git_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-qm", "data"], check=True)
    return root / ".git"


LEAKED = "The council voted seven to two to close the old bridge for repairs next spring."


def _news() -> dict[str, str]:
    files = {}
    for k in range(12):
        body = " ".join(
            f"Reporter Anna Berg said the {w} market in Oslo rose by {k + 3} percent last week. "
            f"Most traders were happy with the result, according to Peter Lund. "
            f"The bank did not change its forecast for the year."
            for w in ("fish", "grain", "steel")
        )
        files[f"bbc/business/{k:03d}.txt"] = f"Title {k}\n\n{body}\n\n{LEAKED if k == 0 else ''}\n"
    return files


def test_builder_is_byte_identical_filters_leaks_and_names_sources(tmp_path: Path) -> None:
    git_dir = _git_repo(tmp_path / "bbc", _news())
    held = tmp_path / "held.json"
    held.write_text(json.dumps([{"summary": LEAKED}]), encoding="utf-8")
    outputs = []
    for run in ("one", "two"):
        out = tmp_path / run
        argv = ["--out", str(out), "--size", "1000", "--seed", "3", "--bbc", str(git_dir), "--exclude", str(held)]
        assert bed.main(argv) == 0
        outputs.append(((out / "train.jsonl").read_bytes(), (out / "manifest.json").read_bytes()))
    assert outputs[0] == outputs[1]
    rows = [json.loads(line) for line in outputs[0][0].decode().splitlines()]
    assert rows and {r["label"] for r in rows} == {0, 1}
    assert all(set(r) == {"premise", "hypothesis", "label", "source", "kind"} for r in rows)
    assert not any("close the old bridge" in r["premise"] + r["hypothesis"] for r in rows)
    manifest = json.loads(outputs[0][1])
    assert manifest["exclusions"]["dropped_total"] > 0
    (source,) = manifest["sources"]
    assert source["repo"] == "dejanbatanjac/bbc-article-classify-bert"
    assert len(source["commit"]) == 40 and source["rows_used"] == len(rows)


def test_a_folder_that_is_not_a_snapshot_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bed.main(["--out", str(tmp_path / "o"), "--bbc", str(tmp_path), "--exclude", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bbc" in err
