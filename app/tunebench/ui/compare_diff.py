"""Compare's "Why" tab: two steps side by side — of two sessions, or two configurations of one sweep — picked on
each side (session and step), the `sessions diff` table (waits and counters per transaction, profile functions,
efficiency, statements), computed off the GUI thread. It starts at the same concurrency on both sides wherever it
can: a diff of 4 threads against 16 would pass the concurrency off as the knob's effect."""

from __future__ import annotations

from functools import partial
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.confdiff import ConfigDiff, between_sessions, shown
from tunebench.core.diff import Row, StepChoice, default_pair, diff, fmt, ratio, step_choices
from tunebench.run.session import diff_side
from tunebench.store.repo import Store
from tunebench.ui.tasks import TaskRunner

HINT = "Compare two sessions, or open one sweep: why one step differs from another, per transaction"


class DiffView(QWidget):
    """Takes the store; `set_sessions(ids)` lists their steps on both sides (in the background), picks a pair
    at the same threads, and diffs whatever pair the user picks after."""

    def __init__(self, store: Store, parent: QWidget | None = None):
        super().__init__(parent)
        self.store = store
        self.tasks = TaskRunner(self)
        self.head = QLabel(HINT)
        self.head.setWordWrap(True)
        self.session_box = {side: QComboBox() for side in "AB"}
        self.step_box = {side: QComboBox() for side in "AB"}
        pickers = QGridLayout()
        for row, side in enumerate("AB"):
            pickers.addWidget(QLabel(side), row, 0)
            pickers.addWidget(self.session_box[side], row, 1)
            pickers.addWidget(self.step_box[side], row, 2)
            self.session_box[side].currentIndexChanged.connect(lambda _i, s=side: self._session_picked(s))
            self.step_box[side].currentIndexChanged.connect(lambda _i: self._pair_picked())
        pickers.setColumnStretch(2, 1)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["", "A", "B", "change"])
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        layout = QVBoxLayout(self)
        layout.addWidget(self.head)
        layout.addLayout(pickers)
        layout.addWidget(self.table, 1)
        self.sections: dict[str, list[Row]] = {}
        self.choices: dict[int, list[StepChoice]] = {}
        self.titles: dict[int, str] = {}
        self._filling = False  # the boxes are being filled: their signals are not the user's picks
        self._pair: tuple[tuple[int, int], tuple[int, int]] | None = None  # what the table shows (or will)
        self.config: ConfigDiff | None = None  # the two servers' configurations compared (two sessions)

    # -- input --
    def show_pair(self, ids: list[int]) -> None:
        self.set_sessions(ids)

    def set_sessions(self, ids: list[int]) -> None:
        self._clear()
        if not ids:
            return
        self.head.setText("reading the sessions' steps …")
        store = self.store

        def work() -> tuple[list[int], dict[int, list[StepChoice]], dict[int, str], dict[int, int]]:
            choices, titles, baselines = {}, {}, {}
            for sid in ids[:8]:
                s = store.get_session(sid, events=False)
                choices[sid] = step_choices(s)
                titles[sid] = s.get("name") or f"#{sid} {s['workload']}"
                baselines[sid] = int((s.get("summary") or {}).get("baseline") or 0)
            return list(ids[:8]), choices, titles, baselines

        self.tasks.submit("diff-steps", work, self._on_steps, self._on_failed)

    def pick(self, side: str, session_id: int, step: int) -> None:
        """Set one side (the user's two boxes, as code): the diff follows."""
        self._filling = True
        box = self.session_box[side]
        box.setCurrentIndex(box.findData(session_id))
        self._fill_steps(side)
        self.step_box[side].setCurrentIndex(self.step_box[side].findData(step))
        self._filling = False
        self._pair_picked()

    # -- the pickers --
    def _clear(self) -> None:
        self._filling = True
        for side in "AB":
            self.session_box[side].clear()
            self.step_box[side].clear()
        self._filling = False
        self.choices, self.titles, self._pair = {}, {}, None
        self.table.setRowCount(0)
        self.head.setText(HINT)

    def _on_steps(self, result: tuple[list[int], dict[int, list[StepChoice]], dict[int, str], dict[int, int]]) -> None:
        ids, self.choices, self.titles, baselines = result
        if len(ids) >= 2:
            pair = default_pair(self.choices[ids[0]], self.choices[ids[1]])
            sides = (ids[0], ids[1])
        else:
            pair = default_pair(self.choices[ids[0]], baseline=baselines[ids[0]])
            sides = (ids[0], ids[0])
        self._filling = True
        for side in "AB":
            for sid in ids:
                self.session_box[side].addItem(self.titles[sid], sid)
        self._filling = False
        if pair is None:
            self.head.setText("these sessions have no two finished steps to compare")
            for side, sid in zip("AB", sides, strict=True):
                self.pick(side, sid, -1)
            return
        self.pick("A", sides[0], pair[0])
        self.pick("B", sides[1], pair[1])

    def _fill_steps(self, side: str) -> None:
        box = self.step_box[side]
        was = self._filling
        self._filling = True
        box.clear()
        sid = self.session_box[side].currentData()
        for c in self.choices.get(sid, []):
            box.addItem(c.text(), c.step)
        self._filling = was

    def _session_picked(self, side: str) -> None:
        if self._filling:
            return
        # the other side's threads kept where this session has them
        other = self._picked("B" if side == "A" else "A")
        self._fill_steps(side)
        sid = self.session_box[side].currentData()
        steps = self.choices.get(sid, [])
        threads = next((c.threads for c in self.choices.get(other[0], []) if c.step == other[1]), None) \
            if other else None
        same = [c for c in steps if c.threads == threads]
        if same or steps:
            best = max(same or steps, key=lambda c: c.tps)
            self.step_box[side].setCurrentIndex(self.step_box[side].findData(best.step))
        self._pair_picked()

    def current_pair(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """The two steps shown, as (session, step index) each (the flame graph opens on them)."""
        if self._pair is None:
            return None
        (sa, a), (sb, b) = self._pair
        return (sa, a - 1), (sb, b - 1)

    def _picked(self, side: str) -> tuple[int, int] | None:
        sid, step = self.session_box[side].currentData(), self.step_box[side].currentData()
        return None if sid is None or step is None else (int(sid), int(step))

    def _pair_picked(self) -> None:
        if self._filling:
            return
        a, b = self._picked("A"), self._picked("B")
        if a is None or b is None or (a, b) == self._pair:
            return
        if a == b:
            self.table.setRowCount(0)
            self.head.setText("A and B are the same step: pick another on one side")
            self._pair = None
            return
        self._pair = (a, b)
        self.head.setText(f"reading session {a[0]} step {a[1]} and session {b[0]} step {b[1]} …")
        store = self.store

        def work() -> tuple[Any, Any, dict[str, list[Row]], ConfigDiff | None]:
            sa, sb = diff_side(store, *a), diff_side(store, *b)
            # what else differed between the two sessions' servers (one session's two steps: its knobs, labelled)
            config = between_sessions(store.get_session(a[0], events=False),
                                      store.get_session(b[0], events=False)) if a[0] != b[0] else None
            return sa, sb, diff(sa, sb), config

        self.tasks.submit("diff", work, partial(self._on_done, (a, b)), self._on_failed)

    def _on_failed(self, message: str) -> None:
        self.table.setRowCount(0)
        self.head.setText(message)

    def _on_done(self, pair: tuple[tuple[int, int], tuple[int, int]],
                 result: tuple[Any, Any, dict[str, list[Row]], ConfigDiff | None]) -> None:
        if pair != self._pair:
            return  # the user picked another pair meanwhile: its answer comes
        sa, sb, self.sections, config = result
        self.config = config
        warned = "".join(f"\nunfair: {w}" for w in config.warnings) if config is not None else ""
        self.head.setText(f"A: {sa.label}\nB: {sb.label}{warned}")
        rows: list[tuple[str, Row | tuple[str, str, str] | None]] = []
        if config is not None:
            rows.append(("server configuration (what else differed)", None))
            rows += [("", (d.name + (" ⚠" if d.key else ""), shown(d.values[0]), shown(d.values[1])))
                     for d in config.relevant] or \
                [("(" + (config.lines()[0].removeprefix("what else differed: ") if not config.differences
                         else "no performance-relevant difference") + ")", None)]
        for title, section in self.sections.items():
            rows.append((title, None))
            rows += [("", r) for r in section] or [("(none recorded)", None)]
        self.table.setRowCount(len(rows))
        for i, (title, r) in enumerate(rows):
            if r is None:
                item = QTableWidgetItem(title)
                font = item.font()
                font.setBold(not title.startswith("("))
                item.setFont(font)
                self.table.setItem(i, 0, item)
                for col in (1, 2, 3):
                    self.table.setItem(i, col, QTableWidgetItem(""))
                continue
            if isinstance(r, tuple):  # a server variable: its two values as the servers said them
                for col, text in enumerate((*r, "")):
                    self.table.setItem(i, col, QTableWidgetItem(text))
                continue
            for col, text in enumerate((r.name, fmt(r.a), fmt(r.b), ratio(r))):
                item = QTableWidgetItem(text)
                if r.detail:  # a statement's whole text, on hover
                    item.setToolTip(r.detail)
                if col:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(i, col, item)
