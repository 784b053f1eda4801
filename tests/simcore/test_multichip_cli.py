"""`trnx capture` multi-chip flags and `trnx summary` on the traces they write, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys

from simcore.trace import open_trace


def trnx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True)


def test_straggler_capture_and_summary_name_the_slowest_rank(tmp_path):
    out = tmp_path / "tp.trnx"
    proc = trnx("capture", "-H", "trn3-ultraserver-gen1", "-w", "llama3.1-8b", "--tp", "32", "--layers", "2",
                "--straggler", "chip=5,slowdown=1.3", "--straggler", "chip=6,delay=20us", "--jitter", "1%", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "on 32 ranks (8 chips)" in proc.stdout and "collective rank-rows" in proc.stdout
    assert trnx("validate", str(out)).returncode == 0
    t = open_trace(out)
    assert t.meta["capture"]["straggler"] == "chip=5,slowdown=1.3;chip=6,delay=20000ns"
    rep = json.loads(trnx("summary", str(out), "--json", "--no-recommendations").stdout)
    m = rep["metrics"]
    # TP=32 at LNC=2: 32 ranks on 8 chips; embedding, 2 per layer, logits
    assert m["collective_wait_ns"] > 0 and m["collective_transfer_ns"] > 0 and m["cc_op_count"] == 32 * 6
    coll = rep["collectives"]
    assert len(coll) == 6 and all(c["group_size"] == 32 for c in coll)
    first = min(coll, key=lambda c: c["arrive_ns"])
    assert first["slowest_chip"] == 6  # the delayed chip is last at the first collective
    assert all(c["slowest_chip"] == 5 for c in coll if c is not first)  # then the slow one, every time
    text = trnx("summary", str(out), "--no-recommendations").stdout
    assert "collectives (6;" in text and "slowest rank" in text and "chip 5 rank 2" in text   # chip 5: ranks 20-23
    assert "straggler: rank 5 arrived last at 5 of its 6 collectives" in text   # a chip counts once per collective


def test_bad_multichip_flags_exit_2_with_one_line(tmp_path):
    out = tmp_path / "x.trnx"
    proc = trnx("capture", "-H", "trn3-ultraserver-gen1", "-w", "deepseek-v3", "--chips", "64", "--ep", "48", "-o", str(out))
    assert proc.returncode == 2 and proc.stderr.startswith("trnx: error: ") and "do not divide over --ep 48" in proc.stderr
    assert proc.stderr.count("\n") == 1 and not out.exists()


def test_capture_help_lists_the_multichip_flags():
    out = trnx("capture", "--help").stdout
    for flag in ("--chips", "--tp", "--ep", "--dp", "--pp", "--sequence-parallel", "--microbatches", "--jitter",
                 "--straggler", "--expert-skew", "--detail-chips", "--cc-algorithm", "--workers"):
        assert flag in out


def test_presets_show_the_ultraservers_and_the_torus():
    out = trnx("presets").stdout
    assert "64 chips, switch: in-server 128 GB/s, in-rack 160 GB/s, cross-rack 64 GB/s" in out
    assert "144 chips, switch" in out and "16 chips, torus2d" in out
