# Stateous: the two commands of the README are `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev

# Find a Python of 3.12 or newer: python3.13, python3.12, python3, then pyenv's versions.
# A pyenv shim that refuses to run fails the version check and is skipped.
define find_python
for c in python3.13 python3.12 python3 $$(ls -d $$(pyenv root 2>/dev/null)/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
  if "$$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then echo "$$c"; exit 0; fi; \
done; exit 1
endef

.PHONY: help venv dev demo test test-long lint typecheck imports pytest faults bench snapshot-update clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(PY):
	@py=$$($(find_python)) || { echo "error: no Python 3.12 or newer found (tried python3.13, python3.12, python3 and pyenv's versions); install Python 3.12+" >&2; exit 1; }; \
	echo "creating $(VENV) with $$py"; "$$py" -m venv $(VENV)

venv: $(PY) ## create .venv and install Stateous
	@$(PY) -m pip install -q --upgrade pip >/dev/null
	@$(PY) -m pip install -q -e .

$(STAMP): pyproject.toml | $(PY)
	@$(PY) -m pip install -q --upgrade pip >/dev/null
	@$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

dev: $(STAMP) ## create .venv and install Stateous with the dev extras

demo: $(STAMP) ## run the orders example end to end on embedded SQLite and print the histories
	@$(VENV)/bin/stateous demo

lint: $(STAMP) ## ruff format --check and ruff check
	@$(VENV)/bin/ruff format --check stateous tui tests bench
	@$(VENV)/bin/ruff check stateous tui tests bench

typecheck: $(STAMP) ## mypy --strict on stateous/ (the console too), bench/ and tests/ (test defs may go unannotated)
	@$(VENV)/bin/mypy

imports: $(STAMP) ## the import rules of CONTRIBUTING.md (the contracts in pyproject.toml)
	@$(VENV)/bin/lint-imports

# Workers of pytest-xdist: most tests wait on real processes, sockets and timers rather than
# compute, so even 2 cores keep 4 busy. `--dist loadfile` keeps a file's tests on one worker, in
# order, with its module fixtures (one `serve` each); `--no-loadscope-reorder` hands the files out
# in collection order (e2e and faults, the longest, first) instead of the files with most tests
# first, so the long fault runs do not start last. `make pytest PYTEST_WORKERS=0` runs serially.
PYTEST_WORKERS ?= 4

# The suite starts some 400 Python processes (serve, supervise, the CLI). Where the environment
# sets PYTHONDONTWRITEBYTECODE, each would compile the package from its sources again (0.1 s),
# and each pytest worker would rewrite and compile every test module again (5.4 -> 2.9 s of
# collection per worker once they are kept): compileall writes the package's bytecode once, and
# the suite runs with the variable empty, so what is compiled once is read from then on.
# The default tier leaves out the tests marked `long` (pyproject.toml's addopts); `-q` ends with
# pytest's own "N passed in Xs", and `time` adds the whole run's, collection and workers included.
PYTEST = PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) \
	--dist loadfile --no-loadscope-reorder

pytest: $(STAMP) ## the default tier of the test suite, in parallel (pytest-xdist)
	@$(PY) -m compileall -q stateous tui
	@time $(PYTEST) $(PYTEST_ARGS)

test-long: $(STAMP) ## the long tier: the 5,000-token and replica fault runs (pytest -m long)
	@$(PY) -m compileall -q stateous tui
	@time $(PYTEST) -m long $(PYTEST_ARGS)

# The gates run beside pytest (`-j`): mypy's 25 s on a clean checkout would otherwise come before
# the suite's first test. `-Oline` keeps each line of each whole, so pytest's progress still shows
# line by line; a failed gate fails `make test` once pytest is done.
test: $(STAMP) ## the whole gate: ruff, mypy, import rules, the default tier of pytest
	@$(MAKE) --no-print-directory -j 4 -Oline lint typecheck imports pytest

faults: $(STAMP) ## every fault test of both tiers at the figures of docs/reliability.md
	@STATEOUS_FAULTS=long $(VENV)/bin/pytest -q -m "" tests/faults

bench: $(STAMP) ## run the benchmarks and write bench/results.json
	@$(PY) bench/run_all.py

snapshot-update: $(STAMP) ## rewrite the console's SVG snapshots
	@$(VENV)/bin/pytest -q tests/unit/tui tests/integration/tui/test_console_ops.py --snapshot-update

clean: ## remove .venv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
