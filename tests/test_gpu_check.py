"""The GPU check (benchmarks/gpu_check.py) as a CPU dry run, and the GPU machine's transfer accounting.

The dry run decodes on two CPU instances of one model, so every comparison it reports
must be exact; it runs with the packages that neither the GPU machine has nor
``make gpu-wheels`` carries hidden from import (spacy, rouge-score, vLLM), so the check
cannot come to need them unnoticed.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import shared_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ is a folder of the checkout, not an installed package

from benchmarks import gpu_check, gpu_wheels  # noqa: E402

#: Neither on the GPU machine nor carried (benchmarks/gpu_wheels.py): the check must not import them.
HIDDEN = ("spacy", "rouge_score", "vllm")


def hiding(hidden: tuple[str, ...]) -> str:
    """Code to run first in a dry run's interpreter: every import finder reports the ``hidden`` top-level
    modules as absent (``import`` raises, ``find_spec`` gives None, as where they are not installed)."""
    return f"""
import sys
class Hide:
    def __init__(self, finder):
        self.finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {hidden!r}:
            return None
        return self.finder.find_spec(name, path, target)
    def __getattr__(self, attr):
        return getattr(self.finder, attr)
sys.meta_path[:] = [Hide(f) if hasattr(f, "find_spec") else f for f in sys.meta_path]
"""


HIDE = hiding(HIDDEN)


def event(name: str, parent: SimpleNamespace | None = None) -> SimpleNamespace:
    return SimpleNamespace(name=name, cpu_parent=parent)


def test_count_syncs_attributes_sync_events_to_the_enclosing_evenhand_range():
    step1 = event("evenhand:AbstractivenessProcessor")
    step2 = event("evenhand:AbstractivenessProcessor")
    inner = event("aten::where", step2)
    beam = event("evenhand:beam_step")
    events = [
        step1, step2, inner,
        event("aten::_local_scalar_dense", inner),          # nested two levels down: still the processor's
        event("aten::_local_scalar_dense", event("aten::is_nonzero", beam)),
        beam,
        event("aten::nonzero", None),                      # outside every range: only in "all"
        event("aten::add", step1),                          # not a sync
        event("cudaStreamSynchronize", beam),
    ]
    found = gpu_check.count_syncs(events)
    assert found["evenhand:AbstractivenessProcessor"] == {"calls": 2, "aten::_local_scalar_dense": 1}
    assert found["evenhand:beam_step"] == {"calls": 1, "aten::_local_scalar_dense": 1, "cudaStreamSynchronize": 1}
    assert found["all"] == {"aten::_local_scalar_dense": 2, "aten::nonzero": 1, "cudaStreamSynchronize": 1}


def test_first_difference_is_the_first_differing_word():
    assert gpu_check.first_difference("a b c", "a b c") == 3
    assert gpu_check.first_difference("a b c", "a x c") == 1
    assert gpu_check.first_difference("a b", "a b c d") == 2


def test_carry_report_counts_tracked_untracked_and_carried_files_but_not_other_ignored_ones(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("/.whl/\n/big/\n")          # 13 bytes, tracked
    (tmp_path / "tracked.py").write_bytes(b"x" * 1000)
    git("add", ".gitignore", "tracked.py")
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")
    (tmp_path / "untracked.txt").write_bytes(b"y" * 500)             # travels: not ignored
    (tmp_path / ".whl").mkdir()
    (tmp_path / ".whl" / "a.whl").write_bytes(b"z" * 300)            # travels: carried
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "blob").write_bytes(b"w" * 10_000)           # stays: ignored, not carried
    report = gpu_wheels.carry_report(tmp_path, carried=(".whl",), limit=2000)
    assert report == {"tree": 1513, ".whl": 300, "total": 1813, "fits": True}
    assert gpu_wheels.carry_report(tmp_path, carried=(".whl", "big"), limit=2000)["fits"] is False
    text = gpu_wheels.format_report(report, limit=2000)
    assert "total" in text and "fits" in text


def test_staged_parts_round_trip_and_refuse_a_missing_or_corrupt_part(tmp_path, monkeypatch):
    site = tmp_path / "site"
    for module, dist in gpu_wheels.MODEL_PACKAGES:
        (site / module).mkdir(parents=True)
        (site / module / "weights.bin").write_bytes(bytes(range(256)) * 40)
        (site / f"{dist}-0.1.dist-info").mkdir()
        (site / f"{dist}-0.1.dist-info" / "METADATA").write_text("Name: x\n")
    monkeypatch.setattr(gpu_wheels, "_site_packages", lambda: site)
    stage = tmp_path / "stage"
    parts = gpu_wheels.stage_models(stage, part_size=700)
    assert len(parts) >= 2 and all(p.stat().st_size <= 700 for p in parts)
    target = tmp_path / "target"
    assert "unpacked" in gpu_wheels.unstage_models(stage, target)
    for module, _ in gpu_wheels.MODEL_PACKAGES:
        assert (target / module / "weights.bin").read_bytes() == bytes(range(256)) * 40
    parts[1].write_bytes(b"corrupt")
    assert "corrupt" in gpu_wheels.unstage_models(stage, tmp_path / "t2")
    parts[-1].unlink()
    assert "missing" in gpu_wheels.unstage_models(stage, tmp_path / "t3")


@pytest.mark.slow
def test_gpu_check_cpu_dry_run_is_exact_and_complete(tmp_path):
    data = shared_file("perspectivesumm/amazon_gold.json")
    out = tmp_path / "out"
    argv = ["--device", "cpu", "--model", "tiny", "--sources", "2", "--batch-size", "2",
            "--max-new-tokens", "6", "--profile-tokens", "4", "--dpo-tokens", "6",
            "--data", str(data), "--out", str(out), "--work", str(tmp_path / "work"), "--strict"]
    run = "import runpy; sys.argv = ['gpu_check', *sys.argv[1:]]; runpy.run_module('benchmarks.gpu_check', run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", HIDE + run, *argv], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "gpu_check.json").read_text())
    assert result["errors"] == {}
    assert result["sources"] == 2 and result["model"]["kind"] == "tiny"

    rows = result["parity"]["rows"]
    expected = [(s, m) for s in gpu_check.SETTINGS for m in gpu_check.SEARCHES
                if not (m == "greedy" and s in gpu_check.BEAM_ONLY)]
    assert [(r["setting"], r["search"]) for r in rows] == expected
    for r in rows:
        assert r["differ"] == 0 and r["differences"] == []  # two CPU instances: token for token
        for key in ("cpu_per_s", "device_per_s", "speedup", "cost_vs_plain", "cost_per_token_vs_plain"):
            assert math.isfinite(r[key]) and r[key] > 0, (r["setting"], key, r[key])
        assert r["device_tokens"] == r["cpu_tokens"] > 0
        assert r["speedup"] == pytest.approx(r["device_per_s"] / r["cpu_per_s"])
    for search in ("greedy", "beam"):
        plain = next(r for r in rows if r["setting"] == "plain" and r["search"] == search)
        assert plain["cost_vs_plain"] == 1.0
    assert result["parity"]["numerics"]["dtype"] == "float32"

    scorers = result["scorers"]["rows"]
    assert [r["scorer"] for r in scorers] == ["lm-pmi", "fluency", "alignscore (MiniLM fallback)"]
    for r in scorers:
        assert r["n"] == 2 and r["max_abs_diff"] == 0.0 and r["within_tolerance"]
        assert math.isfinite(r["cpu_mean"]) and r["cpu_mean"] == r["device_mean"]

    syncs = {r["setting"]: r for r in result["syncs"]["rows"]}
    assert list(syncs) == list(gpu_check.SETTINGS)
    for name, processor in (("--abstractiveness 2", "AbstractivenessProcessor"),
                            ("--fair-strength 3", "GroupCoverageProcessor")):
        ranges = syncs[name]["ranges"]
        assert ranges[processor]["calls"] == syncs[name]["steps"] > 0  # once per decoding step
        assert ranges[processor]["syncs"] == 0  # the goal: no host sync inside the processors
    assert syncs["plain"]["ranges"] == {}
    for name in ("--fair-beam 1", "--fair-meaning 1"):
        # fair beam search's step asks once whether the search is over (transformers' loop does too)
        assert syncs[name]["ranges"]["beam_step"]["syncs_per_step"] == 1.0

    dpo = result["dpo"]
    assert {"adapter_config.json", "adapter_model.safetensors"} <= set(dpo["adapter_files"])
    assert dpo["lora_tensors"] > 0 and dpo["lora_device"] == "cpu"
    assert dpo["train_steps"] >= 1 and math.isfinite(dpo["train_loss"])
    assert isinstance(dpo["summary"], str) and dpo["summary"]

    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.json", "gpu_check.md"]  # all that $OUT holds
    table = (out / "gpu_check.md").read_text()
    assert "| plain | greedy |" in table and "| lm-pmi | 2 | 0.00e+00 | yes |" in table
    assert table.strip() in proc.stdout  # printed too
