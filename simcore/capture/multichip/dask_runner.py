"""Run a multi-chip capture's chip classes on a Dask cluster (`distributed`).

    from simcore.capture.multichip.dask_runner import DaskRunner
    with DaskRunner("tcp://head:8786") as runner:              # or DaskRunner(client)
        simcore.capture(workload="llama3.1-405b", tp=16, pp=9, ..., out_path="big.trnx", runner=runner)

    trnx capture ... --scheduler tcp://head:8786                 # the same from the CLI

Each chip class is one task, `simulate_task((hardware data, items, compute cores, detail
cores))`: plain data in and out, so any worker of the cluster can run it. As with local
worker processes (`ProcessRunner`), the capture simulates the first class here and hands
its op windows to the runner (`initializer`, `initargs`); they go to every worker once
(`Client.scatter(..., broadcast=True)`) and seed its window cache before its first task,
so workers skip the windows every chip shares. Results come back in task order, and the
trace is the same as an inline capture's (the windows are a function of their key).

Workers need this package installed (`pip install trn3-explorer`), like any Dask task.
`distributed` is imported only when a runner is made.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from typing import Any

from simcore.capture.cancel import check_cancel
from simcore.errors import UserError

CONNECT_TIMEOUT_S = 10
_SEEDED: set[str] = set()   # per worker process: window seeds already applied (by scatter key)


def connect_scheduler(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> Any:
    """A `distributed.Client` on the scheduler at `address`, or one sentence saying why not."""
    from distributed import Client

    check_address(address)
    hint = "start one with `dask scheduler` and workers with `dask worker ADDRESS` (docs/sweeps.md)"
    scheme, _, rest = address.partition("://")
    host, _, port = rest.rpartition(":")
    if scheme == "tcp" and port.isdigit():   # a refused connection fails now, not after Dask's retries
        try:
            socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s).close()
        except OSError as exc:
            raise UserError(f"cannot reach the Dask scheduler at {address} ({exc.strerror or _why(exc)}); "
                            f"{hint}.") from None
    try:
        return Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UserError(f"cannot reach the Dask scheduler at {address} ({_why(exc)}); {hint}.") from None


def check_address(address: Any) -> str:
    if not isinstance(address, str) or "://" not in address or not address.split("://", 1)[1]:
        raise UserError(f"--scheduler '{address}' is not a scheduler address like tcp://HOST:8786.")
    return address


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.rstrip(".")[:200]


def _seeded_call(fn: Callable[[Any], Any], task: Any, initializer: Callable | None, seed: tuple, token: str) -> Any:
    """On a worker: run `initializer(*seed)` once per broadcast seed (per process), then the task."""
    if initializer is not None and token not in _SEEDED:
        initializer(*seed)
        _SEEDED.add(token)
    return fn(task)


class DaskRunner:
    """A `Runner` over a `distributed.Client`, or over a scheduler address (connected on first
    use, closed by `close()` / the end of a `with` block); `cancel` (anything with is_set())
    stops waiting and cancels the tasks still queued."""

    def __init__(self, client_or_address: Any, cancel: Any = None) -> None:
        self._own = isinstance(client_or_address, str)
        self._address = check_address(client_or_address) if self._own else None
        self._client = None if self._own else client_or_address
        self.cancel = cancel
        self.initializer: Callable | None = None   # set by the capture: seed_windows and the first class's windows
        self.initargs: tuple = ()

    def connect(self) -> Any:
        """The client (connecting to the address now if not yet: an unreachable scheduler fails early)."""
        if self._client is None:
            self._client = connect_scheduler(self._address)
        return self._client

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], done: Callable[[int], None] | None = None) -> list:
        from distributed import as_completed

        client = self.connect()
        init, seed, token = None, (), ""
        if self.initializer is not None and self.initargs:
            init, seed = self.initializer, client.scatter([tuple(self.initargs)], broadcast=True, hash=True)[0]
            token = seed.key
        futures = [client.submit(_seeded_call, fn, task, init, seed, token, pure=False) for task in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list = [None] * len(tasks)
        try:
            for future in as_completed(futures, loop=client.loop):
                i = index[future.key]
                results[i] = future.result()
                if done is not None:
                    done(i)
                check_cancel(self.cancel)
        finally:
            client.cancel([f for f in futures if not f.done()])
        return results

    def close(self) -> None:
        if self._own and self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> "DaskRunner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
