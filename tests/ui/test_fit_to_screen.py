"""Issue 45 item 1 (part): the window opened at a size saved on another screen. It is clamped to the screen it
opens on, and moved onto it (the offscreen platform's screen: 800x800)."""

from PySide6.QtWidgets import QWidget

from tunebench.ui.window_settings import fit_to_screen


def test_a_size_from_a_bigger_screen_is_clamped_and_the_window_moved_onto_this_one(qtbot):
    w = QWidget()
    qtbot.addWidget(w)
    w.resize(1920, 1080)
    w.move(2500, 40)  # where a second monitor was
    fit_to_screen(w)
    room = w.screen().availableGeometry()
    assert w.width() <= room.width() and w.height() <= room.height()
    assert room.contains(w.geometry().topLeft()) and room.contains(w.geometry().bottomRight())
