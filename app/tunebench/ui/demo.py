"""A demo plan run hands-free while the speaker talks (issue 45 item 4; the plan: core/demo_plan.py).

Live, the plan's clock is the wall clock since it began (less its pauses); each action runs through the window's
own entry points (Run, Flip, Confirm, the rate keys, K, Mark, Stop), so what the plan does is what the keys do,
with the same answers on the stage card. A line under the plots says what comes next and when ("next in 7 s:
flip innodb_flush_log_at_trx_commit to 2"), with the last caption (captions stay on that line: the stage card
keeps the server's answers, and a verdict on it is never replaced by a caption); Space pauses and resumes, N
runs the next action now, the Demo menu stops the plan.

A rehearsal plays the plan over a recorded session (a run of the same plan) at 10x: the plan's clock is the
replay's play head, and each action says what it would do instead of doing it (the recording has its own);
stage shows each verdict when the head reaches it. When the load ends before the plan says so (the server
died, the run failed) the plan goes on over the recording it was rehearsed on, from the same second, at 1x,
and the line says so; with no recording it says where it stopped and why.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from tunebench.core.demo_plan import Action, DemoPlan, due
from tunebench.core.errors import ConfigError
from tunebench.run.records import RunOutcome

if TYPE_CHECKING:
    from tunebench.ui.main_window import MainWindow

TICK_MS = 100
REHEARSAL_SPEED = "10x"


class DemoRunner(QObject):
    """One plan at a time, live or over a recording; `line` is what the demo line shows."""

    line = Signal(str)
    finished = Signal(str)  # why it ended ("done", "stopped", or what went wrong)

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.w = window
        self.plan: DemoPlan | None = None
        self.done = 0  # actions run so far
        self.mode = ""  # "live", "rehearsal" (over a recording at 10x), "recording" (live fell back to it)
        self.paused = False
        self.recording: int | None = None  # the session a rehearsal or a fallback plays
        self.caption = ""
        self.note = ""  # what the line says besides the countdown (the fallback's reason)
        self.log: list[tuple[float, str]] = []  # (plan time, what happened): tests and the Events
        self._started = 0.0  # monotonic start of the live clock
        self._paused_at: float | None = None
        self._shift = 0.0  # seconds the live clock was moved (pauses back, skips ahead)
        self._stopping = False  # the plan's own stop (or the user's): a run ending then is no failure
        # the plan time of its start step while the load it started has no second yet (a prepare, a busy machine:
        # 29 s once): the next steps count from the load's first second, not from the click
        self._waiting: float | None = None
        self._past_end: float | None = None  # when a recording's end was reached with steps still to come
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._tick)
        window.controller.run_finished.connect(self._on_run_finished)
        window.controller.timeline_event.connect(self._on_event)

    # -- the plan's clock --
    def now(self) -> float:
        if self.mode in ("rehearsal", "recording"):
            tl = self.w.replay_timeline
            head = float(tl.head or 0.0)
            if head < tl.end:
                self._past_end = None
                return head
            # the recording ended before the plan (its session ran 136 s, the plan 150): the plan's clock goes on
            # from its end at the replay's speed, so the last steps still come, at their pace
            now = self._paused_at if self._paused_at is not None else time.monotonic()
            if self._past_end is None:
                self._past_end = now
            return tl.end + (now - self._past_end) * self.w.replay_bar.speed_factor
        if self._waiting is not None:  # the load asked for and not measuring yet: the plan waits at its start
            return self._waiting
        at = self._paused_at if self._paused_at is not None else time.monotonic()
        return at - self._started + self._shift

    @property
    def running(self) -> bool:
        return self.plan is not None

    # -- starting and stopping --
    def start(self, plan: DemoPlan) -> None:
        """The plan live, from its first action (a run of the window's target)."""
        self._begin(plan, "live")
        self._started = time.monotonic()
        self._tick()

    def rehearse(self, plan: DemoPlan, session_id: int) -> bool:
        """The plan over recorded session `session_id` at 10x; False (said) when it cannot be opened."""
        if not self.w.open_replay(session_id):
            return False
        self._begin(plan, "rehearsal")
        self.recording = session_id
        bar = self.w.replay_bar
        bar.speed.setCurrentText(REHEARSAL_SPEED)
        bar.seek(0.0)
        bar.play(True)
        self._tick()
        return True

    def _begin(self, plan: DemoPlan, mode: str) -> None:
        if self.plan is not None:
            self.stop("replaced by another plan")
        self.plan, self.mode, self.done = plan, mode, 0
        self.paused, self._paused_at, self._shift, self._stopping = False, None, 0.0, False
        self._waiting = self._past_end = None
        self.recording = plan.rehearsal if mode == "live" else None
        self.caption = plan.title
        self.note = "rehearsal at 10x over a recording: nothing is done to a server" if mode == "rehearsal" else ""
        self.log = []
        self._timer.start()
        self.w.show_message(f"demo plan {plan.name}: {len(plan.actions)} steps over {plan.length:.0f} s"
                            + (" (rehearsal)" if mode == "rehearsal" else ""))

    def stop(self, why: str = "stopped") -> None:
        if self.plan is None:
            return
        name = self.plan.name
        self._timer.stop()
        self.plan = None
        self._stopping = False
        if self.mode in ("rehearsal", "recording"):
            self.w.replay_bar.play(False)
        self.line.emit("")
        self.w.show_message(f"demo plan {name}: {why}")
        self.finished.emit(why)

    # -- keys --
    def toggle_pause(self) -> None:
        if self.plan is None:
            return
        self.paused = not self.paused
        if self.mode == "live" or self._past_end is not None:
            if self.paused:
                self._paused_at = time.monotonic()
            elif self._paused_at is not None:
                paused = time.monotonic() - self._paused_at  # the pause does not count
                if self.mode == "live":
                    self._shift -= paused
                elif self._past_end is not None:
                    self._past_end += paused
                self._paused_at = None
        else:
            self.w.replay_bar.play(not self.paused)
        self._say()

    def skip(self) -> None:
        """N: the next action now (the clock moves to its time)."""
        plan = self.plan
        if plan is None or self.done >= len(plan.actions):
            return
        target = plan.actions[self.done].at
        if self.mode == "live":
            self._shift += max(0.0, target - self.now())
        elif self._past_end is not None:  # past the recording's end: its clock moves
            self._past_end -= max(0.0, target - self.now()) / max(self.w.replay_bar.speed_factor, 1e-3)
        else:
            self.w.replay_bar.seek(max(target, self.now()))
        self._tick()

    # -- running the actions --
    def _tick(self) -> None:
        plan = self.plan
        if plan is None:
            return
        if self._waiting is not None and self._load_measuring():
            # the clock from the load's first second: now() is the start step's time again from here
            self._shift = self._waiting - (time.monotonic() - self._started)
            self._waiting = None
        if not self.paused:
            for i in due(plan, self.done, self.now()):
                self.done = i + 1
                self._run(plan.actions[i])
                if self.plan is None:  # the action ended the plan
                    return
            if self.done >= len(plan.actions):
                self.stop("done")
                return
        self._say()

    def _say(self) -> None:
        plan = self.plan
        if plan is None:
            return
        head = f"demo {plan.name}" + (" · PAUSED (Space resumes)" if self.paused else "")
        parts = [head]
        if self._waiting is not None:
            parts.append("waiting for the load's first second")
        elif self.done < len(plan.actions):
            nxt = plan.actions[self.done]
            left = max(0.0, nxt.at - self.now())
            what = nxt.text() or nxt.caption
            parts.append(f"next in {left:.0f} s: {what}")
        if self.caption:
            parts.append(self.caption)
        if self.note:
            parts.append(self.note)
        self.line.emit(" · ".join(parts))

    def _flash(self, text: str) -> None:
        if self.w.stage.on:
            self.w.stage.help.flash(text)
        self.w.show_message(text)

    def _run(self, a: Action) -> None:
        t = self.now()
        self.log.append((t, a.do))
        if a.caption:
            self.caption = a.caption
        if self.mode != "live":
            self._rehearse(a)
            return
        try:
            {"start": self._start_load, "flip": lambda: self.w.flip_knob(
                a.knob, a.value, on_done=lambda c: self._flash(f"demo: {c['name']} {c['from']} → {c['to']}"),
                on_failed=lambda m: self._flash(f"demo: {a.text()}: {m}")),
             "confirm": lambda: self.w.confirm_flip(on_failed=lambda m: self._flash(f"demo: confirm: {m}")),
             "rate": lambda: self.w.step_rate(a.factor, on_failed=lambda m: self._flash(f"demo: rate: {m}")),
             "knee": self._knee, "mark": self.w.mark, "say": self._say,
             "stop": self._stop_load}[a.do]()
        except ConfigError as exc:  # (a form value the plan set that the window refuses)
            self._flash(f"demo: {a.text()}: {exc}")

    def _rehearse(self, a: Action) -> None:
        """Over a recording: the knee is drawn (the recording's sweep has it); the rest says what it would do."""
        if a.do == "knee":
            self._knee()
        elif a.do != "say":
            self._flash(f"demo ({'rehearsal' if self.mode == 'rehearsal' else 'the recording'}): {a.text()}")
        if a.do == "stop":
            self.stop("done")

    def _knee(self) -> None:
        stage = self.w.stage
        if stage.on:
            if not stage.knee.isVisible():
                stage.toggle_knee()
        else:
            self.w._show_sweep_results()
            self._flash("demo: the knee is on the sweep results' p99 vs rate tab")

    def _load_measuring(self) -> bool:
        """The load the plan started has its first second on the live timeline (or ended: the plan goes on)."""
        c = self.w.controller
        return not c.running() or bool(c.timeline.series)

    def _start_load(self) -> None:
        plan = self.plan
        assert plan is not None
        self._waiting = next(a.at for a in plan.actions if a.do == "start")
        load, w = plan.load, self.w
        if plan.sweep_file:
            from tunebench.load.recipes import load_spec

            w.sweep.set_spec(load_spec(plan.sweep_file))
            w.run_sweep()
            self._started_or_stop()
            return
        form = w.workload
        if "workload" in load:
            if str(load["workload"]) not in form.names:
                raise ConfigError(f"workload {load['workload']!r} is not one of the window's")
            form.workload.setCurrentText(str(load["workload"]))
        if "threads" in load:
            threads = load["threads"]
            form.threads.setText(", ".join(str(n) for n in threads) if isinstance(threads, list) else str(threads))
        form.rate.setText(str(int(load["rate"])) if load.get("rate") else "")
        for key, box in (("step_seconds", form.step_seconds), ("warmup_seconds", form.warmup_seconds)):
            if key in load:
                box.setValue(int(load[key]))
        # the data's shape: its form's editors, else in More (on top of them); the run prepares what is missing
        more = []
        for key in ("tables", "table_size"):
            if key in load:
                editor = form.editors.get(key)
                if editor is not None and hasattr(editor, "setValue"):
                    editor.setValue(int(load[key]))
                else:
                    more.append(f"{key}={load[key]}")
        form.more_options.setText(", ".join(more))
        w.run_workload()
        self._started_or_stop()

    def _started_or_stop(self) -> None:
        """A load the window refused (no target, a password missing, a run already going) ends the plan, said:
        its flips would otherwise land on a server between runs."""
        if not self.w.controller.running():
            self._waiting = None
            self.stop("the load did not start (the status line says why)")

    def _stop_load(self) -> None:
        self._stopping = True
        if self.w.controller.running():
            self.w.stop_run()

    def _on_run_finished(self, outcome: RunOutcome) -> None:
        """The load ended. By the plan (its stop, or its last step): nothing to say. Before it: on over the
        recording it was rehearsed on, from this second, or the plan stops saying why."""
        plan = self.plan
        if plan is None or self.mode != "live" or self._stopping:
            return
        t = self.now()
        if outcome.status in ("completed", "stopped"):  # its steps ran out, or Stop: the plan's captions go on
            self.note = f"the load {outcome.status} at {t:.0f} s"
            self._say()
            return
        self._fall_back(outcome.error.message if outcome.error is not None else f"the run ended ({outcome.status})")

    def _on_event(self, ev: Any) -> None:
        """The server stopped answering (the run's watch: a kill -9, a crash). The run itself waits for it to come
        back (seen: 63 s of a step, then 30 s more); a talk does not: on over the recording now, the live run
        stopped (its knobs are journaled: put back by `tunebench restore` or the next start)."""
        if self.plan is not None and self.mode == "live" and ev.kind == "gap" and ev.data.get("server") == "down":
            self._fall_back(str(ev.data.get("why") or "it did not answer"), stop_live=True)

    def _fall_back(self, why: str, stop_live: bool = False) -> None:
        t = self.now()
        if stop_live and self.w.controller.running():
            self._stopping = True  # (its end is ours: not a second failure)
            self.w.stop_run()
        if self.recording is None:
            self.stop(f"the load ended at {t:.0f} s ({why}); no rehearsed recording to go on with")
            return
        if not self.w.open_replay(self.recording):
            self.stop(f"the load ended at {t:.0f} s ({why}); session {self.recording} cannot be opened")
            return
        self.mode = "recording"
        self.note = f"the server stopped at {t:.0f} s ({why}): going on with the recording of session {self.recording}"
        bar = self.w.replay_bar
        bar.speed.setCurrentText("1x")
        bar.seek(t)
        bar.play(not self.paused)
        self._flash(self.note)
        self._say()

    # -- what the window asks --
    def status(self) -> dict[str, Any]:
        return {"plan": None if self.plan is None else self.plan.name, "mode": self.mode, "done": self.done,
                "paused": self.paused, "t": self.now() if self.plan is not None else None}
