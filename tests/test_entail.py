"""The entailment model (issue 48): max-mean with a stub p, seeded training to the same bytes, the shipped file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evenhand.rerank.entail.inferencer import Inferencer, chunks, closest_by_words, max_mean


class StubModel:
    """p = a fixed value per (premise, hypothesis); records the pairs it was asked."""

    def __init__(self, table: dict[tuple[str, str], float]) -> None:
        self.table = table
        self.asked: list[tuple[str, str]] = []

    def probs(self, premises, claims, batch_size=32):
        self.asked += list(zip(premises, claims))
        return [self.table.get((p, c), 0.0) for p, c in zip(premises, claims)]


def test_max_mean_is_mean_of_each_sentences_best_chunk():
    assert max_mean([[0.2, 0.6], [0.9, 0.1]]) == pytest.approx(0.75)
    assert max_mean([[0.3], [0.1, 0.5, 0.4], [1.0]]) == pytest.approx((0.3 + 0.5 + 1.0) / 3)
    with pytest.raises(ValueError):
        max_mean([[0.3], []])


def test_chunks_keep_whole_sentences_under_the_word_limit():
    text = "One two three. Four five. Six seven eight nine ten eleven. Twelve."
    assert chunks(text, chunk_words=5) == ["One two three. Four five.", "Six seven eight nine ten eleven.", "Twelve."]


def test_inferencer_reads_each_sentence_with_its_k_closest_chunks_by_words():
    docs = ["The battery lasts a week. The case is red.", "The strap broke after two days."]
    # chunk_words=5: each sentence is a chunk; 3 chunks, k=2
    pieces = ["The battery lasts a week.", "The case is red.", "The strap broke after two days."]
    s1, s2 = "The battery lasts a week and the case is red.", "The strap broke."
    table = {(pieces[0], s1): 0.8, (pieces[1], s1): 0.4, (pieces[2], s1): 0.99,  # chunk 2 is never read for s1
             (pieces[2], s2): 0.7, (pieces[0], s2): 0.2, (pieces[1], s2): 0.1}
    model = StubModel(table)
    inf = Inferencer(model, k=2, chunk_words=5, select="words")
    [record] = inf.score([docs], [f"{s1} {s2}"])
    assert closest_by_words(s1, pieces, 2) == [0, 1]
    assert record["chunks"] == 3 and record["sentences"] == 2
    assert record["per_sentence"] == [0.8, 0.7]
    assert record["score"] == pytest.approx((0.8 + 0.7) / 2)
    assert (pieces[2], s1) not in model.asked and len(model.asked) == 4
    # k=0 reads every chunk: s1 now finds 0.99
    [all_chunks] = Inferencer(StubModel(table), k=0, chunk_words=5).score([docs], [f"{s1} {s2}"])
    assert all_chunks["score"] == pytest.approx((0.99 + 0.7) / 2)
    # a summary without a sentence scores empty_score, without asking the model
    empty_model = StubModel(table)
    assert Inferencer(empty_model, empty_score=-1.0).score([docs], ["  "])[0]["score"] == -1.0
    assert empty_model.asked == []


def _pairs_file(path: Path) -> Path:
    facts = [("The council voted to remove forty parking spaces.", "Parking spaces will be removed.",
              "The council kept every parking space."),
             ("Revenue rose 12 percent in the quarter.", "Revenue grew.", "Revenue fell 12 percent."),
             ("Most reviewers said the battery lasts a week.", "The battery life was praised.",
              "Reviewers said the battery dies in a day.")]
    rows = []
    for premise, yes, no in facts * 2:
        rows += [{"premise": premise, "hypothesis": yes, "label": 1, "source": "hand", "kind": "para"},
                 {"premise": premise, "hypothesis": no, "label": 0, "source": "hand", "kind": "contra"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.slow
def test_training_is_byte_for_byte_reproducible_and_the_file_loads(tmp_path):
    from evenhand.decoding.models import minilm_path
    from evenhand.evaluation.errors import DataError
    from evenhand.rerank.entail.model import (
        EntailOptions,
        load_model,
        read_pairs,
        save_model,
        train,
    )

    data = _pairs_file(tmp_path / "train.jsonl")
    options = EntailOptions(seed=3, batch_size=4, max_length=32, train_layers=1, max_pairs=8)
    pairs = read_pairs(data)
    folders = []
    for name in ("a", "b"):
        model, stats = train(options, pairs, minilm_path())
        folders.append(save_model(tmp_path / name, model, options, stats, data, minilm_path()))
    a, b = (f / "entail.safetensors" for f in folders)
    assert a.read_bytes() == b.read_bytes()
    meta = json.loads((folders[0] / "entail.json").read_text())
    assert meta["pairs"] == 8 and meta["steps"] == 2 and meta["options"]["train_layers"] == 1
    import hashlib

    assert meta["train_file_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert meta["sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()
    # another seed, other weights
    other, stats = train(EntailOptions(seed=4, batch_size=4, max_length=32, train_layers=1, max_pairs=8), pairs,
                         minilm_path())
    save_model(tmp_path / "c", other, options, stats, data, minilm_path())
    assert (tmp_path / "c" / "entail.safetensors").read_bytes() != a.read_bytes()

    # the shipped file holds the top layer and the head only, in float16; loaded, it scores in (0, 1)
    from safetensors.torch import load_file

    stored = load_file(str(a))
    assert {k.split(".")[3] for k in stored if k.startswith("encoder.")} == {"5"}
    assert {str(v.dtype) for v in stored.values()} == {"torch.float16"}
    loaded = load_model(folders[0], device="cpu")
    assert loaded.name == f"evenhand-entail {meta['sha256'][:8]}"
    premises = ["Revenue rose 12 percent in the quarter.", "The council voted to remove forty parking spaces."] * 2
    claims = ["Revenue grew.", "Revenue fell.", "Spaces go.", "The council kept every parking space."]
    together = loaded.probs(premises, claims, batch_size=4)
    alone = [loaded.probs([p], [c])[0] for p, c in zip(premises, claims)]
    assert all(0.0 < p < 1.0 for p in together)
    assert together == pytest.approx(alone, abs=1e-5)  # batched = unbatched
    # summaries scored together = one at a time
    inf = Inferencer(loaded, k=1, chunk_words=8, select="embedding")
    sources = [[premises[0] + " " + premises[1]], [premises[1]]]
    summaries = ["Revenue grew. Spaces go.", "The council kept every parking space."]
    both = inf.score(sources, summaries)
    single = [inf.score([s], [m])[0] for s, m in zip(sources, summaries)]
    assert [r["score"] for r in both] == pytest.approx([r["score"] for r in single], abs=1e-5)
    # the `checker` scorer on this folder without rules is the plain max-mean, and names the model
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer

    scorer = get_scorer("checker", folder=str(folders[0]), rules=False, k=1, chunk_words=8, device="cpu",
                        progress=False)
    examples = [Example(f"e{i}", [Document(docs[0], None)]) for i, docs in enumerate(sources)]
    records = scorer.score_details(examples, summaries)
    assert [r["score"] for r in records] == pytest.approx([r["score"] for r in both], abs=1e-5)
    assert records[0]["backend"].startswith(loaded.name) and records[0]["claims"] == 2
    # the folder as an alignment backend (--align-model DIR: alignscore, equal-coverage) is the same model
    from evenhand.rerank.alignment import CheckerBackend, load_backend

    backend = load_backend(str(folders[0]), device="cpu", max_length=128)
    assert isinstance(backend, CheckerBackend) and backend.name.startswith(loaded.name)
    assert backend.pair_probs(premises, claims) == pytest.approx(together, abs=1e-5)
    # Equal Coverage on the model = Li et al.'s definition on the model's values, computed here by hand:
    # P[s, d] = max over d's blocks of p(block supports s); c_d = sum_s P[s, d] / #covered units;
    # EC = mean over groups of |mean of the group's c_d - mean of all c_d|
    group_docs = [Document("Revenue rose 12 percent in the quarter. The council voted to remove forty parking "
                           "spaces.", "north"),
                  Document("Most reviewers said the battery lasts a week.", "north"),
                  Document("The council kept every parking space.", "south")]
    summary = "Revenue grew. The council kept every parking space."
    units = ["Revenue grew.", "The council kept every parking space."]
    blocks = [["Revenue rose 12 percent in the quarter.", "The council voted to remove forty parking spaces."],
              ["Most reviewers said the battery lasts a week."], ["The council kept every parking space."]]
    ec_scorer = get_scorer("equal-coverage", model=str(folders[0]), block_words=8, device="cpu",
                           progress=False)
    matrix, groups, origin = ec_scorer.coverage_matrix(Example("ec", group_docs), summary)
    assert (groups, origin) == (["north", "north", "south"], "labels")
    p = [[max(backend.pair_probs([b], [u])[0] for b in doc_blocks) for doc_blocks in blocks] for u in units]
    assert [v for row in matrix for v in row] == pytest.approx([v for row in p for v in row], abs=1e-5)
    covered = sum(1 for row in p if max(row) > 0)
    c = [sum(row[d] for row in p) / covered for d in range(3)]
    mean = sum(c) / 3
    ec = (abs((c[0] + c[1]) / 2 - mean) + abs(c[2] - mean)) / 2
    [ec_record] = ec_scorer.score_details([Example("ec", group_docs)], [summary])
    assert ec_record["ec"] == pytest.approx(ec, abs=1e-5) and ec_record["score"] == pytest.approx(-ec, abs=1e-5)
    assert ec_record["backend"].startswith(loaded.name)

    # a base model with other content is refused with one clear line
    base = tmp_path / "base"
    shutil.copytree(minilm_path(), base)
    (base / "config.json").write_text((base / "config.json").read_text() + " ", encoding="utf-8")
    with pytest.raises(DataError, match="trained on a base model with digest"):
        load_model(folders[0], device="cpu", base_model=base)
    with pytest.raises(DataError, match="no entail.safetensors"):
        load_model(tmp_path / "nowhere", device="cpu")


def test_read_pairs_names_the_bad_row_and_field(tmp_path):
    from evenhand.evaluation.errors import DataError
    from evenhand.rerank.entail.model import read_pairs

    path = tmp_path / "t.jsonl"
    path.write_text('{"premise": "a", "hypothesis": "b", "label": 1}\n{"premise": "a", "hypothesis": "b", '
                    '"label": 2}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"t.jsonl:2: `label` must be 1"):
        read_pairs(path)
    path.write_text('{"premise": "", "hypothesis": "b", "label": 1}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"t.jsonl:1: `premise`"):
        read_pairs(path)


def test_build_checker_flags_exit_with_one_line(tmp_path, capsys):
    from evenhand.cli import main

    assert main(["build-checker", "--train-file", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)]) == 2
    assert "--train-file" in capsys.readouterr().err
    data = _pairs_file(tmp_path / "train.jsonl")
    assert main(["build-checker", "--train-file", str(data)]) == 2
    assert "needs --out" in capsys.readouterr().err
    assert main(["build-checker", "--max-pairs", "5"]) == 2
    assert "--max-pairs" in capsys.readouterr().err
    # --out must be a folder (or not exist yet), checked before any training, for both models
    for flags in (["--train-file", str(data)], []):
        assert main(["build-checker", *flags, "--out", str(data)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1 and f"--out {data}: not a folder" in captured.err
    assert data.read_text(encoding="utf-8").startswith("{")  # untouched


def test_build_checker_device_is_checked_before_the_file_is_read(tmp_path, capsys):
    import torch

    from evenhand.cli import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")  # read only after the device passed
    assert main(["build-checker", "--train-file", str(bad), "--out", str(tmp_path / "m"), "--device", "gpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "device" in err and "cpu, cuda or cuda:N" in err, err
    if not torch.cuda.is_available():
        assert main(["build-checker", "--train-file", str(bad), "--out", str(tmp_path / "m"), "--device", "cuda"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--device cuda: this machine has no CUDA device" in err, err
    assert main(["build-checker", "--max-pairs", "5", "--device", "cpu"]) == 2  # an entailment-model option
    assert "--max-pairs" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
