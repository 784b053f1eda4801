"""`trnx capture` and `trnx presets` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from simcore.trace import open_trace


def trnx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True)


def test_capture_gemm_mxfp8(tmp_path):
    out = tmp_path / "gemm.trnx"
    proc = trnx("capture", "--hardware", "trn3", "--workload", "gemm", "--shape", "2048,2048,2048", "--dtype", "mxfp8",
                "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    t = open_trace(out)
    assert t.workload["dtype"] == "mxfp8" and t.workload["shape"] == [2048, 2048, 2048]
    k = t.to_pandas("kernels")
    assert len(k) == 1 and k.dtype.astype(str).iloc[0] == "mxfp8"


def test_capture_model_with_instruction_detail_validates(tmp_path):
    out = tmp_path / "pre.trnx"
    proc = trnx("capture", "--workload", "llama3.1-8b", "--phase", "prefill", "--batch", "1", "--seq", "512",
                "--layers", "1", "--detail", "instruction", "--cores", "all", "-o", str(out), "-q")
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert trnx("validate", str(out)).returncode == 0
    t = open_trace(out)
    assert t.meta["capture"]["cores"] == list(range(8)) and t.row_count("instructions") > 0


@pytest.mark.parametrize("args, message", [
    (["--hardware", "trn9"], "unknown hardware preset 'trn9'"),
    (["--hardware", "trn2", "--workload", "gemm", "--dtype", "mxfp8"], "trn2 has no mxfp8 support"),
    (["--workload", "llama3.1-405b"], "needs 8"),
    (["--workload", "gemm", "--shape", "64,64"], "must be M,K,N"),
    (["--workload", "llama3.1-8b", "--compute-cores", "3"], "do not divide over 3 compute cores"),
    (["--workload", "llama3.1-8b", "--cores", "0", "--detail", "kernel"], "add --detail instruction"),
])
def test_bad_requests_exit_2_with_one_line(tmp_path, args, message):
    out = tmp_path / "x.trnx"
    proc = trnx("capture", *args, "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr.startswith("trnx: error: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_presets_lists_hardware_models_and_benchmarks():
    proc = trnx("presets")
    assert proc.returncode == 0
    for word in ("trn3", "trn2", "llama3.1-405b", "deepseek-v3", "qwen3-30b-a3b", "mixtral-8x7b", "gemm", "softmax"):
        assert word in proc.stdout
    data = json.loads(trnx("presets", "--json").stdout)
    trn3 = next(h for h in data["hardware"] if h["name"] == "trn3")
    assert trn3["peak_tflops_per_core"]["mxfp8"] == pytest.approx(314.57) and "mxfp4" in trn3["dtypes"]  # 2 x 128 x 128 x 2.4 GHz x 4
    assert {m["name"] for m in data["models"]} >= {"llama3.1-8b", "llama3.1-70b", "mixtral-8x7b"}


def test_capture_help_lists_the_flags():
    out = trnx("capture", "--help").stdout
    for flag in ("--hardware", "--workload", "--phase", "--batch", "--seq", "--context", "--shape", "--dtype",
                 "--layers", "--detail", "--cores", "--seed", "--output"):
        assert flag in out
