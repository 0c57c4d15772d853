import json
import subprocess
import sys
from pathlib import Path

import pytest

from evenhand.cli import COMMANDS, build_parser, main


def _names():
    import importlib

    return [importlib.import_module(f"evenhand.commands.{m}").NAME for m in COMMANDS]


def test_every_command_has_help(capsys):
    parser = build_parser()
    for name in _names():
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args([name, "--help"])
        assert exit_.value.code == 0
        assert "usage: evenhand " + name in capsys.readouterr().out


def test_top_level_help_is_fast_and_lists_commands():
    out = subprocess.run([sys.executable, "-m", "evenhand", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for name in _names():
        assert name in out


def test_bad_jsonl_exits_2_with_one_line(tmp_path, capsys):
    data = tmp_path / "bad.jsonl"
    data.write_text(json.dumps({"id": "a", "documents": ["ok"]}) + "\n"
                    + json.dumps({"id": "b", "documents": [{"group": "g"}]}) + "\n")
    code = main(["generate", "--data", str(data), "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert f"{data}:2:" in err and "`text`" in err


@pytest.mark.parametrize("flags, message", [
    (["--max-new-tokens", "0"], "`max_new_tokens` must be a positive int, got 0"),
    (["--limit", "0"], "`--limit` must be a positive int, got 0"),
])
def test_bad_config_option_exits_2_with_one_line(tmp_path, capsys, flags, message):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "documents": ["ok"]}) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["generate", "--data", str(data), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"evenhand generate: error: {message}" and not out.exists()


def test_missing_data_file_exits_2_naming_path(tmp_path, capsys):
    missing = tmp_path / "nope.jsonl"
    assert main(["generate", "--data", str(missing), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert str(missing) in capsys.readouterr().err


def test_demo_list(capsys):
    assert main(["demo", "--list"]) == 0
    out = capsys.readouterr().out
    assert "headphones" in out and "city-bikes-debate" in out


def test_demo_unknown_example(capsys):
    assert main(["demo", "--example", "zzz"]) == 2
    assert "unknown demo example 'zzz'" in capsys.readouterr().err


def test_demo_data_is_unbalanced_and_valid():
    from evenhand.demo import demo_examples

    examples = demo_examples()
    assert len(examples) == 12
    for ex in examples:
        groups = ex.require_groups()
        counts = [ex.labels.count(g) for g in groups if g in ex.labels]
        assert max(counts) >= 2 * min(counts), ex.id  # a majority group dominates on purpose


def test_evaluate_accepts_registered_scorers(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "e1", "documents": [
        {"text": "The food was great.", "group": "pos"},
        {"text": "The service was slow.", "group": "neg"}]}) + "\n")
    summaries = tmp_path / "s.jsonl"
    summaries.write_text(json.dumps({"id": "e1", "summary": "Great food but slow service."}) + "\n")
    out = tmp_path / "scores.jsonl"
    args = ["evaluate", "--data", str(data), "--summaries", str(summaries), "--out", str(out),
            "--score-cache", "none"]
    assert main([*args, "--metrics", "rouge-l-recall"]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    # LCS of 8 source tokens and the summary is 2 ("food ... service" / "great ... slow")
    assert row["rouge-l-recall"] == 0.25
    assert main([*args, "--metrics", "mint,nope"]) == 2
    assert "--metrics: Unknown scorer 'nope'. Available: alignscore" in capsys.readouterr().err


def test_demo_references_and_independent_checks():
    from evenhand.demo import demo_examples, independent_checks, rouge_l_f1

    examples = demo_examples()
    assert all(len(ex.references) == 2 for ex in examples)
    ex = examples[0]
    assert rouge_l_f1(ex.references[0], ex.references) == 1.0
    assert rouge_l_f1("anything", []) != rouge_l_f1("anything", [])  # NaN without references
    checks = independent_checks(ex, "Reviewers like the sound but the microphone is poor.")
    assert set(checks) == {"rouge_l_f1", "fairsumm_uer", "mint", "words"}
    assert checks["words"] == 9.0 and 0 < checks["rouge_l_f1"] < 1


def test_demo_table_and_csv(tmp_path):
    import csv

    from evenhand.demo_display import format_scores, format_table, table_rows
    from evenhand.evaluation.io.csv_file import write_csv

    def side(sel, rouge, uer):
        return {"selection": {"alignscore": sel, "composite": sel},
                "checks": {"rouge_l_f1": rouge, "fairsumm_uer": uer, "mint": 0.5, "words": 30.0}}

    rows = [{"id": "a", "scores": {"plain": side(0.2, 0.3, 0.4), "evenhand": side(0.9, 0.35, 0.1)}},
            {"id": "b", "scores": {"plain": side(0.5, 0.4, 0.2), "evenhand": side(0.6, 0.3, 0.2)}}]
    table = table_rows(rows)
    assert list(table[0]) == ["id", "composite_plain", "composite_evenhand", "rouge_l_f1_plain",
                              "rouge_l_f1_evenhand", "fairsumm_uer_plain", "fairsumm_uer_evenhand"]
    text = format_table(table)
    assert "evenhand better on 1, worse on 1 of 2 sets" in text  # ROUGE-L
    assert "evenhand better on 1, worse on 0 of 2 sets" in text  # UER, lower is better
    path = write_csv(tmp_path / "t.csv", table)
    assert [r["id"] for r in csv.DictReader(path.open())] == ["a", "b"]

    class Composite:
        class config:
            names, weight_list = ["alignscore"], [2.0]

    block = format_scores(Composite, rows[0]["scores"])
    selection, checks = block.split("independent checks (not used to select)")
    assert "alignscore×2" in selection and "evenhand better" not in selection and "plain better" not in selection
    assert "  alignscore" + " " * 28 + "0.200    0.900       +0.700\n" in selection  # kept minus plain
    assert "scales: alignscore 0-1, higher is better" in selection  # its range, from the legend, once
    assert "  ROUGE-L F1 vs references              0.300    0.350   (evenhand better)" in checks
    assert "  FairSumm UER (N-gram)                 0.400    0.100   (evenhand better)" in checks  # lower is better
    assert "fairsumm_uer >= 0, lower is better" in checks
    # a kept quote was built to lower UER: the number is marked as no evidence
    quoted = format_scores(Composite, rows[0]["scores"], "beam+quote").split("not used to select")[1]
    assert "(evenhand better; the kept quote was chosen to lower it: no evidence)" in quoted
    assert "0.350   (evenhand better)\n" in quoted  # ROUGE-L is not marked
    assert "(2 sets: the kept quote was chosen to lower it: no evidence)" in format_table(table, ["beam+quote"] * 2)
    assert "no evidence" not in format_table(table, ["beam", "fair-beam β=1"])


def test_library_warnings_hidden_unless_verbose(capsys, monkeypatch):
    """evenhand's own warnings print as one line; a library's deprecation notice only with -v."""
    import warnings

    from evenhand import cli

    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)
    ours = str(Path(cli.__file__).resolve().parent.parent / "decoding" / "generate.py")
    library = "/usr/lib/python3/site-packages/transformers/generation/utils.py"
    for verbose in (False, True):
        cli._one_line_warnings("demo", verbose)
        warnings.showwarning("`--top-k` has no effect", UserWarning, ours, 1)
        warnings.showwarning("past_key_values is deprecated", FutureWarning, library, 2)
    assert capsys.readouterr().err.splitlines() == [
        "evenhand demo: warning: `--top-k` has no effect",
        "evenhand demo: warning: `--top-k` has no effect",
        "evenhand demo: warning: past_key_values is deprecated",
    ]


def test_verbose_flag_on_every_command(capsys):
    parser = build_parser()
    for name in _names():
        with pytest.raises(SystemExit):
            parser.parse_args([name, "--help"])
        assert "-v, --verbose" in capsys.readouterr().out, name


def test_generate_shows_no_library_noise_unless_verbose(tmp_path, model_dir):
    """A model load prints no weight-loading bar and no library warning; `-v` shows the bar."""
    import os

    demo = Path(__file__).resolve().parent.parent / "evenhand" / "data" / "demo.jsonl"
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRANSFORMERS_VERBOSITY", "HF_HUB_DISABLE_PROGRESS_BARS", "EVENHAND_VERBOSE")}
    err = {}
    for flag in ("", "-v"):
        argv = [sys.executable, "-m", "evenhand", "generate", "--data", str(demo), "--limit", "1",
                "--model", str(model_dir), "--max-new-tokens", "3", "--num-beams", "1",
                "--out", str(tmp_path / f"o{flag}.jsonl"), *([flag] if flag else [])]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        err[flag] = done.stderr
    assert "Loading weights" in err["-v"]  # the library's bar is real, and shown when asked
    for noise in ("Loading weights", "deprecated", "it/s]", "[transformers]"):
        assert noise not in err[""], err[""]


def test_demo_output_chains_into_evaluate(tmp_path, model_dir):
    """`evaluate --data demo --summaries d.jsonl` reads the demo's own output (its `summary`: evenhand's)."""
    import json

    from evenhand.demo import demo_examples
    from evenhand.evaluation.scoring.registry import get_scorer

    ex = demo_examples()[0]
    out = tmp_path / "d.jsonl"
    assert main(["demo", "--model", str(model_dir), "--example", ex.id, "--max-new-tokens", "6",
                 "--candidates", "2", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert row["id"] == ex.id and row["summary"] == row["evenhand"]
    scores = tmp_path / "e.jsonl"
    assert main(["evaluate", "--data", "demo", "--summaries", str(out), "--metrics", "rouge-l-recall",
                 "--out", str(scores)]) == 0
    (scored,) = [json.loads(line) for line in scores.read_text(encoding="utf-8").splitlines()]
    assert scored["id"] == ex.id
    assert scored["rouge-l-recall"] == get_scorer("rouge-l-recall").score([ex], [row["summary"]])[0]
