"""Hypothesis mutates valid Kineto files (bytes and JSON structure); each result imports or fails in one sentence."""

from __future__ import annotations

import copy
import gzip
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interop.kineto_samples import rank_doc
from robustness.contract import import_or_one_sentence
from robustness.mutations import MUTATION, mutate

GOOD = json.dumps(rank_doc(0)).encode()

_SCALAR = (st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats()
           | st.text(max_size=12) | st.sampled_from(["nan", "1e999", "-0", "ncclKernel_AllReduce", "ProfilerStep#"]))
_JSON = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
_FIELDS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id"]
_ARGS = ["device", "stream", "External id", "correlation", "bytes", "Collective name", "In msg nelems", "Out msg nelems",
         "Group size", "dtype", "Process Group Name", "Process Group Ranks"]


@pytest.mark.timeout(300)
@settings(max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", 80)), deadline=None)
@given(ops=st.lists(MUTATION, min_size=1, max_size=5), gz=st.booleans())
def test_byte_mutations(ops: list, gz: bool) -> None:
    data = mutate(GOOD, ops)
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "rank0.json"
        src.write_bytes(gzip.compress(data) if gz else data)
        import_or_one_sentence([src], Path(d) / "out.trnx")


@pytest.mark.timeout(300)
@settings(max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", 80)), deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, 100), st.sampled_from(_FIELDS + [f"args.{a}" for a in _ARGS]), _JSON),
                      min_size=1, max_size=6),
       header=st.dictionaries(st.sampled_from(["distributedInfo", "deviceProperties", "traceName", "schemaVersion"]), _JSON, max_size=2))
def test_structural_mutations_on_two_ranks(edits: list, header: dict) -> None:
    docs = [rank_doc(0), rank_doc(1)]
    for i, (which, key, value) in enumerate(edits):
        doc = docs[i % 2]
        ev = doc["traceEvents"][which % len(doc["traceEvents"])]
        if key.startswith("args."):
            if not isinstance(ev.get("args"), dict):
                ev["args"] = {}
            ev["args"][key[5:]] = copy.deepcopy(value)
        else:
            ev[key] = copy.deepcopy(value)
    docs[1].update(header)
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for r, doc in enumerate(docs):
            p = Path(d) / f"rank{r}.json"
            p.write_text(json.dumps(doc, allow_nan=True))
            paths.append(p)
        import_or_one_sentence(paths, Path(d) / "out.trnx")
