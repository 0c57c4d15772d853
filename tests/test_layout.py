"""The package layout: the layers import as ``evenhand.*`` only, and imports point down the layers."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Layer folder -> the evenhand packages it may import (itself included), bottom first.
LAYERS = {
    "evaluation": ("evenhand.evaluation",),
    "decoding": ("evenhand.evaluation", "evenhand.decoding"),
    "rerank": ("evenhand.evaluation", "evenhand.decoding", "evenhand.rerank"),
    "training": ("evenhand.evaluation", "evenhand.decoding", "evenhand.rerank", "evenhand.training"),
}
OLD_NAMES = ("evaluation", "decoding", "rerank", "training")


def package_of(path: Path) -> str:
    """The package a file of ours runs in: ``decoding/x.py`` -> ``evenhand.decoding``."""
    parts = path.resolve().relative_to(ROOT).parts[:-1]
    if parts and parts[0] in OLD_NAMES:
        return ".".join(("evenhand", *parts))
    return ".".join(parts)


def imported_modules(path: Path, package: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in a Python file; relative imports resolved in ``package``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = package_of(path) if package is None else package
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module:
                    found.append((node.lineno, node.module))
                continue
            base = package.split(".")
            assert node.level <= len(base), f"{path}:{node.lineno}: relative import beyond the top package"
            base = base[: len(base) - node.level + 1]
            if node.module:
                found.append((node.lineno, ".".join([*base, node.module])))
            else:  # from . import a, b: each name may be a module
                found += [(node.lineno, ".".join([*base, alias.name])) for alias in node.names]
    return found


def python_files() -> list[Path]:
    skip = {".venv", ".venv-vllm", ".git", "build"}
    return [p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)]


def test_imports_point_down_the_layers() -> None:
    bad = []
    for folder, allowed in LAYERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            for line, module in imported_modules(path):
                ours = module == "evenhand" or module.startswith("evenhand.")
                if ours and not any(module == a or module.startswith(a + ".") for a in allowed):
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def module_file(module: str) -> Path | None:
    """The file of one of our modules (``evenhand.decoding.x`` -> ``decoding/x.py``), or None."""
    parts = module.split(".")
    if parts[0] != "evenhand":
        return None
    rel = Path(*parts[1:]) if len(parts) > 1 else Path()
    for candidate in (ROOT / "evenhand" / rel if parts[1:2] and parts[1] not in OLD_NAMES else ROOT / rel,):
        if candidate.with_suffix(".py").is_file() and candidate.name:
            return candidate.with_suffix(".py")
        if (candidate / "__init__.py").is_file():
            return candidate / "__init__.py"
    return None


def import_graph(folder: str) -> dict[str, set[str]]:
    """Module -> the modules of the same layer it imports (at the top or inside functions).

    ``from .x import name`` counts as importing ``x`` (or ``name`` when that is a module).
    """
    top = "evenhand" if folder == "evenhand" else f"evenhand.{folder}"
    files = [p for p in (ROOT / folder).rglob("*.py") if ".venv" not in p.parts]
    if folder == "evenhand":  # the layer links are other layers
        files = [p for p in files if p.relative_to(ROOT / "evenhand").parts[0] not in OLD_NAMES]
    graph: dict[str, set[str]] = {}
    for path in files:
        name = package_of(path) if path.name == "__init__.py" else f"{package_of(path)}.{path.stem}"
        if folder == "evenhand":
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        edges = set()
        for _, module in imported_modules(path, package_of(path) if folder != "evenhand" else
                                          ".".join(path.relative_to(ROOT).parts[:-1])):
            if not (module == top or module.startswith(top + ".")):
                continue
            if folder == "evenhand" and module.split(".")[1:2] and module.split(".")[1] in OLD_NAMES:
                continue
            while module and module_file(module) is None:
                module = module.rpartition(".")[0]
            if module and module != name:
                edges.add(module)
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("folder", ["evaluation", "decoding", "rerank", "training", "evenhand"])
def test_no_import_cycle_inside_a_layer(folder: str) -> None:
    """No import cycle among a layer's modules, counting imports inside functions: an import
    moved into a function to dodge a cycle is still a cycle."""
    cycles = import_cycles(import_graph(folder))
    assert not cycles, f"import cycles in {folder}/:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_check_sees_a_cycle_through_a_function(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_file_imports_the_bare_layer_names() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in python_files()
        for line, module in imported_modules(path)
        if module.split(".")[0] in OLD_NAMES
    ]
    assert not bad, "use the evenhand.* names:\n" + "\n".join(bad)


def test_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\nfrom evenhand.rerank.registry import get_scorer\nfrom ..rerank import reranker\n")
    assert imported_modules(module, "evenhand.decoding") == [
        (1, "os"), (2, "evenhand.rerank.registry"), (3, "evenhand.rerank")
    ]
    module.write_text("from ...evaluation.schema import Example\nfrom . import x\n")
    assert imported_modules(module, "evenhand.rerank.scorers") == [
        (1, "evenhand.evaluation.schema"), (2, "evenhand.rerank.scorers.x")
    ]


def test_layers_import_each_other_relatively() -> None:
    """Inside the four layer folders every import of ours is relative, so it resolves by path
    to the real folder (decoding/ -> ../evaluation/) for type checkers as at run time."""
    absolute = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for folder in LAYERS
        for path in (ROOT / folder).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("evenhand"))
        or (isinstance(node, ast.Import) and any(a.name.startswith("evenhand") for a in node.names))
    ]
    assert not absolute, "use relative imports inside the layers:\n" + "\n".join(absolute)


def test_layer_links_point_at_the_top_level_folders() -> None:
    """evenhand/<layer> is a relative link to ../<layer>: the import name is a path."""
    for folder in LAYERS:
        link = ROOT / "evenhand" / folder
        assert link.is_symlink(), f"{link} must be a symbolic link (git core.symlinks)"
        assert Path(link.readlink() if hasattr(link, "readlink") else link.resolve()) == Path("..") / folder
        assert link.resolve() == (ROOT / folder).resolve()


@pytest.mark.parametrize("init", ["evenhand/__init__.py", "decoding/__init__.py"])
def test_lazy_tables_match_what_type_checkers_see(init: str) -> None:
    """The TYPE_CHECKING imports of a lazy package name exactly the run-time table's entries."""
    path = ROOT / init
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = package_of(path) if init != "evenhand/__init__.py" else "evenhand"
    static = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                base = package.split(".")[: len(package.split(".")) - imp.level + 1] if imp.level else []
                module = ".".join([*base, imp.module or ""])
                static.update({alias.name: module for alias in imp.names})
    table = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
    )
    assert static == table
    exported = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
    )
    assert exported == sorted(table)


@pytest.mark.parametrize(
    ("code", "ok"),
    [
        ("import evenhand.evaluation, evenhand.decoding, evenhand.rerank, evenhand.training", True),
        ("import evenhand.rerank.scorers; from evenhand.evaluation.metrics.mint import mint", True),
        ("import decoding", False),
        ("import evaluation", False),
        ("import rerank", False),
        ("import training", False),
    ],
)
def test_installed_names_outside_the_repo(tmp_path: Path, code: str, ok: bool) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    if ok:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr


def test_public_api_resolves_lazily() -> None:
    code = (
        "import sys, evenhand\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
        "missing = [n for n in evenhand.__all__ if getattr(evenhand, n, None) is None]\n"
        "assert not missing, missing\n"
        "from evenhand import get_scorer, mint\n"
        "assert get_scorer('rouge-1-recall').score(['a b c d'], ['a b']) == [0.5]\n"
        "import importlib; assert mint is importlib.import_module('evenhand.evaluation.metrics.mint').mint\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_extending_guide_runs() -> None:
    """docs/extending.md's Python blocks run as written (their asserts hold)."""
    import re

    from evenhand.evaluation.scoring.registry import unregister

    text = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2
    namespace: dict = {}
    try:
        for block in blocks:
            exec(compile(block, "docs/extending.md", "exec"), namespace)  # noqa: S102 - our own doc
        assert namespace["scores"] == [1.0, 1 / 3]
        with pytest.raises(ValueError, match="`min_length` must be a positive int"):
            namespace["get_scorer"]("supported-words", min_length=0)
    finally:
        unregister("supported-words")


def test_every_scorer_module_registers_without_a_list() -> None:
    from evenhand.evaluation.scoring.registry import _REGISTRY, available

    available()  # first lookup imports every module of both built-in scorer packages
    registered_from = {cls.__module__ for cls in _REGISTRY.values()}
    for folder, package in (
        ("rerank/scorers", "evenhand.rerank.scorers"), ("evaluation/scoring/scorers", "evenhand.evaluation.scoring.scorers")
    ):
        files = {f"{package}.{p.stem}" for p in (ROOT / folder).glob("*.py")} - {f"{package}.__init__"}
        assert files, f"no scorer modules in {folder}"
        assert files <= registered_from, f"modules that registered nothing: {files - registered_from}"
    assert {"lm-pmi", "fluency", "calibrated", "rouge-1-recall", "equal-coverage"} <= set(available())
    assert {"mint", "fragments", "fairsumm"} <= set(available())
