"""Tune builder: the form of `tunebench tune` (knobs with their ranges, threads, budget, trial and settle seconds,
objective, seed) made into the CLI's own TuneSpec with its own parsers (KnobRange.parse, parse_duration,
TuneSpec.validate), the time plan under it (TuneSpec.plan_text), refused input in one line, Start and Stop.
The load is the Workload tab's, at this tab's one thread count."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.errors import ConfigError
from tunebench.run.tune import MAX_KNOBS, MIN_TRIAL_SECONDS, OBJECTIVES, KnobRange, TuneSpec, parse_duration
from tunebench.ui.wording import for_window
from tunebench.ui.workload_panel import seconds_box

DEFAULT_KNOB = ("innodb_io_capacity", "200..20000", True)


class KnobRow:
    """One knob of the search: its name, LO..HI (with the log box) or v1,v2,..., and a remove button."""

    def __init__(self, completer: QCompleter, name: str = "", values: str = "", log: bool = False):
        self.name = QLineEdit(name)
        self.name.setPlaceholderText("dynamic variable")
        self.name.setCompleter(completer)
        self.values = QLineEdit(values)
        self.values.setPlaceholderText("LO..HI or v1,v2,…")
        self.values.setToolTip("A range, LO..HI (sizes as 64M, 1G), or the values to try, v1,v2,… "
                               "(as tune --knob NAME=LO..HI[:log] or NAME=v1,v2)")
        self.log = QCheckBox("log")
        self.log.setChecked(log)
        self.log.setToolTip("a log-scaled range: as many tries from 64M to 128M as from 512M to 1G")
        self.remove = QPushButton("✕")
        self.remove.setToolTip("remove this knob")
        self.remove.setFixedWidth(self.remove.fontMetrics().horizontalAdvance("✕") + 16)

    def widgets(self) -> tuple[QWidget, ...]:
        return self.name, self.values, self.log, self.remove

    def blank(self) -> bool:
        return not self.name.text().strip() and not self.values.text().strip()

    def knob(self) -> KnobRange:
        """The row as the CLI's `--knob` would read it; ConfigError naming what is wrong."""
        name, values = self.name.text().strip(), self.values.text().strip()
        if self.log.isChecked() and values and ".." not in values:
            raise ConfigError(f"{name or 'a knob'}: the log scale is for a range LO..HI, not a list of values")
        suffix = ":log" if self.log.isChecked() and ":" not in values else ""
        return KnobRange.parse(f"{name}={values}{suffix}")


class TunePanel(QWidget):
    """Holds `spec` (the last valid TuneSpec, or None) and `error` (why the fields make none)."""

    message = Signal(str)
    start_requested = Signal()
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.spec: TuneSpec | None = None
        self.error: str | None = None
        self.rows: list[KnobRow] = []
        self.completer = QCompleter([])
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        layout = QVBoxLayout(self)
        self.workload_label = QLabel("")
        self.workload_label.setWordWrap(True)
        self.workload_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        layout.addWidget(self.workload_label)
        layout.addWidget(QLabel("Knobs (dynamic; set live, put back at the end)"))
        self.grid = QGridLayout()
        self.grid.setColumnStretch(0, 3)
        self.grid.setColumnStretch(1, 2)
        layout.addLayout(self.grid)
        self.add_button = QPushButton("Add knob")
        self.add_button.clicked.connect(self._on_add_clicked)
        add_row = QHBoxLayout()
        add_row.addWidget(self.add_button)
        add_row.addStretch(1)
        layout.addLayout(add_row)
        form = QFormLayout()
        self.threads = QSpinBox()
        self.threads.setRange(1, 100_000)
        self.threads.setValue(16)
        self.threads.setToolTip("the load's one thread count: a tune compares seconds of one load")
        self.budget = QLineEdit("10m")
        self.budget.setToolTip("how long the search runs: 10m, 90s, 1h (the ABBA BAAB confirmation comes after)")
        self.trial_seconds = seconds_box(MIN_TRIAL_SECONDS, 3600, 20)
        self.settle_seconds = seconds_box(0, 600, 5)
        self.warmup_seconds = seconds_box(0, 3600, 10)
        self.objective = QComboBox()
        self.objective.addItems(list(OBJECTIVES))
        self.objective.setToolTip("tps: more transactions per second; p99: a lower 99th percentile latency")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip("the sampler's seed: the same seed proposes the same first values")
        for label, w in (("Threads", self.threads), ("Budget", self.budget), ("Trial", self.trial_seconds),
                         ("Settle", self.settle_seconds), ("Warm-up", self.warmup_seconds),
                         ("Objective", self.objective), ("Seed", self.seed)):
            form.addRow(label, w)
        layout.addLayout(form)
        self.plan_label = QLabel("")
        self.plan_label.setObjectName("tune-plan")
        self.plan_label.setWordWrap(True)
        self.plan_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.plan_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.TypeWriter)
        self.plan_label.setFont(mono)
        layout.addWidget(self.plan_label)
        buttons = QHBoxLayout()
        self.start_button = QPushButton("Start tune")
        self.stop_button = QPushButton("Stop")
        self.start_button.clicked.connect(self.start_requested.emit)
        self.stop_button.clicked.connect(self.stop_requested.emit)
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        layout.addLayout(buttons)
        self.status = QLabel("")  # where the search is, its result, or why it did not start
        self.status.setObjectName("tune-status")
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        layout.addStretch(1)
        self.budget.textChanged.connect(self._on_edited)
        for box in (self.threads, self.trial_seconds, self.settle_seconds, self.warmup_seconds, self.seed):
            box.valueChanged.connect(self._on_edited)
        self.objective.currentTextChanged.connect(self._on_edited)
        self.add_row(*DEFAULT_KNOB)
        self.set_running(False)

    # -- the knob rows --
    def add_row(self, name: str = "", values: str = "", log: bool = False) -> KnobRow:
        row = KnobRow(self.completer, name, values, log)
        r = len(self.rows)
        for col, w in enumerate(row.widgets()):
            self.grid.addWidget(w, r, col)
        row.name.textChanged.connect(self._on_edited)
        row.values.textChanged.connect(self._on_edited)
        row.log.toggled.connect(self._on_edited)
        row.remove.clicked.connect(lambda: self.remove_row(row))
        self.rows.append(row)
        self.add_button.setEnabled(len(self.rows) < MAX_KNOBS)
        self._on_edited()
        return row

    def _on_add_clicked(self) -> None:
        self.add_row()  # (not connected directly: `clicked` passes its checked state as the first argument)

    def remove_row(self, row: KnobRow) -> None:
        self.rows.remove(row)
        for w in row.widgets():
            self.grid.removeWidget(w)
            w.deleteLater()
        for r, other in enumerate(self.rows):  # packed again: no empty grid row left where it was
            for col, w in enumerate(other.widgets()):
                self.grid.addWidget(w, r, col)
        self.add_button.setEnabled(len(self.rows) < MAX_KNOBS)
        self._on_edited()

    def set_knobs(self, knobs: Iterable[KnobRange]) -> None:
        for row in list(self.rows):
            self.remove_row(row)
        for k in knobs:
            if k.choices:
                self.add_row(k.name, ",".join(k.choices))
            else:
                self.add_row(k.name, f"{k.low}..{k.high}", k.log)

    def set_variables(self, names: Iterable[str]) -> None:
        """The server's variables: the knob names complete from them."""
        self.completer.model().setStringList(sorted(names))  # type: ignore[attr-defined]

    # -- the model out --
    def _read_fields(self) -> TuneSpec:
        knobs = tuple(row.knob() for row in self.rows if not row.blank())
        spec = TuneSpec(knobs, budget_seconds=parse_duration(self.budget.text()),
                        trial_seconds=self.trial_seconds.value(), settle_seconds=self.settle_seconds.value(),
                        objective=self.objective.currentText(), seed=self.seed.value(),
                        warmup_seconds=self.warmup_seconds.value())
        spec.validate()  # the CLI's own checks: what the panel holds is what `tunebench tune` would run
        return spec

    def _on_edited(self, *_args: object) -> None:
        for row in self.rows:  # the log box means something for a range only
            row.log.setEnabled(".." in row.values.text() or row.log.isChecked())
        try:
            self.spec, self.error = self._read_fields(), None
        except ConfigError as exc:
            self.spec, self.error = None, for_window(str(exc)).splitlines()[0]
            self.plan_label.setText(f"⚠ {self.error}")
            return
        self.plan_label.setText(self.spec.plan_text())

    def current_spec(self) -> TuneSpec:
        """The TuneSpec the fields make; ConfigError (one line, the window's words) when they make none."""
        if self.spec is None:
            raise ConfigError(self.error or "the tune's fields make no search")
        return self.spec

    def threads_text(self) -> str:
        return str(self.threads.value())

    # -- state --
    def set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.stop_button.setEnabled(running)

    def show_workload(self, text: str) -> None:
        self.workload_label.setText(f"Load: {text} (from the Workload tab: its engine, options and transport)")

    def show_status(self, text: str) -> None:
        self.status.setText(text)
