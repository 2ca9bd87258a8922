"""The profile probe's parsing (hosts/profile.py) on perf script output as perf 6.1 prints it, and the flame
graph; the probe itself on the sandbox is in tests/integration/test_probes.py."""

from collections import Counter

from tunebench.core.flamegraph import svg
from tunebench.hosts.profile import fold, self_top

SCRIPT = """mariadbd  4234   10101010\x20
\t           fc26f __poll+0x4f (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          bef110 vio_socket_io_wait+0x20 (/usr/sbin/mariadbd)
\t          bb6229 [unknown] (/usr/sbin/mariadbd)
\t           891f5 start_thread+0x1 (/usr/lib/x86_64-linux-gnu/libc.so.6)

mariadbd  4240   10101010\x20
\tffffffff82203249 _raw_spin_unlock_irqrestore+0x19 ([kernel.kallsyms])
\tffffffff821ef691 do_syscall_64+0x5 ([kernel.kallsyms])
\t          10aba4 __send+0x14 (/usr/lib/x86_64-linux-gnu/libc.so.6)

mariadbd  4241   10101010\x20
\t           fc26f __poll+0x50 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          bef110 vio_socket_io_wait+0x20 (/usr/sbin/mariadbd)
\t          bb6229 [unknown] (/usr/sbin/mariadbd)
\t           891f5 start_thread+0x1 (/usr/lib/x86_64-linux-gnu/libc.so.6)
"""


def test_stacks_fold_root_first_and_functions_lose_their_offsets():
    folded = fold(SCRIPT)
    assert folded == Counter({"start_thread;mariadbd [unknown];vio_socket_io_wait;__poll": 2,
                              "__send;[k] do_syscall_64;[k] _raw_spin_unlock_irqrestore": 1})
    top = self_top(folded, 1)
    assert top[0][0] == "__poll" and abs(top[0][1] - 200 / 3) < 1e-9
    assert top[1][0] == "other" and abs(top[1][1] - 100 / 3) < 1e-9


def test_flame_graph_svg():
    out = svg(fold(SCRIPT), "session 1 step 2")
    assert out.startswith("<svg") and out.rstrip().endswith("</svg>")
    assert "vio_socket_io_wait (2 samples, 66.7 %)" in out and "session 1 step 2" in out


def test_series_names_of_functions():
    from tunebench.hosts.profile import series_part

    assert series_part("[k] finish_task_switch.isra.0") == "k:finish_task_switch_isra_0"
    assert series_part("mariadbd [unknown]") == "mariadbd:unknown"
    assert series_part("Prepared_statement::execute") == "Prepared_statement::execute"
