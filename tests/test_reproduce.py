"""The seeds' benchmark tables beside the simulator's (xdptui reproduce)."""

from __future__ import annotations

import json
import subprocess
import sys

# Predicted rows the simulator misses by more than 10 %, with the ratio range they fall in (see
# the README's "Seed tables"): the two-port card's XDP_TX with RSS (one DMA budget shared by the
# ports) and, in the seed's balance-rr mode, the two-port XDP_TX without RSS (half the frames
# cross to the other port, which the model prices far below what the seed measured).
KNOWN_OUTSIDE = {
    ("with patch, bond (2 devs): XDP_TX (RSS)", "rxpck/s"): (0.8, 0.95),
    ("with patch, bond (2 devs): XDP_TX (RSS)", "txpck/s"): (0.8, 0.95),
    ("with patch, bond (2 devs): XDP_TX", "rxpck/s"): (1.3, 1.7),
    ("with patch, bond (2 devs): XDP_TX", "txpck/s"): (1.3, 1.7),
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
        assert set(r) == {"seed", "table", "row", "column", "seed_value", "sim_value", "fitted"}
        ratio = float(r["sim_value"]) / float(r["seed_value"])  # type: ignore[arg-type]
        known = KNOWN_OUTSIDE.get((str(r["row"]), str(r["column"])))
        if known is not None:
            assert not r["fitted"] and known[0] < ratio < known[1], r
        else:
            assert 0.9 <= ratio <= 1.1, r


def test_reproduce_marks_the_rows_the_cost_model_was_solved_from_as_fitted():
    out = rows()
    fitted = {(r["seed"], r["row"], r["column"]) for r in out if r["fitted"]}
    # costs.py / drivers.py: ice rx_frame, tx and the E810 DMA budget from "without patch"
    bond = {(r["row"], r["fitted"]) for r in out if r["seed"] == "bond-xdp"}
    assert {row for row, f in bond if f} == {
        row for row, _ in bond if str(row).startswith("without patch")
    }
    # the devmap seed: everything after the patch, and the pre-patch native path; the
    # pre-patch generic column is predicted
    devmap = [r for r in out if r["seed"] == "devmap-prog-on-flush"]
    assert [(r["row"], r["column"]) for r in devmap if not r["fitted"]] == [
        ("5.10 rc6 | i40e->i40e", "Generic"),
        ("5.10 rc6 | i40e->veth", "Generic"),
    ]
    assert all(r["fitted"] for r in out if r["seed"] == "tun-xdp")
    assert len(fitted) == 6 + 10 + 4


def test_reproduce_ixgbe_attach_succeeds_up_to_128_cpus_and_fails_above():
    res = subprocess.run(
        [sys.executable, "-m", "xdptui", "reproduce", "ixgbe", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    out = {r["cpus"]: r for r in map(json.loads, res.stdout.splitlines())}
    # ixgbe_xdp_setup: nr_cpu_ids > IXGBE_MAX_XDP_QS * 2 (128) -> -ENOMEM
    assert {n: r["attach"] for n, r in out.items()} == {
        64: "ok",
        65: "ok",
        96: "ok",
        128: "ok",
        129: "ENOMEM",
        256: "ENOMEM",
    }
    # ixgbe_xdp_queues: min(64, nr_cpu_ids) rings; above 64 CPUs the locking key is on and
    # ixgbe_determine_xdp_q_idx puts cpu on ring cpu % 64
    assert not out[64]["locking"] and out[64]["lock_ns_per_xdp_tx_frame"] == 0
    for n in (65, 96, 128):
        r = out[n]
        assert r["xdp_tx_rings"] == 64 and r["locking"]
        assert r["ring_cpus"] == [[c for c in range(n) if c % 64 == ring] for ring in range(64)]
        assert r["lock_ns_per_xdp_tx_frame"] > 0 and r["lock_ns_is_estimate"]
        assert r["fitted"] is False
