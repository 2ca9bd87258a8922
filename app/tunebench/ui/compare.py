"""Compare sessions: overlays aligned at the start, a step or a marker; TPS-vs-concurrency curves of every
configuration; the best-to-best bars and ratio table. The overlay and the curves have the hover readout and
their legends beside them, as on the dashboard."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.confdiff import compare, session_sides
from tunebench.core.diff import default_pair, step_choices
from tunebench.core.errors import TunebenchError
from tunebench.core.flame import profiled_steps
from tunebench.core.sessions import (
    ALIGN_MODES,
    METRICS,
    align_offset,
    best_to_best,
    latency_by_rate,
    metric_series,
    tps_by_threads,
)
from tunebench.core.verdict import MIN_SECONDS
from tunebench.store.repo import Store
from tunebench.ui.compare_diff import DiffView
from tunebench.ui.crosshair import Crosshair, HoverPlot, Trace
from tunebench.ui.dashboard import PALETTE
from tunebench.ui.flame_window import FlameWindow
from tunebench.ui.knee_plot import KneePlot
from tunebench.ui.legend import add_legend, fit_legend, natural_width, set_column_width
from tunebench.ui.theme import Theme

LEGEND_SHARE = 0.3  # at most this share of a plot's width goes to its legend


def unit_of(metric: str) -> str:
    """The unit of a compared metric or series, as the dashboard's readout writes it."""
    if metric in ("TPS", "QPS"):
        return metric
    if metric.endswith(" ms") or ".lat." in metric:
        return "ms"
    if metric.endswith(".tps"):
        return "TPS"
    if metric.endswith(".qps") or metric == "server.questions":
        return "QPS"
    if metric.startswith("waits.") and metric.endswith(".ms"):
        return "ms/s"
    if metric.endswith(".threads") or metric.startswith("server.threads_"):
        return "threads"
    if metric.startswith(("host.", "proc.")) and ".cpu" in metric:
        return "%"
    return ""


def threads_text(x: float) -> str:
    return f"{2 ** x:,.0f} client threads"


def aligned_seconds(x: float) -> str:
    return f"{x:+,.0f} s"


def flame_pair(sessions: list[dict[str, Any]]) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """The steps a differential flame graph of compared sessions starts on: the pair the Why tab starts on
    (core/diff.default_pair: never two concurrencies when the same one exists on both sides), among the profiled
    steps; (session, step index)."""
    found = [(s, {st.idx for st in (profiled_steps(s) or profiled_steps(s, "client"))}) for s in sessions]
    found = [(s, idx) for s, idx in found if idx]
    if not found:
        return None, None
    (first, in_a), (last, in_b) = found[0], found[-1]
    ca = [c for c in step_choices(first) if c.step - 1 in in_a]
    if len(found) == 1:
        pair = default_pair(ca, baseline=int((first.get("summary") or {}).get("baseline") or 0))
        if pair is None:
            idx = sorted(in_a)
            return (int(first["id"]), idx[0]), ((int(first["id"]), idx[1]) if len(idx) > 1 else None)
        return (int(first["id"]), pair[0] - 1), (int(first["id"]), pair[1] - 1)
    cb = [c for c in step_choices(last) if c.step - 1 in in_b]
    pair = default_pair(ca, cb)
    if pair is None:
        return (int(first["id"]), min(in_a)), (int(last["id"]), min(in_b))
    return (int(first["id"]), pair[0] - 1), (int(last["id"]), pair[1] - 1)


def curve_legend(sid: int, label: str, title: str, sessions: int) -> str:
    """A concurrency curve's legend entry: its configuration first ("innodb_flush_log_at_trx_commit=2,
    sync_binlog=0"), "#ID" before it when several sessions are compared; the session's title for a session of
    one configuration."""
    if not label:
        return title
    return label if sessions == 1 else f"#{sid} {label}"


class CompareView(QWidget):
    def __init__(self, store: Store, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.store = store
        self.theme = theme
        self.session_ids: list[int] = []
        self.sessions: dict[int, dict[str, Any]] = {}
        self.curves: dict[int, pg.PlotDataItem] = {}
        # one colour per configuration (session, label), the same on the curves and the bars
        self.colors: dict[tuple[int, str], str] = {}
        self.metric_box = QComboBox()
        self.metric_box.addItems([*METRICS, "server.questions", "server.threads_running"])
        self.metric_box.setEditable(True)  # any series name
        self.align = QComboBox()
        self.align.addItems(ALIGN_MODES)
        self.which = QLineEdit()
        self.which.setPlaceholderText("step number, or marker text/kind (knob, mark)")
        self.apply_button = QPushButton("Align")
        self.apply_button.clicked.connect(self.redraw)
        self.status = QLabel("")
        self.flame_button = QPushButton("Flame graph A vs B…")
        self.flame_button.setToolTip("Differential flame graph of two profiled steps of the compared sessions: "
                                     "where the CPU went in B against A")
        self.flame_button.clicked.connect(self._on_flame)
        self.flame_window: FlameWindow | None = None
        controls = QHBoxLayout()
        for w in (QLabel("metric"), self.metric_box, QLabel("align at"), self.align, self.which, self.apply_button):
            controls.addWidget(w)
        controls.addWidget(self.status, 1)
        controls.addWidget(self.flame_button)
        # what the hover readouts read: per plot, the curves as drawn
        self.overlay_traces: list[Trace] = []
        self.curve_traces: list[Trace] = []
        self.overlay = pg.PlotWidget()
        add_legend(self.overlay.getPlotItem())
        self.overlay.setLabel("bottom", "seconds from the alignment point")
        self.curve_plot = pg.PlotWidget()
        add_legend(self.curve_plot.getPlotItem())
        self.curve_plot.setLabel("bottom", "client threads (log2)")
        self.curve_plot.setLabel("left", "TPS")
        self.bars = pg.PlotWidget()
        self.bars.setLabel("left", "best TPS")
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["configuration", "session", "threads", "best TPS", "ratio"])
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        best = QWidget()
        bl = QVBoxLayout(best)
        bl.addWidget(self.bars, 2)
        bl.addWidget(self.table, 1)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.overlay, "Overlay")
        self.tabs.addTab(self.curve_plot, "TPS vs threads")
        self.tabs.addTab(best, "Best to best")
        self.knee = KneePlot(theme)  # open-loop sessions: p99 against rate, each configuration's knee
        self.knee_tab = self.tabs.addTab(self.knee, "p99 vs rate")
        self.tabs.setTabVisible(self.knee_tab, False)
        self.why = DiffView(store)
        self.tabs.addTab(self.why, "Why (diff)")
        # what else differed between the compared servers' configurations (core/confdiff.py): the unfair
        # differences in words, every performance-relevant one on hover
        self.differed = QLabel("")
        self.differed.setWordWrap(True)
        self.differed.setObjectName("differed")
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.differed)
        layout.addWidget(self.tabs, 1)
        self.crosshairs = [
            Crosshair(self.overlay, lambda: self._hover(self.overlay, self.overlay_traces), theme, aligned_seconds),
            Crosshair(self.curve_plot, lambda: self._hover(self.curve_plot, self.curve_traces), theme, threads_text)]
        for w in (self.overlay, self.curve_plot):
            w.getPlotItem().getViewBox().sigResized.connect(self._fit_legends)
        self.apply_theme(theme)

    @staticmethod
    def _hover(widget: pg.PlotWidget, traces: list[Trace]) -> list[HoverPlot]:
        return [(widget.getPlotItem().getViewBox(), traces)]

    def _fit_legends(self) -> None:
        """Each legend beside its plot, at most LEGEND_SHARE of the plot's width."""
        for w in (self.overlay, self.curve_plot):
            item = w.getPlotItem()
            set_column_width(item.legend, min(natural_width(item.legend), LEGEND_SHARE * w.width()))
            fit_legend(item.legend, item.getViewBox())

    def apply_theme(self, theme: Theme) -> None:
        self.knee.apply_theme(theme)
        self.theme = theme
        for w in (self.overlay, self.curve_plot, self.bars):
            w.setBackground(theme.plot_background)
            item = w.getPlotItem()
            for axis in ("left", "bottom"):
                item.getAxis(axis).setTextPen(pg.mkPen(theme.plot_foreground))
            if item.legend is not None:
                item.legend.setLabelTextColor(theme.plot_foreground)
                for _sample, label in item.legend.items:
                    label.setText(label.text, color=theme.plot_foreground)
        for crosshair in self.crosshairs:
            crosshair.set_appearance(theme, 1.0)

    def set_sessions(self, ids: list[int]) -> None:
        self.session_ids = list(ids)
        self.sessions = {sid: self.store.get_session(sid) for sid in ids}
        self._show_differed()
        self.redraw()
        self._draw_knee()
        self.why.show_pair(self.session_ids)
        self.flame_button.setEnabled(any(profiled_steps(s) or profiled_steps(s, "client")
                                         for s in self.sessions.values()))

    def _show_differed(self) -> None:
        """The compared servers' configurations side by side: each session's server (every server of a server
        axis), named by session."""
        sides = []
        for sid in self.session_ids:
            mine = session_sides(self.sessions[sid])
            sides += [(f"#{sid} {label}", v) for label, v in mine]
        if len(sides) < 2:
            self.differed.setText("")
            self.differed.setToolTip("")
            return
        config = compare(sides)
        self.differed.setText(config.short())  # one line whatever the window's size; every line on hover
        self.differed.setToolTip("\n".join(config.lines(limit=30)))

    def _on_flame(self) -> None:
        self.open_flame()

    def open_flame(self) -> FlameWindow:
        """The flame graph window over the compared sessions' profiled steps: A the first session's first, B the
        last session's at the same threads (else its first)."""
        a, b = flame_pair([self.sessions[sid] for sid in self.session_ids])
        pair = self.why.current_pair()  # the steps the Why tab shows, when both are profiled: the same pair
        if pair is not None and all(p in self.flame_steps() for p in pair):
            a, b = pair
        if self.flame_window is None:
            self.flame_window = FlameWindow(self.store, self)
        self.flame_window.show_steps(self.session_ids, a, b)
        if self.flame_window.isVisible():
            self.flame_window.raise_()  # open behind the main window: to the front
        self.flame_window.show()
        return self.flame_window

    def flame_steps(self) -> set[tuple[int, int]]:
        """(session, step index) of every profiled step of the compared sessions."""
        return {(st.session, st.idx) for sid in self.session_ids
                for st in (profiled_steps(self.sessions[sid]) or profiled_steps(self.sessions[sid], "client"))}

    def _draw_knee(self) -> None:
        """The sessions' open-loop curves side by side: a knob that moves the knee shows as two curves."""
        curves = {}
        for sid in self.session_ids:
            for label, c in latency_by_rate(self.sessions[sid]).items():
                curves[f"{self._title(sid)} {label}".strip()] = c
        self.tabs.setTabVisible(self.knee_tab, bool(curves))
        self.knee.show_curves(curves)

    def _title(self, sid: int) -> str:
        s = self.sessions[sid]
        return s.get("name") or f"#{sid} {s['workload']} {s.get('flavor') or ''} {s.get('version') or ''}".strip()

    def _assign_colors(self) -> None:
        self.colors = {}
        for sid in self.session_ids:
            for label in tps_by_threads(self.sessions[sid]):
                self.colors[(sid, label)] = PALETTE[len(self.colors) % len(PALETTE)]

    def redraw(self) -> None:
        self._assign_colors()
        try:
            self._draw_overlay()
        except TunebenchError as exc:
            self.status.setText(str(exc))
        self._draw_curves()
        self._draw_best()
        self._fit_legends()
        for crosshair in self.crosshairs:
            crosshair.hide()

    def _draw_overlay(self) -> None:
        plot = self.overlay.getPlotItem()
        plot.clear()
        if plot.legend is not None:
            plot.legend.clear()
        self.curves.clear()
        self.overlay_traces = []
        metric, mode, which = self.metric_box.currentText(), self.align.currentText(), self.which.text().strip()
        plot.setLabel("left", metric)
        notes = []
        for i, sid in enumerate(self.session_ids):
            session = self.sessions[sid]
            name = metric_series(list(self.store.series_names(sid)), metric)
            if name is None:
                notes.append(f"#{sid} has no {metric}")
                continue
            offset = align_offset(session, mode, which)
            data = self.store.series(sid, [name])[name]
            pen = pg.mkPen(PALETTE[i % len(PALETTE)], width=3)
            x = data.t - offset
            self.curves[sid] = plot.plot(x, data.v, pen=pen, name=self._title(sid))
            self.overlay_traces.append(Trace(self._title(sid), QColor(PALETTE[i % len(PALETTE)]), x, data.v,
                                             unit_of(metric)))
        plot.addItem(pg.InfiniteLine(pos=0, angle=90, pen=pg.mkPen("#888888", width=2),
                                     label=f"{mode} {which}".strip(),
                                     labelOpts={"position": 0.95, "color": "#888888"}))
        self.status.setText("; ".join(notes) or f"{len(self.curves)} session(s) aligned at {mode} {which}".strip())

    def _draw_curves(self) -> None:
        plot = self.curve_plot.getPlotItem()
        plot.clear()
        if plot.legend is not None:
            plot.legend.clear()
        self.curve_traces = []
        for sid in self.session_ids:
            for label, points in tps_by_threads(self.sessions[sid]).items():
                if not points:
                    continue
                ordered = sorted(points)
                x = np.log2([p[0] for p in ordered])
                y = [p[1] for p in ordered]
                color = self.colors[(sid, label)]
                name = f"{self._title(sid)} {label}".strip()
                # the legend leads with what differs between the curves (the configuration's values; a session's
                # long name first cut every entry to the same "trx_commit x sync_binlog, anna's 9.7 …"); the
                # session by its number when several are compared, whole in the hover readout
                legend = curve_legend(sid, label, self._title(sid), len(self.session_ids))
                plot.plot(x, y, pen=pg.mkPen(color, width=3), symbol="o", symbolBrush=color, name=legend)
                self.curve_traces.append(Trace(name, QColor(color), x, np.asarray(y, dtype=float), "TPS"))
        ticks = sorted({p[0] for sid in self.session_ids for pts in tps_by_threads(self.sessions[sid]).values()
                        for p in pts})
        plot.getAxis("bottom").setTicks([[(float(np.log2(t)), str(t)) for t in ticks]])

    def _draw_best(self) -> None:
        rows = best_to_best([self.sessions[sid] for sid in self.session_ids])
        plot = self.bars.getPlotItem()
        plot.clear()
        if rows:
            x = np.arange(len(rows))
            plot.addItem(pg.BarGraphItem(x=x, height=[r["tps"] for r in rows], width=0.7,
                                         brushes=[self.colors[(r["session"], r["config"])] for r in rows]))
            # numbered bars: the table under them names each configuration in full
            plot.getAxis("bottom").setTicks([[(float(i), str(i + 1)) for i in range(len(rows))]])
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            ratio = "" if r["ratio"] is None else f"{r['ratio']:.3f}"
            rank = "-" if r["short"] else f"{i + 1}."
            tps = f"{r['tps']:,.1f}" + (f" (only {r['settled']} settled s: too short to rank)" if r["short"] else "")
            cells = (f"{rank} {r['label']}", str(r["session"]), str(r["threads"]), tps, ratio)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if r["short"]:
                    item.setToolTip(f"Its only points are segments of a step around a live change with fewer than "
                                    f"{MIN_SECONDS} settled seconds: too few for an A/B verdict, so too few for a best")
                    font = item.font()
                    font.setItalic(True)
                    item.setFont(font)
                self.table.setItem(i, c, item)
