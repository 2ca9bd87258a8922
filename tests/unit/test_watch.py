"""The server watch on a fake connection: outages, their reasons, and settling a step's end."""

import threading
import time

from tunebench.core.errors import TargetError
from tunebench.run.watch import ServerWatch


class FakeServer:
    def __init__(self):
        self.state = "up"  # up | refused | frozen | full
        self.thaw = threading.Event()

    def connect(self):
        if self.state == "refused":
            raise TargetError("cannot connect: no server listening")
        if self.state == "full":  # the load took every connection the user may have
            raise TargetError("User 'u' has exceeded the 'max_user_connections' resource", 1226)
        if self.state == "frozen":  # the handshake never comes: the connect timeout
            self.thaw.wait(0.5)
            raise TargetError("lost the connection at 'waiting for initial communication packet'")
        return FakeConn(self)


class FakeConn:
    def __init__(self, server):
        self.server = server

    def cursor(self):
        return self

    def execute(self, _sql):
        if self.server.state == "frozen":
            self.server.thaw.wait(0.5)  # a read timeout
            raise TargetError("lost the connection (read timeout)")
        if self.server.state in ("refused", "full"):
            raise TargetError("lost the connection")

    def fetchall(self):
        return [(1,)]

    def close(self):
        pass


def wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def test_outage_from_the_last_answer_to_the_next():
    server = FakeServer()
    downs, ups = [], []
    w = ServerWatch(server.connect, downs.append, ups.append, interval=0.05)
    w.start()
    try:
        w.settle(time.time())
        assert w.down is None and w.outages == []
        server.state = "refused"
        assert wait_for(lambda: w.down is not None)
        assert "no server listening" in w.down.why  # a fresh attempt's reason, not the broken connection's
        assert not w.wait_up(0.2)
        server.state = "up"
        assert w.wait_up(5)
        assert len(downs) == len(ups) == 1 and ups[0].end is not None
        seconds, why = w.down_during(ups[0].start - 1, ups[0].end + 1)
        assert seconds > 0 and why
        assert w.down_during(ups[0].end + 0.01, ups[0].end + 10) == (0.0, "")
    finally:
        w.stop()


def test_a_server_at_its_connection_limit_answers():
    """A run whose load took every connection its user may open: the watch, reconnecting, was refused (1226)
    and called the server lost, so the step was 'incomplete' and the run failed on a server that answered."""
    server = FakeServer()
    w = ServerWatch(server.connect, interval=0.05)
    w.start()
    try:
        w.settle(time.time())
        server.state = "full"
        time.sleep(0.5)
        w.settle(time.time())
        assert w.down is None and w.outages == []
        server.state = "refused"  # a refusal for another reason still is an outage
        assert wait_for(lambda: w.down is not None)
    finally:
        w.stop()


def test_a_step_that_ends_in_a_freeze_waits_for_the_watch_to_see_it():
    server = FakeServer()
    w = ServerWatch(server.connect, interval=0.2)
    w.start()
    try:
        w.settle(time.time())
        server.state = "frozen"
        end = time.time()
        w.settle(end, timeout=5)
        assert w.down is not None, "settle returned before the freeze was called"
        assert w.down_during(end - 0.5, end)[0] > 0
    finally:
        server.thaw.set()
        w.stop()


def test_connection_notes_are_said_once_per_window_with_a_count():
    from tunebench.load.builtin import NoteThrottle

    said = []
    throttle = NoteThrottle(said.append, window=0.2)
    for n in range(512):
        throttle(f"connection {n}: cannot connect (2002: no socket)")
    throttle("builtin worker 3 killed by SIGKILL")
    assert said == ["connection 0: cannot connect (2002: no socket)", "builtin worker 3 killed by SIGKILL"]
    time.sleep(0.25)
    throttle("connection 9: cannot connect (2002: no socket)")
    assert said[2].startswith("511 more time(s) on 511 connection(s)") and said[3].startswith("connection 9:")
