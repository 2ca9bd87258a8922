"""The compiled hot loop of the builtin engine (app/tunebench/load/_hotloop.c), built against libmariadb when
`mariadb_config` is there (Debian: libmariadb-dev, which packaging/ensure-system-deps.sh installs). Optional:
without it the engine runs its Python loop, and `tunebench doctor` says so. TUNEBENCH_REQUIRE_HOTLOOP=1 (`make
hotloop`, so `make test`) makes it required: no mariadb_config or a failed compile is then an error, not a silent
fallback. Everything else is in pyproject.toml."""

import os
import shutil
import subprocess

from setuptools import Extension, setup

REQUIRED = os.environ.get("TUNEBENCH_REQUIRE_HOTLOOP") == "1"


def mariadb_flags() -> tuple[list[str], list[str]] | None:
    if shutil.which("mariadb_config") is None:
        return None
    try:
        cflags = subprocess.run(["mariadb_config", "--cflags"], capture_output=True, text=True, check=True).stdout
        libs = subprocess.run(["mariadb_config", "--libs"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return cflags.split(), libs.split()


flags = mariadb_flags()
if flags is None and REQUIRED:
    raise SystemExit("TUNEBENCH_REQUIRE_HOTLOOP=1 but mariadb_config does not run: apt-get install libmariadb-dev")
extensions = [
    Extension("tunebench.load._hotloop", ["app/tunebench/load/_hotloop.c"],
              extra_compile_args=[*flags[0], "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                  "-Wno-missing-field-initializers"],
              extra_link_args=flags[1], optional=not REQUIRED)
] if flags else []
setup(ext_modules=extensions)
