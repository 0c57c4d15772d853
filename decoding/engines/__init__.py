"""Engines behind one protocol (``base``: ``Engine``, ``Capabilities``, the registry, ``open_engine``):
in-process transformers (``transformers``), in-process vLLM (``vllm_engine``, its request settings
``vllm_settings`` and logits processor ``vllm_processor``), an OpenAI-compatible server (``server``
over the HTTP client ``http``), beam search as a step loop for the last two (``beam_loop``), and
local server launchers (``launch``)."""
