"""Tables of the session store. Samples are kept as compressed chunks per series (times to the
microsecond, values as float32: 7 significant digits), so a long session (24 h x 200 series) stays small
and loads quickly; passwords are never stored."""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.dialects.mysql import DOUBLE, LONGBLOB, LONGTEXT
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 11  # 2: knob_journal; 3: sample_chunks.codec; 4: targets.db_host; 5: its restart method;
# 6: sessions.owner_pid/owner_start (a running session whose process is gone is marked interrupted);
# 7: targets.ssl_mode/ssl_ca/ssl_cert/ssl_key (TLS, as the mysql client names it; file paths, never secrets);
# 8: targets.get_server_public_key; 9: sessions.id AUTOINCREMENT (a deleted session's ID is never given again);
# 10: sessions.host and knob_journal.host (the machine a session ran on, whose process owns a journal row);
# 11: sessions.machine and knob_journal.machine (that machine told apart by a made-once id, not its hostname)

# The same schema on SQLite, PostgreSQL and MySQL/MariaDB. MySQL's FLOAT is single precision (a Unix time to the
# 100 s), its TEXT and BLOB end at 64 KiB (a profile's summary, a chunk of an hour's samples): the wide kinds
# there. IDs are 64-bit on the servers (sessions are numbered up to 2**63 - 1 everywhere); SQLite's INTEGER
# PRIMARY KEY already is, and must stay spelt INTEGER to be the rowid.
Time = Float().with_variant(DOUBLE(asdecimal=False), "mysql", "mariadb")
Json = Text().with_variant(LONGTEXT(), "mysql", "mariadb")
Blob = LargeBinary().with_variant(LONGBLOB(), "mysql", "mariadb")
Id = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    pass


class Meta(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Json)


class TargetRow(Base):
    __tablename__ = "targets"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    socket: Mapped[str | None] = mapped_column(Json)
    host: Mapped[str | None] = mapped_column(String(255))
    port: Mapped[int | None] = mapped_column(Integer)
    user: Mapped[str] = mapped_column(String(128))
    schema: Mapped[str | None] = mapped_column(String(64))
    password_file: Mapped[str | None] = mapped_column(Json)
    db_host: Mapped[str | None] = mapped_column(Json)
    ssh_key: Mapped[str | None] = mapped_column(Json)
    option_file: Mapped[str | None] = mapped_column(Json)
    restart_command: Mapped[str | None] = mapped_column(Json)
    ssl_mode: Mapped[str | None] = mapped_column(String(16))
    ssl_ca: Mapped[str | None] = mapped_column(Json)
    ssl_cert: Mapped[str | None] = mapped_column(Json)
    ssl_key: Mapped[str | None] = mapped_column(Json)
    get_server_public_key: Mapped[int | None] = mapped_column(Integer)


class SessionRow(Base):
    __tablename__ = "sessions"
    # AUTOINCREMENT: a deleted session's ID is never given to another (a run still writing under it, a report or
    # a journal entry naming it would otherwise land in someone else's session)
    __table_args__ = {"sqlite_autoincrement": True}
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    started_at: Mapped[float] = mapped_column(Time)
    ended_at: Mapped[float | None] = mapped_column(Time)
    status: Mapped[str] = mapped_column(String(32))  # a core.kinds.SessionStatus as written; any text as read
    target: Mapped[str] = mapped_column(Json)
    transport: Mapped[str] = mapped_column(String(16))
    flavor: Mapped[str | None] = mapped_column(String(32))
    version: Mapped[str | None] = mapped_column(String(64))
    engine: Mapped[str] = mapped_column(String(32))
    workload: Mapped[str] = mapped_column(Json)
    config: Mapped[str] = mapped_column(Json)  # JSON: groups, options, steps, driver
    summary: Mapped[str | None] = mapped_column(Json)  # JSON
    name: Mapped[str | None] = mapped_column(Json)
    tags: Mapped[str | None] = mapped_column(Json)
    notes: Mapped[str | None] = mapped_column(Json)
    owner_pid: Mapped[int | None] = mapped_column(Integer)  # the process writing it while it runs
    owner_start: Mapped[str | None] = mapped_column(String(32))
    host: Mapped[str | None] = mapped_column(String(255))  # the machine it ran on (None: before schema 10)
    machine: Mapped[str | None] = mapped_column(String(64))  # its machine id (None: before schema 11)


class StepRow(Base):
    __tablename__ = "steps"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    session_id: Mapped[int] = mapped_column(Id, ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[float] = mapped_column(Time)
    measure_from: Mapped[float] = mapped_column(Time)  # end of warm-up
    ended_at: Mapped[float | None] = mapped_column(Time)
    config: Mapped[str] = mapped_column(Json)  # JSON: threads per group, knobs
    summary: Mapped[str | None] = mapped_column(Json)  # JSON: per-group StepSummary


class SeriesRow(Base):
    __tablename__ = "series"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    session_id: Mapped[int] = mapped_column(Id, ForeignKey("sessions.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(16))  # rate | gauge
    __table_args__ = (Index("ix_series_session_name", "session_id", "name", unique=True),)


class ChunkRow(Base):
    """A run of samples of one series. codec NULL: parallel little-endian float64 arrays of times and
    values (schema 2); 'z1': zlib of byte-shuffled microsecond time deltas and float32 values."""

    __tablename__ = "sample_chunks"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    series_id: Mapped[int] = mapped_column(Id, ForeignKey("series.id", ondelete="CASCADE"))
    t_first: Mapped[float] = mapped_column(Time)
    t_last: Mapped[float] = mapped_column(Time)
    n: Mapped[int] = mapped_column(Integer)
    ts: Mapped[bytes] = mapped_column(Blob)
    vs: Mapped[bytes] = mapped_column(Blob)
    codec: Mapped[str | None] = mapped_column(String(8))
    __table_args__ = (Index("ix_chunks_series_t", "series_id", "t_first"),)


class EventRow(Base):
    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    session_id: Mapped[int] = mapped_column(Id, ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    t: Mapped[float] = mapped_column(Time)
    kind: Mapped[str] = mapped_column(String(32))  # a core.kinds.EventKind as written; any text as read
    label: Mapped[str] = mapped_column(Json)
    data: Mapped[str | None] = mapped_column(Json)


class VariableRow(Base):
    __tablename__ = "variables"
    session_id: Mapped[int] = mapped_column(Id, ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[str | None] = mapped_column(Json)


class KnobJournalRow(Base):
    """The original value of every knob a run changes, written before the change; restored at the end,
    on abort, and after a crash (`tunebench restore`, or automatically on the next start)."""

    __tablename__ = "knob_journal"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    session_id: Mapped[int | None] = mapped_column(Id)
    target: Mapped[str] = mapped_column(Json)  # JSON of the Target (no password)
    target_name: Mapped[str] = mapped_column(Json)
    name: Mapped[str] = mapped_column(String(128))  # variable, or "@sandbox" for the sandbox's my.cnf overlay
    kind: Mapped[str] = mapped_column(String(16))  # core.kinds.JournalKind: dynamic | static | probe
    original: Mapped[str] = mapped_column(Json)
    state: Mapped[str] = mapped_column(String(16))  # core.kinds.JournalState: pending | restored | failed | discarded
    owner_pid: Mapped[int] = mapped_column(Integer)
    owner_start: Mapped[str] = mapped_column(String(32))  # /proc start time, tells a reused pid apart
    host: Mapped[str | None] = mapped_column(String(255))  # the machine of that process (None: before schema 10)
    machine: Mapped[str | None] = mapped_column(String(64))  # its machine id (None: before schema 11)
    created_at: Mapped[float] = mapped_column(Time)
    restored_at: Mapped[float | None] = mapped_column(Time)
    message: Mapped[str | None] = mapped_column(Json)
