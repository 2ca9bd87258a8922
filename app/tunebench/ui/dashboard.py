"""The live dashboard: stacked plots on one linked time axis, big readouts, step and knob markers.

Data go into a Timeline as they arrive; a timer redraws what changed (setData with peak downsampling and
clip-to-view), so a 1024-thread run with every probe never floods the event loop.

Every plot shows one x range at every moment (live, replay, stage): while the view follows the run, the
window is decided once per tick from the timeline and set on every plot, with their x links blocked (a
link would set each plot again from each of the others). The redraw is spread over the ticks, one panel per
tick (its new markers and its curves), so no single event-loop turn holds the whole redraw: live, a round
takes about a second, the rate the data come at, so the plots show data within a second of each other.
A replay's head moves faster (ten seconds a second at 10x): there every plot's data, its new markers and
the readouts are set in one frame at every move of the head (`redraw_data`), so all of them end at the
head; only new curves and a burst of markers wait for their panel's tick.
Any manual pan or zoom stops following and links the plots again, so they pan and zoom together.

Every plot keeps the same room for its legend at its right (the widest legend's, within a share of the
width), so one second is at the same screen x on every plot: the hover line runs straight through them.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from tunebench.ui.crosshair import Crosshair, HoverPlot, seconds
from tunebench.ui.plot_panel import PALETTE, SHOWN_PREFIXES, TOP_WAITS, Panel, TopWaits, font, panel_specs
from tunebench.ui.readouts import READOUT_MIN_POINTS, ReadoutBar
from tunebench.ui.theme import Theme
from tunebench.ui.timeline import Timeline

__all__ = ["FOLLOW_STEP", "PALETTE", "SHOWN_PREFIXES", "TOP_WAITS", "Dashboard"]

FOLLOW_STEP = 10  # seconds the followed window moves at a time
LEGEND_SHARE = 0.3  # at most this share of the plots' width goes to the legends
LEGEND_MIN = 90.0  # pixels (times the font scale): below this the names are elided rather than the plots
PLOT_MIN_HEIGHT = 90  # pixels per plot (times the font scale): room for three of its axis's ticks and its title


class PlotStack(pg.GraphicsView):
    """pg.GraphicsLayoutWidget without its mkQApp() call: that call connects QStyleHints.colorSchemeChanged
    with a UniqueConnection, which PySide6 cannot make to a Python function and warns about ("unique
    connections require a pointer to member function") for every widget; the app exists by now anyway."""

    def __init__(self) -> None:
        super().__init__()
        self.ci = pg.GraphicsLayout()
        self.setCentralItem(self.ci)


class Dashboard(QWidget):
    def __init__(self, timeline: Timeline, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.timeline = timeline
        self.theme = theme
        self.follow_seconds = 120.0
        self.text_floor: float | None = None  # set_text_floor's (stage), None: the everyday floors
        self.line_scale = 1.0
        self.font_scale = 1.0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.bar = bar = ReadoutBar(self._set_following)
        self.tps_label, self.qps_label, self.p95_label = bar.tps_label, bar.qps_label, bar.p95_label
        self.state_label, self.badge, self.follow_box = bar.state_label, bar.badge, bar.follow_box
        layout.addWidget(bar)
        # stage mode during a tune: the best so far, large, under the readouts (hidden everywhere else)
        self.tune_readout = QLabel("")
        self.tune_readout.setObjectName("tune-readout")
        self.tune_readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.tune_readout.hide()
        layout.addWidget(self.tune_readout)
        self.graphics = PlotStack()
        layout.addWidget(self.graphics, 1)
        # which plots: the user's choice (View > Plots; None: all), stage's own list while on stage; of those,
        # as many as keep PLOT_MIN_HEIGHT each (fewer plots, never all of them squeezed), the rest named here
        self.chosen: list[str] | None = None
        self._stage_titles: list[str] | None = None
        self._arranged: list[str] = []
        self.room_note = QLabel("")
        self.room_note.setObjectName("plots-room-note")
        self.room_note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.room_note.hide()
        layout.addWidget(self.room_note)
        # a demo plan's countdown and caption (ui/demo.py), while one runs
        self.demo_line = QLabel("")
        self.demo_line.setObjectName("demo-line")
        self.demo_line.setWordWrap(True)
        self.demo_line.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.demo_line.hide()
        layout.addWidget(self.demo_line)
        # stage: the band under the plots where its cards sit (ui/stage_help.py), so none covers a plot's data
        self.card_strip = QWidget()
        self.card_strip.setObjectName("stage-card-strip")
        self.card_strip.hide()
        layout.addWidget(self.card_strip)
        self.graphics.installEventFilter(self)
        self.panels: list[Panel] = []
        self._waits = TopWaits()
        self._leader: pg.ViewBox | None = None
        self._x_window: tuple[float, float] | None = None  # the x range every plot shows while following
        self._legend_width = -1.0
        self.crosshair = Crosshair(self.graphics, self._hover_plots, theme, self._hover_title)
        self._build_plots()
        self._arranged = [p.title for p in self.panels]
        # One panel per tick, a full round about every second (data arrive every second, every 0.25 s at the
        # fastest probe rate): no single event-loop turn holds the whole redraw.
        self._next_panel = 0
        self.timer = QTimer(self)
        self.timer.setInterval(160)  # 6 panels: one full round a second, the rate the data come at
        self.timer.timeout.connect(self._update_step)
        self.timer.start()
        self.set_appearance(theme, 1.0)

    @property
    def _readout_size(self) -> float:
        """The readouts' nominal size in points (drawn smaller when their bar is too narrow)."""
        return self.bar.readout_size

    def _build_plots(self) -> None:
        specs = panel_specs(self._waits)
        first: pg.PlotItem | None = None
        for i, (title, unit, select) in enumerate(specs):
            plot = self.graphics.ci.addPlot(row=i, col=0)
            # marker labels, configuration names and verdicts on the first plot, and the knob's on the latency
            # plot too
            labels = ("config", "trial", "step", "knob", "rate", "mark", "restart", "verdict", "drift", "ramp") \
                if i == 0 else ("knob", "rate") if title == "latency ms" else ()
            panel = Panel(title, unit, plot, select, self.theme, labels)
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            if i < len(specs) - 1:
                plot.hideAxis("bottom")  # one time axis for all: five fewer axes to regenerate on every scroll
            else:
                plot.setLabel("bottom", "seconds")
            panel.view.sigRangeChangedManually.connect(self._on_manual_range)
            panel.view.sigXRangeChanged.connect(self._on_x_range_changed)
            panel.view.sigResized.connect(self._on_x_range_changed)
            self.panels.append(panel)
        self._set_following(True)

    def set_appearance(self, theme: Theme, scale: float) -> None:
        """Theme and font scale, both, onto everything the dashboard draws: set from the two inputs alone,
        never from what an earlier call left, so any order of changes ends as the last (theme, scale) says."""
        self.theme, self.font_scale = theme, scale
        self.graphics.setBackground(theme.plot_background)
        for p in self.panels:
            p.set_appearance(theme, scale, self.line_scale)
        self.bar.set_scale(scale)
        self.arrange()  # the plots' minimum height grows with their text
        self._fit_legends(force=True)
        self.crosshair.set_appearance(theme, scale)

    def show_demo_line(self, text: str) -> None:
        """The demo plan's line (empty: none), at the readouts' colour, never under the stage's floor."""
        f = font(max(11.0, (self.text_floor or 0.0) * 1.2) * (1.0 if self.text_floor else self.font_scale),
                 bold=True)
        self.demo_line.setFont(f)
        self.demo_line.setText(text)
        self.demo_line.setVisible(bool(text))

    def set_text_floor(self, points: float | None) -> None:
        """The smallest size a text that shrinks to fit may take (stage: its readable-from-the-back minimum), in
        points; None: the everyday floors. Below it the text is elided, whole in its tooltip."""
        self.text_floor = points
        self.bar.min_points = READOUT_MIN_POINTS if points is None else points
        for p in self.panels:
            p.text_floor = 6.0 if points is None else points
            p.fit_title()
        self.bar.fit()

    def show_tune_readout(self, text: str | None) -> None:
        """The stage's tune line ("best so far: 1.31x (innodb_io_capacity=4000)"), or none (None)."""
        label = self.tune_readout
        if text is None:
            label.hide()
            label.setText("")
            label.setStyleSheet("")
            return
        points = 0.8 * self._readout_size
        room = self.width() - 16
        floor = min(points, max(8.0, self.text_floor or 0.0))
        while points > floor and QFontMetrics(font(points, bold=True)).horizontalAdvance(text) > room:
            points = max(floor, points * 0.9)  # a long list of knobs: smaller, never cut at the window's edge
        if QFontMetrics(font(points, bold=True)).horizontalAdvance(text) > room:
            label.setToolTip(text)
            text = QFontMetrics(font(points, bold=True)).elidedText(text, Qt.TextElideMode.ElideRight, room)
        label.setFont(font(points, bold=True))
        label.setStyleSheet(f"color: {self.theme.palette[0] if self.theme.palette else self.theme.plot_foreground};")
        label.setText(text)
        label.show()

    # -- legends and the hover readout --
    def _shown_panels(self) -> list[Panel]:
        return [p for p in self.panels if p.plot.isVisible() and p.plot.scene() is not None]

    def _fit_legends(self, force: bool = False) -> None:
        """One legend width for every plot: the widest legend's full names, within LEGEND_SHARE of the width."""
        shown = self._shown_panels()
        want = max([p.legend_width for p in shown] + [0.0])
        cap = max(LEGEND_MIN * self.font_scale, LEGEND_SHARE * self.graphics.width())
        width = min(want, cap)
        if force or width != self._legend_width:
            self._legend_width = width
            for p in self.panels:
                p.set_legend_width(width)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_legends()

    def _hover_title(self, x: float) -> str:
        """The hovered second, and in a sweep the configuration it belongs to (in a tune, the trial)."""
        top = self.panels[0]
        trial = next((b.names[0] for b in reversed(top.trial_bands) if b.start <= x <= b.end), None)
        band = next((b.names[1] for b in reversed(top.bands) if b.start <= x <= b.end), trial)
        return f"{seconds(x)} · {band}" if band is not None else seconds(x)

    def _hover_plots(self) -> list[HoverPlot]:
        return [(p.view, p.traces(self.timeline)) for p in self._shown_panels()]

    def _on_x_range_changed(self) -> None:
        self.crosshair.refresh()  # the line stays at its second as the plots scroll or zoom under it

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
        self.bar.fit()

    def show_only(self, titles: list[str] | None, line_scale: float = 1.0) -> None:
        """Stage mode: only the named plots (None: the user's choice again), lines `line_scale` times thicker."""
        self._stage_titles = None if titles is None else list(titles)
        self.line_scale = line_scale
        for p in self.panels:
            p.set_line_scale(line_scale)
        self.arrange(force=True)
        self.crosshair.hide()

    def choose(self, titles: list[str] | None) -> None:
        """The plots the user wants (View > Plots), in the dashboard's order; None: every plot."""
        known = [p.title for p in self.panels]
        self.chosen = None if titles is None else [t for t in known if t in titles]
        self.arrange()

    def plots_that_fit(self) -> int:
        """How many plots the stack holds at PLOT_MIN_HEIGHT each (times the font scale: the axes' text grows)."""
        height = self.graphics.height()
        if not self.graphics.isVisible() or height <= 0:
            return len(self.panels)
        return max(1, int(height // (PLOT_MIN_HEIGHT * max(1.0, self.font_scale))))

    def arrange(self, force: bool = False) -> None:
        """The wanted plots (stage's, else the user's, else all) that fit, top to bottom, one time axis under
        the last; the note names those left out for room."""
        wanted = self._stage_titles if self._stage_titles is not None else self.chosen
        titles = [p.title for p in self.panels if wanted is None or p.title in wanted]
        # stage's list is the speaker's own (three by default): all of it, whatever a card strip takes a while
        fit = len(titles) if self._stage_titles is not None else self.plots_that_fit()
        shown = [p for p in self.panels if p.title in titles[:fit]]
        left_out = titles[fit:]
        note = "" if not left_out or self._stage_titles is not None else \
            f"{', '.join(left_out)}: no room for {'it' if len(left_out) == 1 else 'them'} here " \
            "(a taller window shows more; View > Plots chooses which)"
        if note != self.room_note.text():
            self.room_note.setText(note)
            self.room_note.setToolTip(note)
            self.room_note.setVisible(bool(note))
        if not force and [p.title for p in shown] == self._arranged:
            return
        self._arranged = [p.title for p in shown]
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
        self._fit_legends(force=True)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.graphics and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self.arrange()  # (only when the number that fits changed)
        return False

    def reset(self) -> None:
        self.crosshair.hide()
        for p in self.panels:
            p.reset()
        self._next_panel = 0
        self._x_window = None
        self._waits.shown = []
        self.bar.forget_widest()

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

    def redraw(self) -> None:
        """Everything at once (screenshots, tests); the timer spreads the same work over its ticks."""
        self._follow()
        for p in self.panels:
            while not p.update(self.timeline, budget=1000):
                pass
        self._fit_legends()
        self.bar.update_from(self.timeline)
        self.crosshair.refresh()

    def redraw_data(self) -> None:
        """Every plot's data, its new markers (a few) and the readouts cut at the timeline's present state, in
        this one frame: a replay's play head moves ten seconds a second at 10x, and a plot redrawn a round
        later showed another moment than its neighbours (and than the sweep's results grid). Called on every
        move of the head and every tick of a replay."""
        tl = self.timeline
        self._follow()
        if all(p.data_version == tl.version for p in self.panels):
            return
        for p in self.panels:
            p.update_data(tl)
        self.bar.update_from(tl)

    def _update_step(self) -> None:
        replay = self.timeline.head is not None
        if replay:
            self.redraw_data()
        else:
            self._follow()
        p = self.panels[self._next_panel]
        if not replay and self._next_panel == 0 and p.version != self.timeline.version:
            self.bar.update_from(self.timeline)
        if p.update(self.timeline):
            self._next_panel = (self._next_panel + 1) % len(self.panels)
            if self._next_panel == 0:  # a round done: legends as wide as their new entries need, new values
                self._fit_legends()
                self.crosshair.refresh()
