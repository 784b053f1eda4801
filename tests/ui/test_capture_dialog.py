"""File > New capture driven like a user: keys into the form, clicks on Run and Cancel.

The assertions read what a user would notice: the error sentence under the form (the
same one `trnx capture` prints), the progress bar moving, the trace opening in the
window, and nothing left on disk after Cancel.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLineEdit, QMessageBox

import simcore.capture as sc
from explorer.cli.main import cli
from explorer.ui import open_window
from simcore.errors import UserError


@pytest.fixture
def empty_window(qtbot):
    w = open_window()
    qtbot.addWidget(w)
    qtbot.waitExposed(w)
    return w


def open_capture_dialog(qtbot, window, keys=Qt.ControlModifier, key=Qt.Key_N):
    window.activateWindow()  # as a click on the window would (shortcuts go to the active window)
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    QTest.keyClick(window, key, keys)
    dialog = window.extras.capture_dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    return dialog


def type_into(edit: QLineEdit, text: str) -> None:
    edit.setFocus()
    QTest.keyClick(edit, Qt.Key_A, Qt.ControlModifier)
    QTest.keyClick(edit, Qt.Key_Delete)
    QTest.keyClicks(edit, text)


def choose(combo, text: str) -> None:
    """Pick a combo item by typing its first letters, as a keyboard user does."""
    combo.setFocus()
    QTest.keyClicks(combo, text)
    assert combo.currentText().startswith(text), combo.currentText()


def tick(checkbox) -> None:
    """Click a check box on its box (a wide check box's centre can be past its label)."""
    QTest.mouseClick(checkbox, Qt.LeftButton, pos=QPoint(6, checkbox.height() // 2))


def settle(qtbot, dialog):
    qtbot.wait(dialog._validate_timer.interval() + 60)


def cli_error(*args: str) -> str:
    with pytest.raises(UserError) as err:
        cli.main(args=["capture", *args], prog_name="trnx", standalone_mode=False)
    return str(err.value)


def meta_of(path):
    return json.loads((path / "meta.json").read_text())


def test_fill_run_see_progress_open_then_cancel_leaves_nothing(qtbot, empty_window, tmp_path):
    w = empty_window
    dialog = open_capture_dialog(qtbot, w)
    dialog.show_error_dialogs = False
    choose(dialog.workload, "llama3.1-8b")
    choose(dialog.phase, "decode")
    type_into(dialog.batch, "4")
    type_into(dialog.context, "999999")
    type_into(dialog.layers, "2")
    choose(dialog.detail, "instruction")
    type_into(dialog.cores, "0,1")
    out = tmp_path / "mine.trnx"
    type_into(dialog.output, str(out))
    settle(qtbot, dialog)
    # bad input: the CLI's sentence under the form, Run disabled, nothing started
    expected = cli_error("--workload", "llama3.1-8b", "--phase", "decode", "--batch", "4", "--context", "999999",
                         "--layers", "2", "--detail", "instruction", "--cores", "0,1", "-o", str(out))
    assert "exceed" in expected
    assert dialog.error_label.text() == expected and dialog.error_label.isVisible()
    assert not dialog.run_button.isEnabled()
    type_into(dialog.context, "1024")
    settle(qtbot, dialog)
    assert dialog.error_label.text() == "" and dialog.run_button.isEnabled()
    assert "Llama-3.1-8B" in dialog.info_label.text()

    values: list[int] = []
    dialog.progress.valueChanged.connect(values.append)
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    assert not dialog.form.isEnabled() and dialog.cancel_button.text() == "Cancel"
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=120_000)
    assert any(0 < v < 1000 for v in values), values  # the bar moved through the run
    assert values[-1] == 1000
    assert not dialog.isVisible()
    assert w.loaded.path == out and "mine.trnx" in w.windowTitle()
    meta = meta_of(out)
    assert meta["workload"]["batch"] == 4 and meta["workload"]["context"] == 1024 and meta["workload"]["layers"] == 2
    assert meta["capture"]["detail"] == "instruction" and meta["capture"]["cores"] == [0, 1]

    # a second, longer run cancelled midway: nothing at the output, no temporary sibling
    dialog = open_capture_dialog(qtbot, w)
    dialog.show_error_dialogs = False
    choose(dialog.phase, "prefill")
    type_into(dialog.seq, "4096")
    type_into(dialog.context, "0")
    type_into(dialog.layers, "")
    type_into(dialog.cores, "all")
    big = tmp_path / "cancelled.trnx"
    type_into(dialog.output, str(big))
    settle(qtbot, dialog)
    assert dialog.run_button.isEnabled(), dialog.error_label.text()
    values.clear()
    dialog.progress.valueChanged.connect(values.append)
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.progress.value() > 0, timeout=60_000)
    QTest.mouseClick(dialog.cancel_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not dialog.running, timeout=60_000)
    assert dialog.status.text() == "cancelled; nothing was written."
    assert 0 < max(values) < 1000  # cancelled midway, not after the end
    assert not big.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.trnx"]
    assert dialog.isVisible() and dialog.form.isEnabled() and dialog.run_button.isEnabled()
    assert w.loaded.path == out  # the window still shows the first trace


@pytest.mark.parametrize("edits, cli_args", [
    ({"workload": "gemm", "shape": "1024,1024"}, ["--workload", "gemm", "--shape", "1024,1024"]),
    ({"detail": "instruction", "cores": "9"}, ["--detail", "instruction", "--cores", "9"]),
    ({"batch": "0"}, ["--batch", "0"]),
    ({"hardware": "missing-preset.toml"}, ["--hardware", "missing-preset.toml"]),
    ({"workload": "llama3.1-8b", "compute_cores": "3"}, ["--compute-cores", "3"]),
])
def test_validation_shows_the_cli_sentence(qtbot, tmp_path, monkeypatch, edits, cli_args):
    from explorer.ui.capture_dialog import CaptureDialog

    monkeypatch.chdir(tmp_path)
    dialog = CaptureDialog(directory=tmp_path, initial=edits)
    qtbot.addWidget(dialog)
    assert not dialog.validate()
    assert dialog.error_label.text() == cli_error(*cli_args, "-o", str(tmp_path / "x.trnx"))
    assert not dialog.run_button.isEnabled()
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    assert dialog.worker is None and list(tmp_path.iterdir()) == []


def test_existing_output_needs_overwrite(qtbot, tmp_path):
    from explorer.ui.capture_dialog import CaptureDialog

    out = sc.capture({"workload": "gemm", "shape": "256,256,256"}, tmp_path / "taken.trnx")
    dialog = CaptureDialog(directory=tmp_path, initial={"workload": "gemm", "shape": "256,256,256", "output": str(out)})
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.validate()
    assert dialog.error_label.text() == cli_error("--workload", "gemm", "-o", str(out))
    tick(dialog.overwrite)
    assert dialog.validate()


def test_the_form_offers_every_choice_and_only_the_fields_that_apply(qtbot, tmp_path):
    from explorer.ui.capture_dialog import CaptureDialog

    facts = sc.choices()
    dialog = CaptureDialog(directory=tmp_path)
    qtbot.addWidget(dialog)
    data = lambda combo: [combo.itemData(i) for i in range(combo.count())]  # noqa: E731
    assert {h["name"] for h in facts["hardware"]} <= set(data(dialog.hardware))
    assert {m["name"] for m in facts["models"]} | {b["name"] for b in facts["microbenchmarks"]} <= set(data(dialog.workload))
    assert dialog._current(dialog.hardware) == sc.CaptureConfig().hardware
    assert dialog._current(dialog.workload) == sc.CaptureConfig().workload
    trn3 = next(h for h in facts["hardware"] if h["name"] == "trn3")
    assert [dialog.dtype.itemText(i) for i in range(dialog.dtype.count())] == trn3["dtypes"]
    assert dialog.phase.isEnabled() and not dialog.shape.isEnabled() and not dialog.seq.isEnabled()
    choose(dialog.workload, "gemm")
    assert dialog.shape.isEnabled() and not dialog.phase.isEnabled() and not dialog.batch.isEnabled()
    assert "8192,8192,8192" in dialog.shape.placeholderText()
    assert dialog.options() == {"hardware": "trn3", "workload": "gemm", "dtype": "bf16", "detail": "kernel", "seed": 0}
    assert dialog.output_path().name == "gemm-bf16.trnx"  # named after the workload until the user types one
    # every CaptureConfig field has an editor: a hand-made one or a generic one
    for f in dataclasses.fields(sc.CaptureConfig):
        assert dialog.widgets[f.name].isWidgetType()


def test_an_op_graph_keeps_its_own_dtype_unless_the_user_picks_one(qtbot, tmp_path):
    """The dtype list of an op-graph file starts with the file's own (no --dtype); a dtype the
    user picks is passed explicitly and wins, bf16 included (it is also the default)."""
    from explorer.ui.capture_dialog import FROM_FILE, CaptureDialog

    graph = tmp_path / "fp8.json"
    graph.write_text(json.dumps({"name": "fp8", "dtype": "fp8",
                                 "ops": [{"name": "mm", "kind": "matmul", "m": 256, "k": 256, "n": 256}]}))
    dialog = CaptureDialog(directory=tmp_path, initial={"workload": str(graph), "compute_cores": 1})
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.dtype.currentText() == FROM_FILE and "dtype" not in dialog.options()
    assert dialog.output_path().name == "fp8.trnx"  # no dtype in the name it was not given
    assert dialog.validate(), dialog.error_label.text()
    dialog.dtype.setFocus()
    QTest.keyClick(dialog.dtype, Qt.Key_Down)  # the next entry: bf16
    assert dialog.dtype.currentText() == "bf16" and dialog.options()["dtype"] == "bf16"
    choose(dialog.workload, "gemm")
    assert FROM_FILE not in [dialog.dtype.itemText(i) for i in range(dialog.dtype.count())]
    assert dialog.options()["dtype"] == "bf16"


def test_options_the_simulator_grows_later_get_generic_editors(qtbot, tmp_path, monkeypatch):
    """A new CaptureConfig field shows up with an editor fitting its type, with no dialog change."""
    import explorer.ui.capture_options as co
    from explorer.ui.capture_dialog import CaptureDialog

    @dataclasses.dataclass
    class Grown(sc.CaptureConfig):
        rails: int | None = None
        link_noise: float = 0.0
        fault: str | None = None
        trace_links: bool = False
        prefetch: bool | None = None

    monkeypatch.setattr(co, "CaptureConfig", Grown)
    dialog = CaptureDialog(directory=tmp_path)
    qtbot.addWidget(dialog)
    dialog.show()
    new = ["rails", "link_noise", "fault", "trace_links", "prefetch"]
    assert list(dialog.extras)[-5:] == new
    assert dialog.extras["link_noise"].placeholderText() == "0.0"
    assert dialog.extras["rails"].toolTip() == "--rails"
    type_into(dialog.extras["rails"], "4")
    type_into(dialog.extras["link_noise"], "0.05")
    type_into(dialog.extras["fault"], "chip=3")
    tick(dialog.extras["trace_links"])
    choose(dialog.extras["prefetch"], "off")
    o = dialog.options()
    assert [o[k] for k in new] == [4, 0.05, "chip=3", True, False]
    dialog.set_options({"rails": 8, "link_noise": 0.1, "prefetch": True})
    assert (dialog.extras["rails"].text(), dialog.extras["link_noise"].text()) == ("8", "0.1")
    assert dialog.extras["prefetch"].currentText() == "on"


def test_multichip_options_from_choices(qtbot, empty_window, tmp_path):
    """The multi-chip flags trnx capture has show up with choices()' help and lists, validate
    with the CLI's sentences and produce the multi-chip trace."""
    facts = sc.choices()
    w = empty_window
    dialog = open_capture_dialog(qtbot, w)
    dialog.show_error_dialogs = False
    for name, help_text in facts["options"].items():
        assert dialog.widgets[name].toolTip() == f"--{name.replace('_', '-')}: {help_text}"
    algos = dialog.extras["cc_algorithm"]
    assert [algos.itemText(i) for i in range(algos.count())] == facts["cc_algorithms"]
    choose(dialog.hardware, "trn3-ultraserver-gen1")
    type_into(dialog.layers, "2")
    type_into(dialog.extras["tp"], "16")
    type_into(dialog.extras["expert_skew"], "0.5")
    out = tmp_path / "tp4.trnx"
    type_into(dialog.output, str(out))
    settle(qtbot, dialog)
    assert dialog.error_label.text() == cli_error("-H", "trn3-ultraserver-gen1", "--layers", "2", "--tp", "16",
                                                  "--expert-skew", "0.5", "-o", str(out))
    type_into(dialog.extras["expert_skew"], "")
    type_into(dialog.extras["straggler"], "chip=1,slowdown=1.3")
    choose(dialog.extras["cc_algorithm"], "ring")
    settle(qtbot, dialog)
    assert dialog.run_button.isEnabled(), dialog.error_label.text()
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=120_000)
    cap = meta_of(out)["capture"]
    assert (cap["chips"], cap["parallelism"]["tp"], cap["cc_algorithm"], cap["straggler"]) == (4, 16, "ring", "chip=1,slowdown=1.3")
    # and Re-run with changes brings them back, leaving out what the simulator derived (chips = tp / 4 ranks a chip)
    dialog = open_capture_dialog(qtbot, w, Qt.ControlModifier | Qt.ShiftModifier, Qt.Key_R)
    assert dialog._current(dialog.hardware) == "trn3-ultraserver-gen1"
    assert dialog.extras["tp"].text() == "16" and dialog.extras["chips"].text() == ""
    assert dialog.extras["cc_algorithm"].currentText() == "ring"
    assert dialog.extras["straggler"].text() == "chip=1,slowdown=1.3"


def test_rerun_with_changes_prefills_from_the_meta(qtbot, empty_window, tmp_path):
    first = sc.capture(dict(workload="llama3.1-8b", phase="prefill", seq=256, batch=2, layers=1, dtype="fp8",
                            detail="instruction", cores="0,2", seed=7), tmp_path / "first.trnx")
    w = empty_window
    w.open_path(first)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=30_000)
    dialog = open_capture_dialog(qtbot, w, Qt.ControlModifier | Qt.ShiftModifier, Qt.Key_R)
    dialog.show_error_dialogs = False
    assert "first.trnx" in dialog.windowTitle()
    assert dialog._current(dialog.workload) == "llama3.1-8b" and dialog.phase.currentText() == "prefill"
    assert (dialog.seq.text(), dialog.batch.text(), dialog.layers.text(), dialog.context.text()) == ("256", "2", "1", "0")
    assert dialog.dtype.currentText() == "fp8" and dialog.detail.currentText() == "instruction"
    assert dialog.cores.text() == "0,2" and dialog.seed.value() == 7
    assert dialog.output_path() == tmp_path / "llama3.1-8b-prefill-fp8.trnx"
    settle(qtbot, dialog)
    assert dialog.run_button.isEnabled(), dialog.error_label.text()
    type_into(dialog.batch, "3")  # the change
    settle(qtbot, dialog)
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: w.loaded is not None and w.loaded.path != first, timeout=60_000)
    a, b = meta_of(first), meta_of(w.loaded.path)
    assert b["workload"]["batch"] == 3
    a["workload"].pop("batch"), b["workload"].pop("batch")
    for m in (a, b):
        m["capture"].pop("memory_bytes")
    # the options given: the first capture's, the change, and the context the form showed
    assert b["capture"].pop("options") == dict(a["capture"].pop("options"), batch=3, context=0)
    assert a["workload"] == b["workload"] and a["capture"] == b["capture"] and a["hardware"] == b["hardware"]


def test_rerun_of_a_trace_that_was_not_captured_says_why(qtbot, window, monkeypatch):
    said = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: said.append(text))
    QTest.keyClick(window, Qt.Key_R, Qt.ControlModifier | Qt.ShiftModifier)
    assert said == ["this trace was not captured by the simulator, so it has no capture options to re-run."]
    assert window.extras.capture_dialog is None
    assert QApplication.activeModalWidget() is None


def test_closing_the_dialog_while_running_cancels(qtbot, tmp_path):
    from explorer.ui.capture_dialog import CaptureDialog

    out = tmp_path / "closing.trnx"
    dialog = CaptureDialog(directory=tmp_path, initial={"workload": "llama3.1-8b", "phase": "prefill", "seq": "4096",
                                                         "detail": "instruction", "cores": "all", "output": str(out)})
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.run()
    qtbot.waitUntil(lambda: dialog.progress.value() > 0, timeout=60_000)
    dialog.close()  # the window's close button: cancel, then close once the worker stopped
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=60_000)
    assert not dialog.running and not out.exists() and list(tmp_path.iterdir()) == []


def test_preset_file_and_op_graph_file_through_the_file_pickers(qtbot, empty_window, tmp_path, monkeypatch):
    preset = tmp_path / "trn3-2xhbm.toml"
    preset.write_text('base = "trn3"\nname = "trn3-2xhbm"\n[hbm]\nbandwidth_gbps = 9800.0\n')
    graph = tmp_path / "block.json"
    graph.write_text(json.dumps({"name": "my-block", "dtype": "bf16", "layers": [{"name": "block", "ops": [
        {"name": "qkv", "kind": "matmul", "m": 512, "k": 1024, "n": 1536},
        {"name": "norm", "kind": "rmsnorm", "rows": 512, "cols": 1024}]}]}))
    picks = iter([str(preset), str(graph)])
    monkeypatch.setattr("PySide6.QtWidgets.QFileDialog.getOpenFileName", lambda *a, **k: (next(picks), ""))
    w = empty_window
    dialog = open_capture_dialog(qtbot, w)
    dialog.show_error_dialogs = False
    dialog.hardware.setFocus()
    QTest.keyClick(dialog.hardware, Qt.Key_P)              # "Preset .toml file...": opens the (patched) file picker
    assert dialog._current(dialog.hardware) == str(preset)
    dialog.workload.setFocus()
    QTest.keyClick(dialog.workload, Qt.Key_O)              # "Op-graph .json file..."
    assert dialog._current(dialog.workload) == str(graph)
    assert dialog.workload_kind() == "file" and not dialog.phase.isEnabled() and dialog.layers.isEnabled()
    out = tmp_path / "whatif.trnx"
    type_into(dialog.output, str(out))
    settle(qtbot, dialog)
    assert dialog.run_button.isEnabled(), dialog.error_label.text()
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=60_000)
    meta = meta_of(out)
    assert meta["hardware"]["name"] == "trn3-2xhbm" and meta["hardware"]["source_file"] == str(preset)
    assert meta["workload"]["name"] == "my-block"
    # re-run finds both files again
    dialog = open_capture_dialog(qtbot, w, Qt.ControlModifier | Qt.ShiftModifier, Qt.Key_R)
    assert dialog._current(dialog.hardware) == str(preset) and dialog._current(dialog.workload) == str(graph)


def test_cancelling_the_file_picker_keeps_the_previous_choice(qtbot, tmp_path, monkeypatch):
    from explorer.ui.capture_dialog import CaptureDialog

    monkeypatch.setattr("PySide6.QtWidgets.QFileDialog.getOpenFileName", lambda *a, **k: ("", ""))
    dialog = CaptureDialog(directory=tmp_path)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.hardware.setFocus()
    QTest.keyClick(dialog.hardware, Qt.Key_P)
    assert dialog._current(dialog.hardware) == "trn3"
    assert dialog.validate()


def test_a_failure_during_the_run_shows_one_sentence_and_the_dialog_stays_usable(qtbot, tmp_path, monkeypatch):
    from explorer.ui.capture_dialog import CaptureDialog

    out = tmp_path / "full-disk.trnx"

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(out))

    monkeypatch.setattr(sc, "capture", disk_full)
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda parent, title, text, *a: shown.append((title, text)))
    dialog = CaptureDialog(directory=tmp_path, initial={"workload": "gemm", "shape": "256,256,256", "output": str(out)})
    qtbot.addWidget(dialog)
    dialog.show()
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not dialog.running, timeout=30_000)
    sentence = f"cannot write {out}: No space left on device."
    assert shown == [("Capture failed", sentence)]
    assert dialog.error_label.text() == sentence and dialog.isVisible()
    assert dialog.form.isEnabled() and dialog.cancel_button.text() == "Close"
    assert not out.exists()
