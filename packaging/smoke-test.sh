#!/bin/sh
# Smoke test of the built bundle, on its own data dir: doctor --json, then the GUI demo rendered offscreen.
set -eu
cd "$(dirname "$0")/.."
BIN=dist/tunebench/tunebench
[ -x "$BIN" ] || { echo "no bundle: run make package first" >&2; exit 1; }
HOME_DIR=$(mktemp -d /tmp/tb-bundle-XXXXXX)
export TUNEBENCH_HOME="$HOME_DIR" QT_QPA_PLATFORM=offscreen
trap '"$BIN" sandbox stop >/dev/null 2>&1 || true; rm -rf "$HOME_DIR"' EXIT
"$BIN" --version
"$BIN" doctor --json > "$HOME_DIR/doctor.json"
python3 - "$HOME_DIR/doctor.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"doctor: driver {d['driver']['mode']}, sysbench {(d['sysbench'] or {}).get('version')}, "
      f"servers {[s['flavor'] + ' ' + s['version'] for s in d['servers']]}, problems {d['problems']}")
assert d["driver"]["c_extension"], "the bundle lost the mysql-connector C extension"
assert d["sysbench"] and d["servers"] and not d["problems"], d
PY
start=$(date +%s.%N)
"$BIN" gui --demo --screenshot "$HOME_DIR/demo.png"
python3 - "$HOME_DIR/demo.png" "$start" <<'PY'
import struct, sys, time
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1600, 1000), (w, h)
print(f"gui --demo --screenshot: {w}x{h} PNG, {time.time() - float(sys.argv[2]):.0f} s with the 20 s demo run")
PY
echo "bundle smoke test passed"
