"""Sweep configs: a YAML grid of generation settings × data sets × seeds, expanded into cells.

YAML schema (every key but ``datasets`` optional)::

    name: tradeoff                 # label shown in the report (default: the file's stem)
    results: runs/tradeoff.sqlite  # the results store (default: <config stem>.sqlite next to it);
                                   # `evenhand sweep --results` overrides
    datasets:                      # name -> examples file (anything load_examples reads),
      flipside: ../shared/data/theflipside/test.json   # relative paths: from the YAML's folder
    limit: 10                      # first N examples of each data set (default: all)
    seeds: [0, 1]                  # every cell runs once per (data set, seed) (default: [0])
    metrics: [mint, fragments, fairsumm]   # registered scorers' columns per row; fairsumm is
                                   # skipped for examples without two labelled groups
    factuality: none               # a rerank scorer name (e.g. alignscore) or none
    factuality_options: {}         # that scorer's Config fields
    extra_scorers: []              # more rerank scorers stored per row (e.g. equal-coverage)
    device: null                   # cpu, cuda, ... (default: auto)
    base:                          # settings shared by every cell
      max_new_tokens: 60
    grid:                          # list values are axes: the cells are their cartesian product
      abstractiveness: [null, 4, 2, 1]
      temperature: 0.7             # a scalar is a fixed setting (same as putting it in base)
    cells:                         # explicit cells, appended after the grid's; each over base
      - {name: reward, extractiveness: 2}

A *setting* key is any ``evenhand.decoding.config.GenerateConfig`` field (checked
against the dataclass at load time, so new fields work without changes here)
except ``seed`` (use ``seeds``), plus:

* ``model``: generator name, local folder or LoRA adapter folder (default
  ``smollm2-135m-instruct``; folders are taken from the working directory);
* ``candidates``: N > 1 samples N candidates and keeps the best by ``scorers``
  (``rerank.Reranker``); 1 or absent is plain ``generate``;
* ``scorers``: comma-separated rerank scorer names in one string (a YAML list
  would be an axis), e.g. ``"llm-coverage,alignscore"``; several are combined
  with the ``composite`` scorer;
* ``engine``: ``transformers`` (default, in-process) or ``vllm`` (in-process vLLM,
  ``decoding/engines/vllm_engine.py``; beam search, plain or fair, as the step loop of
  ``decoding/engines/beam_loop.py``, greedy with a token-raising processor);
  a base option or a grid axis (``engine: [transformers, vllm]``);
* ``name``: a label for an explicit cell (not a setting: cells are identified
  by their settings).

With neither ``grid`` nor ``cells`` the sweep has one cell, ``base``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evenhand.evaluation.data.configs import as_list
from evenhand.evaluation.errors import DataError

#: Setting keys that are not GenerateConfig fields.
EXTRA_KEYS = ("model", "candidates", "scorers", "engine")
#: Top-level keys of a sweep YAML.
TOP_KEYS = (
    "name", "results", "datasets", "limit", "seeds", "metrics", "factuality",
    "factuality_options", "extra_scorers", "device", "base", "grid", "cells",
)
DEFAULT_MODEL = "smollm2-135m-instruct"


def setting_keys() -> list[str]:
    """Every valid setting key: GenerateConfig's fields (but ``seed``) and :data:`EXTRA_KEYS`."""
    from evenhand.decoding.config import GenerateConfig

    names = [f.name for f in dataclasses.fields(GenerateConfig) if f.init and f.name != "seed"]
    return names + list(EXTRA_KEYS)


def check_settings(settings: dict[str, Any], where: str) -> None:
    """Raise DataError for a key that is no setting, naming it and listing the valid ones."""
    valid = setting_keys()
    for key in settings:
        if key == "seed":
            raise DataError(f"{where}: `seed` is not a setting; list the seeds in top-level `seeds:`")
        if key not in valid:
            raise DataError(
                f"{where}: unknown setting {key!r}. Valid settings: {', '.join(sorted(valid))}"
            )


@dataclass(frozen=True)
class Cell:
    """One point of the grid: its settings (sorted, JSON-able) and a display name."""

    settings: dict[str, Any]
    name: str

    @property
    def id(self) -> str:
        """A stable id: the first 12 hex digits of sha1 over the canonical settings JSON."""
        return hashlib.sha1(canonical(self.settings).encode()).hexdigest()[:12]

    def generate_config(self, seed: int) -> Any:
        """The cell's GenerateConfig for ``seed`` (validated by GenerateConfig itself)."""
        from evenhand.decoding.config import GenerateConfig
        from evenhand.evaluation.data.configs import check_scalar_types

        values = {k: v for k, v in self.settings.items() if k not in EXTRA_KEYS}
        check_scalar_types(GenerateConfig, values, "settings")  # `instruction: 5` named, not a TypeError later
        return GenerateConfig(**values, seed=seed)

    @property
    def model(self) -> str:
        """The generator's name or folder."""
        return str(self.settings.get("model") or DEFAULT_MODEL)

    @property
    def candidates(self) -> int:
        """N candidates for reranking (1 = plain generation)."""
        return int(self.settings.get("candidates") or 1)

    @property
    def engine(self) -> str:
        """``transformers`` (in-process, default) or ``vllm``."""
        return str(self.settings.get("engine") or "transformers")


def canonical(settings: dict[str, Any]) -> str:
    """The settings as JSON with sorted keys (the cell's identity)."""
    return json.dumps(settings, sort_keys=True, default=str)


def cell_name(settings: dict[str, Any], varying: list[str]) -> str:
    """``key=value`` pairs of the keys that vary across the grid, or ``base``."""
    parts = [f"{k}={settings.get(k)}" for k in varying]
    return ",".join(parts) or "base"


def expand_cells(
    base: dict[str, Any] | None = None,
    grid: dict[str, Any] | None = None,
    cells: list[dict[str, Any]] | None = None,
) -> list[Cell]:
    """The sweep's cells: the cartesian product of ``grid``'s list values, then ``cells``.

    Each cell's settings are ``base`` updated by its grid point (or explicit cell).
    Axes vary fastest from the last key (``itertools.product`` order). Duplicate
    cells (same settings) are kept once, the first name winning.

    Example: ``grid={"a": [1, 2], "b": ["x", "y"]}`` gives (1, x), (1, y), (2, x), (2, y).
    """
    base = dict(base or {})
    check_settings(base, "base")
    grid = dict(grid or {})
    check_settings(grid, "grid")
    axes = {k: v for k, v in grid.items() if isinstance(v, list)}
    for key, values in axes.items():
        if not values:
            raise DataError(f"grid: axis {key!r} is an empty list; give at least one value")
    fixed = {k: v for k, v in grid.items() if not isinstance(v, list)}
    out: list[Cell] = []
    if axes or not cells:
        keys = list(axes)
        for point in itertools.product(*(axes[k] for k in keys)):
            settings = {**base, **fixed, **dict(zip(keys, point))}
            out.append(Cell(_clean(settings), cell_name(settings, keys)))
    for i, explicit in enumerate(cells or []):
        if not isinstance(explicit, dict):
            raise DataError(f"cells[{i}]: each cell must be a mapping of settings, got {explicit!r}")
        explicit = dict(explicit)
        name = explicit.pop("name", None)
        check_settings(explicit, f"cells[{i}]")
        settings = {**base, **fixed, **explicit}
        out.append(Cell(_clean(settings), str(name) if name else cell_name(settings, sorted(explicit))))
    unique: dict[str, Cell] = {}
    for cell in out:
        unique.setdefault(cell.id, cell)
    return list(unique.values())


def _clean(settings: dict[str, Any]) -> dict[str, Any]:
    """Sorted settings; null values dropped so they mean the GenerateConfig default."""
    return {k: settings[k] for k in sorted(settings) if settings[k] is not None}


@dataclass
class SweepConfig:
    """A parsed sweep file (see the module docstring for the YAML schema)."""

    datasets: dict[str, str]
    cells: list[Cell]
    name: str = "sweep"
    results: str = "sweep.sqlite"
    limit: int | None = None
    seeds: list[int] = field(default_factory=lambda: [0])
    metrics: list[str] = field(default_factory=lambda: ["mint", "fragments", "fairsumm"])
    factuality: str | None = None
    factuality_options: dict[str, Any] = field(default_factory=dict)
    extra_scorers: list[str] = field(default_factory=list)
    device: str | None = None
    text: str = ""  # the YAML as given, stored with the results

    def __post_init__(self) -> None:
        if not self.datasets:
            raise DataError("`datasets` is empty; give at least one `name: path` entry")
        from evenhand.evaluation.data.checks import check_count, check_seed, expect

        check_count(self.limit, "limit", high=10**9, none_ok=True)
        if not self.seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in self.seeds):
            raise DataError(f"`seeds` must be a non-empty list of ints, got {self.seeds!r}")
        for i, seed in enumerate(self.seeds):
            check_seed(seed, f"seeds[{i}]")
        expect(self.device, (str, type(None)), "", "device", "a string (cpu, cuda...)")
        expect(self.factuality_options, dict, "", "factuality_options", "a mapping of options")
        if len(set(self.seeds)) != len(self.seeds):
            raise DataError(f"`seeds` lists a seed twice: {self.seeds}")
        if isinstance(self.factuality, str) and self.factuality.strip().lower() in ("", "none"):
            self.factuality = None
        from evenhand.evaluation.scoring.registry import UnknownScorerError, check_names

        named = [("", "metrics", self.metrics), ("", "extra_scorers", self.extra_scorers or None)]
        named.append(("", "factuality", self.factuality))
        named += [(f"cell {c.name!r}: ", "scorers", c.settings.get("scorers")) for c in self.cells]
        for where, key, names in named:  # every scorer name resolves before any model loads
            try:
                if names is not None:
                    check_names(names, key)
            except UnknownScorerError as err:
                raise DataError(f"{where}{err}") from None
        for cell in self.cells:  # GenerateConfig validates each cell's values
            try:
                cell.generate_config(self.seeds[0])
            except (TypeError, ValueError) as err:
                raise DataError(f"cell {cell.name!r}: {err}") from None
            check_count(cell.settings.get("candidates", 1), "candidates", where=f"cell {cell.name!r}")
            expect(cell.settings.get("model", DEFAULT_MODEL), str, f"cell {cell.name!r}", "model",
                   "a model name or folder")
            from evenhand.decoding.engines.base import (
                engine_class,
                engine_names,
                refuse_unsupported,
            )

            if cell.engine not in engine_names():
                raise DataError(f"cell {cell.name!r}: `engine` must be one of {', '.join(engine_names())}, got {cell.engine!r}")
            # what the cell's engine cannot do, before anything loads (its class only: vLLM is not imported)
            refuse_unsupported(engine_class(cell.engine).capabilities, cell.generate_config(self.seeds[0]))


def _as_list(value: Any, key: str) -> list[str]:
    try:
        return as_list(value, key) or []
    except ValueError as err:
        raise DataError(str(err)) from None


def parse_sweep(data: dict[str, Any], folder: str | Path = ".", stem: str = "sweep", text: str = "") -> SweepConfig:
    """A :class:`SweepConfig` from a YAML mapping; relative paths are taken from ``folder``."""
    if not isinstance(data, dict):
        raise DataError(f"a sweep config must be a YAML mapping, got {type(data).__name__}")
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise DataError(
            f"unknown sweep key(s) {unknown}. Valid keys: {', '.join(TOP_KEYS)}; "
            "settings go under `base`, `grid` or `cells`"
        )
    folder = Path(folder)
    datasets = data.get("datasets") or {}
    if isinstance(datasets, list):
        datasets = {Path(str(p)).stem: p for p in datasets}
    if not isinstance(datasets, dict):
        raise DataError("`datasets` must map names to example files")
    datasets = {str(k): str(folder / str(v)) for k, v in datasets.items()}
    for key in ("base", "grid"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise DataError(f"`{key}` must be a mapping of settings, got {data[key]!r}")
    if data.get("cells") is not None and not isinstance(data["cells"], list):
        raise DataError("`cells` must be a list of mappings of settings")
    cells = expand_cells(data.get("base"), data.get("grid"), data.get("cells"))
    results = data.get("results") or f"{stem}.sqlite"
    seeds = data.get("seeds", [0])
    if not isinstance(seeds, (int, list)) or isinstance(seeds, bool):
        raise DataError(f"`seeds` must be a non-empty list of ints, got {seeds!r}")
    for key in ("factuality_options",):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise DataError(f"`{key}` must be a mapping of options, got {data[key]!r}")
    for key in ("name", "results", "factuality", "device"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise DataError(f"`{key}` must be a string, got {data[key]!r}")
    return SweepConfig(
        datasets=datasets,
        cells=cells,
        name=str(data.get("name") or stem),
        results=str(folder / str(results)),
        limit=data.get("limit"),
        seeds=[seeds] if isinstance(seeds, int) else list(seeds or []),
        metrics=_as_list(data.get("metrics", ["mint", "fragments", "fairsumm"]), "metrics"),
        factuality=data.get("factuality"),
        factuality_options=dict(data.get("factuality_options") or {}),
        extra_scorers=_as_list(data.get("extra_scorers"), "extra_scorers"),
        device=data.get("device"),
        text=text,
    )


def load_sweep(path: str | Path) -> SweepConfig:
    """Read and validate a sweep YAML file."""
    from evenhand.evaluation.io.parsing import safe_yaml
    from evenhand.evaluation.io.utf8 import read_utf8

    path = Path(path)
    text = read_utf8(path, "--config")
    data = safe_yaml(text, str(path))
    try:
        return parse_sweep(data, path.parent, path.stem, text)
    except DataError as err:
        raise DataError(f"{path}: {err}") from None
