# Two commands on a fresh machine: `make demo` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: demo test lint typecheck bench soak clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/scorewatch demo

# The suite, then the static checks (ruff, mypy strict) that CI holds the code to.
test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory lint typecheck

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks grafana deploy
	$(BIN)/ruff format --check src tests benchmarks grafana deploy

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

soak: $(STAMP)
	$(BIN)/python benchmarks/soak.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
