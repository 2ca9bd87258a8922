from tunebench.core.target import ConnParams
from tunebench.load.engine import ClientGroup
from tunebench.load.sysbench import build_command, parse_interval_line, parse_summary
from tunebench.load.workload import load_workload, lua_workload

LINE = ("[ 3s ] thds: 4 tps: 1234.56 qps: 24691.23 (r/w/o: 17283.86/4938.25/2469.12) "
        "lat (ms,95%): 5.28 err/s: 0.00 reconn/s: 0.00")
SUMMARY = """SQL statistics:
    queries performed:
        read:                            140000
        write:                           40000
        other:                           20000
        total:                           200000
    transactions:                        10000  (999.40 per sec.)
    queries:                             200000 (19988.00 per sec.)
    ignored errors:                      3      (0.30 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          10.0050s
    total number of events:              10000

Latency (ms):
         min:                                    1.21
         avg:                                    4.00
         max:                                   33.87
         95th percentile:                        6.09
         sum:                                39998.12
"""


def test_interval_line():
    p = parse_interval_line(LINE)
    assert p is not None
    assert (p.sec, p.threads, p.tps, p.qps) == (3.0, 4, 1234.56, 24691.23)
    assert (p.reads, p.writes, p.other, p.percentile, p.lat_ms) == (17283.86, 4938.25, 2469.12, 95.0, 5.28)


def test_interval_line_without_colons():
    p = parse_interval_line(LINE.replace("err/s:", "err/s").replace("reconn/s:", "reconn/s"))
    assert p is not None and p.errors == 0.0


def test_non_interval_lines_are_ignored():
    assert parse_interval_line("Threads started!") is None
    assert parse_interval_line("") is None


def test_summary():
    s = parse_summary(SUMMARY)
    assert s["transactions"] == 10000 and s["read"] == 140000 and s["ignored_errors"] == 3
    assert s["lat_p95_ms"] == 6.09 and s["total_time_s"] == 10.005


def test_command_never_carries_the_password(tmp_path):
    wl = load_workload("oltp_read_write")
    g = ClientGroup("main", wl, wl.options({"tables": 4, "table_size": 5000}), (8,))
    argv = build_command(g, ConnParams("u", "s3cret", socket="/tmp/x.sock", database="tb"), 8, 30)
    assert not any("s3cret" in a for a in argv)
    assert "--tables=4" in argv and "--table-size=5000" in argv and "--threads=8" in argv
    assert "--mysql-socket=/tmp/x.sock" in argv and argv[1] == "oltp_read_write" and argv[-1] == "run"
    assert "--report-interval=1" in argv and "--rand-type=special" in argv
    # defaults stay off the command line (a custom Lua script may not declare them); shape always there
    assert not any(a.startswith("--point-selects") for a in argv)
    script = tmp_path / "my.lua"
    script.write_text('sysbench.cmdline.options = {scale = {"Scale", 2}, mode = {"Mode", "a"}}\nfunction event() end\n')
    mine = lua_workload(str(script))
    lua = ClientGroup("main", mine, mine.options({"scale": 3}), (1,))
    largv = build_command(lua, ConnParams("u", "pw", socket="/s"), 1, 5)
    assert largv[1] == str(script.resolve()) and "--scale=3" in largv  # the script's own options, its names
    assert not any(a.startswith(("--mode", "--tables", "--rand-type")) for a in largv)
    tcp = build_command(g, ConnParams("u", "pw", host="127.0.0.1", port=3307), 8, 30)
    assert "--mysql-host=127.0.0.1" in tcp and "--mysql-port=3307" in tcp


def test_the_report_hooks_line_carries_where_the_second_ended():
    """Tunebench's hook (REPORT_LUA) prints sysbench's elapsed time, its counters as rates, the queue and the wall
    clock when it took them (Interval.edge for a local sysbench); older lines without the clock still parse."""
    from tunebench.load.sysbench import REPORT_LUA, parse_report_line

    line = "@tb-report abc 3.001 4 1000.0000 20000.0000 14000.0000 4000.0000 2000.0000 5.280000 0.0000 0.0000 -1 " \
           "1795838419.604526"
    p = parse_report_line(line, "abc")
    assert p is not None and (p.sec, p.threads, p.tps, p.queue, p.wall) == (3.001, 4, 1000.0, None, 1795838419.604526)
    assert parse_report_line(line.rsplit(" ", 1)[0], "abc").wall is None
    assert parse_report_line(line.rsplit(" ", 1)[0] + " -1.000000", "abc").wall is None  # the clock unreadable
    assert parse_report_line(line, "other-token") is None
    assert "clock_gettime" in REPORT_LUA and "%.6f\\n" in REPORT_LUA
