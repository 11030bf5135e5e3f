"""The seeds' benchmark tables beside the simulator's (xdptui reproduce)."""

from __future__ import annotations

import json
import subprocess
import sys

# Rows whose set-up the cost model was not fitted on and which the simulator misses by more
# than 10 %: the two-port card's XDP_TX with RSS (see the README's "Seed tables").
KNOWN_OUTSIDE = {
    ("with patch, bond (2 devs): XDP_TX (RSS)", "rxpck/s"),
    ("with patch, bond (2 devs): XDP_TX (RSS)", "txpck/s"),
}


def rows() -> list[dict[str, object]]:
    res = subprocess.run(
        [sys.executable, "-m", "xdptui", "reproduce", "all", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_reproduce_rows_are_within_ten_percent_of_the_seeds():
    out = rows()
    assert {r["seed"] for r in out} == {"bond-xdp", "devmap-prog-on-flush", "tun-xdp"}
    assert len(out) == 18 + 12 + 4
    for r in out:
        assert set(r) == {"seed", "table", "row", "column", "seed_value", "sim_value"}
        ratio = float(r["sim_value"]) / float(r["seed_value"])  # type: ignore[arg-type]
        if (r["row"], r["column"]) in KNOWN_OUTSIDE:
            assert 0.8 < ratio < 0.95, r
        else:
            assert 0.9 <= ratio <= 1.1, r
