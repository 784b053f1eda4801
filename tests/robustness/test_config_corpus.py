"""Hardware preset files (TOML) and workload op-graph files (JSON): each malformed input
loads into a usable object or fails with one `ConfigError` sentence, never a traceback."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustness.contract import assert_one_sentence
from robustness.mutations import JSON_VALUES, MUTATION, mutate
from simcore.errors import UserError
from simcore.hardware.spec import load_hardware
from simcore.workloads.opgraph import load_opgraph

PRESET = (Path(__file__).parents[2] / "simcore" / "hardware" / "presets" / "trn3.toml").read_text()
OPGRAPH = {
    "name": "block", "dtype": "bf16", "repeat": 2,
    "layers": [{"name": "block", "ops": [
        {"name": "qkv", "kind": "matmul", "m": 256, "k": 512, "n": 768},
        {"name": "attn", "kind": "attention", "batch": 1, "q_heads": 8, "kv_heads": 2, "q_len": 128, "kv_len": 128, "head_dim": 64},
        {"name": "norm", "kind": "rmsnorm", "rows": 256, "cols": 512}]}],
}


def _use_hardware(path: Path) -> bool:
    """Load a preset and use what the simulator reads from it; True when it loaded."""
    try:
        hw = load_hardware(path)
        facts = [hw.name, hw.chips, hw.cores_per_chip, hw.sbuf_bytes, hw.partitions, hw.psum_banks, hw.hbm_capacity,
                 hw.hbm_bytes_per_ns, hw.core_dma_bytes_per_ns, hw.dma_queues, hw.has_vector_exp, hw.has_quantize_mx, hw.meta]
        for d in hw.matmul_dtypes():
            facts += [hw.derived_peak_tflops(d), hw.peak_flops_per_ns(d), hw.contraction_per_pass(d), hw.matmul_cycle_factor(d)]
        json.dumps(hw.meta)  # it goes into meta.json
    except UserError as exc:
        assert_one_sentence(exc)
        return False
    return True


def _use_opgraph(path: Path) -> bool:
    try:
        wl = load_opgraph(path)
        assert wl.ops
    except UserError as exc:
        assert_one_sentence(exc)
        return False
    return True


def _toml_edit(old: str, new: str):
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return edit


PRESET_CASES = {
    "empty": lambda t: "",
    "binary": lambda t: "\x00\x01\x02garbage",
    "not-toml": lambda t: "{ this is json }",
    "truncated": lambda t: t[: len(t) // 2],
    "no-tensor": lambda t: t.replace("[tensor]", "[tensorx]", 1),
    "string-clock": _toml_edit("clock_ghz = 2.4", 'clock_ghz = "fast"'),
    "zero-clock": _toml_edit("clock_ghz = 2.4", "clock_ghz = 0"),
    "negative-rows": _toml_edit("rows = 128", "rows = -128"),
    "string-rows": _toml_edit("rows = 128", 'rows = "128"'),
    "float-cores": _toml_edit("cores_per_chip = 8", "cores_per_chip = 8.5"),
    "zero-cores": _toml_edit("cores_per_chip = 8", "cores_per_chip = 0"),
    "bool-chips": _toml_edit("chips = 1", "chips = true"),
    "huge-chips": _toml_edit("chips = 1", "chips = 9223372036854775807"),
    "inf-bandwidth": lambda t: t.replace("bandwidth_gbps = ", "bandwidth_gbps = inf #", 1),
    "nan-clock": _toml_edit("clock_ghz = 2.4", "clock_ghz = nan"),
    "macs-not-table": _toml_edit("macs_per_pe_cycle = {", "macs_per_pe_cycle = 5 #{"),
    "peak-string": lambda t: re.sub(r"peak_tflops = \{ bf16 = [0-9.]+", 'peak_tflops = { bf16 = "x"', t, count=1),
    "base-loop": lambda t: 'base = "self-loop"\n' + t,
    "base-number": lambda t: "base = 5\n" + t,
    "section-is-value": lambda t: t.replace("[hbm]", "hbm = 5\n[hbmx]", 1),
}

OPGRAPH_CASES = {
    "empty": b"",
    "not-json": b"{layers: }",
    "list": b"[]",
    "no-layers": json.dumps({"name": "x"}).encode(),
    "layers-empty": json.dumps({"layers": []}).encode(),
    "layers-string": json.dumps({"layers": "abc"}).encode(),
    "layer-not-object": json.dumps({"layers": [5]}).encode(),
    "ops-empty": json.dumps({"ops": []}).encode(),
    "op-not-object": json.dumps({"ops": [5]}).encode(),
    "unknown-kind": json.dumps({"ops": [{"kind": "teleport"}]}).encode(),
    "kind-list": json.dumps({"ops": [{"kind": ["matmul"]}]}).encode(),
    "missing-dims": json.dumps({"ops": [{"kind": "matmul", "m": 4}]}).encode(),
    "zero-dim": json.dumps({"ops": [{"kind": "matmul", "m": 0, "k": 4, "n": 4}]}).encode(),
    "float-dim": json.dumps({"ops": [{"kind": "matmul", "m": 1.5, "k": 4, "n": 4}]}).encode(),
    "huge-dim": json.dumps({"ops": [{"kind": "matmul", "m": 10**40, "k": 4, "n": 4}]}).encode(),
    "repeat-zero": json.dumps({**OPGRAPH, "repeat": 0}).encode(),
    "repeat-string": json.dumps({**OPGRAPH, "repeat": "2"}).encode(),
    "repeat-huge": json.dumps({**OPGRAPH, "repeat": 10**18}).encode(),
    "repeat-bool": json.dumps({**OPGRAPH, "repeat": True}).encode(),
    "heads-mismatch": json.dumps({"ops": [{"kind": "attention", "batch": 1, "q_heads": 7, "kv_heads": 2, "q_len": 4, "kv_len": 4}]}).encode(),
    "invalid-utf8": json.dumps(OPGRAPH).encode().replace(b"block", b"\xff\xfe", 1),
    "dtype-object": json.dumps({**OPGRAPH, "dtype": {"a": 1}}).encode(),
    "name-list": json.dumps({**OPGRAPH, "name": [1, 2]}).encode(),
}


def test_corpus_size() -> None:
    assert len(PRESET_CASES) + len(OPGRAPH_CASES) >= 40


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(PRESET_CASES))
def test_preset_corpus(name: str, tmp_path: Path) -> None:
    p = tmp_path / f"{name}.toml"
    p.write_text(PRESET_CASES[name](PRESET), encoding="utf-8")
    _use_hardware(p)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(OPGRAPH_CASES))
def test_opgraph_corpus(name: str, tmp_path: Path) -> None:
    p = tmp_path / f"{name}.json"
    p.write_bytes(OPGRAPH_CASES[name])
    _use_opgraph(p)


def test_the_unmodified_files_load(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(PRESET)
    (tmp_path / "g.json").write_text(json.dumps(OPGRAPH))
    assert _use_hardware(tmp_path / "p.toml") and _use_opgraph(tmp_path / "g.json")


@pytest.mark.timeout(300)
@settings(max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", 60)), deadline=None)
@given(ops=st.lists(MUTATION, min_size=1, max_size=4))
def test_fuzzed_preset_bytes(ops: list) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "p.toml"
        p.write_bytes(mutate(PRESET.encode(), ops))
        _use_hardware(p)


@pytest.mark.timeout(300)
@settings(max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", 60)), deadline=None)
@given(where=st.sampled_from(["name", "dtype", "repeat", "layers", "op.kind", "op.m", "op.k", "op.n", "op.name", "op.dtype",
                              "attn.q_heads", "attn.kv_len", "attn.head_dim", "attn.causal"]),
       value=JSON_VALUES)
def test_fuzzed_opgraph_values(where: str, value: object) -> None:
    g = json.loads(json.dumps(OPGRAPH))
    if where.startswith("op."):
        g["layers"][0]["ops"][0][where[3:]] = value
    elif where.startswith("attn."):
        g["layers"][0]["ops"][1][where[5:]] = value
    else:
        g[where] = value
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "g.json"
        p.write_text(json.dumps(g))
        _use_opgraph(p)


NUMERIC_KEYS = ["chips", "cores_per_chip", "tensor.rows", "tensor.cols", "tensor.clock_ghz", "tensor.moving_free_max",
                "tensor.matmul_overhead_cycles", "tensor.macs_per_pe_cycle.bf16", "tensor.peak_tflops.bf16",
                "vector.clock_ghz", "vector.elems_per_cycle.bf16", "scalar.clock_ghz", "gpsimd.elems_per_cycle",
                "sbuf.bytes_per_core", "sbuf.partitions", "psum.banks", "psum.bank_bytes_per_partition",
                "hbm.bandwidth_gbps", "hbm.capacity_bytes", "dma.engine_gbps", "dma.latency_ns", "dma.sim_queues_per_core",
                "link.bandwidth_gbps", "runtime.kernel_launch_ns"]
EXTREMES = st.sampled_from([0, 1, -1, 1e-300, 1e-9, 1e300, 2**31, 2**62, 2**62 * 1.0, 0.5, 3])


@pytest.mark.timeout(300)
@settings(max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", 30)), deadline=None)
@given(key=st.sampled_from(NUMERIC_KEYS), value=EXTREMES)
def test_fuzzed_preset_numbers_load_and_capture_or_fail_in_one_sentence(key: str, value: object) -> None:
    """Extreme numbers (1e-300 clocks, 2^62 cores, a tiny SBUF): the preset is refused in one
    sentence, or a small GEMM captures with it (no OverflowError, ValueError or MemoryError)."""
    import tomllib

    import simcore

    data = tomllib.loads(PRESET)
    node = data
    *path, last = key.split(".")
    for p in path:
        node = node[p]
    node[last] = value
    lines: list[str] = []

    def emit(prefix: str, table: dict) -> None:  # TOML back out: scalars and inline tables first, then sub-tables
        if prefix:
            lines.append(f"[{prefix}]")
        subtables = {}
        for k, v in table.items():
            if not isinstance(v, dict):
                lines.append(f"{k} = {json.dumps(v)}")
            elif all(not isinstance(x, dict) for x in v.values()) and "." in prefix + "." and k not in data:
                lines.append(f"{k} = {{ {', '.join(f'{a} = {json.dumps(b)}' for a, b in v.items())} }}")
            else:
                subtables[k] = v
        for k, v in subtables.items():
            emit(f"{prefix}.{k}" if prefix else k, v)

    emit("", data)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "p.toml"
        p.write_text("\n".join(lines) + "\n")
        if not _use_hardware(p):
            return
        try:
            simcore.capture(hardware=str(p), workload="gemm", shape="256,256,256", out_path=Path(d) / "t.trnx")
        except UserError as exc:
            assert_one_sentence(exc)
            assert not (Path(d) / "t.trnx").exists()
