"""--scorer-option SCORER.FIELD=VALUE, and a `build-checker` folder as --align-model (issue 48: a user reruns the
SummEdits/FRANK table on any model evenhand trained with one command)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from evenhand.cli import main
from evenhand.commands._scoring import parse_scorer_options, scorer_options
from evenhand.evaluation.errors import DataError
from evenhand.rerank.alignment import (
    AlignmentBackendMixin,
    is_trained_folder,
    trained_folder_problem,
)


def test_values_are_read_as_their_fields_types() -> None:
    assert parse_scorer_options(["checker.rules=false", "checker.k=3", "checker.folder=m", "checker.lm_gap=2.5",
                                 "alignscore.max_length=64", "checker.int8=TRUE", "fairsumm-bertscore.layer=17",
                                 "fairsumm-bertscore.baseline=0.83"]) == {
        "checker": {"rules": False, "k": 3, "folder": "m", "lm_gap": 2.5, "int8": True},
        "alignscore": {"max_length": 64},
        "fairsumm-bertscore": {"layer": 17, "baseline": 0.83}}  # `int | None`, `float | None`: their first type
    assert parse_scorer_options(None) == {}
    # the last value of a field wins, as argparse's own repeated flags do
    assert parse_scorer_options(["checker.k=1", "checker.k=4"]) == {"checker": {"k": 4}}


@pytest.mark.parametrize(("value", "message"), [
    ("rules=false", "write SCORER.FIELD=VALUE"),
    ("checker.rules", "write SCORER.FIELD=VALUE"),
    ("nosuch.rules=false", "Unknown scorer 'nosuch'"),
    ("checker.nope=1", "checker has no field 'nope'; its fields: batch_size,"),
    ("checker.rules=maybe", "rules is true or false, got 'maybe'"),
    ("checker.k=2.5", "k is an integer, got '2.5'"),
    ("checker.lm_gap=nan", "lm_gap must be a finite number, got 'nan'"),
    ("checker.lm_gap=inf", "lm_gap must be a finite number"),
    ("checker.folder=", "give a value after '='"),
    ("composite.weights=1", "weights is not a single value"),
    ("composite.scorers=rouge", "scorers is not a single value"),
])
def test_a_malformed_option_names_itself(value: str, message: str) -> None:
    with pytest.raises(DataError) as err:
        parse_scorer_options([value])
    assert str(err.value).startswith(f"--scorer-option {value}: ")
    assert message in str(err.value)


def test_options_reach_their_scorer_only_and_a_calibrations_components() -> None:
    args = argparse.Namespace(scorer_batch_size=None, device=None,
                              scorer_option=["checker.rules=false", "checker.k=3", "mint.batch_size=5"])
    # the shipped faithfulness fit has checker among lm-pmi, rouge-1-precision and sentiment-agreement
    options = scorer_options(args, ["checker", "rouge-1-precision", "calibrated:faithfulness"])
    assert options["checker"] == {"rules": False, "k": 3}
    assert options["rouge-1-precision"] == {}
    assert options["calibrated:faithfulness"] == {"options": {"checker": {"rules": False, "k": 3}}}


def _entail_folder(path: Path) -> Path:
    path.mkdir()
    (path / "entail.safetensors").write_bytes(b"not read by these checks")
    return path


def test_trained_folders_are_told_from_other_folders(tmp_path: Path) -> None:
    entail = _entail_folder(tmp_path / "entail")
    checker = tmp_path / "checker"
    checker.mkdir()
    (checker / "model.safetensors").write_bytes(b"x")
    assert trained_folder_problem(entail) is None and is_trained_folder(str(entail))
    assert "holds neither" in str(trained_folder_problem(checker))  # weights without checker.json
    (checker / "checker.json").write_text("{}", encoding="utf-8")
    assert trained_folder_problem(checker) is None and is_trained_folder(str(checker))
    assert "is not a folder" in str(trained_folder_problem(entail / "entail.safetensors"))
    assert not is_trained_folder(str(tmp_path / "missing")) and not is_trained_folder(str(tmp_path))

    class Aligned(AlignmentBackendMixin):
        def __init__(self, model: str) -> None:
            self.config = argparse.Namespace(model=model, base_model="roberta-large")

    from evenhand.evaluation.io.digests import file_digest

    # every output names the entailment model by its weights' digest, not as an NLI classifier
    label = Aligned(str(entail)).backend_label
    assert label.startswith(f"evenhand-entail {file_digest(entail / 'entail.safetensors')[:8]} ")
    assert Aligned(str(tmp_path)).backend_label == f"{tmp_path} (NLI)"


def test_the_cli_refuses_a_bad_option_or_folder_before_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "labelled.jsonl"
    data.write_text("".join(json.dumps({"doc": "The shop opens at nine.", "summary": s, "label": y, "split": sp}) + "\n"
                            for s, y, sp in [("It opens at nine.", 1, "evaluation"), ("It opens at ten.", 0, "evaluation"),
                                             ("It opens at nine.", 1, "test"), ("It opens at six.", 0, "test")]),
                    encoding="utf-8")
    out = tmp_path / "out.jsonl"
    for extra, expected in [
        (["--scorer-option", "checker.rules=maybe"], "--scorer-option checker.rules=maybe: rules is true or false"),
        (["--scorer-option", f"checker.folder={tmp_path}"],
         f"checker: `folder`: {tmp_path} holds neither entail.safetensors"),
    ]:
        assert main(["meta-eval", "--data", str(data), "--scorers", "checker", "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err, err
        assert not out.exists()
