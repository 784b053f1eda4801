"""`trnx ops`: the operator table's numbers for scripts, equal to the GUI tree's (Hierarchy rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from model import analysis_traces as at

from explorer.cli.main import cli, main
from explorer.model.analysis.hierarchy import Hierarchy
from simcore.trace import open_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def ops(*args) -> list[dict] | str:
    res = CliRunner().invoke(cli, ["ops", *map(str, args)])
    assert res.exit_code == 0, res.output
    return json.loads(res.output) if "--json" in args else res.output


@pytest.fixture(scope="module")
def basic(tmp_path_factory):
    return at.write(tmp_path_factory.mktemp("ops") / "basic.trnx")


def test_json_rows_carry_the_trees_numbers(basic):
    rows = ops(basic, "--json")
    assert [r["name"] for r in rows] == ["attention.qkv_proj", "all_reduce", "attention.softmax"]  # longest first
    h = Hierarchy(open_trace(basic)).rows().set_index("node")
    for r in rows:
        assert {"level", "name", "time_ns", "flops", "bytes", "mfu_percent", "mfu_bf16_percent", "mbu_percent",
                "roofline_percent", "bound"} <= set(r)
        tree = h.loc[r["node"]]
        assert r["level"] == "op" and r["path"] == f"layer 0 / {r['name']}"
        assert (r["time_ns"], r["flops"], r["bytes"], r["bound"]) == (tree["dur_ns"], tree["flops"], tree["hbm_bytes"],
                                                                         tree["bound"])
        for key in ("mfu_percent", "mfu_bf16_percent", "mbu_percent", "roofline_percent"):
            assert r[key] == (None if tree[key] != tree[key] else pytest.approx(tree[key]))
    qkv = rows[0]
    assert qkv["mfu_percent"] == pytest.approx(100 * (4e6 / 79e3 + 8e6 / 315e3 + 4e6 / 158e3) / 3 / 5000)
    assert rows[1]["bound"] == "collective" and rows[1]["flops"] == 0


def test_kernel_level_sorts_and_text(basic):
    rows = ops(basic, "--level", "kernel", "--sort", "start", "--json")
    assert [r["node"] for r in rows] == ["kernel:100", "kernel:102", "kernel:103", "kernel:101"]
    assert rows[2]["dtype"] == "fp8" and rows[2]["mfu_percent"] == pytest.approx(100 * 4e6 / 158e3 / 5000)
    assert [r["node"] for r in ops(basic, "--level", "kernel", "--top", "2", "--json")] == ["kernel:103", "kernel:102"]
    text = ops(basic, "--level", "kernel")
    header = text.splitlines()[0].split()
    assert header[:3] == ["name", "time", "share"] and "roofline" in header and "chip.core" in header
    assert "layer 0 / attention.qkv_proj / matmul_qkv" in text and "5 us" in text


def test_the_decode_sample_reads_near_its_hbm_share():
    rows = ops(SAMPLES / "llama3.1-8b-decode.trnx", "--level", "layer", "--json")
    assert len(rows) == 32 and all(r["bound"] == "hbm" for r in rows)
    assert all(40 < r["roofline_percent"] < 100 and r["mbu_percent"] == pytest.approx(r["roofline_percent"])
               for r in rows)


def _kernel_time_by_bound(kernels: list[dict], prefix: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in kernels:
        if k["path"].startswith(prefix + " / ") and k["bound"] != "unknown":
            out[k["bound"]] = out.get(k["bound"], 0) + k["time_ns"]
    return out


def test_a_straggler_does_not_make_hbm_bound_layers_read_compute():
    """TP16 with a straggler: a layer's span covers the slow rank, so its MFU is 0.5% and its own
    rates sit far below both roofs; it reads what its kernels (HBM-bound) read, not `compute`."""
    trace = SAMPLES / "llama3.1-70b-tp16-straggler.trnx"
    kernels = ops(trace, "--level", "kernel", "--json")
    for level in ("layer", "op"):
        rows = [r for r in ops(trace, "--level", level, "--json") if r["bound"] != "collective"]
        for r in rows:
            by_bound = _kernel_time_by_bound(kernels, r["path"])
            assert r["bound"] == max(by_bound, key=by_bound.get), (r["path"], by_bound)
            assert r["bound"] != "compute" or r["mfu_percent"] > 10, r["path"]
    layers = ops(trace, "--level", "layer", "--json")
    assert len(layers) == 4 and all(r["bound"] == "hbm" and r["mfu_percent"] < 5 for r in layers)
    mlps = [r for r in ops(trace, "--json") if r["name"] == "mlp.fused_mlp"]
    assert len(mlps) == 4 and {r["bound"] for r in mlps} == {"hbm"}


def test_a_gemm_still_reads_compute_at_every_level():
    for level in ("layer", "op", "kernel"):
        rows = ops(SAMPLES / "gemm-4096-bf16.trnx", "--level", level, "--json")
        assert rows and {r["bound"] for r in rows} == {"compute"}, level


def test_bad_input_is_one_sentence(basic, tmp_path, capsys):
    for args, words in (([basic, "--top", "0"], "--top must be a positive"),
                        ([basic, "--level", "instruction"], "instruction"),
                        ([tmp_path / "missing.trnx"], "missing.trnx")):
        with pytest.raises(SystemExit) as exc:
            main(["ops", *map(str, args)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err


def test_chips_narrow_every_op_to_that_chips_kernels_and_collectives(basic, trnx):
    rows = ops(basic, "--chips", "1", "--json")
    assert [r["name"] for r in rows] == ["attention.qkv_proj", "all_reduce"]  # softmax ran on chip 0 only
    qkv = rows[0]
    assert (qkv["flops"], qkv["bytes"], qkv["time_ns"]) == (4_000_000, 2_000_000 + 500_000, 5000)  # kernel 103 alone
    assert qkv["mfu_percent"] == pytest.approx(100 * 4e6 / 158e3 / 5000)  # one fp8 core over the op's span
    assert [r["node"] for r in ops(basic, "--chips", "1", "--level", "kernel", "--json")] == ["kernel:103"]
    assert ops(basic, "--chip", "1", "--json") == rows  # summary's older repeatable spelling too
    assert ops(basic, "--chips", "0,1", "--json") == ops(basic, "--json")  # every chip: the whole table


def test_range_keeps_whole_rows_overlapping_the_window_and_cores_narrow_within_a_chip(basic):
    rows = ops(basic, "--range", "2.5us:4us", "--json")
    # kernels 101 [3000,3100), 102 [0,4000) and 103 [0,5000) overlap; 100 [0,2200) does not
    assert {r["name"]: r["flops"] for r in rows} == {"attention.qkv_proj": 12_000_000, "attention.softmax": 10_000}
    assert rows[0]["time_ns"] == 5000  # whole, not clipped
    one_core = ops(basic, "--range", "2500:4000", "--chips", "0", "--cores", "1", "--level", "kernel", "--json")
    whole = {r["node"]: r for r in ops(basic, "--level", "kernel", "--json")}
    assert [r["node"] for r in one_core] == ["kernel:102"]
    assert one_core[0]["roofline_percent"] == pytest.approx(whole["kernel:102"]["roofline_percent"])  # same HBM share
    layer = ops(basic, "--range", "2500:4000", "--chips", "0", "--cores", "1", "--level", "layer", "--json")
    assert [(r["name"], r["flops"]) for r in layer] == [("layer 0", 8_000_000)]
    assert "(no op rows in this trace within the selection)" in ops(basic, "--range", "9us:10us")
    text = ops(basic, "--range", "2.5us:", "--chips", "0", "--cores", "1").splitlines()
    assert text[0] == "scope  2500..10000 ns, chips 0, cores 1"  # the open end closed on the trace's span
    assert text[1].split()[:3] == ["name", "time", "share"] and "attention.qkv_proj" in text[2]


def test_bad_scope_is_one_sentence_as_in_summary(basic, trnx):
    for args, says in ((["--chips", "7"], "chip 7 is not in this trace (chips: 0..1)."),
                       (["--range", "5us:1us"], "--range '5us:1us' ends before it starts; the window is empty."),
                       (["--cores", "x"], "--cores 'x' is not a comma-separated list of core numbers (e.g. 0,3).")):
        code, out, err = trnx("ops", str(basic), *args)
        assert (code, out) == (2, "") and err.strip().endswith(says) and "Traceback" not in err
        assert trnx("summary", str(basic), *args)[2] == err  # the same grammar and sentence
