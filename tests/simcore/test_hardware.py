"""Hardware presets: the published numbers, derived rates, user what-if files, and bad presets."""

from __future__ import annotations

import pytest

from simcore.errors import ConfigError
from simcore.hardware import load_hardware, preset_names


def test_builtin_presets():
    assert {"trn1", "trn1.32xlarge", "trn2", "trn3"} <= set(preset_names())
    trn3 = load_hardware("trn3")
    assert trn3.cores_per_chip == 8
    assert trn3.tensor["peak_tflops"]["bf16"] == 78.64 and trn3.tensor["peak_tflops"]["mxfp8"] == 314.57
    assert trn3.hbm_capacity == 144 * 2**30 and trn3.hbm_bytes_per_ns == 4900
    assert trn3.sbuf_bytes == 32 * 2**20
    assert load_hardware("trn2").sbuf_bytes == 28 * 2**20


@pytest.mark.parametrize("name", ["trn1", "trn2", "trn3"])
def test_published_peaks_match_the_array_clock_and_macs(name):
    """Each preset peak is 2 x rows x cols x clock x MACs/PE/cycle (the PE array, Neuron Explorer's MFU
    denominator); a chip's peak is its cores' sum and never above what AWS's chip page states."""
    hw = load_hardware(name)
    chip = hw.tensor.get("published_chip_tflops", {})
    for dtype in hw.matmul_dtypes():
        assert hw.derived_peak_tflops(dtype) == pytest.approx(hw.tensor["peak_tflops"][dtype], rel=1e-3)
        if dtype in chip:
            assert hw.cores_per_chip * hw.tensor["peak_tflops"][dtype] <= chip[dtype] * 1.0005


def test_trn1_presets_carry_the_published_trainium1_figures():
    """trn1.32xlarge: 16 Trainium1 chips of 2 NeuronCore-v2 (24 MiB SBUF, 2 MiB PSUM, 92 BF16 TFLOPS each),
    32 GiB of HBM at 820 GB/s per chip, 16 x 2 DMA engines at 27.2 GB/s (17 B/ns sustained), a 4x4 torus of
    NeuronLink-v2 at 384 GiB/s per chip; chip and instance totals as the Trn1 pages state them."""
    chip, inst = load_hardware("trn1"), load_hardware("trn1.32xlarge")
    assert (chip.chips, chip.cores_per_chip, inst.chips) == (1, 2, 16)
    assert chip.sbuf_bytes == 24 * 2**20 and chip.psum_banks == 8 and chip.hbm_capacity == 32 * 2**30
    assert chip.hbm_bytes_per_ns == 820 and not chip.supports("mxfp8")
    assert chip.cores_per_chip * chip.tensor["peak_tflops"]["bf16"] == pytest.approx(190, rel=0.04)   # 190 per chip
    assert inst.chips * chip.cores_per_chip * chip.tensor["peak_tflops"]["fp32"] == pytest.approx(760, rel=0.04)
    assert chip.core_dma_bytes_per_ns * chip.cores_per_chip == pytest.approx(870, rel=0.01)   # 32 x 27.2 GB/s (DMA intro)
    sustained = chip.core_dma_bytes_per_ns * chip.data["dma"]["peak_utilization"]
    assert sustained == pytest.approx(272, rel=0.01)                                 # the DMA guide's TRN1 272 GB/s per core
    assert inst.data["link"]["bandwidth_gbps"] == pytest.approx(384 * 2**30 / 1e9, rel=0.01)
    assert inst.data["topology"]["dims"] == [4, 4]


def test_chip_dma_matches_hbm_bandwidth_on_trn3():
    """128 DMA engines at the per-engine rate give the chip's 4.9 TB/s of DMA bandwidth."""
    hw = load_hardware("trn3")
    assert hw.core_dma_bytes_per_ns * hw.cores_per_chip == pytest.approx(4900, rel=0.01)


def test_trn2_lacks_mx_and_trn3_has_vector_exp():
    trn2, trn3 = load_hardware("trn2"), load_hardware("trn3")
    with pytest.raises(ConfigError, match="trn2 has no mxfp8 support"):
        trn2.check_dtype("mxfp8")
    trn3.check_dtype("mxfp4")
    assert trn3.has_vector_exp and not trn2.has_vector_exp


def test_user_preset_overrides_its_base(tmp_path):
    f = tmp_path / "fast.toml"
    f.write_text('base = "trn2"\nname = "trn2-2xhbm"\n[hbm]\nbandwidth_gbps = 5800\n')
    hw = load_hardware(str(f))
    assert hw.name == "trn2-2xhbm" and hw.hbm_bytes_per_ns == 5800
    assert hw.cores_per_chip == 8 and hw.tensor["peak_tflops"]["bf16"] == 78.64  # inherited
    assert hw.meta["hbm"]["bandwidth_gbps"] == 5800


@pytest.mark.parametrize("text, message", [
    (None, "unknown hardware preset 'trn9'; choose one of"),
    ('base = "trn3"\n[hbm]\nbandwidth_gbps = -1\n', "'hbm.bandwidth_gbps' must not be negative"),
    ('name = "x"\nchips = 1\n', "lacks the key 'cores_per_chip'"),
    ('base = "trn3"\n[hbm\n', "is not valid TOML"),
])
def test_bad_presets_fail_with_one_sentence(tmp_path, text, message):
    if text is None:
        target = "trn9"
    else:
        target = str(tmp_path / "bad.toml")
        (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_hardware(target)
    assert "\n" not in str(info.value)
