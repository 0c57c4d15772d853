"""Ctrl-C during `generate --engine vllm` leaves no vLLM process behind (issue 34).

Marked ``vllm`` (``make test`` runs it in .venv-vllm). With
``VLLM_ENABLE_V1_MULTIPROCESSING=1`` vLLM runs its engine core in a child process
(evenhand's default, 0, keeps it in-process: no child to leave). The command runs
in a session of its own; once it has written its first chunk of summaries, the
whole process group gets SIGINT, as from a terminal. The model is the tiny random Llama
(conftest's ``vllm_model``): the clean-up is the same for any model, and SmolLM2 took most of
the test's minute and a half to decode the first chunk of 64 prompts. Self-checking: the test
fails, rather than passes vacuously, if no child process was seen before the
signal. Afterwards no process of the session may be alive (read from ``/proc``,
no psutil).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (make setup-vllm)")

pytestmark = pytest.mark.vllm

DEMO = Path(__file__).resolve().parents[1] / "evenhand" / "data" / "demo.jsonl"


def _session(sid: int) -> dict[int, str]:
    """pid -> command line of every live, non-zombie process of session ``sid``."""
    from tests.test_child_cleanup import session_members

    return dict(session_members(sid))


def test_ctrl_c_ends_the_vllm_engine_processes(tmp_path, vllm_model):
    demo = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
    data = tmp_path / "data.jsonl"
    # chunks of 64 prompts: the tiny model decodes one in about a second, so enough of them that
    # the run is still going when the signal comes
    data.write_text("".join(json.dumps({**demo[i % len(demo)], "id": f"x{i}"}) + "\n" for i in range(64 * 40)))
    out = tmp_path / "o.jsonl"
    # a 1 GiB KV cache (default 2): the tiny model's 2048-token sequence takes 1 MiB of it, and each
    # GiB less measured 1.5-2 CPU-s less per engine start (mostly system time: the cache's pages)
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "VLLM_ENABLE_V1_MULTIPROCESSING": "1",
           "VLLM_CPU_KVCACHE_SPACE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evenhand.cli", "generate", "--engine", "vllm", "--model", str(vllm_model), "--data", str(data), "--out", str(out),
         "--max-new-tokens", "4", "--num-beams", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 480
        while not (out.exists() and out.stat().st_size > 0):
            assert proc.poll() is None, proc.stderr.read()[-2000:] if proc.stderr else ""
            assert time.monotonic() < deadline, "no summary within 480 s"
            seen.update({p: c for p, c in _session(proc.pid).items() if p != proc.pid})
            time.sleep(0.2)
        seen.update({p: c for p, c in _session(proc.pid).items() if p != proc.pid})
        assert seen, "vLLM started no child process: the test did not exercise the clean-up"
        assert proc.poll() is None, "generate finished before the signal: give it more data"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        lines = [ln for ln in err.replace("\r", "\n").splitlines() if ln.strip()]
        assert proc.returncode == 130, err[-3000:]
        assert lines and lines[-1].startswith("evenhand generate: interrupted (SIGINT); kept "), err[-3000:]
        left: dict[int, str] = {}
        for _ in range(50):  # what SIGKILL ended disappears at once; allow the reaping a moment
            left = _session(proc.pid)
            if not left:
                break
            time.sleep(0.2)
        assert left == {}, f"outlived the command: {left} (children seen during the run: {seen})"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in _session(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
