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
print(f"doctor: driver {d['driver']['mode']}, engine {d.get('engine_loop')}, sysbench {(d['sysbench'] or {}).get('version')}, "
      f"servers {[s['flavor'] + ' ' + s['version'] for s in d['servers']]}, problems {d['problems']}")
assert d["driver"]["c_extension"], "the bundle lost the mysql-connector C extension"
assert d["sysbench"] and d["servers"] and not d["problems"], d
PY
start=$(date +%s.%N)
TUNEBENCH_STARTUP_TIME=1 "$BIN" gui --demo --screenshot "$HOME_DIR/demo.png" 2> "$HOME_DIR/gui.err" || {
  cat "$HOME_DIR/gui.err" >&2; exit 1; }
python3 - "$HOME_DIR/demo.png" "$start" "$HOME_DIR/gui.err" <<'PY'
import re, struct, sys, time
m = re.search(r"epoch ([\d.]+)", open(sys.argv[3]).read())
assert m, "no startup line"
print(f"start-up: first painted window {float(m.group(1)) - float(sys.argv[2]):.2f} s after the command started")
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1600, 1000), (w, h)
print(f"gui --demo --screenshot: {w}x{h} PNG, {time.time() - float(sys.argv[2]):.0f} s with the 20 s demo run")
PY
# start-up on its own: the sandbox is up and session 1 recorded now
start=$(date +%s.%N)
TUNEBENCH_STARTUP_TIME=1 "$BIN" gui --replay 1 --screenshot "$HOME_DIR/replay.png" 2> "$HOME_DIR/replay.err" || {
  cat "$HOME_DIR/replay.err" >&2; exit 1; }
python3 - "$start" "$HOME_DIR/replay.err" <<'PY'
import re, sys
m = re.search(r"epoch ([\d.]+)", open(sys.argv[2]).read())
print(f"start-up to the first painted window (replay of session 1): {float(m.group(1)) - float(sys.argv[1]):.2f} s")
PY
echo "bundle smoke test passed"
