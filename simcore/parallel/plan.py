"""Shard one model step over ranks the way NxD / Megatron do: one program per rank.

A rank is a logical NeuronCore (`--lnc` physical cores, as NxD Inference's tp_degree counts
them); the variables below still say `chip` for a rank. A rank's program is its compute ops
(rank-local shapes, which `lowering.kernels.shard` then spreads over its physical cores)
interleaved with its part in collectives, which may join ranks of one chip and of others:

- **Tensor parallel** (`--tp`): QKV and gate/up projections are column-parallel (heads
  and the MLP width split over the TP group; KV heads replicated when tp exceeds them),
  the output and down projections row-parallel, followed by an all-reduce of the
  activations -- or, with sequence parallel, a reduce-scatter, with norms and residuals
  on tokens / tp and an all-gather before the next column-parallel matmul. The embedding
  is vocab-parallel (all-reduce); the LM head is column-parallel over the vocabulary and
  its logits are all-gathered for sampling (training: a vocab-parallel cross entropy
  with a small all-reduce).
- **Expert parallel** (`--ep`): a block of ep chips holds every expert once (experts / ep
  each). After the router, an all-to-all dispatches each token to the chips of its top-k
  experts (FP8 activations when the matmuls are FP8/MX, else BF16), the grouped expert
  matmuls run on what each chip received, and a second all-to-all (BF16) combines the
  results back. With tp > 1 the TP group's tokens are split among its ranks for the MoE
  layer and all-gathered after it. Routing (and `--expert-skew`) decides the traffic.
- **Pipeline parallel** (`--pp`): stages of layers / pp consecutive layers; the embedding
  on the first, the head on the last; activations go stage to stage by send/recv (the
  sender goes on, the receiver waits). `--microbatches` splits each data-parallel rank's
  batch; training runs the 1F1B schedule.
- **Data parallel** (`--dp`): replicas of the model on batch / dp sequences each; in
  training every layer's gradients are all-reduced over the DP group (expert gradients
  over the chips holding the same experts) asynchronously as soon as the layer's
  backward is done, and the optimizer waits for them at the end of the step.

Training's backward mirrors the forward (Megatron's conjugate operators): a forward
all-reduce after a row-parallel matmul has none in backward, the column-parallel input
gets an all-reduce of its gradient; all-gather and reduce-scatter swap; an all-to-all's
gradient goes back the way it came.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from simcore.collectives import CollectivePlan, all_to_all, plan_collective, send_recv
from simcore.dtypes import is_narrow
from simcore.parallel.layout import Parallelism
from simcore.parallel.routing import layer_popularity, route_group
from simcore.topology import Topology
from simcore.workloads.fusion import fuse
from simcore.workloads.llm import _attention_ops, _backward, _mlp_ops
from simcore.workloads.models import ModelConfig
from simcore.workloads.ops import Op

ACT_BYTES = 2  # BF16 activations


@dataclass
class Compute:
    op: Op
    key: tuple           # op instance (layer, display name): a row of the `ops` table


@dataclass
class CommRef:
    coll: int            # index into StepPlan.collectives
    blocking: bool = True
    wait: bool = False   # wait for the (asynchronous) collective `coll` to end
    gap: float = 0.0     # ns the chip is held on an idle system (for the chip's own simulation)


@dataclass
class Collective:
    id: int
    plan: CollectivePlan
    key: tuple           # op instance (layer, display name)

    @property
    def kind(self) -> str:
        return self.plan.kind


@dataclass
class StepPlan:
    """Per-rank programs of one step and the collectives that tie them together. A rank is a logical
    NeuronCore (`topo.lnc` physical cores); `topo` places it on its chip."""

    par: Parallelism
    topo: Topology
    programs: list[list]                        # per rank: Compute | CommRef
    collectives: list[Collective]
    op_kinds: dict[tuple, str] = field(default_factory=dict)   # op instance -> kind, in first-seen order
    layer_names: dict[int, str] = field(default_factory=dict)

    @property
    def ranks(self) -> int:
        return len(self.programs)


@dataclass
class _Comm:
    """A communication site while generating: its forward and backward kinds."""

    fwd: str | None
    bwd: str | None
    group: tuple[int, ...]
    nbytes: int
    site: str
    layer: int
    matrix: np.ndarray | None = None     # all-to-all: bytes rank -> rank (forward)


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _tag(op: Op) -> Op:
    """Chip-local matmuls may split their columns over fewer cores when too narrow for all."""
    return dataclasses.replace(op, params=dict(op.params, partial_n=True)) if op.kind == "matmul" else op


class Planner:
    """Builds the StepPlan of a model step for a parallelism on a topology."""

    def __init__(self, cfg: ModelConfig, phase: str, batch: int, seq: int, context: int, layers: int, dtype: str,
                 par: Parallelism, topo: Topology, *, algorithm: str = "auto", expert_skew: float = 0.0,
                 seed: int = 0, fusion: bool = False) -> None:
        self.cfg, self.phase, self.dtype, self.par, self.topo = cfg, phase, dtype, par, topo
        self.layers, self.algorithm, self.skew, self.seed = layers, algorithm, float(expert_skew), int(seed)
        if phase == "decode":
            self.q_len, self.kv_len = 1, context + 1
        else:
            self.q_len, self.kv_len = seq, context + seq
        self.b_mb = batch // par.dp // par.microbatches      # sequences per microbatch on a DP rank
        self.T = self.b_mb * self.q_len                     # tokens per microbatch on a DP rank
        self.per_stage = layers // par.pp
        tp = par.tp
        KV = cfg.kv_heads
        self.local = dataclasses.replace(cfg, heads=cfg.heads // tp, kv_heads=KV // tp if KV >= tp else 1,
                                         intermediate=cfg.intermediate // tp)
        self.sp = par.sp and tp > 1
        self.collectives: list[Collective] = []
        self._coll_index: dict[tuple, int] = {}
        self._routing: dict[tuple, np.ndarray] = {}
        self.op_kinds: dict[tuple, str] = {}
        self._op_cache: dict[tuple, list] = {}
        self._plans: dict[tuple, CollectivePlan] = {}
        self._compute_cache: dict[tuple, tuple] = {}
        self._emit_cache: dict[tuple, tuple] = {}
        self._refs: dict[tuple, CommRef] = {}
        self.fusion = fusion and phase != "train"
        self._fused: dict[tuple, tuple] = {}

    # -- collectives ----------------------------------------------------------------------
    def _collective(self, key: tuple, kind: str, group: tuple[int, ...], nbytes: int,
                    matrix: np.ndarray | None = None) -> int:
        # every group is an arithmetic run of ranks (tp, dp, ep, expert-dp groups, send/recv pairs), so its
        # first, last and size name it without hashing all its ranks (thousands of lookups per step)
        ident = (key, group[0], group[-1], len(group))
        idx = self._coll_index.get(ident)
        if idx is None:
            if kind == "all_to_all":
                plan = all_to_all(self.topo, group, matrix)
            else:  # a group issues the same few collectives layer after layer: plan each once
                memo = (kind, group, nbytes)
                plan = self._plans.get(memo)
                if plan is None:
                    plan = self._plans[memo] = (send_recv(self.topo, group[0], group[1], nbytes) if kind == "send_recv"
                                                else plan_collective(self.topo, kind, group, nbytes, self.algorithm))
            idx = self._coll_index[ident] = len(self.collectives)
            self.collectives.append(Collective(idx, plan, key))
            self.op_kinds.setdefault(key, kind)
        return idx

    def _ref(self, chip: int, idx: int, blocking: bool = True) -> CommRef:
        plan = self.collectives[idx].plan
        if plan.coupled:   # its ranks finish together: one reference serves them all (compose only reads it)
            ref = self._refs.get((idx, blocking))
            if ref is None:
                ref = self._refs[(idx, blocking)] = CommRef(idx, blocking, False,
                                                             float(plan.idle_ns.max()) if blocking else 0.0)
            return ref
        r = plan.position(chip)
        gap = float(plan.idle_ns[r]) if blocking else 0.0
        return CommRef(idx, blocking, False, gap)

    # -- routing --------------------------------------------------------------------------
    def _counts(self, layer: int, mb: int, group: tuple[int, ...], tokens: list[int]) -> np.ndarray:
        key = (layer, mb, group)
        c = self._routing.get(key)
        if c is None:
            e = self.cfg.moe
            prob = layer_popularity(e.experts, self.skew, self.seed, layer)
            c = self._routing[key] = route_group(tokens, e.experts, e.top_k, prob,
                                                 (self.seed, layer, mb, group[0]))
        return c

    # -- one layer, forward ---------------------------------------------------------------
    def _layer(self, chip: int, L: int, mb: int) -> list:
        """Forward entries (Op | _Comm) of layer L for one microbatch on `chip`."""
        par, cfg, T, h = self.par, self.cfg, self.T, self.cfg.hidden
        tp = par.tp
        tpg = par.tp_group(chip)
        rows = T // tp if self.sp else T
        act = T * h * ACT_BYTES
        norm1, res1, norm2, res2 = self._shared(("norms", L), lambda: [
            Op("attention.input_norm", "rmsnorm", dict(rows=rows, cols=h), "bf16", L),
            Op("attention.residual_add", "residual_add", dict(rows=rows, cols=h), "bf16", L),
            Op("mlp.post_attention_norm", "rmsnorm", dict(rows=rows, cols=h), "bf16", L),
            Op("mlp.residual_add", "residual_add", dict(rows=rows, cols=h), "bf16", L)])
        out: list = [norm1]
        if tp > 1:
            out.append(_Comm("all_gather", "reduce_scatter", tpg, act, "attention.input", L) if self.sp
                       else _Comm(None, "all_reduce", tpg, act, "attention.qkv_proj", L))
        out += self._shared(("attention", L), lambda: [_tag(o) for o in _attention_ops(
            self.local, L, T, self.b_mb, self.q_len, self.kv_len, self.dtype, self.phase)])
        if tp > 1:
            out.append(_Comm("reduce_scatter", "all_gather", tpg, act, "attention.o_proj", L) if self.sp
                       else _Comm("all_reduce", None, tpg, act, "attention.o_proj", L))
        out += [res1, norm2]
        moe = cfg.moe is not None and L >= cfg.moe.dense_layers
        if moe and par.ep > 1:
            out += self._moe_ep(chip, L, mb)
        else:
            if tp > 1:
                out.append(_Comm("all_gather", "reduce_scatter", tpg, act, "mlp.input", L) if self.sp
                           else _Comm(None, "all_reduce", tpg, act, "mlp.gate_up_proj", L))
            if moe:
                out += self._moe_local(chip, L, mb)
            else:
                out += self._shared(("mlp", L), lambda: [_tag(o) for o in _mlp_ops(self.local, L, T, self.dtype,
                                                                                   np.random.default_rng(0))])
            if tp > 1:
                out.append(_Comm("reduce_scatter", "all_gather", tpg, act, "mlp.down_proj", L) if self.sp
                           else _Comm("all_reduce", None, tpg, act, "mlp.down_proj", L))
        out.append(res2)
        return out

    def _shared(self, key: tuple, make) -> list:
        """Ops every chip of the step runs alike, built once and shared (chips only read them)."""
        got = self._op_cache.get(key)
        if got is None:
            got = self._op_cache[key] = make()
        return got

    def _moe_ops(self, L: int, tokens: int, ms: list[int], width: int, shared_width: int) -> tuple[list, list, list]:
        """Router/top-k, routed experts (grouped), shared experts and combine for `tokens` tokens."""
        e, h, dt = self.cfg.moe, self.cfg.hidden, self.dtype
        mm = dict(quantize_a=dt != "bf16", partial_n=True)
        head = [Op("moe.router", "matmul", dict(m=tokens, k=h, n=e.experts, quantize_a=False, partial_n=True), "bf16", L),
                Op("moe.topk", "router_topk", dict(rows=tokens, experts=e.experts, top_k=e.top_k), "bf16", L)]
        routed = []
        if ms:
            routed = [Op("moe.experts.gate_up_proj", "grouped_matmul", dict(ms=ms, k=h, n=2 * width, **mm), dt, L),
                      Op("moe.experts.silu_mul", "silu_mul", dict(rows=int(sum(ms)), cols=width), "bf16", L),
                      Op("moe.experts.down_proj", "grouped_matmul", dict(ms=ms, k=width, n=h, **mm), dt, L)]
        tail = []
        if e.shared_experts and tokens:
            tail += [Op("moe.shared.gate_up_proj", "matmul", dict(m=tokens, k=h, n=2 * shared_width, **mm), dt, L),
                     Op("moe.shared.silu_mul", "silu_mul", dict(rows=tokens, cols=shared_width), "bf16", L),
                     Op("moe.shared.down_proj", "matmul", dict(m=tokens, k=shared_width, n=h, **mm), dt, L)]
        if tokens:
            tail.append(Op("moe.combine", "moe_combine",
                           dict(rows=tokens, cols=h, top_k=e.top_k + (1 if e.shared_experts else 0)), "bf16", L))
        if not tokens:
            head = []
        return head, routed, tail

    def _moe_local(self, chip: int, L: int, mb: int) -> list:
        """Experts on every chip (ep = 1), their width split over the TP group."""
        par, e = self.par, self.cfg.moe
        s, d, _ = par.coords(chip)
        def make() -> list:
            counts = self._counts(L, mb, (par.chip(s, d, 0),), [self.T])[0]
            ms = [int(c) for c in counts if c > 0]
            head, routed, tail = self._moe_ops(L, self.T, ms, e.intermediate // par.tp,
                                               e.intermediate * e.shared_experts // par.tp)
            return head + routed + tail

        return self._shared(("moe", L, mb, s, d), make)

    def _moe_ep(self, chip: int, L: int, mb: int) -> list:
        """Experts spread over the EP block: route, dispatch, grouped experts, combine."""
        par, cfg, e = self.par, self.cfg, self.cfg.moe
        h = cfg.hidden
        group = par.ep_group(chip)
        split = _split(self.T, par.tp)
        tokens = [split[par.coords(c)[2]] for c in group]
        counts = self._counts(L, mb, group, tokens)                # (ep, experts)
        per = e.experts // par.ep
        me = group.index(chip)
        owner = np.arange(e.experts) // per
        sent = np.stack([np.bincount(owner, weights=counts[r], minlength=par.ep) for r in range(par.ep)])  # tokens r -> q
        dispatch_bytes = 1 if is_narrow(self.dtype) else ACT_BYTES
        received = counts[:, me * per:(me + 1) * per].sum(axis=0)
        ms = [int(c) for c in received if c > 0]
        my_tokens = tokens[me]
        head, routed, tail = self._moe_ops(L, my_tokens, ms, e.intermediate, e.intermediate * e.shared_experts)
        out: list = list(head)
        out.append(_Comm("all_to_all", "all_to_all", group, 0, "moe.dispatch", L, sent * h * dispatch_bytes))
        out += routed
        out.append(_Comm("all_to_all", "all_to_all", group, 0, "moe.combine", L, sent.T * h * ACT_BYTES))
        out += tail
        if par.tp > 1 and not self.sp:
            out.append(_Comm("all_gather", "reduce_scatter", par.tp_group(chip), self.T * h * ACT_BYTES,
                             "moe.output", L))
        return out

    # -- around the layers ----------------------------------------------------------------
    def _embedding(self, chip: int) -> list:
        par, h, T = self.par, self.cfg.hidden, self.T
        out: list = list(self._shared(("embedding",), lambda: [Op("embedding", "embedding", dict(rows=T, cols=h),
                                                                   "bf16", -1)]))
        if par.tp > 1:  # vocab-parallel: each rank gathers the rows of its vocabulary shard
            kind = "reduce_scatter" if self.sp else "all_reduce"
            out.append(_Comm(kind, None, par.tp_group(chip), T * h * ACT_BYTES, "embedding", -1))
        return out

    def _head(self, chip: int) -> list:
        par, cfg, T, h = self.par, self.cfg, self.T, self.cfg.hidden
        tp = par.tp
        train = self.phase == "train"
        head_rows = T if train else self.b_mb
        rows = head_rows // tp if self.sp and train else head_rows
        out: list = [Op("final_norm", "rmsnorm", dict(rows=rows, cols=h), "bf16", -1)]
        if tp > 1:
            out.append(_Comm("all_gather", "reduce_scatter", par.tp_group(chip), head_rows * h * ACT_BYTES,
                             "lm_head.input", -1) if self.sp and train
                       else _Comm(None, "all_reduce", par.tp_group(chip), head_rows * h * ACT_BYTES, "lm_head", -1))
        out.append(Op("lm_head", "matmul", dict(m=head_rows, k=h, n=cfg.vocab // tp, quantize_a=self.dtype != "bf16",
                                                partial_n=True), self.dtype, -1))
        if not train:
            if tp > 1:
                out.append(_Comm("all_gather", None, par.tp_group(chip), head_rows * cfg.vocab * ACT_BYTES, "logits", -1))
            out.append(Op("sampling", "sampling", dict(rows=self.b_mb, vocab=cfg.vocab), "bf16", -1))
        else:
            out.append(Op("loss", "cross_entropy", dict(rows=T, vocab=cfg.vocab // tp), "bf16", -1))
            if tp > 1:  # vocab-parallel cross entropy: max and sum of exponentials per token
                out.append(_Comm("all_reduce", None, par.tp_group(chip), T * 8, "loss", -1))
        return out

    # -- forward / backward of a stage ----------------------------------------------------
    def _stage_entries(self, chip: int, mb: int) -> list:
        """A stage's forward entries for `chip`; a dense model's depend only on the rank's TP group, so the
        group's ranks share one list (and `_emit` its template)."""
        if self.cfg.moe is None:
            par = self.par
            key = ("stage", par.coords(chip)[0], par.tp_group(chip)[0], mb)
            return self._shared(key, lambda: self._build_stage_entries(chip, mb))
        return self._build_stage_entries(chip, mb)

    def _build_stage_entries(self, chip: int, mb: int) -> list:
        par = self.par
        s = par.coords(chip)[0]
        out: list = []
        if s == 0:
            out += self._embedding(chip)
        for L in range(s * self.per_stage, (s + 1) * self.per_stage):
            out += self._layer(chip, L, mb)
        if s == par.pp - 1:
            out += self._head(chip)
        return out

    def _fused_entries(self, entries: list) -> list:
        """`entries` with NxD Inference's fused kernels, once per list: ranks sharing a list share its fusion
        (and `_emit` its template). A site with no forward collective is no boundary in a forward step."""
        memo = ("fused", id(entries))
        got = self._fused.get(memo)
        if got is None:
            fused = fuse([x for x in entries if isinstance(x, Op) or x.fwd is not None],
                         lambda x: x if isinstance(x, Op) else None, self._fused_op)
            got = self._fused[memo] = (fused, entries)   # keeps `entries` alive: its id stays its own
        return got[0]

    def _fused_op(self, op: Op, parts: list) -> Op:
        """One fused op per set of shared parts, so chips that share ops share their fusion too."""
        memo = (op.name, tuple(id(p) for p in parts))
        got = self._fused.get(memo)
        if got is None:
            got = self._fused[memo] = (op, parts)  # keeps the parts alive: their ids stay theirs
        return got[0]

    def _key(self, op_name: str, layer: int, mb: int) -> tuple:
        name = op_name if self.par.microbatches == 1 else f"{op_name} (microbatch {mb})"
        return (layer, name)

    def _emit(self, chip: int, entries: list, mb: int, backward: bool) -> list:
        """Program items of forward (or, reversed, backward) entries: a template of runs of computes and
        collective indices, built once per entries list (ranks sharing it share its collectives), then
        this rank's references to those collectives."""
        memo = (id(entries), mb, backward)
        hit = self._emit_cache.get(memo)
        if hit is None:
            hit = self._emit_cache[memo] = (entries, self._template(entries, mb, backward))
        items: list = []
        for piece in hit[1]:
            if isinstance(piece, list):
                items += piece
            else:
                items.append(self._ref(chip, piece))
        return items

    def _template(self, entries: list, mb: int, backward: bool) -> list:
        """Runs of Compute items and, between them, collective indices."""
        out: list = []
        run: list = []
        seq = reversed(entries) if backward else entries
        for e in seq:
            if isinstance(e, Op):
                memo = (id(e), backward, mb)
                computes = self._compute_cache.get(memo)
                if computes is None:
                    computes = []
                    for o in (_backward(e) if backward else [e]):
                        o = _tag(o)
                        key = self._key(o.name, o.layer, mb)
                        self.op_kinds.setdefault(key, o.kind)
                        computes.append(Compute(o, key))
                    self._compute_cache[memo] = (e, computes)  # keeps e alive: its id stays its own
                else:
                    computes = computes[1]
                run += computes
                continue
            kind = e.bwd if backward else e.fwd
            if kind is None:
                continue
            name = f"{e.site}.{kind}" if not backward else f"{e.site}.grad_{kind}"
            matrix = None if e.matrix is None else (e.matrix.T if backward else e.matrix)
            if run:
                out.append(run)
                run = []
            out.append(self._collective(self._key(name, e.layer, mb), kind, e.group, e.nbytes, matrix))
        if run:
            out.append(run)
        return out

    def _p2p(self, chip: int, peer: int, nbytes: int, name: str, layer: int, mb: int, send: bool) -> CommRef:
        src, dst = (chip, peer) if send else (peer, chip)
        idx = self._collective(self._key(name, layer, mb), "send_recv", (src, dst), nbytes)
        return self._ref(chip, idx, blocking=not send)

    def _forward(self, chip: int, mb: int, entries: list) -> list:
        par = self.par
        s, d, t = par.coords(chip)
        h = self.cfg.hidden
        act = (self.T // par.tp if self.sp else self.T) * h * ACT_BYTES
        items: list = []
        if s > 0:
            items.append(self._p2p(chip, par.chip(s - 1, d, t), act, f"pp.activations.stage{s - 1}to{s}", -1, mb, False))
        items += self._emit(chip, entries, mb, False)
        if s < par.pp - 1:
            items.append(self._p2p(chip, par.chip(s + 1, d, t), act, f"pp.activations.stage{s}to{s + 1}", -1, mb, True))
        return items

    def _backward_pass(self, chip: int, mb: int, entries: list) -> list:
        par = self.par
        s, d, t = par.coords(chip)
        h = self.cfg.hidden
        act = (self.T // par.tp if self.sp else self.T) * h * ACT_BYTES
        items: list = []
        if s < par.pp - 1:
            items.append(self._p2p(chip, par.chip(s + 1, d, t), act, f"pp.gradients.stage{s + 1}to{s}", -1, mb, False))
        items += self._emit(chip, entries, mb, True)
        if s > 0:
            items.append(self._p2p(chip, par.chip(s - 1, d, t), act, f"pp.gradients.stage{s}to{s - 1}", -1, mb, True))
        return items

    # -- parameters a chip updates (training) ---------------------------------------------
    def local_layer_params(self, L: int) -> tuple[int, int]:
        """(dense, expert) parameters of layer L held by one chip."""
        cfg, par = self.cfg, self.par
        attn = self.local.attention_params()
        moe = cfg.moe is not None and L >= cfg.moe.dense_layers
        if not moe:
            return attn + 3 * cfg.hidden * (cfg.intermediate // par.tp) + cfg.hidden, 0
        e = cfg.moe
        h = cfg.hidden
        shared = e.shared_experts * 3 * h * e.intermediate // (1 if par.ep > 1 else par.tp)
        router = h * e.experts + h
        if par.ep > 1:
            return attn + shared + router, (e.experts // par.ep) * 3 * h * e.intermediate
        return attn + shared + router, e.experts * 3 * h * e.intermediate // par.tp

    def _train_tail(self, chip: int, after_backward: dict[int, list]) -> list:
        """Gradient all-reduces (async, issued as each layer's backward ends) and the optimizer."""
        par = self.par
        s = par.coords(chip)[0]
        items: list = []
        for L in range(s * self.per_stage, (s + 1) * self.per_stage):
            dense, expert = self.local_layer_params(L)
            refs = []
            if par.dp > 1:
                idx = self._collective(self._key("dp.grad_all_reduce", L, 0), "all_reduce", par.dp_group(chip), dense * 2)
                refs.append(idx)
            if expert:
                g = par.expert_dp_group(chip)
                if len(g) > 1:
                    idx = self._collective(self._key("dp.expert_grad_all_reduce", L, 0), "all_reduce", g, expert * 2)
                    refs.append(idx)
            after_backward[L] = [self._ref(chip, i, blocking=False) for i in refs]
            items += [CommRef(i, True, True, 0.0) for i in refs]
            params = dense + expert
            op = Op("optimizer.adamw", "adamw", dict(params=params), "fp32", L)
            key = self._key(op.name, L, 0)
            self.op_kinds.setdefault(key, op.kind)
            items.append(Compute(op, key))
        emb = self.cfg.embedding_params() // 2 // par.tp
        if s == 0 or s == par.pp - 1:
            op = Op("optimizer.adamw_embeddings", "adamw", dict(params=emb), "fp32", -1)
            key = self._key(op.name, -1, 0)
            self.op_kinds.setdefault(key, op.kind)
            items.append(Compute(op, key))
        return items

    # -- programs ---------------------------------------------------------------------------
    def chip_program(self, chip: int) -> list:
        par = self.par
        s = par.coords(chip)[0]
        M = par.microbatches
        entries = [self._stage_entries(chip, mb) for mb in range(M)]
        if self.fusion:  # NxD Inference's fused kernels (simcore.workloads.fusion): runs between collectives
            # (a site with no forward collective is no boundary in a forward step)
            entries = [self._fused_entries(e) for e in entries]
        if self.phase != "train":
            items: list = []
            for mb in range(M):
                items += self._forward(chip, mb, entries[mb])
            return items
        # 1F1B: (pp - s - 1) warm-up forwards, then one forward and one backward in turn
        warm = min(par.pp - s - 1, M)
        order = [("F", m) for m in range(warm)]
        for i in range(M - warm):
            order += [("F", warm + i), ("B", i)]
        order += [("B", m) for m in range(M - warm, M)]
        after: dict[int, list] = {}
        tail = self._train_tail(chip, after)
        items = []
        for kind, mb in order:
            if kind == "F":
                items += self._forward(chip, mb, entries[mb])
                continue
            bwd = self._backward_pass(chip, mb, entries[mb])
            if mb == M - 1 and after:  # issue each layer's gradient all-reduce right after its backward
                bwd = self._insert_grad_reduces(bwd, after)
            items += bwd
        return items + tail

    @staticmethod
    def _insert_grad_reduces(items: list, after: dict[int, list]) -> list:
        last_of_layer: dict[int, int] = {}
        for i, it in enumerate(items):
            if isinstance(it, Compute) and it.op.layer >= 0:
                last_of_layer[it.op.layer] = i
        out: list = []
        for i, it in enumerate(items):
            out.append(it)
            for L, pos in last_of_layer.items():
                if pos == i:
                    out += after.get(L, [])
        return out

    def build(self) -> StepPlan:
        programs = [self.chip_program(c) for c in range(self.par.ranks)]
        names = {L: f"layer {L}" for L in range(self.layers)}
        return StepPlan(self.par, self.topo, programs, self.collectives, self.op_kinds, names)

