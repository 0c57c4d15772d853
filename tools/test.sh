#!/usr/bin/env bash
# `make test`: set-up, then every group (ruff, pyright, pytest without vLLM, the llama.cpp
# server tests, pytest in the vLLM virtualenv), each run even when an earlier one failed.
# Prints one line per group and a total; exits non-zero if any group failed.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
VLLM_VENV=${VLLM_VENV:-.venv-vllm}
MAKE=${MAKE:-make}
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
results=()
failed=0

group() {  # group NAME COMMAND...: run, record its status
    local name=$1; shift
    local start=$SECONDS
    echo "=== $name: $*"
    "$@"
    local rc=$?
    results+=("$(printf '%-8s %-5s %4ss  %s' "$name" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" $((SECONDS - start)) "$*")")
    [ $rc -eq 0 ] || failed=1
    return 0
}

group setup "$MAKE" --no-print-directory setup-test setup-vllm PYTHON="${PYTHON:-python3}"
# The portable llama.cpp build (minutes, once per version and flags) runs at low priority
# while the other groups test; the server tests run after it.
if [ -x "$VENV/bin/python" ]; then
    nice -n 10 "${PYTHON:-python3}" tools/install.py "$VENV" llama --wheel-only > "$reports/llama.log" 2>&1 &
    llama_build=$!
    group ruff "$VENV/bin/ruff" check .
    group pyright "$VENV/bin/pyright"
    group pytest "$VENV/bin/python" -m pytest -q --durations=10 -m "not vllm and not server" --junitxml="$reports/main.xml"
fi
if [ -x "$VLLM_VENV/bin/python" ]; then
    group vllm "$VLLM_VENV/bin/python" -m pytest -q --durations=10 -m vllm --junitxml="$reports/vllm.xml"
fi
if [ -x "$VENV/bin/python" ]; then
    wait "$llama_build"; cat "$reports/llama.log"
    group llama "$MAKE" --no-print-directory setup-llama PYTHON="${PYTHON:-python3}"
    group server "$VENV/bin/python" -m pytest -q -m server --junitxml="$reports/server.xml"
fi

echo
echo "=== make test: $( [ $failed -eq 0 ] && echo green || echo RED )"
printf '%s\n' "${results[@]}"
python3 - "$reports" <<'PY'
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
