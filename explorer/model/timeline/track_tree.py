"""Timeline rows: chip -> core -> engine groups, collapsible, reorderable and pinnable.

Pure view-state (no Qt, no metrics): which rows exist, in which order, which groups
are folded and which rows are pinned to the top. The canvas asks `rows()` for the
flat list to draw. Engine rows inside a core follow the Neuron profiler's order
(kernels, Tensor, TensorMatrix, Vector, Scalar, GpSimd, Sync, DMA queues).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from explorer.model.timeline.counter_labels import row_name
from explorer.model.timeline.trace_index import KIND_ORDER, TraceIndex, TrackInfo

AUTO_COLLAPSE_ROWS = 160  # above this many rows, groups start folded ...
OPEN_CORES = 2  # ... except chip 0 and its first cores


@dataclass(eq=False)  # nodes are compared (and hashed) by identity
class Node:
    key: str  # "chip:0", "chip:0/core:3", "track:17"
    label: str
    depth: int
    track: TrackInfo | None = None
    children: list[Node] = field(default_factory=list)
    collapsed: bool = False
    parent: Node | None = field(default=None, repr=False)

    @property
    def is_group(self) -> bool:
        return self.track is None

    def tracks(self) -> list[TrackInfo]:
        """Every track under this node."""
        if self.track is not None:
            return [self.track]
        return [t for c in self.children for t in c.tracks()]


@dataclass(frozen=True)
class Row:
    node: Node
    pinned: bool = False

    @property
    def key(self) -> str:
        return self.node.key


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _track_sort_key(t: TrackInfo) -> tuple:
    return (KIND_ORDER.get(t.kind, 99), _natural(t.name), t.track_id)


class TrackTree:
    """The row hierarchy of one timeline pane (interval rows or counter rows)."""

    def __init__(self, index: TraceIndex, *, counters: bool) -> None:
        self.roots: list[Node] = []
        self.pinned: list[str] = []  # node keys, in pin order
        wanted = [
            t for tid, t in sorted(index.tracks.items())
            if (t.kind == "counter") == counters and (tid in index.counters if counters else True)
        ]
        chips: dict[int, Node] = {}
        cores: dict[tuple[int, int], Node] = {}
        for t in sorted(wanted, key=lambda t: (t.chip, t.core, *_track_sort_key(t))):
            chip = chips.get(t.chip)
            if chip is None:
                chip = chips[t.chip] = Node(f"chip:{t.chip}", f"Chip {t.chip}", 0)
                self.roots.append(chip)
            parent = chip
            if t.core >= 0:
                parent = cores.get((t.chip, t.core))
                if parent is None:
                    parent = cores[(t.chip, t.core)] = Node(f"chip:{t.chip}/core:{t.core}", f"Core {t.core}", 1, parent=chip)
                    chip.children.append(parent)
            node = Node(f"track:{t.track_id}", row_name(t.name) if t.kind == "counter" else t.name, parent.depth + 1,
                        track=t, parent=parent)
            if t.core < 0:  # chip-level rows (collectives, HBM counters) come before the cores
                n_chip_rows = sum(1 for c in chip.children if not c.is_group)
                chip.children.insert(n_chip_rows, node)
            else:
                parent.children.append(node)
        self._nodes = {n.key: n for n in self._walk(self.roots)}
        if len(wanted) > AUTO_COLLAPSE_ROWS:  # big traces open on chip 0's first cores
            for node in self._nodes.values():
                if node.is_group and node.depth >= 1:
                    node.collapsed = True
            for chip in self.roots[1:]:
                chip.collapsed = True
            if self.roots:
                for core in [c for c in self.roots[0].children if c.is_group][:OPEN_CORES]:
                    core.collapsed = False

    @staticmethod
    def _walk(nodes: list[Node]):
        for n in nodes:
            yield n
            yield from TrackTree._walk(n.children)

    def node(self, key: str) -> Node:
        return self._nodes[key]

    def node_for_track(self, track_id: int) -> Node | None:
        return self._nodes.get(f"track:{track_id}")

    # -- what to draw ------------------------------------------------------------
    def pinned_rows(self) -> list[Row]:
        return [Row(self._nodes[k], pinned=True) for k in self.pinned if k in self._nodes]

    def rows(self) -> list[Row]:
        """Unpinned rows in display order, skipping the insides of folded groups."""
        out: list[Row] = []
        pinned = set(self.pinned)

        def visit(nodes: list[Node]) -> None:
            for n in nodes:
                if n.key in pinned:
                    continue
                out.append(Row(n))
                if n.is_group and not n.collapsed:
                    visit(n.children)

        visit(self.roots)
        return out

    # -- editing -----------------------------------------------------------------
    def toggle(self, key: str) -> None:
        n = self._nodes[key]
        if n.is_group:
            n.collapsed = not n.collapsed

    def set_all_collapsed(self, collapsed: bool) -> None:
        for n in self._nodes.values():
            if n.is_group:
                n.collapsed = collapsed

    def reveal(self, track_id: int) -> None:
        """Unfold every group above a track so its row is drawn."""
        n = self.node_for_track(track_id)
        while n is not None and n.parent is not None:
            n.parent.collapsed = False
            n = n.parent

    def pin(self, key: str, pinned: bool = True) -> None:
        if pinned and key not in self.pinned:
            self.pinned.append(key)
        elif not pinned and key in self.pinned:
            self.pinned.remove(key)

    def is_pinned(self, key: str) -> bool:
        return key in self.pinned

    def move(self, key: str, before_key: str | None) -> bool:
        """Move a row among its siblings to just before `before_key` (None: to the end).

        Rows only move within their own group (an engine row cannot leave its core);
        pinned rows reorder among the pinned. Returns whether anything moved.
        """
        if key in self.pinned:
            if before_key is not None and before_key not in self.pinned:
                return False
            self.pinned.remove(key)
            self.pinned.insert(self.pinned.index(before_key) if before_key else len(self.pinned), key)
            return True
        n = self._nodes[key]
        siblings = n.parent.children if n.parent is not None else self.roots
        if before_key is not None:
            b = self._nodes.get(before_key)
            if b is None or b not in siblings or b is n:
                return False
        siblings.remove(n)
        siblings.insert(siblings.index(self._nodes[before_key]) if before_key else len(siblings), n)
        return True
