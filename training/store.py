"""``RunStore``: the files of one training run's folder, written atomically, read back on resume.

Layout of ``out_dir``:

- ``iter_K/``: one finished iteration (``summary.json`` plus the stage files
  and ``adapter/``); a folder without ``summary.json`` is unfinished;
- ``.iter_K.tmp-*``: an iteration being written, renamed to ``iter_K`` when
  complete (``os.replace``), so ``iter_K`` appears whole or not at all;
- ``.iter_K.trainer``: the trainer's scratch folder, removed after training;
- ``manifest.json``: the config and every finished iteration's summary,
  rewritten after each commit.

Only the main process writes (``state.is_main_process``); every process waits
for it at the end of ``commit``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..evaluation.io.atomic import atomic_folder
from ..evaluation.io.json_file import write_json
from ..evaluation.io.jsonl import write_jsonl

ITER_PREFIX = "iter_"
SUMMARY = "summary.json"
MANIFEST = "manifest.json"
ADAPTER = "adapter"
#: Config fields a resumed run may change.
RESUMABLE_CHANGES = ("iterations", "progress", "out_dir", "device")


def iteration_dir(out_dir: str | Path, k: int) -> Path:
    """``out_dir/iter_k``."""
    return Path(out_dir) / f"{ITER_PREFIX}{k}"


def finished_iterations(out_dir: str | Path) -> list[int]:
    """Iterations whose folder is complete (it holds ``summary.json``), sorted."""
    out = Path(out_dir)
    if not out.is_dir():
        return []
    done = []
    for path in out.iterdir():
        suffix = path.name[len(ITER_PREFIX):]
        if path.name.startswith(ITER_PREFIX) and suffix.isdigit() and (path / SUMMARY).is_file():
            done.append(int(suffix))
    return sorted(done)


def _non_finite(value: Any, path: str) -> str | None:
    """The dotted path of the first NaN or infinite number inside ``value`` (lists and dicts too), or None."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return path
    items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}")
        if found is not None:
            return found
    return None


def read_run_manifest(out_dir: str | Path, config_cls: type | None = None) -> dict[str, Any] | None:
    """``out_dir/manifest.json`` checked before anything is resumed from it; None when there is none.

    A manifest edited or damaged since a run wrote it (invalid JSON, not an
    object, ``config`` or ``inputs`` not an object, a NaN, infinite or
    ill-typed setting) raises DataError (exit 2, one line) naming the file and
    the field, so no such value reaches a comparison, a model or the sampler.
    With ``config_cls`` the stored ``config`` must also build that dataclass
    (the checks of a YAML config); fields it no longer has are ignored.
    """
    import dataclasses

    from ..evaluation.errors import DataError
    from ..evaluation.io.parsing import parse_json
    from ..evaluation.io.utf8 import read_utf8

    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        return None
    fix = (f"the run folder's manifest was edited or damaged: restore the file {path} as the run wrote it, "
           "or choose another --out (`out_dir`)")
    try:
        stored = parse_json(read_utf8(path), str(path), nan_ok=True)  # a finished iteration's dev mean may be NaN
    except DataError as err:
        raise DataError(f"{err}; {fix}") from None
    if not isinstance(stored, dict):
        raise DataError(f"{path}: must hold a JSON object (config, inputs, iterations), got "
                        f"{type(stored).__name__}; {fix}")
    for key in ("config", "inputs"):
        if key in stored and not isinstance(stored[key], dict):
            raise DataError(f"{path}: `{key}` must be a JSON object, got {type(stored[key]).__name__}; {fix}")
    for key in ("config", "inputs"):
        bad = _non_finite(stored.get(key, {}), key)
        if bad is not None:
            raise DataError(f"{path}: `{bad}` is not a finite number; {fix}")
    if config_cls is not None and dataclasses.is_dataclass(config_cls) and "config" in stored:
        from ..evaluation.data.configs import check_scalar_types, normalized

        names = {f.name for f in dataclasses.fields(config_cls) if f.init}
        known = {k: v for k, v in normalized(config_cls, stored["config"]).items() if k in names}
        try:
            check_scalar_types(config_cls, known, "`config`")
            config_cls(**known)  # the range checks of a YAML config
        except (ValueError, TypeError) as err:
            message = " ".join(str(err).split())
            if not message.startswith("`config`"):
                message = f"`config`: {message}"
            raise DataError(f"{path}: {message}; {fix}") from None
    return stored


def check_resumable(out_dir: str | Path, config: Any) -> None:
    """Raise DataError (a ValueError: exit 2, one line) if ``out_dir`` holds a run with other
    settings than ``config`` (``to_dict()``), ``engine`` included: a run resumes on the engine it
    started on (vLLM and transformers sample different candidates from the same seed).

    Fields missing from an older manifest count as their current default, so a
    run written before a field existed resumes when the field keeps its default;
    list fields stored as comma strings compare as lists (``evaluation.data.configs.normalized``).
    A damaged manifest is refused first (``read_run_manifest``). Needs no model: the
    loop calls it before any model loads.
    """
    import dataclasses

    stored = read_run_manifest(out_dir, type(config))
    if stored is None:
        return
    from ..evaluation.data.configs import normalized
    from ..evaluation.errors import DataError

    old = normalized(type(config), stored.get("config", {}))
    new = config.to_dict()
    defaults = {
        f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        for f in dataclasses.fields(config)
    } if dataclasses.is_dataclass(config) else {}
    changed = sorted(
        k for k in set(old) | set(new)
        if k not in RESUMABLE_CHANGES and old.get(k, defaults.get(k)) != new.get(k)
    )
    if changed:
        detail = ", ".join(f"{k}: {old.get(k, defaults.get(k))!r} -> {new.get(k)!r}" for k in changed)
        raise DataError(
            f"{out_dir} holds a run with other settings ({detail}); resume with the same settings "
            "or choose another `out_dir`"
        )


class RunStore:
    """The run folder ``out_dir`` (see module docstring).

    Args:
        out_dir: the run folder (created on the first commit).
        state: an accelerate ``PartialState`` (or anything with
            ``is_main_process`` and ``wait_for_everyone()``); default: one process.
    """

    def __init__(self, out_dir: str | Path, state: Any = None) -> None:
        self.out = Path(out_dir)
        self.state = state

    @property
    def is_main(self) -> bool:
        """Whether this process writes files."""
        return self.state is None or bool(self.state.is_main_process)

    def wait(self) -> None:
        """Barrier across processes (no-op in one process)."""
        if self.state is not None:
            self.state.wait_for_everyone()

    def iteration_dir(self, k: int) -> Path:
        """``out_dir/iter_k``."""
        return iteration_dir(self.out, k)

    def finished(self) -> list[int]:
        """Finished iterations, sorted (``finished_iterations``)."""
        return finished_iterations(self.out)

    def last_trained(self) -> int:
        """The last finished iteration with an adapter (0: none, start from the base model)."""
        return max([k for k in self.finished() if k > 0], default=0)

    def adapter_dir(self, k: int) -> Path:
        """``iter_k/adapter``."""
        return self.iteration_dir(k) / ADAPTER

    def check_resumable(self, config: Any) -> None:
        """``check_resumable(out_dir, config)``."""
        check_resumable(self.out, config)

    def clean_stale(self) -> list[Path]:
        """Remove what a killed run leaves (``.iter_K.tmp-*``, ``.iter_K.trainer``); main process only."""
        if not self.is_main or not self.out.is_dir():
            return []
        stale = [p for p in self.out.iterdir() if p.is_dir() and p.name.startswith(f".{ITER_PREFIX}")
                 and (".tmp-" in p.name or p.name.endswith(".trainer"))]
        for path in stale:
            shutil.rmtree(path, ignore_errors=True)
        return stale

    def workdir(self, k: int) -> Path:
        """The trainer's scratch folder of iteration ``k`` (``.iter_k.trainer``)."""
        return self.out / f".{ITER_PREFIX}{k}.trainer"

    def drop_workdir(self, k: int) -> None:
        """Remove iteration ``k``'s scratch folder (main process)."""
        if self.is_main:
            shutil.rmtree(self.workdir(k), ignore_errors=True)

    def commit(
        self, k: int, files: Mapping[str, Sequence[Mapping[str, Any]]], summary: Mapping[str, Any],
        save_adapter: Callable[[Path], None] | None = None,
        manifest: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        """Write iteration ``k``: JSONL ``files``, the adapter, ``summary.json``; rename into place.

        ``save_adapter(path)`` writes the adapter folder; ``manifest()`` returns
        the manifest, written after the rename. All processes wait at the end.
        """
        if self.is_main:
            # written in .iter_k.tmp-* (what clean_stale removes after a kill); replaces a stale iter_k
            with atomic_folder(self.iteration_dir(k)) as tmp:
                for name, rows in files.items():
                    write_jsonl(tmp / name, list(rows))
                if save_adapter is not None:
                    save_adapter(tmp / ADAPTER)
                write_json(tmp / SUMMARY, dict(summary))
            if manifest is not None:
                self.write_manifest(manifest())
        self.wait()

    def summaries(self) -> list[dict[str, Any]]:
        """``summary.json`` of every finished iteration, in order."""
        return [json.loads((self.iteration_dir(k) / SUMMARY).read_text(encoding="utf-8")) for k in self.finished()]

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        """Write ``manifest.json`` atomically (main process)."""
        if self.is_main:
            write_json(self.out / MANIFEST, dict(manifest))

    def read_manifest(self) -> dict[str, Any]:
        """The current ``manifest.json``."""
        return json.loads((self.out / MANIFEST).read_text(encoding="utf-8"))
