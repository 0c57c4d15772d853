#!/usr/bin/env bash
# `make test`: set-up, then every group (ruff, pyright, pytest without vLLM, pytest in the vLLM
# virtualenv, the llama.cpp server tests), each run even when an earlier one failed.
# Prints one line per group and a total; exits non-zero if any group failed.
#
# Two cores: the groups mostly use one, so they run as two chains: the main chain (ruff, pytest)
# on one core; on the other pyright, the vLLM chain (its virtualenv, then its tests), then the
# llama.cpp server tests, which wait for the portable llama.cpp build (minutes, once per version
# and flags; started at once at low priority, so it takes what CPU the chains leave). The main
# pytest is the longest group by far, so pyright (80-90 s) runs in the other chain, which still
# ends minutes before it. A background group's output is printed when it ends.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
VLLM_VENV=${VLLM_VENV:-.venv-vllm}
PYTHON=${PYTHON:-python3}
MAKE=${MAKE:-make}
# Threads: one per process. The two chains and the llama.cpp build share 2 cores, and torch's
# default (a thread per core) then spins and waits at every small op: measured under that load,
# one in-process `generate --fair-beam` of 6 examples with the tiny test model took 7.0 CPU-s
# and 13-14 s with 2 threads, 0.6-1.0 CPU-s and 1.5-1.9 s with 1.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# Bytecode: uv installs no .pyc files (pip compiles them at install), and where
# PYTHONDONTWRITEBYTECODE is set (this CI machine sets it) Python never writes them either, so
# every test process compiled torch, transformers and vLLM from source again: measured 4.3 vs
# 2.2 CPU-s to import evenhand's CLI, 36 vs 22 CPU-s for a vLLM engine start. The tests write
# the files of the modules they import once, under .pycache/ (never beside the sources).
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$PWD/.pycache}"
unset PYTHONDONTWRITEBYTECODE
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT

run_group() {  # run_group NAME COMMAND...: run it, keep "rc seconds command" in $reports/NAME.result
    local name=$1; shift
    local start=$SECONDS
    "$@"
    echo "$? $((SECONDS - start)) $*" > "$reports/$name.result"
}

background_group() {  # background_group NAME COMMAND...: run_group with output kept in $reports/NAME.out
    local name=$1
    run_group "$@" > "$reports/$name.out" 2>&1
}

echo "=== setup"
run_group setup "$MAKE" --no-print-directory setup-test PYTHON="$PYTHON"
if [ -x "$VENV/bin/python" ]; then
    ( nice -n 10 "$PYTHON" tools/install.py "$VENV" llama --wheel-only > "$reports/llama-build.out" 2>&1
      echo $? > "$reports/llama-build.rc" ) &
fi
(
    [ -x "$VENV/bin/pyright" ] && background_group pyright "$VENV/bin/pyright"
    background_group vllm-setup "$MAKE" --no-print-directory setup-vllm PYTHON="$PYTHON"
    if [ -x "$VLLM_VENV/bin/python" ]; then
        background_group vllm "$VLLM_VENV/bin/python" -m pytest -q --durations=10 -m vllm --junitxml="$reports/vllm.xml"
    fi
    if [ -x "$VENV/bin/python" ]; then
        while [ ! -f "$reports/llama-build.rc" ]; do sleep 2; done
        read -r built < "$reports/llama-build.rc"
        if [ "$built" -ne 0 ]; then  # the build's output is printed below; not built twice
            echo "$built 0 tools/install.py $VENV llama --wheel-only" > "$reports/llama.result"
        else  # installs only llama-cpp-python into the main virtualenv (its server's packages are locked there)
            background_group llama "$MAKE" --no-print-directory setup-llama PYTHON="$PYTHON"
            background_group server "$VENV/bin/python" -m pytest -q -m server --junitxml="$reports/server.xml"
        fi
    fi
) &
second_chain=$!
if [ -x "$VENV/bin/python" ]; then
    echo "=== ruff";    run_group ruff "$VENV/bin/ruff" check .
    echo "=== pytest (pyright, vLLM, then the llama.cpp server tests, run beside it)"
    run_group pytest "$VENV/bin/python" -m pytest -q --durations=10 -m "not vllm and not server" --junitxml="$reports/main.xml"
fi
wait "$second_chain"
[ -f "$reports/llama-build.out" ] && { echo "=== llama build"; grep -v '^WARNING: Location' "$reports/llama-build.out"; }
for name in pyright vllm-setup vllm llama server; do
    [ -f "$reports/$name.out" ] && { echo "=== $name"; grep -v '^WARNING: Location' "$reports/$name.out"; }
done

echo
failed=0
summary=()
for name in setup ruff pyright pytest vllm-setup vllm llama server; do
    if [ ! -f "$reports/$name.result" ]; then
        summary+=("$(printf '%-10s %-5s        (did not run: its set-up failed)' "$name" FAIL)"); failed=1; continue
    fi
    read -r rc seconds command < "$reports/$name.result"
    [ "$rc" -eq 0 ] || failed=1
    summary+=("$(printf '%-10s %-5s %4ss  %s' "$name" "$([ "$rc" -eq 0 ] && echo ok || echo FAIL)" "$seconds" "$command")")
done
echo "=== make test: $( [ $failed -eq 0 ] && echo green || echo RED )"
printf '%s\n' "${summary[@]}"
[ $failed -eq 0 ] || echo "(a group that failed before pytest could count adds no failed test below; see its line above)"
"$PYTHON" - "$reports" <<'PY'
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for f in sorted(Path(sys.argv[1]).glob("*.xml")):
    for suite in ET.parse(f).getroot().iter("testsuite"):
        for k in n:
            n[k] += int(suite.get(k, 0))
failed = n["failures"] + n["errors"]
print(f"total: {n['tests'] - failed - n['skipped']} passed, {failed} failed, {n['skipped']} skipped")
PY
exit $failed
