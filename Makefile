# Two entry points: `make run` and `make test`. Both install what is missing first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test demo sysdeps venv lint bench clean

sysdeps:
	@sh packaging/ensure-system-deps.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

venv: sysdeps $(STAMP)

# The GUI arrives with a later issue; until then `make run` is the headless demo on the sandbox.
run: venv
	@if [ -z "$$DISPLAY" ] && [ -z "$$WAYLAND_DISPLAY" ]; then echo "no display: running the headless demo"; fi
	$(VENV)/bin/tunebench demo

test: venv
	$(PY) -m pytest

lint: venv
	$(VENV)/bin/ruff check app tests bench
	$(VENV)/bin/mypy

bench: venv
	$(PY) bench/engine_vs_sysbench.py
	$(PY) bench/probe_overhead.py

clean:
	rm -rf $(VENV) build dist *.egg-info
