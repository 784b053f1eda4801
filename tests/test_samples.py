"""The bundled sample traces are exactly what the simulator produces for their seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import open_trace
from simcore.samples import DEFAULT_SAMPLE, SAMPLES, generate

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_traces"


def files(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("samples")
    generate(out)
    return out


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_sample_is_committed_and_regenerates_byte_for_byte(regenerated, sample):
    committed, fresh = SAMPLE_DIR / sample.dirname, regenerated / sample.dirname
    assert committed.is_dir(), f"missing {committed}: run python -m simcore.samples"
    assert files(committed) == files(fresh)
    for f in files(fresh):
        assert (committed / f).read_bytes() == (fresh / f).read_bytes(), (
            f"{sample.dirname}/{f} differs from a fresh capture: run python -m simcore.samples"
        )


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_sample_opens_and_has_what_it_claims(sample):
    trace = open_trace(SAMPLE_DIR / sample.dirname)
    assert trace.meta["simulator"]["is_simulation"] is True
    assert trace.instructions.num_rows > 0  # every sample carries instruction detail somewhere
    assert trace.workload["name"] == sample.options["workload"]


def test_samples_stay_small():
    total = sum(p.stat().st_size for p in SAMPLE_DIR.rglob("*") if p.is_file())
    assert total < 8 * 2**20, f"sample_traces/ is {total / 2**20:.1f} MiB; keep it a few MB"


def test_default_sample_exists():
    assert (SAMPLE_DIR / f"{DEFAULT_SAMPLE}.trnx" / "meta.json").is_file()
