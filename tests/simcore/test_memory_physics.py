"""Memory physics audit: what the trace says was allocated and moved is what the hardware has.

For a representative set of captures (GEMMs in BF16 and MXFP8, flash attention resident and
streamed, Llama 3.1 8B prefill and decode with instruction detail, a MoE layer, a training
step, Trn2 and Trn3, a tensor-parallel capture on four chips), every chip and core must show:

- `State Buffer Usage` <= the core's SBUF less the preset's reserve (and so <= its SBUF);
- `PSUM Usage` <= the core's PSUM;
- `HBM Read Bandwidth` + `HBM Write Bandwidth` <= the HBM bandwidth (read and write share
  one HBM), and their integral equal to the kernels' HBM bytes;
- each core's DMA transfers never moving more than its DMA engines can;
- each kernel's DMA transfers adding up to its `hbm_read_bytes` / `hbm_write_bytes`.

Everything is computed from the trace tables, the way a user would check it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simcore.timing.window import MAX_SLICES, MIN_SLICE_NS

CASES = {
    "gemm-bf16": dict(workload="gemm", shape="2048,4096,2048", dtype="bf16", cores="0"),
    "gemm-mxfp8": dict(workload="gemm", shape="2048,8192,4096", dtype="mxfp8", cores="0"),
    "attention": dict(workload="attention", shape="1,8,2048,2048", cores="0"),
    "attention-long-kv": dict(workload="attention", shape="1,4,128,65536", cores="0"),   # K/V streamed
    "prefill-8b": dict(workload="llama3.1-8b", phase="prefill", seq=2048, layers=2, cores="0", fusion="off"),
    "decode-8b": dict(workload="llama3.1-8b", phase="decode", batch=1, context=4096, layers=2, cores="all"),
    "moe-layer": dict(workload="qwen3-30b-a3b", phase="prefill", seq=512, layers=1, dtype="mxfp8", cores="0"),
    "train-8b": dict(workload="llama3.1-8b", phase="train", seq=512, batch=6, layers=1, cores="0"),  # 6 K/V owners a core
    "trn2-prefill": dict(workload="llama3.1-8b", phase="prefill", seq=1024, layers=1, hardware="trn2", cores="0"),
    "trn2-decode": dict(workload="llama3.1-8b", phase="decode", batch=8, layers=2, hardware="trn2", cores="0"),
    "tp4-decode": dict(workload="llama3.1-8b", phase="decode", batch=8, layers=2, hardware="trn3-ultraserver-gen1",
                       tp=16, cores="0", detail_chips="0,3", workers=1),
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    import simcore
    from simcore.trace import open_trace

    out = {}
    d = tmp_path_factory.mktemp("memphys")
    for name, options in CASES.items():
        simcore.capture(out_path=d / f"{name}.trnx", **options)
        out[name] = open_trace(d / f"{name}.trnx")
    return out


def counters(t, name: str) -> pd.DataFrame:
    c, tracks = t.to_pandas("counters"), t.to_pandas("tracks")
    tr = tracks[tracks.name == name][["track_id", "chip", "core"]]
    return c.merge(tr, on="track_id").sort_values(["chip", "core", "time_ns"])


def step_values(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A counter (value holds until the next sample) read at `at`."""
    i = np.searchsorted(times, at, side="right") - 1
    return np.where(i >= 0, values[np.maximum(i, 0)], 0.0)


def slice_bound_ns(t) -> float:
    """The widest HBM/DMA ledger slice any op window can have used. A window's ledger spans at most
    twice 1.5x its span + 20 us (it doubles when sharing stretches the window past it) in MAX_SLICES
    slices of at least MIN_SLICE_NS (simcore.timing.window)."""
    longest = float(t.to_pandas("ops").query("level == 'op'").dur_ns.max())
    return max(MIN_SLICE_NS, 2 * (1.5 * longest + 20000.0) / MAX_SLICES)


@pytest.mark.parametrize("case", CASES)
def test_sbuf_and_psum_usage_fit_every_core(traces, case):
    t = traces[case]
    hw = t.hardware
    sbuf, psum = counters(t, "State Buffer Usage"), counters(t, "PSUM Usage")
    busy = t.to_pandas("kernels").groupby(["chip", "core"]).ngroups  # every core that ran a kernel has samples
    assert sbuf.groupby(["chip", "core"]).ngroups == busy and psum.groupby(["chip", "core"]).ngroups == busy
    capacity = hw["sbuf"]["bytes_per_core"]
    usable = capacity * (1 - hw["sbuf"]["reserved_fraction"])
    assert sbuf.value.max() > 0 and psum.value.max() > 0
    over = sbuf[sbuf.value > usable]
    assert over.empty, f"SBUF usage above the {usable:.0f} usable bytes of {capacity}:\n{over.head()}"
    psum_cap = hw["psum"]["bytes_per_core"]
    assert psum_cap == hw["psum"]["banks"] * hw["psum"]["bank_bytes_per_partition"] * hw["psum"]["partitions"]
    assert psum.value.max() <= psum_cap
    # PSUM is allocated in whole banks
    bank = hw["psum"]["bank_bytes_per_partition"] * hw["psum"]["partitions"]
    assert (psum.value % bank == 0).all()


@pytest.mark.parametrize("case", CASES)
def test_hbm_read_plus_write_never_exceeds_the_bandwidth_and_adds_up_to_the_kernels_bytes(traces, case):
    t = traces[case]
    bw = t.hardware["hbm"]["bandwidth_gbps"]
    rd, wr = counters(t, "HBM Read Bandwidth"), counters(t, "HBM Write Bandwidth")
    k = t.to_pandas("kernels")
    slice_ns = slice_bound_ns(t)
    for chip in sorted(k.chip.unique()):
        r, w = rd[rd.chip == chip], wr[wr.chip == chip]
        times = np.union1d(r.time_ns.values, w.time_ns.values)
        total = (step_values(r.time_ns.values, r.value.values, times)
                 + step_values(w.time_ns.values, w.value.values, times))
        # The sharing ledger caps the HBM bytes of every time slice at bandwidth x slice, and a counter
        # bin sums whole slices, except the last slice of an op window, whose bytes were all served
        # before the window ended inside it (the next window starts there): a bin can hold at most
        # one slice's bytes more than its width allows. That is the only tolerance: sampling granularity.
        width = np.diff(times)
        allowed = bw * (1 + slice_ns / width)
        assert (total[:-1] <= allowed + 1e-9).all(), (chip, float(total.max()), bw)
        assert total[-1] == 0
        # the counters' area is the bytes the kernels and the collectives' DMA moved (reads and writes separately)
        kc = k[k.chip == chip]
        cc = t.to_pandas("collectives")
        cc = cc[cc.chip == chip]
        for counter, column in ((r, "hbm_read_bytes"), (w, "hbm_write_bytes")):
            v = step_values(counter.time_ns.values, counter.value.values, times)
            area = float((v[:-1] * width).sum())
            want = float(kc[column].sum()) + float(cc[column].sum() if column in cc else 0)
            assert area == pytest.approx(want, rel=1e-3, abs=bw * 2), (chip, column)
    # the chip really works near its HBM limit somewhere in the bigger captures
    if case in ("decode-8b", "trn2-decode"):
        assert (rd.value + 0).max() > 0.8 * bw


@pytest.mark.parametrize("case", [c for c, o in CASES.items() if "cores" in o])
def test_dma_transfers_match_kernel_bytes_and_never_outrun_the_cores_engines(traces, case):
    t = traces[case]
    hw = t.hardware
    rate = hw["dma"]["engines_per_core"] * hw["dma"]["engine_gbps"]  # bytes per ns of one core's DMA engines
    dma, tracks, k = t.to_pandas("dma"), t.to_pandas("tracks"), t.to_pandas("kernels")
    assert len(dma)
    dma = dma.merge(tracks[["track_id", "chip", "core"]], on="track_id")
    # every detailed kernel's transfers from / to HBM are its hbm_read_bytes / hbm_write_bytes
    src, dst = dma.src.astype(str), dma.dst.astype(str)
    moved = pd.DataFrame({"kernel_id": dma.kernel_id, "r": np.where(src == "hbm", dma.bytes, 0),
                          "w": np.where(dst == "hbm", dma.bytes, 0)}).groupby("kernel_id").sum()
    kk = k.set_index("kernel_id").loc[moved.index]
    assert (kk.hbm_read_bytes.values == moved.r.values).all()
    assert (kk.hbm_write_bytes.values == moved.w.values).all()
    assert set(k[k.core.isin(dma.core.unique()) & k.chip.isin(dma.chip.unique())].kernel_id) == set(moved.index)
    # No transfer is faster than the core's engines (start and end are rounded to whole ns: 1 ns)...
    assert (dma.bytes <= rate * (dma.dur_ns + 1)).all()
    # ...and no set of transfers inside any interval moves more than the engines can in it: the engine
    # ledger is exact per slice, so an interval may gain at most a slice at each end.
    slack = 2 * slice_bound_ns(t) + 2
    for _, x in dma.groupby(["chip", "core"]):
        s = x.start_ns.values.astype(np.float64)
        o = np.argsort(s, kind="stable")
        s, e, b = s[o], s[o] + x.dur_ns.values[o], x.bytes.values[o].astype(np.float64)
        for width in (2_000.0, 20_000.0, 200_000.0):
            hi = np.searchsorted(s, s + width, side="right")
            for i in range(0, len(s), max(1, len(s) // 300)):
                inside = e[i:hi[i]] <= s[i] + width
                assert b[i:hi[i]][inside].sum() <= rate * (width + slack)


def test_the_issue_capture_fits_sbuf_and_its_widest_kernel_uses_what_it_allocates(traces):
    """The capture of the report: Llama 3.1 8B prefill, 2048 tokens. Its SwiGLU (256 x 14336 per core)
    used to claim 36 MiB of a 32 MiB SBUF (fp32 for every BF16 buffer); it now allocates three buffer
    sets of gate, up, out and a working tile, 128 x 8192 BF16 each: 24 MiB."""
    t = traces["prefill-8b"]
    sbuf = counters(t, "State Buffer Usage")
    assert sbuf.value.max() == 3 * 4 * 128 * 8192 * 2
    assert sbuf.value.max() <= t.hardware["sbuf"]["bytes_per_core"]


def test_a_row_wise_kernel_reports_exactly_its_buffers(cap):
    """rmsnorm of 256 x 4096 on one core: two 128-row tiles, each a BF16 input, output and working
    tile (x^2 and the normalised row): 2 x 128 x 4096 x 6 bytes."""
    t = cap(workload="rmsnorm", shape="256,4096")
    assert counters(t, "State Buffer Usage").value.max() == 2 * 128 * 4096 * 6


def test_a_wide_row_wise_kernel_tiles_its_columns_to_fit_sbuf(cap):
    """AdamW reads four and writes four tensors (28 bytes per parameter, plus a 4-byte working tile):
    its column chunks shrink (to a multiple of 512) so that three buffer sets fit the SBUF budget,
    where 8192-column chunks would need three times the SBUF."""
    t = cap(workload="llama3.1-8b", phase="train", seq=128, layers=1, cores="0")
    hw = t.hardware
    k = t.to_pandas("kernels")
    adamw = k[(k.name == "adamw") & (k.core == 0)]
    sbuf = counters(t, "State Buffer Usage")
    sbuf = sbuf[sbuf.core == 0]
    at_start = step_values(sbuf.time_ns.values, sbuf.value.values, adamw.start_ns.values)
    usable = hw["sbuf"]["bytes_per_core"] * (1 - hw["sbuf"]["reserved_fraction"])
    assert len(at_start) == 2 and (at_start <= usable).all()
    chunk = at_start / (3 * 128 * 32)
    assert (chunk == np.floor(usable / (3 * 128 * 32) / 512) * 512).all()
    dma = t.to_pandas("dma")
    per_partition = dma[dma.kernel_id.isin(adamw.kernel_id)].eval("bytes / partitions")
    assert per_partition.max() == chunk[0] * 4  # the fp32 loads move one chunk per partition


def test_streamed_attention_holds_a_ring_of_kv_loads_not_the_whole_sequence(traces):
    """64K keys of K and V are 32 MiB per head: more than SBUF. The kernel streams them through a
    ring of 2048-key loads, and each load waits for the load RING back to be consumed."""
    t = traces["attention-long-kv"]
    sbuf = counters(t, "State Buffer Usage")
    assert sbuf.value.max() < 0.25 * t.hardware["sbuf"]["bytes_per_core"]
    dma = t.to_pandas("dma")
    kv = dma[(dma.src.astype(str) == "hbm") & (dma.bytes == 2048 * 128 * 2)]
    assert len(kv) >= 2 * 4 * 65536 // 2048  # K and V of every head, 2048 keys a load


@pytest.mark.parametrize("case", [c for c, o in CASES.items() if "cores" in o])
def test_data_loaded_into_sbuf_and_not_yet_used_never_exceeds_the_usage_counter(traces, case):
    """An independent lower bound on what a kernel holds: every HBM -> SBUF transfer occupies its bytes
    from its start until the last instruction that waits on it (the trace's semaphore flows) ends.
    Those bytes, summed over time, must never exceed the `State Buffer Usage` the core reports."""
    t = traces[case]
    dma, tracks, flows = t.to_pandas("dma"), t.to_pandas("tracks"), t.to_pandas("flows")
    ins = pd.concat([t.to_pandas("instructions")[["id", "start_ns", "dur_ns"]], dma[["id", "start_ns", "dur_ns"]]])
    end_of = pd.Series((ins.start_ns + ins.dur_ns).values, index=ins.id.values)
    loads = dma[(dma.src.astype(str) == "hbm") & (dma.dst.astype(str) == "sbuf")]
    used = flows[flows.src_id.isin(loads.id)]
    last_use = end_of.loc[used.dst_id.values].groupby(used.src_id.values).max()
    loads = loads[loads.id.isin(last_use.index)].merge(tracks[["track_id", "chip", "core"]], on="track_id")
    assert len(loads)
    loads["until"] = last_use.loc[loads.id].values
    sbuf = counters(t, "State Buffer Usage")
    for (chip, core), x in loads.groupby(["chip", "core"]):
        times = np.r_[x.start_ns.values, x.until.values]
        delta = np.r_[x.bytes.values, -x.bytes.values].astype(np.float64)
        o = np.lexsort((delta, times))  # at equal times, releases first
        held = np.cumsum(delta[o])
        c = sbuf[(sbuf.chip == chip) & (sbuf.core == core)]
        reported = step_values(c.time_ns.values, c.value.values, times[o])
        worst = int(np.argmax(held - reported))
        assert held[worst] <= reported[worst], (chip, core, times[o][worst], held[worst], reported[worst])
