"""Compare two traces: summary metric, engine, per-op and per-kernel deltas.

The natural use is the same workload two ways (BF16 vs MXFP8, TP=8 vs TP=16), so
ops are matched by *position in the hierarchy*: the path of names from the model
down to the op plus its occurrence index among ops with that path, in time order
("* / layer 3 / attention.qkv_proj #0"; the root matches the other trace's root
whatever its name, since models are often named after their dtype or sharding). Kernels are matched within their
matched op by kernel name and compared as totals (count, summed and longest time),
which stays meaningful when the two runs split an op over different numbers of cores.
Every delta is b - a; ratio is b / a (below 1: B is faster). Ops and kernels come largest
absolute change first; a metric's `better` flag reasons about what it divides (`judge`):
a share of the run's own time is not better because the run got shorter, and a rate
(bandwidth, TFLOPS, MFU) is not worse because the run moved fewer bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.analysis.metrics import METRICS
from explorer.model.analysis.name_diff import is_measured, name_deltas, outer_merge
from explorer.model.columns import num, strings
from explorer.model.tracks import ENGINES, Tracks
from explorer.model.scope import Scope
from explorer.model.analysis.summary import Summary, summarize
from simcore.trace import Trace

PATH_SEP = " / "
ROOT = "*"  # stands for the root op (the model) in match keys


@dataclass
class TraceDiff:
    a: str  # path of trace A
    b: str
    summary_a: Summary
    summary_b: Summary
    metrics: pd.DataFrame  # metric, unit, group, a, b, delta, ratio, better
    engines: pd.DataFrame  # engine, a_active_ns, b_active_ns, delta_ns, a_percent, b_percent, delta_percent
    ops: pd.DataFrame  # key, path, occurrence, level, kind, a_op_id, b_op_id, a_dur_ns, b_dur_ns, delta_ns, ratio, status
    kernels: pd.DataFrame  # op_key, name, a_count, b_count, a_time_ns, b_time_ns, delta_ns, ratio, a_max_ns, b_max_ns, status
    by_name: pd.DataFrame = field(default_factory=pd.DataFrame)  # explorer.model.analysis.name_diff: level, name, counts, times, delta, ratio
    measured: tuple[bool, bool] = (False, False)  # whether A, B are measured (not simulations)

    @property
    def measured_vs_simulated(self) -> bool:
        """One trace measured, the other simulated: align by name (the loop that finds where the simulator is wrong)."""
        return self.measured[0] != self.measured[1]

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON-ready; `top` keeps the ops and kernels with the largest |delta| only."""
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            if top is not None:
                frame = frame.reindex(frame["delta_ns"].abs().sort_values(ascending=False, kind="stable").index).head(top)
            return [{k: _clean(v) for k, v in r.items()} for r in frame.to_dict("records")]

        return {
            "a": self.a, "b": self.b,
            "metrics": [{k: _clean(v) for k, v in r.items()} for r in self.metrics.to_dict("records")],
            "engines": [{k: _clean(v) for k, v in r.items()} for r in self.engines.to_dict("records")],
            "ops": records(self.ops),
            "kernels": records(self.kernels),
            "measured": {"a": self.measured[0], "b": self.measured[1]},
            "by_name": records(self.by_name),
        }


@dataclass(frozen=True)
class Matching:
    """How the rows of one of a diff's tables (ops, kernels, by_name) paired up."""

    rows: int
    matched: int   # in both traces
    changed: int   # with a nonzero time delta
    only_a: int
    only_b: int


def matching(frame: pd.DataFrame) -> Matching:
    """Count `frame`'s rows by status, and those whose time changed: what `trnx diff` and the compare
    window state above the rows (one count, so the two cannot disagree)."""
    status = frame["status"]
    return Matching(len(frame), int((status == "matched").sum()), int((frame["delta_ns"].fillna(0) != 0).sum()),
                    int((status == "only_a").sum()), int((status == "only_b").sum()))


def _clean(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if np.isnan(v) else float(v)
    return v


def _ratio(a: pd.Series, b: pd.Series) -> pd.Series:
    a = a.astype(np.float64)
    return (b.astype(np.float64) / a.where(a != 0)).astype(np.float64)


# a rate is better or worse only between runs that did the same work: the totals it divides
SAME_WORK: dict[str, tuple[str, ...]] = {
    "achieved_tflops": ("hardware_flops",), "mfu_estimated_percent": ("hardware_flops",),
    "hfu_estimated_percent": ("hardware_flops",), "mfu_percent": ("hardware_flops",),
    "hbm_read_bandwidth_gbps": ("hbm_read_bytes",), "hbm_write_bandwidth_gbps": ("hbm_write_bytes",),
    "hbm_bandwidth_gbps": ("hbm_read_bytes", "hbm_write_bytes"),
    "mbu_estimated_percent": ("hbm_read_bytes", "hbm_write_bytes"),
}
SAME_WORK_TOLERANCE = 0.05  # totals within 5% count as the same work
SAME_TIME_TOLERANCE = 0.01  # windows within 1% count as the same length
WORK_WORDS = {"hardware_flops": "FLOPs", "hbm_read_bytes": "HBM bytes read", "hbm_write_bytes": "HBM bytes written"}


def _window_share(name: str) -> bool:
    """Metrics that are a share of the run's own window (active time / total time): a shorter run
    with the same busy time reads higher without being any better."""
    return name.endswith("_active_time_percent") or name == "throttled_time_percent"


def judge(name: str, sa: Summary, sb: Summary) -> tuple[str, str]:
    """("a" | "b" | "", why) for one metric: which run is better by it, reasoned about what it divides."""
    spec = next(s for s in METRICS if s.name == name)
    a, b = sa.metrics.get(name), sb.metrics.get(name)
    if a is None or b is None:
        return "", "unavailable in one of the traces"
    if spec.higher_is_better is None:
        return "", "neither higher nor lower is better by itself"
    if _window_share(name):
        ta, tb = sa.metrics.get("total_time_ns") or 0, sb.metrics.get("total_time_ns") or 0
        if ta and abs(tb / ta - 1) > SAME_TIME_TOLERANCE:
            return "", (f"a share of each run's own time, and B's run is {tb / ta:.3g}x A's: compare the active "
                        "time (ns) instead")
    work = SAME_WORK.get(name)
    if work:
        wa = sum(sa.metrics.get(w) or 0 for w in work)
        wb = sum(sb.metrics.get(w) or 0 for w in work)
        if wa and abs(wb / wa - 1) > SAME_WORK_TOLERANCE:
            what = " and ".join(WORK_WORDS[w] for w in work) if len(work) == 1 else "HBM bytes"
            return "", f"B did {wb / wa:.3g}x A's {what}: a rate over different work is not better or worse"
    if float(b) == float(a):
        return "", "equal"
    higher = "higher" if spec.higher_is_better else "lower"
    extra = " at the same work" if work else ""
    return ("b" if (float(b) > float(a)) == spec.higher_is_better else "a"), f"{higher} is better{extra}"


def metric_deltas(sa: Summary, sb: Summary) -> pd.DataFrame:
    rows = []
    for spec in METRICS:
        a, b = sa.metrics.get(spec.name), sb.metrics.get(spec.name)
        delta = ratio = np.nan
        if a is not None and b is not None:
            delta = float(b) - float(a)
            ratio = float(b) / float(a) if a else np.nan
        better, why = judge(spec.name, sa, sb)
        rows.append((spec.name, spec.unit, spec.group, a, b, delta, ratio, better, why))
    return pd.DataFrame.from_records(rows, columns=["metric", "unit", "group", "a", "b", "delta", "ratio", "better",
                                                    "why"])


def engine_deltas(sa: Summary, sb: Summary) -> pd.DataFrame:
    rows = []
    for e, prefix in [*((e, f"{e}_engine_") for e in ENGINES), ("dma", "dma_"), ("cc", "cc_op_")]:
        an, bn = sa.metrics.get(f"{prefix}active_time_ns"), sb.metrics.get(f"{prefix}active_time_ns")
        ap, bp = sa.metrics.get(f"{prefix}active_time_percent"), sb.metrics.get(f"{prefix}active_time_percent")
        rows.append((e, an, bn, (bn - an) if an is not None and bn is not None else np.nan,
                     ap, bp, (bp - ap) if ap is not None and bp is not None else np.nan))
    return pd.DataFrame.from_records(
        rows, columns=["engine", "a_active_ns", "b_active_ns", "delta_ns", "a_percent", "b_percent", "delta_percent"])


def op_keys(h: Hierarchy) -> pd.DataFrame:
    """Each op's name path from the root and its occurrence among ops with the same path."""
    o = h._ops_raw  # names and links only: no kernel or instruction pass needed
    parent, depth = h._ancestry
    names = o["name"].astype(str).to_numpy(dtype=object)
    path = names.copy()
    # roots match each other whatever their names (a model named after its dtype or its
    # parallelism, "GEMM 4096^3 bf16" vs "... mxfp8", is still the same model)
    key_path = np.where(depth == 0, ROOT, names).astype(object)
    for d in range(1, int(depth.max()) + 1 if len(depth) else 0):
        at = np.flatnonzero(depth == d)
        path[at] = path[parent[at]] + PATH_SEP + names[at]
        key_path[at] = key_path[parent[at]] + PATH_SEP + names[at]
    frame = pd.DataFrame({"op_id": o["op_id"].to_numpy(), "path": path, "level": o["level"].to_numpy(),
                          "kind": o["kind"].to_numpy(), "start_ns": o["start_ns"].to_numpy(),
                          "dur_ns": o["dur_ns"].to_numpy()})
    frame["key_path"] = key_path
    frame = frame.sort_values(["key_path", "start_ns", "op_id"], kind="stable")
    frame["occurrence"] = frame.groupby("key_path").cumcount()
    frame["key"] = frame["key_path"] + " #" + frame["occurrence"].astype(str)
    return frame.sort_index()


def op_deltas(ka: pd.DataFrame, kb: pd.DataFrame) -> pd.DataFrame:
    m = outer_merge(ka, kb, "key")
    out = pd.DataFrame({
        "key": m["key"],
        "path": m["path_a"].fillna(m["path_b"]),
        "occurrence": m["occurrence_a"].fillna(m["occurrence_b"]).astype(np.int64),
        "level": m["level_a"].fillna(m["level_b"]),
        "kind": m["kind_a"].fillna(m["kind_b"]),
        "a_op_id": m["op_id_a"].fillna(-1).astype(np.int64),
        "b_op_id": m["op_id_b"].fillna(-1).astype(np.int64),
        "a_dur_ns": m["dur_ns_a"],
        "b_dur_ns": m["dur_ns_b"],
    })
    out["delta_ns"] = out["b_dur_ns"] - out["a_dur_ns"]
    out["ratio"] = _ratio(out["a_dur_ns"], out["b_dur_ns"])
    out["status"] = m["_merge"].map({"both": "matched", "left_only": "only_a", "right_only": "only_b"}).astype(str)
    return by_change(out, "key", "a_dur_ns", "b_dur_ns")


def natural_key(text: str) -> tuple:
    """"layer 10" after "layer 2": digit runs compare as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", str(text)) if p)


def by_change(frame: pd.DataFrame, key: str, a: str, b: str) -> pd.DataFrame:
    """Rows by absolute change |B - A| (a row in one trace only changes by its whole time), largest
    first, then in natural order of `key`."""
    change = (frame[b].fillna(0) - frame[a].fillna(0)).abs().to_numpy(np.float64)
    names = frame[key].map(natural_key)
    order = sorted(range(len(frame)), key=lambda i: (-change[i], names.iloc[i]))
    return frame.iloc[order].reset_index(drop=True)


def _kernel_groups(h: Hierarchy, keys: pd.DataFrame, scope: Scope | None = None) -> pd.DataFrame:
    k = h.trace.kernels
    op_key = pd.Series(num(k, "op_id")).map(keys.set_index("op_id")["key"]).fillna("(no op)")
    frame = pd.DataFrame({"op_key": op_key, "name": strings(k, "name"), "dur": num(k, "dur_ns")})
    if scope is not None:
        chip, core, start = num(k, "chip"), num(k, "core"), num(k, "start_ns")
        keep = (start < scope.t1) & (start + num(k, "dur_ns") > scope.t0)
        if scope.chips is not None:
            keep &= np.isin(chip, scope.chips)
        if scope.cores is not None:
            keep &= np.isin(core, scope.cores)
        if scope.track_ids is not None:
            chips, cores = scope.core_mask(Tracks.of(h.trace))
            keep &= np.isin(chip * 65536 + core, chips.astype(np.int64) * 65536 + cores)
        frame = frame[keep]
    g = frame.groupby(
        ["op_key", "name"], as_index=False).agg(count=("dur", "size"), time_ns=("dur", "sum"), max_ns=("dur", "max"))
    return g


def kernel_deltas(ga: pd.DataFrame, gb: pd.DataFrame) -> pd.DataFrame:
    m = outer_merge(ga, gb, ["op_key", "name"])
    out = pd.DataFrame({
        "op_key": m["op_key"], "name": m["name"],
        "a_count": m["count_a"].fillna(0).astype(np.int64), "b_count": m["count_b"].fillna(0).astype(np.int64),
        "a_time_ns": m["time_ns_a"], "b_time_ns": m["time_ns_b"],
    })
    out["delta_ns"] = out["b_time_ns"].fillna(0) - out["a_time_ns"].fillna(0)
    out["ratio"] = _ratio(out["a_time_ns"], out["b_time_ns"])
    out["a_max_ns"], out["b_max_ns"] = m["max_ns_a"], m["max_ns_b"]
    out["status"] = m["_merge"].map({"both": "matched", "left_only": "only_a", "right_only": "only_b"}).astype(str)
    out["_key"] = out["op_key"].astype(str) + " / " + out["name"].astype(str)
    return by_change(out, "_key", "a_time_ns", "b_time_ns").drop(columns="_key")


def diff(a: Trace, b: Trace, *, scope: Scope | None = None, summary_a: Summary | None = None,
         hierarchy_a: Hierarchy | None = None) -> TraceDiff:
    """All deltas of B against A (a window that already holds A's summary and tree passes them in).

    A `scope` narrows both traces the same way (its open ends close on each trace's own
    span): metrics and engines are the scoped summaries', kernels those overlapping the
    window on the chips and cores in scope, ops those overlapping the window (matched by
    their keys in the whole trace, so an op keeps its occurrence number).
    """
    scoped = scope is not None and scope != Scope()
    sa = summary_a if summary_a is not None and not scoped else summarize(a, scope=scope)
    sb = summarize(b, scope=scope)
    ha, hb = hierarchy_a or Hierarchy(a), Hierarchy(b)
    ka, kb = op_keys(ha), op_keys(hb)
    ra = rb = None
    if scoped:
        ra, rb = scope.resolve(a, Tracks.of(a)), scope.resolve(b, Tracks.of(b))
        ka, kb = _ops_in(ka, ra), _ops_in(kb, rb)
    return TraceDiff(
        a=str(a.path), b=str(b.path), summary_a=sa, summary_b=sb,
        metrics=metric_deltas(sa, sb),
        engines=engine_deltas(sa, sb),
        ops=op_deltas(ka, kb),
        kernels=kernel_deltas(_kernel_groups(ha, op_keys(ha) if scoped else ka, ra),
                              _kernel_groups(hb, op_keys(hb) if scoped else kb, rb)),
        by_name=name_deltas(a, b, ra, rb),
        measured=(is_measured(a), is_measured(b)),
    )


def _ops_in(keys: pd.DataFrame, scope: Scope) -> pd.DataFrame:
    """The ops whose span overlaps the scope's window."""
    return keys[(keys["start_ns"] < scope.t1) & (keys["start_ns"] + keys["dur_ns"] > scope.t0)]
