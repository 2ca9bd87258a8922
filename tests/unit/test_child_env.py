"""Issue 43 item 4: an external tool (sysbench and its Lua scripts, a server, perf, apt) gets the locale and the
paths of our environment and what it is given by name, never the rest ($TUNEBENCH_DB_PASSWORD, a MYSQL_PWD of the
user's, other tools' tokens)."""

from __future__ import annotations

from tunebench.hosts.runner import CHILD_ENV, LocalProcess


def test_a_child_gets_the_paths_and_what_it_is_given_never_our_secrets(monkeypatch):
    monkeypatch.setenv("TUNEBENCH_DB_PASSWORD", "store-secret")
    monkeypatch.setenv("MYSQL_PWD", "users-own")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "cloud")
    monkeypatch.setenv("LC_TIME", "C")
    proc = LocalProcess(["env"], env={"TB_SCRIPT": "x.lua", "MYSQL_PWD": "the-targets"})
    seen = dict(line.split("=", 1) for line in proc.lines() if "=" in line)
    assert proc.wait(30).returncode == 0
    assert seen["TB_SCRIPT"] == "x.lua" and seen["MYSQL_PWD"] == "the-targets" and seen["LC_TIME"] == "C"
    assert "PATH" in seen and "TUNEBENCH_DB_PASSWORD" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert set(seen) <= CHILD_ENV | {"TB_SCRIPT", "MYSQL_PWD", "LC_TIME", "LC_ALL", "LC_CTYPE", "PWD", "SHLVL", "_"}
