"""Every example in a docstring of evenhand's modules runs and gives what it shows (``doctest``).

The examples document the rules in words and numbers (the checker's claim rules, the
metrics' tokenization, the loaders' checks); run here, they cannot drift from the code.
Modules that import vLLM are skipped where it is not installed (the main virtualenv).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import evenhand


def _modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(evenhand.__path__, "evenhand."):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return sorted(names)


MODULES = _modules()


def test_the_walk_finds_every_layer():
    layers = {name.split(".")[1] for name in MODULES}
    assert {"evaluation", "decoding", "rerank", "training", "cli"} <= layers, layers
    assert "evenhand.rerank.checker.claims" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] == "vllm":
            pytest.skip("needs vllm")
        raise
    result = doctest.testmod(module, verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed"
