"""Live knob panel: flip dynamic knobs while the load runs; every change is journaled and marked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.knobs import new_sessions_only
from tunebench.core.verdict import event_verdict, order_text

# The seeds' favourites, with the values people flip between.
FAVOURITES: dict[str, tuple[str, ...]] = {
    "innodb_flush_log_at_trx_commit": ("1", "2", "0"),
    "innodb_spin_wait_delay": ("4", "6", "24", "96"),
    "innodb_thread_concurrency": ("0", "16", "64"),
    "sync_binlog": ("0", "1", "100"),
    "innodb_io_capacity": ("200", "2000", "20000"),
    "innodb_adaptive_hash_index": ("ON", "OFF"),
}


IDLE_TEXT = ("Knobs can change while a run goes. Set between runs: the next run starts with it (a marker at its "
             "start); Restore all, or closing the window, puts it back.")


class KnobPanel(QWidget):
    """Emits `flip(name, value)`; the window applies it through the running experiment."""

    flip = Signal(str, str)
    restore_all = Signal()
    confirm = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        grid = QGridLayout()
        self.editors: dict[str, QComboBox] = {}
        self.current: dict[str, QLabel] = {}
        self.buttons: list[QPushButton] = []
        for row, (name, values) in enumerate(FAVOURITES.items()):
            grid.addWidget(QLabel(name), row, 0)
            cur = QLabel("—")
            cur.setMinimumWidth(50)
            self.current[name] = cur
            grid.addWidget(cur, row, 1)
            combo = QComboBox()
            combo.setEditable(True)
            combo.addItems(list(values))
            self.editors[name] = combo
            grid.addWidget(combo, row, 2)
            button = QPushButton("Set")
            button.clicked.connect(self._setter(name))
            self.buttons.append(button)
            grid.addWidget(button, row, 3)
        layout.addLayout(grid)
        other = QGridLayout()
        self.other_name = QLineEdit()
        self.other_name.setPlaceholderText("any other dynamic variable")
        self.other_value = QLineEdit()
        self.other_value.setPlaceholderText("value")
        other_button = QPushButton("Set")
        other_button.clicked.connect(lambda: self.flip.emit(self.other_name.text().strip(),
                                                            self.other_value.text().strip()))
        self.buttons.append(other_button)
        other.addWidget(self.other_name, 0, 0)
        other.addWidget(self.other_value, 0, 1)
        other.addWidget(other_button, 0, 2)
        layout.addLayout(other)
        actions = QGridLayout()
        self.confirm_button = QPushButton("Confirm last flip")
        self.confirm_button.setToolTip("Alternate the last flip's two values on the running load in ABBA BAAB blocks "
                                       "of 10 s (about 2 minutes) and judge it from the blocks' spread: a change in "
                                       "the machine's load at one flip cannot fake it")
        self.confirm_button.clicked.connect(self.confirm.emit)
        self.restore_button = QPushButton("Restore all")
        self.restore_button.clicked.connect(self.restore_all.emit)
        actions.addWidget(self.confirm_button, 0, 0)
        actions.addWidget(self.restore_button, 0, 1)
        layout.addLayout(actions)
        self.result = QLabel(IDLE_TEXT)
        self.result.setWordWrap(True)
        # wrapped to the dock's width, never asking for more: a verdict's lines widened the dock (its width from
        # the label's wide size hint) and were cut at its edge
        self.result.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        layout.addWidget(self.result)
        layout.addStretch(1)
        self._facts = ""  # the line about the current target (its server, or why it cannot be read)
        self.set_running(False)

    def _setter(self, name: str) -> Callable[[], None]:
        return lambda: self.flip.emit(name, self.editors[name].currentText().strip())

    def set_running(self, running: bool) -> None:
        """Set works between runs too (issue 46 item 4); Confirm alternates a flip on a running load only."""
        for b in self.buttons:
            b.setEnabled(True)
        self.restore_button.setEnabled(True)
        self.confirm_button.setEnabled(running)

    def show_facts(self, line: str) -> None:
        """The line about the current target (its server, or why it cannot be read): shown now, and again
        whenever a new run or replay starts."""
        self._facts = line
        self.result.setText(line)

    def new_session(self) -> None:
        """A run or a replay starts: the last run's flip and verdict are not about it."""
        self.result.setText(self._facts or IDLE_TEXT)

    def show_values(self, values: dict[str, Any]) -> None:
        """The target's present values: in the "current" column and as each combo's current entry (so Set
        without a choice changes nothing). Names missing from `values` are "n/a" (not on this server)."""
        for name, label in self.current.items():
            if name in values:
                self.show_value(name, values[name])
            else:
                label.setText("n/a")

    def show_value(self, name: str, value: Any) -> None:
        """One knob's present value (flipped, or put back at the end of a run), in the "current" column and as
        its combo's entry: Set next to it offers the value the server has, never the one before a flip."""
        if name not in self.current:
            return
        text = str(value)
        self.current[name].setText(text)
        combo = self.editors[name]
        if combo.findText(text) < 0:
            combo.insertItem(0, text)
        combo.setCurrentIndex(combo.findText(text))

    def clear_values(self, why: str = "—") -> None:
        """Another target, or the server went away: nothing shown is known about it any more."""
        for label in self.current.values():
            label.setText(why)

    def show_confirming(self, plan: dict[str, Any]) -> None:
        """A confirmation started: its plan, until its verdict comes."""
        self.result.setText(f"{plan['text'][0].upper()}{plan['text'][1:]}.\nThe verdict comes at its end.")

    def show_change(self, change: dict[str, Any]) -> None:
        self.show_value(str(change["name"]), change["to"])
        warn = "\nOnly new connections take this value: the load's open connections keep the old one." \
            if new_sessions_only(str(change["name"])) else ""
        # when the verdict comes, or why there will be none, as the run judged it at the change (run/session.py
        # verdict_outlook)
        outlook = change.get("outlook") or ("Set between runs: the next run starts with it; Restore all or closing "
                                            "the window puts it back" if change.get("idle")
                                            else "The A/B verdict comes at the end of the step.")
        self.result.setText(f"{change['name']}: {change['from']} → {change['to']}{warn}\n{outlook[0].upper()}"
                            f"{outlook[1:]}.".replace("..", "."))

    def show_verdict(self, data: dict[str, Any]) -> None:
        """A change's A/B verdict (a "verdict" event's data): the same line as the Events, on three lines."""
        v = event_verdict(data)
        head = f"{data.get('name')} {data.get('from')} → {data.get('to')}"
        head += f" (Confirm, {order_text(str(data.get('order', '')))})" if data.get("confirmed") \
            else " (a single flip)"
        if data.get("group") not in (None, "main"):
            head += f" ({data['group']})"
        lines = [head] + ([v.headline(), v.check_text(), v.waits_text()] if v is not None
                          else [str(data.get("text") or "too few settled seconds on one side for a verdict")])
        if data.get("new_sessions_only"):
            lines.append("applies to new connections only: the load's open connections kept the old value")
        self.result.setText("\n".join(line for line in lines if line))

