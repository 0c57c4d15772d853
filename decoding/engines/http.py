"""A client of an OpenAI-compatible server (vLLM, llama.cpp server, TGI) named by a URL.

Wherever evenhand takes a model name (``--model``, ``--judge-model``), a URL
selects a server instead of an in-process model::

    http://HOST:PORT/v1              the first model of the server's /v1/models
    http://HOST:PORT/v1#MODEL_NAME   that model (vLLM serves several under one URL)

``ServerClient`` posts chat-completion (and completion) requests with at most
``max_concurrency`` in flight (threads over one ``httpx.Client``), a timeout
per request, and retries with exponential backoff (``backoff * 2**attempt``
seconds, or the server's ``Retry-After``) on HTTP 429 and 5xx and on dropped
connections. When the retries are spent, or the server answers any other
error, it raises ``DataError`` naming the URL and the fix; the CLI prints it as
one line and exits with status 2.

We use ``httpx`` rather than the ``openai`` package: it is already installed
with transformers (through huggingface_hub), and the three calls we make
(``GET /models``, ``POST /chat/completions``) need no SDK. The client keeps
timing counters (``stats``) so benchmarks can separate the HTTP round trip from
the client's own work.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...evaluation.errors import DataError

#: Statuses worth retrying: rate limiting and server-side failures.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

_FIX = (
    "start the server (docs/serving.md: `vllm serve ...` or `python -m llama_cpp.server ...`) "
    "or fix the URL"
)


def is_server_url(name: object) -> bool:
    """True when ``name`` is an ``http://`` or ``https://`` URL, i.e. selects a server."""
    return isinstance(name, str) and name.startswith(("http://", "https://"))


@dataclass(frozen=True)
class ServerUrl:
    """A parsed server URL: the API base (``http://HOST:PORT/v1``) and an optional model name."""

    base: str
    model: str | None = None

    @classmethod
    def parse(cls, text: str) -> ServerUrl:
        """``http://HOST:PORT/v1[#MODEL]`` -> ``ServerUrl``; anything else raises ``DataError``.

        >>> ServerUrl.parse("http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B-Instruct")
        ServerUrl(base='http://127.0.0.1:8000/v1', model='Qwen/Qwen2.5-7B-Instruct')
        """
        if not is_server_url(text):
            raise DataError(f"server URL {text!r} must start with http:// or https://")
        base, _, model = text.partition("#")
        parts = urlsplit(base)
        if not parts.hostname or parts.query:
            raise DataError(
                f"server URL {text!r} must look like http://HOST:PORT/v1 (optionally #MODEL_NAME)"
            )
        try:
            parts.port  # noqa: B018 - validates the port
        except ValueError:
            raise DataError(f"server URL {text!r} has a bad port") from None
        return cls(base.rstrip("/"), model.strip() or None)

    def __str__(self) -> str:
        return self.base + (f"#{self.model}" if self.model else "")


@dataclass
class ServerConfig:
    """How the client talks to the server."""

    max_concurrency: int = field(default=4, metadata={"help": "Requests in flight at once."})
    timeout: float = field(default=120.0, metadata={"help": "Seconds to wait for one response."})
    retries: int = field(
        default=3, metadata={"help": "Retries of a request on HTTP 429/5xx or a dropped connection."}
    )
    backoff: float = field(default=0.5, metadata={"help": "First retry delay in seconds (doubles)."})

    def __post_init__(self) -> None:
        from ...evaluation.data.checks import check_count, check_number

        check_count(self.max_concurrency, "max_concurrency")
        check_number(self.timeout, "timeout", low=0, low_open=True, high=86400)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"`retries` must be a non-negative int, got {self.retries!r}")
        if not self.backoff >= 0:
            raise ValueError(f"`backoff` must be a non-negative number of seconds, got {self.backoff!r}")


@dataclass
class ClientStats:
    """Counters of a client: requests sent, retries, and seconds spent inside HTTP round trips."""

    requests: int = 0
    retries: int = 0
    http_seconds: float = 0.0


class ServerClient:
    """Chat completions from an OpenAI-compatible server, bounded in concurrency, with retries.

    Args:
        url: ``http://HOST:PORT/v1`` or ``http://HOST:PORT/v1#MODEL_NAME``.
        config: concurrency, timeout, retries (default ``ServerConfig()``).
        processors: the server is a vLLM server started with evenhand's logits processors
            (``--server-processors``): ``generate`` sends abstractiveness and the
            group-coverage bonus as ``vllm_xargs`` (checked by one probe request first).

    Nothing is sent until the first request: constructing a client validates the URL only.
    """

    def __init__(self, url: str, config: ServerConfig | None = None, processors: bool = False) -> None:
        self.processors = processors
        self.url = ServerUrl.parse(url)
        self.config = config or ServerConfig()
        self.stats = ClientStats()
        self._model = self.url.model
        self._http: Any = None
        self._lock = threading.Lock()
        self._entry: dict[str, Any] | None = None
        self._processors: bool | None = None
        #: What callers derive from this server once (its tokenizer, probe results), by name.
        self.memo: dict[str, Any] = {}

    # -- identity ----------------------------------------------------------------
    @property
    def model(self) -> str:
        """The served model's name: from the URL's ``#MODEL``, else the first of ``/v1/models``."""
        if self._model is None:
            listing = self.request("GET", "/models", None)
            data = listing.get("data") if isinstance(listing, dict) else None
            if not data or not isinstance(data[0], dict) or not data[0].get("id"):
                raise DataError(
                    f"server {self.url.base} lists no model at /models; name one as "
                    f"{self.url.base}#MODEL_NAME"
                )
            self._model = str(data[0]["id"])
        return self._model

    @property
    def key(self) -> str:
        """``BASE#MODEL``: what names this server's results (score cache keys, records)."""
        return f"{self.url.base}#{self.model}"

    # -- requests ----------------------------------------------------------------
    def chat(self, payloads: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """POST each payload to ``/chat/completions`` (``model`` filled in); responses in order.

        At most ``config.max_concurrency`` requests are in flight. The first
        failure (after its retries) cancels the requests not yet sent and raises.
        """
        return self._post_all("/chat/completions", payloads)

    def completions(self, payloads: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """POST each payload to ``/completions`` (``model`` filled in); as :meth:`chat`."""
        return self._post_all("/completions", payloads)

    def model_entry(self) -> dict[str, Any]:
        """The served model's entry of ``/models`` (vLLM: ``root`` = the folder or id it loaded,
        ``max_model_len``); empty when the server lists no such entry."""
        if self._entry is None:
            listing = self.request("GET", "/models", None)
            data = listing.get("data") if isinstance(listing, dict) else None
            entries = [d for d in data or [] if isinstance(d, dict) and d.get("id") == self.model]
            self._entry = entries[0] if entries else {}
        return self._entry

    def runs_evenhand_processors(self) -> bool:
        """Whether the server runs ``evenhand.vllm:EvenhandLogitsProcessor`` (asked once).

        One probe request (1 token) whose ``vllm_xargs`` carries ``{"probe": 1}``: the
        processor refuses it with a message naming evenhand (HTTP 400); a server without
        it ignores the unknown argument and answers.
        """
        if self._processors is None:
            from .vllm_settings import KEY, PROBE_MARK

            body = {"model": self.model, "prompt": "probe", "max_tokens": 1, "temperature": 0.0,
                    "vllm_xargs": {KEY: '{"probe":1}'}}
            try:
                self.request("POST", "/completions", body)
                self._processors = False
            except DataError as err:
                if PROBE_MARK not in str(err):
                    raise
                self._processors = True
        return self._processors

    def _post_all(self, path: str, payloads: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        if not payloads:
            return []
        model = self.model
        bodies = [{"model": model, **p} for p in payloads]
        if len(bodies) == 1 or self.config.max_concurrency == 1:
            return [self.request("POST", path, b) for b in bodies]
        with ThreadPoolExecutor(max_workers=min(self.config.max_concurrency, len(bodies))) as pool:
            futures = [pool.submit(self.request, "POST", path, b) for b in bodies]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def close(self) -> None:
        """Close the HTTP connections (a later request opens new ones)."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> ServerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ServerClient({str(self.url)!r}, {self.config})"

    # -- internals ---------------------------------------------------------------
    def _client(self) -> Any:
        with self._lock:
            if self._http is None:
                import httpx

                limits = httpx.Limits(max_connections=self.config.max_concurrency)
                self._http = httpx.Client(
                    base_url=self.url.base, timeout=self.config.timeout, limits=limits
                )
            return self._http

    def request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        """One request with retries; the parsed JSON answer, or ``DataError``."""
        import httpx

        http = self._client()
        where = f"{self.url.base}{path}"
        for attempt in range(self.config.retries + 1):
            last = attempt == self.config.retries
            start = time.perf_counter()
            try:
                response = http.request(method, path, json=body)
            except httpx.TimeoutException:
                self._count(start)
                if last:
                    raise DataError(
                        f"server {self.url.base} did not answer {path} within {self.config.timeout:g} s "
                        f"({self.config.retries + 1} tries); raise --server-timeout or lower "
                        "--max-concurrency"
                    ) from None
            except httpx.TransportError as err:
                self._count(start)
                if last:
                    raise DataError(
                        f"server {self.url.base} is unreachable ({type(err).__name__}: {err}) after "
                        f"{self.config.retries + 1} tries; {_FIX}"
                    ) from None
            else:
                self._count(start)
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        raise DataError(f"server {where} answered non-JSON text: {response.text[:200]!r}") from None
                if response.status_code not in RETRY_STATUSES or last:
                    raise DataError(
                        f"server {where} answered HTTP {response.status_code}: {_message(response)}"
                        + (f" (after {self.config.retries + 1} tries)" if last and response.status_code in RETRY_STATUSES else "")
                    )
                delay = _retry_after(response)
                if delay is not None:
                    self._sleep(delay, attempt)
                    continue
            self._sleep(None, attempt)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _count(self, start: float) -> None:
        with self._lock:
            self.stats.requests += 1
            self.stats.http_seconds += time.perf_counter() - start

    def _sleep(self, delay: float | None, attempt: int) -> None:
        with self._lock:
            self.stats.retries += 1
        time.sleep(delay if delay is not None else self.config.backoff * 2**attempt)


def _message(response: Any) -> str:
    """The error message of an OpenAI-style error body, else the start of the text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300].strip() or "(empty body)"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(body, dict) and body.get("detail"):
        return str(body["detail"])[:300]
    return str(body)[:300]


def _retry_after(response: Any) -> float | None:
    """Seconds from a ``Retry-After`` header (capped at 60), when the server sent a number."""
    value = response.headers.get("retry-after")
    try:
        return min(max(float(value), 0.0), 60.0) if value is not None else None
    except ValueError:
        return None
