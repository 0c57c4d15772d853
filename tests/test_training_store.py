"""training/store.py: the run folder — atomic iteration commits, stale leftovers, resume checks."""

from __future__ import annotations

import json

import pytest

from evenhand.training.config import DPORRConfig
from evenhand.training.store import RunStore


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_commit_writes_an_iteration_whole_and_the_manifest(tmp_path):
    store = RunStore(tmp_path / "run")
    (store.iteration_dir(2) / "adapter").mkdir(parents=True)  # a killed iteration: no summary.json
    assert store.finished() == [] and store.last_trained() == 0

    def adapter(path):
        path.mkdir()
        (path / "adapter_model.safetensors").write_bytes(b"x")

    store.commit(0, {"dev.jsonl": [{"id": "a"}]}, {"iteration": 0})
    store.commit(2, {"candidates.jsonl": [{"id": "b"}, {"id": "c"}]}, {"iteration": 2}, save_adapter=adapter,
                 manifest=lambda: {"finished": store.finished(), "iterations": store.summaries()})
    assert store.finished() == [0, 2] and store.last_trained() == 2
    assert _rows(store.iteration_dir(2) / "candidates.jsonl") == [{"id": "b"}, {"id": "c"}]
    assert (store.adapter_dir(2) / "adapter_model.safetensors").read_bytes() == b"x"
    assert store.read_manifest() == {"finished": [0, 2], "iterations": [{"iteration": 0}, {"iteration": 2}]}
    assert sorted(p.name for p in store.out.iterdir()) == ["iter_0", "iter_2", "manifest.json"]


def test_a_failed_commit_leaves_no_iteration(tmp_path):
    store = RunStore(tmp_path / "run")

    def broken(path):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        store.commit(1, {"dev.jsonl": []}, {"iteration": 1}, save_adapter=broken)
    assert store.finished() == [] and list(store.out.iterdir()) == []


def test_clean_stale_removes_only_leftovers(tmp_path):
    store = RunStore(tmp_path / "run")
    store.commit(1, {}, {"iteration": 1})
    for name in (".iter_2.tmp-abc", ".iter_2.trainer", "notes"):
        (store.out / name).mkdir()
    assert sorted(p.name for p in store.clean_stale()) == [".iter_2.tmp-abc", ".iter_2.trainer"]
    assert sorted(p.name for p in store.out.iterdir()) == ["iter_1", "notes"]


def test_check_resumable_reads_fields_missing_from_old_manifests_as_defaults(tmp_path):
    store = RunStore(tmp_path)
    old = DPORRConfig(iterations=2).to_dict()
    del old["method"], old["grpo_beta"]  # a run written before GRPO existed
    store.write_manifest({"config": old})
    store.check_resumable(DPORRConfig(iterations=5))  # same settings, more iterations
    with pytest.raises(ValueError, match=r"other settings \(method: 'dpo-rr' -> 'grpo'\)"):
        store.check_resumable(DPORRConfig(method="grpo"))
