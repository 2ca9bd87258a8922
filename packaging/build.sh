#!/bin/sh
# Builds the one-folder bundle dist/tunebench/ with PyInstaller (installed into the project venv).
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" -m pip install -q -e '.[package]'
start=$(date +%s)
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN --distpath dist --workpath build/pyinstaller \
  packaging/tunebench.spec
echo "built dist/tunebench in $(( $(date +%s) - start )) s: $(du -sh dist/tunebench | cut -f1)"
