"""The suite's guard against servers that outlive their test (a sandbox once outlived `make test`)."""

from __future__ import annotations

import subprocess

from conftest import wait_until
from server_leaks import kill_all, servers_under


def test_a_server_under_a_session_directory_is_found_and_killed(tmp_path):
    # a process that looks like a server of this directory: a program named mariadbd (the name the kernel gives the
    # process, which the guard reads first), run as .../mariadbd
    (tmp_path / "mariadbd").symlink_to("/bin/sleep")
    proc = subprocess.Popen([str(tmp_path / "mariadbd"), "60"])
    try:
        found = wait_until(lambda: servers_under([str(tmp_path)]), 5, "the fake server to show in /proc")
        assert list(found) == [proc.pid]
        assert servers_under([str(tmp_path / "elsewhere")]) == {}
        kill_all(found)
        proc.wait(5)
        assert servers_under([str(tmp_path)]) == {}
    finally:
        proc.kill()
        proc.wait()


def test_other_processes_are_not_servers(tmp_path):
    proc = subprocess.Popen([str(tmp_path / "sleep"), "60"], executable="/bin/sleep")
    try:
        assert servers_under([str(tmp_path)]) == {}
    finally:
        proc.kill()
        proc.wait()


def test_importing_the_conftest_again_keeps_the_session_home():
    """Test modules import helpers from conftest.py; a second load of it used to make a new TUNEBENCH_HOME
    mid-session, and a sandbox started there by a later subprocess outlived the suite."""
    import importlib.util
    import os
    from pathlib import Path

    home = os.environ["TUNEBENCH_HOME"]
    spec = importlib.util.spec_from_file_location("conftest_again", Path(__file__).parents[1] / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert os.environ["TUNEBENCH_HOME"] == home and str(module._HOME) == home
