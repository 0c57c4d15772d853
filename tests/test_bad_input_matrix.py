"""Every command, bad input: exit 2, one line naming the problem, no traceback, no file changed.

The matrix drives ``evenhand.cli.main`` in-process. Each case runs in a folder
holding valid inputs and a prior output; every file there is hashed before and
after, so a case that empties, truncates or overwrites anything fails.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evenhand.cli import main

EXAMPLES = [
    {"id": "a", "attribute": "sentiment", "documents": [
        {"text": "The food was great and cheap.", "group": "pos"},
        {"text": "The service was slow and rude.", "group": "neg"}]},
    {"id": "b", "attribute": "sentiment", "documents": [
        {"text": "Lovely rooms with a view.", "group": "pos"},
        {"text": "The breakfast was cold.", "group": "neg"}]},
]
PRIOR = '{"id": "a", "summary": "an earlier result"}\n'


@pytest.fixture
def work(tmp_path):
    """A folder with valid inputs of every command and prior outputs."""
    return make_inputs(tmp_path)


def make_inputs(tmp_path: Path) -> Path:
    """Write valid inputs of every command, bad ones, and a prior output into ``tmp_path``."""
    from conftest import write_controlled

    (tmp_path / "data.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EXAMPLES))
    (tmp_path / "summaries.jsonl").write_text(
        '{"id": "a", "summary": "Great food."}\n{"id": "b", "summary": "Nice rooms."}\n'
    )
    write_controlled(tmp_path / "controlled.json")
    (tmp_path / "prior.jsonl").write_text(PRIOR)
    (tmp_path / "latin1.jsonl").write_bytes(
        b'{"id": "a", "documents": ["caf\xe9 cr\xe8me"]}\n'
    )
    (tmp_path / "latin1.yaml").write_bytes(b"datasets:\n  d: caf\xe9.jsonl\n")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "notsqlite.sqlite").write_text("this is no database\n")
    (tmp_path / "huge.jsonl").write_text(
        json.dumps({"id": "h", "documents": ["word " * 220_000]}) + "\n"
    )
    (tmp_path / "sweep.yaml").write_text("datasets:\n  d: data.jsonl\nbase:\n  max_new_tokens: 4\n")
    (tmp_path / "sweep_model.yaml").write_text(
        "datasets:\n  d: data.jsonl\nbase:\n  model: no-such-org/no-such-model\n"
    )
    (tmp_path / "sweep_data.yaml").write_text("datasets:\n  d: latin1.jsonl\n")
    (tmp_path / "train_bad.yaml").write_text(
        "data: data.jsonl\nout_dir: run\nlora_dropout: high\n"
    )
    (tmp_path / "train_unknown.yaml").write_text("data: data.jsonl\nout_dir: run\nlora_dropuot: 0.1\n")
    return tmp_path


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


# (command line with {w} = work folder and {m} = model folder, text the message must contain)
GEN = ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}"]
RERANK = ["rerank", "--data", "{w}/data.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}",
          "--scorers", "rouge-l-recall", "--floors", "none", "--candidates", "2"]
EVAL = ["evaluate", "--data", "{w}/data.jsonl", "--summaries", "{w}/summaries.jsonl",
        "--out", "{w}/prior.jsonl"]
META = ["meta-eval", "--data", "{w}/controlled.json", "--scorers", "rouge-l-recall",
        "--out", "{w}/prior.jsonl", "--score-cache", "none"]
CALIB = ["calibrate", "--data", "{w}/controlled.json", "--target", "coverage",
         "--scorers", "rouge-l-recall", "--out", "{w}/calib.json", "--folds", "2"]

CASES = [
    # generate: options, data, model, outputs
    (GEN + ["--max-new-tokens", "0"], "max_new_tokens"),
    (GEN + ["--abstractiveness", "0"], "abstractiveness"),
    (GEN + ["--limit", "-1"], "--limit"),
    (GEN + ["--num-beams", "0"], "num_beams"),
    (GEN + ["--batch-size", "0"], "batch_size"),
    (GEN + ["--temperature", "0", "--do-sample"], "temperature"),
    (GEN + ["--fairness", "{{bad json"], "fairness"),
    (GEN + ["--max-new-tokens", "abc"], "--max-new-tokens"),
    (GEN + ["--no-resume", "--max-new-tokens", "0"], "max_new_tokens"),
    (["generate", "--data", "{w}/latin1.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}"],
     "latin1.jsonl"),
    (["generate", "--data", "{w}/empty.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}"],
     "empty.jsonl"),
    (["generate", "--data", "{w}/missing.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}"],
     "missing.jsonl"),
    (["generate", "--data", "{w}/data.jsonl", "--out", "{w}/prior.jsonl", "--model", "{w}/nomodel"],
     "not found locally"),
    (["generate", "--data", "{w}/data.jsonl", "--out", "{w}/prior.jsonl",
      "--model", "no-such-org/no-such-model"], "not found locally"),
    (["generate", "--data", "{w}/data.jsonl", "--out", "{w}/data.jsonl", "--model", "{m}"],
     "--out"),
    # rerank
    (RERANK + ["--weights", "abc"], "weights"),
    (RERANK + ["--normalize", "bogus"], "normalize"),
    (RERANK + ["--candidates", "0"], "candidates"),
    (RERANK + ["--recipes", "bogus"], "recipe"),
    (RERANK + ["--scorers", "nope"], "nope"),
    (RERANK + ["--floors", "rouge-l-recall=x"], "--floors"),
    (RERANK + ["--limit", "0"], "--limit"),
    (RERANK + ["--no-resume", "--weights", "abc"], "weights"),
    (["rerank", "--data", "{w}/empty.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}",
      "--scorers", "rouge-l-recall"], "empty.jsonl"),
    (["rerank", "--data", "{w}/data.jsonl", "--out", "{w}/prior.jsonl", "--model", "{w}/nomodel",
      "--scorers", "rouge-l-recall"], "not found locally"),
    (["rerank", "--data", "{w}/data.jsonl", "--out", "{w}/data.jsonl", "--model", "{m}",
      "--scorers", "rouge-l-recall"], "--out"),
    # evaluate
    (["evaluate", "--data", "{w}/huge.jsonl", "--summaries", "references", "--out", "{w}/prior.jsonl"],
     "huge.jsonl"),
    (["evaluate", "--data", "{w}/data.jsonl", "--summaries", "{w}/summaries.jsonl",
      "--out", "{w}/summaries.jsonl"], "--out"),
    (["evaluate", "--data", "{w}/data.jsonl", "--summaries", "{w}/summaries.jsonl",
      "--out", "{w}/data.jsonl"], "--out"),
    (["evaluate", "--data", "{w}/latin1.jsonl", "--summaries", "references", "--out", "{w}/prior.jsonl"],
     "latin1.jsonl"),
    (["evaluate", "--data", "{w}/data.jsonl", "--summaries", "{w}/latin1.jsonl",
      "--out", "{w}/prior.jsonl"], "latin1.jsonl"),
    (EVAL + ["--metrics", "nope"], "nope"),
    (EVAL + ["--metrics", ""], "--metrics"),
    (EVAL + ["--scorer-batch-size", "0", "--metrics", "rouge-l-recall"], "--scorer-batch-size"),
    # meta-eval
    (META + ["--n-bootstrap", "0"], "--n-bootstrap"),
    (META + ["--limit", "-1"], "--limit"),
    (META + ["--scorers", "nope"], "nope"),
    (META + ["--no-resume", "--n-bootstrap", "0"], "--n-bootstrap"),
    (["meta-eval", "--data", "{w}/latin1.jsonl", "--scorers", "rouge-l-recall",
      "--out", "{w}/prior.jsonl"], "latin1.jsonl"),
    (["meta-eval", "--data", "{w}/controlled.json", "--scorers", "rouge-l-recall",
      "--out", "{w}/controlled.json"], "--out"),
    # calibrate
    (CALIB + ["--normalize", "bogus"], "--normalize"),
    (CALIB + ["--n-bootstrap", "0"], "--n-bootstrap"),
    (CALIB + ["--folds", "1"], "--folds"),
    (CALIB + ["--alpha", "-1"], "--alpha"),
    (CALIB + ["--target", "bogus"], "--target"),
    # train (validated before any model loads)
    (["train", "--config", "{w}/train_bad.yaml"], "lora_dropout"),
    (["train", "--config", "{w}/train_unknown.yaml"], "lora_dropuot"),
    (["train", "--config", "{w}/latin1.yaml"], "latin1.yaml"),
    (["train", "--config", "{w}/missing.yaml"], "missing.yaml"),
    (["train", "--data", "{w}/data.jsonl"], "--out"),
    # sweep
    (["sweep", "--config", "{w}/latin1.yaml"], "latin1.yaml"),
    (["sweep", "--config", "{w}/missing.yaml"], "missing.yaml"),
    (["sweep", "--config", "{w}/sweep_model.yaml"], "not found locally"),
    (["sweep", "--config", "{w}/sweep_data.yaml"], "latin1.jsonl"),
    (["sweep", "--config", "{w}/sweep.yaml", "--results", "{w}/notsqlite.sqlite"], "notsqlite.sqlite"),
    # report
    (["report", "--results", "{w}/notsqlite.sqlite", "--out", "{w}/rep"], "notsqlite.sqlite"),
    (["report", "--results", "{w}/missing.sqlite", "--out", "{w}/rep"], "missing.sqlite"),
    (["report", "--results", "{w}/notsqlite.sqlite", "--out", "{w}/rep", "--rank-by", "bogus"], ""),
    (["report", "--results", "{w}/notsqlite.sqlite", "--out", "{w}/rep", "--bootstrap", "0"],
     "--bootstrap"),
    # demo
    (["demo", "--example", "zzz"], "zzz"),
    (["demo", "--max-new-tokens", "0"], "--max-new-tokens"),
    (["demo", "--candidates", "0"], "--candidates"),
    (["demo", "--model", "no-such-org/no-such-model"], "not found locally"),
]


def _ids() -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for argv, _ in CASES:
        label = argv[0] + ":" + " ".join(a for a in argv[1:] if a.startswith("--") and a not in (
            "--data", "--out", "--model", "--summaries", "--scorers", "--floors", "--candidates",
            "--target", "--folds", "--score-cache", "--results", "--config"))
        label = label or argv[0]
        seen[label] = seen.get(label, 0) + 1
        out.append(f"{label}#{seen[label]}")
    return out


@pytest.mark.parametrize("argv, needle", CASES, ids=_ids())
def test_bad_input_exits_2_with_one_line_and_changes_nothing(work, model_dir, capsys, argv, needle):
    argv = [a.format(w=work, m=model_dir) for a in argv]
    before = _snapshot(work)
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse rejects the flag itself
        code = exit_.code
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, (code, err)
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"evenhand {argv[0]}: error: "), err
    assert "Traceback" not in captured.err + captured.out
    assert needle in err, err
    assert _snapshot(work) == before


@pytest.fixture
def sweep_results(tmp_path):
    """A small results store whose cell names are invalid mathtext (`$x^$`)."""
    from evenhand.sweep.config import Cell
    from evenhand.sweep.store import ResultRow, ResultStore

    path = tmp_path / "results.sqlite"
    store = ResultStore(path)
    cells = [Cell({"abstractiveness": h}, name) for h, name in ((1.0, "$x^$"), (2.0, r"$\bogus$"))]
    store.add_cells(cells)
    store.write([
        ResultRow(cell.id, "news", 0, f"ex{i}", i, f"summary {i}", {"mint": 0.1 * i + k},
                  factuality=0.5 + 0.1 * k, factuality_scorer="rouge-l-recall", seconds=0.1)
        for k, cell in enumerate(cells) for i in range(3)
    ])
    store.close()
    return path


def test_report_rank_by_unknown_metric_exits_2_listing_metrics(sweep_results, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", "--results", str(sweep_results), "--out", str(out), "--rank-by", "bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--rank-by 'bogus' is no metric" in err and "mint" in err
    assert not out.exists()


def test_report_draws_cell_names_with_dollar_signs(sweep_results, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", "--results", str(sweep_results), "--out", str(out), "--bootstrap", "5"]) == 0
    assert "$x^$" in (out / "index.html").read_text(encoding="utf-8")
