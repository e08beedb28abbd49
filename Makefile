# Two commands on a fresh machine: `make demo` and `make test`. Each sets itself up.
# `make demo` installs scorewatch with its runtime dependencies only; `make test` (and lint,
# typecheck, bench) the contributor set, the `dev` extra of pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: demo test lint typecheck bench soak clean

$(BIN)/python:
	@echo "==> creating a virtualenv in $(VENV) ($(PYTHON) -m venv)"
	@$(PYTHON) -m venv $(VENV)
	@echo "==> upgrading pip in $(VENV)"
	@$(PIP) install --quiet --upgrade pip

$(VENV)/.installed-runtime: pyproject.toml | $(BIN)/python
	@echo "==> installing scorewatch and its runtime dependencies into $(VENV)"
	@echo "    (litellm, OpenTelemetry, FastAPI, ...; no test or lint tools; a minute or two the first time)"
	@$(PIP) install --progress-bar on -e .
	@touch $@
	@echo "==> installed"

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	@echo "==> installing scorewatch with its test, lint and benchmark tools (the dev extra) into $(VENV)"
	@$(PIP) install --progress-bar on -e '.[dev]'
	@touch $@ $(VENV)/.installed-runtime
	@echo "==> installed"

demo: $(VENV)/.installed-runtime
	@echo "==> running scorewatch demo (Ctrl-C stops it early and prints the summary)"
	$(BIN)/scorewatch demo

# The suite, then the static checks (ruff, mypy strict) that CI holds the code to.
test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory lint typecheck

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks grafana deploy tools
	$(BIN)/ruff format --check src tests benchmarks grafana deploy tools

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/run.py

soak: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/soak.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
