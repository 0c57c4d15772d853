"""Start and stop a local llama.cpp server (``python -m llama_cpp.server``) for tests and benchmarks.

``local_llama_server()`` runs llama-cpp-python's OpenAI-compatible server on
127.0.0.1 with a free port and the embedded SmolLM2 GGUF (or any GGUF),
waits until ``/v1/models`` answers (bounded by ``startup_timeout``), yields
its URL ``http://127.0.0.1:PORT/v1`` and always terminates it (then kills it
if it does not exit within 10 s). llama-cpp-python's server holds one model
context and answers one request at a time: concurrent requests queue.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..evaluation.errors import DataError


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(gguf: str | Path, port: int, n_ctx: int = 4096, n_threads: int | None = None) -> list[str]:
    """The ``python -m llama_cpp.server`` command line serving ``gguf`` on 127.0.0.1:``port``."""
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", str(n_ctx),
    ]
    if n_threads is not None:
        cmd += ["--n_threads", str(n_threads), "--n_threads_batch", str(n_threads)]
    return cmd


def _ready(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/models", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def local_llama_server(
    gguf: str | Path | None = None, n_ctx: int = 4096, n_threads: int | None = None,
    startup_timeout: float = 60.0, log: Any = None,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run a llama.cpp server; yields ``(url, process)`` and stops the server on exit.

    Args:
        gguf: the model file (default: the embedded SmolLM2-135M-Instruct Q4_1 GGUF).
        n_ctx: context size in tokens.
        n_threads: CPU threads (default: llama.cpp's choice).
        startup_timeout: seconds to wait for ``/v1/models`` before giving up.
        log: a file object for the server's output (default: discarded).

    Raises:
        DataError: llama-cpp-python is not installed, the server exits early, or it
            is not up within ``startup_timeout`` seconds.
    """
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        raise DataError(
            "llama-cpp-python is not installed; run `pip install 'llama-cpp-python[server]'` "
            "(or `make setup`, which installs the dev extras)"
        )
    if gguf is None:
        from .models import smollm2_gguf_path

        gguf = smollm2_gguf_path()
    port = free_port()
    with serving(
        server_command(gguf, port, n_ctx, n_threads), port, "llama.cpp", {"PYTHONUNBUFFERED": "1"},
        startup_timeout, log, poll=0.25,
    ) as running:
        yield running


@contextlib.contextmanager
def serving(
    command: list[str], port: int, what: str, env: dict[str, str], startup_timeout: float,
    log: Any = None, poll: float = 0.25,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run ``command`` (a server on 127.0.0.1:``port``) with ``env`` added; yield ``(url, process)``
    once ``/v1/models`` answers; stop it on exit. DataError when it exits or is not up in time."""
    url = f"http://127.0.0.1:{port}/v1"
    out = log if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen(command, stdout=out, stderr=out, env={**os.environ, **env})
    try:
        deadline = time.monotonic() + startup_timeout
        while not _ready(url):
            if proc.poll() is not None:
                raise DataError(f"the {what} server exited with status {proc.returncode} before answering")
            if time.monotonic() > deadline:
                raise DataError(f"the {what} server at {url} did not start within {startup_timeout:g} s")
            time.sleep(poll)
        yield url, proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """Terminate ``proc``, killing it when it has not exited 10 s later."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
