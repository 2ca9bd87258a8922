#!/bin/sh
# Installs the system packages Tunebench needs when they are missing (Debian/Ubuntu, apt-get).
# Server + load: mariadb-server (mariadbd, mariadb-install-db), sysbench. Later issues: xvfb (GUI tests),
# openssh-server (SSH runner tests), Qt's runtime libraries (PySide6), postgresql (the shared-store tests).
# python3-venv for `python3 -m venv`.
# linux-perf: the CPU profile probe. gcc, libmariadb-dev, python3-dev: the builtin engine's compiled loop
# (app/tunebench/load/_hotloop.c, built by `pip install` and `make hotloop`; `make sanitized-hotloop` uses
# the libasan and libubsan that Debian's gcc brings). prometheus: the --metrics-listen test scrapes a run with
# Debian's binary (its own config and port; the packaged service is never started, see policy-rc.d below).
set -eu
missing=""
need() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || missing="$missing $2"; }
need_lib() { ldconfig -p 2>/dev/null | grep -q "$1" || missing="$missing $2"; }
if ! command -v mariadbd >/dev/null 2>&1 && ! command -v mysqld >/dev/null 2>&1 \
   && [ ! -x /usr/sbin/mariadbd ] && [ ! -x /usr/sbin/mysqld ]; then
  missing="$missing mariadb-server"
fi
need sysbench sysbench
need Xvfb xvfb
need sshd openssh-server
need taskset util-linux
need losetup mount    # the fault tests: a store on a small ext4 image turned read-only mid-run
need mkfs.ext4 e2fsprogs
need findmnt util-linux
need perf linux-perf  # the `profile` probe (Debian's package; Ubuntu's is linux-tools-$(uname -r))
need openssl openssl  # the TLS tests make their own CA and server certificates
need dpkg-deb dpkg    # server kits: `tunebench servers fetch` unpacks Debian packages (apt-get, dpkg -x)
need gcc gcc
need prometheus prometheus
# a PostgreSQL the tests start as a shared session store (Debian 12's 15; initdb and postgres are not on PATH)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$missing postgresql"
need mariadb_config libmariadb-dev
python3 -c "import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
  || missing="$missing python3-dev"
need_lib libEGL.so.1 libegl1
need_lib libGL.so.1 libgl1
need_lib libxkbcommon.so.0 libxkbcommon0
need_lib libxkbcommon-x11.so.0 libxkbcommon-x11-0
need_lib libfontconfig.so.1 libfontconfig1
need_lib libdbus-1.so.3 libdbus-1-3
need_lib libxcb-cursor.so.0 libxcb-cursor0
need_lib libxcb-icccm.so.4 libxcb-icccm4
need_lib libxcb-keysyms.so.1 libxcb-keysyms1
need_lib libxcb-shape.so.0 libxcb-shape0
need_lib libxcb-xinerama.so.0 libxcb-xinerama0
need_lib libxcb-randr.so.0 libxcb-randr0
need_lib libxcb-render-util.so.0 libxcb-render-util0
need_lib libxcb-image.so.0 libxcb-image0
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || missing="$missing python3-venv"
if [ -z "$missing" ]; then
  exit 0
fi
echo "installing system packages:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "need root (or sudo) to install:$missing" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# policy-rc.d keeps the packages from starting system servers (a MariaDB, a Prometheus on :9090): Tunebench and its
# tests run their own. One is put in place for the install when the system has none (a container image has one).
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
