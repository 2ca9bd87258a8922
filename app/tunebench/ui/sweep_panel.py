"""Sweep builder: a view of one SweepSpec (the CLI's own model). Every widget edits a field of it with
dataclasses.replace; Save writes `spec.to_toml()` (every field); the plan line is the CLI's `--plan` text,
computed by the window with the same planner (`experiment.plan_sweep`) against the target."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.errors import ConfigError
from tunebench.core.knobs import KnobInfo
from tunebench.core.probe import DEFAULT_PROBES
from tunebench.core.sweep import (
    MAX_REPEATS,
    MAX_SECONDS,
    SPECIAL_AXES,
    GroupSpec,
    Plan,
    SweepSpec,
    is_option_axis,
    parse_spec,
    plan_text,
)
from tunebench.paths import workloads_dir
from tunebench.ui.workload_panel import parse_threads, seconds_box, threads_row

PLAN_DELAY_MS = 300  # typing in a field asks for one plan when it pauses, not one per key
NAME, VALUES, KIND, OPTIONAL = range(4)


def default_spec() -> SweepSpec:
    return SweepSpec(name="sweep", groups=(GroupSpec("main", "oltp_read_write", (4, 16, 64)),), axes={},
                     step_seconds=60, warmup_seconds=5)


def show_value(v: Any) -> str:
    if v is None:
        return "all"  # the cpus axis: the whole machine
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def typed_value(text: str) -> Any:
    """A value typed into the grid: integers and decimals as numbers (as in a TOML file), the rest as text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def show_values(values: tuple[Any, ...]) -> str:
    return ", ".join(show_value(v) for v in values)


def parse_values(text: str) -> tuple[Any, ...]:
    return tuple(typed_value(p) for p in (p.strip() for p in text.split(",")) if p)


def show_pairs(pairs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={show_value(v)}" for k, v in pairs.items())


def parse_pairs(text: str, what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{what}: write name=value, separated by commas (got {part!r})")
        v = value.strip()
        out[name.strip()] = v == "true" if v in ("true", "false") else typed_value(v)
    return out


class SweepPanel(QWidget):
    """Holds `spec` (the last valid one) and `error` (why the fields do not make a spec, or None)."""

    message = Signal(str)
    wants_facts = Signal(list)  # knob names the grid needs facts for (dynamic or restart)
    plan_wanted = Signal(object)  # SweepSpec: the window plans it against the target and calls show_plan

    def __init__(self, spec: SweepSpec | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.spec = spec or default_spec()
        self.error: str | None = None
        self.plan: Plan | None = None
        self.facts: dict[str, KnobInfo] = {}
        self.variables: set[str] = set()
        self._filling = False
        layout = QVBoxLayout(self)
        self.recipes = QComboBox()
        self.recipes.addItem("recipes…")
        for p in sorted((workloads_dir() / "recipes").glob("*.toml")):
            self.recipes.addItem(p.stem, str(p))
        self.recipes.activated.connect(self._on_recipe)
        layout.addWidget(self.recipes)
        form = QFormLayout()
        self.name = QLineEdit()
        form.addRow("Name", self.name)
        self.workload = QLineEdit()
        form.addRow("Workload", self.workload)
        self.threads = QLineEdit()
        form.addRow("Threads", threads_row(self.threads))
        self.options = QLineEdit()
        self.options.setPlaceholderText("workload options: tables=1, table_size=10000")
        form.addRow("Options", self.options)
        self.more_groups = QLabel()
        form.addRow("", self.more_groups)
        self.step_seconds = seconds_box(1, MAX_SECONDS, 60)
        self.warmup_seconds = seconds_box(0, MAX_SECONDS, 5)
        self.cooldown_seconds = seconds_box(0, MAX_SECONDS, 0)
        self.repeats = QSpinBox()
        self.repeats.setRange(1, MAX_REPEATS)
        self.order = QComboBox()
        self.order.addItems(["listed", "random"])
        self.reset_data = QCheckBox("reload the tables before each configuration")
        # a server axis: every server with the first one's durability and logging settings (run/align.py)
        self.align = QCheckBox("as the first server")
        self.align.setToolTip("align = true: every server of the server axis runs with the first one's durability "
                              "and logging settings -- the binary log and its sync, trx_commit, doublewrite, buffer "
                              "pool, redo size, performance_schema, isolation and character set -- where it has the "
                              "variable; what cannot be aligned is said")
        # how the sweep is recorded, not what it runs: like `tunebench sweep --probes ...,profile`, not in the spec
        self.profile = QCheckBox("perf on the server, every step (Hot functions)")
        self.profile.setToolTip("The profile probe: perf at 99 Hz on the server process, besides the other probes; "
                                "each step keeps its own stacks (sessions profile ID --step N)")
        for label, w in (("Step", self.step_seconds), ("Warm-up", self.warmup_seconds),
                         ("Cool-down", self.cooldown_seconds), ("Repeats", self.repeats), ("Order", self.order),
                         ("Reset data", self.reset_data), ("Align servers", self.align),
                         ("CPU profile", self.profile)):
            form.addRow(label, w)
        layout.addLayout(form)
        self.grid = QTableWidget(0, 4)
        self.grid.setHorizontalHeaderLabels(["knob / axis", "values", "kind", "optional"])
        header = self.grid.horizontalHeader()
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(VALUES, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(KIND, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(OPTIONAL, QHeaderView.ResizeMode.ResizeToContents)
        self.grid.setColumnWidth(VALUES, 110)
        self.grid.setWordWrap(False)
        self.grid.setToolTip("optional: on a server without the variable the axis is left out (with a note)")
        layout.addWidget(self.grid, 1)
        row = QHBoxLayout()
        self.axis_name = QLineEdit()
        self.axis_name.setPlaceholderText("variable, transport / engine / cpus, or option.NAME")
        self.completer = QCompleter([])
        self.axis_name.setCompleter(self.completer)
        self.axis_values = QLineEdit()
        self.axis_values.setPlaceholderText("values: 1, 2")
        add = QPushButton("Add axis")
        remove = QPushButton("Remove")
        add.clicked.connect(self._on_add_axis)
        remove.clicked.connect(self._on_remove_axis)
        for part in (self.axis_name, self.axis_values, add, remove):
            row.addWidget(part)
        layout.addLayout(row)
        self.baseline = QLineEdit()
        self.baseline.setPlaceholderText("axis=value, … (the configuration ratios are to)")
        base_row = QFormLayout()
        base_row.addRow("Baseline", self.baseline)
        layout.addLayout(base_row)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.TypeWriter)
        self.summary.setFont(mono)
        layout.addWidget(self.summary)
        buttons = QHBoxLayout()
        self.save_button = QPushButton("Save TOML…")
        self.load_button = QPushButton("Load TOML…")
        self.run_button = QPushButton("Run sweep")
        for b in (self.load_button, self.save_button, self.run_button):
            buttons.addWidget(b)
        layout.addLayout(buttons)
        self._plan_timer = QTimer(self)
        self._plan_timer.setSingleShot(True)
        self._plan_timer.setInterval(PLAN_DELAY_MS)
        self._plan_timer.timeout.connect(self._ask_plan)
        for e in (self.name, self.workload, self.threads, self.options, self.baseline):
            e.textChanged.connect(self._on_edited)
        for s in (self.step_seconds, self.warmup_seconds, self.cooldown_seconds, self.repeats):
            s.valueChanged.connect(self._on_edited)
        self.order.currentTextChanged.connect(self._on_edited)
        self.reset_data.toggled.connect(self._on_edited)
        self.align.toggled.connect(self._on_edited)
        self.grid.itemChanged.connect(self._on_edited)
        self.set_spec(self.spec)

    # -- the model in, the model out --
    def set_spec(self, spec: SweepSpec) -> None:
        self._filling = True
        try:
            first = spec.groups[0]
            self.name.setText(spec.name)
            self.workload.setText(first.workload)
            self.threads.setText(",".join(str(t) for t in first.threads))
            self.options.setText(show_pairs(first.options))
            others = spec.groups[1:]
            listed = ", ".join(f"{g.name} ({g.workload}, threads {list(g.threads)})" for g in others)
            self.more_groups.setText(f"and {len(others)} more client group(s): {listed}" if others else "")
            self.more_groups.setVisible(bool(others))
            self.step_seconds.setValue(spec.step_seconds)
            self.warmup_seconds.setValue(spec.warmup_seconds)
            self.cooldown_seconds.setValue(spec.cooldown_seconds)
            self.repeats.setValue(spec.repeats)
            self.order.setCurrentText(spec.order)
            self.reset_data.setChecked(spec.reset_data)
            self.align.setChecked(spec.align)
            self.baseline.setText(show_pairs(spec.baseline))
            self.grid.blockSignals(True)
            self.grid.setRowCount(0)
            for name, values in spec.axes.items():
                self._insert_row(name, show_values(values), name in spec.optional)
            self.grid.blockSignals(False)
        finally:
            self._filling = False
        self.spec, self.error, self.plan = spec, None, None
        self._after_change()
        wanted = [n for n in spec.knob_axes if n not in self.facts]
        if wanted:
            self.wants_facts.emit(wanted)

    def current_spec(self) -> SweepSpec:
        """The spec the fields make; raises ConfigError when they do not make one."""
        if self.error:
            raise ConfigError(self.error)
        return self.spec

    def probes(self) -> tuple[str, ...] | None:
        """The probes the sweep records with: the default ones (None), and perf when the CPU profile is ticked."""
        return (*DEFAULT_PROBES, "profile") if self.profile.isChecked() else None

    def _read_fields(self) -> SweepSpec:
        old = self.spec
        first = old.groups[0]
        options = first.options if self.options.text() == show_pairs(first.options) else \
            parse_pairs(self.options.text(), "options")
        # a phase plan's groups are idle (0) in the phases that are not theirs
        group = dataclasses.replace(first, workload=self.workload.text().strip(),
                                    threads=parse_threads(self.threads.text(), idle=bool(old.phases)),
                                    options=options)
        axes: dict[str, tuple[Any, ...]] = {}
        optional = []
        for r in range(self.grid.rowCount()):
            name = self._cell(r, NAME).text().strip().lower()
            text = self._cell(r, VALUES).text()
            if not name:
                continue
            # an untouched row keeps its values as typed in the file (true, 0.5, "all")
            axes[name] = old.axes[name] if name in old.axes and text == show_values(old.axes[name]) else \
                parse_values(text)
            if self._cell(r, OPTIONAL).checkState() == Qt.CheckState.Checked:
                optional.append(name)
        baseline = old.baseline if self.baseline.text() == show_pairs(old.baseline) else \
            parse_pairs(self.baseline.text(), "baseline")
        spec = dataclasses.replace(
            old, name=self.name.text().strip() or "sweep", groups=(group, *old.groups[1:]), axes=axes,
            optional=tuple(optional), baseline=baseline, step_seconds=self.step_seconds.value(),
            warmup_seconds=self.warmup_seconds.value(), cooldown_seconds=self.cooldown_seconds.value(),
            repeats=self.repeats.value(), order=self.order.currentText(), reset_data=self.reset_data.isChecked(),
            align=self.align.isChecked())
        # The CLI's own parser is the judge: what the panel holds is what a saved file would give back.
        # (the error names the file, or the sweep as the user calls it: never a widget: issue 46 item 5)
        return parse_spec(spec.to_toml(), spec.source or "this sweep")

    def _on_edited(self, *_args: object) -> None:
        if self._filling:
            return
        try:
            spec = self._read_fields()
        except ConfigError as exc:
            self.error = str(exc)
            self.plan = None
            self._plan_timer.stop()
            self.summary.setText(f"⚠ {exc}")
            self._update_kinds()
            return
        changed = spec != self.spec or self.error is not None
        self.spec, self.error = spec, None
        if changed:
            self.plan = None
            self._after_change()

    def _after_change(self) -> None:
        self._update_kinds()
        self.summary.setText("planning against the target …")
        self._plan_timer.start()

    def _ask_plan(self) -> None:
        if self.error is None:
            self.plan_wanted.emit(self.spec)

    def show_plan(self, spec: SweepSpec, plan: Plan, notes: list[str]) -> None:
        if spec != self.spec or self.error is not None:
            return  # an answer for an older edit
        self.plan = plan
        self.summary.setText("\n".join([plan_text(plan), *notes]))

    def show_plan_error(self, spec: SweepSpec, message: str) -> None:
        if spec == self.spec and self.error is None:
            self.plan = None
            self.summary.setText(f"⚠ {message}")

    # -- server facts (the grid's kind column) --
    def set_server(self, variables: Mapping[str, str], facts: Mapping[str, KnobInfo]) -> None:
        self.variables = set(variables)
        names = sorted(variables) + list(SPECIAL_AXES)
        self.completer.model().setStringList(names)  # type: ignore[attr-defined]
        self._fit_completion(names)
        self.facts.update(facts)
        self._update_kinds()
        self._plan_timer.start()  # another server: another plan

    def _fit_completion(self, names: list[str]) -> None:
        """The completion list as wide as its longest name (within half the screen), not as narrow as the field:
        cut at the field's width, innodb_buffer_pool_dump_now and _dump_pct read the same. Longer still, a name
        is elided in the middle, where such names differ."""
        popup = self.completer.popup()
        popup.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        longest = max((popup.fontMetrics().horizontalAdvance(n) for n in names), default=0)
        room = longest + popup.verticalScrollBar().sizeHint().width() + 2 * popup.frameWidth() + 24
        screen = self.screen()
        popup.setMinimumWidth(min(room, screen.availableGeometry().width() // 2 if screen else 800))

    def add_facts(self, facts: Mapping[str, KnobInfo]) -> None:
        self.facts.update(facts)
        self._update_kinds()

    # -- grid --
    def _insert_row(self, name: str, values: str, optional: bool) -> None:
        r = self.grid.rowCount()
        self.grid.insertRow(r)
        self.grid.setItem(r, NAME, QTableWidgetItem(name))
        self.grid.setItem(r, VALUES, QTableWidgetItem(values))
        kind = QTableWidgetItem("")
        kind.setFlags(kind.flags() & ~Qt.ItemFlag.ItemIsEditable)
        self.grid.setItem(r, KIND, kind)
        check = QTableWidgetItem("")
        check.setFlags((check.flags() | Qt.ItemFlag.ItemIsUserCheckable) & ~Qt.ItemFlag.ItemIsEditable)
        check.setCheckState(Qt.CheckState.Checked if optional else Qt.CheckState.Unchecked)
        self.grid.setItem(r, OPTIONAL, check)

    def add_axis(self, name: str, values: str) -> None:
        name = name.strip().lower()
        if not name:
            return
        if name == "server" and not values.strip():  # every server this machine has (`tunebench servers list`)
            from tunebench.hosts.kits import list_servers

            values = ", ".join(s.name for s in list_servers())
        self.grid.blockSignals(True)
        self._insert_row(name, values, False)
        self.grid.blockSignals(False)
        if name not in SPECIAL_AXES and not is_option_axis(name) and name not in self.facts:
            self.wants_facts.emit([name])
        self._on_edited()

    def _cell(self, row: int, column: int) -> QTableWidgetItem:
        """A cell of the axes grid: _insert_row gives every row all four, so none is missing."""
        item = self.grid.item(row, column)
        assert item is not None, (row, column)
        return item

    def _on_add_axis(self) -> None:
        self.add_axis(self.axis_name.text(), self.axis_values.text())
        self.axis_name.clear()
        self.axis_values.clear()

    def _on_remove_axis(self) -> None:
        r = self.grid.currentRow()
        if r < 0:
            return
        name = self._cell(r, NAME).text().strip().lower()
        self.grid.removeRow(r)
        if name in self.spec.baseline:  # the baseline names axes: a removed axis leaves it too
            self.baseline.blockSignals(True)
            self.baseline.setText(show_pairs({k: v for k, v in self.spec.baseline.items() if k != name}))
            self.baseline.blockSignals(False)
        self._on_edited()

    def axes(self) -> list[tuple[str, str]]:
        return [(self._cell(r, NAME).text().strip(), self._cell(r, VALUES).text())
                for r in range(self.grid.rowCount()) if self._cell(r, NAME).text().strip()]

    def _update_kinds(self) -> None:
        self.grid.blockSignals(True)
        for r in range(self.grid.rowCount()):
            name = self._cell(r, NAME).text().strip().lower()
            optional = self._cell(r, OPTIONAL).checkState() == Qt.CheckState.Checked
            if name == "server":
                kind = "each its sandbox"
            elif name in SPECIAL_AXES:
                kind = "restart" if name == "cpus" else "run setting"
            elif is_option_axis(name):
                kind = "workload option"
            elif name in self.facts:
                kind = "read-only" if self.facts[name].fixed else "dynamic" if self.facts[name].dynamic else "restart"
            elif self.variables and name not in self.variables:
                kind = "absent: left out" if optional else "unknown variable"
            else:
                kind = "…"
            self._cell(r, KIND).setText(kind)
        self.grid.blockSignals(False)

    # -- files --
    def to_toml(self) -> str:
        return self.current_spec().to_toml()

    def load_toml(self, text: str, source: str = "this sweep") -> None:
        self.set_spec(parse_spec(text, source))

    def save(self, path: str) -> None:
        text = self.to_toml()  # refuses fields that do not make a spec
        Path(path).write_text(text)

    def load_recipe(self, name: str) -> None:
        """One of the recipes in workloads/recipes by name, into the panel."""
        idx = self.recipes.findText(name)
        if idx >= 0:
            self.recipes.setCurrentIndex(idx)
            self._on_recipe(idx)

    def _on_recipe(self, index: int) -> None:
        path = self.recipes.itemData(index)
        if path:
            try:
                self.load_toml(Path(path).read_text(), path)
            except (OSError, ConfigError) as exc:
                self.message.emit(str(exc))
