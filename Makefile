# llamafleet.llamacpp — developer entry points. `make test` is what CI runs.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint unit clean

$(STAMP): requirements-dev.txt
	test -x $(PY) || python3.11 -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

## The main job on an embedded default: plan the example preset for the example host.
demo: $(STAMP)
	$(PY) scripts/plan_demo.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .

unit: $(STAMP)
	$(VENV)/bin/pytest tests/unit \
	  --cov --cov-report=term-missing --cov-fail-under=95

## Every test and linter.
test: lint unit

clean:
	rm -rf $(VENV) .collections .pytest_cache .ruff_cache .coverage
