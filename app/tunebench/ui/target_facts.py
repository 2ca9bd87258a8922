"""Keeps the knob panel and the sweep and tune builders on the current target's facts: its version, the present
values of the favourite knobs, the variables the sweep's axes and the tune's knobs complete from, what each knob
in the sweep grid is (dynamic or restart), and the sweep's plan against this server. Every answer comes from the
controller's task runner; one about another target (the user switched while it was on its way) is dropped."""

from __future__ import annotations

from PySide6.QtCore import QObject

from tunebench.core.errors import ConfigError
from tunebench.core.sweep import SweepSpec
from tunebench.mysql.target import Target
from tunebench.run.tasks import ServerFacts
from tunebench.ui.controller import WindowController
from tunebench.ui.knob_panel import FAVOURITES, KnobPanel
from tunebench.ui.sweep_panel import SweepPanel
from tunebench.ui.targets_panel import TargetsPanel
from tunebench.ui.tune_panel import TunePanel


class TargetFacts(QObject):
    def __init__(self, controller: WindowController, targets: TargetsPanel, knobs: KnobPanel, sweep: SweepPanel,
                 parent: QObject | None = None, tune: TunePanel | None = None):
        super().__init__(parent)
        self.controller, self.targets, self.knobs, self.sweep, self.tune = controller, targets, knobs, sweep, tune
        targets.target_changed.connect(lambda _n: self.reload())
        targets.target_ready.connect(lambda _n: self.reload())
        sweep.wants_facts.connect(self._on_wants_facts)
        sweep.plan_wanted.connect(self._on_plan_wanted)
        controller.facts.connect(self._on_facts)
        controller.facts_failed.connect(self._on_facts_failed)
        controller.knob_facts.connect(sweep.add_facts)
        controller.plan_ready.connect(sweep.show_plan)
        controller.plan_failed.connect(sweep.show_plan_error)

    def _target(self) -> Target | None:
        try:
            target = self.targets.current_target()
        except ConfigError as exc:
            self.knobs.show_facts(str(exc))
            return None
        if self.targets.needs_password(target.name) is not None:  # asked for; read once it is given
            self.knobs.show_facts(f"{target.name}: its password is asked for")
            return None
        return target

    def reload(self) -> None:
        """Read the current target's facts again (it changed, or it started or stopped)."""
        self.knobs.clear_values()
        target = self._target()
        if target is not None:
            self.controller.load_facts(target, [*self.sweep.spec.knob_axes, *FAVOURITES])

    def _on_facts(self, name: str, facts: ServerFacts) -> None:
        if self.targets.current_name() != name:
            return
        self.sweep.set_server(facts.variables, dict(facts.knobs))
        if self.tune is not None:  # the tune's knob names complete from the server's variables
            self.tune.set_variables(facts.variables)
        self.knobs.show_values(facts.values(FAVOURITES))
        self.knobs.show_facts(facts.label)

    def _on_facts_failed(self, name: str, message: str) -> None:
        if self.targets.current_name() == name:
            self.knobs.show_facts(message)

    def _on_wants_facts(self, names: list[str]) -> None:
        target = self._target()
        if target is not None:
            self.controller.describe_knobs(target, names)

    def _on_plan_wanted(self, spec: SweepSpec) -> None:
        """The plan `tunebench sweep --plan` prints, against the current target."""
        try:
            target = self.targets.current_target()
        except ConfigError as exc:
            self.sweep.show_plan_error(spec, str(exc))
            return
        self.controller.plan(target, spec)
