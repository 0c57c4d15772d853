"""Every option of every command against the one table of modes (``evenhand.option_modes``).

The walk: each option of each command's parser is set on a minimal command line;
an option outside the table matters in the default mode (no refusal, no
warning); an option in the table matters once its mode is on (the row's
``matters`` words) and is refused, or warned in one line, without it. Then the
cases of issue 50 through ``evenhand.cli.main``: exit 2, one line naming the
option and what makes it meaningful, nothing written.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import pytest

from evenhand.cli import build_parser, main
from evenhand.evaluation.errors import DataError, IgnoredOptionWarning
from evenhand.option_modes import check_values, given, modes

#: an option's value in the walk where the row's ``used`` asks for a particular one
WALK_VALUES = {("rerank", "candidates"): "1"}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _minimal(parser: argparse.ArgumentParser) -> list[str]:
    """The required options, each with a placeholder value."""
    argv: list[str] = []
    for action in parser._actions:
        if not action.option_strings:  # a positional
            argv += ["x"] * (action.nargs if isinstance(action.nargs, int) else 1)
        elif action.required:
            argv += [action.option_strings[0], "x.yaml" if action.dest == "config" else "x"]
    return argv


def _setting(command: str, action: argparse.Action) -> list[str]:
    """Words setting ``action`` to something other than its default."""
    flag = action.option_strings[0]
    if action.nargs == 0:
        return [flag]
    if (command, action.dest) in WALK_VALUES:
        return [flag, WALK_VALUES[(command, action.dest)]]
    if action.choices:
        return [flag, next(str(c) for c in action.choices if c != action.default)]
    samples = {int: ["2", "3"], float: ["0.5", "0.25"]}.get(action.type, ["x", "y"])  # type: ignore[call-overload]
    return [flag, next(s for s in samples if s != str(action.default))]


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest not in ("help", "allow_download", "verbose")]


def _check(command: str, parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """Parse ``argv``, check it against the table; the warnings' texts (DataError propagates)."""
    args = parser.parse_args(argv)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        check_values(command, given(args, parser), vars(args))
    return [str(w.message) for w in seen if issubclass(w.category, IgnoredOptionWarning)]


def test_every_row_names_an_option_its_command_has():
    parsers = _subparsers()
    for row in modes():
        dests = {a.dest for a in _options(parsers[row.command.replace("_", "-")])}
        assert row.dest in dests, f"{row.command} {row.flag}: no such option (stale row)"


def test_every_option_matters_in_some_mode_and_is_refused_or_warned_outside_it():
    walked = refused = 0
    for command, parser in _subparsers().items():
        name = command.replace("-", "_")
        rows = {row.dest: row for row in modes(name) if not row.by_config}
        base = _minimal(parser)
        for action in _options(parser):
            setting = _setting(name, action)
            row = rows.get(action.dest)
            # where it matters: the row's mode on (or the default mode for options outside the table)
            assert _check(name, parser, [*base, *(row.matters if row else ()), *setting]) == [], \
                f"{command} {' '.join(setting)} refused or warned where it matters"
            walked += 1
            if row is None:
                continue
            # outside its mode: refused with one line naming the option and what it needs, or warned
            if row.warn:
                texts = _check(name, parser, [*base, *row.outside, *setting])
                assert len(texts) == 1 and row.flag in texts[0] and row.needs in texts[0]
            else:
                with pytest.raises(DataError) as err:
                    _check(name, parser, [*base, *row.outside, *setting])
                assert row.flag in str(err.value) and row.needs in str(err.value) and "\n" not in str(err.value)
            refused += 1
    assert walked > 200 and refused == len([r for r in modes() if not r.by_config])


def test_train_method_rows_are_checked_by_the_config():
    """``by_config`` rows: the training config warns (IgnoredOptionWarning) outside the method, not inside."""
    import dataclasses

    from evenhand.training.config import DPORRConfig

    defaults = {f.name: f.default for f in dataclasses.fields(DPORRConfig)}
    changed = {"pair_strategy": "top-gap", "top_gap_k": 3, "min_gap": 0.2, "beta": 0.5, "max_length": 256,
               "fairness_temperature": 2.0, "grpo_beta": 0.5}
    rows = modes("train")
    assert {row.dest for row in rows} == set(changed) and all(row.by_config and row.warn for row in rows)
    for row in rows:
        assert changed[row.dest] != defaults[row.dest]
        method = row.matters[1]
        other = "grpo" if method == "dpo-rr" else "dpo-rr"
        fields = {"data": "d.jsonl", "out_dir": "o", row.dest: changed[row.dest]}
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            DPORRConfig(method=method, **fields)
        assert not [w for w in seen if issubclass(w.category, IgnoredOptionWarning)]
        with pytest.warns(IgnoredOptionWarning, match=f"`{row.dest}` only applies to method='{method}'"):
            DPORRConfig(method=other, **fields)


# -- the cases of issue 50 through the CLI ---------------------------------------------------------------------


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps({"id": "a", "attribute": "sentiment", "documents": [
        {"text": "Good food.", "group": "pos"}, {"text": "Slow service.", "group": "neg"}]}) + "\n")
    return path


CASES = [
    (["generate", "--temperature", "0.3"], "--temperature has no effect without --do-sample"),
    (["generate", "--top-p", "0.9"], "--top-p has no effect without --do-sample"),
    (["generate", "--model", "http://127.0.0.1:9/v1", "--device", "cpu"],
     "--device has no effect without a local --model"),
    (["generate", "--server-timeout", "5"], "--server-timeout has no effect without a server URL as --model"),
    (["generate", "--server-processors"], "--server-processors has no effect without a server URL as --model"),
    (["rerank", "--candidates", "1", "--floors", "none", "--scorers", "rouge-l-recall"],
     "--candidates has no effect without floors or --quote"),
]


@pytest.mark.parametrize("argv, needle", CASES, ids=[" ".join(a[:3]) for a, _ in CASES])
def test_an_option_without_effect_exits_2_in_one_line_and_writes_nothing(tmp_path, data, capsys, argv, needle):
    out = tmp_path / "out.jsonl"
    code = main([*argv, "--data", str(data), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and needle in err and err.startswith(f"evenhand {argv[0]}: error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.jsonl"]


def test_sweep_list_refuses_run_options(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text("datasets:\n  d: d.jsonl\n")
    assert main(["sweep", "--config", str(tmp_path / "s.yaml"), "--list", "--merge"]) == 2
    assert "--merge has no effect without a run (not --list)" in capsys.readouterr().err


@pytest.mark.parametrize("argv, needle", [
    (["--method", "grpo", "--beta", "0.5"], "`beta` only applies to method='dpo-rr' and is ignored with method='grpo'"),
    (["--grpo-beta", "0.5"], "`grpo_beta` only applies to method='grpo' and is ignored with method='dpo-rr'"),
])
def test_train_other_method_option_warns_in_one_line_without_verbose(tmp_path, data, capsys, monkeypatch,
                                                                   argv, needle):
    monkeypatch.delenv("EVENHAND_VERBOSE", raising=False)
    # the model check fails after the config is built: the warning must already be on stderr
    code = main(["train", "--data", str(data), "--out", str(tmp_path / "run"), "--model", str(tmp_path / "none"),
                 "--scorers", "rouge-l-recall", *argv])
    err = capsys.readouterr().err
    assert code == 2
    warned = [line for line in err.splitlines() if "warning" in line]
    assert warned == [f"evenhand train: warning: {needle}"]
