"""The flame graph window: pick step B (and step A, for a differential graph: the knob's effect on where the CPU
goes) among the profiled steps of one session or of the sessions compared, whose CPU (the server's or the load
generator's), and which side gives the widths; search, breadcrumb of the zoom, hover text. The steps are read off
the GUI thread."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.flame import (
    ROOT,
    FlameTree,
    ProfiledStep,
    Side,
    build,
    hidden_on,
    profiled_steps,
    search_text,
)
from tunebench.store.repo import Store
from tunebench.ui.flame_graph import FlameGraph
from tunebench.ui.tasks import TaskRunner

NONE = "(none: one step's graph)"
StepKey = tuple[int, int]  # (session, step index)
LEGEND = ("red: a larger share of the CPU in B, blue: a smaller one, white: the same within sampling noise "
          "(shares of each profile's own samples); full colour at {scale}")


class FlameWindow(QWidget):
    """Takes the store; `show_steps(sessions, a, b)` lists those sessions' profiled steps and shows B (against A
    when given)."""

    def __init__(self, store: Store, parent: QWidget | None = None):
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("Flame graph")
        self.store = store
        self.tasks = TaskRunner(self)
        self.steps: dict[str, list[ProfiledStep]] = {"server": [], "client": []}
        self.tree: FlameTree | None = None
        self.a_box, self.b_box = QComboBox(), QComboBox()
        for box in (self.a_box, self.b_box):
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            box.currentIndexChanged.connect(self._update_tree)
        self.whose = QComboBox()
        self.whose.addItem("server", "server")
        self.whose.addItem("load generator", "client")
        self.whose.currentIndexChanged.connect(self._on_whose)
        self.side = QComboBox()
        self.side.addItem("B", "b")
        self.side.addItem("A", "a")
        self.side.currentIndexChanged.connect(self._on_side)
        self.search = QLineEdit()
        self.search.setPlaceholderText("search frames (e.g. fsync, row_search)")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._on_search)
        self.found = QLabel("")
        self.crumbs = QLabel("")
        self.crumbs.setTextFormat(Qt.TextFormat.RichText)
        self.crumbs.linkActivated.connect(self._on_crumb)
        self.graph = FlameGraph()
        self.graph.focus_changed.connect(self._on_focus)
        self.graph.hovered.connect(self._on_hovered)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.graph)
        self.scroller = scroll
        # the root row is at the bottom: a new graph opens there, whatever height it is laid out at
        self._to_bottom = True  # until the user scrolls
        scroll.verticalScrollBar().rangeChanged.connect(self._on_scroll_range)
        scroll.verticalScrollBar().actionTriggered.connect(self._on_user_scroll)
        self.head = QLabel("reading the profiled steps …")
        self.head.setWordWrap(True)
        self.hover = QLabel("")
        self.hover.setWordWrap(True)
        self.hover.setMinimumHeight(4 * self.fontMetrics().height())
        self.hover.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.hover.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        pick = QHBoxLayout()
        for w in (QLabel("A"), self.a_box, QLabel("B"), self.b_box, QLabel("CPU of"), self.whose,
                  QLabel("widths from"), self.side):
            pick.addWidget(w)
        pick.addStretch(1)
        self.search.setMinimumWidth(20 * self.fontMetrics().averageCharWidth())
        find = QHBoxLayout()
        find.addWidget(QLabel("search"))
        find.addWidget(self.search)
        find.addWidget(self.found, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(pick)
        layout.addWidget(self.head)
        layout.addLayout(find)
        layout.addWidget(self.crumbs)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.hover)
        QShortcut(QKeySequence.StandardKey.Find, self, self.search.setFocus)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, lambda: self.graph.set_focus(()))
        self.resize(1400, 800)

    # -- what to show --
    def show_steps(self, sessions: Sequence[int], a: StepKey | None, b: StepKey | None) -> None:
        """List the profiled steps of `sessions` (read in the background), then show B against A (B alone when A is
        None; the first profiled step when B is None)."""
        self.head.setText("reading the profiled steps …")
        ids = list(dict.fromkeys(sessions))

        def work() -> dict[str, list[ProfiledStep]]:
            out: dict[str, list[ProfiledStep]] = {"server": [], "client": []}
            for sid in ids:
                session = self.store.get_session(sid, events=False)
                for whose in out:
                    out[whose] += profiled_steps(session, whose)
            return out

        self.tasks.submit("flame-steps", work, lambda steps: self._on_steps(steps, a, b), self._on_failed)

    def _on_failed(self, message: str) -> None:
        self.head.setText(message)

    def _on_steps(self, steps: dict[str, list[ProfiledStep]], a: StepKey | None, b: StepKey | None) -> None:
        self.steps = steps
        if not steps["server"] and steps["client"]:
            self.whose.setCurrentIndex(1)
        self._fill_boxes(a, b)

    def _current(self) -> list[ProfiledStep]:
        return self.steps[self.whose.currentData() or "server"]

    def _fill_boxes(self, a: StepKey | None, b: StepKey | None) -> None:
        steps = self._current()
        several = len({st.session for st in steps}) > 1
        for box in (self.a_box, self.b_box):
            box.blockSignals(True)
            box.clear()
        self.a_box.addItem(NONE, None)
        for st in steps:
            text = f"session {st.session} {st.label}" if several else st.label
            for box in (self.a_box, self.b_box):
                box.addItem(text, (st.session, st.idx))
        for box, key in ((self.a_box, a), (self.b_box, b)):
            # (findData does not match a Python tuple: compared here)
            keys = [box.itemData(i) for i in range(box.count())]
            box.setCurrentIndex(keys.index(key) if key is not None and key in keys else 0)
            box.blockSignals(False)
        self._update_tree()

    def _chosen(self, box: QComboBox) -> ProfiledStep | None:
        key = box.currentData()
        return next((st for st in self._current() if (st.session, st.idx) == key), None) if key else None

    # -- slots --
    def _on_whose(self) -> None:
        a, b = self.a_box.currentData(), self.b_box.currentData()
        self._fill_boxes(a, b)

    def _on_side(self) -> None:
        self.graph.set_side(self.side.currentData())
        self._update_head()

    def _on_search(self, text: str) -> None:
        self.graph.set_search(text)
        self.found.setText(search_text(self.tree, text.strip()) if self.tree is not None else "")

    def _on_hovered(self, text: str) -> None:
        self.hover.setText(text)

    def _on_crumb(self, link: str) -> None:
        self.graph.set_focus(self.graph.focus[:int(link)])

    def _update_tree(self) -> None:
        a, b = self._chosen(self.a_box), self._chosen(self.b_box)
        if b is None:
            self.tree = None
        else:
            self.tree = build(b.folded, a.folded if a is not None and a != b else None)
        differential = self.tree is not None and self.tree.differential
        self.side.setEnabled(differential)
        if not differential and self.side.currentData() != "b":
            self.side.setCurrentIndex(0)
        self.graph.set_tree(self.tree)
        self._update_crumbs(self.graph.focus)
        self._on_search(self.search.text())
        self._update_head()
        self._to_bottom = True
        self._on_scroll_range()

    def _on_scroll_range(self) -> None:
        bar = self.scroller.verticalScrollBar()
        if self._to_bottom:
            bar.setValue(bar.maximum())

    def _on_user_scroll(self) -> None:
        self._to_bottom = False

    def _update_head(self) -> None:
        tree, whose = self.tree, self.whose.currentText()
        if tree is None:
            self.head.setText("No CPU profile in these sessions: tick Build > CPU profile before Run (perf samples "
                              "the server), then pick the step here" if not self._current() else "pick step B")
            return
        if not tree.differential:
            self.head.setText(f"{whose} CPU, {tree.total_b:,} samples: a frame as wide as its share of them "
                              "(itself and what it calls); click to zoom, Esc or a caller to come back")
            return
        side: Side = "a" if self.side.currentData() == "a" else "b"
        scale = self.graph.scale
        legend = LEGEND.format(scale=f"±{100.0 * scale:.1f} points" if scale else "(no change beyond noise)")
        text = (f"{whose} CPU, B against A: widths from {side.upper()} ({tree.total(side):,} samples; A has "
                f"{tree.total_a:,}, B {tree.total_b:,}). {legend}.")
        frames, samples = hidden_on(tree, side)
        if frames:
            other: Side = "a" if side == "b" else "b"
            text += (f" {frames} frame(s) only in {other.upper()} ({100.0 * samples / max(1, tree.total(other)):.1f} "
                     f"% of {other.upper()}'s samples) are not drawn at {side.upper()}'s widths: widths from "
                     f"{other.upper()} shows them.")
        self.head.setText(text)

    def _on_focus(self, focus: tuple[str, ...]) -> None:
        self._update_crumbs(focus)
        self._to_bottom = True  # a zoom lays the graph out anew: its root row in sight
        self._on_scroll_range()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._update_crumbs(self.graph.focus)  # the links in the theme's text colour
        super().changeEvent(event)

    def _update_crumbs(self, focus: tuple[str, ...]) -> None:
        # links in the text's colour: Qt's default link blue is unreadable on the dark theme's ground
        colour = self.palette().color(QPalette.ColorRole.WindowText).name()
        names = [ROOT, *(_html(name) for name in focus)]
        parts = [f'<a href="{i}" style="color: {colour}">{name}</a>' for i, name in enumerate(names)]
        if len(parts) > 6:  # the zoomed frame's nearest callers; the root always
            parts = [parts[0], "…", *parts[-5:]]
        self.crumbs.setText(" &gt; ".join(parts))


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
