"""Issue 50, how a command ends on an error: one line of its own after every progress bar (a library's
too), naming the file and the fix, raw OS errors included; vLLM's memory hint names the device's knob."""

from __future__ import annotations

import errno
import json
import os
import sys

import pytest

from evenhand.cli import main


def _failing_report(monkeypatch: pytest.MonkeyPatch, error: OSError) -> None:
    """``report`` draws a library's tqdm bar halfway (no newline), then meets ``error``."""
    import evenhand.commands.report as report

    def run(args):  # noqa: ANN001, ANN202, ARG001
        from tqdm import tqdm

        bar = tqdm(total=10, desc="library", file=sys.stderr, mininterval=0)
        bar.update(5)
        raise error

    monkeypatch.setattr(report, "run", run)


@pytest.mark.parametrize("error, line", [
    (OSError(errno.ENOSPC, "No space left on device", "/runs/r/iter_1/adapter.safetensors"),
     "/runs/r/iter_1/adapter.safetensors: cannot write (disk full); results finished before are kept; "
     "free space and run again"),
    (OSError(errno.EFBIG, "File too large", "/runs/out.jsonl"),
     "/runs/out.jsonl: cannot write (file too large); results finished before are kept; free space and run again"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "/runs/gone/out.jsonl"),
     "/runs/gone/out.jsonl: no such file or directory; it (or its folder) was moved or deleted while the command "
     "ran, or never existed; restore it or give another path and run again (results finished before are kept)"),
    (OSError(errno.EMFILE, "Too many open files", "/runs/x.csv"),
     "/runs/x.csv: too many open files; check the file and run again (results finished before are kept)"),
], ids=["disk-full", "ulimit-f", "deleted", "other"])
def test_an_os_error_after_a_library_bar_is_one_fresh_line(tmp_path, capsys, monkeypatch, error, line):
    _failing_report(monkeypatch, error)
    assert main(["report", "--results", str(tmp_path / "r.sqlite"), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    lines = err.split("\n")
    assert lines[-1] == "" and lines[-2] == f"evenhand report: error: {line}", err
    assert "library" in lines[-3] and "Errno" not in err


def test_generate_into_a_folder_deleted_mid_run_is_one_line_naming_the_fix(tmp_path, model_dir, capsys,
                                                                          monkeypatch):
    import shutil

    from evenhand.evaluation.io.resumable import ResumableJsonl

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"e{i}", "attribute": "sentiment", "documents": [
        {"text": f"Good food {i}.", "group": "pos"}, {"text": "Slow service.", "group": "neg"}]}) + "\n"
        for i in range(2)))
    folder = tmp_path / "runs"
    folder.mkdir()
    out = folder / "out.jsonl"
    append = ResumableJsonl.append
    calls = []

    def deleted_then_append(self, rows):  # noqa: ANN001, ANN202
        calls.append(rows)
        if len(calls) == 2:
            shutil.rmtree(folder)  # the user removes the output folder while the run decodes
        return append(self, rows)

    monkeypatch.setattr(ResumableJsonl, "append", deleted_then_append)
    code = main(["generate", "--data", str(data), "--out", str(out), "--model", str(model_dir),
                 "--max-new-tokens", "3", "--num-beams", "1", "--batch-size", "1"])
    err = capsys.readouterr().err
    last = err.rstrip("\n").split("\n")[-1]
    assert code == 2 and "Errno" not in err, err
    assert last.startswith(f"evenhand generate: error: {out}") and "moved or deleted while the command ran" in last


def test_vllm_logs_stay_behind_verbose_even_at_error_level(monkeypatch, tmp_path):
    monkeypatch.delenv("VLLM_LOGGING_LEVEL", raising=False)
    monkeypatch.delenv("EVENHAND_VERBOSE", raising=False)
    main(["evaluate", "--data", str(tmp_path / "none.jsonl"), "--summaries", "references", "--out",
          str(tmp_path / "o.jsonl")])
    assert os.environ.pop("VLLM_LOGGING_LEVEL") == "CRITICAL"


@pytest.mark.parametrize("cpu, needle, absent", [
    (True, "on CPU the KV cache is VLLM_CPU_KVCACHE_SPACE GiB of RAM (now 2): set it higher", "gpu_memory_utilization"),
    (False, "raise gpu_memory_utilization (now 0.85)", "VLLM_CPU_KVCACHE_SPACE"),
])
def test_vllm_no_memory_for_the_cache_names_the_knob_of_the_device(monkeypatch, cpu, needle, absent):
    from evenhand.decoding.engines.vllm_engine import EngineSettings, load_error

    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    raised = ValueError("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                        "when initializing the engine.")
    message = str(load_error("smollm2-135m-instruct", raised, cpu, EngineSettings()))
    assert message.startswith("vLLM could not load 'smollm2-135m-instruct': no memory left for the KV cache blocks; ")
    assert needle in message and absent not in message and "\n" not in message
    other = str(load_error("m", ValueError("bad\nconfig"), cpu, EngineSettings()))
    assert other == "vLLM could not load 'm': bad config"


