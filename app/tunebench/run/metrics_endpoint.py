"""`--metrics-listen HOST:PORT`: an HTTP endpoint serving the run's live series at /metrics (core/openmetrics.py)
for Prometheus, from a thread of its own. Bound before anything runs: an address that cannot be bound is one line.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tunebench.core.errors import ConfigError
from tunebench.core.interval import Event, Interval
from tunebench.core.openmetrics import (
    OPENMETRICS,
    PROMETHEUS_TEXT,
    LiveMetrics,
    LiveReading,
    wants_openmetrics,
)
from tunebench.run.records import RunSession

LINGER_SECONDS = 3.0  # at the run's end, how long a scraper that has not had the last second is waited for


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT ([IPv6]:PORT) -> (host, port), or one line saying what is wrong."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ConfigError(f"--metrics-listen: expected HOST:PORT (127.0.0.1:9464), got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ConfigError(f"--metrics-listen: an IPv6 address goes in brackets ([::1]:9464), got {text!r}")
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ConfigError(f"--metrics-listen: the port is a number from 1 to 65535, got {port_text!r}")
    return host, int(port_text)


IDLE_SECONDS = 10.0  # a connection that sends no whole request within this is closed (one thread each)
MAX_CONNECTIONS = 64  # connections served at once; more are closed at once


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # SO_REUSEADDR: a port that the last run's connections left in TIME_WAIT is taken again at once; one that a
    # process listens on is still refused (Linux)
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], family: int):
        self.address_family = family
        super().__init__(address, _Handler, bind_and_activate=False)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):  # idle or slow clients hold every slot: refused, not queued
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def setup(self) -> None:
        super().setup()
        # the socket's: an idle connection ends instead of keeping its thread for ever (read at each connection)
        self.connection.settimeout(IDLE_SECONDS)

    def do_GET(self) -> None:
        token = self.server.token
        if token is not None:
            given = self.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Bearer realm="tunebench"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404, "only /metrics here")
            return
        commit: Callable[[], None] = lambda: None  # noqa: E731
        if self.path.startswith("/metrics"):
            om = wants_openmetrics(self.headers.get("Accept"))
            # who scrapes: its address and User-Agent (with a token, only those who hold it can scrape at all,
            # so no other local client can take a scraper's seconds)
            scraper = f"{self.client_address[0]} {self.headers.get('User-Agent', '')}"
            text, commit = self.server.metrics.render_pending(openmetrics=om, scraper=scraper)
            body = text.encode()
            ctype = OPENMETRICS if om else PROMETHEUS_TEXT
        else:
            body, ctype = b'<a href="/metrics">/metrics</a>: Tunebench live series\n', "text/html; charset=utf-8"
        try:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.send_body(body)
        except OSError:
            return  # the scraper is gone: its cursor stays, the next scrape has these seconds again
        commit()

    def send_body(self, body: bytes) -> None:
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a scrape a second is not news


def read_token(path: str) -> str:
    """The bearer token a scraper must send (Prometheus: `authorization: {credentials_file: FILE}`), from a file
    that only its owner can read; one line when it cannot be used."""
    p = Path(path).expanduser()
    try:
        st = p.stat()
        text = p.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--metrics-token-file {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") \
            from None
    if st.st_mode & 0o077:
        raise ConfigError(f"--metrics-token-file {path}: readable by others (chmod 600 it)")
    if len(text) < 16 or any(c.isspace() or not c.isprintable() for c in text):
        raise ConfigError(f"--metrics-token-file {path}: the token must be one word of at least 16 characters")
    return text


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class MetricsEndpoint:
    """The live series (`metrics`) served over HTTP; feed it with the run's callbacks."""

    def __init__(self, listen: str, token_file: str | None = None):
        host, port = parse_listen(listen)
        token = read_token(token_file) if token_file else None
        try:
            family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
        except ValueError:
            family = socket.AF_INET  # a name: resolved by bind
        self.metrics = LiveMetrics()
        server = _Server((host, port), family)
        try:
            server.server_bind()
            server.server_activate()
        except OSError as exc:
            server.server_close()
            why = exc.strerror or str(exc)
            raise ConfigError(f"--metrics-listen {listen}: cannot listen there ({why})") from None
        server.metrics = self.metrics  # type: ignore[attr-defined]
        server.token = token  # type: ignore[attr-defined]
        self._server = server
        self._closed = False
        bound = server.server_address
        self.url = f"http://{f'[{host}]' if family == socket.AF_INET6 else host}:{bound[1]}/metrics"
        # what to say beside the URL: an endpoint others can reach, without a token, is open to them
        self.warning = None
        if token is None and not _loopback(host):
            self.warning = (f"the metrics endpoint on {host}:{bound[1]} has no authentication: anyone who can reach "
                            "it reads the run's series (--metrics-token-file FILE asks for a bearer token)")
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="metrics-endpoint", daemon=True)
        self._thread.start()

    # the run's callbacks
    def session(self, s: RunSession) -> None:
        self.metrics.start_session({"session": str(s.session_id), "workload": s.workload, "target": s.target,
                                    "host": s.host})

    def interval(self, iv: Interval) -> None:
        self.metrics.interval(iv)

    def reading(self, r: LiveReading) -> None:
        self.metrics.reading(r)

    def event(self, ev: Event) -> None:
        self.metrics.event(ev)

    def run_ended(self) -> None:
        self.metrics.end_session()

    def hooks(self, on_interval: Callable[[Interval], None] | None = None,
              on_event: Callable[[Event], None] | None = None) -> dict[str, Any]:
        """An Experiment's keyword arguments that feed this endpoint (beside the command's own callbacks)."""
        def interval(iv: Interval) -> None:
            self.interval(iv)
            if on_interval is not None:
                on_interval(iv)

        def event(ev: Event) -> None:
            self.event(ev)
            if on_event is not None:
                on_event(ev)
        return {"on_interval": interval, "on_event": event, "on_reading": self.reading, "on_session": self.session}

    def close(self, linger: bool = True) -> None:
        """Stop serving; with `linger`, first give a scraper that has not had the last second a moment for it
        (LINGER_SECONDS at most), so the run's last second reaches Prometheus too."""
        if self._closed:
            return
        self._closed = True
        if linger:
            end = time.monotonic() + LINGER_SECONDS
            while self.metrics.behind() and time.monotonic() < end:
                time.sleep(0.05)
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(2)
