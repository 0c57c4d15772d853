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


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def python_files() -> list[Path]:
    skip = {".venv", ".git", "build"}
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
    module.write_text("import os\nfrom evenhand.rerank.registry import get_scorer\n")
    assert imported_modules(module) == [(1, "os"), (2, "evenhand.rerank.registry")]


@pytest.mark.parametrize(
    ("code", "ok"),
    [
        ("import evenhand.evaluation, evenhand.decoding, evenhand.rerank, evenhand.training", True),
        ("import evenhand.rerank.scorers; from evenhand.evaluation.mint import mint", True),
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
        "import importlib; assert mint is importlib.import_module('evenhand.evaluation.mint').mint\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_extending_guide_runs() -> None:
    """docs/extending.md's Python blocks run as written (their asserts hold)."""
    import re

    from evenhand.evaluation.registry import unregister

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
    from evenhand.evaluation.registry import _REGISTRY, available

    available()  # first lookup imports every module of both built-in scorer packages
    registered_from = {cls.__module__ for cls in _REGISTRY.values()}
    for layer, package in (("rerank", "evenhand.rerank.scorers"), ("evaluation", "evenhand.evaluation.scorers")):
        files = {f"{package}.{p.stem}" for p in (ROOT / layer / "scorers").glob("*.py")} - {f"{package}.__init__"}
        assert files <= registered_from, f"modules that registered nothing: {files - registered_from}"
    assert {"lm-pmi", "fluency", "calibrated", "rouge-1-recall", "equal-coverage"} <= set(available())
    assert {"mint", "fragments", "fairsumm"} <= set(available())
