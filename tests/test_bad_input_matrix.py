"""Every command, bad input: exit 2, one line naming the problem, no traceback, no file changed.

The matrix drives ``evenhand.cli.main`` in-process. Each case runs in a folder
holding valid inputs and a prior output; every file there is hashed before and
after, so a case that empties, truncates or overwrites anything fails.
"""

from __future__ import annotations

import hashlib
import json
import os
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
    (["demo", "--candidates", "-1"], "--candidates"),
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


# ------------------------------------------------------------------ round 2 (issue 26): what the tool reads
#
# Bad inputs class by class. Each file below is written into the work folder by
# ``make_inputs``; ``{w}`` in a file's text is the work folder. Every case must
# exit 2 with one line naming the problem, before any model loads (except the
# AFTER_LOAD cases), change no file, and end within HANG_SECONDS.

HANG_SECONDS = 120


def _rec(**over: object) -> dict:
    """A valid generic JSONL record with fields replaced (``None`` values are kept as JSON null)."""
    record = {"id": "a", "attribute": "sentiment", "documents": [
        {"text": "The food was great.", "group": "pos"}, {"text": "The service was slow.", "group": "neg"}],
        "references": ["Good food, slow service."]}
    record.update(over)
    return record


def _line(record: object) -> str:
    return json.dumps(record) + "\n"


def _doc(**over: object) -> dict:
    return _rec(documents=[{"text": "The food was great.", "group": "pos", **over},
                           {"text": "The service was slow.", "group": "neg"}])


VALID = _line(_rec())
DEEP = "[" * 80 + "1" + "]" * 80
BAD_FILES: dict[str, str | bytes] = {
    # generic JSONL, one wrong JSON type per field
    "j_id_list.jsonl": _line(_rec(id=[1])),
    "j_id_float.jsonl": _line(_rec(id=1.5)),
    "j_id_bool.jsonl": _line(_rec(id=True)),
    "j_id_null.jsonl": _line(_rec(id=None)),
    "j_id_obj.jsonl": _line(_rec(id={"a": 1})),
    "j_docs_str.jsonl": _line(_rec(documents="The food was great.")),
    "j_docs_obj.jsonl": _line(_rec(documents={"text": "x"})),
    "j_docs_null.jsonl": _line(_rec(documents=None)),
    "j_doc_int.jsonl": _line(_rec(documents=[5])),
    "j_doc_list.jsonl": _line(_rec(documents=[["x"]])),
    "j_doc_null.jsonl": _line(_rec(documents=[None])),
    "j_text_int.jsonl": _line(_doc(text=5)),
    "j_text_null.jsonl": _line(_doc(text=None)),
    "j_text_list.jsonl": _line(_doc(text=["x"])),
    "j_text_obj.jsonl": _line(_doc(text={"x": 1})),
    "j_group_list.jsonl": _line(_doc(group=["pos"])),
    "j_group_obj.jsonl": _line(_doc(group={"pos": 1})),
    "j_group_bool.jsonl": _line(_doc(group=True)),
    "j_attr_int.jsonl": _line(_rec(attribute=5)),
    "j_attr_list.jsonl": _line(_rec(attribute=["sentiment"])),
    "j_gv_str.jsonl": _line(_rec(group_values="pos")),
    "j_gv_nested.jsonl": _line(_rec(group_values=[["pos"], "neg"])),
    "j_gv_obj.jsonl": _line(_rec(group_values={"pos": 1})),
    "j_gv_null_item.jsonl": _line(_rec(group_values=[None, "pos", "neg"])),
    "j_instr_int.jsonl": _line(_rec(instruction=5)),
    "j_instr_list.jsonl": _line(_rec(instruction=["Summarize."])),
    "j_prompt_list.jsonl": _line(_rec(prompt=["x"])),
    "j_prompt_obj.jsonl": _line(_rec(prompt={"x": 1})),
    "j_refs_int.jsonl": _line(_rec(references=5)),
    "j_refs_obj.jsonl": _line(_rec(references={"a": "b"})),
    "j_refs_nested.jsonl": _line(_rec(references=[["Good food."]])),
    "j_refs_nums.jsonl": _line(_rec(references=[1, 2])),
    "j_target_list.jsonl": _line(_rec(target=["pos"])),
    "j_target_obj.jsonl": _line(_rec(target={"pos": 1})),
    "j_meta_list.jsonl": _line(_rec(meta=[1])),
    "j_meta_str.jsonl": _line(_rec(meta="x")),
    "j_meta_num.jsonl": _line(_rec(meta=5)),
    "j_rec_list.jsonl": "[1, 2]\n",
    "j_rec_str.jsonl": '"an example"\n',
    "j_rec_num.jsonl": "5\n",
    "j_rec_null.jsonl": VALID + "null\n",
    "j_sur_text.jsonl": VALID.replace("great", "gr\\ud800eat"),
    "j_sur_id.jsonl": _line(_rec()).replace('"id": "a"', '"id": "\\udc00"'),
    "j_sur_key.jsonl": _line(_rec(meta={"k": 1})).replace('"k"', '"\\ud83d"'),
    "j_sur_ref.jsonl": _line(_rec()).replace("slow service", "slow \\ud800 service"),
    "j_deep.jsonl": _line(_rec()).replace('"references"', f'"meta": {{"x": {DEEP}}}, "references"'),
    "j_deep_recursion.jsonl": '{"id": "a", "meta": ' + "[" * 200_000 + "]" * 200_000 + "}\n",
    "j_nan.jsonl": _line(_rec(meta={"x": 1})).replace('"x": 1', '"x": NaN'),
    "j_inf.jsonl": _line(_rec(meta={"x": 1})).replace('"x": 1', '"x": Infinity'),
    "j_neginf.jsonl": _line(_rec(meta={"x": 1})).replace('"x": 1', '"x": -Infinity'),
    "j_dup.jsonl": VALID + VALID,
    "j_ws_text.jsonl": _line(_doc(text="   ")),
    "j_unknown.jsonl": _line(_rec(docs=[])),
    "j_no_docs.jsonl": _line({"id": "a"}),
    "j_docs_empty.jsonl": _line(_rec(documents=[])),
    "j_group_unknown.jsonl": _line(_rec(group_values=["pos"])),
    "j_empty_id.jsonl": _line(_rec(id="")),
    "j_bad_json.jsonl": VALID + "{\n",
    "j_trailing.jsonl": VALID.rstrip("\n") + " x\n",
    "j_one_group.jsonl": _line(_rec(documents=[{"text": "Great food.", "group": "pos"},
                                              {"text": "Nice rooms.", "group": "pos"}])),
    "j_no_groups.jsonl": _line(_rec(documents=["Great food.", "Slow service."])),
    # evaluate --summaries
    "s_sum_int.jsonl": '{"id": "a", "summary": 5}\n{"id": "b", "summary": "x"}\n',
    "s_id_list.jsonl": '{"id": ["a"], "summary": "x"}\n',
    "s_rec_list.jsonl": '["a", "x"]\n',
    "s_sur.jsonl": '{"id": "a", "summary": "\\ud800"}\n{"id": "b", "summary": "x"}\n',
    "s_nan.jsonl": '{"id": "a", "summary": "x", "score": NaN}\n',
    "s_dup.jsonl": '{"id": "a", "summary": "x"}\n{"id": "a", "summary": "y"}\n',
    "s_deep.jsonl": '{"id": "a", "summary": "x", "m": ' + DEEP + "}\n",
    # CSV
    "csv_missing_text.csv": "example_id,body\na,hello\n",
    "csv_bom_missing.csv": "\ufeffexample_id,body\na,hello\n",
    "csv_empty_text.csv": "example_id,text\na,\n",
    "csv_empty_id.csv": "example_id,text\n,hello\n",
    "csv_extra.csv": "example_id,text,group\na,hello,pos,extra\n",
    "csv_huge_field.csv": "example_id,text\na," + "x" * 200_000 + "\n",
    "csv_header_only.csv": "example_id,text,group\n",
    "csv_latin1.csv": b"example_id,text\na,caf\xe9\n",
    # other outputs' manifests: {out}.manifest.json (resume refuses to guess)
    "m_invalid.jsonl": '{"id": "zzz", "summary": "x"}\n',
    "m_invalid.jsonl.manifest.json": "{",
    "m_list.jsonl": '{"id": "zzz", "summary": "x"}\n',
    "m_list.jsonl.manifest.json": "[1, 2]",
    "m_sur.jsonl": '{"id": "zzz", "summary": "x"}\n',
    "m_sur.jsonl.manifest.json": '{"command": "\\ud800"}',
    "m_nan.jsonl": '{"id": "zzz", "summary": "x"}\n',
    "m_nan.jsonl.manifest.json": '{"options": {"x": NaN}}',
    "m_deep.jsonl": '{"id": "zzz", "summary": "x"}\n',
    "m_deep.jsonl.manifest.json": '{"x": ' + DEEP + "}",
    # score-cache lines (meta-eval --score-cache FOLDER)
    "cache_list/rouge-l-recall.jsonl": "[1]\n",
    "cache_key/rouge-l-recall.jsonl": '{"key": 5, "result": {"score": 1.0}}\n',
    "cache_result/rouge-l-recall.jsonl": '{"key": "k", "result": [1]}\n',
    "cache_score/rouge-l-recall.jsonl": '{"key": "k", "result": {"score": "high"}}\n',
    "cache_mid/rouge-l-recall.jsonl": '{"key": "k"\n{"key": "j", "result": {"score": 1.0}}\n',
    "cache_sur/rouge-l-recall.jsonl": '{"key": "\\ud800", "result": {"score": 1.0}}\n',
    "cache_latin1/rouge-l-recall.jsonl": b'{"key": "caf\xe9", "result": {"score": 1.0}}\n',
    # models that exist but hold none
    "emptymodel/README": "no model here\n",
    "cfgonly/config.json": '{"model_type": "llama"}',
    "corrupt/config.json": '{"model_type": "llama"}',
    "corrupt/model.safetensors": "this is no safetensors file",
    "badcfg/config.json": "{",
    "badcfg/model.safetensors": "x",
    "listcfg/config.json": "[1]",
    "adapter_noweights/adapter_config.json": '{"base_model_name_or_path": "smollm2"}',
    "weightsdir/config.json": '{"model_type": "llama"}',
    "weightsdir/model.safetensors/README": "a folder, not weights\n",
    "fifomodel/config.json": '{"model_type": "llama"}',
    "bad.ckpt": "this is no checkpoint\n",
    "pickle.ckpt": b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94.",
}


def _fairsumm(*samples: object) -> str:
    return json.dumps(list(samples))


def _fs(**over: object) -> dict:
    sample = {"units": [{"text": "Great.", "value": {"rating": "5"}}, {"text": "Bad.", "value": {"rating": "1"}}],
              "value_mapping": {"rating": ["1", "5"]}, "gold_summary": ["Mixed."]}
    sample.update(over)
    return sample


def _unit(**over: object) -> dict:
    return _fs(units=[{"text": "Great.", "value": {"rating": "5"}, **over}, {"text": "Bad.", "value": {"rating": "1"}}])


BAD_FILES.update({
    "fs_sample_str.json": _fairsumm(_fs(), "junk"),
    "fs_units_str.json": _fairsumm(_fs(units="Great.")),
    "fs_units_obj.json": _fairsumm(_fs(units={"text": "Great."})),
    "fs_unit_str.json": _fairsumm(_fs(units=["Great."])),
    "fs_unit_text_int.json": _fairsumm(_unit(text=5)),
    "fs_unit_text_null.json": _fairsumm(_unit(text=None)),
    "fs_unit_value_str.json": _fairsumm(_unit(value="5")),
    "fs_unit_value_list.json": _fairsumm(_unit(value=["5"])),
    "fs_unit_group_list.json": _fairsumm(_unit(value={"rating": [5]})),
    "fs_unit_group_obj.json": _fairsumm(_unit(value={"rating": {"x": 5}})),
    "fs_vm_list.json": _fairsumm(_fs(value_mapping=["rating"])),
    "fs_vm_str.json": _fairsumm(_fs(value_mapping="rating")),
    "fs_vm_values_str.json": _fairsumm(_fs(value_mapping={"rating": "15"})),
    "fs_vm_values_nested.json": _fairsumm(_fs(value_mapping={"rating": [["1"], "5"]})),
    "fs_vm_two.json": _fairsumm(_fs(value_mapping={"rating": ["1", "5"], "stars": ["1"]})),
    "fs_gold_str.json": _fairsumm(_fs(gold_summary="Mixed.")),
    "fs_gold_ints.json": _fairsumm(_fs(gold_summary=[1, 2])),
    "fs_gold_obj.json": _fairsumm(_fs(gold_summary={"a": "Mixed."})),
    "fs_meta_list.json": _fairsumm(_fs(meta=[1])),
    "fs_missing_text.json": _fairsumm(_fs(units=[{"value": {"rating": "5"}}])),
    "fs_missing_units.json": _fairsumm(_fs(), {"value_mapping": {"rating": ["1"]}}),
    "fs_group_unknown.json": _fairsumm(_unit(value={"rating": 7})),
    "fs_top_dict.json": json.dumps(_fs()),
    "fs_nan.json": _fairsumm(_unit(value={"rating": 1})).replace('"rating": 1}', '"rating": NaN}', 1),
    "fs_sur.json": _fairsumm(_fs()).replace("Great.", "Gr\\udfffeat."),
    "fs_empty_text.json": _fairsumm(_unit(text="")),
})


def _tfs(**over: object) -> dict:
    record: dict[str, object] = {"topic": "Taxes", "stance": "left", "input": "Left:\nTaxes fund schools.\nRight:\nTaxes slow growth.\n",
              "document": "Taxes fund schools."}
    record.update(over)
    return record


BAD_FILES.update({
    "tfs_input_int.json": json.dumps([_tfs(input=5)]),
    "tfs_input_list.json": json.dumps([_tfs(input=["Left:"])]),
    "tfs_stance_int.json": json.dumps([_tfs(stance=1)]),
    "tfs_stance_center.json": json.dumps([_tfs(stance="center")]),
    "tfs_topic_list.json": json.dumps([_tfs(topic=["Taxes"])]),
    "tfs_document_int.json": json.dumps([_tfs(document=5)]),
    "tfs_document_null.json": json.dumps([_tfs(document=None)]),
    "tfs_rec_str.json": json.dumps([_tfs(), "x"]),
    "tfs_missing_document.json": json.dumps([{k: v for k, v in _tfs().items() if k != "document"}]),
    "tfs_top_dict.json": json.dumps(_tfs()),
    "tfs_sur.json": json.dumps([_tfs()]).replace("Taxes fund", "Taxes \\ud800 fund"),
    "tfs_inf.json": json.dumps([_tfs()]).replace('"Taxes"', "Infinity"),
})


def _controlled(edit: object) -> str:
    """The conftest controlled summaries, edited by ``edit(entries)`` (which may return new entries)."""
    import copy

    from conftest import CONTROLLED_ENTRIES

    entries = copy.deepcopy(CONTROLLED_ENTRIES)
    out = edit(entries)  # type: ignore[operator]
    return json.dumps(entries if out is None else out)


def _set_summary(key: str, value: object):
    def edit(entries: list) -> None:
        entries[0]["summaries"][0][key] = value
    return edit


BAD_FILES.update({
    "c_entry_str.json": _controlled(lambda e: [*e, "x"]),
    "c_summaries_str.json": _controlled(lambda e: e[0].update(summaries="x")),
    "c_summaries_obj.json": _controlled(lambda e: e[0].update(summaries={"summary": "x"})),
    "c_summary_str.json": _controlled(lambda e: e[0].update(summaries=["x"])),
    "c_summary_text_int.json": _controlled(_set_summary("summary", 5)),
    "c_cov_str.json": _controlled(_set_summary("coverage", "0.5")),
    "c_cov_word.json": _controlled(_set_summary("coverage", "high")),
    "c_cov_nan.json": _controlled(_set_summary("coverage", 0.25)).replace("0.25", "NaN"),
    "c_cov_inf.json": _controlled(_set_summary("coverage", 0.25)).replace("0.25", "1e999"),
    "c_cov_bool.json": _controlled(_set_summary("coverage", True)),
    "c_cov_neg.json": _controlled(_set_summary("coverage", -0.1)),
    "c_cov_big.json": _controlled(_set_summary("coverage", 1.5)),
    "c_faith_null.json": _controlled(_set_summary("faithfulness", None)),
    "c_faith_list.json": _controlled(_set_summary("faithfulness", [1])),
    "c_source_int.json": _controlled(lambda e: e[0].update(source=[5])),
    "c_source_empty.json": _controlled(lambda e: e[0].update(source=[])),
    "c_source_obj.json": _controlled(lambda e: e[0].update(source={"a": "b"})),
    "c_missing_cov.json": _controlled(lambda e: e[0]["summaries"][0].pop("coverage") and None),
    "c_top_dict.json": json.dumps({"source": ["x"], "summaries": []}),
    "c_empty.json": "[]",
    "c_no_summaries.json": _controlled(lambda e: [{**x, "summaries": []} for x in e]),
    "c_single.json": _controlled(lambda e: [{**e[0], "summaries": e[0]["summaries"][:1]}]),
    "c_constant.json": _controlled(
        lambda e: [{**x, "summaries": [{**s, "coverage": 0.5} for s in x["summaries"]]} for x in e]),
    "c_sur.json": _controlled(lambda e: None).replace("Aliens", "\\ud800liens"),
    "c_deep.json": _controlled(lambda e: None).replace('"source"', f'"x": {DEEP}, "source"', 1),
    # human-scored JSONL for calibrate
    "a_nan.jsonl": '{"source": "Taxes rose.", "summary": "Taxes.", "coverage": NaN}\n',
    "a_inf.jsonl": '{"source": "Taxes rose.", "summary": "Taxes.", "coverage": 1e999}\n',
    "a_str.jsonl": '{"source": "Taxes rose.", "summary": "Taxes.", "coverage": "0.5"}\n',
    "a_bool.jsonl": '{"source": "Taxes rose.", "summary": "Taxes.", "coverage": true}\n',
    "a_source_int.jsonl": '{"source": 5, "summary": "Taxes.", "coverage": 0.5}\n',
    "a_summary_int.jsonl": '{"source": "Taxes rose.", "summary": 5, "coverage": 0.5}\n',
    "a_missing.jsonl": '{"source": "Taxes rose.", "summary": "Taxes."}\n',
    "a_rec_list.jsonl": '["Taxes rose.", "Taxes.", 0.5]\n',
    "a_sur.jsonl": '{"source": "Taxes \\ud800 rose.", "summary": "Taxes.", "coverage": 0.5}\n',
    "a_single.jsonl": '{"source": "Taxes rose.", "summary": "Taxes.", "coverage": 0.5}\n',
    "a_constant.jsonl": '{"source": "Taxes rose.", "summary": "Taxes.", "coverage": 0.5}\n'
                        '{"source": "Taxes rose.", "summary": "Rose.", "coverage": 0.5}\n'
                        '{"source": "Wages fell.", "summary": "Wages.", "coverage": 0.5}\n',
})


def _cal(**over: object) -> str:
    calibration = {"format": "evenhand-calibration", "version": 1, "target": "coverage",
                   "scorers": ["rouge-l-recall"], "normalize": "zscore",
                   "transforms": {"rouge-l-recall": {"mean": 0.5, "std": 0.1}},
                   "weights": {"rouge-l-recall": 1.0}, "intercept": 0.0, "alpha": 1.0}
    calibration.update(over)
    return json.dumps(calibration)


_RANK = {"normalize": "rank"}
BAD_FILES.update({
    "cal_weights_str.json": _cal(weights={"rouge-l-recall": "high"}),
    "cal_weights_nan.json": _cal(weights={"rouge-l-recall": 0.25}).replace("0.25", "NaN"),
    "cal_weights_inf.json": _cal(weights={"rouge-l-recall": 0.25}).replace("0.25", "1e999"),
    "cal_weights_list.json": _cal(weights=[1.0]),
    "cal_transforms_list.json": _cal(transforms=[1]),
    "cal_transform_str.json": _cal(transforms={"rouge-l-recall": "zscore"}),
    "cal_std_zero.json": _cal(transforms={"rouge-l-recall": {"mean": 0.5, "std": 0}}),
    "cal_std_str.json": _cal(transforms={"rouge-l-recall": {"mean": 0.5, "std": "wide"}}),
    "cal_mean_inf.json": _cal(transforms={"rouge-l-recall": {"mean": 0.25, "std": 1}}).replace("0.25", "1e999"),
    "cal_intercept_str.json": _cal(intercept="0"),
    "cal_intercept_nan.json": _cal(intercept=0.25).replace("0.25", "NaN"),
    "cal_alpha_neg.json": _cal(alpha=-1),
    "cal_scorers_str.json": _cal(scorers="rouge-l-recall"),
    "cal_scorers_dup.json": _cal(scorers=["rouge-l-recall", "rouge-l-recall"]),
    "cal_rank_q_str.json": _cal(**_RANK, transforms={"rouge-l-recall": {"quantiles": "0,1"}}),
    "cal_rank_q_dec.json": _cal(**_RANK, transforms={"rouge-l-recall": {"quantiles": [1, 0]}}),
    "cal_rank_q_item.json": _cal(**_RANK, transforms={"rouge-l-recall": {"quantiles": [0, "x"]}}),
    "cal_meta_list.json": _cal(meta=[1]),
    "cal_options_list.json": _cal(scorer_options=[1]),
    "cal_target_int.json": _cal(target=5),
    "cal_invalid.json": "{",
    "cal_sur.json": _cal(target="X").replace('"X"', '"\\udc00"'),
    "cal_top_list.json": "[1]",
})

LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
    f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n"
    for i in range(8)
)
TRAIN = "data: {w}/data.jsonl\nout_dir: {w}/run\n"
SWEEP = "datasets:\n  d: data.jsonl\n"
BAD_FILES.update({
    # train --config: YAML structure, non-finite floats, counts past their bounds, types
    "y_laughs.yaml": TRAIN + LAUGHS,
    "y_anchor.yaml": "data: &d {w}/data.jsonl\nout_dir: *d\n",
    "y_deep.yaml": TRAIN + "lora_target: " + "[" * 100 + "]" * 100 + "\n",
    "y_lr_inf.yaml": TRAIN + "learning_rate: .inf\n",
    "y_lr_nan.yaml": TRAIN + "learning_rate: .nan\n",
    "y_lr_neg.yaml": TRAIN + "learning_rate: -1.0e-4\n",
    "y_lr_huge.yaml": TRAIN + "learning_rate: 1.0e+5\n",
    "y_beta_huge.yaml": TRAIN + "beta: 1.0e+9\n",
    "y_grpo_beta_nan.yaml": TRAIN + "method: grpo\ngrpo_beta: .nan\n",
    "y_beta_inf.yaml": TRAIN + "beta: .inf\n",
    "y_epochs_inf.yaml": TRAIN + "epochs: .inf\n",
    "y_dropout_nan.yaml": TRAIN + "lora_dropout: .nan\n",
    "y_min_gap_nan.yaml": TRAIN + "min_gap: .nan\n",
    "y_fairness_temperature_inf.yaml": TRAIN + "fairness_temperature: .inf\n",
    "y_weights_nan.yaml": TRAIN + "scorers: rouge-l-recall\nweights: [.nan]\n",
    "y_candidates_float.yaml": TRAIN + "candidates: 2.7\n",
    "y_candidates_huge.yaml": TRAIN + "candidates: 100000000\n",
    "y_iterations_huge.yaml": TRAIN + "iterations: 1000000000\n",
    "y_batch_huge.yaml": TRAIN + "batch_size: 1000000000\n",
    "y_max_new_tokens_bool.yaml": TRAIN + "max_new_tokens: true\n",
    "y_seed_neg.yaml": TRAIN + "seed: -1\n",
    "y_seed_huge.yaml": TRAIN + "seed: 1099511627776\n",
    "y_dev_size_neg.yaml": TRAIN + "dev_size: -1\n",
    "y_device_bad.yaml": TRAIN + "device: gpu\n",
    "y_model_missing.yaml": TRAIN + "model: {w}/nomodel\n",
    "y_model_empty.yaml": TRAIN + "model: {w}/emptymodel\n",
    "y_data_list.yaml": "data: [{w}/data.jsonl]\nout_dir: {w}/run\n",
    "y_data_bad.yaml": "data: {w}/j_refs_int.jsonl\nout_dir: {w}/run\n",
    "y_top_list.yaml": "- data.jsonl\n",
    "y_sur.yaml": 'data: {w}/data.jsonl\nout_dir: "run\\ud800"\n',
    "y_dup.yaml": TRAIN + "learning_rate: 1.0e-4\nlearning_rate: 5.0e-5\n",
    "y_invalid.yaml": "data: [\n",
    # sweep --config
    "sw_laughs.yaml": SWEEP + LAUGHS.replace("a: ", "x_a: ", 1),
    "sw_anchor.yaml": SWEEP + "base: &b\n  max_new_tokens: 4\ngrid: *b\n",
    "sw_deep.yaml": SWEEP + "metrics: " + "[" * 100 + "]" * 100 + "\n",
    "sw_candidates_float.yaml": SWEEP + "base:\n  candidates: 2.7\n",
    "sw_candidates_huge.yaml": SWEEP + "base:\n  candidates: 100000\n",
    "sw_seeds_neg.yaml": SWEEP + "seeds: [-1]\n",
    "sw_seeds_huge.yaml": SWEEP + "seeds: [1099511627776]\n",
    "sw_seeds_float.yaml": SWEEP + "seeds: 1.5\n",
    "sw_limit_bool.yaml": SWEEP + "limit: true\n",
    "sw_limit_float.yaml": SWEEP + "limit: 2.5\n",
    "sw_temperature_nan.yaml": SWEEP + "base:\n  do_sample: true\n  num_beams: 1\n  temperature: .nan\n",
    "sw_top_p_big.yaml": SWEEP + "base:\n  do_sample: true\n  num_beams: 1\n  top_p: 1.5\n",
    "sw_max_new_tokens_huge.yaml": SWEEP + "base:\n  max_new_tokens: 1000000000\n",
    "sw_max_new_tokens_float.yaml": SWEEP + "base:\n  max_new_tokens: 2.5\n",
    "sw_model_int.yaml": SWEEP + "base:\n  model: 5\n",
    "sw_model_empty.yaml": SWEEP + "base:\n  model: {w}/emptymodel\n",
    "sw_device_bad.yaml": SWEEP + "device: gpu\n",
    "sw_factuality_options_list.yaml": SWEEP + "factuality_options: [1]\n",
    "sw_fair_strength_inf.yaml": SWEEP + "base:\n  fairness: ratio\n  fairness_strength: .inf\n",
    "sw_num_beams_grid.yaml": SWEEP + "grid:\n  num_beams: [4, 100000]\n",
    "sw_rep_penalty_zero.yaml": SWEEP + "base:\n  repetition_penalty: 0\n",
    "sw_abstractiveness_nan.yaml": SWEEP + "grid:\n  abstractiveness: [2, .nan]\n",
    "sw_data_bad.yaml": "datasets:\n  d: j_gv_str.jsonl\n",
    "sw_instruction_int.yaml": SWEEP + "base:\n  instruction: 5\n",
    "sw_do_sample_str.yaml": SWEEP + "base:\n  do_sample: sometimes\n",
    "sw_data_sur.yaml": "datasets:\n  d: j_sur_text.jsonl\n",
})


def _write_bad_files(folder: Path) -> None:
    for name, content in BAD_FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content.replace("{w}", str(folder)), encoding="utf-8", errors="surrogatepass")


def _results_with(folder: Path, name: str, sql: str) -> None:
    """A valid sweep results file with one column of its row (or cell) spoiled by ``sql``."""
    import sqlite3

    from evenhand.sweep.config import Cell
    from evenhand.sweep.store import ResultRow, ResultStore

    path = folder / name
    store = ResultStore(path)
    cell = Cell({"abstractiveness": 2.0}, "h2")
    store.add_cells([cell])
    store.write([ResultRow(cell.id, "d", 0, "a", 0, "A summary.", {"mint": 0.5})])
    store.close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql)
    conn.execute("PRAGMA journal_mode=DELETE")  # one file: a read-only reader creates no -wal/-shm
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


STORES = {
    "st_metrics_list.sqlite": "UPDATE rows SET metrics = '[1]'",
    "st_metrics_invalid.sqlite": "UPDATE rows SET metrics = '{'",
    "st_metrics_value.sqlite": "UPDATE rows SET metrics = '{\"mint\": \"high\"}'",
    "st_rerank_list.sqlite": "UPDATE rows SET rerank = '[1]'",
    "st_settings_list.sqlite": "UPDATE cells SET settings = '[1]'",
    "st_seed_text.sqlite": "UPDATE rows SET seed = 'x'",
    "st_index_text.sqlite": "UPDATE rows SET example_index = 'first'",
    "st_sur.sqlite": "UPDATE rows SET metrics = '{\"\\ud800\": 1}'",
}


def _ev(name: str) -> list[str]:
    """evaluate on a data file of the work folder, scoring its references."""
    return ["evaluate", "--data", "{w}/" + name, "--summaries", "references", "--out", "{w}/prior.jsonl"]


def _meta(name: str, *extra: str) -> list[str]:
    return ["meta-eval", "--data", "{w}/" + name, "--scorers", "rouge-l-recall", "--out", "{w}/prior.jsonl",
            "--score-cache", "none", *extra]


def _calib(name: str, *extra: str) -> list[str]:
    return ["calibrate", "--data", "{w}/" + name, "--target", "coverage", "--scorers", "rouge-l-recall",
            "--out", "{w}/calib.json", "--folds", "2", "--score-cache", "none", *extra]


#: a server URL nothing listens on: the server options' values are checked before any request
_URL = "http://127.0.0.1:9/v1"


def _gen(name: str = "data.jsonl", *extra: str) -> list[str]:
    return ["generate", "--data", "{w}/" + name, "--out", "{w}/prior.jsonl", "--model", "{m}", *extra]


JSONL_CASES = [
    (_ev("j_id_list.jsonl"), "j_id_list.jsonl:1: `id` must be a string or an integer"),
    (_ev("j_id_float.jsonl"), "`id` must be a string or an integer, got a number (1.5)"),
    (_ev("j_id_bool.jsonl"), "`id` must be a string or an integer, got a boolean"),
    (_ev("j_id_null.jsonl"), "`id` must be a string or an integer, got null"),
    (_ev("j_id_obj.jsonl"), "`id` must be a string or an integer, got an object"),
    (_ev("j_docs_str.jsonl"), "j_docs_str.jsonl:1: field `documents` must be a list, got a string"),
    (_ev("j_docs_obj.jsonl"), "field `documents` must be a list, got an object"),
    (_ev("j_docs_null.jsonl"), "field `documents` must be a list, got null"),
    (_ev("j_doc_int.jsonl"), "`documents[0]` must be an object"),
    (_ev("j_doc_list.jsonl"), "`documents[0]` must be an object"),
    (_ev("j_doc_null.jsonl"), "`documents[0]` must be an object"),
    (_ev("j_text_int.jsonl"), "j_text_int.jsonl:1: `documents[0].text` must be a string, got a number (5)"),
    (_ev("j_text_null.jsonl"), "`documents[0].text` must be a string, got null"),
    (_ev("j_text_list.jsonl"), "`documents[0].text` must be a string, got a list"),
    (_ev("j_text_obj.jsonl"), "`documents[0].text` must be a string, got an object"),
    (_ev("j_group_list.jsonl"), "`documents[0].group` must be a string or a number"),
    (_ev("j_group_obj.jsonl"), "`documents[0].group` must be a string or a number"),
    (_ev("j_group_bool.jsonl"), "`documents[0].group` must be a string or a number"),
    (_ev("j_attr_int.jsonl"), "`attribute` must be a string or null, got a number"),
    (_ev("j_attr_list.jsonl"), "`attribute` must be a string or null, got a list"),
    (_ev("j_gv_str.jsonl"), "`group_values` must be a list of strings, got a string ('pos')"),
    (_ev("j_gv_nested.jsonl"), "`group_values[0]` must be a string or a number, got a list"),
    (_ev("j_gv_obj.jsonl"), "`group_values` must be a list of strings, got an object"),
    (_ev("j_gv_null_item.jsonl"), "`group_values[0]` must be a string or a number, got null"),
    (_ev("j_instr_int.jsonl"), "`instruction` must be a string or null"),
    (_ev("j_instr_list.jsonl"), "`instruction` must be a string or null"),
    (_ev("j_prompt_list.jsonl"), "`prompt` must be a string or null"),
    (_ev("j_prompt_obj.jsonl"), "`prompt` must be a string or null"),
    (_ev("j_refs_int.jsonl"), "`references` must be a list of strings, got a number"),
    (_ev("j_refs_obj.jsonl"), "`references` must be a list of strings, got an object"),
    (_ev("j_refs_nested.jsonl"), "`references[0]` must be a string, got a list"),
    (_ev("j_refs_nums.jsonl"), "`references[0]` must be a string, got a number"),
    (_ev("j_target_list.jsonl"), "`target` must be a string or a number"),
    (_ev("j_target_obj.jsonl"), "`target` must be a string or a number"),
    (_ev("j_meta_list.jsonl"), "`meta` must be an object, got a list"),
    (_ev("j_meta_str.jsonl"), "`meta` must be an object, got a string"),
    (_ev("j_meta_num.jsonl"), "`meta` must be an object, got a number"),
    (_ev("j_rec_list.jsonl"), "j_rec_list.jsonl:1: expected a JSON object, got a list"),
    (_ev("j_rec_str.jsonl"), "expected a JSON object, got a string"),
    (_ev("j_rec_num.jsonl"), "expected a JSON object, got a number"),
    (_ev("j_rec_null.jsonl"), "j_rec_null.jsonl:2: expected a JSON object, got null"),
    (_ev("j_sur_text.jsonl"), "j_sur_text.jsonl:1: `documents[0].text` holds a lone surrogate (\\ud800)"),
    (_ev("j_sur_id.jsonl"), "`id` holds a lone surrogate (\\udc00)"),
    (_ev("j_sur_key.jsonl"), "`meta.\\ud83d` holds a lone surrogate (\\ud83d)"),
    (_ev("j_sur_ref.jsonl"), "`references[0]` holds a lone surrogate"),
    (_ev("j_deep.jsonl"), "j_deep.jsonl:1: JSON nested deeper than 64 levels"),
    (_ev("j_deep_recursion.jsonl"), "j_deep_recursion.jsonl:1: JSON nested too deeply to read"),
    (_ev("j_nan.jsonl"), "j_nan.jsonl:1: `NaN` is not valid JSON"),
    (_ev("j_inf.jsonl"), "`Infinity` is not valid JSON"),
    (_ev("j_neginf.jsonl"), "`-Infinity` is not valid JSON"),
    (_ev("j_dup.jsonl"), "duplicate example id 'a'"),
    (_ev("j_ws_text.jsonl"), "`documents[0].text` is empty"),
    (_ev("j_unknown.jsonl"), "unknown field(s) ['docs']"),
    (_ev("j_no_docs.jsonl"), "missing field `documents`"),
    (_ev("j_docs_empty.jsonl"), "field `documents` is empty"),
    (_ev("j_group_unknown.jsonl"), "groups ['neg'] are not in `group_values`"),
    (_ev("j_empty_id.jsonl"), "field `id` must be a non-empty string"),
    (_ev("j_bad_json.jsonl"), "j_bad_json.jsonl:2: invalid JSON"),
    (_ev("j_trailing.jsonl"), "j_trailing.jsonl:1: invalid JSON (Extra data)"),
    # the same checks through every command that reads --data
    (_gen("j_text_int.jsonl"), "j_text_int.jsonl:1: `documents[0].text` must be a string"),
    (_gen("j_sur_text.jsonl"), "lone surrogate"),
    (_gen("j_deep_recursion.jsonl"), "nested too deeply"),
    (_gen("j_gv_str.jsonl"), "`group_values` must be a list"),
    (["rerank", "--data", "{w}/j_group_list.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}",
      "--scorers", "rouge-l-recall", "--floors", "none"], "`documents[0].group`"),
    (["rerank", "--data", "{w}/j_nan.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}",
      "--scorers", "rouge-l-recall", "--floors", "none"], "`NaN` is not valid JSON"),
    (["train", "--config", "{w}/y_data_bad.yaml"], "j_refs_int.jsonl:1: `references` must be a list"),
    (["sweep", "--config", "{w}/sw_data_bad.yaml"], "j_gv_str.jsonl:1: `group_values` must be a list"),
    (["sweep", "--config", "{w}/sw_data_sur.yaml"], "lone surrogate"),
    # fairness group checks: before any model loads, naming file:line (not examples[0])
    (_gen("j_one_group.jsonl", "--fair", "ratio", "--fair-strength", "1"),
     "j_one_group.jsonl:1: example 'a': only one group (['pos'])"),
    (_gen("j_no_groups.jsonl", "--fair", "equal", "--fair-beam", "1"),
     "j_no_groups.jsonl:1: example 'a': documents [0, 1] have no `group` label"),
    (["rerank", "--data", "{w}/j_one_group.jsonl", "--out", "{w}/prior.jsonl", "--model", "{m}",
      "--scorers", "rouge-l-recall", "--floors", "none", "--fairness", "ratio", "--fairness-strength", "1"],
     "j_one_group.jsonl:1: example 'a': only one group"),
    # --summaries files of evaluate
    (EVAL[:4] + ["{w}/s_sum_int.jsonl"] + EVAL[5:], "s_sum_int.jsonl:1: field `summary` must be a string"),
    (EVAL[:4] + ["{w}/s_id_list.jsonl"] + EVAL[5:], "s_id_list.jsonl:1: `id` must be a string or an integer"),
    (EVAL[:4] + ["{w}/s_rec_list.jsonl"] + EVAL[5:], "s_rec_list.jsonl:1: each line needs fields `id`"),
    (EVAL[:4] + ["{w}/s_sur.jsonl"] + EVAL[5:], "s_sur.jsonl:1: `summary` holds a lone surrogate"),
    (EVAL[:4] + ["{w}/s_nan.jsonl"] + EVAL[5:], "s_nan.jsonl:1: `NaN` is not valid JSON"),
    (EVAL[:4] + ["{w}/s_dup.jsonl"] + EVAL[5:], "s_dup.jsonl:2: duplicate id 'a'"),
    (EVAL[:4] + ["{w}/s_deep.jsonl"] + EVAL[5:], "s_deep.jsonl:1: JSON nested deeper"),
]

FAIRSUMM_CASES = [
    (_ev("fs_sample_str.json"), "fs_sample_str.json: `[1]` must be an object (a FairSumm sample)"),
    (_ev("fs_units_str.json"), "fs_units_str.json[0]: `units` must be a list"),
    (_ev("fs_units_obj.json"), "`units` must be a list"),
    (_ev("fs_unit_str.json"), "`units[0]` must be an object"),
    (_ev("fs_unit_text_int.json"), "fs_unit_text_int.json[0]: `units[0].text` must be a string, got a number"),
    (_ev("fs_unit_text_null.json"), "`units[0].text` must be a string, got null"),
    (_ev("fs_unit_value_str.json"), "`units[0].value` must be an object {attribute: value}"),
    (_ev("fs_unit_value_list.json"), "`units[0].value` must be an object"),
    (_ev("fs_unit_group_list.json"), "`units[0].value.rating` must be a string or a number"),
    (_ev("fs_unit_group_obj.json"), "`units[0].value.rating` must be a string or a number"),
    (_ev("fs_vm_list.json"), "`value_mapping` must be an object {attribute: [values]}"),
    (_ev("fs_vm_str.json"), "`value_mapping` must be an object"),
    (_ev("fs_vm_values_str.json"), "`value_mapping.rating` must be a list of strings, got a string ('15')"),
    (_ev("fs_vm_values_nested.json"), "`value_mapping.rating[0]` must be a string or a number"),
    (_ev("fs_vm_two.json"), "`value_mapping` must hold one attribute"),
    (_ev("fs_gold_str.json"), "fs_gold_str.json[0]: `gold_summary` must be a list of strings, got a string"),
    (_ev("fs_gold_ints.json"), "`gold_summary[0]` must be a string, got a number"),
    (_ev("fs_gold_obj.json"), "`gold_summary` must be a list of strings, got an object"),
    (_ev("fs_meta_list.json"), "`meta` must be an object, got a list"),
    (_ev("fs_missing_text.json"), "`units[0]` is missing field `text`"),
    (_ev("fs_missing_units.json"), "fs_missing_units.json[1]: missing field `units`"),
    (_ev("fs_group_unknown.json"), "groups ['7'] are not in `group_values`"),
    (_ev("fs_top_dict.json"), "expected a JSON list of samples, got an object"),
    (_ev("fs_nan.json"), "fs_nan.json: `NaN` is not valid JSON"),
    (_ev("fs_sur.json"), "`[0].units[0].text` holds a lone surrogate (\\udfff)"),
    (_ev("fs_empty_text.json"), "`documents[0].text` is empty"),
    (_gen("fs_gold_str.json"), "`gold_summary` must be a list of strings"),
]

FLIPSIDE_CASES = [
    (_ev("tfs_input_int.json"), "tfs_input_int.json[0]: `input` must be a string, got a number"),
    (_ev("tfs_input_list.json"), "`input` must be a string, got a list"),
    (_ev("tfs_stance_int.json"), "`stance` must be a string, got a number"),
    (_ev("tfs_stance_center.json"), "`stance` must be 'left' or 'right', got 'center'"),
    (_ev("tfs_topic_list.json"), "`topic` must be a string, got a list"),
    (_ev("tfs_document_int.json"), "`document` must be a string, got a number"),
    (_ev("tfs_document_null.json"), "`document` must be a string, got null"),
    (_ev("tfs_rec_str.json"), "tfs_rec_str.json: `[1]` must be an object (a TheFlipSide record)"),
    (_ev("tfs_missing_document.json"), "missing field `document` (TheFlipSide format)"),
    (_ev("tfs_top_dict.json"), "expected a JSON list of samples, got an object"),
    (_ev("tfs_sur.json"), "tfs_sur.json: `[0].document` holds a lone surrogate (\\ud800)"),
    (_ev("tfs_inf.json"), "`Infinity` is not valid JSON"),
    (_gen("tfs_stance_center.json"), "`stance` must be 'left' or 'right'"),
]

CSV_CASES = [
    (_ev("csv_missing_text.csv"), "csv_missing_text.csv: missing column `text`"),
    (_ev("csv_bom_missing.csv"), "csv_bom_missing.csv: missing column `text`"),  # not `example_id`
    (_ev("csv_empty_text.csv"), "csv_empty_text.csv:2: field `text` is empty"),
    (_ev("csv_empty_id.csv"), "csv_empty_id.csv:2: field `example_id` is empty"),
    (_ev("csv_extra.csv"), "csv_extra.csv:2: more cells than the header"),
    (_ev("csv_huge_field.csv"), "csv_huge_field.csv:2: malformed CSV (field larger than field limit"),
    (_ev("csv_header_only.csv"), "csv_header_only.csv: holds no examples"),
    (_ev("csv_latin1.csv"), "csv_latin1.csv:2: not UTF-8 text (byte 0xe9)"),
    (_gen("csv_empty_id.csv"), "csv_empty_id.csv:2: field `example_id` is empty"),
]

CONTROLLED_CASES = [
    (_meta("c_entry_str.json"), "c_entry_str.json[2]: needs fields `source`"),
    (_meta("c_summaries_str.json"), "c_summaries_str.json[0]: `summaries` must be a list"),
    (_meta("c_summaries_obj.json"), "`summaries` must be a list"),
    (_meta("c_summary_str.json"), "`summaries[0]` must be an object"),
    (_meta("c_summary_text_int.json"), "`summaries[0].summary` must be a string, got a number"),
    (_meta("c_cov_str.json"), "`summaries[0].coverage` must be a float in [0, 1], got '0.5'"),
    (_meta("c_cov_word.json"), "`summaries[0].coverage` must be a float in [0, 1], got 'high'"),
    (_meta("c_cov_nan.json"), "c_cov_nan.json: `NaN` is not valid JSON"),
    (_meta("c_cov_inf.json"), "`summaries[0].coverage` must be a float in [0, 1], got inf"),
    (_meta("c_cov_bool.json"), "`summaries[0].coverage` must be a float in [0, 1], got True"),
    (_meta("c_cov_neg.json"), "`summaries[0].coverage` must be a float in [0, 1], got -0.1"),
    (_meta("c_cov_big.json"), "`summaries[0].coverage` must be a float in [0, 1], got 1.5"),
    (_meta("c_faith_null.json"), "`summaries[0].faithfulness` must be a float in [0, 1], got None"),
    (_meta("c_faith_list.json"), "`summaries[0].faithfulness` must be a float in [0, 1], got [1]"),
    (_meta("c_source_int.json"), "c_source_int.json[0]: `source` must be a non-empty list"),
    (_meta("c_source_empty.json"), "`source` must be a non-empty list"),
    (_meta("c_source_obj.json"), "`source` must be a non-empty list"),
    (_meta("c_missing_cov.json"), "c_missing_cov.json[0].summaries[0]: missing field `coverage`"),
    (_meta("c_top_dict.json"), "expected a non-empty JSON list"),
    (_meta("c_empty.json"), "expected a non-empty JSON list"),
    (_meta("c_no_summaries.json"), "c_no_summaries.json: holds no summaries"),
    (_meta("c_single.json"), "needs at least two"),
    (_meta("c_constant.json"), "every summary has the same `coverage` (0.5)"),
    (_meta("c_sur.json"), "`[0].summaries[2].summary` holds a lone surrogate"),
    (_meta("c_deep.json"), "JSON nested deeper than 64 levels"),
    (_calib("c_cov_word.json"), "`summaries[0].coverage` must be a float in [0, 1], got 'high'"),
    (_calib("c_constant.json"), "every summary has the same `coverage`"),
    (_calib("c_single.json"), "needs at least two"),
    (_calib("a_nan.jsonl"), "a_nan.jsonl:1: `NaN` is not valid JSON"),
    (_calib("a_inf.jsonl"), "a_inf.jsonl:1: `coverage` must be a finite float, got inf"),
    (_calib("a_str.jsonl"), "a_str.jsonl:1: `coverage` must be a finite float, got '0.5'"),
    (_calib("a_bool.jsonl"), "`coverage` must be a finite float, got True"),
    (_calib("a_source_int.jsonl"), "a_source_int.jsonl:1: `source` must be a non-empty text"),
    (_calib("a_summary_int.jsonl"), "a_summary_int.jsonl:1: `summary` must be a string"),
    (_calib("a_missing.jsonl"), "a_missing.jsonl:1: missing field `coverage`"),
    (_calib("a_rec_list.jsonl"), "a_rec_list.jsonl:1: expected a JSON object"),
    (_calib("a_sur.jsonl"), "a_sur.jsonl:1: `source` holds a lone surrogate"),
    (_calib("a_single.jsonl"), "1 summary; correlating with human scores needs at least two"),
    (_calib("a_constant.jsonl"), "every summary has the same `coverage` (0.5)"),
]


def _cal_case(name: str, needle: str) -> tuple[list[str], str]:
    return (["meta-eval", "--data", "{w}/controlled.json", "--scorers", "calibrated:{w}/" + name,
             "--out", "{w}/prior.jsonl", "--score-cache", "none"], needle)


CALIBRATION_CASES = [
    _cal_case("cal_weights_str.json", "cal_weights_str.json: `weights.rouge-l-recall` must be a finite float, got 'high'"),
    _cal_case("cal_weights_nan.json", "cal_weights_nan.json: `NaN` is not valid JSON"),
    _cal_case("cal_weights_inf.json", "`weights.rouge-l-recall` must be a finite float, got inf"),
    _cal_case("cal_weights_list.json", "`weights` must be an object {scorer: ...}, got a list"),
    _cal_case("cal_transforms_list.json", "`transforms` must be an object"),
    _cal_case("cal_transform_str.json", "transforms['rouge-l-recall']: must be an object, got a string"),
    _cal_case("cal_std_zero.json", "`std` must be a positive float, got 0"),
    _cal_case("cal_std_str.json", "`std` must be a positive float, got 'wide'"),
    _cal_case("cal_mean_inf.json", "`mean` must be a finite float, got inf"),
    _cal_case("cal_intercept_str.json", "`intercept` must be a finite float, got '0'"),
    _cal_case("cal_intercept_nan.json", "`NaN` is not valid JSON"),
    _cal_case("cal_alpha_neg.json", "`alpha` must be a non-negative float, got -1"),
    _cal_case("cal_scorers_str.json", "`scorers` must be a non-empty list of scorer names"),
    _cal_case("cal_scorers_dup.json", "`scorers` names a scorer twice"),
    _cal_case("cal_rank_q_str.json", "`quantiles` must be a non-decreasing list of at least 2 numbers"),
    _cal_case("cal_rank_q_dec.json", "`quantiles` must be a non-decreasing list"),
    _cal_case("cal_rank_q_item.json", "`quantiles[1]` must be a finite float, got 'x'"),
    _cal_case("cal_meta_list.json", "`meta` must be an object, got a list"),
    _cal_case("cal_options_list.json", "`scorer_options` must be an object, got a list"),
    _cal_case("cal_target_int.json", "`target` must be a string, got a number"),
    _cal_case("cal_invalid.json", "cal_invalid.json: invalid JSON"),
    _cal_case("cal_sur.json", "`target` holds a lone surrogate (\\udc00)"),
    _cal_case("cal_top_list.json", "not an evenhand calibration"),
    (["evaluate", "--data", "{w}/data.jsonl", "--summaries", "{w}/summaries.jsonl", "--out", "{w}/prior.jsonl",
      "--metrics", "calibrated:{w}/cal_std_zero.json"], "`std` must be a positive float"),
    (RERANK[:8] + ["calibrated:{w}/cal_weights_inf.json"] + RERANK[9:], "must be a finite float, got inf"),
]

YAML_CASES = [
    (["train", "--config", "{w}/y_laughs.yaml"], "y_laughs.yaml:3: YAML anchors and aliases (&name, *name) are not accepted"),
    (["train", "--config", "{w}/y_anchor.yaml"], "y_anchor.yaml:1: YAML anchors and aliases"),
    (["train", "--config", "{w}/y_deep.yaml"], "y_deep.yaml:3: YAML nested deeper than 64 levels"),
    (["train", "--config", "{w}/y_lr_inf.yaml"], "`learning_rate` must be a float in (0, 1], got inf"),
    (["train", "--config", "{w}/y_lr_nan.yaml"], "`learning_rate` must be a float in (0, 1], got nan"),
    (["train", "--config", "{w}/y_lr_neg.yaml"], "`learning_rate` must be a float in (0, 1]"),
    (["train", "--config", "{w}/y_lr_huge.yaml"], "`learning_rate` must be a float in (0, 1], got 100000.0"),
    (["train", "--config", "{w}/y_beta_huge.yaml"], "`beta` must be at most 100, got 1000000000.0"),
    (["train", "--config", "{w}/y_grpo_beta_nan.yaml"], "`grpo_beta` must be a non-negative float"),
    (["train", "--config", "{w}/y_beta_inf.yaml"], "`beta` must be a positive float"),
    (["train", "--config", "{w}/y_epochs_inf.yaml"], "`epochs` must be a positive float"),
    (["train", "--config", "{w}/y_dropout_nan.yaml"], "`lora_dropout` must be a float in [0, 1), got nan"),
    (["train", "--config", "{w}/y_min_gap_nan.yaml"], "`min_gap` must be a non-negative float, got nan"),
    (["train", "--config", "{w}/y_fairness_temperature_inf.yaml"], "`fairness_temperature` must be a positive float, got inf"),
    (["train", "--config", "{w}/y_weights_nan.yaml"], "`weights[0]` must be a finite float, got nan"),
    (["train", "--config", "{w}/y_candidates_float.yaml"], "`candidates` must be int, got 2.7"),
    (["train", "--config", "{w}/y_candidates_huge.yaml"], "`candidates` must be at most 1024, got 100000000"),
    (["train", "--config", "{w}/y_iterations_huge.yaml"], "`iterations` must be at most 100000, got 1000000000"),
    (["train", "--config", "{w}/y_batch_huge.yaml"], "`batch_size` must be at most 4096, got 1000000000"),
    (["train", "--config", "{w}/y_max_new_tokens_bool.yaml"], "`max_new_tokens` must be int, got True"),
    (["train", "--config", "{w}/y_seed_neg.yaml"], "`seed` must be a non-negative int, got -1"),
    (["train", "--config", "{w}/y_seed_huge.yaml"], "`seed` must be at most 4294967295, got 1099511627776"),
    (["train", "--config", "{w}/y_dev_size_neg.yaml"], "`dev_size` must be a non-negative int"),
    (["train", "--config", "{w}/y_device_bad.yaml"], "`device` must be cpu, cuda, cuda:N or mps, got 'gpu'"),
    (["train", "--config", "{w}/y_model_missing.yaml"], "`model`: not found locally"),
    (["train", "--config", "{w}/y_model_empty.yaml"], "`model`: {w}/emptymodel holds no model"),
    (["train", "--config", "{w}/y_data_list.yaml"], "`data` must be str"),
    (["train", "--config", "{w}/y_dup.yaml"], "y_dup.yaml:4: key 'learning_rate' appears twice"),
    (["train", "--config", "{w}/y_sur.yaml"], "y_sur.yaml: `out_dir` holds a lone surrogate (\\ud800)"),
    (["train", "--config", "{w}/y_top_list.yaml"], "expected a mapping of fields at the top level"),
    (["train", "--config", "{w}/y_invalid.yaml"], "y_invalid.yaml: not valid YAML"),
    (["train", "--data", "{w}/data.jsonl", "--out", "{w}/run", "--learning-rate", "inf"],
     "`learning_rate` must be a float in (0, 1]"),
    (["train", "--data", "{w}/data.jsonl", "--out", "{w}/run", "--method", "grpo", "--grpo-beta", "nan"],
     "`grpo_beta` must be a non-negative float"),
    (["train", "--data", "{w}/data.jsonl", "--out", "{w}/run", "--candidates", "5000"],
     "`candidates` must be at most 1024, got 5000"),
    (["sweep", "--config", "{w}/sw_laughs.yaml"], "sw_laughs.yaml:3: YAML anchors and aliases"),
    (["sweep", "--config", "{w}/sw_anchor.yaml"], "sw_anchor.yaml:3: YAML anchors and aliases"),
    (["sweep", "--config", "{w}/sw_deep.yaml"], "YAML nested deeper than 64 levels"),
    (["sweep", "--config", "{w}/sw_candidates_float.yaml"], "`candidates` must be a positive int, got 2.7"),
    (["sweep", "--config", "{w}/sw_candidates_huge.yaml"], "`candidates` must be at most 1024, got 100000"),
    (["sweep", "--config", "{w}/sw_seeds_neg.yaml"], "`seeds[0]` must be a non-negative int"),
    (["sweep", "--config", "{w}/sw_seeds_huge.yaml"], "`seeds[0]` must be at most 4294967295, got 1099511627776"),
    (["sweep", "--config", "{w}/sw_seeds_float.yaml"], "`seeds` must be a non-empty list of ints, got 1.5"),
    (["sweep", "--config", "{w}/sw_limit_bool.yaml"], "`limit` must be a positive int"),
    (["sweep", "--config", "{w}/sw_limit_float.yaml"], "`limit` must be a positive int"),
    (["sweep", "--config", "{w}/sw_temperature_nan.yaml"], "`temperature` must be a positive float"),
    (["sweep", "--config", "{w}/sw_top_p_big.yaml"], "`top_p` must be a float in (0, 1], got 1.5"),
    (["sweep", "--config", "{w}/sw_max_new_tokens_huge.yaml"], "`max_new_tokens` must be at most 32768, got 1000000000"),
    (["sweep", "--config", "{w}/sw_max_new_tokens_float.yaml"], "settings: `max_new_tokens` must be int, got 2.5"),
    (["sweep", "--config", "{w}/sw_model_int.yaml"], "`model` must be a model name or folder, got a number"),
    (["sweep", "--config", "{w}/sw_model_empty.yaml"], "cell `model`: {w}/emptymodel holds no model"),
    (["sweep", "--config", "{w}/sw_device_bad.yaml"], "`device` must be cpu, cuda, cuda:N or mps"),
    (["sweep", "--config", "{w}/sw_factuality_options_list.yaml"], "`factuality_options` must be a mapping"),
    (["sweep", "--config", "{w}/sw_fair_strength_inf.yaml"], "`fairness_strength` must be a non-negative float, got inf"),
    (["sweep", "--config", "{w}/sw_num_beams_grid.yaml"], "`num_beams` must be at most 256, got 100000"),
    (["sweep", "--config", "{w}/sw_rep_penalty_zero.yaml"], "`repetition_penalty` must be a positive float"),
    (["sweep", "--config", "{w}/sw_instruction_int.yaml"], "settings: `instruction` must be str, got 5"),
    (["sweep", "--config", "{w}/sw_do_sample_str.yaml"], "settings: `do_sample` must be bool, got 'sometimes'"),
    (["sweep", "--config", "{w}/sw_abstractiveness_nan.yaml"], "`abstractiveness` must be a positive float, got nan"),
]

_NUM = ["--max-new-tokens", "2"]
NUMBER_CASES = [
    # generate: decoding flags, before any model loads
    (_gen("data.jsonl", "--do-sample", "--num-beams", "1", "--temperature", "nan"), "`temperature` must be a positive float"),
    (_gen("data.jsonl", "--do-sample", "--num-beams", "1", "--temperature", "inf"), "`temperature` must be a positive float, got inf"),
    (_gen("data.jsonl", "--do-sample", "--temperature", "-1"), "`temperature` must be a positive float"),
    (_gen("data.jsonl", "--do-sample", "--top-p", "1.5"), "`top_p` must be a float in (0, 1], got 1.5"),
    (_gen("data.jsonl", "--do-sample", "--top-p", "0"), "`top_p` must be a float in (0, 1], got 0"),
    (_gen("data.jsonl", "--do-sample", "--top-p", "nan"), "`top_p` must be a float in (0, 1], got nan"),
    (_gen("data.jsonl", "--do-sample", "--top-p", "-0.1"), "`top_p` must be a float in (0, 1], got -0.1"),
    (_gen("data.jsonl", "--top-p", "1.5"), "--top-p has no effect without --do-sample"),  # option_modes
    (_gen("data.jsonl", "--do-sample", "--top-k", "-5"), "`top_k` must be a non-negative int"),
    (_gen("data.jsonl", "--do-sample", "--top-k", "1000000000000"), "`top_k` must be at most 10000000, got 1000000000000"),
    (_gen("data.jsonl", "--repetition-penalty", "0"), "`repetition_penalty` must be a positive float"),
    (_gen("data.jsonl", "--repetition-penalty", "-1"), "`repetition_penalty` must be a positive float"),
    (_gen("data.jsonl", "--repetition-penalty", "nan"), "`repetition_penalty` must be a positive float, got nan"),
    (_gen("data.jsonl", "--repetition-penalty", "inf"), "`repetition_penalty` must be a positive float, got inf"),
    (_gen("data.jsonl", "--seed", "-1"), "`seed` must be a non-negative int, got -1"),
    (_gen("data.jsonl", "--seed", "1099511627776"), "`seed` must be at most 4294967295, got 1099511627776"),
    (_gen("data.jsonl", "--num-beams", "100000"), "`num_beams` must be at most 256, got 100000"),
    (_gen("data.jsonl", "--max-new-tokens", "1000000000"), "`max_new_tokens` must be at most 32768, got 1000000000"),
    (_gen("data.jsonl", "--batch-size", "1000000000"), "`batch_size` must be at most 4096, got 1000000000"),
    (_gen("data.jsonl", "--no-repeat-ngram-size", "-1"), "`no_repeat_ngram_size` must be a non-negative int"),
    (_gen("data.jsonl", "--abstractiveness", "nan"), "`abstractiveness` must be a positive float, got nan"),
    (_gen("data.jsonl", "--abstractiveness", "inf"), "`abstractiveness` must be a positive float, got inf"),
    (_gen("data.jsonl", "--abstractiveness", "1e-300"), "`abstractiveness` must be at least 0.001"),
    (_gen("data.jsonl", "--abstractiveness", "1e300"), "`abstractiveness` must be at most 1000000, got 1e+300"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-strength", "1e308"), "`fairness_strength` must be at most 1000, got 1e+308"),
    (_gen("data.jsonl", "--fair", '{"zzz": 1}', "--fair-strength", "1"),
     "data.jsonl:1: example 'a': `fairness` names groups ['zzz'] that are not among its groups ['pos', 'neg']"),
    (_gen("data.jsonl", "--extractiveness", "nan"), "`extractiveness` must be a positive float, got nan"),
    (_gen("data.jsonl", "--extractiveness", "-2"), "`extractiveness` must be a positive float"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-strength", "inf"), "`fairness_strength` must be a non-negative float, got inf"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-strength", "nan"), "`fairness_strength` must be a non-negative float, got nan"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-strength", "-1"), "`fairness_strength` must be a non-negative float"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-beam", "inf"), "`fair_beam` must be a non-negative float, got inf"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-beam", "1", "--fairness-tau", "nan"), "`fairness_tau` must be a float in [0, 1]"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-beam", "1", "--fairness-tau", "1.5"), "`fairness_tau` must be a float in [0, 1], got 1.5"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-meaning", "inf"), "`fair_meaning` must be a non-negative float, got inf"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-meaning", "1", "--fair-meaning-every", "0"), "`fair_meaning_every` must be a positive int"),
    (_gen("data.jsonl", "--fair", "ratio", "--fair-meaning", "1", "--fair-meaning-every", "1000000000"), "`fair_meaning_every` must be at most 100000, got 1000000000"),
    (_gen("data.jsonl", "--fair", '{"pos": NaN}', "--fair-strength", "1"), "`fairness` share of group 'pos' must be a non-negative float, got nan"),
    (_gen("data.jsonl", "--fair", '{"pos": 1e999}', "--fair-strength", "1"), "`fairness` share of group 'pos' must be a non-negative float, got inf"),
    (_gen("data.jsonl", "--fair", '{"pos": -1}', "--fair-strength", "1"), "`fairness` share of group 'pos' must be a non-negative float, got -1"),
    (_gen("data.jsonl", "--fair", '{"pos": "half"}', "--fair-strength", "1"), "`fairness` share of group 'pos' must be a non-negative float, got 'half'"),
    (_gen("data.jsonl", "--fair", "[0.5, 0.5]", "--fair-strength", "1"), "`fairness` must be 'ratio', 'equal' or a JSON object"),
    (_gen("data.jsonl", "--model", _URL, "--max-concurrency", "0"), "--max-concurrency must be a positive int"),
    (_gen("data.jsonl", "--model", _URL, "--max-concurrency", "100000"), "--max-concurrency must be at most 1024, got 100000"),
    (_gen("data.jsonl", "--model", _URL, "--server-timeout", "nan"), "--server-timeout must be a positive float"),
    (_gen("data.jsonl", "--model", _URL, "--server-timeout", "inf"), "--server-timeout must be a positive float, got inf"),
    (_gen("data.jsonl", "--model", _URL, "--server-timeout", "0"), "--server-timeout must be a positive float"),
    (_gen("data.jsonl", "--device", "gpu"), "--device must be cpu, cuda, cuda:N or mps, got 'gpu'"),
    (_gen("data.jsonl", "--device", "cuda:99"), "--device cuda:99: this machine has"),
    (_gen("data.jsonl", "--device", "cpu; rm"), "--device must be cpu, cuda, cuda:N or mps"),
    # rerank
    (RERANK + ["--weights", "nan"], "`weights[0]` must be a non-negative float, got nan"),
    (RERANK + ["--weights", "inf"], "`weights[0]` must be a non-negative float, got inf"),
    (RERANK + ["--weights", "1e999"], "`weights[0]` must be a non-negative float, got inf"),
    (RERANK[:8] + ["rouge-l-recall,rouge-l-precision"] + RERANK[9:] + ["--weights", "nan,1"],
     "`weights[0]` must be a non-negative float, got nan"),
    (RERANK[:8] + ["rouge-l-recall,rouge-l-precision"] + RERANK[9:] + ["--weights", "1,-1"],
     "`weights[1]` must be a non-negative float, got -1"),
    (RERANK + ["--candidates", "100000"], "`candidates` must be at most 1024, got 100000"),
    (RERANK + ["--candidates", "-3"], "`candidates` must be a positive int"),
    (RERANK + ["--candidates", "2.7"], "argument --candidates: invalid int value: '2.7'"),
    (RERANK + ["--seed", "-1"], "`seed` must be a non-negative int, got -1"),
    (RERANK[:10] + ["rouge-l-recall=nan"] + RERANK[11:], "`floors` item 'rouge-l-recall=nan' must be NAME=MARGIN"),
    (RERANK[:10] + ["rouge-l-recall=inf"] + RERANK[11:], "`floors`: the margin of 'rouge-l-recall' must be a non-negative float, got inf"),
    (RERANK + ["--scorer-batch-size", "1000000000"], "--scorer-batch-size must be at most 4096, got 1000000000"),
    (RERANK + ["--scorer-batch-size", "-1"], "--scorer-batch-size must be a positive int"),
    (RERANK + ["--device", "gpu"], "--device must be cpu, cuda, cuda:N or mps"),
    (RERANK + ["--device", "cuda:99"], "--device cuda:99: this machine has"),
    (RERANK + ["--max-new-tokens", "100000000"], "`max_new_tokens` must be at most 32768, got 100000000"),
    (RERANK + ["--abstractiveness", "nan"], "`abstractiveness` must be a positive float, got nan"),
    (RERANK + ["--no-repeat-ngram-size", "-1"], "`no_repeat_ngram_size` must be a non-negative int"),
    (RERANK + ["--max-concurrency", "0"], "--max-concurrency must be a positive int"),
    (RERANK[:8] + ["rouge-l-recall,rouge-l-recall"] + RERANK[9:], "`scorers` lists a name twice"),
    # evaluate
    (EVAL + ["--metrics", "rouge-l-recall", "--score-cache", "{w}/data.jsonl"],
     "--score-cache {w}/data.jsonl is not a directory"),
    (EVAL + ["--metrics", "mint,mint"], "--metrics lists a metric twice: mint, mint"),
    (EVAL + ["--metrics", "rouge-l-recall,rouge-l-recall"], "--metrics lists a metric twice"),
    (EVAL + ["--metrics", "rouge-l-recall", "--scorer-batch-size", "1000000000"], "--scorer-batch-size must be at most 4096, got 1000000000"),
    # meta-eval
    (META[:4] + ["rouge-l-recall,rouge-l-recall"] + META[5:], "--scorers lists a scorer twice: rouge-l-recall, rouge-l-recall"),
    (META[:4] + ["lm-pmi,lm-pmi"] + META[5:], "--scorers lists a scorer twice"),
    (META + ["--n-bootstrap", "1000000000"], "--n-bootstrap must be at most 1000000, got 1000000000"),
    (META + ["--n-bootstrap", "-5"], "--n-bootstrap must be a positive int"),
    (META + ["--seed", "-1"], "--seed must be a non-negative int"),
    (META + ["--seed", "1099511627776"], "--seed must be at most 4294967295, got 1099511627776"),
    (META + ["--limit", "0"], "--limit must be a positive int"),
    (META + ["--device", "cuda:99"], "--device cuda:99: this machine has"),
    (META + ["--device", "tpu"], "--device must be cpu, cuda, cuda:N or mps, got 'tpu'"),
    (META + ["--scorer-batch-size", "0"], "--scorer-batch-size must be a positive int"),
    # calibrate
    (CALIB + ["--alpha", "inf"], "--alpha must be 'auto' or a finite non-negative number, got 'inf'"),
    (CALIB + ["--alpha", "nan"], "--alpha must be 'auto' or a finite non-negative number, got 'nan'"),
    (CALIB + ["--alpha", "1e999"], "--alpha must be 'auto' or a finite non-negative number"),
    (CALIB + ["--alpha=-inf"], "--alpha must be 'auto' or a finite non-negative number"),
    (CALIB + ["--alpha", "big"], "--alpha must be 'auto' or a finite non-negative number, got 'big'"),
    (CALIB + ["--folds", "1000000000"], "--folds must be at most 10000, got 1000000000"),
    (CALIB + ["--n-bootstrap", "1000000000"], "--n-bootstrap must be at most 1000000, got 1000000000"),
    (CALIB + ["--seed", "-1"], "--seed must be a non-negative int"),
    (CALIB + ["--device", "cuda:99"], "--device cuda:99: this machine has"),
    (CALIB + ["--limit", "1000000000000"], "--limit must be at most 1000000000, got 1000000000000"),
    # report and demo
    (["report", "--results", "{w}/notsqlite.sqlite", "--out", "{w}/rep", "--bootstrap", "1000000000"],
     "--bootstrap must be at most 1000000, got 1000000000"),
    (["report", "--results", "{w}/notsqlite.sqlite", "--out", "{w}/rep", "--seed", "-1"],
     "--seed must be a non-negative int"),
    (["demo", "--candidates", "100000"], "--candidates must be at most 1024, got 100000"),
    (["demo", "--max-new-tokens", "1000000000"], "--max-new-tokens must be at most 32768, got 1000000000"),
    (["demo", "--seed", "-1"], "--seed must be a non-negative int"),
]

MODEL_CASES = [
    (_gen("data.jsonl")[:-1] + ["{w}/emptymodel"], "--model: {w}/emptymodel holds no model (no config.json"),
    (_gen("data.jsonl")[:-1] + ["{w}/cfgonly"], "--model: {w}/cfgonly has config.json but no model weights"),
    (_gen("data.jsonl")[:-1] + ["{w}/corrupt"], "--model: {w}/corrupt/model.safetensors is not a safetensors file"),
    (_gen("data.jsonl")[:-1] + ["{w}/badcfg"], "{w}/badcfg/config.json: invalid JSON"),
    (_gen("data.jsonl")[:-1] + ["{w}/listcfg"], "--model: {w}/listcfg/config.json must hold a JSON object"),
    (_gen("data.jsonl")[:-1] + ["{w}/adapter_noweights"], "has adapter_config.json but no adapter weights"),
    (_gen("data.jsonl")[:-1] + ["{w}/weightsdir"], "--model: {w}/weightsdir/model.safetensors is not a regular file"),
    (_gen("data.jsonl")[:-1] + ["{w}/data.jsonl"], "--model: {w}/data.jsonl is a file; give a model folder"),
    (RERANK[:6] + ["{w}/emptymodel"] + RERANK[7:], "--model: {w}/emptymodel holds no model"),
    (RERANK[:6] + ["{w}/corrupt"] + RERANK[7:], "is not a safetensors file"),
    (["demo", "--model", "{w}/emptymodel"], "--model: {w}/emptymodel holds no model"),
    (EVAL + ["--metrics", "lm-pmi", "--lm-model", "{w}/nomodel"], "--lm-model: not found locally: {w}/nomodel"),
    (EVAL + ["--metrics", "lm-pmi", "--lm-model", "{w}/emptymodel"], "--lm-model: {w}/emptymodel holds no model"),
    (EVAL + ["--metrics", "lm-pmi", "--lm-model", "{w}/corrupt"], "--lm-model: {w}/corrupt/model.safetensors is not"),
    (EVAL + ["--metrics", "lm-pmi", "--lm-model", "no-such-org/no-such-lm"], "--lm-model: not found locally"),
    (EVAL + ["--metrics", "llm-coverage", "--judge-model", "{w}/nomodel"], "--judge-model: not found locally"),
    (EVAL + ["--metrics", "alignscore", "--align-model", "{w}/missing.ckpt"], "--align-model: not found locally"),
    (EVAL + ["--metrics", "alignscore", "--align-model", "{w}/data.jsonl"],
     "--align-model: {w}/data.jsonl is a file; give a model folder or a .ckpt"),
    (EVAL + ["--metrics", "alignscore", "--align-model", "{w}/emptymodel"], "--align-model: {w}/emptymodel holds no model"),
    (EVAL + ["--metrics", "fairsumm-bertscore", "--embed-model", "{w}/nomodel"], "--embed-model: not found locally"),
    (EVAL + ["--metrics", "alignscore", "--align-base", "{w}/nomodel"], "--align-base: not found locally"),
    (META[:4] + ["lm-pmi"] + META[5:] + ["--lm-model", "{w}/nomodel"], "--lm-model: not found locally"),
    (CALIB[:6] + ["lm-pmi"] + CALIB[7:] + ["--lm-model", "{w}/emptymodel"], "--lm-model: {w}/emptymodel holds no model"),
    (RERANK[:8] + ["lm-pmi"] + RERANK[9:] + ["--lm-model", "{w}/nomodel"], "--lm-model: not found locally"),
    (RERANK[:8] + ["fluency"] + RERANK[9:] + ["--lm-model", "{w}/cfgonly"], "--lm-model: {w}/cfgonly has config.json but no"),
    (_gen("data.jsonl")[:-1] + ["{w}/fifomodel"], "--model: {w}/fifomodel/model.safetensors is not a regular file"),
    (EVAL + ["--metrics", "alignscore", "--align-model", "{w}/bad.ckpt"],
     "{w}/bad.ckpt: not a torch checkpoint (no zip or pickle header)"),
    (EVAL + ["--metrics", "alignscore", "--align-model", "{w}/pickle.ckpt"],
     "{w}/pickle.ckpt: cannot be read with torch.load(weights_only=True)"),
]

SIDE_FILE_CASES = [
    (_gen("data.jsonl")[:4] + ["{w}/m_invalid.jsonl", "--model", "{m}"], "m_invalid.jsonl.manifest.json: invalid JSON"),
    (_gen("data.jsonl")[:4] + ["{w}/m_list.jsonl", "--model", "{m}"], "m_list.jsonl.manifest.json: must hold a JSON object"),
    (_gen("data.jsonl")[:4] + ["{w}/m_sur.jsonl", "--model", "{m}"], "`command` holds a lone surrogate"),
    (_gen("data.jsonl")[:4] + ["{w}/m_nan.jsonl", "--model", "{m}"], "m_nan.jsonl.manifest.json: `NaN` is not valid JSON"),
    (_gen("data.jsonl")[:4] + ["{w}/m_deep.jsonl", "--model", "{m}"], "m_deep.jsonl.manifest.json: JSON nested deeper"),
    (META[:6] + ["{w}/fresh.jsonl"] + META[7:-1] + ["{w}/cache_list"], "cache_list/rouge-l-recall.jsonl:1: `$` must be an object"),
    (META[:6] + ["{w}/fresh.jsonl"] + META[7:-1] + ["{w}/cache_key"], "cache_key/rouge-l-recall.jsonl:1: `key` must be a string, got a number"),
    (META[:6] + ["{w}/fresh.jsonl"] + META[7:-1] + ["{w}/cache_result"], "`result` must be an object with a `score`, got a list"),
    (META[:6] + ["{w}/fresh.jsonl"] + META[7:-1] + ["{w}/cache_score"], "`result.score` must be a number, got a string"),
    (META[:6] + ["{w}/fresh.jsonl"] + META[7:-1] + ["{w}/cache_mid"], "cache_mid/rouge-l-recall.jsonl:1: invalid JSON"),
    (META[:6] + ["{w}/fresh.jsonl"] + META[7:-1] + ["{w}/cache_sur"], "cache_sur/rouge-l-recall.jsonl:1: `key` holds a lone surrogate"),
    (META[:6] + ["{w}/fresh.jsonl"] + META[7:-1] + ["{w}/cache_latin1"], "cache_latin1/rouge-l-recall.jsonl:1: not UTF-8 text"),
    (["report", "--results", "{w}/st_metrics_list.sqlite", "--out", "{w}/rep"], "`metrics` must be a JSON object"),
    (["report", "--results", "{w}/st_metrics_invalid.sqlite", "--out", "{w}/rep"], "invalid JSON"),
    (["report", "--results", "{w}/st_metrics_value.sqlite", "--out", "{w}/rep"], "`metrics.mint` must be a number or null"),
    (["report", "--results", "{w}/st_rerank_list.sqlite", "--out", "{w}/rep"], "`rerank` must be a JSON object or null"),
    (["report", "--results", "{w}/st_settings_list.sqlite", "--out", "{w}/rep"], "`settings` must be a JSON object"),
    (["report", "--results", "{w}/st_seed_text.sqlite", "--out", "{w}/rep"], "`seed` must be an integer"),
    (["report", "--results", "{w}/st_index_text.sqlite", "--out", "{w}/rep"], "`example_index` must be an integer or null"),
    (["report", "--results", "{w}/st_sur.sqlite", "--out", "{w}/rep"], "holds a lone surrogate"),
]

ROUND2 = {
    "jsonl": JSONL_CASES, "fairsumm": FAIRSUMM_CASES, "flipside": FLIPSIDE_CASES, "csv": CSV_CASES,
    "controlled": CONTROLLED_CASES, "calibration": CALIBRATION_CASES, "yaml": YAML_CASES,
    "numbers": NUMBER_CASES, "models": MODEL_CASES, "side-files": SIDE_FILE_CASES,
}
ROUND2_CASES = [(kind, argv, needle) for kind, cases in ROUND2.items() for argv, needle in cases]


@pytest.fixture(scope="module")
def work2(tmp_path_factory, model_dir):
    """One folder with every round-2 input; each case checks that none of its files changed."""
    folder = make_inputs(tmp_path_factory.mktemp("round2"))
    _write_bad_files(folder)
    os.mkfifo(folder / "fifomodel" / "model.safetensors")  # weights that would block a reader forever
    for name, sql in STORES.items():
        _results_with(folder, name, sql)
    return folder


class _Hang(Exception):
    pass


def _run_bounded(argv: list[str]) -> object:
    """``main(argv)``; a run past HANG_SECONDS raises (a hang guard, not a timing assertion)."""
    import signal

    def alarm(signum, frame):  # noqa: ANN001
        raise _Hang(f"no answer within {HANG_SECONDS} s: {argv}")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG_SECONDS)
    try:
        return main(argv)
    except SystemExit as exit_:  # argparse rejects the flag itself
        return exit_.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _round2_ids() -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for kind, argv, _ in ROUND2_CASES:
        files = [a.rsplit("/", 1)[-1] for a in argv if a.startswith("{w}/") and a not in (
            "{w}/prior.jsonl", "{w}/calib.json", "{w}/rep", "{w}/run")]
        flags = [a for a in argv[1:] if a.startswith("--") and a not in (
            "--data", "--out", "--model", "--summaries", "--scorers", "--floors", "--candidates",
            "--target", "--folds", "--score-cache", "--results", "--config")]
        label = f"{kind}:{argv[0]}:{'+'.join(files[-1:] + flags) or 'args'}"
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


@pytest.mark.parametrize("kind, argv, needle", ROUND2_CASES, ids=_round2_ids())
def test_round2_bad_input_exits_2_with_one_line_and_changes_nothing(
    work2, model_dir, capsys, kind, argv, needle,
):
    argv = [a.replace("{w}", str(work2)).replace("{m}", str(model_dir)) for a in argv]
    needle = needle.replace("{w}", str(work2))
    before = _snapshot(work2)
    code = _run_bounded(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, (code, err)
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"evenhand {argv[0]}: error: "), err
    assert "Traceback" not in captured.err + captured.out
    assert needle in err, err
    assert _snapshot(work2) == before


#: Checks that need the tokenizer and the model's context: the error is the last line, on its own,
#: after the model loaded and before any progress bar started.
AFTER_LOAD = [
    (["generate", "--data", "{w}/long.jsonl", "--out", "{w}/fresh.jsonl", "--model", "{m}", *_NUM],
     "long.jsonl:1: example 'a': `documents` take"),
    (["rerank", "--data", "{w}/long.jsonl", "--out", "{w}/fresh.jsonl", "--model", "{m}",
      "--scorers", "rouge-l-recall", "--floors", "none", "--candidates", "2", *_NUM],
     "long.jsonl:1: example 'a': `documents` take"),
]


@pytest.mark.parametrize("argv, needle", AFTER_LOAD, ids=["generate", "rerank"])
def test_prompt_too_long_is_one_clean_line_after_the_load(work2, model_dir, capsys, argv, needle):
    (work2 / "long.jsonl").write_text(_line(_rec(documents=[
        {"text": "word " * 3000, "group": "pos"}, {"text": "The service was slow.", "group": "neg"}])))
    argv = [a.replace("{w}", str(work2)).replace("{m}", str(model_dir)) for a in argv]
    before = _snapshot(work2)
    code = _run_bounded(argv)
    captured = capsys.readouterr()
    assert code == 2
    lines = [part for line in captured.err.splitlines() for part in line.split("\r")]
    errors = [line for line in lines if "error:" in line]
    assert errors == [lines[-1]], captured.err  # one error line, the last, nothing glued to it
    assert lines[-1].startswith(f"evenhand {argv[0]}: error: ") and needle in lines[-1]
    assert not any(line.startswith(argv[0] + ":") for line in lines)  # no bar of the command started
    assert "Traceback" not in captured.err + captured.out
    assert _snapshot(work2) == before


def test_csv_with_a_byte_order_mark_reads_like_one_without(tmp_path):
    """A spreadsheet's UTF-8 CSV starts with a BOM; the first column is still `example_id`."""
    from evenhand.evaluation.data.loaders import load_examples

    text = "example_id,text,group\na,Great food.,pos\na,Slow service.,neg\nb,Nice rooms.,pos\n"
    (tmp_path / "plain.csv").write_text(text, encoding="utf-8")
    (tmp_path / "bom.csv").write_text("\ufeff" + text, encoding="utf-8")
    plain, bom = load_examples(tmp_path / "plain.csv"), load_examples(tmp_path / "bom.csv")
    assert [e.id for e in bom] == ["a", "b"]
    assert [e.texts for e in bom] == [["Great food.", "Slow service."], ["Nice rooms."]]
    assert [e.labels for e in bom] == [["pos", "neg"], ["pos"]]
    assert [e.to_dict() for e in bom] == [e.to_dict() for e in plain]
    assert bom[1].where() == f"{tmp_path / 'bom.csv'}:4"


def test_a_billion_laughs_yaml_is_refused_before_it_expands(tmp_path):
    """The 1 KB file would expand to 9**9 strings; the alias check reads only its events."""
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.io.parsing import safe_yaml

    assert len(LAUGHS) < 1024
    with pytest.raises(DataError, match=r"laughs.yaml:1: YAML anchors and aliases"):
        safe_yaml(LAUGHS, "laughs.yaml")
    assert safe_yaml("a: [1, 2]\nb: {c: .inf}\n", "ok.yaml") == {"a": [1, 2], "b": {"c": float("inf")}}


def test_unreadable_weights_are_reported_as_unreadable(work, model_dir, capsys, monkeypatch, tmp_path_factory):
    """Weights the user may not read: "cannot read ... (Permission denied)", never "No such file"."""
    import shutil

    folder = tmp_path_factory.mktemp("locked") / "tiny"
    shutil.copytree(model_dir, folder)
    weights = folder / "model.safetensors"
    real_open = Path.open

    def refuse(self, *args, **kwargs):  # what a file of mode 000 gives a non-root user
        if self == weights:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    before = _snapshot(work)
    code = _run_bounded(["generate", "--data", str(work / "data.jsonl"), "--out", str(work / "prior.jsonl"),
                         "--model", str(folder)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"--model: cannot read {weights} (Permission denied); check its permissions" in err
    assert "No such file" not in err
    assert _snapshot(work) == before


def test_json_files_with_a_byte_order_mark_read_like_ones_without(tmp_path):
    """Editors that save "UTF-8 with BOM": JSONL, FairSumm JSON and YAML read the same."""
    from evenhand.evaluation.data.configs import read_yaml_mapping
    from evenhand.evaluation.data.loaders import load_examples

    (tmp_path / "bom.jsonl").write_text("\ufeff" + VALID, encoding="utf-8")
    (tmp_path / "bom_gold.json").write_text("\ufeff" + _fairsumm(_fs()), encoding="utf-8")
    (tmp_path / "bom.yaml").write_text("\ufeffdata: x.jsonl\n", encoding="utf-8")
    (example,) = load_examples(tmp_path / "bom.jsonl")
    assert example.id == "a" and example.labels == ["pos", "neg"] and example.where().endswith("bom.jsonl:1")
    (sample,) = load_examples(tmp_path / "bom_gold.json")
    assert sample.texts == ["Great.", "Bad."] and sample.group_values == ["1", "5"]
    assert sample.references == ["Mixed."]
    assert read_yaml_mapping(tmp_path / "bom.yaml") == {"data": "x.jsonl"}


# --- round 3: size bounds, invisible text, ids that print the same ------------------------------------

BIG_DOC = "word " * 220  # 1,100 characters: over the lowered text limit below
ROUND3_FILES: dict[str, str] = {
    "big_doc.jsonl": _line(_rec(documents=[{"text": BIG_DOC, "group": "pos"}, {"text": "Bad.", "group": "neg"}])),
    "zw_doc.jsonl": _line(_rec(documents=[{"text": "\u200b\u2060\ufeff", "group": "pos"},
                                          {"text": "Bad.", "group": "neg"}])),
    "zw_ids.jsonl": _line(_rec(id="a")) + _line(_rec(id="a\u200b")),
    "zw_ids.csv": "example_id,text,group\na,Great.,pos\na\u2060,Bad.,neg\n",
    "big_summary.jsonl": '{"id": "a", "summary": "' + BIG_DOC + '"}\n{"id": "b", "summary": "Nice."}\n',
    "big_controlled.json": json.dumps([
        {"source": ["The mayor cut taxes."], "summaries": [
            {"summary": BIG_DOC, "coverage": 1.0, "faithfulness": 1.0},
            {"summary": "Aliens landed.", "coverage": 0.0, "faithfulness": 0.0}]}]),
    "sweep_big.yaml": "datasets:\n  d: big_doc.jsonl\nbase:\n  max_new_tokens: 4\n",
}
#: (argv, text the one line must hold); run with EVENHAND_MAX_TEXT_CHARS=1000
ROUND3_CASES: list[tuple[list[str], str]] = [
    (["generate", "--data", "{w}/big_doc.jsonl", "--out", "{w}/o.jsonl", "--model", "{m}"],
     "`documents` holds 1,"),
    (["rerank", "--data", "{w}/big_doc.jsonl", "--out", "{w}/o.jsonl", "--model", "{m}",
      "--scorers", "rouge-l-recall"], "more than the limit of 1,000; split it, or raise the limit with "
     "EVENHAND_MAX_TEXT_CHARS"),
    (["evaluate", "--data", "{w}/data.jsonl", "--summaries", "{w}/big_summary.jsonl", "--out", "{w}/o.jsonl"],
     "big_summary.jsonl:1: `summary` holds"),
    (["meta-eval", "--data", "{w}/big_controlled.json", "--scorers", "rouge-l-recall", "--out", "{w}/o.jsonl",
      "--score-cache", "none"], "`summaries[0].summary` holds"),
    (["calibrate", "--data", "{w}/big_controlled.json", "--target", "coverage", "--scorers", "rouge-l-recall",
      "--out", "{w}/c.json", "--folds", "2"], "`summaries[0].summary` holds"),
    (["train", "--data", "{w}/big_doc.jsonl", "--out", "{w}/run"], "`documents` holds"),
    (["sweep", "--config", "{w}/sweep_big.yaml", "--quiet", "--results", "{w}/r.sqlite"], "`documents` holds"),
    (["generate", "--data", "{w}/zw_doc.jsonl", "--out", "{w}/o.jsonl", "--model", "{m}"],
     "`documents[0].text` is empty (or only invisible characters)"),
    (["evaluate", "--data", "{w}/zw_ids.jsonl", "--summaries", "references", "--out", "{w}/o.jsonl"],
     "differ only by invisible characters"),
    (["generate", "--data", "{w}/zw_ids.csv", "--out", "{w}/o.jsonl", "--model", "{m}"],
     "differ only by invisible characters"),
]


@pytest.mark.parametrize("argv, needle", ROUND3_CASES, ids=[f"{a[0]}:{i}" for i, (a, _) in enumerate(ROUND3_CASES)])
def test_round3_size_bounds_exit_2_with_one_line_and_change_nothing(work, model_dir, capsys, monkeypatch,
                                                                     argv, needle):
    for name, text in ROUND3_FILES.items():
        (work / name).write_text(text)
    monkeypatch.setenv("EVENHAND_MAX_TEXT_CHARS", "1000")
    argv = [a.replace("{w}", str(work)).replace("{m}", str(model_dir)) for a in argv]
    before = _snapshot(work)
    code = _run_bounded(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2 and len(err.splitlines()) == 1, (code, err)
    assert err.startswith(f"evenhand {argv[0]}: error: ") and needle in err, err
    assert "Traceback" not in captured.err + captured.out
    assert _snapshot(work) == before


def test_a_50_mb_one_line_document_is_refused_before_tokenizing(work, model_dir, capsys, monkeypatch):
    """The default bound (1,000,000 characters) refuses it; the tokenizer never sees it (never even loads)."""
    import transformers

    loads: list[str] = []
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        lambda *a, **k: loads.append(str(a[:1])) or pytest.fail("a tokenizer was loaded"))
    (work / "huge50.jsonl").write_text(_line(_rec(documents=[
        {"text": "x" * 50_000_000, "group": "pos"}, {"text": "Bad.", "group": "neg"}])))
    before = _snapshot(work)
    code = _run_bounded(["generate", "--data", str(work / "huge50.jsonl"), "--out", str(work / "o.jsonl"),
                         "--model", str(model_dir)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "`documents` holds 50,000,00" in err and "limit of 1,000,000" in err, err
    assert _snapshot(work) == before and loads == []


def test_a_file_over_the_size_bound_is_refused_before_it_is_read(work, capsys, monkeypatch):
    (work / "two_mb.jsonl").write_text(_line(_rec()) + " " * (2 * 2**20))
    monkeypatch.setenv("EVENHAND_MAX_FILE_MB", "1")
    code = _run_bounded(["evaluate", "--data", str(work / "two_mb.jsonl"), "--summaries", "references",
                         "--out", str(work / "o.jsonl")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "two_mb.jsonl: 2 MiB" in err, err
    assert "more than the limit of 1 MiB" in err and "EVENHAND_MAX_FILE_MB" in err, err


# --- round 3: the last tracebacks ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def adapters(tmp_path_factory, model_dir):
    """A LoRA adapter of the tiny model, tampered with in each way a user's copy may be."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from evenhand.decoding.models import load_tokenizer, tiny_model

    root = tmp_path_factory.mktemp("adapters")
    wide, tok = tiny_model("causal", seed=1, tokenizer=load_tokenizer(), hidden_size=96)
    wide.save_pretrained(str(root / "wide"))
    tok.save_pretrained(str(root / "wide"))
    lora = get_peft_model(AutoModelForCausalLM.from_pretrained(str(model_dir)),
                          LoraConfig(r=2, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    lora.save_pretrained(str(root / "good"))
    edits = {
        "self": lambda c, p: c.update(base_model_name_or_path=str(p)),
        "missing": lambda c, p: c.pop("base_model_name_or_path"),
        "null": lambda c, p: c.update(base_model_name_or_path=None),
        "rank": lambda c, p: c.update(r=-4, base_model_name_or_path=str(model_dir)),
        "targets": lambda c, p: c.update(target_modules=["nope_proj"], base_model_name_or_path=str(model_dir)),
        "arch": lambda c, p: c.update(base_model_name_or_path=str(root / "wide")),
    }
    import shutil

    for name, edit in edits.items():
        folder = root / name
        shutil.copytree(root / "good", folder)
        config = json.loads((folder / "adapter_config.json").read_text())
        edit(config, folder)
        (folder / "adapter_config.json").write_text(json.dumps(config))
    return root


ROUND3_TRACEBACKS: list[tuple[str, list[str], str]] = [
    ("adapter-self", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{a}/self"],
     "`base_model_name_or_path` names the adapter itself"),
    ("adapter-missing", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{a}/missing"],
     "`base_model_name_or_path` must name the base model, got None"),
    ("adapter-null", ["rerank", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{a}/null",
                      "--scorers", "rouge-l-recall"], "`base_model_name_or_path` must name the base model"),
    ("adapter-rank", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{a}/rank"],
     "`r` (the LoRA rank) must be a positive int, got -4"),
    ("adapter-targets", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{a}/targets",
                         "--max-new-tokens", "4"], "the adapter does not fit its base model (Target modules"),
    ("adapter-arch", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{a}/arch",
                      "--max-new-tokens", "4"], "the adapter does not fit its base model (Error(s) in loading"),
    ("train-empty-yaml", ["train", "--config", "{w}/empty.yaml"], "sets no `data`"),
    ("train-comment-yaml", ["train", "--config", "{w}/comment.yaml"], "sets no `data`"),
    ("train-weights", ["train", "--config", "{w}/weights.yaml"], "`weights` gives 3 numbers for 2 scorers"),
    ("train-lora-target", ["train", "--config", "{w}/target.yaml"], "`lora_target` nope_proj: no such module"),
    ("train-min-gap", ["train", "--data", "{w}/data.jsonl", "--out", "{w}/run", "--min-gap", "1e30"],
     "`min_gap` 1e+30 can never be met"),
    ("fair-meaning-encoder", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{m}",
                              "--fair", "equal", "--fair-meaning", "1", "--fair-meaning-encoder", "{w}/notenc",
                              "--max-new-tokens", "4"], "--fair-meaning-encoder"),
    ("temperature-subnormal", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{m}",
                               "--do-sample", "--temperature", "1e-320"], "`temperature` must be at least 0.001"),
    ("fair-target-10000-groups", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{m}",
                                  "--fair-strength", "1", "--fair",
                                  json.dumps({f"g{i}": 1 for i in range(10_000)})],
     "`fairness` names groups ['g0', 'g1', 'g10', 'g100', 'g1000'] and 9995 more that are not among its groups"),
    ("cache-is-a-file", ["generate", "--data", "{w}/data.jsonl", "--out", "{w}/o.jsonl", "--model", "{m}"],
     "EVENHAND_CACHE="),
    *[(f"{cmd}-{flag[2:]}-{value}", [*argv, flag, value], flag)
      for cmd, argv in (("evaluate", [*EVAL[:6], "{w}/o.jsonl"]), ("meta-eval", [*META[:6], "{w}/o.jsonl", *META[7:]]),
                        ("calibrate", CALIB))
      for flag, value in (("--max-concurrency", "0"), ("--server-timeout", "inf"), ("--server-timeout", "1e30"))],
]


@pytest.mark.parametrize("case, argv, needle", ROUND3_TRACEBACKS, ids=[c for c, _, _ in ROUND3_TRACEBACKS])
def test_round3_tracebacks_are_one_line(work, model_dir, adapters, capsys, monkeypatch, case, argv, needle):
    (work / "empty.yaml").write_text("")
    (work / "comment.yaml").write_text("# nothing set yet\n")
    (work / "weights.yaml").write_text("data: data.jsonl\nout_dir: run\nscorers: rouge-l-recall,rouge-l-precision\n"
                                       "weights: [1, 2, 3]\n")
    (work / "target.yaml").write_text(f"data: data.jsonl\nout_dir: run\nmodel: {model_dir}\n"
                                      "lora_target: nope_proj\nscorers: rouge-l-recall\ndev_size: 1\niterations: 1\n"
                                      "candidates: 2\nmax_new_tokens: 4\n")
    (work / "notenc").mkdir(exist_ok=True)
    (work / "notenc" / "config.json").write_text("{}")
    (work / "notenc" / "model.safetensors").write_bytes((model_dir / "model.safetensors").read_bytes())
    if case == "cache-is-a-file":
        monkeypatch.setenv("EVENHAND_CACHE", str(work / "data.jsonl"))
    monkeypatch.chdir(work)  # the train configs name their files relative to the working folder
    argv = [a.replace("{w}", str(work)).replace("{m}", str(model_dir)).replace("{a}", str(adapters)) for a in argv]
    before = _snapshot(work)
    code = _run_bounded(argv)
    captured = capsys.readouterr()
    lines = [part for line in captured.err.splitlines() for part in line.split("\r") if part.strip()]
    errors = [line for line in lines if "error:" in line]
    assert code == 2 and errors == [lines[-1]], (code, captured.err)  # one error line, the last
    assert lines[-1].startswith(f"evenhand {argv[0]}: error: ") and needle in lines[-1], lines[-1]
    assert "Traceback" not in captured.err + captured.out
    assert _snapshot(work) == before


def test_a_sweep_prompt_past_the_context_is_one_line_before_any_bar(work, model_dir, capsys):
    """The first model's prompts are checked right after it loads, before the progress bar starts."""
    (work / "ctx.yaml").write_text(f"datasets:\n  d: data.jsonl\nbase:\n  model: {model_dir}\n  max_new_tokens: 2040\n")
    before = _snapshot(work)
    code = _run_bounded(["sweep", "--config", str(work / "ctx.yaml"), "--results", str(work / "ctx.sqlite")])
    captured = capsys.readouterr()
    lines = [part for line in captured.err.splitlines() for part in line.split("\r") if part.strip()]
    assert code == 2 and len(lines) == 1, captured.err
    assert lines[0].startswith("evenhand sweep: error: ") and "more than the model's context allows" in lines[0]
    assert "Traceback" not in captured.err + captured.out
    after = _snapshot(work)
    assert {k: v for k, v in after.items() if k in before} == before  # only the new results file appeared
