"""Capture options are declared once (simcore/capture/options.py): the CLI, choices(), the docs
and re-runs all come from that declaration, and an option given explicitly always wins."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import simcore
from explorer.cli.main import cli
from explorer.model import idle_cores
from simcore.capture.docgen import DOC, main as docgen_main, options_markdown
from simcore.capture.options import OPTIONS, CaptureConfig, Option
from simcore.errors import ConfigError
from simcore.trace import open_trace

FP8_GRAPH = {"name": "fp8-block", "dtype": "fp8",
             "ops": [{"name": "proj", "kind": "matmul", "m": 256, "k": 512, "n": 256}]}


def run_capture(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, ["capture", *args, "-q"], catch_exceptions=False)


@pytest.fixture
def fp8_graph(tmp_path) -> Path:
    path = tmp_path / "fp8-block.json"
    path.write_text(json.dumps(FP8_GRAPH))
    return path


def kernel_dtypes(path: Path) -> set[str]:
    return set(open_trace(path).to_pandas("kernels")["dtype"].astype(str))


def test_an_explicit_dtype_wins_over_the_op_graph_files(tmp_path, fp8_graph):
    own = tmp_path / "own.trnx"
    assert run_capture("-w", str(fp8_graph), "--compute-cores", "1", "-o", str(own)).exit_code == 0
    assert kernel_dtypes(own) == {"fp8"} and open_trace(own).workload["dtype"] == "fp8"
    # bf16 is also the default: given explicitly it must still override the file's fp8
    bf16 = tmp_path / "bf16.trnx"
    assert run_capture("-w", str(fp8_graph), "--compute-cores", "1", "--dtype", "bf16", "-o", str(bf16)).exit_code == 0
    assert kernel_dtypes(bf16) == {"bf16"} and open_trace(bf16).workload["dtype"] == "bf16"
    assert open_trace(bf16).meta["capture"]["options"]["dtype"] == "bf16"


def test_every_declared_option_is_a_trnx_capture_flag_that_reaches_the_simulator(tmp_path, monkeypatch):
    params = {p.name: p for p in cli.get_command(click.Context(cli), "capture").params}
    for opt in OPTIONS.values():
        assert opt.flag in params[opt.name].opts, opt.name
        assert opt.help in params[opt.name].help
    seen = {}
    monkeypatch.setattr(simcore.capture, "capture", lambda **kw: seen.update(kw) or Path(kw["out_path"]))
    monkeypatch.setattr(idle_cores, "idle_cores_note_of", lambda path: None)  # (nothing was written to look at)
    out = tmp_path / "x.trnx"
    result = CliRunner().invoke(cli, ["capture", "-H", "trn3-ultraserver-gen1", "--tp", "4", "--jitter", "2%",
                                      "--straggler", "chip=1,slowdown=1.3", "--straggler", "chip=2,delay=5us",
                                      "--no-sequence-parallel", "--expert-skew", "0.5", "--overwrite", "-o", str(out),
                                      "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    seen.pop("progress"), seen.pop("compression"), seen.pop("observer")  # (the timeline index recorder)
    # only what was given (and the flag's False) reaches simcore: the rest is the simulator's default
    assert seen == {"out_path": str(out), "hardware": "trn3-ultraserver-gen1", "tp": 4, "jitter": "2%",
                    "straggler": ["chip=1,slowdown=1.3", "chip=2,delay=5us"], "sequence_parallel": False,
                    "expert_skew": 0.5, "overwrite": True}


def test_the_given_options_are_recorded_and_capture_the_same_trace_again(tmp_path):
    first = simcore.capture(out_path=tmp_path / "a.trnx", workload="gemm", shape="256,512,256", dtype="fp8",
                            cores="0", workers=2)
    given = open_trace(first).meta["capture"]["options"]
    assert given == {"workload": "gemm", "shape": "256,512,256", "dtype": "fp8", "cores": "0"}  # workers: no effect
    again = simcore.capture(given, tmp_path / "b.trnx")
    for table in ("kernels", "instructions", "dma"):
        assert (first / f"{table}.arrow").read_bytes() == (again / f"{table}.arrow").read_bytes()


@pytest.mark.parametrize("name, text, value", [
    ("tp", "16", 16), ("expert_skew", "0.5", 0.5), ("dtype", "mxfp8", "mxfp8"), ("sequence_parallel", "off", False),
    ("overwrite", "true", True), ("straggler", "chip=1,delay=2us", ["chip=1,delay=2us"]), ("jitter", "2%", "2%"),
])
def test_an_option_parses_its_text(name, text, value):
    assert OPTIONS[name].parse(text) == value


@pytest.mark.parametrize("name, text, message", [
    ("tp", "eight", "--tp must be an integer (got 'eight')."),
    ("expert_skew", "nan", "--expert-skew must be a number (got 'nan')."),
    ("dtype", "int4", "unknown --dtype 'int4'; choose one of bf16, fp16, fp8, mxfp8, mxfp4, fp32."),
    ("sequence_parallel", "maybe", "--sequence-parallel must be true or false (got 'maybe')."),
])
def test_a_bad_option_text_is_one_sentence(name, text, message):
    with pytest.raises(ConfigError) as info:
        OPTIONS[name].parse(text)
    assert str(info.value) == message


def test_choices_describe_every_option_from_its_declaration():
    facts = simcore.capture.choices()
    assert list(facts["options"]) == list(OPTIONS)
    specs = {s["name"]: s for s in facts["option_specs"]}
    assert specs["dtype"]["choices"] == list(OPTIONS["dtype"].choices) and specs["dtype"]["default"] == "bf16"
    assert specs["context"]["shown_default"] == "4096 for decode, else 0"
    assert facts["defaults"]["seq"] == OPTIONS["seq"].default == 2048
    json.dumps(facts)  # what `trnx presets --json` prints


def test_not_given_is_none_where_it_matters_and_the_default_applies():
    c = CaptureConfig()
    assert (c.dtype, c.phase, c.seq, c.tp) == (None, None, None, None)
    assert (c.hardware, c.workload, c.batch, c.seed, c.cc_algorithm) == ("trn3", "llama3.1-8b", 1, 0, "auto")
    res = simcore.capture.resolve(CaptureConfig(layers=1))
    assert (res.workload.dtype, res.workload.phase) == ("bf16", "decode")
    assert isinstance(Option("x", "").parse("y"), str)


def test_docs_option_table_is_generated_from_the_declarations(tmp_path):
    assert options_markdown() in DOC.read_text(encoding="utf-8"), "run python -m simcore.capture.docgen"
    stale = tmp_path / "simulator.md"
    stale.write_text(DOC.read_text(encoding="utf-8").replace("Sequences per step.", "Sequences."))
    assert docgen_main(["--check", "--output", str(stale)]) == 1
    assert docgen_main(["--output", str(stale)]) == 0 and docgen_main(["--check", "--output", str(stale)]) == 0
