"""Fast mode against exact mode on one topology: every tally of the JSON report, sampled at
chosen instants in both modes, compared within 1 % or 2 frames (the engine's contract).

Exact mode is the kernel's story poll by poll; where fast mode differs from it, exact mode is
right. ``xdptui bench modes`` prints the comparison; ``tests/test_fast_equals_exact.py`` holds
it at zero differences."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from xdptui.model.topology import Topology
from xdptui.sim.engine import Simulator

# Identity and configuration fields of the report: not tallies.
NOT_TALLIES = frozenset(
    {"report", "seed", "sim_ns", "queue", "cpu", "ring", "cpus", "ring_peak", "id", "insns",
     "max_entries", "t_ns"}
)  # fmt: skip


def _flatten(x: Any, path: str, out: dict[str, int]) -> None:
    if isinstance(x, dict):
        for k, v in x.items():
            if k not in NOT_TALLIES:
                _flatten(v, f"{path}.{k}", out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _flatten(v, f"{path}[{_label(v, i)}]", out)
    elif isinstance(x, int) and not isinstance(x, bool):
        out[path] = x


def _label(v: Any, i: int) -> str:
    """A list item's name in a tally's path: what it is about, not where it stands."""
    if not isinstance(v, dict):
        return str(i)
    for keys in (("queue",), ("ring",), ("from", "to"), ("dev", "err"), ("dev", "action"),
                 ("dev", "cpu"), ("dev",), ("name",), ("key",)):  # fmt: skip
        if all(k in v and isinstance(v[k], str | int) for k in keys):
            return "|".join(str(v[k]) for k in keys)
    return str(i)


def _map_words(report: dict[str, Any], out: dict[str, int]) -> None:
    """A real program's map values as the 64-bit counters they hold (little-endian words)."""
    for obj in report.get("objects", []):
        for name, m in obj["maps"].items():
            for el in m.get("elements", []):
                values = el.get("values") or [el.get("value", "")]
                for cpu, hexval in enumerate(values):
                    raw = bytes.fromhex(hexval)
                    for w in range(len(raw) // 8):
                        word = int.from_bytes(raw[8 * w : 8 * w + 8], "little")
                        out[f"objects.{obj['name']}.{name}[{el['key']}].cpu{cpu}.w{w}"] = word


def tallies(sim: Simulator) -> dict[str, int]:
    """Every tally of the report (what ``xdptui run --json`` prints), by a stable name."""
    report = sim.report()
    out: dict[str, int] = {}
    for part in ("devices", "tracepoints", "traffic", "xsks"):
        _flatten(report.get(part, {}), part, out)
    _map_words(report, out)
    return out


def differences(fast: dict[str, int], exact: dict[str, int]) -> list[tuple[str, int, int]]:
    """Tallies further apart than 1 % of the larger, or 2 frames near zero."""
    out = []
    for key in sorted(set(fast) | set(exact)):
        a, b = fast.get(key, 0), exact.get(key, 0)
        if abs(a - b) > max(0.01 * max(abs(a), abs(b)), 2):
            out.append((key, a, b))
    return out


def sampled(t: Topology, instants_ns: list[int], exact: bool) -> list[dict[str, int]]:
    """The tallies at each instant, in one mode."""
    sim = Simulator(t, exact=exact)
    out = []
    for at in instants_ns:
        sim.run_until(at)
        out.append(tallies(sim))
    return out


def instants(horizon_ns: int, every_ns: int) -> list[int]:
    """Every ``every_ns`` up to the horizon (and the horizon)."""
    out = list(range(every_ns, horizon_ns + 1, every_ns))
    if not out or out[-1] != horizon_ns:
        out.append(horizon_ns)
    return out


@dataclass(frozen=True)
class Comparison:
    """Fast mode against exact mode at ``instants``: how many (instant, tally) pairs were
    compared, which differed, and the worst relative difference."""

    topology: str
    instants: tuple[int, ...]
    compared: int
    differing: tuple[tuple[int, str, int, int], ...]  # (instant, tally, fast, exact)
    exact_last: dict[str, int] = field(default_factory=dict)  # exact mode's at the last instant

    @property
    def emitted(self) -> int:
        """Frames the sources sent by the last instant (exact mode's report)."""
        return sum(
            v
            for k, v in self.exact_last.items()
            if k.startswith("traffic.") and k.endswith(".emitted")
        )

    @property
    def worst(self) -> tuple[int, str, int, int] | None:
        def rel(d: tuple[int, str, int, int]) -> float:
            return abs(d[2] - d[3]) / max(abs(d[2]), abs(d[3]), 1)

        return max(self.differing, key=rel, default=None)


def compare(t: Topology, instants_ns: list[int]) -> Comparison:
    fast, exact = sampled(t, instants_ns, False), sampled(t, instants_ns, True)
    compared = sum(len(set(f) | set(e)) for f, e in zip(fast, exact, strict=True))
    bad = tuple(
        (at, *d)
        for at, f, e in zip(instants_ns, fast, exact, strict=True)
        for d in differences(f, e)
    )
    return Comparison(t.name, tuple(instants_ns), compared, bad, exact[-1] if exact else {})


def print_comparisons(rows: list[tuple[str, Comparison]], as_json: bool) -> None:
    if as_json:
        out = [
            {
                "file": file,
                "topology": c.topology,
                "instants_ns": list(c.instants),
                "tallies_compared": c.compared,
                "tallies_differing": len(c.differing),
                "differing": [
                    {"t_ns": at, "tally": k, "fast": a, "exact": b} for at, k, a, b in c.differing
                ],
            }
            for file, c in rows
        ]
        print(json.dumps(out, indent=2))
        return
    print(f"{'topology file':<40} {'samples':>7} {'compared':>9} {'differ':>7}  worst difference")
    for file, c in rows:
        w = c.worst
        worst = "-" if w is None else f"{w[1]} at {w[0] / 1e6:g} ms: fast {w[2]:,}, exact {w[3]:,}"
        print(f"{file:<40} {len(c.instants):>7} {c.compared:>9,} {len(c.differing):>7}  {worst}")
