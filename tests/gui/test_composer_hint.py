"""The composer hint shows a server's error text as text: markup in it is neither rendered nor loaded."""

from __future__ import annotations

from precis.gui.app import application
from precis.gui.composer import Composer


def test_an_html_error_body_is_shown_literally_and_the_hint_does_not_grow(qtbot, tmp_path):
    application()
    picture = tmp_path / "big.png"
    from PySide6.QtGui import QColor, QImage
    image = QImage(400, 338, QImage.Format.Format_RGB32)
    image.fill(QColor("red"))
    image.save(str(picture))
    composer = Composer()
    qtbot.addWidget(composer)
    composer.resize(700, 200)
    composer.show()
    composer.set_hint("Server error 502")
    qtbot.waitExposed(composer)
    line = composer.hint.fontMetrics().lineSpacing()
    error = f'<html><body><h1>Bad gateway</h1><img src="{picture}"></body></html>'
    composer.set_hint(error, error=True, details=error)
    assert composer.hint.text() == error  # shown as it came, tags and all
    qtbot.wait(50)
    # A few lines of text (the path wraps: longer under a test worker's folder), not a 338 px picture.
    assert composer.hint.height() <= 4 * line < image.height() // 4
    assert "&lt;img" in composer.hint.toolTip()  # the tooltip shows the markup as text too
