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

group setup "$MAKE" --no-print-directory setup-test PYTHON="${PYTHON:-python3}"
# In the background, at low priority, while the first groups test: the vLLM virtualenv, then
# the portable llama.cpp build (minutes, once per version and flags); their groups run last.
(
    "$MAKE" --no-print-directory setup-vllm PYTHON="${PYTHON:-python3}" > "$reports/vllm-setup.log" 2>&1
    echo $? > "$reports/vllm-setup.rc"
    if [ -x "$VENV/bin/python" ]; then
        nice -n 10 "${PYTHON:-python3}" tools/install.py "$VENV" llama --wheel-only > "$reports/llama.log" 2>&1
    fi
) &
background=$!
if [ -x "$VENV/bin/python" ]; then
    group ruff "$VENV/bin/ruff" check .
    group pyright "$VENV/bin/pyright"
    group pytest "$VENV/bin/python" -m pytest -q --durations=10 -m "not vllm and not server" --junitxml="$reports/main.xml"
fi
wait "$background"
cat "$reports/vllm-setup.log" "$reports/llama.log" 2>/dev/null | grep -v '^WARNING: Location'
group vllm-setup test "$(cat "$reports/vllm-setup.rc")" -eq 0
if [ -x "$VLLM_VENV/bin/python" ]; then
    group vllm "$VLLM_VENV/bin/python" -m pytest -q --durations=10 -m vllm --junitxml="$reports/vllm.xml"
fi
if [ -x "$VENV/bin/python" ]; then
    group llama "$MAKE" --no-print-directory setup-llama PYTHON="${PYTHON:-python3}"
    group server "$VENV/bin/python" -m pytest -q -m server --junitxml="$reports/server.xml"
fi

echo
echo "=== make test: $( [ $failed -eq 0 ] && echo green || echo RED )"
printf '%s\n' "${results[@]}"
[ $failed -eq 0 ] || echo "(a group that failed before pytest could count adds no failed test below; see its line above)"
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
