"""Any sysbench Lua script as a family, without a server: its options read from `sysbench SCRIPT help` (the real
sysbench), its commands and event found in its source and the modules beside it, one clear line for a script
that does not load, has no event or is given an unknown option, and the password never in argv."""

from __future__ import annotations

import pytest

from tunebench.core.errors import ConfigError, WorkloadError
from tunebench.core.target import ConnParams
from tunebench.load.lua_family import inspect_script, lua_family, parse_help
from tunebench.load.workload import lua_workload
from tunebench.run.tasks import build_run_spec, data_request

HELP = """sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

tpcc.lua options:
  --enable_purge=STRING         Use purge transaction (yes, no) [no]
  --mysql_table_options=STRING  Extra table options, if MySQL is used. e.g. 'COLLATE latin1_bin' []
  --scale=N                     Scale factor (warehouses) [100]
  --ratio=N                     A ratio [0.5]
  --flag[=on|off]               A flag [off]
"""

SCRIPT = """
require("mine_common")
sysbench.cmdline.options = {
  scale = {"Scale factor", 2},
  ratio = {"A ratio", 0.5},
  flag = {"A flag", false},
  label = {"A label", "abc"},
}
function event()
  helper()
end
"""
COMMON = """
function helper() end
function cmd_check() end
sysbench.cmdline.commands = {
   check = {cmd_check, sysbench.cmdline.PARALLEL_COMMAND}
}
function cleanup() end
"""


def test_help_lines_become_typed_options():
    opts = parse_help(HELP)
    assert list(opts) == ["enable_purge", "mysql_table_options", "scale", "ratio", "flag"]
    assert (opts["scale"].kind, opts["scale"].default) == (int, 100)
    assert (opts["ratio"].kind, opts["ratio"].default) == (float, 0.5)
    assert (opts["flag"].kind, opts["flag"].default) == (bool, False)
    assert (opts["enable_purge"].kind, opts["enable_purge"].default) == (str, "no")
    assert opts["mysql_table_options"].default == ""
    assert opts["mysql_table_options"].coerce("COLLATE latin1_bin") == "COLLATE latin1_bin"
    with pytest.raises(ConfigError, match="must be one line of text"):
        opts["mysql_table_options"].coerce("a\nb")


@pytest.fixture
def script(tmp_path):
    (tmp_path / "mine_common.lua").write_text(COMMON)
    path = tmp_path / "mine.lua"
    path.write_text(SCRIPT)
    return path


def test_a_script_with_a_module_beside_it(script):
    s = inspect_script(str(script))
    assert s.name == "mine" and s.path == str(script.resolve())
    assert {k: (o.kind, o.default) for k, o in s.options.items()} == {
        "flag": (bool, False), "label": (str, "abc"), "ratio": (float, 0.5), "scale": (int, 2)}
    assert s.commands == ("cleanup", "check")  # found in the module beside it; no prepare
    wl = lua_workload(str(script))
    opts = wl.options({"scale": "7", "flag": "on", "label": "x y"})
    assert opts == {"flag": True, "label": "x y", "ratio": 0.5, "scale": 7}
    fam = lua_family(str(script))
    argv = fam.command_argv("cleanup", ConnParams("bench", "s3cret", socket="/run/m.sock"), "tb", opts, 2)
    assert argv == ["sysbench", str(script.resolve()), "--db-driver=mysql", "--mysql-user=bench", "--mysql-db=tb",
                    "--mysql-socket=/run/m.sock", "--flag=on", "--label=x y", "--scale=7", "--threads=2", "cleanup"]
    assert not any("s3cret" in a for a in argv)
    with pytest.raises(WorkloadError, match=r"mine.lua has no prepare command \(it has: cleanup, check\)"):
        fam.run_command("prepare", ConnParams("u", "p", socket="/x"), "tb", opts)


@pytest.mark.parametrize(("given", "message"), [
    ({"nope": 1}, "unknown option 'nope' of mine.lua; known: flag, label, ratio, scale"),
    ({"scale": "abc"}, "option scale: expected an integer, got 'abc'"),
    ({"flag": "maybe"}, "option flag: expected on/off, got 'maybe'"),
])
def test_options_are_checked_against_the_script(script, given, message):
    with pytest.raises(ConfigError, match=message):
        lua_workload(str(script)).options(given)


def test_scripts_that_cannot_run_are_one_line(tmp_path):
    bad = tmp_path / "bad.lua"
    bad.write_text("x(\n")
    with pytest.raises(WorkloadError, match=r"bad.lua does not load: FATAL: .*bad.lua:2: unexpected symbol"):
        inspect_script(str(bad))
    none = tmp_path / "none.lua"
    none.write_text("function prepare() end\n")
    with pytest.raises(WorkloadError, match=r"none\.lua has no event\(\) function: sysbench cannot run it"):
        inspect_script(str(none))
    with pytest.raises(WorkloadError, match=r"Lua script .*missing\.lua not found"):
        inspect_script(str(tmp_path / "missing.lua"))
    plain = tmp_path / "plain.lua"
    plain.write_text("function event() end\n")  # no options at all: sysbench has no help for it
    assert inspect_script(str(plain)).options == {}


def test_a_lua_run_is_the_sysbench_engines(script):
    spec = build_run_spec(None, {"scale": 3}, "2,4", lua_script=str(script))
    assert spec.engine == "sysbench" and spec.groups[0].family.name == "lua"
    assert spec.groups[0].lua_script == str(script.resolve())
    with pytest.raises(ConfigError, match="give --workload NAME or --lua PATH, not both"):
        build_run_spec("oltp_read_only", {}, "2", lua_script=str(script))
    with pytest.raises(ConfigError, match=r"group main: mine\.lua runs on the sysbench engine, not builtin"):
        build_run_spec(None, {}, "2", lua_script=str(script), engine="builtin")
    with pytest.raises(ConfigError, match="runs on this machine only"):
        build_run_spec(None, {}, "2", lua_script=str(script), client_hosts=["ssh://u@127.0.0.1:1"])
    assert build_run_spec("oltp_read_only", {}, "2").engine == "builtin"
    mixed = build_run_spec("oltp_read_only", {}, "2", groups=[f"lua={script}:2"], engine="sysbench")
    assert [g.family.name for g in mixed.groups] == ["oltp", "lua"]
    req = data_request(None, {"scale": 3}, cleanup=True, lua=str(script))
    assert req.cleanup and req.workload is not None and req.options["scale"] == 3
