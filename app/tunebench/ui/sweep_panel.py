"""Sweep builder: a grid of knob axes and their values, concurrency steps, the live plan summary, and the
same TOML the CLI runs (save, load, recipes)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QCompleter,
    QFormLayout,
    QHBoxLayout,
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
from tunebench.core.sweep import SPECIAL_AXES, make_plan, parse_spec
from tunebench.paths import workloads_dir
from tunebench.ui.workload_panel import parse_threads, seconds_box, threads_row


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def axis_values(text: str) -> list[Any]:
    out: list[Any] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            out.append(int(part))
        except ValueError:
            out.append(part)
    return out


class SweepPanel(QWidget):
    """`knob_facts` (name -> KnobInfo) come from the connected server via `set_server_knobs`."""

    message = Signal(str)
    wants_facts = Signal(list)  # knob names the plan needs facts for

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.facts: dict[str, KnobInfo] = {}
        self.current: dict[str, str] = {}
        self.variables: list[str] = []
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.recipes = QComboBox()
        self.recipes.addItem("recipes…")
        for p in sorted((workloads_dir() / "recipes").glob("*.toml")):
            self.recipes.addItem(p.stem, str(p))
        self.recipes.activated.connect(self._on_recipe)
        top.addWidget(self.recipes, 1)
        layout.addLayout(top)
        form = QFormLayout()
        self.workload = QLineEdit("oltp_read_write")
        form.addRow("Workload", self.workload)
        self.threads = QLineEdit("4,16,64")
        form.addRow("Threads", threads_row(self.threads))
        self.step_seconds = seconds_box(1, 86400, 60)
        self.warmup_seconds = seconds_box(0, 3600, 5)
        self.repeats = QSpinBox()
        self.repeats.setRange(1, 100)
        self.order = QComboBox()
        self.order.addItems(["listed", "random"])
        form.addRow("Step", self.step_seconds)
        form.addRow("Warm-up", self.warmup_seconds)
        form.addRow("Repeats", self.repeats)
        form.addRow("Order", self.order)
        layout.addLayout(form)
        self.grid = QTableWidget(0, 3)
        self.grid.setHorizontalHeaderLabels(["knob / axis", "values (comma separated)", "kind"])
        self.grid.horizontalHeader().setStretchLastSection(True)
        self.grid.setColumnWidth(0, 230)
        self.grid.setColumnWidth(1, 170)
        layout.addWidget(self.grid, 1)
        row = QHBoxLayout()
        self.axis_name = QLineEdit()
        self.axis_name.setPlaceholderText("variable, or transport / engine / cpus")
        self.completer = QCompleter([])
        self.axis_name.setCompleter(self.completer)
        self.axis_values = QLineEdit()
        self.axis_values.setPlaceholderText("1, 2")
        add = QPushButton("Add axis")
        remove = QPushButton("Remove")
        add.clicked.connect(self._on_add_axis)
        remove.clicked.connect(self._on_remove_axis)
        for w in (self.axis_name, self.axis_values, add, remove):
            row.addWidget(w)
        layout.addLayout(row)
        self.summary = QLabel("add axes to see the plan")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        buttons = QHBoxLayout()
        self.save_button = QPushButton("Save TOML…")
        self.load_button = QPushButton("Load TOML…")
        self.run_button = QPushButton("Run sweep")
        for b in (self.load_button, self.save_button, self.run_button):
            buttons.addWidget(b)
        layout.addLayout(buttons)
        for w in (self.workload, self.threads):
            w.textChanged.connect(self.update_plan)
        for s in (self.step_seconds, self.warmup_seconds, self.repeats):
            s.valueChanged.connect(self.update_plan)
        self.order.currentTextChanged.connect(self.update_plan)
        self.grid.itemChanged.connect(self.update_plan)

    # -- server facts --
    def set_server(self, variables: dict[str, str], facts: dict[str, KnobInfo]) -> None:
        self.current = dict(variables)
        self.variables = sorted(variables)
        self.completer.model().setStringList(self.variables + list(SPECIAL_AXES))  # type: ignore[attr-defined]
        self.facts.update(facts)
        self._update_kinds()
        self.update_plan()

    def add_facts(self, facts: dict[str, KnobInfo]) -> None:
        self.facts.update(facts)
        self._update_kinds()
        self.update_plan()

    # -- grid --
    def add_axis(self, name: str, values: str) -> None:
        name = name.strip().lower()
        if not name:
            return
        self.grid.blockSignals(True)
        r = self.grid.rowCount()
        self.grid.insertRow(r)
        self.grid.setItem(r, 0, QTableWidgetItem(name))
        self.grid.setItem(r, 1, QTableWidgetItem(values))
        kind = QTableWidgetItem("")
        self.grid.setItem(r, 2, kind)
        self.grid.blockSignals(False)
        if name not in SPECIAL_AXES and name not in self.facts:
            self.wants_facts.emit([name])
        self._update_kinds()
        self.update_plan()

    def _on_add_axis(self) -> None:
        self.add_axis(self.axis_name.text(), self.axis_values.text())
        self.axis_name.clear()
        self.axis_values.clear()

    def _on_remove_axis(self) -> None:
        r = self.grid.currentRow()
        if r >= 0:
            self.grid.removeRow(r)
            self.update_plan()

    def axes(self) -> list[tuple[str, str]]:
        out = []
        for r in range(self.grid.rowCount()):
            name, values = self.grid.item(r, 0), self.grid.item(r, 1)
            if name and values and name.text().strip():
                out.append((name.text().strip(), values.text()))
        return out

    def _update_kinds(self) -> None:
        self.grid.blockSignals(True)
        for r in range(self.grid.rowCount()):
            name = self.grid.item(r, 0).text().strip()
            if name in SPECIAL_AXES:
                kind = "restart" if name == "cpus" else "run setting"
            elif name in self.facts:
                kind = "dynamic" if self.facts[name].dynamic else "restart"
            elif self.variables and name not in self.current:
                kind = "unknown variable"
            else:
                kind = "…"
            self.grid.item(r, 2).setText(kind)
        self.grid.blockSignals(False)

    # -- TOML --
    def to_toml(self) -> str:
        lines = [f"workload = {toml_value(self.workload.text().strip())}",
                 f"threads = [{', '.join(str(t) for t in parse_threads(self.threads.text()))}]",
                 f"step_seconds = {self.step_seconds.value()}", f"warmup_seconds = {self.warmup_seconds.value()}",
                 f"repeats = {self.repeats.value()}", f"order = {toml_value(self.order.currentText())}", "",
                 "[axes]"]
        for name, values in self.axes():
            lines.append(f"{name} = [{', '.join(toml_value(v) for v in axis_values(values))}]")
        return "\n".join(lines) + "\n"

    def load_toml(self, text: str, source: str = "<sweep>") -> None:
        spec = parse_spec(text, source)
        data = tomllib.loads(text)
        self.grid.blockSignals(True)
        self.grid.setRowCount(0)
        self.grid.blockSignals(False)
        self.workload.setText(spec.groups[0].workload)
        self.threads.setText(",".join(str(t) for t in spec.groups[0].threads))
        self.step_seconds.setValue(spec.step_seconds)
        self.warmup_seconds.setValue(spec.warmup_seconds)
        self.repeats.setValue(spec.repeats)
        self.order.setCurrentText(spec.order)
        for name, values in data.get("axes", {}).items():
            vals = values if isinstance(values, list) else [values]
            self.add_axis(name, ", ".join(str(v) for v in vals))

    def save(self, path: str) -> None:
        Path(path).write_text(self.to_toml())

    def _on_recipe(self, index: int) -> None:
        path = self.recipes.itemData(index)
        if path:
            self.load_toml(Path(path).read_text(), path)

    # -- plan --
    def update_plan(self) -> None:
        try:
            spec = parse_spec(self.to_toml())
            missing = [k for k in spec.knob_axes if k not in self.facts]
            if missing:
                self.summary.setText(f"waiting for the server's facts on {', '.join(missing)} "
                                     "(connect a target)")
                return
            plan = make_plan(spec, self.facts, self.current)
        except ConfigError as exc:
            self.summary.setText(f"⚠ {exc}")
            return
        d = plan.to_dict()
        minutes, seconds = divmod(d["estimated_seconds"], 60)
        self.summary.setText(f"{len(d['configs'])} configurations x {d['steps_per_config']} steps, "
                             f"{d['restarts']} restarts, about {minutes} min {seconds} s")
