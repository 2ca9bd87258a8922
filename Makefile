# Two entry points: `make run` and `make test`. Both install what is missing first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test demo sysdeps venv kits hotloop sanitized-hotloop lint bench clean package package-test

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
	$(VENV)/bin/tunebench servers fetch mariadb-10.5

# The compiled loop once more, required this time: the install above builds it as optional and `pip -q` hides a
# failed build (the engine would quietly run its Python loop). Here a missing libmariadb-dev or a compile error
# stops `make test` with the compiler's message, and the suite (TUNEBENCH_REQUIRE_HOTLOOP=1) fails if it does not
# load (tests/unit/test_hotloop.py). --force: a stale or broken build is replaced whatever its timestamp says;
# this is also what `tunebench doctor` tells a user who installed gcc and libmariadb-dev after the venv.
hotloop: venv
	TUNEBENCH_REQUIRE_HOTLOOP=1 $(PY) setup.py -q build_ext --inplace --force

# The compiled loop's tests under AddressSanitizer and UBSan (~20 s): the extension built with both into a copy
# of the package in build/sanitized (the checkout's build stays as it is), the interpreter started with gcc's
# libasan preloaded (ASan's runtime must be loaded first; Python itself is not instrumented). Leak checking is
# off: the interpreter's own allocations at exit would drown the report. Any report aborts the run: an error.
SANITIZED := $(CURDIR)/build/sanitized
SANITIZE  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g
SANITIZED_ENV := LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONPATH=$(SANITIZED) \
	TUNEBENCH_RESOURCES=$(CURDIR)/resources TUNEBENCH_WORKLOADS=$(CURDIR)/workloads
KILL_SERVERS_UNDER := PYTHONPATH=app:tests $(PY) -c \
	'import sys; from server_leaks import kill_all, servers_under; kill_all(servers_under(sys.argv[1:]))'
sanitized-hotloop: venv
	rm -rf $(SANITIZED) && mkdir -p $(SANITIZED) && cp -r app/tunebench $(SANITIZED)/
	find $(SANITIZED) -name '*.so' -delete
	CFLAGS="$(SANITIZE)" LDFLAGS="$(SANITIZE)" TUNEBENCH_REQUIRE_HOTLOOP=1 \
		$(PY) setup.py -q build_ext --build-lib $(SANITIZED) --build-temp $(SANITIZED)/tmp
	$(SANITIZED_ENV) $(PY) -c 'import tunebench.load._hotloop as h; assert "/build/sanitized/" in h.__file__, h.__file__'
	@# --capture=sys: a report goes to the real stderr (fd 2), not into a capture that the abort discards; the
	@# abort also skips the suite's teardown, so its sandbox (under a TMPDIR of its own) is stopped here
	tmp=$$(mktemp -d /tmp/tb-sanitized-XXXXXX); \
	$(SANITIZED_ENV) TMPDIR=$$tmp $(PY) -m pytest -q --capture=sys -p no:cacheprovider tests/integration/test_hotloop.py; \
	rc=$$?; $(KILL_SERVERS_UNDER) $$tmp/; rm -rf $$tmp; exit $$rc

# The suite, then the tests marked `solo` (pyproject.toml) alone: statistics that need the transactions or the CPU of
# a machine not shared with the rest of the suite. The compiled loop's sanitizer run goes beside the first part.
# Every part runs whatever an earlier one did; the make fails if any failed.
# The first part runs on TEST_WORKERS pytest-xdist workers (6; 0: one process, ~41 min): most of the suite waits on
# the clock, so six workers overlap those waits on two cores. Each worker is a test session of its own
# (TUNEBENCH_HOME, sandboxes, sshd, stores; tests/conftest.py), a module's tests on one worker (--dist loadfile), the
# longest modules first (tests/durations.json; --no-loadscope-reorder keeps that order: xdist would sort the modules
# by their number of tests). A worker that crashes (a segfault) is not replaced: the run ends there and says so
# (--max-worker-restart 0; a replaced worker once left the run hung, every worker idle, for 10 minutes).
TEST_WORKERS ?= 6
XDIST := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
	--max-worker-restart 0)
TEST_START := $(shell date +%s)
test: hotloop kits
	@mkdir -p build; rc=0; \
	$(MAKE) --no-print-directory sanitized-hotloop > build/sanitized-hotloop.log 2>&1 & san=$$!; \
	TUNEBENCH_REQUIRE_HOTLOOP=1 $(PY) -m pytest $(XDIST) -m "not solo" || rc=1; \
	if wait $$san; then tail -n 1 build/sanitized-hotloop.log; \
	else cat build/sanitized-hotloop.log; echo "FAILED: make sanitized-hotloop"; rc=1; fi; \
	TUNEBENCH_REQUIRE_HOTLOOP=1 $(PY) -m pytest -m solo || rc=1; \
	echo "make test: $$(( $$(date +%s) - $(TEST_START) )) s in all (installs included), exit $$rc"; exit $$rc

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
