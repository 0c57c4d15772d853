"""The scorer protocol: ``score(sources, outputs) -> list[float]``, higher is better.

Everything that scores a summary has this shape and is registered by name in
one registry (:mod:`evenhand.evaluation.scoring.registry`): the evaluation metrics
(``mint``, ``fragments``, ``fairsumm``) as well as the model-backed rerank
scorers. A scorer may also aggregate its per-output records into corpus
statistics (:meth:`Scorer.aggregate`, rouge-score's scorer/aggregator split):
FairSumm's BUR/UER/SOF are corpus statistics, not means of per-summary values.

A *source* is what an output summarizes, given as any of:

- an ``Example`` (documents with optional group labels — group-aware scorers
  such as ``equal-coverage`` need those labels);
- a ``str``: one document without a group;
- a list of ``str``: several documents without groups (the meta-evaluation
  file's ``source`` field).

An ``Example`` with a ``target`` group (TheFlipSide's stance) is scored against
its target group's documents only (``config.target_only``, default True: a
perspective summary is judged on its own perspective); ``equal-coverage``
defaults to False, as it compares all groups.

``Scorer.score`` validates the inputs, looks every pair up in the cache, scores
the missing ones in batches of ``config.batch_size`` (with a progress bar when
there are many), stores them and returns one float per output.
``Scorer.score_details`` returns the full records (``score`` plus what the scorer
reports: the judge's argmax digit, the backend's name...).

Subclasses implement ``_score_batch(sources, outputs) -> list[dict]`` (each dict
with a float ``score``) on normalized sources, and set ``model_id`` (the cache
key part naming the model) when a model is involved.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar, Union, cast

from ..data.schema import Document, Example
from ..errors import DataError

#: What a scorer accepts per output: see the module docstring.
Source = Union[Example, str, Sequence[str]]


@dataclass
class ScorerConfig:
    """Settings every scorer has; each scorer's ``Config`` extends this."""

    batch_size: int = field(default=16, metadata={"help": "Pairs (or prompts) per model call."})
    progress: bool = field(default=True, metadata={"help": "Progress bar for long inputs."})
    target_only: bool = field(
        default=True,
        metadata={"help": "When an Example names a `target` group, score against its documents only."},
    )

    def __post_init__(self) -> None:
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"`batch_size` must be a positive int, got {self.batch_size!r}")


#: The config type a scorer class takes (``Scorer[RougeConfig]``).
ConfigT = TypeVar("ConfigT", bound=ScorerConfig)


def as_example(source: Source, index: int = 0) -> Example:
    """Normalize one source to an ``Example`` (see the module docstring for the accepted forms)."""
    if isinstance(source, Example):
        return source
    if isinstance(source, str):
        docs = [Document(source)]
    elif isinstance(source, Sequence) and all(isinstance(t, str) for t in source):
        docs = [Document(t) for t in source]
    else:
        raise DataError(
            f"sources[{index}]: expected an Example, a str or a list of str, "
            f"got {type(source).__name__}"
        )
    if not docs or not any(d.text.strip() for d in docs):
        raise DataError(f"sources[{index}] is empty; every output needs a non-empty source")
    return Example(id=f"source-{index}", documents=[d for d in docs if d.text.strip()])


def target_view(example: Example) -> Example:
    """The example restricted to its target group's documents (itself when there are none)."""
    if example.target is None:
        return example
    docs = [d for d in example.documents if d.group == example.target]
    if not docs or len(docs) == len(example.documents):
        return example
    return Example(id=example.id, documents=docs, attribute=example.attribute, target=example.target)


def source_key(example: Example) -> list[list[str | None]]:
    """What identifies a source in cache keys and candidate sets: its documents' ``[text, group]``."""
    return [[d.text, d.group] for d in example.documents]


class Scorer(Generic[ConfigT]):
    """Base class of every scorer.

    Args:
        config: the scorer's ``Config`` instance (default: its defaults).
        cache_dir: a folder for an on-disk JSONL cache (``<name>.jsonl``) shared
            across runs; None keeps the cache in memory only.

    Class attributes set by subclasses / ``@register``: ``name`` (registry name),
    ``Config`` (the dataclass), ``higher_is_better`` (always True here: scorers
    whose natural metric is a cost return its negation).
    """

    #: Registry name (a class attribute; ``calibrated:X`` instances name their file).
    name: str = "scorer"
    Config: ClassVar[type[ScorerConfig]] = ScorerConfig
    #: Names of the per-output fields ``score_details`` reports besides ``score``.
    detail_fields: ClassVar[tuple[str, ...]] = ()
    #: A config field set from the name (``calibrated:X`` sets ``path``), or None.
    argument: ClassVar[str | None] = None
    argument_help: ClassVar[str] = ""
    #: Command-line options (argparse dests such as ``judge_model``) -> the config field each sets.
    cli_options: ClassVar[dict[str, str]] = {}
    #: Whether records go through the score cache (pure, cheap metrics skip it).
    cacheable: ClassVar[bool] = True
    #: Bumped when the scorer's code changes what it scores; part of the cache key when nonzero (so
    #: cached records of the old code are never reused, and scorers never bumped keep their keys).
    score_version: ClassVar[int] = 0

    def __init__(self, config: ConfigT | None = None, cache_dir: str | Path | None = None):
        self.config: ConfigT = cast(ConfigT, config if config is not None else self.Config())
        if not isinstance(self.config, self.Config):
            raise TypeError(
                f"scorer {self.name!r} takes a {self.Config.__name__}, got {type(self.config).__name__}"
            )
        #: The name it was asked for (``calibrated:x.json``), set by ``get_scorer``; names its columns.
        self.label = self.name
        self._cache: dict[str, dict[str, Any]] = {}
        self._cache_file: Path | None = None
        if cache_dir is not None and self.cacheable:
            self._cache_file = Path(cache_dir) / f"{self.name}.jsonl"
            self._load_disk_cache()

    # -- what subclasses provide -------------------------------------------------
    @property
    def model_id(self) -> str:
        """Names the model behind the scores (part of the cache key); '' when none."""
        return ""

    @property
    def backend_label(self) -> str:
        """The model behind the scores as a reader should see it (the ``<label>_backend`` column)."""
        return self.model_id

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        """Score one batch; one dict with a float ``score`` per output."""
        raise NotImplementedError

    # -- public API ----------------------------------------------------------------
    def score(self, sources: Sequence[Source], outputs: Sequence[str]) -> list[float]:
        """One score per output, higher is better."""
        return [float(r["score"]) for r in self.score_details(sources, outputs)]

    def score_one(self, source: Source, output: str) -> float:
        """The score of a single output (same value as inside a batch)."""
        return self.score([source], [output])[0]

    def score_details(
        self, sources: Sequence[Source], outputs: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Per output the scorer's full record: ``score`` plus its ``detail_fields``."""
        examples, outputs = self._validate(sources, outputs)
        keys = [self._key(ex, out) for ex, out in zip(examples, outputs)]
        todo: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in self._cache and key not in todo:
                todo[key] = i
        if todo:
            self._fill(list(todo.items()), examples, outputs)
        return [dict(self._cache[k]) for k in keys]

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        """One output's columns in ``evaluate``'s per-summary table, from its ``score_details`` record.

        By default the score under the name the scorer was asked for (``label``),
        plus ``<label>_backend`` naming the model when there is one (``backend_label``).
        """
        row: dict[str, Any] = {self.label: float(record["score"])}
        if self.backend_label:
            row[f"{self.label}_backend"] = self.backend_label
        return row

    def aggregate(self, records: list[dict[str, Any]]) -> dict[str, float]:
        """Corpus statistics over the outputs' ``score_details`` records.

        By default the mean score under the name the scorer was asked for
        (``label``); corpus metrics (FairSumm's BUR/UER/SOF...) override this.
        """
        values = [float(r["score"]) for r in records]
        return {self.label: sum(values) / len(values)}

    def cache_clear(self) -> None:
        """Forget the in-memory cache (the on-disk file is kept)."""
        self._cache.clear()

    # -- internals -----------------------------------------------------------------
    def _validate(
        self, sources: Sequence[Source], outputs: Sequence[str]
    ) -> tuple[list[Example], list[str]]:
        if isinstance(outputs, str):
            raise DataError("`outputs` must be a list of strings, got one str; wrap it in a list")
        if len(sources) != len(outputs):
            raise DataError(
                f"`sources` and `outputs` differ in length ({len(sources)} vs {len(outputs)}); "
                "give one source per output"
            )
        for i, out in enumerate(outputs):
            if not isinstance(out, str):
                raise DataError(f"outputs[{i}] must be a str, got {type(out).__name__}")
        examples = [as_example(s, i) for i, s in enumerate(sources)]
        if self.config.target_only:
            examples = [target_view(ex) for ex in examples]
        return examples, list(outputs)

    def _unkeyed_settings(self) -> set[str]:
        """Config fields that do not change a score, left out of the cache key."""
        # target_only acts on the key's source; max_concurrency/timeout only pace a server
        return {"batch_size", "progress", "target_only", "max_concurrency", "timeout"}

    def _fingerprint(self) -> str:
        skip = self._unkeyed_settings()
        settings = {k: v for k, v in asdict(self.config).items() if k not in skip}
        identity: list[Any] = [self.name, self.model_id, settings]
        if self.score_version:
            identity.append({"score_version": self.score_version})
        content = self._cached_model_content()
        if content is not None:  # a local model replaced in place (same name, same sizes) scores anew
            identity.append(content)
        return json.dumps(identity, sort_keys=True, default=str)

    def _cached_model_content(self) -> list[str] | None:
        """:meth:`_model_content`, once per scorer (a stat per file, a hash when new)."""
        if getattr(self, "_content", False) is False:
            self._content = self._model_content()
        return self._content

    def _model_content(self) -> list[str] | None:
        """Content digests of the local files or folders ``model_id`` names (``a|b``, ``n=a,m=b``), or None."""
        import re

        from ..io.digests import content_digest

        digests = []
        for part in re.split(r"[|,]", self.model_id or ""):
            for candidate in (part, part.split("=", 1)[-1]):
                if candidate and not candidate.startswith(("http://", "https://")):
                    digest = content_digest(candidate)
                    if digest is not None:
                        digests.append(digest)
                        break
        return digests or None

    def _key(self, example: Example, output: str) -> str:
        blob = json.dumps([self._fingerprint(), source_key(example), output], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _fill(self, todo: list[tuple[str, int]], examples: list[Example], outputs: list[str]) -> None:
        from ..io.progress import Progress, open_bars, report_fraction

        size = self.config.batch_size
        # its own bar unless a caller's is shown (then batches move the caller's work in flight)
        outer = open_bars() > 0
        bar = Progress(len(todo), self.name, "out", disable=not self.config.progress or len(todo) <= size or outer)
        for start in range(0, len(todo), size):
            chunk = todo[start : start + size]
            results = self._score_batch(
                [examples[i] for _, i in chunk], [outputs[i] for _, i in chunk]
            )
            if len(results) != len(chunk):
                raise RuntimeError(
                    f"scorer {self.name!r} returned {len(results)} results for {len(chunk)} outputs"
                )
            fresh = {}
            for (key, _), result in zip(chunk, results):
                record = {k: v for k, v in result.items()}
                record["score"] = float(record["score"])
                fresh[key] = record
            self._cache.update(fresh)
            self._append_disk_cache(fresh)
            bar.update(len(chunk))
            if outer:
                report_fraction((start + len(chunk)) / len(todo))
        bar.close()

    def _load_disk_cache(self) -> None:
        assert self._cache_file is not None
        from ..io.output_checks import check_output_path

        check_output_path(self._cache_file, "--score-cache", append=True)  # never a FIFO, device or folder
        if not self._cache_file.exists():
            return
        from ..data.checks import expect
        from ..io.parsing import parse_json
        from ..io.utf8 import read_utf8

        path = self._cache_file
        fix = f"delete {path} (the scores are recomputed) or pass --score-cache none"
        text = read_utf8(path, "--score-cache")
        lines = text.split("\n")
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = parse_json(line, where, nan_ok=True)
            except DataError as err:
                if lineno == len(lines):
                    continue  # a torn last line from a killed run (no newline after it)
                raise DataError(f"{err}; {fix}") from None
            try:
                expect(row, dict, where, "$", "an object {key, result}")
                expect(row.get("key"), str, where, "key")
                result = expect(row.get("result"), dict, where, "result", "an object with a `score`")
                expect(result.get("score"), (float, int), where, "result.score", "a number")
            except DataError as err:
                raise DataError(f"{err}; {fix}") from None
            self._cache[row["key"]] = result

    def _append_disk_cache(self, fresh: dict[str, dict[str, Any]]) -> None:
        if self._cache_file is None or not fresh:
            return
        from ..io.locks import output_lock
        from ..io.output_checks import write_errors

        text = "".join(
            json.dumps({"key": key, "result": result}, ensure_ascii=False) + "\n" for key, result in fresh.items()
        ).encode("utf-8")
        with write_errors(self._cache_file, "the scores cached before are kept"):
            self._cache_file.parent.mkdir(parents=True, exist_ok=True)
            # one writer at a time (other runs share the cache): wait for a short append, never interleave
            with output_lock(self._cache_file, "--score-cache", wait=120), self._cache_file.open("ab") as f:
                size = f.tell()
                try:
                    f.write(text)
                    f.flush()
                except OSError:
                    f.truncate(size)
                    raise

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, config={self.config})"


@dataclass
class MetricConfig(ScorerConfig):
    """Settings of the evaluation metrics (``mint``, ``fragments``, ``fairsumm``)."""

    target_only: bool = field(
        default=False,
        metadata={"help": "Score against the target group's documents only (off: metrics see all)."},
    )


MetricConfigT = TypeVar("MetricConfigT", bound=MetricConfig)


class MetricScorer(Scorer[MetricConfigT]):
    """A pure, cheap metric: every column computed for a whole batch at once, never cached.

    Subclasses set ``detail_fields`` (the report's columns, in order) and
    implement ``rows(examples, summaries)``: one dict of those columns per
    summary, plus ``_``-private objects for ``aggregate`` that never reach a
    table; and ``score_of(row)``, the per-summary score (higher is better).
    The default ``aggregate`` is the mean of every column.
    """

    Config = MetricConfig
    cacheable = False

    def rows(self, examples: list[Example], summaries: list[str]) -> list[dict[str, Any]]:
        """One dict of ``detail_fields`` columns per summary."""
        raise NotImplementedError

    def score_of(self, row: dict[str, Any]) -> float:
        """The per-summary score of a row (higher is better)."""
        raise NotImplementedError

    def score_details(
        self, sources: Sequence[Source], outputs: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Per output ``score`` plus the metric's columns (and its ``_``-private objects)."""
        examples, outputs = self._validate(sources, outputs)
        return [{"score": float(self.score_of(r)), **r} for r in self.rows(examples, outputs)]

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        """The metric's columns (``detail_fields``) of one record."""
        return {k: record[k] for k in self.detail_fields}

    def aggregate(self, records: list[dict[str, Any]]) -> dict[str, float]:
        """The corpus mean of every column."""
        import numpy as np

        return {c: float(np.mean([r[c] for r in records])) for c in self.detail_fields}
