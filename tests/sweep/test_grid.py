"""--grid through the capture options' declaration: every recorded option is a grid key, parsed
by its own parser, with one-sentence errors (no captures here: fast)."""

from __future__ import annotations

import dataclasses

import pytest

from explorer.sweep.grid import configurations, grid_options, parse_grid
from explorer.sweep.spec import SweepSpec
from simcore.capture.options import OPTIONS, CaptureConfig, declared, option
from simcore.errors import UserError

SAMPLES = {"int": ("1,2", (1, 2)), "float": ("0.5,1", (0.5, 1.0)), "switch": ("on,off", (True, False)),
           "flag": ("true,false", (True, False)), "text": ("abc,abd", ("abc", "abd")),
           "repeated": ("chip=1,delay=2us;chip=2,delay=3us", (["chip=1,delay=2us"], ["chip=2,delay=3us"]))}


@pytest.mark.parametrize("name", sorted(grid_options()))
def test_every_recorded_capture_option_is_a_grid_key_parsed_by_its_own_parser(name):
    opt = OPTIONS[name]
    if opt.kind == "choice":
        text, values = ",".join(opt.choices[:2]), tuple(opt.choices[:2])
    else:
        text, values = SAMPLES[opt.kind]
    for spelling in (opt.flag, opt.flag[2:], name):
        (axis,) = parse_grid([f"{spelling}={text}"])
        assert axis.name == name and axis.values == values


def test_an_option_declared_later_is_a_grid_key_with_no_sweep_change():
    @dataclasses.dataclass
    class Grown(CaptureConfig):
        lnc: int | None = option("Logical NeuronCore size.", kind="int", default=2, given_only=True)
        fuse_qkv: bool | None = option("Fuse Q, K and V projections.", kind="switch")

    opts = {o.name: o for o in declared(Grown)}
    a, b = parse_grid(["lnc=1,2", "fuse-qkv=on,off"], options=opts)
    assert (a.values, b.values) == ((1, 2), (True, False))
    with pytest.raises(UserError, match=r"^--lnc must be an integer \(got 'two'\)\.$"):
        parse_grid(["lnc=1,two"], options=opts)


def test_values_split_on_semicolons_when_they_hold_commas_and_configurations_vary_the_first_key_slowest():
    axes = parse_grid(["shape=256,256,256;512,512,512", "dtype=bf16,mxfp8", "seed=0,1"])
    assert axes[0].values == ("256,256,256", "512,512,512")
    configs = configurations(axes)
    assert len(configs) == 8 and [c.index for c in configs] == list(range(8))
    assert configs[0].values == {"shape": "256,256,256", "dtype": "bf16", "seed": 0}
    assert configs[1].values == {"shape": "256,256,256", "dtype": "bf16", "seed": 1}
    assert configs[-1].label() == "shape=512,512,512 dtype=mxfp8 seed=1"
    assert configs[1].key == '{"shape":"256,256,256","dtype":"bf16","seed":1}'


@pytest.mark.parametrize("items, fixed, message", [
    (["tp"], {}, r"^--grid 'tp' is not KEY=V1,V2,\.\.\. \(e\.g\. --grid tp=8,16\)\.$"),
    (["tpp=1,2"], {}, r"^unknown --grid key 'tpp'; grid keys are capture options: hardware, workload, .*\.$"),
    (["tp=8,x"], {}, r"^--tp must be an integer \(got 'x'\)\.$"),
    (["dtype=bf16,fp4"], {}, r"^unknown --dtype 'fp4'; choose one of bf16, .*\.$"),
    (["tp=8,,16"], {}, r"^--grid tp has an empty value; list values like tp=A,B\.$"),
    (["tp=8;8"], {}, r"^--grid tp lists '8' twice; give each value once\.$"),
    (["shape=8,8,8"], {}, r"^--grid shape lists '8' twice; give each value once \(separate values with ';' when a "
                          r"value has commas of its own\)\.$"),
    (["tp=8", "--tp=16"], {}, r"^--grid tp is given twice; list all its values in one --grid\.$"),
    (["tp=8,16"], {"tp": 4}, r"^--tp is both fixed and a --grid key; give it once\.$"),
    (["workers=1,2"], {}, r"^--grid workers: --workers does not change what a capture simulates, so it cannot be a grid key\.$"),
    ([], {}, r"^a sweep needs at least one --grid KEY=V1,V2,\.\.\. \(e\.g\. --grid tp=8,16\)\.$"),
    ([f"seed={','.join(map(str, range(400)))}", f"batch={','.join(map(str, range(1, 400)))}"], {},
     r"^the grid has 159,600 configurations; at most 100,000 are allowed \(split it into several sweeps\)\.$"),
])
def test_bad_grids_get_one_sentence(items, fixed, message):
    with pytest.raises(UserError, match=message):
        parse_grid(items, fixed)


def test_how_to_capture_options_are_not_fixed_options_either():
    with pytest.raises(UserError, match=r"^--workers is not an option of a sweep's captures"):
        SweepSpec.build({"workload": "gemm", "workers": 4}, ["dtype=bf16,fp8"])


def test_spec_round_trips_through_json_and_names_traces_safely():
    spec = SweepSpec.build({"hardware": "my presets/x.toml", "workload": "gemm", "phase": None},
                           ["shape=8,8,8;16,16,16", "dtype=bf16,fp8"])
    assert spec.fixed == {"hardware": "my presets/x.toml", "workload": "gemm"}
    again = SweepSpec.from_json(spec.to_json())
    assert again.same_as(spec) and again.grid_texts() == ["shape=8,8,8;16,16,16", "dtype=bf16,fp8"]
    c = spec.configurations[3]
    assert spec.options(c) == {"hardware": "my presets/x.toml", "workload": "gemm", "shape": "16,16,16", "dtype": "fp8"}
    assert spec.trace_name(c) == "0003-shape=16_16_16-dtype=fp8.trnx"
    weird = SweepSpec.build({}, ["hardware=../../etc/p.toml,/tmp/a b.toml"]).configurations[0]
    assert "/" not in SweepSpec.build({}, ["hardware=../../etc/p.toml,/tmp/a b.toml"]).trace_name(weird)
