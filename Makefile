# Two entry points, both idempotent: `make demo` and `make test`.
# TORCH_SPEC / TORCH_PIP_ARGS choose the torch build (default: the pinned CPU build).
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
DEMO_OUT ?= demo-out
BIN := $(VENV)/bin
STAMP := $(VENV)/.privgraph-installed

.PHONY: demo test lint install clean docs

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install "$(TORCH_SPEC)" $(TORCH_PIP_ARGS)
	$(BIN)/pip install -e ".[test,docs,sweep]"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/privgraph demo --out $(DEMO_OUT)

# lint, format and types first (ruff and mypy, config in pyproject.toml: mypy checks the files listed
# there, the public API, accounting, mechanisms and release files), then the suite
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# the suite on every core (pytest-xdist, the test extra): one worker per core, idle workers take queued tests
# from busy ones (worksteal: a few tests take minutes); PYTEST_WORKERS=0 runs it in this process
PYTEST_WORKERS ?= auto
test: lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal

# The documentation site (MkDocs + mkdocstrings, API reference from the docstrings) into site/;
# --strict: any warning (a broken link, a missing snippet, a docstring griffe cannot parse) fails.
# The install above has the docs extra: nothing is installed again after `make demo`.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .mypy_cache
