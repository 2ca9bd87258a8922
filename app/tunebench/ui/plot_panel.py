"""One plot of the dashboard and what it shows: its series chosen from the timeline (the six panels, the
top-N waits), its curves, its step and knob markers, its configuration bands, its legend; redrawn a few new
items at a time."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QGraphicsItem

from tunebench.core.interval import is_trx_series
from tunebench.ui.bands import BUSY_TIP, ConfigBand, band_brush, band_names, busy_brush
from tunebench.ui.crosshair import Trace
from tunebench.ui.headroom import MAX_SHARE, Headroom
from tunebench.ui.legend import (
    LABEL_POSITION,
    add_legend,
    fit_legend,
    natural_width,
    place_marker_labels,
    set_column_width,
)
from tunebench.ui.theme import Theme
from tunebench.ui.timeline import Marker, Timeline

MARKER_Z = 20  # marker lines and their labels above the curves (z 0)
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f", "#aec7e8", "#ffbb78"]
# (a live rate change is drawn like a knob's)
MARKER_COLORS = {"step": "#888888", "knob": "#d62728", "rate": "#d62728", "mark": "#2ca02c", "restart": "#9467bd",
                 "config": "#888888",
                 "verdict": "#d62728", "drift": "#ff7f0e", "ramp": "#888888"}
# A knob label on a dark plot: the knob's red lightened to stay readable (4.5:1 on black)
KNOB_LABEL_DARK = "#ff6b6b"
TOP_WAITS = 6
# Every series a panel or dock can show starts with one of these: a replay reads only those from the store.
SHOWN_PREFIXES = ("client.", "server.questions", "server.threads_running", "waits.", "host.", "proc.", "profile.",
                  "table.", "stmt.")  # (stmt.: the Statements dock's)

Select = Callable[[Timeline], list[tuple[str, str]]]


# A series' preferred palette entry by what it is (its last name parts): the single-group run looks as it always
# did (TPS blue, server Questions orange, p99 orange, ...); anything else by a hash of its name.
ROLE_COLORS = {"tps": 0, "qps": 0, "questions": 1, "lat.p95": 0, "lat.p99": 1, "threads": 0, "threads_running": 1,
               "cpu.iowait": 0, "cpu.system": 1, "cpu.user": 2, "client.cpu": 3, "server.cpu": 4}


def preferred_color(name: str, size: int) -> int:
    parts = name.split(".")
    for n in (2, 1):
        role = ".".join(parts[-n:])
        if role in ROLE_COLORS and len(parts) > n:
            owner = parts[1] if parts[0] in ("client", "host", "proc") and len(parts) > n + 1 else ""
            shift = 0 if owner in ("", "main", "local") else zlib.crc32(owner.encode())
            return (ROLE_COLORS[role] + shift) % size
    return zlib.crc32(name.encode()) % size


def series_color(name: str, palette: list[str], taken: set[str]) -> str:
    """A series' colour from its name (live and replay draw it alike, whatever order the series came in): its
    preferred palette entry, or the next one no other curve of the plot has."""
    start = preferred_color(name, len(palette))
    for k in range(len(palette)):
        color = palette[(start + k) % len(palette)]
        if color not in taken:
            return color
    return palette[start]


def short_wait(name: str) -> str:
    """'waits.mutex/buf_pool_mutex.ms' -> 'buf_pool_mutex (mutex)'."""
    inst = name[len("waits."):].rsplit(".", 1)[0]
    kind, _, rest = inst.partition("/")
    return f"{rest} ({kind})" if rest else inst


def font(points: float, bold: bool = False) -> QFont:
    f = QFont()
    f.setPointSizeF(points)
    f.setBold(bold)
    return f


class TopWaits:
    """The busiest instruments over the run so far (by total wait time, else count), plus 'other'.

    With some hysteresis: a newcomer takes the place of the least busy one shown only when it is 25 %
    busier, so two close instruments do not swap places (and legend entries) every second.
    """

    def __init__(self) -> None:
        self.shown: list[str] = []

    def __call__(self, t: Timeline) -> list[tuple[str, str]]:
        suffix = ".ms" if t.names("waits.", ".ms") else ".count"
        names = [n for n in t.names("waits.", suffix) if not n.startswith(("waits.total.", "waits.other."))]
        total = {n: float(t.series[n].view()[1].sum()) for n in names}
        shown = [n for n in self.shown if n in total]
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
        self.shown = sorted(shown, key=lambda n: -total[n])
        out = [(n, short_wait(n)) for n in self.shown]
        if f"waits.other{suffix}" in t.series:
            out.append((f"waits.other{suffix}", "other"))
        return out


def data_sizes(t: Timeline) -> list[tuple[str, str]]:
    """The run's tables on disk (the `tables` probe): their total, and each table when there are few (iiBench's
    16 tables would be 16 lines; their total is the insert benchmark's index-size curve)."""
    tables = [n for n in t.names("table.", ".mb") if n != "table.total.mb"]
    out = [("table.total.mb", "all tables")] if "table.total.mb" in t.series else []
    if len(tables) <= 4:
        out += [(n, n.split(".")[1]) for n in tables]
    return out


def latencies(t: Timeline) -> list[tuple[str, str]]:
    """p95 and p99 of each group; an open-loop group's count from the intended start (queue wait included), its
    service time's beside them, and how late its oldest due transaction is (schedule lag)."""
    out = []
    for n in t.names("client."):
        if is_trx_series(n):
            continue
        group = n.split(".")[1]
        if n.endswith((".svc.lat.p95", ".svc.lat.p99")):
            out.append((n, f"{group} service {n.rsplit('.', 1)[1]}"))
        elif n.endswith((".lat.p95", ".lat.p99")):
            out.append((n, f"{group} {n.rsplit('.', 1)[1]}"))
        elif n.endswith(".lag_ms"):
            out.append((n, f"{group} schedule lag"))
    return out


def panel_specs(waits: Select) -> list[tuple[str, str, Select]]:
    """The dashboard's plots, top to bottom: title, the unit of its values and what it shows."""
    return [
        ("TPS", "TPS", lambda t: [(n, n.split(".")[1]) for n in t.names("client.", ".tps") if not is_trx_series(n)]),
        ("QPS", "QPS", lambda t: [(n, f"{n.split('.')[1]} (client)") for n in t.names("client.", ".qps")]
         + [(n, "server Questions") for n in t.names("server.questions")]),
        ("latency ms", "ms", latencies),
        ("threads", "threads", lambda t: [(n, f"{n.split('.')[1]} client") for n in t.names("client.", ".threads")
                               if not n.startswith("client.total.")]
         + [(n, "server running") for n in t.names("server.threads_running")]
         + [(n, f"{n.split('.')[1]} backlog") for n in t.names("client.", ".backlog")]),
        ("waits ms/s", "ms/s", waits),
        ("CPU %", "%", lambda t: [(n, n.split(".")[-1]) for n in t.names("host.local.cpu.")
                             if n.rsplit(".", 1)[1] in ("user", "system", "iowait")]
         + [(n, f"{n.split('.')[1]} busy") for n in t.names("host.", ".cpu.busy")
            if not n.startswith("host.local.")]
         + [(n, f"{n.split('.')[2]} process" if n.startswith("proc.local.") else
             f"{n.split('.')[2]} on {n.split('.')[1]}") for n in t.names("proc.", ".cpu")
            if n.split(".")[2] in ("server", "client", "mysqld", "sysbench")]),
        ("data MB", "MB", data_sizes),
    ]


MAX_MARKER_LINES = 200  # marker lines per plot; past them a session's markers are drawn as ticks of one item
MARKERS_PER_FRAME = 4  # new marker lines a plot draws with its data in a frame; a burst past them waits for `update`


@dataclass(frozen=True, slots=True)
class _Tick:
    """A marker past MAX_MARKER_LINES: a tick of the panel's VTickGroup, no scene item of its own."""

    t: float
    kind: str

    def value(self) -> float:
        return self.t


@dataclass(frozen=True, slots=True)
class _Span:
    """A tune's trial marker: its band is its item on the plot (no line)."""

    band: ConfigBand
    kind: str = "trial"


class Panel:
    """One plot and the series it shows: `select(timeline)` -> [(series, legend label)], values in `unit`."""

    def __init__(self, title: str, unit: str, plot: pg.PlotItem, select: Select, theme: Theme,
                 labels: tuple[str, ...]):
        self.title = title
        self.unit = unit
        self.plot = plot
        self.select = select
        self.theme = theme
        self.labels = labels  # the marker kinds whose label this panel shows ("config": the bands' names)
        self.line_scale = 1.0
        self.font_scale = 1.0
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.markers: list[Any] = []  # one per timeline marker, in its order (a line, or a _Tick past the cap)
        # past MAX_MARKER_LINES markers (20,000 knob changes of a long session), one item draws the rest as ticks
        tick = pg.mkColor(MARKER_COLORS["knob"])
        tick.setAlpha(110)
        self.ticks = pg.VTickGroup(xvals=[], yrange=[0.0, 0.05], pen=pg.mkPen(tick, width=1))
        self.ticks.setZValue(-5)  # under the curves: a session's thousands of changes never hide its numbers
        self.tick_x: list[float] = []
        self._ticks_dirty = False
        self._labels_dirty = False
        self.text_floor = 6.0  # points: the smallest its title is shrunk to before it is elided (stage: more)
        self.labelled: list[tuple[pg.InfiniteLine, str]] = []  # markers with a label, and their kind
        self.bands: list[ConfigBand] = []  # one per configuration marker
        self.trial_bands: list[ConfigBand] = []  # one per trial marker (a tune's trials, baselines, confirmations)
        self.busy_regions: list[pg.LinearRegionItem] = []  # the busy seconds' spans (Timeline.busy_spans)
        self.version = -1  # the timeline version this panel last brought its items (curves, markers) up to
        self.data_version = -1  # the timeline version its curves' data are cut at
        plot.setLabel("left", title)
        # the title runs along the axis: on a short plot (a bigger font, many plots) it is shrunk to fit, and
        # never runs into its neighbours' titles
        plot.getAxis("left").geometryChanged.connect(self.fit_title)
        plot.showGrid(x=False, y=False)
        self.legend = add_legend(plot)
        plot.setDownsampling(auto=True, mode="peak")
        plot.setClipToView(True)
        plot.getAxis("left").setWidth(70)
        for axis in ("left", "bottom"):
            # an SI prefix change rewrites the label and relayouts every plot: seconds-long stalls under load
            plot.getAxis(axis).enableAutoSIPrefix(False)
        plot.enableAutoRange(axis="y")
        self.headroom = Headroom(self.curves.values)
        plot.addItem(self.headroom)
        plot.addItem(self.ticks, ignoreBounds=True)
        self.view.sigResized.connect(self._on_view_resized)
        self.view.sigXRangeChanged.connect(self._on_x_range_changed)

    @property
    def view(self) -> pg.ViewBox:
        return self.plot.getViewBox()

    @property
    def legend_width(self) -> float:
        """The legend column's width with every name in full."""
        return natural_width(self.legend)

    def set_legend_width(self, width: float) -> None:
        set_column_width(self.legend, width)
        fit_legend(self.legend, self.view)

    def _on_view_resized(self) -> None:
        fit_legend(self.legend, self.view)
        self._update_labels()

    def _on_x_range_changed(self) -> None:
        if self.labelled or (self.bands and "config" in self.labels) or (self.trial_bands and "trial" in self.labels):
            # what overlaps depends on the scale
            self._update_labels()

    def _update_labels(self) -> None:
        """Band names in the top row, then the step and knob labels below them, all within the strip at the top
        that the curves keep clear of (MAX_SHARE of the plot): on a short plot, the rows that do not fit hide."""
        label_font = font(9 * self.font_scale, bold=True)
        limit = MAX_SHARE * self.view.height()
        top = max([b.place_label(label_font) for b in (*self.bands, *self.trial_bands)] + [0.0])
        if top > limit:  # not even the band names fit: the configurations are told by their tints and tooltips
            for b in (*self.bands, *self.trial_bands):
                b.hide_label()
            top = 0.0
        bottom = place_marker_labels(self.view, self.labelled, top + 2 if top else 2.0, limit)
        if self.headroom.set_pixels(bottom):
            self.view.updateAutoRange()

    def traces(self, tl: Timeline) -> list[Trace]:
        """The curves shown, as the hover readout reads them: the timeline's own samples."""
        out = []
        for name, curve in self.curves.items():
            buf = tl.series.get(name)
            if buf is None or not curve.isVisible():
                continue
            x, y = buf.view()
            unit = "waits/s" if name.startswith("waits.") and name.endswith(".count") else self.unit
            out.append(Trace(curve.name() or name, curve.opts["pen"].color(), x, y, unit))
        return out

    def fit_title(self) -> None:
        """The left axis's title at the tick font's size when it fits along the axis, else smaller (down to 6
        pt), and elided past that."""
        from PySide6.QtGui import QFontMetricsF

        ax = self.plot.getAxis("left")
        room = ax.geometry().height() - 4
        if room <= 0:
            return
        want = 9 * self.font_scale
        size = want
        text = self.title
        floor = min(want, self.text_floor)
        while size > floor and QFontMetricsF(font(size)).horizontalAdvance(text) > room:
            size = max(floor, size - 0.5)
        f = font(size)
        metrics = QFontMetricsF(f)
        if metrics.horizontalAdvance(text) > room:
            text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, room)
        if ax.label.font().pointSizeF() != f.pointSizeF() or ax.labelText != text:
            ax.label.setFont(f)
            ax.setLabel(text, color=self.theme.plot_foreground)

    def pen(self, i: int, color: object) -> object:
        return pg.mkPen(color, width=(3 if i == 0 else 2) * self.line_scale)

    def set_appearance(self, theme: Theme, scale: float, line_scale: float) -> None:
        """Theme, font scale and line width onto the axes, legend, curves, bands and marker labels."""
        self.theme, self.font_scale, self.line_scale = theme, scale, line_scale
        fg = pg.mkColor(theme.plot_foreground)
        tick_font = font(9 * scale)
        for axis in ("left", "bottom"):
            ax = self.plot.getAxis(axis)  # (hidden bottom axes too: shown again after stage)
            ax.setPen(pg.mkPen(fg))
            ax.setTextPen(pg.mkPen(fg))
            ax.setTickFont(tick_font)
            ax.label.setFont(tick_font)
            ax.setLabel(ax.labelText, color=theme.plot_foreground)
        self.plot.getAxis("left").setWidth(int(70 * scale))  # room for "25000" at the bigger size
        self.fit_title()
        legend = self.legend
        legend.points = 9 * scale
        size = f"{legend.points:.4g}pt"
        legend.setBrush(pg.mkBrush(theme.plot_background))  # (not drawn: what is behind it, beside the plot)
        legend.setLabelTextColor(fg)
        legend.setLabelTextSize(size)
        for _sample, label in legend.items:  # pyqtgraph keeps the new colour, draws the old: redraw
            label.setText(label.text, color=fg, size=size)
        fit_legend(legend, self.view)
        palette = list(theme.palette or PALETTE)
        taken: set[str] = set()
        for i, (name, curve) in enumerate(self.curves.items()):
            color = series_color(name, palette, taken)
            taken.add(color)
            curve.setPen(self.pen(i, color))
        for line in self.markers:
            if not isinstance(line, _Tick | _Span):
                self._style_marker(line)
        for band in (*self.bands, *self.trial_bands):
            band.set_appearance(theme)
        for region in self.busy_regions:
            region.setBrush(busy_brush(theme))
            region.update()
        self._update_labels()

    def set_line_scale(self, line_scale: float) -> None:
        self.line_scale = line_scale
        for i, curve in enumerate(self.curves.values()):
            curve.setPen(self.pen(i, curve.opts["pen"].color()))

    def _label_color(self, kind: str) -> str:
        """Marker labels in the plot's foreground (a grey step label faded on a projector), knob labels red."""
        if kind in ("knob", "verdict", "rate"):
            return MARKER_COLORS["knob"] if self.theme.name == "light" else KNOB_LABEL_DARK
        if kind == "drift":
            return MARKER_COLORS["drift"]
        return self.theme.plot_foreground

    def _style_marker(self, line: pg.InfiniteLine) -> None:
        """A marker's label in the current appearance (its line keeps its kind's colour)."""
        label = getattr(line, "label", None)  # (pyqtgraph sets it only on lines with a label)
        if label is not None:
            label.fill = pg.mkBrush(self.theme.label_fill)
            label.setColor(self._label_color(getattr(line, "kind", "step")))
            label.setFont(font(9 * self.font_scale, bold=True))
            label.update()

    def reset(self) -> None:
        for c in self.curves.values():
            self.plot.removeItem(c)
        for m in self.markers:
            if not isinstance(m, _Tick | _Span):
                self.plot.removeItem(m)
        self.tick_x.clear()
        self.ticks.setXVals([])
        for b in (*self.bands, *self.trial_bands):
            b.remove()
        self.trial_bands.clear()
        for region in self.busy_regions:
            self.plot.removeItem(region)
        self.busy_regions.clear()
        self.curves.clear()
        self.markers.clear()
        self.labelled.clear()
        self.bands.clear()
        self.headroom.set_pixels(0.0)
        self.version = self.data_version = -1
        self.legend.clear()
        fit_legend(self.legend, self.view)
        # an empty plot shows no scale of the timeline it showed before (back to live from a replay)
        self.plot.setYRange(0, 1, padding=0)
        self.plot.enableAutoRange(axis="y")

    def update(self, tl: Timeline, budget: int = 2) -> bool:
        """Bring the panel up to date; False when it used its budget of new items (curves, markers: each
        costs milliseconds of legend and scene layout) and wants the next tick too."""
        if self.version == tl.version:
            return True
        shown = list(self.curves)
        done = self._sync(tl, budget)
        if list(self.curves) != shown:  # the legend's entries changed: its rows afresh
            fit_legend(self.legend, self.view)
        return done

    def update_data(self, tl: Timeline, budget: int = MARKERS_PER_FRAME) -> None:
        """The curves it has, its markers (up to `budget` new ones) and its last band's end, at the timeline's
        present cut-off: what the dashboard does for every plot in one frame. New curves (and a burst of
        markers past the budget) wait for `update`."""
        if self.data_version == tl.version:
            return
        try:
            self._sync_markers(tl, budget)
        finally:
            self._flush()
        self._set_data(tl)

    def _set_busy(self, tl: Timeline) -> None:
        """The busy seconds (another process took the machine: every verdict leaves them out) as hatched spans
        behind the curves, on every plot at the same x and cut-off."""
        spans = tl.busy_spans()
        while len(self.busy_regions) > len(spans):
            self.plot.removeItem(self.busy_regions.pop())
        for i, span in enumerate(spans):
            if i == len(self.busy_regions):
                region = pg.LinearRegionItem(span, movable=False, brush=busy_brush(self.theme), pen=pg.mkPen(None))
                region.setZValue(-90)  # over the configuration bands, under the curves and the markers
                region.setToolTip(BUSY_TIP)
                self.plot.addItem(region, ignoreBounds=True)
                self.busy_regions.append(region)
            elif self.busy_regions[i].getRegion() != span:
                self.busy_regions[i].setRegion(span)

    def _set_data(self, tl: Timeline) -> None:
        self._set_busy(tl)
        if self.bands:  # the newest configuration lasts up to the newest data
            self.bands[-1].set_end(max(tl.x_max, self.bands[-1].start))
            self._on_x_range_changed()
        for name, curve in self.curves.items():
            buf = tl.series.get(name)
            if buf is not None:
                curve.setData(*buf.view())
        self.data_version = tl.version

    def _flush(self) -> None:
        """Once per pass, not once per marker (quadratic with thousands of them)."""
        if self._ticks_dirty:
            self._ticks_dirty = False
            self.ticks.setXVals(list(self.tick_x))
        if self._labels_dirty:
            self._labels_dirty = False
            self._update_labels()

    def _sync(self, tl: Timeline, budget: int) -> bool:
        try:
            return self._sync_items(tl, budget)
        finally:
            self._flush()

    def _sync_markers(self, tl: Timeline, budget: int) -> int:
        """The timeline's markers onto the plot, at most `budget` new lines; what is left of the budget (-1:
        it ran out before the last marker)."""
        gone: set[int] = set()
        while len(self.markers) > len(tl.markers):  # a replay sought backwards
            line = self.markers.pop()
            if isinstance(line, _Tick):
                self.tick_x.pop()
                self._ticks_dirty = True
                continue
            if isinstance(line, _Span):
                line.band.remove()
                self.trial_bands.remove(line.band)
                self._labels_dirty = True
                continue
            gone.add(id(line))
            self.plot.removeItem(line)
            knob = getattr(line, "merged_into", None)
            if knob is not None:  # its knob's label without the verdict again
                knob.label.setFormat(knob.base_text)
                knob.label_forms = None
            if getattr(line, "kind", "") == "config":
                self.bands.pop().remove()
                self._name_bands()
        if gone:
            self.labelled = [(ln, k) for ln, k in self.labelled if id(ln) not in gone]
            self._labels_dirty = True
        # a session with more markers than a plot can label (a replay knows them all at once): its knob changes
        # are ticks from the first, not 200 lines then ticks
        dense = len(getattr(tl, "all_markers", None) or tl.markers) > MAX_MARKER_LINES
        while len(self.markers) < len(tl.markers):
            m = tl.markers[len(self.markers)]
            if (m.kind in ("knob", "rate") and dense) or (
                    m.kind not in ("config", "trial") and len(self.markers) - len(self.tick_x) >= MAX_MARKER_LINES):
                self.markers.append(_Tick(m.t, m.kind))  # (costs nothing: no budget)
                self.tick_x.append(m.t)
                self._ticks_dirty = True
                continue
            if budget <= 0:
                return -1
            self._add_marker(m)
            budget -= 1
            if m.kind == "config":
                # the newest configuration lasts up to the newest data now: a replay's last band came in a later
                # pass than its data, whose end was never set again (issue 46 item 9: no band, no label)
                self.bands[-1].set_end(max(tl.x_max, self.bands[-1].start))
                self._on_x_range_changed()
        return budget

    def _sync_items(self, tl: Timeline, budget: int) -> bool:
        budget = self._sync_markers(tl, budget)
        if budget < 0:
            return False
        chosen = self.select(tl)
        keep = {name for name, _ in chosen}
        for dropped in [n for n in self.curves if n not in keep]:  # e.g. a wait that left the top-N
            if budget <= 0:
                return False
            budget -= 1
            self.plot.removeItem(self.curves.pop(dropped))  # (takes it out of the legend too)
        for i, (name, label) in enumerate(chosen):
            curve = self.curves.get(name)
            if curve is None:
                if budget <= 0:
                    return False
                budget -= 1
                palette = list(self.theme.palette or PALETTE)
                taken = {c.opts["pen"].color().name() for c in self.curves.values()}
                color = series_color(name, palette, taken)
                curve = self.plot.plot([], [], pen=self.pen(i, color), name=label)
                # drawn once per change of data or range, not again for every strip the hover line uncovers
                curve.curve.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
                self.curves[name] = curve
                curve.setData(*tl.series[name].view())  # at the cut-off the others show (they are set below)
        if self.data_version != tl.version:
            self._set_data(tl)
        self.version = tl.version
        return True

    def _add_marker(self, m: Marker) -> None:
        if m.kind == "config":
            self._add_band(m)
            return
        if m.kind == "trial":
            self._add_trial_band(m)
            return
        color = MARKER_COLORS.get(m.kind, "#888888")
        style = {"step": Qt.PenStyle.DashLine, "ramp": Qt.PenStyle.DotLine}.get(m.kind, Qt.PenStyle.SolidLine)
        label = m.label if m.kind != "step" else m.label.split(":")[-1].strip()
        if m.kind == "knob":
            label = label.removeprefix("innodb_")
        shown = m.kind in self.labels
        knob = self._knob_line_at(m.t) if m.kind == "verdict" and shown else None
        if knob is not None:
            # the verdict joins its change's label ("flush_log_at_trx_commit = 2 · 1.15x TPS (CI 1.05-1.25)"):
            # one label a change, in the row at the top, clear of the curves
            knob.base_text = getattr(knob, "base_text", knob.label.format)
            knob.label.setFormat(f"{knob.base_text} · {label}")
            # shorter forms where the plot has no room for it (a projector): the verdict without its interval, then
            # the change alone (the card, the knob panel and the Events say it whole)
            knob.label_forms = [f"{knob.base_text} · {label}", f"{knob.base_text} · {label.split(' (')[0]}",
                                knob.base_text]
            line = pg.InfiniteLine(pos=m.t, angle=90, movable=False, pen=pg.mkPen(None))
            line.kind, line.merged_into = m.kind, knob
            self.plot.addItem(line, ignoreBounds=True)
            self.markers.append(line)
            self._labels_dirty = True
            return
        # a verdict without its change's line: text at the change, in the top row like a knob label
        pen = pg.mkPen(None) if m.kind == "verdict" else pg.mkPen(color, width=2, style=style)
        line = pg.InfiniteLine(pos=m.t, angle=90, movable=False, pen=pen,
                               label=label if shown else None,
                               labelOpts={"position": LABEL_POSITION.get(m.kind, 0.92), "color":
                                          self._label_color(m.kind), "fill": self.theme.label_fill,
                                          # knob labels and verdicts sit left of their line: the newest
                                          # change is at the right edge (right of it, a verdict was cut off)
                                          "anchors": [(1, 0.5), (1, 0.5)]
                                          if m.kind in ("knob", "verdict", "rate")
                                          else [(0, 0.5), (0, 0.5)]})
        line.kind = m.kind
        # over the curves: where a label cannot keep clear of them (a verdict near the bottom, a short plot), its
        # filled box covers the curve rather than the curve crossing its text
        line.setZValue(MARKER_Z)
        self._style_marker(line)
        self.plot.addItem(line, ignoreBounds=True)
        self.markers.append(line)
        if shown:
            self.labelled.append((line, m.kind if m.kind in ("knob", "verdict", "rate") else "step"))
            self._labels_dirty = True

    def _knob_line_at(self, t: float) -> pg.InfiniteLine | None:
        """The labelled knob-change line at `t` (a verdict's `at`), if this plot has one."""
        return next((ln for ln, kind in reversed(self.labelled) if kind == "knob" and abs(ln.value() - t) < 0.5),
                    None)

    def _name_bands(self) -> None:
        names = band_names([b.name.replace("innodb_", "") for b in self.bands])  # (as knob labels drop it)
        for b, n in zip(self.bands, names, strict=True):
            b.names = n

    def _add_trial_band(self, m: Marker) -> None:
        """A tune's trial, baseline or confirmation segment: its band over its own seconds, the baselines and
        confirmation A in one tint, the trials and confirmation B in the other; named on a labelled plot."""
        short = m.short or m.label
        tone = 1 if short.startswith("trial") or short == "confirm B" else 0
        band = ConfigBand(self.plot, m.t, m.label, tone, self.theme, "trial" in self.labels)
        band.set_end(m.end if m.end is not None else m.t)
        band.names = (short, short.removeprefix("trial ").removeprefix("confirm ").replace("baseline", "base"))
        band.set_appearance(self.theme)
        self.trial_bands.append(band)
        self.markers.append(_Span(band))
        self._labels_dirty = True

    def _add_band(self, m: Marker) -> None:
        """A configuration: its band from here on (the one before ends here), its name on a labelled plot,
        and an edge line so that `markers` stays one item per timeline marker."""
        if self.bands:
            self.bands[-1].set_end(m.t)
        band = ConfigBand(self.plot, m.t, m.label, len(self.bands), self.theme, "config" in self.labels)
        band.set_appearance(self.theme)
        self.bands.append(band)
        self._name_bands()
        edge = band_brush(self.theme, band.k).color()
        edge.setAlpha(160)
        line = pg.InfiniteLine(pos=m.t, angle=90, movable=False, pen=pg.mkPen(edge, width=1))
        line.kind = "config"
        self.plot.addItem(line, ignoreBounds=True)
        self.markers.append(line)
        self._update_labels()
