"""The sessions browser: a filterable table of every recorded session, its details, and what to do
with it (replay, compare, diff settings, rename/tag/notes, delete, export to a file, import one)."""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.busy import busy_text
from tunebench.core.display import local_time
from tunebench.core.error_codes import codes_text
from tunebench.core.errors import TunebenchError
from tunebench.core.results import tls_text
from tunebench.core.sessions import browse_row, diff_settings, matches, session_title
from tunebench.core.step_context import StepKnobs, step_knobs, step_seconds
from tunebench.core.sweep import human
from tunebench.store.repo import Store
from tunebench.ui.dialog_helpers import NotesDialog, open_path, save_path

ALL_HOSTS = "all machines"
COLUMNS = [("id", "ID"), ("started_at", "date"), ("name", "name"), ("host", "machine"), ("target", "target"),
           ("server", "server"),
           ("workload", "workload"), ("knobs", "knobs"), ("best_tps", "best TPS"), ("duration", "duration"),
           ("status", "status"), ("tags", "tags"), ("notes", "notes")]


def _cell(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key == "started_at":
        return local_time(value, "%Y-%m-%d %H:%M")
    if key == "best_tps":
        return f"{value:,.0f}"
    if key == "duration":
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return "?"
        s = int(value)
        return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    return str(value)


def _codes_cell(st: Mapping[str, Any]) -> str:
    """A step's errors by server error code, under its count in the errors cell (issue 44 item 4)."""
    text = codes_text(st.get("error_codes"), names=False)
    return f"<br><small>{html.escape(text)}</small>" if text else ""


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def step_configuration(session: dict[str, Any], step: int, ran: StepKnobs | None = None) -> str:
    """The configuration step `step` (1-based) ran in, numbered as the Events number it, with its knobs (the
    sweep's label when the summary has it: transport, engine and CPUs too), and what it really ran with when a
    knob was set live before it or flipped during it (`ran`, core.step_context)."""
    config: dict[str, Any] = next((st["config"] for st in session.get("steps", []) if st["idx"] + 1 == step), {})
    idx = int(config.get("config", 0))
    labels = {c["idx"]: c["label"] for c in (session.get("summary") or {}).get("configs", [])}
    knobs = labels.get(idx) or ", ".join(f"{k}={human(v)}" for k, v in (config.get("knobs") or {}).items())
    extra = ran.text(configured=False) if ran is not None else ""
    if not (session.get("config") or {}).get("sweep"):
        # one configuration: no number
        return ", ".join(p for p in (knobs, extra) if p) if knobs or extra else "as configured"
    return f"{idx + 1}: {knobs or 'as configured'}" + (f"; {extra}" if extra else "")


class NumericItem(QTableWidgetItem):
    """Sorts by the number behind the text."""

    def __init__(self, text: str, number: float | None):
        super().__init__(text)
        self.number = -1.0 if number is None else float(number)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        if isinstance(other, NumericItem):
            return self.number < other.number
        return super().__lt__(other)


class SessionsPanel(QWidget):
    open_requested = Signal(int)  # replay this session
    compare_requested = Signal(list)  # these session IDs
    message = Signal(str)

    def __init__(self, store: Store, parent: QWidget | None = None):
        super().__init__(parent)
        self.store = store
        self.rows: list[dict[str, Any]] = []
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("filter: words in any column, tag:NAME")
        self.filter.textChanged.connect(self._apply_filter)
        self.host = QComboBox()  # the machine the sessions ran on (a shared server store holds several)
        self.host.setToolTip("only the sessions recorded on this machine ('-': recorded before machines were named)")
        self.host.addItem(ALL_HOSTS)
        self.host.currentTextChanged.connect(self._apply_filter)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels([title for _, title in COLUMNS])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSortingEnabled(True)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._show_details)
        self.table.doubleClicked.connect(lambda _i: self._open())
        self.details = QTextBrowser()
        self.variables = QTableWidget(0, 2)
        self.variables.setHorizontalHeaderLabels(["variable", "value"])
        self.variables.horizontalHeader().setStretchLastSection(True)
        self.variables.verticalHeader().hide()
        self.diff = QTableWidget(0, 4)
        self.diff.setHorizontalHeaderLabels(["section", "setting", "A", "B"])
        self.diff.horizontalHeader().setStretchLastSection(True)
        self.diff.verticalHeader().hide()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.details, "Steps and events")
        self.tabs.addTab(self.variables, "Server variables")
        self.tabs.addTab(self.diff, "Diff settings")
        buttons = QGridLayout()  # two rows: the panel stays narrow enough for a laptop with the docks open
        self.buttons: dict[str, QPushButton] = {}
        for key, text, slot in (("open", "Replay", self._open), ("compare", "Compare", self._compare),
                                ("diff", "Diff settings", self._diff), ("rename", "Rename", self._rename),
                                ("tags", "Tags", self._tags), ("notes", "Notes", self._notes),
                                ("delete", "Delete", self._delete), ("export", "Export file…", self._export),
                                ("import", "Import file…", self.import_files), ("refresh", "Refresh", self.refresh)):
            b = QPushButton(text)
            b.clicked.connect(slot)
            buttons.addWidget(b, len(self.buttons) // 5, len(self.buttons) % 5)
            self.buttons[key] = b
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        filters = QHBoxLayout()
        filters.addWidget(self.filter, 1)
        filters.addWidget(self.host)
        tl.addLayout(filters)
        tl.addWidget(self.table, 1)
        tl.addLayout(buttons)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.tabs)
        split.setSizes([300, 200])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(split)
        self.refresh()

    # -- table --
    def refresh(self) -> None:
        try:
            self.rows = [browse_row(s) for s in self.store.browse()]
        except TunebenchError as exc:
            self.rows = []
            self.message.emit(str(exc))
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(self.rows))
        for r, row in enumerate(self.rows):
            for c, (key, _title) in enumerate(COLUMNS):
                value = row[key]
                text = _cell(key, value)
                item = (NumericItem(text, value) if key in ("id", "started_at", "best_tps", "duration")
                        else QTableWidgetItem(text))
                item.setData(Qt.ItemDataRole.UserRole, row["id"])
                if key == "notes":
                    item.setToolTip(text)
                self.table.setItem(r, c, item)
        self.table.setSortingEnabled(True)
        self.table.sortItems(0, Qt.SortOrder.DescendingOrder)
        self._update_hosts()
        self.table.resizeColumnsToContents()
        for c in range(self.table.columnCount()):  # a long target or notes cell never hides the others
            self.table.setColumnWidth(c, min(self.table.columnWidth(c), 240))
        self._apply_filter()

    def _update_hosts(self) -> None:
        """The machine filter's choices: every machine of the store's sessions (the choice kept when it still is)."""
        chosen = self.host.currentText()
        hosts = sorted({row["host"] for row in self.rows})
        self.host.blockSignals(True)
        self.host.clear()
        self.host.addItems([ALL_HOSTS, *hosts])
        self.host.setCurrentText(chosen if chosen in hosts else ALL_HOSTS)
        self.host.blockSignals(False)

    def _apply_filter(self) -> None:
        query = self.filter.text()
        host = self.host.currentText()
        by_id = {row["id"]: row for row in self.rows}
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            sid = item.data(Qt.ItemDataRole.UserRole) if item else None
            shown = sid in by_id and matches(by_id[sid], query) and host in (ALL_HOSTS, by_id[sid]["host"])
            self.table.setRowHidden(r, not shown)

    def selected_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        out = []
        for r in rows:
            item = self.table.item(r, 0)
            if item is not None:
                out.append(int(item.data(Qt.ItemDataRole.UserRole)))
        return out

    def select(self, ids: list[int]) -> None:
        self.table.clearSelection()
        mode = self.table.selectionMode()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            if item is not None and int(item.data(Qt.ItemDataRole.UserRole)) in ids:
                self.table.selectRow(r)
        self.table.setSelectionMode(mode)

    def _one(self) -> int | None:
        ids = self.selected_ids()
        if len(ids) != 1:
            self.message.emit("select one session")
            return None
        return ids[0]

    # -- details --
    def _show_details(self) -> None:
        ids = self.selected_ids()
        if len(ids) != 1:
            return
        try:
            s = self.store.get_session(ids[0])
        except TunebenchError as exc:
            self.message.emit(str(exc))
            return
        e = {k: html.escape(str(s.get(k) or "")) for k in ("name", "workload", "target", "flavor", "version",
                                                         "engine", "status", "tags", "notes")}  # file text, not HTML
        lines = [f"<b>#{s['id']} {e['name']}</b> {e['workload']} on {e['target']} "
                 f"({e['flavor']} {e['version']}), engine {e['engine']}, {e['status']}<br>"]
        if tls := tls_text((s.get("config") or {}).get("tls")):
            lines.append(f"connections: {html.escape(tls)}<br>")
        if s.get("tags"):
            lines.append(f"tags: {e['tags']}<br>")
        if s.get("notes"):
            lines.append(f"notes: {e['notes']}<br>")
        steps = (s.get("summary") or {}).get("steps", [])
        label = next((st["headline_label"] for st in steps if st.get("headline_label")), "")
        ran = step_knobs(s)
        stored = {st["idx"] + 1: st for st in s.get("steps") or ()}
        lines.append("<table border=1 cellspacing=0 cellpadding=3><tr><th>step</th><th>ran with</th>"
                     "<th>group</th><th>threads</th><th>TPS</th><th>QPS</th>" + (f"<th>{label}</th>" if label else "")
                     + "<th>p95 ms</th><th>p99 ms</th><th>errors</th><th>seconds used</th></tr>")
        for st in steps:
            head = "" if not label else f"<td>{st['headline']:,.0f}</td>" if st.get("headline") is not None \
                else "<td>-</td>"
            used = step_seconds(stored.get(st["step"]) or {}, st["group"])
            seconds = used.text() if used is not None else f"{st.get('seconds', '-')} s"
            busy = ((stored.get(st["step"]) or {}).get("summary") or {}).get("_busy")
            if isinstance(busy, dict) and busy.get("seconds"):  # issue 42: the machine's share, beside its figures
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    seconds += f"; {busy_text(busy)}"
            config = html.escape(step_configuration(s, st["step"], ran.get(st["step"])))
            lines.append(f"<tr><td>{st['step']}</td><td>{config}</td><td>{html.escape(st['group'])}</td>"
                         f"<td>{st['threads']}</td><td>{st['tps']:,.1f}</td><td>{st['qps']:,.1f}</td>{head}"
                         f"<td>{_ms(st['lat_p95_ms'])}</td><td>{_ms(st['lat_p99_ms'])}</td>"
                         f"<td>{st.get('errors', 0):,.0f}{_codes_cell(st)}</td><td>{html.escape(seconds)}</td></tr>")
        lines.append("</table><br><b>events</b><br>")
        for ev in s["events"]:
            kind, text = html.escape(ev["kind"]), html.escape(ev["label"])
            lines.append(f"{local_time(ev['t'], '%H:%M:%S')} [{kind}] {text}<br>")
        self.details.setHtml("".join(lines))
        variables = sorted(s["variables"].items())
        self.variables.setRowCount(len(variables))
        for r, (name, value) in enumerate(variables):
            self.variables.setItem(r, 0, QTableWidgetItem(name))
            self.variables.setItem(r, 1, QTableWidgetItem(value or ""))

    # -- actions --
    def _open(self) -> None:
        sid = self._one()
        if sid is not None:
            self.open_requested.emit(sid)

    def _compare(self) -> None:
        ids = self.selected_ids()
        if len(ids) < 2:
            self.message.emit("select two sessions or more to compare")
            return
        self.compare_requested.emit(sorted(ids))

    def _diff(self) -> None:
        ids = self.selected_ids()
        if len(ids) != 2:
            self.message.emit("select two sessions to diff their settings")
            return
        a, b = sorted(ids)
        try:
            sa, sb = self.store.get_session(a), self.store.get_session(b)
        except TunebenchError as exc:
            self.message.emit(str(exc))
            return
        rows = diff_settings(sa, sb)
        self.diff.setHorizontalHeaderLabels(["section", "setting", session_title(sa), session_title(sb)])
        self.diff.setRowCount(len(rows))
        for r, (section, name, va, vb) in enumerate(rows):
            for c, text in enumerate((section, name, "—" if va is None else va, "—" if vb is None else vb)):
                self.diff.setItem(r, c, QTableWidgetItem(text))
        self.diff.resizeColumnsToContents()
        self.tabs.setCurrentWidget(self.diff)
        self.message.emit(f"{session_title(sa)} and {session_title(sb)}: {len(rows)} setting(s) differ "
                          "(the probes' own variables left out)")

    def _edit(self, field: str, title: str, multiline: bool = False) -> None:
        sid = self._one()
        if sid is None:
            return
        row = next(r for r in self.rows if r["id"] == sid)
        if multiline:  # wrapped lines (QInputDialog's multi-line text ran a long line out of sight)
            dialog = NotesDialog(self, title, f"{title} of session {sid}", row[field])
            ok = dialog.exec() == NotesDialog.DialogCode.Accepted
            text = dialog.text()
        else:
            text, ok = QInputDialog.getText(self, title, f"{title} of session {sid}", text=row[field])
        if ok:
            self.update_session(sid, **{field: text})

    def update_session(self, sid: int, **fields: str) -> None:
        try:
            self.store.update_session(sid, **fields)
        except TunebenchError as exc:
            self.message.emit(str(exc))
            return
        self.refresh()
        self.select([sid])

    def _rename(self) -> None:
        self._edit("name", "Name")

    def _tags(self) -> None:
        self._edit("tags", "Tags (comma-separated)")

    def _notes(self) -> None:
        self._edit("notes", "Notes", multiline=True)

    def _delete(self) -> None:
        ids = self.selected_ids()
        if not ids:
            self.message.emit("select the sessions to delete")
            return
        answer = QMessageBox.question(self, "Delete sessions",
                                      f"Delete {len(ids)} session(s) ({', '.join(map(str, ids))}) and their samples?")
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_sessions(ids)

    def delete_sessions(self, ids: list[int]) -> None:
        try:
            for sid in ids:
                self.store.delete_session(sid)
        except TunebenchError as exc:
            self.refresh()  # those before it are gone
            self.message.emit(str(exc))
            return
        self.refresh()
        self.message.emit(f"deleted session(s) {', '.join(map(str, ids))}")

    def _export(self) -> None:
        sid = self._one()
        if sid is None:
            return
        path = save_path(self, "Export session", f"session-{sid}.tbsession", "Tunebench session (*.tbsession)")
        if path:
            self.export_file(sid, path)

    def export_file(self, sid: int, path: str) -> None:
        try:
            out = self.store.export_session(sid, path)
        except TunebenchError as exc:
            self.message.emit(str(exc))
            return
        self.message.emit(f"session {sid} exported to {out}")

    def import_files(self) -> None:
        path = open_path(self, "Import sessions", "Tunebench session (*.tbsession *.sqlite)")
        if path:
            self.import_file(path)

    def import_file(self, path: str) -> list[int]:
        """The file's sessions imported; those already here are skipped, or copied if the user says so."""
        try:
            done = self.store.import_sessions(path)
            ids, skipped = list(done.ids), done.skipped
            if skipped and self._ask_copy(path, skipped):
                ids += self.store.import_sessions(path, again=True, only=[theirs for theirs, _ in skipped]).ids
                skipped = []
        except TunebenchError as exc:
            self.message.emit(str(exc))
            return []
        self.refresh()
        self.select(ids or [here for _, here in skipped])
        lines = [f"session {theirs} is already here as {here}: skipped" for theirs, here in skipped]
        if ids or not skipped:
            lines.append(f"imported {len(ids)} session(s) from {path}: {', '.join(map(str, ids))}")
        self.message.emit("; ".join(lines))
        return ids

    def _ask_copy(self, path: str, skipped: list[tuple[int, int]]) -> bool:
        """Whether to import the sessions already here once more, as copies (the default: skip them)."""
        which = ", ".join(f"session {theirs} (here as {here})" for theirs, here in skipped)
        one = len(skipped) == 1
        box = QMessageBox(QMessageBox.Icon.Question, "Import sessions",
                          f"{Path(path).name} holds {'a recording' if one else 'recordings'} already here: {which}.",
                          parent=self)
        box.setTextFormat(Qt.TextFormat.PlainText)  # a file's name is not markup
        box.setInformativeText("Skip it, or import a copy?" if one else "Skip them, or import a copy of each?")
        skip = box.addButton("Skip", QMessageBox.ButtonRole.RejectRole)
        copy = box.addButton("Import a copy", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(skip)
        box.setEscapeButton(skip)
        box.exec()
        return box.clickedButton() is copy
