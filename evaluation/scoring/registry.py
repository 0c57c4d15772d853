"""The one registry of everything that scores a summary: ``@register("name")``, ``get_scorer(name)``.

Evaluation metrics (``mint``, ``fragments``, ``fairsumm``) and model-backed
rerank scorers (``alignscore``, ``llm-coverage``...) are all ``Scorer``
subclasses (:mod:`evenhand.evaluation.scoring.scorer`) registered here, and every
command (``evaluate``, ``rerank``, ``meta-eval``, ``calibrate``, ``train``,
``sweep``) resolves names, and lists its choices, through this module.

Adding a scorer is one module: subclass ``Scorer``, give it a ``Config``
dataclass, decorate it with ``@register("my-scorer")`` (``docs/extending.md``).
This layer's own scorers (the metrics) are the modules of :data:`BUILTIN_PACKAGE`.
Every other package adds its scorers to every command through an entry point
of the ``evenhand.scorers`` group (:data:`ENTRY_POINTS`) naming a module or a
package: the layers above declare theirs in ``pyproject.toml`` like any
installed plug-in, so this layer names none of them. All are imported on the
first lookup; a package's every module is, so a new scorer is one file in it.

A scorer class whose ``argument`` names one of its config fields takes that
field in its name: ``calibrated:faithfulness`` or ``calibrated:CAL.json`` is
the ``calibrated`` scorer with ``path`` set; every command that takes scorer
names accepts that form.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from .scorer import Scorer

_REGISTRY: dict[str, type[Scorer]] = {}


class UnknownScorerError(KeyError, ValueError):
    """A scorer name that is not registered; the message lists the available ones."""

    def __str__(self) -> str:
        return str(self.args[0])


S = TypeVar("S", bound=type[Scorer])


def register(name: str) -> Callable[[S], S]:
    """Class decorator registering a scorer under ``name``; duplicates raise ValueError."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a scorer name must be a non-empty string, got {name!r}")

    def decorate(cls: S) -> S:
        if not (isinstance(cls, type) and issubclass(cls, Scorer)):
            raise TypeError(f"@register({name!r}) needs a Scorer subclass, got {cls!r}")
        if name in _REGISTRY:
            raise ValueError(
                f"a scorer named {name!r} is already registered ({_REGISTRY[name].__qualname__}); "
                "pick another name"
            )
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


#: Entry-point group through which the layers above and installed packages add scorers to every command.
ENTRY_POINTS = "evenhand.scorers"
#: This layer's scorers (the evaluation metrics): every module is imported on the first lookup.
BUILTIN_PACKAGE = "evenhand.evaluation.scoring.scorers"
_loaded = False


def import_scorers(module: ModuleType) -> None:
    """Import every module of a package of scorers (each registers its scorers with ``@register``).

    A plain module (not a package) has registered its scorers by being imported; nothing more is done.
    """
    import importlib
    import pkgutil

    path = getattr(module, "__path__", None)
    if path is None:
        return
    for name in sorted(m.name for m in pkgutil.iter_modules(path)):
        importlib.import_module(f"{module.__name__}.{name}")


def _load_builtins() -> None:
    """Import :data:`BUILTIN_PACKAGE` and every ``evenhand.scorers`` entry point's module or package, once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    import importlib.metadata

    import_scorers(importlib.import_module(BUILTIN_PACKAGE))
    for entry in importlib.metadata.entry_points(group=ENTRY_POINTS):
        loaded = entry.load()  # a module registers its scorers with @register when imported
        if isinstance(loaded, ModuleType):
            import_scorers(loaded)


def available() -> list[str]:
    """Names of every registered scorer, sorted."""
    _load_builtins()
    return sorted(_REGISTRY)


def described() -> str:
    """The registered names as a CLI help list (``calibrated:PATH`` for scorers taking an argument)."""
    _load_builtins()
    return ", ".join(_shown(n) for n in sorted(_REGISTRY))


def _shown(name: str) -> str:
    argument = _REGISTRY[name].argument
    return f"{name}:{argument.upper()}" if argument else name


def split_name(name: str) -> tuple[str, str | None]:
    """``"calibrated:x.json"`` -> ``("calibrated", "x.json")``; a plain name -> ``(name, None)``."""
    base, sep, argument = name.partition(":")
    return base, (argument if sep else None)


def scorer_class(name: str) -> type[Scorer]:
    """The class registered as ``name`` (``base:argument`` names too).

    Unknown names raise UnknownScorerError (a KeyError) listing the available
    ones; an argument given to a scorer that takes none, or missing where one is
    needed, raises UnknownScorerError saying so.
    """
    _load_builtins()
    base, argument = split_name(name)
    if base not in _REGISTRY:
        raise UnknownScorerError(f"Unknown scorer {name!r}. Available: {described()}")
    cls = _REGISTRY[base]
    if argument is not None and cls.argument is None:
        raise UnknownScorerError(f"scorer {base!r} takes no argument; use {base!r} without ':{argument}'")
    if cls.argument is not None and not argument:
        raise UnknownScorerError(
            f"scorer {base!r} needs its {cls.argument}: write {base}:{cls.argument.upper()}"
            + (f" ({cls.argument_help})" if cls.argument_help else "")
        )
    return cls


def check_names(names: str | Iterable[str], flag: str = "scorers") -> list[str]:
    """Scorer names from a comma-separated string or a list, in order.

    Each name is checked (:func:`scorer_class`); an unknown one raises
    UnknownScorerError prefixed with ``flag``; no name at all raises it too.
    """
    from ..data.lists import split_list

    checked = split_list(names, flag, empty_ok=True)
    if not checked:
        raise UnknownScorerError(f"`{flag}` is empty; give scorer names. Available: {described()}")
    for name in checked:
        try:
            scorer_class(name)
        except UnknownScorerError as err:
            raise UnknownScorerError(f"{flag}: {err}") from None
    return checked


def is_registered(name: str) -> bool:
    """Whether ``name`` resolves to a scorer (see ``scorer_class``)."""
    try:
        scorer_class(name)
    except UnknownScorerError:
        return False
    return True


def get_scorer(name: str, cache_dir: str | Path | None = None, **config: Any) -> Scorer:
    """Build the scorer registered as ``name`` with config fields ``config``.

    Args:
        name: a registered name (see ``available()``).
        cache_dir: optional folder for the on-disk score cache.
        **config: fields of the scorer's ``Config``; unknown fields raise TypeError
            listing the valid ones.
    """
    cls = scorer_class(name)
    if cls.argument is not None:
        config = {**config, cls.argument: split_name(name)[1]}
    fields = {f.name for f in dataclasses.fields(cls.Config) if f.init}
    unknown = sorted(set(config) - fields)
    if unknown:
        raise TypeError(
            f"scorer {name!r} has no option(s) {unknown}; its options: {', '.join(sorted(fields))}"
        )
    scorer = cls(cls.Config(**config), cache_dir=cache_dir)
    scorer.label = name
    return scorer


def unregister(name: str) -> None:
    """Remove a registered scorer (for tests and interactive sessions)."""
    _REGISTRY.pop(name, None)
