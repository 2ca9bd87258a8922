"""Workload builder: a workload, its options as a generated form, concurrency steps, a second group."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.errors import ConfigError
from tunebench.core.probe import DEFAULT_PROBES
from tunebench.core.target import Target
from tunebench.load.engine import ClientGroup
from tunebench.load.options import OptionSpec
from tunebench.load.prepare import RowsProgress
from tunebench.load.workload import available, load_workload, lua_workload
from tunebench.run.spec import RunSpec
from tunebench.run.tasks import GroupRequest, build_run_spec, parse_option_items
from tunebench.ui.wording import for_window

DOUBLING = "1,2,4,8,16,32,64,128,256,512,1024"


def parse_threads(text: str, idle: bool = False) -> tuple[int, ...]:
    """Concurrency steps; with `idle` (a phase plan: a group idle in a phase) 0 is one too."""
    try:
        out = tuple(int(x) for x in text.replace(" ", "").split(",") if x)
    except ValueError:
        raise ConfigError(f"concurrency steps must be integers separated by commas, got {text!r}") from None
    if not out or any(n < (0 if idle else 1) for n in out):
        raise ConfigError(f"concurrency steps must be integers >= {0 if idle else 1}")
    return out


def threads_row(edit: QLineEdit) -> QHBoxLayout:
    """The concurrency steps field with its 1..1024 doubling preset."""
    row = QHBoxLayout()
    doubling = QPushButton("1..1024")
    doubling.setToolTip("doubling steps from 1 to 1024 users")
    doubling.clicked.connect(lambda: edit.setText(DOUBLING))
    row.addWidget(edit, 1)
    row.addWidget(doubling)
    return row


def seconds_box(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setSuffix(" s")
    return box


def option_editor(spec: OptionSpec, value: Any) -> QWidget:
    if spec.kind is bool:
        w: Any = QCheckBox()
        w.setChecked(bool(value))
    elif spec.choices:
        w = QComboBox()
        w.addItems(list(spec.choices))
        w.setCurrentText(str(value))
    elif spec.kind is int:
        w = QSpinBox()
        w.setRange(int(spec.minimum or 0), int(min(spec.maximum or 2**31 - 1, 2**31 - 1)))
        w.setValue(int(value))
        w.setGroupSeparatorShown(True)
    elif spec.kind is float:
        w = QDoubleSpinBox()
        w.setDecimals(3)
        w.setRange(spec.minimum or 0.0, spec.maximum or 1e9)
        w.setValue(float(value))
    else:
        w = QLineEdit(str(value))
    w.setToolTip(spec.help)
    return w


def editor_value(w: QWidget) -> Any:
    if isinstance(w, QCheckBox):
        return w.isChecked()
    if isinstance(w, QComboBox):
        return w.currentText()
    if isinstance(w, (QSpinBox, QDoubleSpinBox)):
        return w.value()
    if isinstance(w, QLineEdit):
        return w.text()
    raise TypeError(type(w))


class WorkloadPanel(QWidget):
    cancel_requested = Signal()  # the user's Cancel of a prepare in progress

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.names = list(available())
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.workload = QComboBox()
        self.workload.addItems(self.names)
        self.workload.setCurrentText("oltp_point_select" if "oltp_point_select" in self.names else self.names[0])
        form.addRow("Workload", self.workload)
        self.engine = QComboBox()
        self.engine.addItems(["builtin", "sysbench"])
        form.addRow("Engine", self.engine)
        self.transport = QComboBox()
        self.transport.addItems(["socket", "tcp", "tcp+tls"])
        form.addRow("Transport", self.transport)
        self.lua = QLineEdit()
        self.lua.setPlaceholderText("optional: any sysbench Lua script (sysbench engine)")
        form.addRow("Lua script", self.lua)
        self.client_hosts = QLineEdit()
        self.client_hosts.setPlaceholderText("optional: ssh://user@host[:port], … (load runs there)")
        self.client_hosts.setToolTip("Client hosts over SSH: the threads are split over them, each recorded as "
                                     "client.GROUP@HOST beside the group total (sysbench, or the builtin "
                                     "engine's workers with python3.11 and Tunebench on each host)")
        form.addRow("Client hosts", self.client_hosts)
        self.threads = QLineEdit("1,4,16")
        form.addRow("Threads", threads_row(self.threads))
        self.rate = QLineEdit()
        self.rate.setObjectName("rate")
        self.rate.setPlaceholderText("optional: transactions/s per step, e.g. 1000,2000 (open loop)")
        self.rate.setToolTip("Open loop: the group's transactions per second, one per step (or one for every "
                             "step); the threads are then the pool serving it, and latency counts from each "
                             "transaction's intended start (queue wait included). Empty: closed loop.")
        form.addRow("Rate", self.rate)
        self.step_seconds = seconds_box(1, 86400, 30)
        form.addRow("Step", self.step_seconds)
        self.warmup_seconds = seconds_box(0, 3600, 0)
        form.addRow("Warm-up", self.warmup_seconds)
        self.profile = QCheckBox("perf on the server (Hot functions)")
        self.profile.setToolTip("The profile probe: perf at 99 Hz on the server process, besides the other probes")
        form.addRow("CPU profile", self.profile)
        self.statements = QCheckBox("statement digests (Statements)")
        self.statements.setToolTip("The statements probe: performance_schema's statement digests every second "
                                   "(calls/s, latency, rows examined of the busiest statements), besides the other "
                                   "probes")
        form.addRow("Statements", self.statements)
        layout.addLayout(form)
        box = QGroupBox("Options")
        box_layout = QVBoxLayout(box)
        self.family_label = QLabel("")
        self.family_label.setWordWrap(True)
        self.family_label.setObjectName("familyLabel")
        box_layout.addWidget(self.family_label)
        self.options_form = QFormLayout()
        box_layout.addLayout(self.options_form)
        self.more_options = QLineEdit()
        self.more_options.setPlaceholderText("more: name=value, … (tunebench workloads lists them)")
        more_form = QFormLayout()
        more_form.addRow("More", self.more_options)
        box_layout.addLayout(more_form)
        self.editors: dict[str, QWidget] = {}
        layout.addWidget(box)
        second = QGroupBox("Second client group")
        second.setCheckable(True)
        second.setChecked(False)
        sform = QFormLayout(second)
        self.second = second
        self.second_workload = QComboBox()
        self.second_workload.addItems(self.names)
        self.second_workload.setCurrentText("oltp_update_index" if "oltp_update_index" in self.names else self.names[0])
        self.second_threads = QLineEdit("4")
        sform.addRow("Workload", self.second_workload)
        sform.addRow("Threads", self.second_threads)
        layout.addWidget(second)
        buttons = QHBoxLayout()
        self.prepare_button = QPushButton("Prepare")
        self.cleanup_button = QPushButton("Cleanup")
        buttons.addWidget(self.prepare_button)
        buttons.addWidget(self.cleanup_button)
        layout.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy until the first rows are counted
        self.progress.setVisible(False)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop loading: whole tables stay, half-loaded ones are dropped")
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        bar_row = QHBoxLayout()
        bar_row.addWidget(self.progress, 1)
        bar_row.addWidget(self.cancel_button)
        self.progress_label = QLabel("")
        self.progress_label.setWordWrap(True)
        layout.addLayout(bar_row)
        layout.addWidget(self.progress_label)
        layout.addStretch(1)
        self.workload.currentTextChanged.connect(self._on_workload_changed)
        self.lua.textChanged.connect(self._on_lua_changed)
        self._on_workload_changed(self.workload.currentText())

    def _on_lua_changed(self, text: str) -> None:
        """A Lua script is the workload: the preset's form goes, the script's options go in More (its option
        list is read by the run, from `sysbench SCRIPT help`)."""
        lua = bool(text.strip())
        self.workload.setEnabled(not lua)
        if lua:
            while self.options_form.rowCount():
                self.options_form.removeRow(0)
            self.editors.clear()
            self.family_label.setText("sysbench Lua script: its own options in More (name=value, …); "
                                      "the sysbench engine runs it")
            if self.engine.currentText() != "sysbench":
                self.engine.setCurrentText("sysbench")
        elif not self.editors:
            self._on_workload_changed(self.workload.currentText())

    def _on_workload_changed(self, name: str) -> None:
        while self.options_form.rowCount():
            self.options_form.removeRow(0)
        self.editors.clear()
        try:
            wl = load_workload(name)
            defaults = wl.options()
        except ConfigError:
            self.family_label.setText("")
            return
        family = wl.family
        specs = family.option_specs()
        trx = family.transactions(defaults)
        mix = ", ".join(f"{t.name} {t.weight}" for t in trx) if len(trx) > 1 else ""
        self.family_label.setText(f"{family.name} family" + (f" · mix {mix}" if mix else "")
                                  + (f" · {head[2]}" if (head := family.headline_of(defaults)) else ""))
        self.family_label.setToolTip(family.description)
        for opt in family.form_options:
            editor = option_editor(specs[opt], defaults[opt])
            if opt in wl.fixed:  # the workload's own (dbstress_rw1's mix): shown, not editable
                editor.setEnabled(False)
                editor.setToolTip(f"{specs[opt].help} (fixed by the workload {wl.name})")
            self.editors[opt] = editor
            self.options_form.addRow(opt, editor)
        others = [o for o in specs if o not in family.form_options]
        self.more_options.setToolTip("Any other option of the " + family.name + " family as name=value, comma "
                                     "separated: " + ", ".join(others))

    def set_busy(self, text: str | None, cancellable: bool = False) -> None:
        """Prepare/cleanup in progress (text; with a Cancel button when `cancellable`) or done (None)."""
        self.progress.setVisible(text is not None)
        self.progress.setRange(0, 0)
        self.cancel_button.setVisible(text is not None and cancellable)
        self.cancel_button.setEnabled(True)
        self.prepare_button.setEnabled(text is None)
        self.cleanup_button.setEnabled(text is None)
        if text is not None:
            self.progress_label.setText(text)

    def show_progress(self, item: RowsProgress | str) -> None:
        """A loader's line, or how far the load is: the bar by rows, the line with rows/s and time left."""
        if self.cancel_button.isVisible() and not self.cancel_button.isEnabled():
            return  # cancelling: that line stays until the outcome says what was kept
        if isinstance(item, RowsProgress):
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * item.fraction))
            self.progress_label.setText(item.line())
        else:
            self.progress_label.setText(item)

    def _on_cancel_clicked(self) -> None:
        self.cancel_button.setEnabled(False)
        self.progress_label.setText("cancelling: whole tables stay, half-loaded ones are dropped …")
        self.cancel_requested.emit()

    def client_host_urls(self) -> tuple[str, ...]:
        return tuple(u.strip() for u in self.client_hosts.text().replace(" ", ",").split(",") if u.strip())

    def option_values(self) -> dict[str, Any]:
        """The form's options, and the More field's name=value items on top (ConfigError if malformed)."""
        values: dict[str, Any] = {k: editor_value(w) for k, w in self.editors.items()}
        items = [i.strip() for i in self.more_options.text().split(",") if i.strip()]
        values.update(parse_option_items(items))
        return values

    def groups(self) -> tuple[ClientGroup, ...]:
        """The client groups as built; ConfigError for anything invalid."""
        lua = self.lua.text().strip() or None
        wl = lua_workload(lua) if lua else load_workload(self.workload.currentText())
        opts = wl.options(self.option_values())
        groups = [ClientGroup("main", wl, opts, parse_threads(self.threads.text()), lua)]
        if self.second.isChecked():
            wl2 = load_workload(self.second_workload.currentText())
            shape = {k: opts[k] for k in wl2.family.data_options} if wl2.family.name == wl.family.name else {}
            groups.append(ClientGroup(wl2.name if wl2.name != wl.name else "second", wl2, wl2.options(shape),
                                      parse_threads(self.second_threads.text())))
        return tuple(groups)

    def _probes(self) -> tuple[str, ...] | None:
        """The default probes (None), and the ones that cost more when ticked."""
        extra = tuple(name for name, box in (("statements", self.statements), ("profile", self.profile))
                      if box.isChecked())
        return (*DEFAULT_PROBES, *extra) if extra else None

    def follow_target(self, target: Target | None) -> None:
        """The transport follows the target: socket only where it has one (a target reachable over TCP alone kept
        "socket", and Run did nothing visible but an Events line: issue 46 item 2)."""
        model = self.transport.model()
        socket_item = model.item(0) if isinstance(model, QStandardItemModel) else None
        has_socket = target is None or bool(target.socket)
        if socket_item is not None:
            socket_item.setEnabled(has_socket)
            socket_item.setToolTip("" if has_socket else f"{target.name if target else ''} has no UNIX socket here")
        if not has_socket and self.transport.currentText() == "socket":
            self.transport.setCurrentText("tcp")
        elif has_socket and target is not None and target.is_sandbox:
            self.transport.setCurrentText("socket")

    def refused(self, why: str) -> None:
        """A Run or Prepare refused before it started: said here, under the panel's buttons, where the user just
        clicked (and in the status bar and Events)."""
        self.progress_label.setText(f"⚠ {for_window(why)}" if why else "")

    def run_spec(self, threads: str | None = None) -> RunSpec:
        """The run this panel describes, built and validated as `tunebench run` builds it (run/tasks.py);
        `threads` instead of the panel's own (a tune's one thread count)."""
        main, second = self.workload.currentText(), self.second_workload.currentText()
        extra: tuple[GroupRequest, ...] = ()
        if self.second.isChecked():
            name = second if second != main else "second"
            extra = (GroupRequest(name, second, parse_threads(self.second_threads.text())),)
        lua = self.lua.text().strip() or None
        return build_run_spec(None if lua else main, self.option_values(),
                              parse_threads(self.threads.text() if threads is None else threads),
                              groups=extra, rate=self.rate.text().replace(" ", "") or None,
                              lua_script=lua, engine=self.engine.currentText(),
                              step_seconds=self.step_seconds.value(), warmup_seconds=self.warmup_seconds.value(),
                              transport=self.transport.currentText(), client_hosts=self.client_host_urls(),
                              probes=self._probes(),
                              group_options="shape")
