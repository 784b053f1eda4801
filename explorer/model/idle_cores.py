"""Cores given instruction detail that ran nothing: `trnx capture --cores 5` on a workload that
runs on core 0 records engine rows for core 5 that stay empty, which the user should hear of."""

from __future__ import annotations

import numpy as np

from explorer.model.columns import num
from explorer.model.tracks import ENGINE_OF_KIND, Tracks
from simcore.trace import Trace, open_trace


def idle_detail_cores(trace: Trace) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(detail cores that ran no kernel, cores that ran one), each as sorted (chip, core) pairs.
    A detail core is one with engine rows (tracks of an engine's kind)."""
    tracks = Tracks.of(trace)
    engine = np.isin(tracks.kind, list(ENGINE_OF_KIND))
    detail = {(int(c), int(k)) for c, k in zip(tracks.chip[engine], tracks.core[engine])}
    k = trace.kernels
    busy = set(zip(num(k, "chip").tolist(), num(k, "core").tolist())) if k.num_rows else set()
    return sorted(detail - busy), sorted(busy)


def _cores(pairs: list[tuple[int, int]], several_chips: bool) -> str:
    """'core 5', 'cores 0-3, 6', or per chip 'chip 0 cores 0-3, chip 2 core 5'."""
    if several_chips:
        chips = sorted({c for c, _ in pairs})
        return ", ".join(f"chip {c} {_cores([p for p in pairs if p[0] == c], False)}" for c in chips)
    ks = [k for _, k in pairs]
    runs, start = [], ks[0]
    for a, b in zip(ks, ks[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return f"{'core' if len(ks) == 1 else 'cores'} {', '.join(runs)}"


def idle_cores_note(trace: Trace) -> str | None:
    """One line for the capture's user when a detail core ran nothing, else None."""
    idle, busy = idle_detail_cores(trace)
    if not idle:
        return None
    chips = {c for c, _ in idle}
    busy = [p for p in busy if p[0] in chips]  # the chips in question: a multi-chip trace lists no others
    several = len(chips | {c for c, _ in busy}) > 1
    ran = f"the workload ran on {_cores(busy, several)}" if busy else "no kernel ran there"
    single = trace.hardware.get("chips", 1) == 1 and trace.meta.get("capture", {}).get("ranks", 1) in (1, None)
    hint = "; --compute-cores spreads it over more" if single and busy else ""
    return (f"note: {_cores(idle, several)} got no work ({ran}{hint}): "
            f"{'its' if len(idle) == 1 else 'their'} instruction rows are empty.")


def idle_cores_note_of(path) -> str | None:
    """`idle_cores_note` of the trace written at `path` (what `trnx capture` says after writing it)."""
    return idle_cores_note(open_trace(path, validate=False))
