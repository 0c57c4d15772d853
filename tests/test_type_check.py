"""The code is legible to its tools: an IDE-grade checker resolves our imports by path.

``make test`` runs ``pyright`` on the five packages (0 errors, see the Makefile). These tests
ask pyright's language server what an editor asks it: where a name used in a test is defined.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
LANGSERVER = Path(sys.executable).parent / "pyright-langserver"


class LanguageServer:
    """A minimal LSP client over stdio (JSON-RPC with Content-Length framing)."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [str(LANGSERVER), "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=root,
        )
        self.next_id = 0
        self.request("initialize", {
            "processId": None, "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": "evenhand"}],
        })
        self.notify("initialized", {})

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while (line := self.proc.stdout.readline().strip()):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.proc.stdout.read(length))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, message
                return message.get("result")
            if "method" in message and "id" in message:  # a server request (configuration...)
                items = message.get("params", {}).get("items", [])
                self.send({"id": message["id"], "result": [None] * len(items) if items else None})

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture(scope="module")
def server():
    if not LANGSERVER.exists() and shutil.which("pyright-langserver") is None:
        pytest.skip("pyright is not installed (`make setup-test` installs it)")
    lsp = LanguageServer(ROOT)
    yield lsp
    lsp.close()


def definition_of(server: LanguageServer, code: str, name: str, line: int) -> Path:
    """Where the language server says ``name`` (on 0-based ``line`` of ``code``) is defined."""
    uri = (ROOT / "tests" / "_definition_probe.py").as_uri()  # an unsaved editor buffer
    server.notify("textDocument/didOpen", {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": code},
    })
    column = code.splitlines()[line].index(name)
    result = server.request("textDocument/definition", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": column},
    })
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert result, f"no definition found for {name}"
    location = result[0] if isinstance(result, list) else result
    target = location.get("uri") or location.get("targetUri")
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(target).path))


@pytest.mark.parametrize(
    ("code", "name", "line", "defined_in"),
    [
        ("from evenhand.decoding import AbstractivenessProcessor\n\nAbstractivenessProcessor\n",
         "AbstractivenessProcessor", 2, "decoding/processors/abstractiveness.py"),
        ("from evenhand.evaluation.metrics.mint import mint\n\nmint\n", "mint", 2, "evaluation/metrics/mint.py"),
        ("from evenhand import Reranker\n\nReranker\n", "Reranker", 2, "rerank/reranker.py"),
        ("from evenhand.training import DPORRConfig\n\nDPORRConfig\n", "DPORRConfig", 2, "training/config.py"),
    ],
)
def test_a_test_file_resolves_public_names_to_the_layer_folders(
    server: LanguageServer, code: str, name: str, line: int, defined_in: str
) -> None:
    path = definition_of(server, code, name, line)
    # the editor opens decoding/processors/abstractiveness.py itself or evenhand/decoding/processors/abstractiveness.py,
    # the same file through the relative link evenhand/decoding -> ../decoding
    assert path.resolve() == (ROOT / defined_in).resolve(), path
