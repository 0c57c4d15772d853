"""What every engine is: the :class:`Engine` protocol, its :class:`Capabilities`, and the registry.

An engine turns examples into summaries under a ``GenerateConfig``. One file per
engine implements the protocol (``transformers.py`` in-process, ``vllm.py`` an
in-process vLLM, ``server.py`` an OpenAI-compatible server named by a URL) and
declares what it can do in its ``capabilities``; :func:`refuse_unsupported` is the
one place that refuses a setting an engine cannot honour (a ``DataError``, one line,
before any decoding). Engines are registered by name with a lazy ``"module:Class"``
entry, so an engine's heavy import (vLLM) happens only when it is asked for:
:func:`open_engine` is how every caller (commands, sweep, demo, training, LM scorers)
gets one, and ``--engine``'s choices are :func:`engine_names`.

Adding an engine is one file: a class with the protocol's members, registered with
``register_engine("name", "package.module:Class")`` (or the class itself).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ...evaluation.data.schema import Example
from ...evaluation.errors import DataError

if TYPE_CHECKING:
    from ..config import DecodingSettings, GenerateConfig
    from ..processors.builders import ProcessorBuilder


#: Why an engine refuses a ``lora_request`` (only the vLLM engine takes one).
NEEDS_VLLM = (
    "`lora_request` is a vLLM LoRA request: it needs a VllmEngine model "
    "(an in-process model carries its adapter itself)"
)


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do. Each field is None when it can, else the one-line reason it cannot
    (the ``DataError`` message :func:`refuse_unsupported` raises).

    Attributes:
        processor_builders: a caller's transformers logits processors (``processor_builders``).
        abstractiveness: the abstractiveness constraint / extraction reward; ``{name}`` in the
            message is replaced by the field set (``abstractiveness`` or ``extractiveness``).
        group_bonus: fair decoding's group-coverage bonus (``fairness_strength``).
        response_prefix: an explicit ``response_prefix``; ``{value}`` is replaced by its repr.
            Fair beam search is exempt (it runs on token ids, prefix included).
        fair_beam_with_bonus: fair beam search together with the group bonus.
        fair_beam_with_abstractiveness: fair beam search together with abstractiveness.
        lora_request: a vLLM ``LoRARequest`` per call.
        beam_with_raising_processors: when False, a plain beam search with a processor that
            raises tokens (abstractiveness, the group bonus) decodes greedily (with a warning).
        chunk: examples the engine takes per call at most when it batches itself (vLLM: 64),
            None for ``config.batch_size``.
        shares_model: the engine holds an in-process transformers model that LM scorers may
            share (``Engine.shared_model``).
    """

    processor_builders: str | None = None
    abstractiveness: str | None = None
    group_bonus: str | None = None
    response_prefix: str | None = None
    fair_beam_with_bonus: str | None = None
    fair_beam_with_abstractiveness: str | None = None
    lora_request: str | None = NEEDS_VLLM
    beam_with_raising_processors: bool = True
    chunk: int | None = None
    shares_model: bool = False


class Engine(Protocol):
    """What ``generate`` needs from an engine (see the module docstring)."""

    #: the registry name (``--engine``; what output manifests record)
    kind: ClassVar[str]

    @property
    def capabilities(self) -> Capabilities:
        """What this engine can do."""
        ...

    @property
    def tokenizer(self) -> Any:
        """The tokenizer prompts are built with (None where the engine templates them itself)."""
        ...

    def prepare(self, config: GenerateConfig) -> None:
        """Checks that need the engine but no model (a server's probes), before any output."""
        ...

    def check_prompts(self, examples: Sequence[Example], config: GenerateConfig) -> None:
        """Raise DataError for the first prompt longer than the context (before a progress bar)."""
        ...

    def summarize(
        self,
        examples: Sequence[Example],
        config: GenerateConfig,
        processor_builders: Sequence[ProcessorBuilder] = (),
        progress: bool = True,
        on_batch: Callable[[list[Example], list[str]], None] | None = None,
        lora_request: Any = None,
    ) -> list[str]:
        """One summary per example (``decoding.generate.generate``'s contract)."""
        ...

    def shared_model(self) -> tuple[Any, Any] | None:
        """``(model, tokenizer)`` LM scorers may share, or None (``capabilities.shares_model``)."""
        ...

    def close(self) -> None:
        """Release what the engine holds (a later call may load it again)."""
        ...


def is_engine(model: object) -> bool:
    """Whether ``model`` is an engine (else ``generate`` takes it for a transformers model)."""
    return hasattr(model, "summarize") and hasattr(model, "capabilities")


def raises_tokens(config: GenerateConfig) -> bool:
    """Whether ``config`` asks for a processor that raises tokens (the group bonus, abstractiveness)."""
    return bool(config.fairness_strength > 0 or config.abstractiveness or config.extractiveness)


def refuse_unsupported(
    capabilities: Capabilities, config: GenerateConfig,
    processor_builders: Sequence[Any] = (), lora_request: Any = None,
) -> None:
    """Raise ``DataError`` for the first setting of ``config`` the engine cannot honour.

    The one place where what an engine declares (``capabilities``) meets what a call
    asks for; it reads the config only, so commands call it before any file or model.
    """
    c = capabilities
    if lora_request is not None and c.lora_request:
        raise ValueError(c.lora_request)
    if config.beam_search:
        if config.fairness_strength > 0 and c.fair_beam_with_bonus:
            raise DataError(c.fair_beam_with_bonus)
        if (config.abstractiveness or config.extractiveness) and c.fair_beam_with_abstractiveness:
            raise DataError(c.fair_beam_with_abstractiveness)
    else:
        if (config.abstractiveness is not None or config.extractiveness is not None) and c.abstractiveness:
            name = "abstractiveness" if config.abstractiveness is not None else "extractiveness"
            raise DataError(c.abstractiveness.replace("{name}", name))
        if config.fairness_strength > 0 and c.group_bonus:
            raise DataError(c.group_bonus)
    if processor_builders and c.processor_builders:
        raise DataError(c.processor_builders)
    if not config.beam_search and config.response_prefix and c.response_prefix:
        raise DataError(c.response_prefix.replace("{value}", repr(config.response_prefix)))


# -- the summaries of one call ----------------------------------------------------------------
def batches(items: Sequence[Example], size: int) -> Iterator[tuple[int, list[Example]]]:
    """``(start, batch)`` of ``items`` cut into batches of ``size``."""
    for start in range(0, len(items), size):
        yield start, list(items[start : start + size])


def pending_batches(
    examples: Sequence[Example], batch_size: int, needed: Callable[[Example], bool]
) -> list[tuple[int, list[Example]]]:
    """The batches ``generate`` cuts from ``examples`` that hold an example still ``needed``.

    Each is ``(start, batch)`` over the *full* list: decoding a batch with seed
    ``seed + start`` (what ``generate`` does over the whole list, and the sweep
    per unit) gives the same summaries as the uninterrupted run, because the
    batch has the same examples. So a resumed run regenerates an interrupted
    batch whole, and a ``--limit`` that cuts a batch still decodes all of it,
    keeping only the needed examples.
    """
    return [(s, b) for s, b in batches(examples, batch_size) if any(needed(ex) for ex in b)]


def validate_examples(examples: Sequence[Example], where_files: bool = True) -> None:
    """``Example.validate`` each example, naming its file:line (or ``examples[i]``)."""
    for i, ex in enumerate(examples):
        ex.validate(ex.where(f"examples[{i}]") if where_files else f"examples[{i}]")


class SummaryCollector:
    """The summaries of one ``generate`` call (any engine): cleaned when ``config.clean``,
    handed to ``on_batch`` per batch, counted per example on a progress bar (with the batch in
    flight shown as it decodes, when the engine reports its steps: ``begin``)."""

    def __init__(
        self, total: int, config: GenerateConfig,
        on_batch: Callable[[list[Example], list[str]], None] | None, progress: bool,
    ) -> None:
        from ...evaluation.io.progress import Progress

        self.config, self.on_batch = config, on_batch
        self.outputs: list[str] = []
        self.bar = Progress(total, "generate", "ex", disable=not progress)

    def begin(self, batch: Sequence[Example]) -> None:
        """``batch`` starts decoding (its steps move the bar of whoever shows progress)."""
        self.bar.begin(len(batch))

    def add(self, batch: list[Example], texts: list[str]) -> None:
        """Keep one batch's summaries (in example order)."""
        from ..prompts.templates import clean_summary

        if self.config.clean:
            texts = [clean_summary(t) for t in texts]
        self.outputs.extend(texts)
        if self.on_batch is not None:
            self.on_batch(batch, texts)
        self.bar.update(len(batch))

    def close(self) -> list[str]:
        """All summaries so far; closes the progress bar."""
        self.bar.close()
        return self.outputs


def sampling_values(config: DecodingSettings) -> dict[str, Any]:
    """The OpenAI-style sampling parameters of ``config`` (vLLM's ``SamplingParams``, a server's
    request): ``max_tokens``, and ``temperature``/``top_p``/``top_k`` — greedy (0, 1.0, 0)
    without ``do_sample``, unset ``top_p``/``top_k`` as 1.0/0 (off) with it."""
    values: dict[str, Any] = {"max_tokens": int(config.max_new_tokens)}
    if config.do_sample:
        values.update(
            temperature=float(config.temperature),
            top_p=float(config.top_p) if config.top_p is not None else 1.0,
            top_k=int(config.top_k) if config.top_k else 0,
        )
    else:
        values.update(temperature=0.0, top_p=1.0, top_k=0)
    return values


# -- the registry ------------------------------------------------------------------------------
#: The default of ``--engine``: in-process transformers (a server URL as the model opens "server").
DEFAULT_ENGINE = "transformers"
#: The engine a server URL (``http://HOST:PORT/v1[#MODEL]``) opens.
URL_ENGINE = "server"
_REGISTRY: dict[str, str | type] = {
    "transformers": "evenhand.decoding.engines.transformers:TransformersEngine",
    "vllm": "evenhand.decoding.engines.vllm_engine:VllmEngine",
    URL_ENGINE: "evenhand.decoding.engines.server:ServerEngine",
}


def register_engine(name: str, target: str | type) -> None:
    """Register an engine class under ``name``: the class, or ``"module:Class"`` imported on first use."""
    if not isinstance(name, str) or not name or name in _REGISTRY:
        raise ValueError(f"engine {name!r} is already registered (or not a name); pick another name")
    if isinstance(target, str) and ":" not in target:
        raise ValueError(f"engine {name!r}: give the class or 'package.module:Class', got {target!r}")
    _REGISTRY[name] = target


def unregister_engine(name: str) -> None:
    """Remove a registered engine (tests)."""
    _REGISTRY.pop(name, None)


def engine_names() -> tuple[str, ...]:
    """The names ``--engine`` takes (every registered engine but the one server URLs open)."""
    return tuple(n for n in _REGISTRY if n != URL_ENGINE)


def engine_class(name: str) -> Any:
    """The class registered as ``name`` (imported now if lazy); DataError naming the choices."""
    if name not in _REGISTRY:
        raise DataError(f"--engine must be one of {', '.join(engine_names())}, got {name!r}")
    target = _REGISTRY[name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
        _REGISTRY[name] = target
    return target


def open_engine(model: str, engine: str = DEFAULT_ENGINE, **options: Any) -> Any:
    """The engine serving ``model``, checked but not loaded (models load on first use).

    Args:
        model: an embedded alias, local folder, LoRA adapter folder or cached HF id; or a
            server URL ``http://HOST:PORT/v1[#MODEL]`` (the "server" engine).
        engine: a registered engine name (``--engine``; default in-process transformers).
        **options: the engine's own (``device`` for transformers; ``settings`` for vLLM;
            ``server`` (a ``ServerConfig``) and ``processors`` for a server URL). Options an
            engine does not take are ignored.

    Raises DataError (one line) for an unknown engine name or a model it cannot serve.
    """
    from .http import is_server_url

    if engine not in engine_names():
        raise DataError(f"--engine must be one of {', '.join(engine_names())}, got {engine!r}")
    name = URL_ENGINE if is_server_url(model) and engine == DEFAULT_ENGINE else engine
    return engine_class(name).open(model, **options)
