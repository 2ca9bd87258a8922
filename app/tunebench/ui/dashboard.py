"""The live dashboard: stacked plots on one linked time axis, big readouts, step and knob markers.

Data go into a Timeline as they arrive; a timer redraws what changed (setData with peak downsampling and
clip-to-view), so a 1024-thread run with every probe never floods the event loop.

Every plot shows one x range at every moment (live, replay, stage): while the view follows the run, the
window is decided once per tick from the timeline and set on every plot, with their x links blocked (a
link would set each plot again from each of the others). Only the data redraw is spread over the ticks,
one panel per tick (its new markers and its curves), so no single event-loop turn holds the whole redraw.
Any manual pan or zoom stops following and links the plots again, so they pan and zoom together.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QFont, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from tunebench.ui.theme import Theme
from tunebench.ui.timeline import Marker, Timeline

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f", "#aec7e8", "#ffbb78"]
MARKER_COLORS = {"step": "#888888", "knob": "#d62728", "mark": "#2ca02c", "restart": "#9467bd"}
TOP_WAITS = 6
FOLLOW_STEP = 10  # seconds the followed window moves at a time
# A readout's width only ever grows (to fit the widest value it has shown): the readouts do not jump sideways
# whenever p95 goes from 9 to 10 ms and back.
READOUT_SAMPLES = {"tps": "TPS 88,888", "qps": "QPS 888,888", "p95": "p95 88.88 ms", "state": "running"}
READOUT_GAP = 24


# Every series a panel can show starts with one of these: a replay reads only those from the store.
SHOWN_PREFIXES = ("client.", "server.questions", "server.threads_running", "waits.", "host.", "proc.")


def short_wait(name: str) -> str:
    """'waits.mutex/buf_pool_mutex.ms' -> 'buf_pool_mutex (mutex)'."""
    inst = name[len("waits."):].rsplit(".", 1)[0]
    kind, _, rest = inst.partition("/")
    return f"{rest} ({kind})" if rest else inst


class Panel:
    """One plot and the series it shows: `select(timeline)` -> [(series, legend label)]."""

    def __init__(self, title: str, plot: pg.PlotItem, select: Callable[[Timeline], list[tuple[str, str]]]):
        self.title = title
        self.plot = plot
        self.select = select
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.markers: list[pg.InfiniteLine] = []
        self.version = -1  # the timeline version this panel last drew

    @property
    def view(self) -> pg.ViewBox:
        return self.plot.getViewBox()


class ReadoutBar(QWidget):
    """The row of readouts: refits them whenever its width changes."""

    def __init__(self, on_resize: Callable[[], None]):
        super().__init__()
        self._on_resize = on_resize

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._on_resize()


class Dashboard(QWidget):
    def __init__(self, timeline: Timeline, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.timeline = timeline
        self.theme = theme  # set before the plots: legends take its fill
        self.follow_seconds = 120.0
        self.line_scale = 1.0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        # The readouts sit in a bar whose size never asks the window for room: whatever they read, the docks
        # and plots keep their geometry (a readout that widened the dashboard resized, and fully repainted,
        # the whole window).
        self.font_scale = 1.0
        self._readout_size, self._badge_size = 22.0, 16.0
        self._widest: dict[str, str] = {}  # per readout: the widest text it has shown
        self.bar = bar = ReadoutBar(self._fit_readouts)
        bar.setLayout(self._readouts())
        bar.layout().setContentsMargins(0, 0, 0, 0)
        bar.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        layout.addWidget(bar)
        self.graphics = pg.GraphicsLayoutWidget()
        layout.addWidget(self.graphics, 1)
        self.panels: list[Panel] = []
        self._waits_shown: list[str] = []
        self._leader: pg.ViewBox | None = None
        self._x_window: tuple[float, float] | None = None  # the x range every plot shows while following
        self._build_plots()
        # One panel per tick, a full round about every second (data arrive every second, every 0.25 s at the
        # fastest probe rate): no single event-loop turn holds the whole redraw.
        self._next_panel = 0
        self.timer = QTimer(self)
        self.timer.setInterval(160)  # 6 panels: one full round a second, the rate the data come at
        self.timer.timeout.connect(self._update_step)
        self.timer.start()
        self.set_appearance(theme, 1.0)

    # -- layout --
    def _readouts(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.tps_label = QLabel("TPS —")
        self.p95_label = QLabel("p95 — ms")
        self.qps_label = QLabel("QPS —")
        self.state_label = QLabel("idle")
        self.badge = QLabel(" REPLAY ")  # shown whenever what is on the plots is not live
        self.badge.setStyleSheet("background: #d62728; color: white; font-weight: bold; border-radius: 4px;")
        self.badge.hide()
        for lab in (self.tps_label, self.qps_label, self.p95_label):
            row.addWidget(lab)
            row.addSpacing(READOUT_GAP)
        row.addStretch(1)
        self.state_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.badge)
        row.addWidget(self.state_label)
        self.follow_box = QCheckBox("follow")
        self.follow_box.setChecked(True)
        self.follow_box.toggled.connect(self._set_following)
        row.addWidget(self.follow_box)
        return row

    def _fit_readouts(self) -> None:
        """Fonts and widths of the readouts so that all of them fit the bar, side by side, never on top of
        each other: at their size (22 pt, 16 pt for the badge, times the font scale) when the bar is wide
        enough, else smaller until they fit. Each reserves room for its widest value so far (at least the
        sample), so a value changing width does not move the others. The bar's height is that of the full
        size: shrinking to fit never changes the dashboard's size hints."""
        readouts = {"tps": self.tps_label, "qps": self.qps_label, "p95": self.p95_label}
        for k, lab in readouts.items():  # the widest value so far, measured at one size
            nominal = QFontMetrics(self._font(22, bold=True))
            if nominal.horizontalAdvance(lab.text()) > nominal.horizontalAdvance(self._widest.get(k, "")):
                self._widest[k] = lab.text()
        row = self.bar.layout()
        m = row.contentsMargins()
        state_need = max(self.state_label.fontMetrics().horizontalAdvance(t)
                         for t in (READOUT_SAMPLES["state"], self.state_label.text())) + 8
        badge_shown = not self.badge.isHidden()
        items = 2 * len(readouts) + 1 + 2 + badge_shown  # labels, gaps, the stretch, state, follow, badge
        fixed = m.left() + m.right() + READOUT_GAP * len(readouts) + row.spacing() * (items - 1) \
            + state_need + self.follow_box.sizeHint().width()
        avail = self.bar.width() if self.bar.isVisible() and self.bar.width() > 0 else 10 ** 6

        def widths(points: float) -> tuple[dict[str, int], int]:
            fm = QFontMetrics(self._font(points, bold=True))
            out = {k: max(fm.horizontalAdvance(t) for t in (READOUT_SAMPLES[k], lab.text(), self._widest[k])) + 8
                   for k, lab in readouts.items()}
            badge = 0
            if badge_shown:
                badge = QFontMetrics(self._font(points * self._badge_size / self._readout_size, bold=True)
                                     ).horizontalAdvance(self.badge.text()) + 8
            return out, badge

        points = self._readout_size
        need, badge = widths(points)
        while points > 6 and fixed + sum(need.values()) + badge > avail:
            points = max(6.0, points * 0.95)
            need, badge = widths(points)
        for k, lab in readouts.items():
            lab.setFont(self._font(points, bold=True))
            lab.setMinimumWidth(need[k])
        self.state_label.setMinimumWidth(state_need)
        self.badge.setFont(self._font(points * self._badge_size / self._readout_size, bold=True))
        self.badge.setMinimumWidth(badge)
        full = QFontMetrics(self._font(self._readout_size, bold=True)).height()
        self.bar.setFixedHeight(max(full, QFontMetrics(self._font(self._badge_size, bold=True)).height(),
                                    self.follow_box.sizeHint().height()) + m.top() + m.bottom())

    def _build_plots(self) -> None:
        tl = self.timeline
        specs: list[tuple[str, Callable[[Timeline], list[tuple[str, str]]]]] = [
            ("TPS", lambda t: [(n, n.split(".")[1]) for n in t.names("client.", ".tps")]),
            ("QPS", lambda t: [(n, f"{n.split('.')[1]} (client)") for n in t.names("client.", ".qps")]
             + [(n, "server Questions") for n in t.names("server.questions")]),
            ("latency ms", lambda t: [(n, f"{n.split('.')[1]} {n.rsplit('.', 1)[1]}")
                                      for n in t.names("client.") if n.endswith((".lat.p95", ".lat.p99"))]),
            ("threads", lambda t: [(n, f"{n.split('.')[1]} client") for n in t.names("client.", ".threads")
                                   if not n.startswith("client.total.")]
             + [(n, "server running") for n in t.names("server.threads_running")]),
            ("waits ms/s", self._select_waits),
            ("CPU %", lambda t: [(n, n.split(".")[-1]) for n in t.names("host.local.cpu.")
                                 if n.rsplit(".", 1)[1] in ("user", "system", "iowait")]
             + [(n, f"{n.split('.')[1]} busy") for n in t.names("host.", ".cpu.busy")
                if not n.startswith("host.local.")]
             + [(n, f"{n.split('.')[2]} process" if n.startswith("proc.local.") else
                 f"{n.split('.')[2]} on {n.split('.')[1]}") for n in t.names("proc.", ".cpu")
                if n.split(".")[2] in ("server", "client", "mysqld", "sysbench")]),
        ]
        first: pg.PlotItem | None = None
        for i, (title, select) in enumerate(specs):
            plot = self.graphics.addPlot(row=i, col=0)
            plot.setLabel("left", title)
            plot.showGrid(x=False, y=False)
            plot.addLegend(offset=(-10, 5), labelTextSize="9pt", colCount=3, brush=pg.mkBrush(self.theme.label_fill))
            plot.setDownsampling(auto=True, mode="peak")
            plot.setClipToView(True)
            plot.getAxis("left").setWidth(70)
            for axis in ("left", "bottom"):
                # an SI prefix change rewrites the label and relayouts every plot: seconds-long stalls under load
                plot.getAxis(axis).enableAutoSIPrefix(False)
            plot.enableAutoRange(axis="y")
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            if i < len(specs) - 1:
                plot.hideAxis("bottom")  # one time axis for all: five fewer axes to regenerate on every scroll
            else:
                plot.setLabel("bottom", "seconds")
            plot.getViewBox().sigRangeChangedManually.connect(self._on_manual_range)
            self.panels.append(Panel(title, plot, select))
        del tl
        self._set_following(True)

    def _select_waits(self, t: Timeline) -> list[tuple[str, str]]:
        """The busiest instruments over the run so far (by total wait time, else count), plus 'other'.

        With some hysteresis: a newcomer takes the place of the least busy one shown only when it is 25 %
        busier, so two close instruments do not swap places (and legend entries) every second.
        """
        suffix = ".ms" if t.names("waits.", ".ms") else ".count"
        names = [n for n in t.names("waits.", suffix) if not n.startswith(("waits.total.", "waits.other."))]
        total = {n: float(t.series[n].view()[1].sum()) for n in names}
        shown = [n for n in self._waits_shown if n in total]
        for n in sorted(names, key=lambda n: -total[n]):
            if n in shown:
                continue
            if len(shown) < TOP_WAITS:
                shown.append(n)
                continue
            weakest = min(shown, key=lambda m: total[m])
            if total[n] <= 1.25 * total[weakest]:
                break
            shown[shown.index(weakest)] = n
        self._waits_shown = sorted(shown, key=lambda n: -total[n])
        out = [(n, short_wait(n)) for n in self._waits_shown]
        if f"waits.other{suffix}" in t.series:
            out.append((f"waits.other{suffix}", "other"))
        return out

    def set_appearance(self, theme: Theme, scale: float) -> None:
        """Theme and font scale, both, onto everything the dashboard draws: set from the two inputs alone,
        never from what an earlier call left, so any order of changes ends as the last (theme, scale) says."""
        self.theme, self.font_scale = theme, scale
        self.graphics.setBackground(theme.plot_background)
        fg = QColor(theme.plot_foreground)
        tick_font = self._font(9 * scale)
        size = f"{9 * scale:.4g}pt"
        palette = list(theme.palette or PALETTE)
        for p in self.panels:
            for axis in ("left", "bottom"):
                ax = p.plot.getAxis(axis)  # (hidden bottom axes too: shown again after stage)
                ax.setPen(pg.mkPen(fg))
                ax.setTextPen(pg.mkPen(fg))
                ax.setTickFont(tick_font)
                ax.label.setFont(tick_font)
                ax.setLabel(ax.labelText, color=theme.plot_foreground)
            p.plot.getAxis("left").setWidth(int(70 * scale))  # room for "25000" at the bigger size
            legend = p.plot.legend
            if legend is not None:
                legend.setBrush(pg.mkBrush(theme.label_fill))
                legend.setLabelTextColor(fg)
                legend.setLabelTextSize(size)
                for _sample, label in legend.items:  # pyqtgraph keeps the new colour, draws the old: redraw
                    label.setText(label.text, color=fg, size=size)
                legend.layout.invalidate()
                legend.updateSize()
            for i, curve in enumerate(p.curves.values()):
                curve.setPen(pg.mkPen(palette[i % len(palette)], width=(3 if i == 0 else 2) * self.line_scale))
            for line in p.markers:
                self._style_marker(line)
        self._readout_size = 22 * scale
        self._badge_size = 16 * scale
        self._fit_readouts()

    @staticmethod
    def _font(points: float, bold: bool = False) -> QFont:
        f = QFont()
        f.setPointSizeF(points)
        f.setBold(bold)
        return f

    def _style_marker(self, line: pg.InfiniteLine) -> None:
        """A marker's label in the current appearance (its line keeps its kind's colour)."""
        label = getattr(line, "label", None)  # (pyqtgraph sets it only on lines with a label)
        if label is not None:
            label.fill = pg.mkBrush(self.theme.label_fill)
            label.setFont(self._font(9 * self.font_scale))
            label.update()

    # -- following and linking --
    def _set_following(self, on: bool) -> None:
        for p in self.panels:
            p.view.blockLink(on)
        if on:
            self._x_window = None  # every plot scrolls to the run's window on the next tick
        else:  # line the others up with the one the user moved (else the first): from here on they move together
            leader, self._leader = self._leader or self.panels[0].view, None
            for p in self.panels:
                if p.view is not leader:
                    p.view.linkedViewChanged(leader, pg.ViewBox.XAxis)
        if self.follow_box.isChecked() != on:
            self.follow_box.setChecked(on)

    def _on_manual_range(self, *_args: object) -> None:
        if self.follow_box.isChecked():  # the user pans or zooms: stop following, from where they are
            self._leader = self.sender()
            self.follow_box.setChecked(False)

    # -- updates --
    def set_timeline(self, timeline: Timeline, replay: bool) -> None:
        """Show another timeline (live, or a replay: with the REPLAY badge)."""
        self.reset()
        self.timeline = timeline
        self.badge.setVisible(replay)
        self._fit_readouts()

    def show_only(self, titles: list[str] | None, line_scale: float = 1.0) -> None:
        """Stage mode: only the named plots (None: all), lines `line_scale` times thicker."""
        shown = [p for p in self.panels if titles is None or p.title in titles]
        layout = self.graphics.ci
        for p in self.panels:
            if p.plot.scene() is not None:
                layout.removeItem(p.plot)
        for row, p in enumerate(shown):
            layout.addItem(p.plot, row=row, col=0)
            p.plot.setVisible(True)
            p.plot.showAxis("bottom", row == len(shown) - 1)
            if row == len(shown) - 1:
                p.plot.setLabel("bottom", "seconds")
        for p in self.panels:
            if p not in shown:
                p.plot.setVisible(False)
        self.line_scale = line_scale
        for p in self.panels:
            for i, curve in enumerate(p.curves.values()):
                curve.setPen(pg.mkPen(curve.opts["pen"].color(), width=(3 if i == 0 else 2) * line_scale))

    def reset(self) -> None:
        for p in self.panels:
            for c in p.curves.values():
                p.plot.removeItem(c)
            for m in p.markers:
                p.plot.removeItem(m)
            p.curves.clear()
            p.markers.clear()
            p.version = -1
            if p.plot.legend is not None:
                p.plot.legend.clear()
        self._next_panel = 0
        self._x_window = None
        self._waits_shown = []
        self._widest = {}

    def set_x_range(self, lo: float, hi: float) -> None:
        """Show [lo, hi] on every plot (with following off, the links keep them together afterwards)."""
        for p in self.panels:
            p.view.blockLink(True)  # each plot is set here: a link would set the others again, five times over
            p.plot.setXRange(lo, hi, padding=0)
        for p in self.panels:
            p.view.blockLink(self.follow_box.isChecked())

    def _follow(self) -> None:
        """While following: the run's window, decided once, on every plot (only when it moved)."""
        if not self.follow_box.isChecked():
            return
        # The window moves ahead in FOLLOW_STEP-second pages, not every second: moving it repaints all six plots
        # at once (their axes, clipping and y ranges: ~27 ms), which once a second was the p99 of the window's
        # stalls; every plot still shows the same range at every moment.
        hi = math.ceil((self.timeline.x_max + 1) / FOLLOW_STEP) * FOLLOW_STEP
        window = (max(0.0, hi - self.follow_seconds), float(hi))
        if window != self._x_window:
            self._x_window = window
            self.set_x_range(*window)

    def _update_plots(self) -> None:
        """Everything at once (screenshots, tests); the timer spreads the same work over its ticks."""
        self._follow()
        for p in self.panels:
            while not self._update_panel(p, budget=1000):
                pass
        self._update_readouts()

    def _update_step(self) -> None:
        self._follow()
        p = self.panels[self._next_panel]
        if self._next_panel == 0 and p.version != self.timeline.version:
            self._update_readouts()
        if self._update_panel(p):
            self._next_panel = (self._next_panel + 1) % len(self.panels)

    def _update_panel(self, p: Panel, budget: int = 2) -> bool:
        """Bring one panel up to date; False when it used its budget of new items (curves, markers: each
        costs milliseconds of legend and scene layout) and wants the next tick too."""
        tl = self.timeline
        if p.version == tl.version:
            return True
        while len(p.markers) > len(tl.markers):  # a replay sought backwards
            p.plot.removeItem(p.markers.pop())
        while len(p.markers) < len(tl.markers):
            if budget <= 0:
                return False
            self._add_marker(p, tl.markers[len(p.markers)])
            budget -= 1
        chosen = p.select(tl)
        keep = {name for name, _ in chosen}
        for gone in [n for n in p.curves if n not in keep]:  # e.g. a wait that left the top-N
            if budget <= 0:
                return False
            budget -= 1
            curve = p.curves.pop(gone)
            p.plot.removeItem(curve)  # (takes it out of the legend too)
            if p.plot.legend is not None:
                # pyqtgraph's multi-column legend puts the next entry on top of another after a removal:
                # lay the legend out afresh
                p.plot.legend.clear()
                for c in p.curves.values():
                    p.plot.legend.addItem(c, c.name())
        for i, (name, label) in enumerate(chosen):
            curve = p.curves.get(name)
            if curve is None:
                if budget <= 0:
                    return False
                budget -= 1
                palette = list(self.theme.palette or PALETTE)
                taken = {c.opts["pen"].color().name() for c in p.curves.values()}
                color = next((c for c in palette if c not in taken), palette[len(p.curves) % len(palette)])
                width = (3 if i == 0 else 2) * self.line_scale
                curve = p.plot.plot([], [], pen=pg.mkPen(color, width=width), name=label)
                p.curves[name] = curve
            x, y = tl.series[name].view()
            curve.setData(x, y)
        p.version = tl.version
        return True

    def _add_marker(self, p: Panel, m: Marker) -> None:
        color = MARKER_COLORS.get(m.kind, "#888888")
        style = Qt.PenStyle.DashLine if m.kind == "step" else Qt.PenStyle.SolidLine
        i = self.panels.index(p)
        label = m.label if m.kind != "step" else m.label.split(":")[-1].strip()
        if m.kind == "knob":
            label = label.removeprefix("innodb_")
        line = pg.InfiniteLine(pos=m.t, angle=90, movable=False, pen=pg.mkPen(color, width=2, style=style),
                               label=label if i == 0 or (m.kind == "knob" and i == 2) else None,
                               labelOpts={"position": 0.72 if m.kind == "knob" else 0.92, "color": color,
                                          "fill": self.theme.label_fill,
                                          # knob labels sit left of their line: the newest is at the edge
                                          "anchors": [(1, 0.5), (1, 0.5)] if m.kind == "knob"
                                          else [(0, 0.5), (0, 0.5)]})
        p.plot.addItem(line, ignoreBounds=True)
        p.markers.append(line)

    def _update_readouts(self) -> None:
        tl = self.timeline
        def groups(suffix: str) -> list[str]:  # the groups themselves: not their total, not their hosts
            return [n for n in tl.names("client.", suffix) if not n.startswith("client.total.") and "@" not in n]

        tps = sum(v for n in groups(".tps") if (v := tl.last(n)) is not None)
        qps = sum(v for n in groups(".qps") if (v := tl.last(n)) is not None)
        p95 = [v for n in groups(".lat.p95") if (v := tl.last(n)) is not None]
        self.tps_label.setText(f"TPS {tps:,.0f}")
        self.qps_label.setText(f"QPS {qps:,.0f}")
        self.p95_label.setText(f"p95 {max(p95):.2f} ms" if p95 else "p95 — ms")
        if any(lab.fontMetrics().horizontalAdvance(lab.text()) > lab.minimumWidth() - 8
               for lab in (self.tps_label, self.qps_label, self.p95_label)):
            self._fit_readouts()  # rare: a value wider than any before
