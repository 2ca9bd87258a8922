"""The compiled hot loop of the builtin engine (app/tunebench/load/_hotloop.c), built against libmariadb when
`mariadb_config` is there (Debian: libmariadb-dev, which packaging/ensure-system-deps.sh installs). Optional:
without it the engine runs its Python loop, and `tunebench doctor` says so. Everything else is in pyproject.toml."""

import shutil
import subprocess

from setuptools import Extension, setup


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
extensions = [
    Extension("tunebench.load._hotloop", ["app/tunebench/load/_hotloop.c"],
              extra_compile_args=[*flags[0], "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                  "-Wno-missing-field-initializers"],
              extra_link_args=flags[1], optional=True)
] if flags else []
setup(ext_modules=extensions)
