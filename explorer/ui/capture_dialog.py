"""File > New capture: a form over `simcore.capture`, run off the GUI thread.

The form is built from `simcore.capture.choices()` (presets, models, micro-benchmarks,
dtypes per preset) and the capture options' declarations (simcore/capture/options.py:
their help is every editor's tooltip, their choices and defaults fill the editors).
Options without a hand-made editor (multi-chip parallelism, and whatever the simulator
grows later) get a generic one in their group's box, so they show up without a change
here. Every edit re-runs `simcore.capture.resolve` (about a millisecond), the validation
`trnx capture` runs, and shows its one-sentence error under the form; Run stays disabled
until the options are valid. The capture runs in a `CaptureWorker` with a progress bar; Cancel
leaves nothing on disk; a finished trace is announced with `captured(path)`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
    QMessageBox, QProgressBar, QPushButton, QSpinBox, QVBoxLayout, QWidget,
)

from explorer.ui.capture_extras import OptionEditor
from explorer.ui.capture_options import (
    capture_options, check_output, format_value, free_path, parse_value, suggest_name, tooltip,
)
from explorer.ui.capture_worker import CaptureWorker
from simcore.capture.options import DETAIL, WORKLOAD, Option
from simcore.errors import UserError

PICK_FILE = "\u2026file"  # item data of the "choose a file" entries
FROM_FILE = "the op graph's own"  # the dtype entry that leaves --dtype unset for an op-graph file
COMPRESSIONS = ("none", "zstd", "lz4")


ACRONYMS = {"tp", "ep", "dp", "pp", "cc", "hbm", "moe", "sp"}


def _label(opt: Option) -> str:
    if opt.label:
        return opt.label
    words = [w.upper() if w in ACRONYMS else w for w in opt.name.split("_")]
    return " ".join([words[0][:1].upper() + words[0][1:], *words[1:]])


class CaptureDialog(QDialog):
    """Fill in a capture, run it with progress and Cancel; emits `captured(Path)` when written."""

    captured = Signal(object)

    def __init__(self, parent: QWidget | None = None, *, initial: dict[str, Any] | None = None,
                 directory: str | os.PathLike[str] | None = None) -> None:
        super().__init__(parent)
        from explorer.ui import gc_guard
        from simcore.capture import choices

        gc_guard.install()  # the capture thread must never run the cyclic collector over Qt objects
        self.setObjectName("capture-dialog")
        self.setWindowTitle("New capture")
        self.facts = choices()
        self.opts = {o.name: o for o in capture_options()}
        self.directory = Path(directory) if directory else Path.cwd()
        self.worker: CaptureWorker | None = None
        self.show_error_dialogs = True
        self._close_after_cancel = False
        self._output_edited = False
        self._filling = True  # no validation while the form is being built
        self.last_error = ""
        self._validate_timer = QTimer(self, singleShot=True, interval=120)
        self._validate_timer.timeout.connect(self.validate)

        self._dtypes: list[str] = []   # the selected hardware's matmul dtypes
        self.form = QWidget(self)
        self.form.setObjectName("capture-form")
        self._build_form()
        self.error_label = QLabel("", objectName="capture-error", wordWrap=True)
        self.error_label.setStyleSheet("color: #e06c75;")
        self.error_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.info_label = QLabel("", objectName="capture-info", wordWrap=True)
        self.progress = QProgressBar(objectName="capture-progress")
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.status = QLabel("", objectName="capture-status", wordWrap=True)
        self.run_button = QPushButton("Run capture", objectName="capture-run")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Close", objectName="capture-cancel")
        self.cancel_button.clicked.connect(self._cancel_or_close)
        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.run_button)
        lay = QVBoxLayout(self)
        lay.addWidget(self.form)
        lay.addWidget(self.error_label)
        lay.addWidget(self.info_label)
        lay.addWidget(self.progress)
        lay.addLayout(buttons)

        self._filling = False
        from simcore.capture import CaptureConfig

        defaults = CaptureConfig()
        self.set_options({"hardware": defaults.hardware, "workload": defaults.workload, **(initial or {})})
        self.validate()

    # -- building ----------------------------------------------------------------------
    def _build_form(self) -> None:
        f = self.facts
        self.hardware = QComboBox(objectName="hardware")
        for h in f["hardware"]:
            self.hardware.addItem(f"{h['name']} \u2014 {h['chips']} chip(s) x {h['cores_per_chip']} cores, "
                                  f"{h['hbm_gib']:g} GiB HBM", h["name"])
        self.hardware.addItem("Preset .toml file\u2026", PICK_FILE)
        self.workload = QComboBox(objectName="workload")
        for m in f["models"]:
            moe = f", MoE {m['moe']}" if m["moe"] else ""
            self.workload.addItem(f"{m['name']} \u2014 {m['params_b']:g}B params, {m['layers']} layers{moe}", m["name"])
        self.workload.insertSeparator(self.workload.count())
        for b in f["microbenchmarks"]:
            self.workload.addItem(f"{b['name']} \u2014 micro-benchmark ({b['shape']})", b["name"])
        self.workload.insertSeparator(self.workload.count())
        self.workload.addItem("Op-graph .json file\u2026", PICK_FILE)
        o = self.opts
        self.phase = QComboBox(objectName="phase")
        self.phase.addItems(list(o["phase"].choices or ()))
        self.phase.setCurrentText(o["phase"].default)
        self.batch, self.seq, self.context, self.shape, self.layers, self.cores, self.compute_cores = (
            QLineEdit(objectName=name, placeholderText=o[name].shown_default or "")
            for name in ("batch", "seq", "context", "shape", "layers", "cores", "compute_cores"))
        self.dtype = QComboBox(objectName="dtype")
        self.detail = QComboBox(objectName="detail")
        self.detail.addItems(list(o["detail"].choices or ()))
        self.seed = QSpinBox(objectName="seed")
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setValue(int(o["seed"].default))
        self.output = QLineEdit(objectName="output")
        self.output.textEdited.connect(self._user_edited_output)
        browse = QPushButton("Browse\u2026", objectName="output-browse")
        browse.clicked.connect(self._browse_output)
        self.overwrite = QCheckBox("replace an existing trace", objectName="overwrite")
        self.compression = QComboBox(objectName="compression")
        self.compression.addItems(COMPRESSIONS)
        self.compression.setToolTip("none keeps the trace memory-mappable; zstd makes it several times smaller")

        # the options with a hand-made editor; every other one gets a generic editor
        hand_made: dict[str, QWidget] = {
            "hardware": self.hardware, "workload": self.workload, "phase": self.phase, "batch": self.batch,
            "seq": self.seq, "context": self.context, "shape": self.shape, "dtype": self.dtype, "layers": self.layers,
            "detail": self.detail, "cores": self.cores, "compute_cores": self.compute_cores, "seed": self.seed,
            "overwrite": self.overwrite}
        self.editors = {opt.name: OptionEditor(opt) for opt in o.values() if opt.name not in hand_made}
        self.extras: dict[str, QWidget] = {name: e.widget for name, e in self.editors.items()}
        self.widgets: dict[str, QWidget] = {name: hand_made.get(name) or self.extras[name] for name in o}
        for name, w in hand_made.items():
            if name in o:
                w.setToolTip(tooltip(o[name]))
        for editor in self.editors.values():
            editor.on_change(self._changed)

        hw_box = QGroupBox("Hardware and workload")
        run_box = QGroupBox("Detail and cores")
        extra_box = QGroupBox("Multi-chip and more")
        forms = {WORKLOAD: QFormLayout(hw_box), DETAIL: QFormLayout(run_box)}
        other = QFormLayout(extra_box)
        for opt in o.values():
            if opt.name in hand_made:
                if opt.group in forms:
                    forms[opt.group].addRow(_label(opt), hand_made[opt.name])
            else:
                form = forms.get(opt.group, other)
                form.addRow(f"{_label(opt)} ({opt.flag})" if form is other else _label(opt), self.extras[opt.name])
        right: list[QWidget] = [extra_box] if other.rowCount() else []
        out_box = QGroupBox("Output")
        form4 = QFormLayout(out_box)
        row = QHBoxLayout()
        row.addWidget(self.output, 1)
        row.addWidget(browse)
        form4.addRow("Trace", row)
        form4.addRow("", self.overwrite)
        form4.addRow("Compression", self.compression)
        outer = QVBoxLayout(self.form)
        outer.setContentsMargins(0, 0, 0, 0)
        columns = QHBoxLayout()
        for boxes in ([hw_box, run_box], right):
            column = QVBoxLayout()
            for b in boxes:
                column.addWidget(b)
            column.addStretch(1)
            columns.addLayout(column, 1)
        outer.addLayout(columns)
        outer.addWidget(out_box)

        self.hardware.activated.connect(lambda i: self._picked(self.hardware, i, "Hardware preset", "Presets (*.toml)"))
        self.workload.activated.connect(lambda i: self._picked(self.workload, i, "Op graph", "Op graphs (*.json)"))
        self.hardware.currentIndexChanged.connect(self._hardware_changed)
        self.workload.currentIndexChanged.connect(self._workload_changed)
        self.phase.currentIndexChanged.connect(self._changed)
        self.detail.currentIndexChanged.connect(self._changed)
        for w in (self.batch, self.seq, self.context, self.shape, self.layers, self.cores, self.compute_cores, self.output):
            w.textChanged.connect(self._changed)
        for w in (self.dtype, self.compression):
            w.currentIndexChanged.connect(self._changed)
        self.seed.valueChanged.connect(self._changed)
        self.overwrite.toggled.connect(self._changed)
        self._hardware_changed()
        self._workload_changed()

    # -- reading and writing the form ---------------------------------------------------
    def _current(self, combo: QComboBox) -> str:
        data = combo.currentData()
        return "" if data in (None, PICK_FILE) else str(data)

    def workload_kind(self) -> str:
        """'model', 'micro' or 'file' for the selected workload."""
        name = self._current(self.workload)
        if name in {m["name"] for m in self.facts["models"]}:
            return "model"
        if name in {b["name"] for b in self.facts["microbenchmarks"]}:
            return "micro"
        return "file"

    def options(self) -> dict[str, Any]:
        """The capture options the form says, as `simcore.capture` takes them (unset ones left out)."""
        kind = self.workload_kind()
        o: dict[str, Any] = {"hardware": self._current(self.hardware), "workload": self._current(self.workload),
                             "dtype": self.dtype.currentData(), "detail": self.detail.currentText(),
                             "seed": self.seed.value()}
        if kind == "model":
            o["phase"] = self.phase.currentText()
            o["batch"] = parse_value(self.batch.text())
            o["context"] = parse_value(self.context.text())
            if o["phase"] != "decode":
                o["seq"] = parse_value(self.seq.text())
        if kind in ("model", "file"):
            o["layers"] = parse_value(self.layers.text())
        if kind == "micro":
            o["shape"] = self.shape.text().strip() or None
        if o["detail"] == "instruction":
            o["cores"] = self.cores.text().strip() or None
        o["compute_cores"] = parse_value(self.compute_cores.text())
        for name, editor in self.editors.items():
            o[name] = editor.value()
        if self.overwrite.isChecked():
            o["overwrite"] = True
        return {k: v for k, v in o.items() if v is not None}

    def output_path(self) -> Path:
        text = self.output.text().strip()
        return Path(os.path.expanduser(text)).absolute() if text else Path()

    def set_options(self, options: dict[str, Any]) -> None:
        """Fill the form (e.g. from a trace's meta for "Re-run with changes")."""
        self._filling = True
        try:
            if "hardware" in options:
                self._select(self.hardware, str(options["hardware"]))
            if "workload" in options:
                self._select(self.workload, str(options["workload"]))
            if options.get("phase"):
                self.phase.setCurrentText(str(options["phase"]))
            for name in ("batch", "seq", "context", "shape", "layers", "cores", "compute_cores"):
                if name in options:
                    getattr(self, name).setText(format_value(options[name]))
            if options.get("dtype"):
                self.dtype.setCurrentText(str(options["dtype"]))
            if options.get("detail"):
                self.detail.setCurrentText(str(options["detail"]))
            elif options.get("cores"):
                self.detail.setCurrentText("instruction")
            if options.get("seed") is not None:
                self.seed.setValue(int(options["seed"]))
            for name, editor in self.editors.items():
                if name in options:
                    editor.set_value(options[name])
            if options.get("overwrite"):
                self.overwrite.setChecked(True)
            if options.get("output"):
                self.output.setText(str(options["output"]))
                self._output_edited = True
        finally:
            self._filling = False
        self._update_enabled()
        self._suggest_output()

    def _select(self, combo: QComboBox, value: str) -> None:
        i = combo.findData(value)
        if i < 0:  # a file (preset .toml / op-graph .json): add it above "file..."
            i = self._add_file_item(combo, value)
        combo.setCurrentIndex(i)

    def _add_file_item(self, combo: QComboBox, path: str) -> int:
        i = combo.findData(path)
        if i >= 0:
            return i
        at = combo.count() - 1
        combo.insertItem(at, f"{Path(path).name} \u2014 {path}", path)
        return at

    def _picked(self, combo: QComboBox, index: int, what: str, pattern: str) -> None:
        if combo.itemData(index) != PICK_FILE:
            return
        path, _ = QFileDialog.getOpenFileName(self, f"Choose a {what.lower()} file", str(self.directory), pattern)
        previous = getattr(combo, "_previous", 0)
        combo.setCurrentIndex(self._add_file_item(combo, path) if path else previous)

    # -- reacting to edits ---------------------------------------------------------------
    def _hardware_changed(self, *_: Any) -> None:
        if self.hardware.currentData() != PICK_FILE:
            self.hardware._previous = self.hardware.currentIndex()
        name = self._current(self.hardware)
        dtypes = next((h["dtypes"] for h in self.facts["hardware"] if h["name"] == name), None)
        if dtypes is None and name:
            try:
                from simcore.hardware import load_hardware

                dtypes = load_hardware(name).matmul_dtypes()
            except UserError:
                from simcore.dtypes import MATMUL_DTYPES

                dtypes = list(MATMUL_DTYPES)
        self._dtypes = list(dtypes or [])
        self._fill_dtypes()
        self._changed()

    def _fill_dtypes(self) -> None:
        """The hardware's dtypes; for an op-graph file first its own (--dtype not given)."""
        items = ([(FROM_FILE, None)] if self.workload_kind() == "file" else []) + [(d, d) for d in self._dtypes]
        if [(self.dtype.itemText(i), self.dtype.itemData(i)) for i in range(self.dtype.count())] == items:
            return
        had_file_entry = self.dtype.findText(FROM_FILE) >= 0
        keep = self.dtype.currentText() or self.opts["dtype"].default
        if items and items[0][1] is None and not had_file_entry:
            keep = FROM_FILE   # a file just picked: its own dtype, until the user picks one
        self.dtype.blockSignals(True)
        self.dtype.clear()
        for text, data in items:
            self.dtype.addItem(text, data)
        self.dtype.setCurrentText(keep if keep in [t for t, _ in items] else self.opts["dtype"].default)
        self.dtype.blockSignals(False)

    def _workload_changed(self, *_: Any) -> None:
        if self.workload.currentData() != PICK_FILE:
            self.workload._previous = self.workload.currentIndex()
        bench = next((b for b in self.facts["microbenchmarks"] if b["name"] == self._current(self.workload)), None)
        if bench is not None:
            self.shape.setPlaceholderText(f"{format_value(bench['default'])}  ({bench['shape']})")
            self.shape.setToolTip(f"{tooltip(self.opts['shape'])}\n{bench['name']}: {bench['help']}")
        self._fill_dtypes()
        self._changed()

    def _update_enabled(self) -> None:
        kind = self.workload_kind()
        model = kind == "model"
        for w in (self.phase, self.batch, self.context):
            w.setEnabled(model)
        self.seq.setEnabled(model and self.phase.currentText() != "decode")
        self.shape.setEnabled(kind == "micro")
        self.layers.setEnabled(kind != "micro")
        self.cores.setEnabled(self.detail.currentText() == "instruction")

    def _changed(self, *_: Any) -> None:
        if self._filling:
            return
        self._update_enabled()
        self._suggest_output()
        self._validate_timer.start()

    def _user_edited_output(self, _text: str) -> None:
        self._output_edited = True

    def _suggest_output(self) -> None:
        if self._output_edited or self._filling:
            return
        self.output.blockSignals(True)
        self.output.setText(str(free_path(self.directory, suggest_name(self.options()))))
        self.output.blockSignals(False)
        self._validate_timer.start()

    def _browse_output(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Write the trace to", str(self.output_path()), "Traces (*.trnx)")
        if path:
            if not path.endswith(".trnx"):
                path += ".trnx"
            self._output_edited = True
            self.output.setText(path)

    # -- validating and running ---------------------------------------------------------
    def validate(self) -> bool:
        """Check the options with the simulator's own validation; show its sentence (or a
        one-line preview of the run) under the form. Returns True when Run may start."""
        from simcore.capture import CaptureConfig, resolve

        self._validate_timer.stop()
        try:
            options = self.options()
            res = resolve(CaptureConfig.from_kwargs(options))
            check_output(self.output_path(), bool(options.get("overwrite")))
        except UserError as exc:
            self.last_error = str(exc)
            self.error_label.setText(self.last_error)
            self.error_label.show()
            self.info_label.setText("")
            self.run_button.setEnabled(False)
            return False
        self.last_error = ""
        self.error_label.setText("")
        self.error_label.hide()
        wl = res.workload
        cores = f"instruction detail on cores {format_value(res.detail_cores)}" if res.detail == "instruction" else "kernel detail"
        self.info_label.setText(f"{wl.display}: {len(wl.ops):,} ops on {res.compute_cores} compute core(s) of "
                                f"{res.hw.name}, {cores}.")
        self.run_button.setEnabled(self.worker is None)
        return True

    def run(self) -> None:
        """Validate, then start the capture in a worker thread."""
        if self.worker is not None or not self.validate():
            return
        comp = self.compression.currentText()
        worker = self.worker = CaptureWorker(self.options(), self.output_path(), None if comp == "none" else comp, self)
        worker.progressed.connect(self._progress)
        worker.succeeded.connect(self._succeeded)
        worker.failed.connect(self._failed)
        worker.cancelled.connect(self._cancelled)
        worker.finished.connect(worker.deleteLater)
        self.form.setEnabled(False)
        self.run_button.setEnabled(False)
        self.cancel_button.setText("Cancel")
        self.cancel_button.setEnabled(True)
        self.progress.setValue(0)
        self.status.setText("starting\u2026")
        worker.start()

    @property
    def running(self) -> bool:
        return self.worker is not None

    def cancel(self) -> None:
        """Stop the running capture; nothing is left at the output path."""
        if self.worker is not None:
            self.worker.cancel()
            self.cancel_button.setEnabled(False)
            self.status.setText("cancelling\u2026")

    def _cancel_or_close(self) -> None:  # the Cancel/Close button: cancel a run, else close
        if self.worker is not None:
            self.cancel()
        else:
            self.reject()

    def reject(self) -> None:  # Esc or the title bar's close button: cancel a run, then close
        if self.worker is not None:
            self._close_after_cancel = True
            self.cancel()
            return
        super().reject()

    def wait(self, timeout_ms: int = 600_000) -> None:
        """Block until the running capture ends (scripts and tests)."""
        if self.worker is not None:
            self.worker.wait(timeout_ms)
        from PySide6.QtWidgets import QApplication

        QApplication.processEvents()

    def _progress(self, fraction: float, message: str) -> None:
        if self.sender() is not self.worker or self.worker.cancel_requested:
            return
        self.progress.setValue(int(fraction * 1000))
        self.status.setText("writing the trace\u2026" if fraction >= 1.0 else message)

    def _finish(self) -> None:
        self.worker = None
        self.form.setEnabled(True)
        self.cancel_button.setText("Close")
        self.cancel_button.setEnabled(True)
        self.validate()

    def _succeeded(self, path: Path) -> None:
        self.progress.setValue(1000)
        self.status.setText(f"wrote {path}")
        self._finish()
        self.captured.emit(path)
        self.accept()

    def _failed(self, message: str) -> None:
        self._finish()
        self.progress.setValue(0)
        self.status.setText("capture failed")
        self.last_error = message
        self.error_label.setText(message)
        self.error_label.show()
        if self.show_error_dialogs:
            QMessageBox.critical(self, "Capture failed", message)

    def _cancelled(self) -> None:
        self._finish()
        self.progress.setValue(0)
        self.status.setText("cancelled; nothing was written.")
        if self._close_after_cancel:
            self._close_after_cancel = False
            super().reject()
