"""Run a sweep: every cell × data set × seed, batch by batch, into the results store.

Work is cut into *units* (cell, data set, seed, batch of ``batch_size``
consecutive examples), always the same batches of the same example list, and
each batch is generated with seed ``seed + index of its first example`` — the
seeding ``evenhand.decoding.generate.generate`` uses over a whole list. A resumed sweep
therefore regenerates exactly the batches it lacks and gets the outputs an
uninterrupted run would have. A batch's rows are committed in one transaction.

Under ``accelerate launch`` process K of N takes units K, K+N, K+2N, ... and
writes its own shard file; the main process merges the shards at the end
(``evenhand.sweep.store``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evenhand.evaluation.data.schema import Example
from evenhand.evaluation.errors import DataError
from evenhand.evaluation.io.locks import output_lock
from evenhand.sweep.config import Cell, SweepConfig
from evenhand.sweep.store import ResultRow, ResultStore, merge_shards, shard_path, shard_paths


@dataclass(frozen=True)
class Unit:
    """One batch of work."""

    cell: Cell
    dataset: str
    seed: int
    start: int  # index of the batch's first example in the data set
    examples: tuple[Example, ...]


@dataclass
class SweepSummary:
    """What a run did."""

    results: Path
    written: int
    skipped: int
    units: int
    process_index: int = 0
    num_processes: int = 1
    rescored: int = 0  # finished rows scored with a metric they lacked


def plan_units(config: SweepConfig, datasets: dict[str, list[Example]]) -> list[Unit]:
    """Every unit of the sweep in a fixed order: cell, data set, seed, batch."""
    units = []
    for cell in config.cells:
        size = cell.generate_config(0).batch_size
        for name, examples in datasets.items():
            for seed in config.seeds:
                for start in range(0, len(examples), size):
                    units.append(Unit(cell, name, seed, start, tuple(examples[start : start + size])))
    return units


def load_datasets(config: SweepConfig) -> dict[str, list[Example]]:
    """Each data set's examples (the first ``limit``); ids must be unique within a set."""
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.io.output_checks import add_run_inputs

    add_run_inputs({f"data set {name} ({path})": path for name, path in config.datasets.items()})
    out = {}
    for name, path in config.datasets.items():
        examples = load_examples(path)[: config.limit]
        ids = [ex.id for ex in examples]
        if len(set(ids)) != len(ids):
            raise DataError(f"data set {name!r} ({path}): example ids are not unique")
        out[name] = examples
    return out


def has_groups(example: Example) -> bool:
    """Whether every document carries a group label and there are at least two groups."""
    return all(d.group is not None for d in example.documents) and len(example.groups) >= 2


def row_metrics(example: Example, summary: str, metrics: Sequence[str]) -> tuple[dict[str, float], str | None]:
    """The metrics' columns for one summary, and the errors of those that could not score it.

    ``fairsumm`` is left out silently for examples without two labelled groups.
    """
    return batch_metrics([example], [summary], metrics)[0]


def batch_metrics(
    examples: Sequence[Example], summaries: Sequence[str], metrics: Sequence[str]
) -> list[tuple[dict[str, float], str | None]]:
    """:func:`row_metrics` of every (example, summary), each metric scoring the batch at once.

    ``mint`` and ``fragments`` then take the corpus path (a batch's source is
    tokenized once for all its rows); when a metric cannot score some row of
    the batch, it scores the rows one by one, so the errors stay per row.
    """
    from evenhand.evaluation.scoring.report import Scored, evaluate

    values: list[dict[str, float]] = [{} for _ in examples]
    errors: list[list[str]] = [[] for _ in examples]

    def keep(i: int, row: dict) -> None:
        values[i].update({k: float(v) for k, v in row.items() if k not in ("id", "example_id")})

    for name in metrics:
        todo = [i for i, ex in enumerate(examples) if name != "fairsumm" or has_groups(ex)]
        if not todo:
            continue
        try:
            rows = evaluate([Scored(examples[i].id, examples[i], summaries[i]) for i in todo], [name]).rows
        except DataError:
            for i in todo:
                try:
                    keep(i, evaluate([Scored(examples[i].id, examples[i], summaries[i])], [name]).rows[0])
                except DataError as err:
                    errors[i].append(f"{name}: {err}")
            continue
        for i, row in zip(todo, rows):
            keep(i, row)
    return [(v, "; ".join(e) or None) for v, e in zip(values, errors)]


def _distributed() -> tuple[int, int, Any]:
    """(process index, process count, accelerate state or None) for this process."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from accelerate import PartialState

        state = PartialState()
        return state.process_index, state.num_processes, state
    return 0, 1, None


def _load(name: str, engine: str, load_model: Callable[[str], tuple[Any, Any]]) -> tuple[Any, Any]:
    """(model, tokenizer) of a cell: ``load_model`` in-process (the default engine), else the cell's
    engine (``open_engine``; loads on first use) and its tokenizer."""
    from evenhand.decoding.engines.base import DEFAULT_ENGINE, open_engine

    if engine != DEFAULT_ENGINE:
        opened = open_engine(name, engine)
        return opened, opened.tokenizer
    return load_model(name)


def check_unit_prompts(model: Any, tokenizer: Any, units: list[Unit]) -> None:
    """Every unit's prompts fit the model's context (DataError naming file:line), checked right after
    the model loads and before any progress bar, so the error is one clean line. Prompts do not
    depend on the seed: each (data set, batch, cell) is checked once."""
    from evenhand.decoding.engines.transformers import encode_prompts

    seen: set[tuple[str, int, str]] = set()
    for unit in units:
        key = (unit.dataset, unit.start, unit.cell.id)
        if key in seen:
            continue
        seen.add(key)
        config = unit.cell.generate_config(unit.seed)
        try:
            if hasattr(model, "check_prompts"):  # an engine (vLLM, a server)
                model.check_prompts(list(unit.examples), config)
            elif hasattr(model, "config"):
                encode_prompts(model, tokenizer, list(unit.examples), config)
        except DataError as err:
            raise DataError(f"cell {unit.cell.name!r} (model {unit.cell.model}, data set {unit.dataset!r}): "
                            f"{err}") from None


def check_every_model_prompts(
    todo: list[Unit], load_model: Callable[[str], tuple[Any, Any]] | None,
) -> tuple[tuple[str, str], Any, Any] | None:
    """Every in-process model's prompts fit its context, all checked before the sweep's progress bar
    starts, so a later model's too-long prompt is one clean line before any row is generated.

    With the default loader (``load_model`` None) each model is probed without its weights
    (``decoding.models.load_context_probe``: config and tokenizer). A given ``load_model`` loads each
    model in turn for the check (one at a time, loaded again for its rows); a sweep of one model
    keeps it: ``((model, engine), model, tokenizer)`` is returned for the run to use. Other engines
    (vLLM, a server) check prompts as they are sent.
    """
    from evenhand.decoding.engines.base import DEFAULT_ENGINE

    first: tuple[tuple[str, str], Any, Any] | None = None
    keys = list(dict.fromkeys((u.cell.model, u.cell.engine) for u in todo))
    for key in keys:
        name, engine = key
        if engine != DEFAULT_ENGINE:
            continue
        if load_model is None:
            from evenhand.decoding.models import load_context_probe

            model, tokenizer = load_context_probe(name)
        else:
            model, tokenizer = load_model(name)
        check_unit_prompts(model, tokenizer, [u for u in todo if (u.cell.model, u.cell.engine) == key])
        if load_model is not None and len(keys) == 1:
            first = (key, model, tokenizer)  # the run's only model: loaded once
        del model, tokenizer  # one model at a time
    return first


def run_sweep(
    config: SweepConfig,
    results: str | Path | None = None,
    load_model: Callable[[str], tuple[Any, Any]] | None = None,
    rerank_fn: Callable[..., list[dict[str, Any]]] | None = None,
    on_row: Callable[[ResultRow], None] | None = None,
    process_index: int | None = None,
    num_processes: int | None = None,
    progress: bool = True,
    merge: bool = False,
) -> SweepSummary:
    """Run every unfinished unit of ``config`` and store its rows.

    Args:
        config: the sweep (``load_sweep``).
        results: the results file (default ``config.results``).
        load_model: ``name -> (model, tokenizer)`` (default ``evenhand.decoding.models.load_generator``
            on ``config.device``); one model is kept loaded at a time.
        rerank_fn: best-of-N for cells with ``candidates`` > 1 (default
            ``hookups.rerank_batch``; same signature).
        on_row: called with each row after its batch is committed (progress, tests).
        process_index, num_processes: this process's share; default from ``accelerate``
            when launched with it, else 0 of 1.
        progress: show a progress bar.
        merge: add this sweep's cells to a results file holding another sweep's (else refused).
    """
    state = None
    if process_index is None or num_processes is None:
        process_index, num_processes, state = _distributed()
    if not 0 <= process_index < num_processes:
        raise ValueError(f"`process_index` must be in [0, {num_processes}), got {process_index}")
    datasets = load_datasets(config)  # bad data or a missing model fail before the results file is touched
    from evenhand.decoding.config import check_examples

    for cell in config.cells:  # fairness needs group labels: checked before any model loads
        fairness = cell.generate_config(config.seeds[0]).parts()["fairness"]
        for examples in datasets.values():
            check_examples(examples, fairness)
    if load_model is None:
        from evenhand.decoding.models import check_device, check_local

        check_device(config.device, "`device`")
        for name in sorted({cell.model for cell in config.cells}):
            check_local(name, "cell `model`")
    from evenhand.decoding.engines.base import DEFAULT_ENGINE, open_engine

    for cell in config.cells:  # vLLM installed, no adapter folder: before the results file (nothing loads)
        if cell.engine != DEFAULT_ENGINE:
            open_engine(cell.model, cell.engine)
    results = Path(results or config.results)
    path = results if num_processes == 1 else shard_path(results, process_index, num_processes)
    check_results_file(results, path)
    with output_lock(path, "--results"):  # a second sweep writing this file exits 2 naming this one
        return _run_locked(config, results, path, datasets, load_model, rerank_fn, on_row,
                           process_index, num_processes, state, progress, merge)


def check_results_file(results: Path, path: Path) -> None:
    """``--results`` (and this process's shard), their SQLite side files and lock must be regular files or absent."""
    from evenhand.evaluation.io.locks import lock_path
    from evenhand.evaluation.io.output_checks import check_output_path

    for file in (results, path):
        for side in ("", "-wal", "-shm", "-journal"):
            check_output_path(Path(str(file) + side), "--results", append=True)
        check_output_path(lock_path(file), "--results")
    for shard in shard_paths(results):
        check_output_path(shard, "--results", append=True)


def data_digests(config: SweepConfig) -> dict[str, str]:
    """SHA-256 of each data set's file, by data set name."""
    from evenhand.evaluation.io.digests import file_sha256

    return {name: file_sha256(path) for name, path in sorted(config.datasets.items())}


def model_digests(config: SweepConfig) -> dict[str, Any]:
    """Each cell model's content identity (``decoding.models.model_identity``), by model name."""
    from evenhand.decoding.models import model_identity

    return {name: model_identity(name) for name in sorted({cell.model for cell in config.cells})}


def scoring_of(config: SweepConfig) -> dict[str, Any]:
    """What the stored scores depend on besides the summary: metrics, factuality scorer and options, extra scorers."""
    return {
        "metrics": list(config.metrics), "factuality": config.factuality,
        "factuality_options": dict(config.factuality_options), "extra_scorers": list(config.extra_scorers),
    }


def check_same_sweep(store: ResultStore, config: SweepConfig, results: Path, merge: bool) -> None:
    """Refuse a results file that holds finished rows of another sweep's cells, unless ``merge``.

    A sweep with other cells (another grid, other base settings) would mix its
    cells into the first sweep's table and report; ``--merge`` asks for that.
    """
    if merge or not store.has_rows():
        return
    stored = {str(c) for (c,) in store.conn.execute("SELECT cell_id FROM cells")}
    ours = {cell.id for cell in config.cells}
    if stored == ours:
        return
    raise DataError(
        f"{results}: holds the results of another sweep ({len(stored - ours)} of its cells are not in this "
        f"config, {len(ours - stored)} of this config's are not in it); write to a new --results file, or pass "
        "--merge to add this sweep's cells to it"
    )


def stored_settings(store: ResultStore, results: Path) -> dict[str, Any]:
    """The store's meta ``datasets``, ``models`` and ``scoring``, each checked before a sweep resumes from it.

    A value edited or damaged since a sweep wrote it (not JSON, NaN or infinite
    numbers, not an object, ``scoring`` lists that are not lists of names) is one
    DataError naming the file and the key, before any model loads.
    """
    from evenhand.evaluation.io.parsing import parse_json

    fix = "the results file's stored settings were edited or damaged: write to a new --results file (or delete this one)"
    found: dict[str, Any] = {}
    for key, text in store.meta().items():
        if key not in ("datasets", "models", "scoring"):
            continue
        where = f"{results}: meta `{key}`"
        try:
            value = parse_json(text if isinstance(text, str) else str(text), where)
        except DataError as err:
            raise DataError(f"{err}; {fix}") from None
        if not isinstance(value, dict):
            raise DataError(f"{where} must be a JSON object, got {type(value).__name__}; {fix}")
        if key == "datasets" and not all(isinstance(v, str) for v in value.values()):
            raise DataError(f"{where} must map each data set to its SHA-256 string; {fix}")
        if key == "scoring":
            for name in ("metrics", "extra_scorers"):
                items = value.get(name, [])
                if not isinstance(items, list) or not all(isinstance(m, str) for m in items):
                    raise DataError(f"{where}: `{name}` must be a list of names, got {items!r}; {fix}")
            if not isinstance(value.get("factuality"), (str, type(None))):
                raise DataError(f"{where}: `factuality` must be a scorer name or null, got "
                                f"{value.get('factuality')!r}; {fix}")
            if not isinstance(value.get("factuality_options", {}), dict):
                raise DataError(f"{where}: `factuality_options` must be a JSON object; {fix}")
        found[key] = value
    return found


def check_freshness(store: ResultStore | None, config: SweepConfig, results: Path) -> dict[str, Any]:
    """Refuse finished rows whose data or model changed; return what scoring the finished rows lack.

    ``store`` (None: no file yet) is only read: the returned ``datasets`` and
    ``models`` are the meta values the sweep stores once every check passed.

    The store's meta records each data set's SHA-256 (``datasets``), each cell
    model's content identity (``models``) and the scoring (``scoring``). A data
    set or model that changed while rows of it are stored is refused, naming
    it, since its rows would be stale. A metric or extra scorer that is new, or
    a factuality scorer that changed, is not an error: the returned dict names
    them and the runner scores the finished rows' summaries with them.
    """
    old = stored_settings(store, results) if store is not None else {}
    datasets, models = data_digests(config), model_digests(config)
    finished = store.finished_datasets_and_models() if store is not None else {"datasets": set(), "models": set()}
    for name, digest in datasets.items():
        before = old.get("datasets", {}).get(name)
        if before is not None and before != digest and name in finished["datasets"]:
            raise DataError(
                f"{results}: data set {name!r} ({config.datasets[name]}) changed since its rows were "
                f"written (sha256 {before[:12]} -> {digest[:12]}); reusing them would mix old and new "
                "data: write to a new --results file (or delete this one)"
            )
    for name, identity in models.items():
        before = old.get("models", {}).get(name)
        if before is not None and before != identity and name in finished["models"]:
            raise DataError(
                f"{results}: model {name!r} changed since its rows were written (its weights' content "
                "differs); reusing them would mix two models: write to a new --results file (or delete this one)"
            )
    missing: dict[str, Any] = {"metrics": [], "extra_scorers": [], "factuality": False}
    if "scoring" in old and store is not None and store.has_rows():
        before = old["scoring"]
        missing["metrics"] = [m for m in config.metrics if m not in before.get("metrics", [])]
        missing["extra_scorers"] = [m for m in config.extra_scorers if m not in before.get("extra_scorers", [])]
        missing["factuality"] = bool(config.factuality) and (
            config.factuality != before.get("factuality")
            or config.factuality_options != before.get("factuality_options", {})
        )
    merged_scoring = scoring_of(config)
    if "scoring" in old:  # metrics computed before stay listed: their columns are still in the rows
        merged_scoring["metrics"] = list(dict.fromkeys([*old["scoring"].get("metrics", []), *config.metrics]))
        merged_scoring["extra_scorers"] = list(dict.fromkeys(
            [*old["scoring"].get("extra_scorers", []), *config.extra_scorers]))
    missing["datasets"] = {**old.get("datasets", {}), **datasets}
    missing["models"] = {**old.get("models", {}), **models}
    missing["scoring"] = merged_scoring
    return missing


def _run_locked(
    config: SweepConfig, results: Path, path: Path, datasets: dict[str, list[Example]],
    load_model: Callable[[str], tuple[Any, Any]] | None, rerank_fn: Callable[..., list[dict[str, Any]]] | None,
    on_row: Callable[[ResultRow], None] | None, process_index: int, num_processes: int, state: Any,
    progress: bool, merge: bool = False,
) -> SweepSummary:
    from evenhand.decoding.engines.base import DEFAULT_ENGINE
    from evenhand.decoding.generate import generate
    from evenhand.evaluation.io.progress import Progress
    from evenhand.sweep import hookups

    if path.is_file() and path.stat().st_size:  # every refusal on a read-only view first: a refused sweep leaves the file byte-identical
        with contextlib.closing(ResultStore(path, read_only=True)) as existing:
            check_same_sweep(existing, config, results, merge)
            missing = check_freshness(existing, config, results)
    else:
        missing = check_freshness(None, config, results)
    store = ResultStore(path, also_read=[results, *shard_paths(results)])
    store.set_meta("datasets", json.dumps(missing.pop("datasets"), sort_keys=True))
    store.set_meta("models", json.dumps(missing.pop("models"), sort_keys=True, default=str))
    store.set_meta("name", config.name)
    store.set_meta("config", config.text)
    store.add_cells(config.cells)

    given_loader = load_model
    if load_model is None:
        from evenhand.decoding.models import load_generator

        device = config.device or (str(state.device) if state is not None else None)

        def load_default(name: str) -> tuple[Any, Any]:
            return load_generator(name, device=device)

        load_model = load_default

    rerank_fn = rerank_fn or hookups.rerank_batch
    factuality = hookups.build_scorer(config.factuality, config.factuality_options) if config.factuality else None
    extra = {name: hookups.build_scorer(name) for name in config.extra_scorers}
    rescored = 0
    if missing["metrics"] or missing["extra_scorers"] or missing["factuality"]:
        rescored = rescore(store, datasets, missing, factuality if missing["factuality"] else None,
                           {n: extra[n] for n in missing["extra_scorers"]})
    store.set_meta("scoring", json.dumps(missing["scoring"], sort_keys=True))

    units = plan_units(config, datasets)
    mine = [u for i, u in enumerate(units) if i % num_processes == process_index]
    todo = [
        u for u in mine
        if not all(store.done(u.cell.id, u.dataset, u.seed, ex.id) for ex in u.examples)
    ]
    skipped = sum(len(u.examples) for u in mine) - sum(len(u.examples) for u in todo)
    written = 0
    # every in-process model's prompts, before the first row: a later model's too-long prompt is one line
    loaded = check_every_model_prompts(todo, given_loader)
    bar: Any = None  # started once the first model has loaded (and an engine's prompts are checked)
    try:
        for unit in todo:
            cell = unit.cell
            if loaded is None or loaded[0] != (cell.model, cell.engine):
                loaded = None  # free the previous model first
                loaded = ((cell.model, cell.engine), *_load(cell.model, cell.engine, load_model))
                if cell.engine != DEFAULT_ENGINE:  # in-process models were checked above
                    check_unit_prompts(loaded[1], loaded[2], [u for u in todo if (u.cell.model, u.cell.engine)
                                                              == (cell.model, cell.engine)])
            if bar is None:
                bar = Progress(sum(len(u.examples) for u in todo), "sweep", "row", disable=not progress)
            _, model, tokenizer = loaded
            gen_config = dataclasses.replace(cell.generate_config(unit.seed), seed=unit.seed + unit.start)
            t0 = time.perf_counter()
            batch = list(unit.examples)
            bar.begin(len(batch))  # the batch's decoding steps move the bar
            records: list[dict[str, Any] | None]
            if cell.candidates > 1:
                reranked = list(rerank_fn(model, tokenizer, batch, gen_config, cell.candidates,
                                          cell.settings.get("scorers")))
                summaries = [r["summary"] for r in reranked]
                records = list(reranked)
            else:
                summaries = generate(model, tokenizer, batch, gen_config, progress=False)
                records = [None] * len(batch)
            rows = []
            scored = batch_metrics(batch, summaries, config.metrics)
            for offset, (ex, summary, record, (metrics, error)) in enumerate(
                zip(batch, summaries, records, scored)
            ):
                rows.append(ResultRow(
                    cell.id, unit.dataset, unit.seed, ex.id, unit.start + offset, summary, metrics,
                    error=error,
                    rerank=None if record is None else {k: v for k, v in record.items() if k != "summary"},
                ))
            _score(rows, batch, factuality, extra)
            seconds = (time.perf_counter() - t0) / len(rows)
            for row in rows:
                row.seconds = seconds
            written += store.write(rows)
            for row in rows:
                bar.update(1)
                if on_row is not None:
                    on_row(row)
    finally:
        if bar is not None:
            bar.close()
        store.close()
    if num_processes > 1 and state is not None:
        state.wait_for_everyone()
        if state.is_main_process:
            from evenhand.evaluation.io.locks import output_lock

            with output_lock(results, "--results"):
                merge_shards(results)
    elif num_processes == 1 and shard_paths(results):
        merge_shards(results)  # rows an earlier multi-process run left in shards (this process holds the lock)
    return SweepSummary(results, written, skipped, len(todo), process_index, num_processes, rescored)


def rescore(store: ResultStore, datasets: dict[str, list[Example]], missing: dict[str, Any],
            factuality: Any, extra: dict[str, Any]) -> int:
    """Score the finished rows' stored summaries with the metrics (and scorers) they lack; return the rows updated.

    Generation is not repeated: a metric added to a finished sweep costs only its scoring.
    Rows of data sets or examples no longer in the config are left as they are.
    """
    by_id = {name: {ex.id: ex for ex in examples} for name, examples in datasets.items()}
    rows = [r for r in store.rows() if r.example_id in by_id.get(r.dataset, {})]
    size = 16
    for start in range(0, len(rows), size):
        chunk = rows[start : start + size]
        batch = [by_id[r.dataset][r.example_id] for r in chunk]
        if missing["metrics"]:
            scored = batch_metrics(batch, [r.summary for r in chunk], missing["metrics"])
            for row, (metrics, error) in zip(chunk, scored):
                row.metrics.update(metrics)
                if error:
                    row.error = "; ".join(e for e in (row.error, error) if e)
        _score(chunk, batch, factuality, extra)
        store.update(chunk)
    return len(rows)


def _score(rows: list[ResultRow], batch: list[Example], factuality: Any, extra: dict[str, Any]) -> None:
    """Fill factuality and extra scorer columns of rows with non-empty summaries."""
    from evenhand.sweep import hookups

    keep = [i for i, r in enumerate(rows) if r.summary.strip()]
    if not keep:
        return
    examples = [batch[i] for i in keep]
    summaries = [rows[i].summary for i in keep]
    if factuality is not None:
        for i, (score, details) in zip(keep, hookups.score_rows(factuality, examples, summaries)):
            rows[i].factuality = score
            rows[i].factuality_scorer = factuality.name
            rows[i].factuality_backend = hookups.backend_name(factuality, details)
    for name, scorer in extra.items():
        for i, (score, details) in zip(keep, hookups.score_rows(scorer, examples, summaries)):
            rows[i].metrics[name] = score
            for key, value in details.items():
                if isinstance(value, (int, float)) and key != "score":
                    rows[i].metrics[f"{name}.{key}"] = float(value)
