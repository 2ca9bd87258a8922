"""What the families with their own tables share: options resolved from their catalog, data sets registered in
the schema's tunebench_tables with their shape, "is it prepared?" answered from that registry, cleanup of
what was registered, and the builtin engine only (TPC-C-like, iiBench, dbSTRESS-like)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from tunebench.core.errors import ConfigError, TargetError
from tunebench.core.target import ConnParams
from tunebench.load.family import CheckResult
from tunebench.load.options import OptionSpec, resolve_options
from tunebench.load.prepare import (
    PROGRESS_EVERY,
    REGISTRY,
    RowsProgress,
    _ensure_registry,
    _existing,
    _server,
    cleanup,
    mark_loading,
    settle_loading,
)
from tunebench.mysql.connect import open_connection


class RegisteredFamily:
    """A base for families whose data is tables Tunebench creates and registers. A subclass gives `name`,
    `OPTIONS`, `data_options`, `missing_phrase` ("the TPC-C tables of {shape} are"), `tables(options)` (every
    table the data set has) and `registered_shape(options)` (what the registry records for each)."""

    name: ClassVar[str]
    OPTIONS: ClassVar[Mapping[str, OptionSpec]]
    data_options: tuple[str, ...] = ()
    engines: tuple[str, ...] = ("builtin",)
    headline: tuple[str, float, str] | None = None

    def headline_of(self, options: Mapping[str, Any]) -> tuple[str, float, str] | None:
        return self.headline
    missing_phrase = "{shape} are"

    def option_specs(self) -> Mapping[str, OptionSpec]:
        return self.OPTIONS

    def resolve(self, defaults: Mapping[str, Any], fixed: Mapping[str, Any], given: Mapping[str, Any],
                where: str = "") -> dict[str, Any]:
        return resolve_options(defaults, fixed, given, where, self.OPTIONS)

    def plan(self, workload: Any, options: Mapping[str, Any]) -> Any:
        return None

    def shape(self, options: Mapping[str, Any]) -> str:
        raise NotImplementedError

    def tables(self, options: Mapping[str, Any]) -> list[str]:
        raise NotImplementedError

    def registered_shape(self, options: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def data_key(self, options: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(options[k] for k in self.data_options)

    def missing_data(self, params: ConnParams, schema: str, workload: Any,
                     options: Mapping[str, Any]) -> str | None:
        conn = open_connection(_server(params))
        try:
            tables, registered = _existing(conn, schema)
        finally:
            conn.close()
        want = self.registered_shape(options)
        for name in self.tables(options):
            if name not in tables or registered.get(name) != want:
                return (f"{self.missing_phrase.format(shape=self.shape(options))} not prepared in {schema} "
                        f"({name} {'is of another shape' if name in tables else 'is missing'})")
        return None

    def data_bytes(self, workload: Any, options: Mapping[str, Any]) -> int | None:
        raise NotImplementedError

    def cleanup(self, params: ConnParams, schema: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return cleanup(params, schema)

    def check(self, params: ConnParams, schema: str, options: Mapping[str, Any]) -> list[CheckResult]:
        return []

    def sysbench_args(self, workload: Any, options: Mapping[str, Any]) -> tuple[str, list[str]]:
        raise ConfigError(f"the {self.name} family runs on the builtin engine")

    actions: Mapping[str, str] = {}

    def run_action(self, name: str, params: ConnParams, schema: str, options: Mapping[str, Any],
                   cancel: threading.Event | None = None) -> dict[str, Any]:
        raise ConfigError(f"the {self.name} family has no action {name!r}")


def register_tables(params: ConnParams, schema: str, names: Iterable[str], shape: Mapping[str, Any]) -> None:
    """Record tables as whole and of `shape` (cleanup drops them; a next prepare keeps them)."""
    conn = open_connection(_server(params))
    try:
        cur = conn.cursor()
        for name in names:
            cur.execute(f"REPLACE INTO `{schema}`.{REGISTRY} VALUES (%s, %s, %s)",
                        (name, json.dumps(shape), time.time()))
        cur.close()
    finally:
        conn.close()


def drop_tables(params: ConnParams, schema: str, names: Iterable[str]) -> list[str]:
    """Drop tables (and forget them): a stopped load's unfinished ones, or a data set to be loaded again."""
    dropped = list(names)
    if not dropped:
        return []
    conn = open_connection(_server(params))
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION foreign_key_checks = 0")
        for name in dropped:
            cur.execute(f"DROP TABLE IF EXISTS `{schema}`.`{name}`")
            cur.execute(f"DELETE FROM `{schema}`.{REGISTRY} WHERE table_name=%s", (name,))
        cur.close()
    finally:
        conn.close()
    return dropped


def claim_sets(params: ConnParams, schema: str, sets: Mapping[int, Sequence[str]], want: Mapping[str, Any],
               create: Callable[[Any, int], None], say: Callable[[str], None]) -> list[int]:
    """The data sets a prepare has to load: one whose tables are all there, registered and of `want` is kept;
    any other is dropped and `create(cursor, n)` makes its tables again (in `schema`). TargetError for a table
    of that name Tunebench did not create: it is never touched."""
    conn = open_connection(_server(params))
    todo = []
    try:
        _ensure_registry(conn, schema)
        tables, registered = _existing(conn, schema)
        for name in settle_loading(conn, schema, registered):
            tables.discard(name)
            say(f"dropped {name}: a prepare that died left it half-loaded")
        cur = conn.cursor()
        for n, names in sets.items():
            foreign = [t for t in names if t in tables and t not in registered]
            if foreign:
                raise TargetError(f"{schema}.{foreign[0]} exists and was not created by Tunebench; refusing to "
                                  "touch it (use another --schema)")
            if all(t in tables and registered.get(t) == want for t in names):
                continue
            cur.execute("SET SESSION foreign_key_checks = 0")
            for t in names:
                cur.execute(f"DROP TABLE IF EXISTS `{schema}`.`{t}`")
                cur.execute(f"DELETE FROM `{schema}`.{REGISTRY} WHERE table_name=%s", (t,))
            mark_loading(cur, schema, names)  # before the tables: a kill -9 from here leaves them ours
            cur.execute(f"USE `{schema}`")
            create(cur, n)
            say(f"Creating {', '.join(names)}")
            todo.append(n)
        cur.close()
    finally:
        conn.close()
    return todo


class ServerLoad:
    """Batches of statements that make rows on the server, each batch in order on one of `threads` connections;
    the rows they report counted for the progress (every PROGRESS_EVERY s), stopped between two statements by
    `cancel`."""

    def __init__(self, params: ConnParams, schema: str, total: int, threads: int,
                 on_rows: Callable[[RowsProgress], None] | None, cancel: threading.Event | None):
        self.params, self.schema, self.total, self.threads = _server(params), schema, total, max(1, threads)
        self.on_rows, self.cancel = on_rows, cancel
        self.started = time.monotonic()
        self.rows, self.reported = 0, 0.0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def cancelled(self) -> bool:
        if self.cancel is not None and self.cancel.is_set():
            self.stop.set()
        return self.stop.is_set()

    def _batch(self, statements: Sequence[str]) -> None:
        if self.cancelled():
            return
        conn = open_connection(self.params)
        try:
            cur = conn.cursor()
            cur.execute(f"USE `{self.schema}`")
            for sql in statements:
                if self.cancelled():
                    return
                cur.execute(sql)
                self._added(cur.rowcount)
            cur.close()
        finally:
            conn.close()

    def _added(self, rows: int) -> None:
        with self.lock:
            self.rows += max(0, rows)
            now = time.monotonic()
            if self.on_rows is None or now - self.reported < PROGRESS_EVERY:
                return
            self.reported = now
            p = RowsProgress(self.rows, self.total, now - self.started)
        self.on_rows(p)

    def run(self, batches: Sequence[Sequence[str]]) -> bool:
        """Run every batch; False when the load was stopped (cancel) before all were done. A failed batch (or
        Ctrl-C) stops the others at their next statement and is raised."""
        pool = ThreadPoolExecutor(max_workers=self.threads)
        try:
            for f in [pool.submit(self._batch, b) for b in batches]:
                f.result()
        except BaseException:
            self.stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return not self.stop.is_set()

    def load_sets(self, todo: Sequence[int], batches: Callable[[int], Sequence[Sequence[str]]],
                  finish: Callable[[int], None], tables: Callable[[int], Sequence[str]]) -> tuple[list[int], list[str]]:
        """Load the sets one after the other, each `finish`ed (indexes, registration) once whole. Returns the
        sets made whole and the tables dropped: those of the sets a cancel left unfinished, and (then raised)
        a failure's. Nothing half-made stays behind, registered or not."""
        whole: list[int] = []
        try:
            for n in todo:
                if not self.run(batches(n)):
                    break
                finish(n)
                whole.append(n)
        except BaseException:
            with contextlib.suppress(Exception):  # (a server gone: the first error is the one to tell)
                drop_tables(self.params, self.schema, [t for n in todo if n not in whole for t in tables(n)])
            raise
        return whole, drop_tables(self.params, self.schema, [t for n in todo if n not in whole for t in tables(n)])

    def finish(self) -> float:
        """The seconds it took; the last progress report (all rows counted)."""
        seconds = time.monotonic() - self.started
        if self.on_rows is not None:
            self.on_rows(RowsProgress(self.rows, self.total, seconds))
        return seconds
