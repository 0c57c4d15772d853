#!/usr/bin/env python3
"""Freeze a virtualenv made by ``tools/install.py --unlocked`` into a lock file (``make lock``).

The lock is a pip/uv constraints file: it pins every package the virtualenv holds, except
evenhand itself (editable), torch and its CUDA libraries (installed first as the machine's
``torch==2.13.0``), llama-cpp-python (built here from a pinned sdist) and uv (pinned in
tools/install.py). Standard library only.

Before the lock is written, the exactness tests (:data:`EXACTNESS_TESTS`: the metrics that
reproduce published code, FairSumm's through ``evenhand evaluate`` on the shared gold sets)
run with the fresh virtualenv's packages; when one fails, the lock file is left as it was and
the command exits 1, so an upgrade (NLTK changed FairSumm's tokens in 3.10) cannot change a
published metric unnoticed. They need the shared data (``../shared/data``, where the tests
read it), without which the FairSumm checks would only skip.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

SKIP = ("torch", "nvidia-", "triton", "llama-cpp-python", "llama_cpp_python", "uv")
ROOT = Path(__file__).resolve().parent.parent

#: The tests that hold evenhand's metrics to their authors' numbers (run from the repository root).
EXACTNESS_TESTS = (
    "tests/test_fairsumm_authors.py",
    "tests/test_fairsumm_words.py",
    "tests/test_eval_fairsumm.py",
    "tests/test_eval_mint.py",
    "tests/test_eval_fragments.py",
    "tests/test_eval_cli_exact.py",
    "tests/test_abstractiveness.py::test_authors_vectors",
)

#: What the FairSumm exactness tests read (they skip without it).
SHARED_DATA = ROOT.parent / "shared" / "data" / "perspectivesumm"


def frozen_lines(venv: Path) -> list[str]:
    """``pip freeze`` of ``venv``, less evenhand, what :data:`SKIP` names and anything not ``name==version``."""
    frozen = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    keep = []
    for line in frozen:
        name = line.split("==")[0].split(" @ ")[0].strip().lower()
        if not line or line.startswith("#") or "==" not in line:
            continue
        if name == "uv" or any(name.startswith(s) for s in SKIP if s != "uv"):
            continue
        keep.append(line)
    return keep


def check_exactness(venv: Path, tests: tuple[str, ...] | None = None, data: Path | None = None) -> str:
    """Run ``tests`` (:data:`EXACTNESS_TESTS`) with ``venv``'s Python, after checking that ``data``
    (:data:`SHARED_DATA`) is there; a summary line, or SystemExit naming what failed."""
    tests = EXACTNESS_TESTS if tests is None else tests
    data = SHARED_DATA if data is None else data
    if not data.is_dir():
        raise SystemExit(
            f"lock: the exactness tests need the shared data {data} (FairSumm's gold sets); "
            "make it available there and rerun `make lock`"
        )
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "exactness.xml"
        run = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
             f"--junitxml={report}", *tests],
            cwd=ROOT, capture_output=True, text=True,
        )
        if not report.exists():
            raise SystemExit(f"lock: the exactness tests did not run (pytest exit {run.returncode}):\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
        suite = ElementTree.parse(report).getroot()
        suite = suite if suite.tag == "testsuite" else suite[0]
        counts = {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
        failed = [
            f"{case.get('classname')}::{case.get('name')}"
            for case in suite.iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None
        ]
    if run.returncode != 0 or counts["failures"] or counts["errors"] or counts["tests"] == 0:
        raise SystemExit(
            f"lock: {venv.name} changes a metric that must match its authors; the lock file is left "
            f"as it was. Failed: {', '.join(failed) or f'pytest exit {run.returncode}'}. Pin the "
            f"package that changed it (pyproject.toml) or make the code independent of it, then "
            f"rerun `make lock`.\n{run.stdout[-3000:]}"
        )
    ran = counts["tests"] - counts["skipped"]
    return f"lock: exactness tests passed with {venv.name} ({ran} run, {counts['skipped']} skipped)"


def main() -> None:
    venv, out = Path(sys.argv[1]), Path(sys.argv[2])
    keep = frozen_lines(venv)
    print(check_exactness(venv))
    header = [
        f"# {out.name}: the versions `make test` was last run with ({venv.name}); a constraints file.",
        "# Refresh: `make lock` (fresh virtualenvs resolved without it, then frozen); commit the result.",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(header + sorted(keep, key=str.lower)) + "\n", encoding="utf-8")
    print(f"lock: {len(keep)} packages -> {out}")


if __name__ == "__main__":
    main()
