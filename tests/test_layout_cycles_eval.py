"""The lower layers' shape: no import cycle inside evaluation/, rerank/ or training/ (imports
inside functions count), evaluation's rooms import only down, and evaluation never names a
layer above it, not even in a string."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_layout import import_cycles

ROOT = Path(__file__).resolve().parent.parent

#: evaluation's rooms, bottom first: each may import itself and the rooms before it.
ROOMS = ("errors", "lazy", "io", "data", "text", "metrics", "scoring")
UPPER = ("evenhand.decoding", "evenhand.rerank", "evenhand.training", "evenhand.commands", "evenhand.sweep")


def module_name(root: Path, path: Path, package: str) -> str:
    """``rerank/scorers/rouge.py`` under ``rerank`` -> ``evenhand.rerank.scorers.rouge``."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((package, *parts))


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, anywhere in the file (functions too).

    ``from . import x`` counts as importing the module ``x`` (not the package); ``from .m import
    name`` as importing ``m`` (and ``m.name`` when that is a module).
    """
    files = {module_name(root, p, package): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        own = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = own.split(".")[: len(own.split(".")) - node.level + 1]
                    module = ".".join([*base, node.module] if node.module else base)
                else:
                    module = node.module or ""
                submodules = {f"{module}.{a.name}" for a in node.names} & files.keys()
                found |= submodules
                if len(submodules) < len(node.names):
                    found.add(module)
        graph[name] = (found & files.keys()) - {name}
    return graph


@pytest.mark.parametrize("layer", ["evaluation", "rerank", "training"])
def test_no_import_cycle_inside_the_layer(layer: str) -> None:
    found = import_cycles(import_graph(ROOT / layer, f"evenhand.{layer}"))
    assert not found, f"import cycles in {layer}/ (imports inside functions count):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_the_cycle_check_sees_a_cycle_through_a_function(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from .b import B\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import A  # moved into a function: still a cycle\n")
    (tmp_path / "c.py").write_text("from . import a\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.c"] == {"pkg.a"}
    assert import_cycles(graph) == [["pkg.a", "pkg.b"]]


def test_evaluation_rooms_import_only_down() -> None:
    graph = import_graph(ROOT / "evaluation", "evenhand.evaluation")
    rank = {room: i for i, room in enumerate(ROOMS)}

    def room_of(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 else None  # evenhand.evaluation.<room>...

    bad = []
    for module, imported in graph.items():
        mine = room_of(module)
        if mine is None:  # evaluation/__init__.py: the public names, from any room
            continue
        assert mine in rank, f"{module}: a room missing from ROOMS"
        for other in sorted(imported):
            theirs = room_of(other)
            if theirs is not None and rank[theirs] > rank[mine]:
                bad.append(f"{module} imports {other}")
    assert not bad, "upward imports between evaluation's rooms:\n" + "\n".join(bad)


def test_evaluation_never_names_a_layer_above_it_even_in_a_string() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:80]!r}"
        for path in (ROOT / "evaluation").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and any(name in node.value for name in UPPER)
    ]
    assert not bad, "evaluation/ names an upper layer:\n" + "\n".join(bad)


def test_upper_layers_register_their_scorers_through_the_entry_point() -> None:
    """``pyproject.toml`` declares rerank's scorer package; the registry loads it with no list of its own."""
    import importlib.metadata

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from evenhand.evaluation.scoring.registry import ENTRY_POINTS, available

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    assert declared[ENTRY_POINTS] == {"rerank": "evenhand.rerank.scorers"}
    installed = {e.name: e.value for e in importlib.metadata.entry_points(group=ENTRY_POINTS)}
    assert installed.get("rerank") == "evenhand.rerank.scorers", "reinstall: pip install -e ."
    assert {"alignscore", "llm-coverage", "rouge-l-recall", "mint", "fairsumm"} <= set(available())
