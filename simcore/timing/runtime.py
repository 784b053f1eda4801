"""What the Neuron runtime costs around the kernels: a step's start, the barrier between ops,
each kernel's launch, and the host's share of a step.

Ops are not free to chain. A model step is one NEFF execution: the runtime starts it
(`step_launch_ns`), and between two ops every core waits for all the others to finish the
previous op (a chip-wide semaphore barrier, `op_barrier_ns`) and then fetches the next
kernel's first instructions and resets its semaphores before the kernel's first instruction
issues (`kernel_launch_ns`). `host_step_ns` is the framework's per-step host time (input
preparation, scheduling, output processing) when it is not overlapped with the device.
The values and their sources are in each preset's `[runtime]` section; the simulator adds
them on the timeline and the trace shows them on each core's `Runtime` row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Opcodes of the Runtime row (instructions on tracks of kind "runtime").
STEP_LAUNCH = "StepLaunch"
HOST_STEP = "HostStep"
OP_BARRIER = "OpBarrier"
KERNEL_LAUNCH = "KernelLaunch"
RUNTIME_OPCODES = (HOST_STEP, STEP_LAUNCH, OP_BARRIER, KERNEL_LAUNCH)
RUNTIME_KEYS = ("host_step_ns", "step_launch_ns", "op_barrier_ns", "kernel_launch_ns")


@dataclass(frozen=True)
class RuntimeCosts:
    """Fixed costs in ns; all zero means op boundaries are free (the simulator before issue 14)."""

    host_step_ns: float = 0.0
    step_launch_ns: float = 0.0
    op_barrier_ns: float = 0.0
    kernel_launch_ns: float = 0.0

    @staticmethod
    def of(data: dict[str, Any]) -> "RuntimeCosts":
        """From a preset's data (its `[runtime]` section; a preset without one pays nothing)."""
        r = data.get("runtime", {})
        return RuntimeCosts(*(float(r.get(k, 0.0)) for k in RUNTIME_KEYS))

    @property
    def step_start_ns(self) -> float:
        """Time from the step's start to its first op's barrier: host time, then the NEFF start."""
        return self.host_step_ns + self.step_launch_ns

    def before_op_ns(self, first: bool) -> float:
        """Time from the previous op's end (or the step start) to an op's kernels' first instruction:
        no barrier before a step's first op (nothing ran before it)."""
        return (0.0 if first else self.op_barrier_ns) + self.kernel_launch_ns

    def rows_before(self, t_end_prev: float, first: bool) -> list[tuple[str, float, float]]:
        """(opcode, start, end) of the runtime intervals between the previous op's end and an op."""
        out = []
        t = t_end_prev
        if not first and self.op_barrier_ns > 0:
            out.append((OP_BARRIER, t, t + self.op_barrier_ns))
            t += self.op_barrier_ns
        if self.kernel_launch_ns > 0:
            out.append((KERNEL_LAUNCH, t, t + self.kernel_launch_ns))
        return out

    def step_rows(self) -> list[tuple[str, float, float]]:
        """(opcode, start, end) of the step's own runtime intervals, from t = 0."""
        out = []
        if self.host_step_ns > 0:
            out.append((HOST_STEP, 0.0, self.host_step_ns))
        if self.step_launch_ns > 0:
            out.append((STEP_LAUNCH, self.host_step_ns, self.step_start_ns))
        return out
