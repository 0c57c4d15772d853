"""The sweep results store: SQLite (stdlib), one row per example × cell × data set × seed.

Schema (``SCHEMA_VERSION`` 1)::

    meta(key TEXT PRIMARY KEY, value TEXT)        -- schema_version, name, config (the YAML)
    cells(cell_id TEXT PRIMARY KEY, name TEXT, settings TEXT)   -- settings: JSON object
    rows(
      cell_id TEXT, dataset TEXT, seed INTEGER, example_id TEXT,  -- PRIMARY KEY (all four)
      example_index INTEGER,      -- position in the data set (report order)
      summary TEXT,
      metrics TEXT,               -- JSON {column: float} from evenhand.evaluation.scoring.report.evaluate
      factuality REAL,            -- NULL without a factuality scorer
      factuality_scorer TEXT, factuality_backend TEXT,
      rerank TEXT,                -- JSON {best_index, best_score, scorer, candidates} or NULL
      error TEXT,                 -- why metrics are missing (e.g. an empty summary), or NULL
      seconds REAL,               -- generation + scoring time per row (batch time / batch size)
      created TEXT)               -- UTC ISO time

Rows are written per batch in one transaction (``INSERT OR IGNORE``), so a
killed sweep loses at most the batch in flight and never duplicates a row;
rerunning skips finished rows.

Several processes (``accelerate launch``): each writes its own shard
``<stem>.part<K>-of<N><suffix>`` next to the results file (no two writers on
one SQLite file, no lock retries), and the main process merges the shards into
the results file at the end; :func:`read_rows` also merges any shard left by
an interrupted run. WAL mode keeps readers (``evenhand report`` while a sweep
runs) from blocking the writer.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evenhand.evaluation.errors import DataError, IgnoredOptionWarning

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS cells (cell_id TEXT PRIMARY KEY, name TEXT, settings TEXT);
CREATE TABLE IF NOT EXISTS rows (
  cell_id TEXT NOT NULL, dataset TEXT NOT NULL, seed INTEGER NOT NULL, example_id TEXT NOT NULL,
  example_index INTEGER, summary TEXT, metrics TEXT, factuality REAL,
  factuality_scorer TEXT, factuality_backend TEXT, rerank TEXT, error TEXT,
  seconds REAL, created TEXT,
  PRIMARY KEY (cell_id, dataset, seed, example_id)
);
"""

ROW_COLUMNS = (
    "cell_id", "dataset", "seed", "example_id", "example_index", "summary", "metrics",
    "factuality", "factuality_scorer", "factuality_backend", "rerank", "error", "seconds", "created",
)


@dataclass
class ResultRow:
    """One stored result (``metrics`` and ``rerank`` decoded from JSON)."""

    cell_id: str
    dataset: str
    seed: int
    example_id: str
    example_index: int
    summary: str
    metrics: dict[str, float]
    factuality: float | None = None
    factuality_scorer: str | None = None
    factuality_backend: str | None = None
    rerank: dict[str, Any] | None = None
    error: str | None = None
    seconds: float | None = None
    created: str | None = None

    @property
    def key(self) -> tuple[str, str, int, str]:
        """The primary key: (cell_id, dataset, seed, example_id)."""
        return (self.cell_id, self.dataset, self.seed, self.example_id)


def shard_path(results: str | Path, index: int, count: int) -> Path:
    """The shard file of process ``index`` of ``count``."""
    results = Path(results)
    return results.with_name(f"{results.stem}.part{index}-of{count}{results.suffix}")


def shard_paths(results: str | Path) -> list[Path]:
    """Every shard file of ``results`` present on disk."""
    results = Path(results)
    return sorted(results.parent.glob(f"{results.stem}.part*-of*{results.suffix}"))


def _read_only(path: Path) -> str:
    """A read-only SQLite URI for ``path`` (percent-encoded, so any file name works)."""
    return Path(path).resolve().as_uri() + "?mode=ro"


def count_rows(path: str | Path) -> int | None:
    """Rows committed to a results file, read-only (None: missing or unreadable)."""
    try:
        with contextlib.closing(sqlite3.connect(_read_only(Path(path)), uri=True, timeout=5)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
    except (sqlite3.Error, OSError, ValueError):
        return None


def connect(path: str | Path) -> sqlite3.Connection:
    """Open (creating) a results file with the schema, WAL journal and a 60 s busy timeout."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=60.0)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.DatabaseError as err:
        conn.close()
        raise DataError(
            f"{path}: not an evenhand results file ({err}); give --results a new path or a file "
            "written by `evenhand sweep`"
        ) from None
    if version is None:
        with conn:
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    elif int(version[0]) != SCHEMA_VERSION:
        raise DataError(
            f"{path}: results schema version {version[0]}, this evenhand reads {SCHEMA_VERSION}; "
            "write to a new --results file"
        )
    return conn


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """An existing results file opened read-only (``mode=ro``): DataError when it is none."""
    try:
        conn = sqlite3.connect(_read_only(path), uri=True, timeout=60.0)
        conn.execute("SELECT key, value FROM meta LIMIT 1").fetchall()
        conn.execute("SELECT cell_id FROM rows LIMIT 1").fetchall()
    except sqlite3.DatabaseError as err:
        raise DataError(
            f"{path}: not an evenhand results file ({err}); give --results a new path or a file "
            "written by `evenhand sweep`"
        ) from None
    return conn


class ResultStore:
    """A writer on one results (or shard) file.

    Args:
        path: the SQLite file (created with the schema when missing).
        also_read: more files whose finished rows count as done (other shards, the merged file).
    """

    def __init__(self, path: str | Path, also_read: Iterable[str | Path] = (), read_only: bool = False) -> None:
        self.path = Path(path)
        # read-only: an existing file checked before a sweep may write to it (a refused sweep changes nothing:
        # no WAL switch, no -wal/-shm files, not one byte)
        self.conn = _connect_read_only(self.path) if read_only else connect(self.path)
        self._done: set[tuple[str, str, int, str]] = set(self._keys(self.conn))
        for other in also_read:
            other = Path(other)
            if other.exists() and other.resolve() != self.path.resolve():
                with sqlite3.connect(_read_only(other), uri=True, timeout=60.0) as ro:
                    try:
                        self._done.update(self._keys(ro))
                    except sqlite3.OperationalError:  # not a results file (yet)
                        pass

    @staticmethod
    def _keys(conn: sqlite3.Connection) -> Iterator[tuple[str, str, int, str]]:
        for cell, dataset, seed, ex in conn.execute(
            "SELECT cell_id, dataset, seed, example_id FROM rows"
        ):
            yield (cell, dataset, int(seed), ex)

    def done(self, cell_id: str, dataset: str, seed: int, example_id: str) -> bool:
        """Whether this row is already stored."""
        return (cell_id, dataset, seed, example_id) in self._done

    def set_meta(self, key: str, value: str) -> None:
        """Store a meta value (replacing)."""
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def add_cells(self, cells: Iterable[Any]) -> None:
        """Record the sweep's cells (id, name, settings JSON)."""
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO cells VALUES (?, ?, ?)",
                [(c.id, c.name, json.dumps(c.settings, sort_keys=True)) for c in cells],
            )

    def write(self, rows: Iterable[ResultRow]) -> int:
        """Insert rows in one transaction (finished rows are ignored); return how many were new."""
        rows = list(rows)
        new = 0
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with _write_errors(self.path), self.conn:
            for r in rows:
                if r.key in self._done:
                    continue
                self.conn.execute(
                    f"INSERT OR IGNORE INTO rows VALUES ({', '.join('?' * len(ROW_COLUMNS))})",
                    (
                        r.cell_id, r.dataset, r.seed, r.example_id, r.example_index, r.summary,
                        json.dumps(r.metrics, sort_keys=True), r.factuality, r.factuality_scorer,
                        r.factuality_backend, None if r.rerank is None else json.dumps(r.rerank),
                        r.error, r.seconds, r.created or created,
                    ),
                )
                new += 1
        self._done.update(r.key for r in rows)
        return new

    def meta(self) -> dict[str, str]:
        """Every meta key and value of this file."""
        return dict(self.conn.execute("SELECT key, value FROM meta"))

    def has_rows(self) -> bool:
        """Whether any row is stored in this file."""
        return self.conn.execute("SELECT 1 FROM rows LIMIT 1").fetchone() is not None

    def finished_datasets_and_models(self) -> dict[str, set[str]]:
        """The data sets and cell models that have stored rows in this file."""
        from evenhand.sweep.config import DEFAULT_MODEL

        datasets = {d for (d,) in self.conn.execute("SELECT DISTINCT dataset FROM rows")}
        models = set()
        for (settings,) in self.conn.execute(
            "SELECT settings FROM cells WHERE cell_id IN (SELECT DISTINCT cell_id FROM rows)"
        ):
            try:
                models.add(str(json.loads(settings).get("model") or DEFAULT_MODEL))
            except (ValueError, AttributeError):
                continue
        return {"datasets": datasets, "models": models}

    def rows(self) -> list[ResultRow]:
        """Every row stored in this file, in key order."""
        return [_decode(r) for r in self.conn.execute(
            f"SELECT {', '.join(ROW_COLUMNS)} FROM rows ORDER BY cell_id, dataset, seed, example_id")]

    def update(self, rows: Iterable[ResultRow]) -> None:
        """Rewrite the scores (metrics, factuality, error) of stored rows in one transaction."""
        with _write_errors(self.path), self.conn:
            self.conn.executemany(
                "UPDATE rows SET metrics=?, factuality=?, factuality_scorer=?, factuality_backend=?, error=? "
                "WHERE cell_id=? AND dataset=? AND seed=? AND example_id=?",
                [(json.dumps(r.metrics, sort_keys=True), r.factuality, r.factuality_scorer,
                  r.factuality_backend, r.error, *r.key) for r in rows],
            )

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


@contextlib.contextmanager
def _write_errors(path: Path) -> Iterator[None]:
    """SQLite's "database or disk is full" (and other I/O failures) as one line naming the file."""
    try:
        yield
    except sqlite3.OperationalError as err:
        text = str(err)
        if "full" not in text and "disk I/O" not in text and "readonly" not in text:
            raise
        from evenhand.evaluation.errors import OutputError

        raise OutputError(
            f"{path}: cannot write ({text}); the rows committed before are kept; free space and run again"
        ) from None


def merge_shards(results: str | Path, remove: bool = True) -> int:
    """Copy every shard's meta, cells and rows into ``results``; return the rows added."""
    results = Path(results)
    conn = connect(results)
    added = 0
    try:
        for shard in shard_paths(results):
            before = conn.execute("SELECT COUNT(*) FROM rows").fetchone()[0]
            with conn:
                conn.execute("ATTACH DATABASE ? AS shard", (str(shard),))
            with conn:
                conn.execute("INSERT OR IGNORE INTO meta SELECT * FROM shard.meta")
                conn.execute("INSERT OR IGNORE INTO cells SELECT * FROM shard.cells")
                conn.execute("INSERT OR IGNORE INTO rows SELECT * FROM shard.rows")
            added += conn.execute("SELECT COUNT(*) FROM rows").fetchone()[0] - before
            conn.execute("DETACH DATABASE shard")
            if remove:
                for suffix in ("", "-wal", "-shm"):
                    Path(str(shard) + suffix).unlink(missing_ok=True)
    finally:
        conn.close()
    return added


#: Row columns and the Python types a well-formed row holds in them (None: NULL allowed).
_ROW_TYPES: dict[str, tuple[type, ...]] = {
    "cell_id": (str,), "dataset": (str,), "seed": (int,), "example_id": (str,),
    "example_index": (int, type(None)), "summary": (str, type(None)), "metrics": (str, type(None)),
    "factuality": (float, int, type(None)), "factuality_scorer": (str, type(None)),
    "factuality_backend": (str, type(None)), "rerank": (str, type(None)), "error": (str, type(None)),
    "seconds": (float, int, type(None)), "created": (str, type(None)),
}


def _decode(record: tuple[Any, ...], where: str = "results") -> ResultRow:
    """A stored row, each column checked with its type and the JSON columns parsed (errors name the row)."""
    from evenhand.evaluation.data.checks import expect
    from evenhand.evaluation.io.parsing import parse_json

    values: dict[str, Any] = dict(zip(ROW_COLUMNS, record))
    where = f"{where}: row {values.get('cell_id')!r}/{values.get('dataset')!r}/{values.get('example_id')!r}"
    for column, types in _ROW_TYPES.items():
        expect(values[column], types, where, column)
    metrics = parse_json(values["metrics"] or "{}", where, nan_ok=True)
    expect(metrics, dict, where, "metrics", "a JSON object {column: number}")
    for key, value in metrics.items():
        expect(value, (float, int, type(None)), where, f"metrics.{key}", "a number or null")
    values["metrics"] = metrics
    rerank = parse_json(values["rerank"], where, nan_ok=True) if values["rerank"] else None
    values["rerank"] = expect(rerank, (dict, type(None)), where, "rerank", "a JSON object or null")
    return ResultRow(**values)


def _sweep_config(file: Path) -> str | None:
    """The sweep YAML text a results or shard file was written for (None: unreadable or none)."""
    try:
        with contextlib.closing(sqlite3.connect(_read_only(file), uri=True, timeout=60.0)) as conn:
            found = conn.execute("SELECT value FROM meta WHERE key='config'").fetchone()
    except sqlite3.DatabaseError:
        return None
    return None if found is None else str(found[0])


def _own_files(path: Path, files: list[Path]) -> list[Path]:
    """``files`` less the shards of another sweep: a shard is read only when it holds the results file's sweep.

    Shards are named by the results file (``r.part0-of2.sqlite``), so one left
    by another sweep with the same ``--results`` name would mix its cells in; its
    stored config must equal the results file's (a file without one included). A
    skipped shard gets a one-line warning naming it and the fix. Without a
    results file, the shards must hold one sweep: shards of two are refused
    (DataError), since which is this report's cannot be told.
    """
    shards = [shard for shard in files if shard != path]
    if not shards:
        return files
    if not path.exists():
        first = _sweep_config(shards[0])
        other = next((shard for shard in shards[1:] if _sweep_config(shard) != first), None)
        if other is not None:
            raise DataError(
                f"{other}: a shard of another sweep than {shards[0].name} (their configs differ) and no {path.name} "
                f"to tell which is this report's; remove the other sweep's shards, or merge each into a results file "
                f"with its own sweep (`evenhand sweep --config ITS_YAML --results {path.name} --merge`)"
            )
        return files
    own = _sweep_config(path)
    kept = [path]
    for shard in shards:
        if _sweep_config(shard) == own:
            kept.append(shard)
        else:
            warnings.warn(f"{shard}: skipped, written by another sweep than {path.name} (its config differs); "
                          "remove it, or merge it with its own sweep (`evenhand sweep --config ITS_YAML "
                          f"--results {path.name} --merge`)", IgnoredOptionWarning, stacklevel=3)
    return kept


@dataclass
class StoredResults:
    """Everything in a results file (and its shards)."""

    rows: list[ResultRow]
    cells: dict[str, tuple[str, dict[str, Any]]]  # cell_id -> (name, settings)
    meta: dict[str, str]


def read_results(path: str | Path) -> StoredResults:
    """Read rows, cells and meta from ``path`` and any shard files beside it (read-only)."""
    path = Path(path)
    files = [p for p in [path, *shard_paths(path)] if p.exists()]
    for file in files:  # SQLite would block on a FIFO and read a device forever
        if not file.is_file():
            raise DataError(f"{file}: not a regular file; give --results the SQLite file `evenhand sweep` wrote")
    if not files:
        raise FileNotFoundError(f"{path}: results file not found (run `evenhand sweep` first)")
    from evenhand.evaluation.data.checks import expect
    from evenhand.evaluation.io.parsing import parse_json

    rows: dict[tuple[str, str, int, str], ResultRow] = {}
    cells: dict[str, tuple[str, dict[str, Any]]] = {}
    meta: dict[str, str] = {}
    files = _own_files(path, files)
    for file in files:
        try:
            conn = sqlite3.connect(_read_only(file), uri=True, timeout=60.0)
        except sqlite3.DatabaseError as err:  # unreadable: permissions, a locked medium
            raise DataError(f"{file}: cannot open the results file ({err}); fix its permissions") from None
        with contextlib.closing(conn), conn:
            try:
                meta.update(dict(conn.execute("SELECT key, value FROM meta")))
                for cell_id, name, settings in conn.execute("SELECT * FROM cells"):
                    where = f"{file}: cell {cell_id!r}"
                    decoded = parse_json(settings, where) if isinstance(settings, str) else settings
                    expect(decoded, dict, where, "settings", "a JSON object of settings")
                    cells[cell_id] = (str(name), decoded)
                for record in conn.execute(f"SELECT {', '.join(ROW_COLUMNS)} FROM rows"):
                    row = _decode(record, str(file))
                    rows.setdefault(row.key, row)
            except sqlite3.DatabaseError as err:
                raise DataError(f"{file}: not an evenhand results file ({err})") from None
    ordered = sorted(rows.values(), key=lambda r: (r.dataset, r.cell_id, r.seed, r.example_index))
    return StoredResults(ordered, cells, meta)
