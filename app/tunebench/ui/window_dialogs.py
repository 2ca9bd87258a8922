"""The window's dialogs and files: About, keyboard shortcuts, the first-run welcome, exports, a sweep saved to or
loaded from TOML. A part of MainWindow (ui/main_window.py), kept apart to keep that one about layout and wiring."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tunebench.core.errors import ConfigError, TunebenchError
from tunebench.ui import export
from tunebench.ui.dialog_helpers import open_path, save_path
from tunebench.ui.shortcuts_dialog import ShortcutsDialog, shortcut_rows

if TYPE_CHECKING:
    # For the checker, the mixin is the widget it is mixed into (MainWindow puts QMainWindow before it, so the
    # MRO is the same); at run time it is a plain class and adds nothing to the Qt side.
    from PySide6.QtWidgets import QWidget as _WindowBase
else:
    _WindowBase = object


class WindowDialogs(_WindowBase):
    """MainWindow's dialogs; uses the window's controller, store, settings, panels and show_message."""

    controller: Any
    store: Any
    settings: Any
    stage: Any
    targets: Any
    sweep: Any
    builders: Any
    dashboard: Any
    visible_only_action: Any

    def show_message(self, text: str) -> None: ...  # (MainWindow's)

    # -- first run, about --
    def show_about(self) -> Any:
        from tunebench.ui.about import AboutDialog

        dlg = AboutDialog(self.controller.server_version, self)
        dlg.show()
        return dlg

    def show_shortcuts(self) -> Any:
        """Help > Keyboard shortcuts, non-modal (returned for tests and screenshots)."""
        dialog = ShortcutsDialog(shortcut_rows(self, self.stage.actions), self)
        dialog.show()
        return dialog

    def maybe_welcome(self) -> Any:
        """The welcome, once, when the store is empty: never modal, so nothing waits on it."""
        from tunebench.ui.about import WelcomeDialog

        try:
            empty = not self.store.list_sessions()
        except TunebenchError:
            empty = False
        if not empty or self.settings.value("welcomed", False, type=bool):
            return None
        self.settings.setValue("welcomed", True)
        dlg = WelcomeDialog(self)
        dlg.use_sandbox.connect(self.targets.use_sandbox)
        dlg.add_server.connect(self.targets.add_dialog)
        dlg.load_recipe.connect(self._on_load_recipe)
        dlg.show()
        return dlg

    def _on_load_recipe(self, name: str) -> None:
        self.sweep.load_recipe(name)
        self.builders.setCurrentIndex(1)  # the Sweep tab (its page is in a scroll area)

    def export_view(self, kind: str) -> None:
        """PNG, SVG, CSV or the Markdown report of the session on screen: whole, or the visible range only when
        File > "Export the visible range only" is checked."""
        sid = self.controller.session_id()
        if kind == "md" and sid is None:
            self.show_message("a report is of a recorded session: replay one or finish a run first")
            return
        name = f"session-{sid}.{kind}" if sid else f"tunebench.{kind}"
        path = save_path(self, "Export", name, export.FILTERS[kind])
        if not path:
            return
        visible = self.visible_only_action.isChecked()
        try:
            session = self.store.get_session(sid) if sid is not None else None
            out = export.export(kind, self.dashboard, path, session, self.store, visible)
        except TunebenchError as exc:
            self.show_message(str(exc))
            return
        self.show_message(f"wrote {out} ({'visible range' if visible else 'whole session'})")

    def _on_save_sweep(self) -> None:
        path = save_path(self, "Save sweep", f"{self.sweep.spec.name}.toml", "TOML (*.toml)")
        if path:
            try:
                self.sweep.save(path)
            except (OSError, ConfigError) as exc:
                self.show_message(str(exc))

    def _on_load_sweep(self) -> None:
        path = open_path(self, "Load sweep", "TOML (*.toml)")
        if path:
            try:
                with open(path) as f:
                    self.sweep.load_toml(f.read(), path)
            except (OSError, ConfigError) as exc:
                self.show_message(str(exc))
