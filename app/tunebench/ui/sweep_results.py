"""The sweep results view: the configuration x threads grid of TPS and p95 filling in as steps end, the best point
of each configuration, the best-to-best and ratio-to-baseline tables, each step's per-operation efficiency, the
progress with the time left by the plan, and the differences within the steps' own noise marked. It draws a
run/sweep_progress.SweepProgress.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.efficiency import LABELS, METRICS, OPTIONAL, fmt
from tunebench.core.interval import Event, Interval
from tunebench.core.results import PHASE_HEADER, ci_text, number, phase_cells
from tunebench.core.sweep import Plan, duration_text
from tunebench.core.verdict import event_verdict
from tunebench.run.records import RunOutcome, StepResult
from tunebench.run.sweep_progress import Cell, SweepProgress
from tunebench.ui.knee_plot import KneePlot
from tunebench.ui.theme import THEMES

NOISE_MARK = "≈"  # after a ratio whose difference from 1 is smaller than the steps' own spread
NOISE_HELP = (f"{NOISE_MARK} within noise: the difference is smaller than the steps' own spread (CV, repeats); "
              "once both steps have ended, their A/B verdict's 95 % CI holds 1")
SHADE = QColor(46, 160, 67)  # TPS shading: this green, more opaque the nearer the sweep's best TPS


def stacked(label: str) -> str:
    """A configuration's label one knob a line: the tables stay narrow enough to sit beside each other."""
    return label.replace(", ", "\n")


def knee_leader(knee: dict[str, Any] | None, so_far: str) -> str:
    """A sweep over rates leads with its knees (the most TPS is only the highest rate asked); "" otherwise."""
    if not knee:
        return ""
    slo = knee.get("slo_p99_ms")
    if not slo:
        return f"p99 against rate{so_far}: see the p99 vs rate tab (no SLO given: --slo-p99 marks each knee)"
    parts = [f"<b>{html.escape(c['label'] or 'this run')}</b> "
             + (f"{number(float(c['knee']), 0)}/s" if c["knee"] is not None else "none") for c in knee["configs"]]
    return f"knee (p99 &lt;= {slo:g} ms){so_far}: " + "; ".join(parts)


def cell_tip(label: str, column: str, c: Cell) -> str:
    """What a grid cell's figures are over: the seconds, those left out and why, a live flip, errors."""
    lines = [f"{label} at {column}: {number(c.tps)} TPS, p95 {number(c.p95_ms, 3)} ms, CV {number(c.cv, 3)}"]
    if c.seconds is not None:
        lines.append(f"over {c.seconds} s" + (f" ({c.ramp} s ramp-up below the steady level left out) ⋯"
                                               if c.ramp else ""))
    if c.flipped:
        lines.append(f"⚑ a knob was changed live {c.flipped} time(s) during the step: its figures mix the values "
                     "(the Events and the report say which)")
    if c.errors:
        lines.append(f"! {c.errors:,.0f} errors during the step" + (f": {c.error_codes}" if c.error_codes else ""))
    return "\n".join(lines)


class SweepResultsView(QWidget):
    """Takes its models: the live sweep's, fed the run's plan, steps and events, and the replayed session's,
    shown while a replay is (the live one goes on filling in meanwhile)."""

    def __init__(self, live: SweepProgress, replayed: SweepProgress, parent: QWidget | None = None):
        super().__init__(parent)
        self.live, self.replayed = live, replayed
        self.model = live  # the one shown
        self.title = QLabel()
        self.title.setObjectName("sweep-title")
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.eta = QLabel()
        self.eta.setObjectName("sweep-eta")
        head = QHBoxLayout()
        head.addWidget(self.title, 2)
        head.addWidget(self.bar, 2)
        head.addWidget(self.eta, 1)
        self.grid = self._table()
        self.best = self._table()
        self.ratios = self._table()
        self.costs = self._table()
        # one at a time: beside the docks, under the plots, two of them side by side were cut off
        self.tables = QTabWidget()
        self.tables.addTab(self.grid, "TPS · p95 by threads")
        self.tables.addTab(self.best, "Best-to-best")
        self.tables.addTab(self.ratios, "Ratio to baseline")
        self.tables.addTab(self.costs, "Efficiency")
        self.tables.setTabToolTip(self.tables.indexOf(self.costs),
                                  "What one transaction or query cost, per step: server CPU, context switches, "
                                  "disk, rows read, fsyncs and redo per commit (needs the proc/cpu/status probes)")
        # a sweep over rates (open loop): each configuration's p99 against the rate, and its knee under the SLO
        self.knee = KneePlot(THEMES["light"])
        self.tables.addTab(self.knee, "p99 vs rate")
        self.tables.setTabToolTip(self.knee_tab, "Open loop: each configuration's p99 from the intended start at each "
                                                 "rate, against the rate it achieved; a star at its knee under the "
                                                 "SLO (--slo-p99), hollow points where the rate was not served")
        self.tables.setTabVisible(self.knee_tab, False)
        # a phase plan (iiBench's l.i0, l.x, l.i1, qr100 ...): its steps are phases, not a concurrency curve
        self.phase_table = self._table()
        # first: what a phase plan shows first (the configuration x threads tabs are hidden for one)
        self.tables.insertTab(0, self.phase_table, "Phases")
        self.tables.setTabToolTip(self.phase_tab, "Each phase as a step with its own summary: rows/s of an insert "
                                                  "group, queries/s of a query group, p99 and seconds; an action "
                                                  "phase (the index build) with how long it took")
        self.tables.setTabVisible(self.phase_tab, False)
        self.tables.setCurrentIndex(self.tables.indexOf(self.grid))
        self.leader = QLabel()  # the best-to-best's first line, in sight whatever the tab
        self.leader.setObjectName("sweep-leader")
        # a server axis: what else differed between the servers (core/confdiff.py), unfair differences in words
        self.differed = QLabel()
        self.differed.setObjectName("sweep-differed")
        self.legend = QLabel(f"★ best point of a configuration   {NOISE_HELP}")
        self.legend.setObjectName("sweep-legend")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        # Lines that wrap: one line each, the legend and the leader asked the window for 1,150 px and the
        # window grew from 1,600 to 1,915 px as the sweep started (issue 30 item 14)
        for label in (self.title, self.eta, self.leader, self.legend, self.differed):
            label.setWordWrap(True)
        layout.addLayout(head)
        layout.addWidget(self.leader)
        layout.addWidget(self.differed)
        layout.addWidget(self.tables, 1)
        layout.addWidget(self.legend)
        self.clock = QTimer(self)  # the time left moves between steps too
        self.clock.setInterval(1000)
        self.clock.timeout.connect(self._update_progress)
        self._update_all()

    @property
    def phase_tab(self) -> int:
        return self.tables.indexOf(self.phase_table)

    @property
    def knee_tab(self) -> int:
        return self.tables.indexOf(self.knee)

    def sizeHint(self) -> QSize:
        # room for the head, about five two-line configurations and the legend: the plots keep the rest
        return QSize(900, self.fontMetrics().height() * 19)

    def reveal(self) -> None:
        """Show the dock this view is in, at least as tall as its size hint."""
        dock = self.parentWidget()
        if not isinstance(dock, QDockWidget):
            return
        dock.show()
        want = self.sizeHint().height()
        if dock.height() < want:
            # QMainWindow.resizeDocks leaves a bottom dock the layout made thin as it is: ask for the height
            # through the minimum, then let go of it (the user can drag the splitter back)
            dock.setMinimumHeight(want)
            QTimer.singleShot(0, lambda: dock.setMinimumHeight(0))

    @staticmethod
    def _table() -> QTableWidget:
        t = QTableWidget()
        t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        t.verticalHeader().setVisible(False)
        t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        t.setWordWrap(True)
        return t

    # -- input: the run's records --
    def start(self, plan: Plan) -> None:
        self.live.start(plan)
        self.clock.start()
        self._update_live()

    def add_step(self, result: StepResult) -> None:
        if self.live.plan is not None:
            self.live.add_step(result)
            self._update_live()

    def add_interval(self, iv: Interval) -> None:
        self.live.add_interval(iv)

    def add_samples(self, t: float, values: Any) -> None:
        self.live.add_samples(t, values)

    def add_event(self, ev: Event) -> None:
        self.live.add_event(ev)
        if ev.kind == "server" and self.model is self.live:
            self._update_differed()
        if ev.kind in ("step_start", "step_end") and self.model is self.live:
            self._update_progress()
            self._update_grid()  # the cell being measured
            self._update_phases()  # the phase being measured

    def run_finished(self, outcome: RunOutcome) -> None:
        self.clock.stop()
        self.live.finish(outcome.details)
        self._update_live()

    def clear(self) -> None:
        self.clock.stop()
        self.live.clear()
        self._update_live()

    def _update_live(self) -> None:
        if self.model is self.live:
            self._update_all()

    # -- a recorded session, replayed --
    def show_session(self, session: dict[str, Any]) -> bool:
        """A recorded session's sweep, whole; False (and the view empty) when it is not a sweep."""
        shown = self.replayed.show_session(session)
        self.model = self.replayed
        self._update_all()
        return shown

    def replay_to(self, x: float) -> None:
        """The replay's head moved to `x` seconds from the session's start: the steps ended by then."""
        if self.model is self.replayed and self.replayed.active:
            if self.replayed.seek(x):
                self._update_all()
            else:  # the same steps: only the time elapsed moved (the tables are rebuilt only when a step ends)
                self._update_progress()

    def show_live(self) -> None:
        self.model = self.live
        self._update_all()

    # -- drawing --
    def _update_all(self) -> None:
        self._update_differed()
        self._update_progress()
        self._update_grid()
        self._update_best()
        self._update_ratios()
        self._update_costs()
        self._update_knee()
        self._update_phases()

    def _update_differed(self) -> None:
        config = self.model.differed()
        if config is None:
            self.differed.setText("")
            self.differed.setToolTip("")
            self.differed.hide()
            return
        # one line (four warnings as lines overprinted the table in a short dock at 1280x720); the lines on hover
        self.differed.setText(config.short())
        self.differed.setToolTip("\n".join(config.lines(limit=30)))
        self.differed.show()

    def _update_phases(self) -> None:
        phased = self.model.phased
        was = self.tables.isTabVisible(self.phase_tab)
        self.tables.setTabVisible(self.phase_tab, phased)
        for table in (self.grid, self.best, self.ratios):  # the configuration x threads tables say nothing of one
            self.tables.setTabVisible(self.tables.indexOf(table), not phased)
        self.legend.setVisible(not phased)
        if phased != was:  # the first tab of what is shown now (hiding the current one picked another)
            self.tables.setCurrentIndex(self.phase_tab if phased else self.tables.indexOf(self.grid))
        if not phased:
            return
        plan = self.model.plan
        assert plan is not None
        rows = self.model.phases()
        several = len(plan.configs) > 1  # then each row says its configuration (a phase plan with axes)
        labels = {c.idx: c.label() for c in plan.configs}
        t = self.phase_table
        t.clear()
        heads = [*(["configuration"] if several else []), *PHASE_HEADER]
        t.setColumnCount(len(heads))
        t.setHorizontalHeaderLabels(heads)
        t.setRowCount(len(rows))
        for i, r in enumerate(rows):
            if "state" in r:  # not ended yet
                cells = [r["phase"], "", "", "", "", "", "measuring…" if r["state"] == "running" else ""]
            else:
                cells = phase_cells(r)
            if several:
                config = (r["step"] - 1) // plan.spec.steps  # steps are numbered configuration by configuration
                cells = [stacked(labels.get(config, f"configuration {config + 1}")), *cells]
            for j, text in enumerate(cells):
                right = heads[j] in ("threads", "rows/s", "queries/s", "p99 ms")
                t.setItem(i, j, self._number_item(text, right, False))
        t.resizeRowsToContents()

    def _update_knee(self) -> None:
        knee = self.model.tables().get("knee")
        self.tables.setTabVisible(self.knee_tab, bool(knee))
        if knee:
            self.knee.show_curves({c["label"]: {"points": c["points"], "knee": c["knee"],
                                                "slo_p99_ms": knee.get("slo_p99_ms")} for c in knee["configs"]})

    def _update_progress(self) -> None:
        m = self.model
        if not m.active:
            self.title.setText("No sweep yet: Build > Sweep > Run, or replay a recorded sweep")
            self.bar.setRange(0, 1)
            self.bar.setValue(0)
            self.bar.setFormat("")
            self.eta.setText("")
            return
        p = m.progress(m.now())
        self.title.setText(f"<b>sweep {m.name}</b>" + (" (recorded)" if m.recorded is not None else ""))
        self.bar.setRange(0, max(1, p.total))
        self.bar.setValue(p.done)
        self.bar.setFormat(f"{p.done}/{p.total} steps")
        left = "done" if p.remaining is None else f"about {duration_text(p.remaining)} left (plan)"
        if m.started_at is None and p.remaining is not None:
            self.eta.setText(f"starting: {left}")  # the configuration is being applied, the data checked
        else:
            self.eta.setText(f"{duration_text(p.elapsed)} elapsed, {left}")

    def _update_grid(self) -> None:
        rows, threads = self.model.rows(), self.model.threads()
        top = max((c.tps for r in rows for c in r.cells.values()), default=0.0)
        g = self.grid
        g.clear()
        g.setColumnCount(len(threads) + 2)
        heads = [f"{t:,.0f}/s\nTPS · p95 ms" if self.model.by_rate else f"{t} thr\nTPS · p95 ms" for t in threads]
        self.tables.setTabText(self.tables.indexOf(self.grid),
                               "TPS · p95 by rate" if self.model.by_rate else "TPS · p95 by threads")
        g.setHorizontalHeaderLabels(["configuration", *heads, "knee" if self.model.by_rate else "best"])
        g.setRowCount(len(rows))
        for i, r in enumerate(rows):
            g.setItem(i, 0, QTableWidgetItem(stacked(r.label) + ("  (baseline)" if r.baseline else "")))
            for j, t in enumerate(threads, 1):
                c = r.cells.get(t)
                if c is None:
                    item = QTableWidgetItem("measuring…" if r.measuring == t else "")
                    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                    g.setItem(i, j, item)
                    continue
                head = f"\n{c.headline[1]:,.0f} {c.headline[0]}" if c.headline else ""
                flags = (" ⚑" if c.flipped else "") + (" ⋯" if c.ramp else "") + (" !" if c.errors else "")
                item = QTableWidgetItem(f"{'★ ' if c.best else ''}{number(c.tps)}{flags}{head}\n"
                                        f"{number(c.p95_ms, 3)} ms")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setToolTip(cell_tip(r.label, f"{t:,.0f}/s" if self.model.by_rate else f"{t} threads", c))
                if top > 0:
                    shade = QColor(SHADE)
                    shade.setAlphaF(0.08 + 0.5 * c.tps / top)
                    item.setBackground(QBrush(shade))
                if c.best:
                    font = QFont(item.font())
                    font.setBold(True)
                    item.setFont(font)
                g.setItem(i, j, item)
            best = r.best
            knee = next((c for c in (self.model.tables().get("knee") or {}).get("configs", []) if c["idx"] == r.idx),
                        None)
            if self.model.by_rate:  # a sweep over rates: the most TPS is the highest rate; its knee is the figure
                text = "-" if knee is None or knee["knee"] is None else f"{number(float(knee['knee']), 0)}/s"
            else:
                text = f"{number(best['tps'])} @{best['threads']}" if best else "-"
            g.setItem(i, len(threads) + 1, QTableWidgetItem(text))
        g.resizeRowsToContents()

    def _update_best(self) -> None:
        tables, m = self.model.tables(), self.model
        base = next((c for c in tables["configs"] if c["idx"] == tables["baseline"]), None)
        top = tables["best_to_best"][0] if tables["best_to_best"] else None
        if top is None:
            self.leader.setText("")
        else:
            noisy = base is not None and base["best"] is not None and m.within_noise(
                top["ratio"], (top["config"], top["threads"]), (base["idx"], base["best"]["threads"]))
            versus = (" (the baseline)" if top["config"] == tables["baseline"] else
                      f", {number(top['ratio'], 3)}x the baseline's best" + (f" {NOISE_MARK}" if noisy else "")
                      if top["ratio"] is not None else "")
            so_far = "" if m.progress(m.now()).remaining is None else " so far"
            self.leader.setText(knee_leader(tables.get("knee"), so_far) or
                                f"best{so_far}: <b>{top['label']}</b>, {number(top['tps'])} TPS at "
                                f"{top['threads']} threads{versus}")
        b = self.best
        b.clear()
        heads = ["rank", "configuration", "best TPS", "at threads", "QPS", "p95 ms", "ratio"]
        b.setColumnCount(len(heads))
        b.setHorizontalHeaderLabels(heads)
        b.setRowCount(len(tables["best_to_best"]))
        for i, row in enumerate(tables["best_to_best"]):
            noisy = base is not None and base["best"] is not None and row["config"] != base["idx"] and m.within_noise(
                row["ratio"], (row["config"], row["threads"]), (base["idx"], base["best"]["threads"]))
            cells = [str(i + 1), stacked(row["label"]), number(row["tps"]), str(row["threads"]), number(row["qps"]),
                     number(row["lat_p95_ms"], 3), number(row["ratio"], 3) + (f" {NOISE_MARK}" if noisy else "")]
            for j, text in enumerate(cells):
                b.setItem(i, j, self._number_item(text, j != 1, noisy and j == 6))
        b.resizeRowsToContents()

    def _update_ratios(self) -> None:
        tables, m = self.model.tables(), self.model
        threads = self.model.threads()
        r = self.ratios
        r.clear()
        r.setColumnCount(1 + 2 * len(threads))
        r.setHorizontalHeaderLabels(["configuration", *(h for t in threads for h in (f"{t} thr TPS", "ratio"))])
        r.setRowCount(len(tables["ratios"]))
        for i, row in enumerate(tables["ratios"]):
            r.setItem(i, 0, QTableWidgetItem(stacked(row["label"])))
            by = {st["threads"]: st for st in row["steps"]}
            for j, t in enumerate(threads):
                st = by.get(t)
                verdict = event_verdict({"verdict": st.get("verdict")}) if st else None
                if verdict is not None:  # the run's A/B verdict on the stored per-second TPS: its CI says
                    noisy = not verdict.clear
                else:
                    noisy = st is not None and row["config"] != tables["baseline"] and m.within_noise(
                        st["ratio"], (row["config"], t), (tables["baseline"], t))
                tps = number(st["tps"]) if st else "-"
                ratio = (number(st["ratio"], 3) + ci_text(verdict, sweep=True) + (f" {NOISE_MARK}" if noisy else "")
                         if st else "-")
                r.setItem(i, 1 + 2 * j, self._number_item(tps, True, False))
                r.setItem(i, 2 + 2 * j, self._number_item(ratio, True, noisy))
        r.resizeRowsToContents()

    def _update_costs(self) -> None:
        rows = self.model.efficiency()
        keys = [k for k in METRICS if k not in OPTIONAL or any(eff.get(k) is not None for *_r, eff in rows)]
        c = self.costs
        c.clear()
        c.setColumnCount(3 + len(keys))
        c.setHorizontalHeaderLabels(["configuration", "threads", "TPS", *(LABELS[k] for k in keys)])
        for j, k in enumerate(keys, 3):
            if (head := c.horizontalHeaderItem(j)) is not None:
                head.setToolTip(METRICS[k][3])
        c.setRowCount(len(rows))
        for i, (label, threads, tps, eff) in enumerate(rows):
            c.setItem(i, 0, QTableWidgetItem(stacked(label)))
            c.setItem(i, 1, self._number_item(str(threads), True, False))
            c.setItem(i, 2, self._number_item(number(tps), True, False))
            for j, k in enumerate(keys, 3):
                c.setItem(i, j, self._number_item(fmt(eff.get(k)), True, False))
        c.resizeRowsToContents()

    @staticmethod
    def _number_item(text: str, right: bool, noisy: bool) -> QTableWidgetItem:
        item = QTableWidgetItem(text)
        if right:
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if noisy:
            item.setToolTip(NOISE_HELP)
            font = QFont(item.font())
            font.setItalic(True)
            item.setFont(font)
        return item
