#!/usr/bin/env python3
"""Freeze a virtualenv made by ``tools/install.py --unlocked`` into a lock file (``make lock``).

The lock is a pip/uv constraints file: it pins every package the virtualenv holds, except
evenhand itself (editable), torch and its CUDA libraries (installed first as the machine's
``torch==2.13.0``), llama-cpp-python (built here from a pinned sdist) and uv (pinned in
tools/install.py). Standard library only.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SKIP = ("torch", "nvidia-", "triton", "llama-cpp-python", "llama_cpp_python", "uv")


def main() -> None:
    venv, out = Path(sys.argv[1]), Path(sys.argv[2])
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
    header = [
        f"# {out.name}: the versions `make test` was last run with ({venv.name}); a constraints file.",
        "# Refresh: `make lock` (fresh virtualenvs resolved without it, then frozen); commit the result.",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(header + sorted(keep, key=str.lower)) + "\n", encoding="utf-8")
    print(f"lock: {len(keep)} packages -> {out}")


if __name__ == "__main__":
    main()
