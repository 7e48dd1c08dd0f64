# The local run contract (see README): make install | make run | make test
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= .credgate
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
TEST_STAMP := $(VENV)/.test-installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: install run test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e .
	touch $@

$(TEST_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/credgate serve --data-dir $(DATA_DIR)

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

bench: $(TEST_STAMP)
	$(BIN)/python bench/gateway.py
	$(BIN)/python bench/api.py
	$(BIN)/python bench/cold_import.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
