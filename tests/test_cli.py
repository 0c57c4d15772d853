import json
import subprocess
import sys

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
    assert "Unknown metric 'nope'. Available: mint" in capsys.readouterr().err
