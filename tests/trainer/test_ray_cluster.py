"""``benchmarks/ray_cluster.py`` in short: a real two-node Ray cluster on this machine (two ``ray
start`` processes), self-play actors on both, the second node killed mid-run and started again; the run
goes on with the head's actor, loses no shard, counts no game twice and uses the node again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_lost_node_loses_no_shard_and_is_used_again(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "ray_cluster.py"),
            "--shards",
            "1",
            "--timeout",
            "240",
            "--work",
            str(tmp_path / "cluster"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "FAIL" not in out and out.count("\nok ") == 8, out
    assert re.search(r'2 node2 lost +\{"head": 1, "(restarting|pending_creation)": 1\}', out), out
    assert '3 node2 back     {"head": 1, "node2 (rejoined)": 1}' in out, out
