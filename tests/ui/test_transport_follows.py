"""Issue 46 item 2: a target reachable only over TCP kept the transport on "socket", and Run did nothing visible
but an Events line. The transport follows the target; a refused Run says why under the Run button."""

from tunebench.core.target import Target


def test_the_transport_follows_the_target_and_a_refused_run_says_why_in_the_panel(win):
    w = win.workload
    assert w.transport.currentText() == "socket"
    win.targets.add_target(Target(name="tcp-only", host="127.0.0.1", port=1, user="tunebench"), "x")
    assert win.targets.current_name() == "tcp-only"
    assert w.transport.currentText() == "tcp"
    assert not w.transport.model().item(0).isEnabled()  # socket: not offered for it
    w.transport.setCurrentText("socket")  # forced anyway (a keyboard): refused before anything starts
    win.run_workload()
    assert not win.controller.running()
    assert w.progress_label.text() == "⚠ target tcp-only has no UNIX socket; choose the TCP transport"
    win.targets.list.setCurrentRow(0)  # back on the sandbox (stopped here): its socket is offered again
    assert win.targets.current_name() != "tcp-only" and w.transport.model().item(0).isEnabled()
