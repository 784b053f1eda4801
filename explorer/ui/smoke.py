"""`trnx view --smoke-test`: build the window, load a trace, render one frame (packaging check)."""

from __future__ import annotations

from simcore.errors import UserError


def smoke_test(path: str | None) -> float:
    """Returns the first frame's time in ms; raises UserError when the trace cannot be opened.

    No dialog is shown (the error becomes the CLI's one-line message instead).
    """
    from explorer.ui import open_window

    window = open_window(path, show=True)
    window.show_error_dialogs = False
    errors: list[str] = []
    window.load_failed.connect(errors.append)
    window.wait_loaded(600_000)
    if errors:
        window.close()
        raise UserError(errors[0])
    if path is not None and window.loaded is None:
        window.close()
        raise UserError(f"{path} did not finish loading.")
    ms = window.timeline.render_frame()
    image = window.grab()
    window.close()
    if image.isNull():
        raise RuntimeError("the window rendered an empty frame")
    return ms
