"""One dtype table (simcore/dtypes.py): the simulator, the trace vocabulary and the analyses
read bytes, MX-ness, BF16 weights and peaks from it, and a capture checks its dtype once."""

from __future__ import annotations

import json

import pytest

import simcore
from explorer.model.analysis.peaks import Peaks
from simcore.capture import CaptureConfig, resolve
from simcore.errors import ConfigError
from simcore.dtypes import DTYPE_TABLE, MATMUL_DTYPES, MX_DTYPES, bf16_flop_weight, dtype_bytes, peak_tflops
from simcore.hardware import Hardware, load_hardware, preset_names
from simcore.lowering.program import DTYPES
from simcore.trace import open_trace


def test_the_table_orders_the_trace_vocabulary_and_the_dtype_choices():
    assert DTYPES.values == list(DTYPE_TABLE)
    specs = {s["name"]: s for s in simcore.capture.choices()["option_specs"]}
    assert list(MATMUL_DTYPES) == specs["dtype"]["choices"]
    assert MX_DTYPES == ("mxfp8", "mxfp4") and dtype_bytes("mxfp8") == 1 + 1 / 32 and dtype_bytes("bf16") == 2


@pytest.mark.parametrize("preset", preset_names())
def test_weights_and_peaks_of_every_preset_come_from_one_lookup(preset):
    t = load_hardware(preset).tensor
    peaks = Peaks.from_meta(load_hardware(preset).meta)
    for dtype in t["peak_tflops"]:
        assert peaks.weight(dtype) == bf16_flop_weight(t["bf16_flop_weight"], t["peak_tflops"], dtype)
        assert peaks.peak_tflops_for(dtype) == peak_tflops(t["bf16_flop_weight"], t["peak_tflops"], dtype)
    # without the preset's weight table the weight is the ratio of peaks
    assert bf16_flop_weight({}, t["peak_tflops"], "fp8") == t["peak_tflops"]["bf16"] / t["peak_tflops"]["fp8"]


def test_a_capture_checks_its_dtype_once(tmp_path, monkeypatch):
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"dtype": "fp8", "ops": [{"name": f"mm{i}", "kind": "matmul", "m": 128, "k": 128,
                                                            "n": 128} for i in range(20)]}))
    checked = []
    original = Hardware.check_dtype
    monkeypatch.setattr(Hardware, "check_dtype", lambda hw, dt: checked.append(dt) or original(hw, dt))
    for options in (dict(workload="gemm", dtype="mxfp8"), dict(workload="llama3.1-8b", layers=1, dtype="fp8"),
                    dict(workload=str(graph), dtype="bf16"), dict(workload=str(graph))):
        checked.clear()
        resolve(CaptureConfig(**options))
        assert len(checked) == 1, (options, checked)


def test_an_op_graph_op_of_a_dtype_the_hardware_lacks_fails_with_its_sentence(tmp_path):
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"ops": [{"name": "mm", "kind": "matmul", "m": 128, "k": 128, "n": 128,
                                          "dtype": "mxfp8"}]}))
    with pytest.raises(ConfigError, match="trn2 has no mxfp8 support"):
        resolve(CaptureConfig(hardware="trn2", workload=str(graph)))
    out = simcore.capture(out_path=tmp_path / "t.trnx", workload=str(graph), compute_cores=1)
    assert set(open_trace(out).to_pandas("kernels")["dtype"].astype(str)) == {"mxfp8"}
