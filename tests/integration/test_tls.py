"""Issue 28: the servers users run, over TCP with TLS. An ordinary caching_sha2_password account on MySQL 9 with
default settings, a MariaDB 11.8 that accepts only secure transport with its own CA, a server without TLS asked
for it, and the cost of TLS as a sweep axis."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.conftest import server_under_test

from tunebench.mysql.connect import global_status, open_connection, query_all
from tunebench.store.repo import Store

pytestmark = pytest.mark.integration
PASSWORD = "p w\"q'é-ß"
# each connection of a user, with its TLS cipher ('' or NULL: none) as the server has it
CIPHERS = ("SELECT t.PROCESSLIST_ID, s.VARIABLE_VALUE FROM performance_schema.threads t LEFT JOIN "
           "performance_schema.status_by_thread s ON s.THREAD_ID = t.THREAD_ID AND s.VARIABLE_NAME = 'Ssl_cipher' "
           "WHERE t.PROCESSLIST_USER = %s")  # quotes, a space and non-ASCII characters


def _store() -> Store:
    return Store(Path(os.environ["TUNEBENCH_HOME"]) / "sessions.sqlite")


def _sessions() -> int:
    store = _store()
    try:
        return len(store.list_sessions())
    finally:
        store.close()


def _one_line_exit_2(out: subprocess.CompletedProcess, *pieces: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    for piece in pieces:
        assert piece in lines[0], lines[0]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(folder: Path, name: str) -> None:
    """A CA, and a server certificate it signed for 127.0.0.1."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}-ca-key.pem", "-out",
             f"{name}-ca.pem", "-days", "2", "-subj", f"/CN={name} test CA", cwd=folder)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}-server-key.pem", "-out", f"{name}.csr",
             "-subj", "/CN=127.0.0.1", cwd=folder)
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{name}-ca.pem", "-CAkey", f"{name}-ca-key.pem",
             "-CAcreateserial", "-out", f"{name}-server-cert.pem", "-days", "2", "-extfile", "san.cnf", cwd=folder)


@pytest.fixture
def mysql(sandbox, kit_sandboxes):
    return server_under_test("mysql-9", sandbox, kit_sandboxes)


def test_an_ordinary_caching_sha2_account_over_tcp_uses_tls_by_default(mysql, cli):
    admin = mysql.params(None)
    conn = open_connection(admin)
    try:
        cur = conn.cursor()
        cur.execute("DROP USER IF EXISTS 'tb_bench'@'127.0.0.1'")
        cur.execute("CREATE USER 'tb_bench'@'127.0.0.1' IDENTIFIED BY %s", (PASSWORD,))  # caching_sha2_password
        cur.execute("GRANT ALL ON *.* TO 'tb_bench'@'127.0.0.1'")
        cur.execute("FLUSH PRIVILEGES")  # empties caching_sha2's cache: the first login needs the full exchange
        plugin = query_all(conn, "SELECT plugin FROM mysql.user WHERE user = 'tb_bench'")[0][0]
        assert plugin == "caching_sha2_password"
        before = global_status(conn, ("Ssl_accepts",))["Ssl_accepts"]
        port = mysql.sandbox.status().port
        added = cli("target", "add", "mysql9-bench", "--host", "127.0.0.1", "--port", str(port), "--user", "tb_bench",
                    "--replace")
        assert added.returncode == 0, added.stderr
        # (open loops at 200/s here: the logins and their TLS are the claim, not the load's speed; at full speed
        # its two 2-s runs took both cores, issue 41)
        out = cli("run", "--target", "mysql9-bench", "--workload", "oltp_point_select", "--threads", "2", "--rate",
                  "200", "--step-seconds", "2", "--table-size", "10000", "--json", env={"MYSQL_PWD": PASSWORD},
                  timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        result = json.loads(out.stdout)
        assert result["status"] == "completed"
        after = global_status(conn, ("Ssl_accepts",))["Ssl_accepts"]
        # the run's own connections (lock, probes, watch, drift) and the load's two, all over TLS
        assert after - before >= 4, (before, after)
        assert result["tls"]["tls"] and result["tls"]["mode"] == "PREFERRED" and result["tls"]["cipher"]
        session = _store().get_session(result["session_id"])
        assert session["config"]["tls"]["version"].startswith("TLSv1")
        md = cli("sessions", "export", str(result["session_id"]), "--format", "md").stdout
        assert "ssl-mode PREFERRED" in md and result["tls"]["cipher"] in md
        # TLS switched off: caching_sha2_password cannot finish its exchange, and the line says what to use
        cur.execute("FLUSH PRIVILEGES")
        cli("target", "add", "mysql9-plain", "--host", "127.0.0.1", "--port", str(port), "--user", "tb_bench",
            "--ssl-mode", "DISABLED", "--replace")
        n = _sessions()
        plain = cli("run", "--target", "mysql9-plain", "--workload", "oltp_point_select", "--step-seconds", "1",
                    env={"MYSQL_PWD": PASSWORD})
        _one_line_exit_2(plain, "caching_sha2_password", "--ssl-mode PREFERRED")
        assert "(lock)" not in plain.stderr and "--get-server-public-key" in plain.stderr and _sessions() == n
        # ... or, without TLS, through the server's RSA public key when the user allows it
        cur.execute("FLUSH PRIVILEGES")
        cli("target", "add", "mysql9-rsa", "--host", "127.0.0.1", "--port", str(port), "--user", "tb_bench",
            "--ssl-mode", "DISABLED", "--get-server-public-key", "--replace")
        before = global_status(conn, ("Ssl_accepts",))["Ssl_accepts"]
        rsa = cli("run", "--target", "mysql9-rsa", "--workload", "oltp_point_select", "--threads", "2", "--rate",
                  "200", "--step-seconds", "2", "--table-size", "10000", "--json", env={"MYSQL_PWD": PASSWORD},
                  timeout=300)
        assert rsa.returncode == 0, rsa.stderr[-2000:]
        assert json.loads(rsa.stdout)["status"] == "completed" and not json.loads(rsa.stdout)["tls"]["tls"]
        assert global_status(conn, ("Ssl_accepts",))["Ssl_accepts"] == before  # no TLS at all
        # the Python loop's connections (C extension: it cannot ask for the key) log in after one RSA exchange
        from tunebench.load.driver import PureSession, RawSession
        from tunebench.mysql.target import conn_params

        params = conn_params(_store().get_target("mysql9-rsa"), "tcp", None, PASSWORD)
        assert params.get_server_public_key and not params.tls
        for session_class in (RawSession, PureSession):
            cur.execute("FLUSH PRIVILEGES")
            s = session_class(params)
            assert s.query_rows(b"SELECT CURRENT_USER()") and not any(
                v for _k, v in s.query_rows(b"SHOW SESSION STATUS LIKE 'Ssl_cipher'"))
            s.close()
    finally:
        conn.cursor().execute("DROP USER IF EXISTS 'tb_bench'@'127.0.0.1'")
        conn.close()


@pytest.fixture(scope="module")
def secure_mariadb(tmp_path_factory, sandbox, kit_sandboxes):
    """A MariaDB 11.8 sandbox of its own that accepts only secure transport, with a CA made here. One for the
    module: its two tests add targets of their own names and load the same small table, and change nothing else
    on it (a sandbox started and stopped and two CAs made for each: 2.2 CPU s, issue 41)."""
    from tunebench.hosts.sandbox import SandboxServer

    kit = server_under_test("mariadb-11.8", sandbox, kit_sandboxes).sandbox.binary()
    tls = tmp_path_factory.mktemp("tls")
    make_ca(tls, "ours")
    make_ca(tls, "other")
    sb = SandboxServer(tmp_path_factory.mktemp("secure") / "sandbox", server=kit)
    sb.start({"ssl-ca": str(tls / "ours-ca.pem"), "ssl-cert": str(tls / "ours-server-cert.pem"),
              "ssl-key": str(tls / "ours-server-key.pem"), "require_secure_transport": "ON"})
    yield sb, tls
    sb.stop()


def test_require_secure_transport_with_our_ca_and_another(secure_mariadb, cli):
    from tunebench.mysql.target import read_option_file_password

    sb, tls = secure_mariadb
    port = str(sb.status().port)
    env = {"MYSQL_PWD": read_option_file_password(sb.client_cnf)}
    for name, mode, ca in (("secure", "VERIFY_CA", "ours-ca.pem"), ("secure-id", "VERIFY_IDENTITY", "ours-ca.pem"),
                           ("wrong-ca", "VERIFY_CA", "other-ca.pem"), ("plain", "DISABLED", None)):
        argv = ["target", "add", name, "--host", "127.0.0.1", "--port", port, "--user", "tunebench",
                "--ssl-mode", mode, "--replace"]
        assert cli(*argv, *(["--ssl-ca", str(tls / ca)] if ca else [])).returncode == 0
    # (open loops at 200/s: the TLS modes are the claim, not the load's speed; issue 41)
    out = cli("run", "--target", "secure", "--workload", "oltp_point_select", "--threads", "2", "--rate", "200",
              "--step-seconds", "2", "--table-size", "1000", "--json", env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["status"] == "completed" and result["tls"]["tls"] and result["tls"]["mode"] == "VERIFY_CA"
    out = cli("run", "--target", "secure-id", "--workload", "oltp_point_select", "--threads", "2", "--rate", "200",
              "--step-seconds", "1", "--table-size", "1000", "--json", env=env, timeout=300)
    assert out.returncode == 0 and json.loads(out.stdout)["status"] == "completed", out.stderr[-2000:]
    n = _sessions()
    _one_line_exit_2(cli("run", "--target", "wrong-ca", "--workload", "oltp_point_select", "--step-seconds", "1",
                         env=env), "TLS with 127.0.0.1", "certificate verify failed", "--ssl-ca")
    _one_line_exit_2(cli("run", "--target", "plain", "--workload", "oltp_point_select", "--step-seconds", "1",
                         env=env), "require_secure_transport=ON")
    assert _sessions() == n  # nothing recorded


def test_sysbench_over_tls_here_and_on_a_client_host(secure_mariadb, cli, sshd):
    """sysbench 1.0 uses TLS with a CA, a client certificate and its key, loaded from its working folder: here a
    private folder of links, on a client host a private folder the files are copied to, removed at the end."""
    from tunebench.hosts.ssh import tunebench_known_hosts
    from tunebench.mysql.target import read_option_file_password

    sb, tls = secure_mariadb
    env = {"MYSQL_PWD": read_option_file_password(sb.client_cnf)}
    assert cli("target", "add", "secure-sb", "--host", "127.0.0.1", "--port", str(sb.status().port), "--user",
               "tunebench", "--ssl-mode", "VERIFY_CA", "--ssl-ca", str(tls / "ours-ca.pem"), "--ssl-cert",
               str(tls / "ours-server-cert.pem"), "--ssl-key", str(tls / "ours-server-key.pem"),
               "--replace").returncode == 0
    kh = tunebench_known_hosts()
    sshd.trust(kh, "127.0.0.1")
    try:
        for where in ((), ("--client-host", sshd.url(), "--ssh-key", sshd.key)):
            # (sysbench's own open loop at 200/s: its TLS files are the claim, not the load's speed; issue 41)
            out = cli("run", "--target", "secure-sb", "--engine", "sysbench", "--workload", "oltp_point_select",
                      "--threads", "2", "--rate", "200", "--step-seconds", "3", "--table-size", "1000", "--json",
                      *where, env=env, timeout=300)
            assert out.returncode == 0, out.stderr[-2000:]
            result = json.loads(out.stdout)
            assert result["status"] == "completed" and result["steps"][0]["tps"] > 0, where
            assert result["tls"]["tls"] and "load" not in result["tls"]  # the load's connections too
    finally:
        kh.unlink(missing_ok=True)
    assert sysbench_folders_holding(tls) == []  # nothing left on either host


def sysbench_folders_holding(tls: Path) -> list[Path]:
    """sysbench's working folders in /tmp that hold this test's TLS files: links to them (here) or copies of our CA
    (on the client host). Others' folders are not this test's business: a neighbouring test session's sysbench
    makes and removes its own meanwhile (comparing the whole listing before and after failed on those)."""
    ca = (tls / "ours-ca.pem").read_bytes()
    ours = []
    for folder in Path("/tmp").glob("tb-sysbench-*"):
        try:
            for f in folder.iterdir():
                if (f.is_symlink() and Path(os.readlink(f)).is_relative_to(tls)) or (
                        f.is_file() and f.read_bytes() == ca):
                    ours.append(folder)
                    break
        except OSError:  # gone meanwhile: not left over
            continue
    return ours


def test_tls_required_of_a_server_without_tls_and_bad_files(sandbox, cli, tmp_path):
    """The system's MariaDB 10.11 sandbox has no certificate: REQUIRED is refused, not quietly plain."""
    port = str(sandbox.status().port)
    from tunebench.mysql.target import read_option_file_password

    env = {"MYSQL_PWD": read_option_file_password(sandbox.client_cnf)}
    assert cli("target", "add", "req", "--host", "127.0.0.1", "--port", port, "--user", "tunebench", "--ssl-mode",
               "REQUIRED", "--replace").returncode == 0
    n = _sessions()
    _one_line_exit_2(cli("run", "--target", "req", "--workload", "oltp_point_select", "--step-seconds", "1", env=env),
                     "ssl-mode REQUIRED but the server offers no TLS")
    key = tmp_path / "key.pem"
    key.write_text("x")
    key.chmod(0)
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    assert cli("target", "add", "keyless", "--host", "127.0.0.1", "--port", port, "--user", "tunebench",
               "--ssl-cert", str(cert), "--ssl-key", str(key), "--replace").returncode == 0
    if os.geteuid() != 0:  # root reads any file
        _one_line_exit_2(cli("run", "--target", "keyless", "--workload", "oltp_point_select", env=env),
                         "--ssl-key", "cannot read it")
    _one_line_exit_2(cli("target", "add", "x", "--host", "127.0.0.1", "--ssl-mode", "VERIFY_CA"), "needs --ssl-ca")
    _one_line_exit_2(cli("target", "add", "x", "--host", "127.0.0.1", "--ssl-mode", "SOMETIMES"), "unknown ssl-mode")
    _one_line_exit_2(cli("run", "--target", f"mysql://tunebench@127.0.0.1:{port}/?ssl-mode=REQUIRED",
                         "--workload", "oltp_point_select", env=env), "server offers no TLS")
    assert _sessions() == n


def test_the_cost_of_tls_as_a_sweep_axis(mysql, cli, tmp_path):
    spec = tmp_path / "tls.toml"
    # steps of 2 s (3 before, issue 41): each configuration's connections and TLS mode, and that a ratio comes out,
    # are checked, not the ratio's value
    spec.write_text('name = "tls-cost"\nworkload = "oltp_point_select"\nthreads = [2]\nstep_seconds = 2\n'
                    'warmup_seconds = 1\nbaseline = { transport = "tcp" }\n[options]\ntable_size = 10000\n'
                    '[axes]\ntransport = ["tcp", "tcp+tls"]\n')
    conn = open_connection(mysql.params(None))
    before = global_status(conn, ("Ssl_accepts",))["Ssl_accepts"]
    out = cli("sweep", str(spec), *mysql.args, "--json", "--probes", "status", timeout=300)
    after = global_status(conn, ("Ssl_accepts",))["Ssl_accepts"]
    conn.close()
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    assert [c["transport"] for c in result["configs"]] == ["tcp", "tcp+tls"]
    assert all(c["best"]["tps"] > 0 for c in result["configs"])
    tls_row = next(r for r in result["ratios"] if r["config"] == 1)
    assert tls_row["steps"][0]["ratio"] > 0
    assert after - before >= 2  # the tcp+tls configuration's two connections (the sandbox's tcp is plain)
    events = _store().get_session(result["session_id"])["events"]
    started = [e["label"] for e in events if e["kind"] == "engine"]
    assert any("tcp+tls, ssl-mode REQUIRED" in s for s in started) and any("tcp, ssl-mode DISABLED" in s
                                                                           for s in started), started


def test_accounts_as_users_have_them(each_server, cli, tmp_path):
    """On each server, over TCP: an account without SUPER/SYSTEM_VARIABLES_ADMIN and PROCESS, its password with
    quotes, a space and non-ASCII characters; then the same account with its password expired."""
    server = each_server
    conn = open_connection(server.params(None))
    cur = conn.cursor()
    cur.execute("DROP USER IF EXISTS 'tb_limited'@'127.0.0.1'")
    cur.execute("CREATE USER 'tb_limited'@'127.0.0.1' IDENTIFIED BY %s", (PASSWORD,))
    cur.execute("GRANT ALL ON tunebench.* TO 'tb_limited'@'127.0.0.1'")
    url = f"mysql://tb_limited@127.0.0.1:{server.sandbox.status().port}/"
    env = {"MYSQL_PWD": PASSWORD}
    try:
        spec = tmp_path / "knob.toml"
        spec.write_text('workload = "oltp_point_select"\nthreads = [1]\nstep_seconds = 1\nwarmup_seconds = 0\n'
                        '[options]\ntable_size = 10000\n[axes]\ninnodb_spin_wait_delay = [6, 12]\n')
        n = _sessions()
        _one_line_exit_2(cli("sweep", str(spec), "--target", url, "--probes", "none", env=env),
                         "may not change server variables (innodb_spin_wait_delay)", "SUPER")
        assert _sessions() == n  # refused before anything ran
        # (an open loop at 200/s: the account's privileges are the claim, not the load's speed; issue 41)
        out = cli("run", "--target", url, "--workload", "oltp_point_select", "--threads", "1", "--rate", "200",
                  "--step-seconds", "2", "--table-size", "10000", "--json", env=env, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert json.loads(out.stdout)["status"] == "completed"
        # what needs PROCESS says so once, and nothing fails second after second
        assert "PROCESS" in out.stderr and "failing" not in out.stderr, out.stderr[-2000:]
        cur.execute("ALTER USER 'tb_limited'@'127.0.0.1' PASSWORD EXPIRE")
        _one_line_exit_2(cli("run", "--target", url, "--workload", "oltp_point_select", env=env),
                         "password of 'tb_limited'", "has expired", "ALTER USER")
        for argv in (["prepare", "--workload", "oltp_point_select"], ["sweep", str(spec), "--plan"],
                     ["check", "--workload", "tpcc"], ["cleanup"]):  # each command, the same one line
            _one_line_exit_2(cli(*argv, "--target", url, env=env), f"{url}: the password of 'tb_limited'",
                             "has expired")
    finally:
        cur.execute("DROP USER IF EXISTS 'tb_limited'@'127.0.0.1'")
        conn.close()


def test_mariadb_ed25519_and_unix_socket_accounts_are_one_line(sandbox, cli):
    """MariaDB's own plugins (on the system's 10.11: Debian's 11.8 kit carries no server plugins): one line
    each that says what to do, no traceback."""
    conn = open_connection(sandbox_params_of(sandbox))
    cur = conn.cursor()
    try:
        cur.execute("INSTALL SONAME 'auth_ed25519'")
    except Exception as exc:  # already there from an earlier run of this sandbox
        assert "already" in str(exc).lower() or "1968" in str(exc) or "1125" in str(exc), exc
    try:
        cur.execute("DROP USER IF EXISTS 'tb_ed'@'127.0.0.1', 'tb_sock'@'localhost'")
        cur.execute("CREATE USER 'tb_ed'@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('pw')")
        cur.execute("CREATE USER 'tb_sock'@'localhost' IDENTIFIED VIA unix_socket")
        port = sandbox.status().port
        _one_line_exit_2(cli("run", "--target", f"mysql://tb_ed@127.0.0.1:{port}/", "--workload", "oltp_point_select",
                             env={"MYSQL_PWD": "pw"}), "ed25519", "mysql_native_password")
        _one_line_exit_2(cli("run", "--target", f"mysql://tb_sock@localhost/?socket={sandbox.socket}",
                             "--workload", "oltp_point_select", env={"MYSQL_PWD": ""}), "unix_socket")
    finally:
        cur.execute("DROP USER IF EXISTS 'tb_ed'@'127.0.0.1', 'tb_sock'@'localhost'")
        conn.close()


def sandbox_params_of(sandbox):
    from tunebench.mysql.target import conn_params

    return conn_params(sandbox.target(), "socket")


@pytest.mark.parametrize("server_name", ["mysql-9", "mariadb-11.8"])
@pytest.mark.parametrize("hot", ["1", "0"], ids=["compiled", "python"])
def test_every_load_connection_of_both_loops_uses_tls_when_preferred(server_name, hot, sandbox, kit_sandboxes,
                                                                     monkeypatch):
    """Issue 43 item 2: with the default ssl-mode PREFERRED against a server that offers TLS, the compiled loop's
    load connections were plain (libmariadb keeps MYSQL_OPT_SSL_ENFORCE in the flag mysql_ssl_set raises, and the
    loop cleared it), while the session recorded TLSv1.3. The server's own word for each of the load's
    connections (performance_schema.status_by_thread, Ssl_cipher), read while the step runs."""
    import threading
    from dataclasses import replace

    from tunebench.core.schedule import OpenLoop
    from tunebench.load.builtin import BuiltinEngine
    from tunebench.load.engine import ClientGroup
    from tunebench.load.prepare import prepare
    from tunebench.load.workload import load_workload

    server = server_under_test(server_name, sandbox, kit_sandboxes)
    admin = open_connection(server.params(None))
    user = f"tb_tls_{hot}"
    try:
        cur = admin.cursor()
        cur.execute(f"DROP USER IF EXISTS '{user}'@'127.0.0.1'")
        cur.execute(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'pw-tls-1'")
        cur.execute(f"GRANT ALL ON *.* TO '{user}'@'127.0.0.1'")
        wl = load_workload("oltp_point_select")
        opts = wl.options({"table_size": 1000})
        prepare(server.params("tb_tls"), "tb_tls", opts, 1000)
        # (a sandbox's own target says DISABLED: a target added for a server over TCP has PREFERRED by default)
        tcp = replace(server.params("tb_tls", "tcp"), user=user, password="pw-tls-1", ssl_mode="PREFERRED")
        assert tcp.host == "127.0.0.1" and tcp.tls and not tcp.tls_required
        monkeypatch.setenv("TUNEBENCH_HOT_LOOP", hot)  # the worker processes inherit it
        # (an open loop at 150/s: each load connection's TLS is the claim, not the load's speed; issue 41)
        engine = BuiltinEngine(tcp, [ClientGroup("main", wl, opts, (3,), rates=(150.0,))], workers=1)
        seen: list[list[tuple]] = []

        def sink(_iv) -> None:
            if not seen:
                seen.append(query_all(admin, CIPHERS, (user,)))
        engine.open()
        try:
            engine.run_step({"main": 3}, 2, sink, threading.Event(), rates={"main": OpenLoop(150.0)})
        finally:
            engine.close()
        assert seen and len(seen[0]) == 3, seen
        assert all(cipher for _id, cipher in seen[0]), seen  # every one of them over TLS
    finally:
        admin.cursor().execute(f"DROP USER IF EXISTS '{user}'@'127.0.0.1'")
        admin.close()


def test_sysbench_refuses_the_tls_it_cannot_do_before_any_change(mysql, cli):
    """Issue 43 item 10: `run --engine sysbench` with ssl-mode REQUIRED and no certificate files created the schema
    and its tables, then refused (sysbench 1.0 uses TLS only with a CA, a certificate and a key). Refused first."""
    from tunebench.mysql.target import read_option_file_password

    sb = mysql.sandbox
    env = {"MYSQL_PWD": read_option_file_password(sb.client_cnf)}
    assert cli("target", "add", "req9", "--host", "127.0.0.1", "--port", str(sb.status().port), "--user",
               "tunebench", "--ssl-mode", "REQUIRED", "--replace").returncode == 0
    n = _sessions()
    _one_line_exit_2(cli("run", "--target", "req9", "--engine", "sysbench", "--workload", "oltp_point_select",
                         "--schema", "tb_sb_tls", "--step-seconds", "1", env=env), "needs --ssl-ca")
    conn = open_connection(mysql.params(None))
    try:
        assert query_all(conn, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'tb_sb_tls'"
                         )[0][0] == 0
    finally:
        conn.close()
    assert _sessions() == n
