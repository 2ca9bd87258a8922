# Two entry points: `make run` and `make test`. Both install what is missing first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test demo sysdeps venv kits lint bench clean package package-test

sysdeps:
	@sh packaging/ensure-system-deps.sh

# setup.py builds the engine's compiled loop (app/tunebench/load/_hotloop.c) into the checkout
$(STAMP): pyproject.toml setup.py app/tunebench/load/_hotloop.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

venv: sysdeps $(STAMP)

# The workbench window on the sandbox; without a display, `tunebench` says so in one line and runs the
# headless demo instead.
run: venv
	$(VENV)/bin/tunebench

# The suite runs its server tests on MySQL 9.x and MariaDB 11.8 too: kits from Debian's archive (the mirror
# of this machine's apt sources), fetched once into the user data dir and kept between runs.
kits: venv
	$(VENV)/bin/tunebench servers fetch mysql
	$(VENV)/bin/tunebench servers fetch mariadb-11.8

test: venv kits
	$(PY) -m pytest

# The desktop bundle (PyInstaller, one folder: dist/tunebench/) and its smoke test.
package: venv
	PY=$(PY) sh packaging/build.sh

package-test: package
	sh packaging/smoke-test.sh

lint: venv
	$(VENV)/bin/ruff check app tests bench
	$(VENV)/bin/mypy

bench: venv
	$(PY) bench/engine_vs_sysbench.py
	$(PY) bench/probe_overhead.py
	$(PY) bench/ui_responsiveness.py
	$(PY) bench/replay_open.py

clean:
	rm -rf $(VENV) build dist *.egg-info
