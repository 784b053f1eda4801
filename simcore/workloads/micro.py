"""Micro-benchmarks: one op each (a GEMM, an attention, a softmax, an RMSNorm), run on one
core by default, as an NKI kernel benchmark would."""

from __future__ import annotations

from simcore.dtypes import is_mx
from simcore.errors import ConfigError
from simcore.workloads.ops import Op, Workload

MICROBENCHMARKS: dict[str, dict] = {
    "gemm": {"shape": "M,K,N", "default": (8192, 8192, 8192),
             "help": "C[M,N] = A[M,K] @ B[K,N] with inputs already in --dtype in HBM"},
    "attention": {"shape": "B,H,Q,KV[,D]", "default": (1, 8, 4096, 4096, 128),
                  "help": "flash attention: batch, heads, query and key lengths (causal when Q > 1), head dim"},
    "softmax": {"shape": "ROWS,COLS", "default": (4096, 4096), "help": "row softmax, BF16"},
    "rmsnorm": {"shape": "ROWS,COLS", "default": (4096, 4096), "help": "RMSNorm over rows, BF16"},
    "dma": {"shape": "PARTITIONS,COLS", "default": (128, 4096),
            "help": "a [PARTITIONS, COLS] BF16 tile loaded from HBM into PARTITIONS SBUF partitions, exp on Scalar, "
                    "stored back (the NKI DMA introduction's kernel: DMA engines and bandwidth by access pattern)"},
    "allreduce": {"shape": "BYTES,RANKS", "default": (64 << 20, 16), "help": "all-reduce of BYTES per rank over RANKS ranks (logical cores, --lnc)"},
    "allgather": {"shape": "BYTES,RANKS", "default": (64 << 20, 16), "help": "all-gather: BYTES gathered per rank over RANKS ranks (logical cores, --lnc)"},
    "reducescatter": {"shape": "BYTES,RANKS", "default": (64 << 20, 16), "help": "reduce-scatter of BYTES per rank over RANKS ranks (logical cores, --lnc)"},
    "alltoall": {"shape": "BYTES,RANKS", "default": (64 << 20, 16), "help": "all-to-all of BYTES per rank over RANKS ranks (logical cores, --lnc)"},
}
COLLECTIVES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
               "alltoall": "all_to_all"}   # micro-benchmark -> the collective kind it runs


def parse_shape(text: str | tuple | list | None, workload: str) -> tuple[int, ...]:
    spec = MICROBENCHMARKS[workload]
    if text is None or text == "":
        return tuple(spec["default"])
    if isinstance(text, (tuple, list)):
        parts = list(text)
    else:
        parts = [p.strip() for p in str(text).replace("x", ",").split(",") if p.strip()]
    try:
        dims = tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        raise ConfigError(f"--shape '{text}' for {workload} must be integers {spec['shape']}.") from None
    want = spec["shape"].replace("[", "").replace("]", "").split(",")
    optional = spec["shape"].count("[")
    if not (len(want) - optional <= len(dims) <= len(want)):
        raise ConfigError(f"--shape '{text}' for {workload} must be {spec['shape']} ({len(want) - optional} numbers).")
    if any(d <= 0 for d in dims):
        raise ConfigError(f"--shape '{text}' for {workload} must be positive integers.")
    return dims


def microbenchmark(name: str, shape, dtype: str, *, compute_cores: int, mx_group: int) -> Workload:
    dims = parse_shape(shape, name)
    if name == "gemm":
        m, k, n = dims
        if is_mx(dtype) and k % mx_group:
            raise ConfigError(f"gemm K={k} is not a multiple of the MX scale group ({mx_group}) that {dtype} needs.")
        if n % compute_cores:
            raise ConfigError(f"gemm N={n} does not divide evenly over {compute_cores} compute cores.")
        ops = [Op("gemm", "matmul", dict(m=m, k=k, n=n, quantize_a=False, split="n"), dtype, 0)]
        params = dict(shape=[m, k, n], m=m, k=k, n=n)
        display = f"GEMM {m}x{k}x{n} {dtype}"
    elif name == "attention":
        b, h, q, kv = dims[:4]
        d = dims[4] if len(dims) > 4 else 128
        if q > kv:
            raise ConfigError(f"attention query length {q} exceeds the key length {kv}.")
        if h % compute_cores:
            raise ConfigError(f"attention with {h} heads does not divide over {compute_cores} compute cores.")
        ops = [Op("attention", "attention", dict(batch=b, q_heads=h, kv_heads=h, q_len=q, kv_len=kv, d_qk=d, d_v=d,
                                                 causal=q > 1), "bf16", 0)]
        params = dict(shape=list(dims), batch=b, heads=h, q_len=q, kv_len=kv, head_dim=d)
        display = f"attention B{b} H{h} Q{q} KV{kv} D{d}"
        dtype = "bf16"
    elif name in COLLECTIVES:
        nbytes, ranks = dims
        if ranks < 2:
            raise ConfigError(f"{name} needs at least 2 ranks (got {ranks}).")
        if name != "allreduce" and nbytes % ranks:
            raise ConfigError(f"{name} of {nbytes} bytes does not divide evenly over {ranks} ranks.")
        ops = [Op(name, "collective", dict(name=name, bytes=nbytes, ranks=ranks), "bf16", 0)]
        params = dict(shape=[nbytes, ranks], bytes=nbytes, ranks=ranks)
        display = f"{name} {nbytes} B x {ranks} ranks"
        dtype = "bf16"
    else:
        rows, cols = dims
        if name == "dma" and rows > 128:
            raise ConfigError(f"dma tile of {rows} partitions exceeds the 128 SBUF partitions; use at most 128.")
        ops = [Op(name, "tile_exp" if name == "dma" else name, dict(rows=rows, cols=cols), "bf16", 0)]
        params = dict(shape=[rows, cols], rows=rows, cols=cols)
        display = f"{name} {rows}x{cols}"
        dtype = "bf16"
    return Workload(name, display, "microbenchmark", dtype, ops, params, None, {0: "benchmark"})
