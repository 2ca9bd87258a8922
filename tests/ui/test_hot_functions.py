"""The Hot functions dock: the profile probe's functions over the visible range, the largest first, and a
recorded step's flame graph as SVG."""

from tunebench.core.interval import Event


def test_hot_functions_of_the_visible_range(win, qtbot, tmp_path):
    tl = win.timeline
    for s in range(40):
        hot = 30.0 if s < 20 else 5.0  # a function that cools down half-way
        tl.add(1000.0 + s, {"client.main.tps": 100.0, "profile.mysqld.row_search_mvcc": hot,
                            "profile.mysqld._k__copy_user": 10.0, "profile.mysqld.other": 55.0})
    tl.add_event(Event(1000.0, "step_start", "step 1: main=4"))
    win.dashboard.redraw()
    win.dashboard.set_x_range(0.0, 19.0)
    win.hot.refresh(force=True)
    rows = [(win.hot.table.item(r, 0).text(), win.hot.table.item(r, 1).text()) for r in range(2)]
    assert rows[0][0] == "row_search_mvcc" and rows[0][1].startswith(" 30.0 %")
    assert rows[1][0] == "_k__copy_user"  # 'other' is not a function
    win.dashboard.set_x_range(21.0, 40.0)
    win.hot.refresh(force=True)
    assert win.hot.table.item(0, 0).text() == "_k__copy_user"


def test_the_servers_functions_come_before_the_clients(win, qtbot):
    """Each role's percentages are of its own samples: the server's rows first, the client's marked after them."""
    tl = win.timeline
    for s in range(10):
        tl.add(1000.0 + s, {"client.main.tps": 100.0, "profile.mysqld.row_search_mvcc": 20.0,
                            "profile.client.k:sock_poll": 50.0, "profile.client.other": 50.0})
    win.dashboard.redraw()
    win.dashboard.set_x_range(0.0, 10.0)
    win.hot.refresh(force=True)
    assert [win.hot.table.item(r, 0).text() for r in range(win.hot.table.rowCount())] == \
        ["row_search_mvcc", "[client] k:sock_poll"]


def test_a_steps_flame_graph_is_saved(win, qtbot, tmp_path):
    w = win.store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_read_write",
                              config={}, started_at=1000.0)
    step = w.start_step(0, 1000.0, 1000.0, {"threads": {"main": 4}, "config": 0})
    w.end_step(step, 1010.0, {"main": {"threads": 4}, "_profile": {"start_thread;do_command;row_search_mvcc": 7,
                                                                   "start_thread;[k] schedule": 3}})
    w.finish("completed", {"steps": []}, ended_at=1010.0)
    out = tmp_path / "flame.svg"
    win.hot.save_flame(w.id, 0, str(out))
    text = out.read_text()
    assert text.startswith("<svg") and "row_search_mvcc (7 samples, 70.0 %)" in text
    assert win.hot.head.text() == f"wrote {out}"


def test_the_workload_form_asks_for_the_cpu_profile(qtbot):
    from tunebench.core.probe import DEFAULT_PROBES
    from tunebench.ui.workload_panel import WorkloadPanel

    panel = WorkloadPanel()
    qtbot.addWidget(panel)
    assert panel.run_spec().probes is None  # every default probe, no perf
    panel.profile.setChecked(True)
    assert panel.run_spec().probes == (*DEFAULT_PROBES, "profile")
