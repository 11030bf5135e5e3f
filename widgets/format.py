"""Number formatting shared by the panels: SI counts and rates, simulated time, speed labels.

Pure functions of plain numbers (no Textual), so they are tested directly and every panel prints
the same quantity the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

_PREFIXES: tuple[tuple[str, float], ...] = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3))


def _si(value: float, digits: int) -> str:
    """``value`` with an SI prefix and ``digits`` significant digits (``14.88M``)."""
    magnitude = abs(value)
    for i, (prefix, scale) in enumerate(_PREFIXES):
        if magnitude >= scale:
            text = f"{value / scale:.{digits}g}"
            # 999.96K rounds to "1000K": say 1M instead.
            if abs(float(text)) >= 1000 and i > 0:
                bigger, bigger_scale = _PREFIXES[i - 1]
                return f"{value / bigger_scale:.{digits}g}{bigger}"
            return f"{text}{prefix}"
    text = f"{value:.{digits}g}"
    if abs(float(text)) >= 1000:
        return f"{value / 1e3:.{digits}g}K"
    return text


def format_count(value: int) -> str:
    """A counter total: exact below 10 000, then three significant digits (``1.23M``)."""
    if abs(value) < 10_000:
        return str(value)
    return _si(float(value), 3)


def format_pps(rate: float | None, digits: int = 3) -> str:
    """A frame rate with SI prefix (``14.9Mpps``; ``digits=4``: ``14.88Mpps``); ``-`` if unknown."""
    if rate is None:
        return "-"
    if rate == 0:
        return "0pps"
    return f"{_si(rate, digits)}pps"


def format_per_s(rate: float | None, unit: str = "/s") -> str:
    """A generic rate (tracepoint hits, polls): ``1.2K/s``; ``-`` when unknown."""
    if rate is None:
        return "-"
    if rate == 0:
        return f"0{unit}"
    return f"{_si(rate, 3)}{unit}"


def format_sim_time(ns: int) -> str:
    """Simulated time at nanosecond resolution in the largest unit it reaches.

    ``0ns``, ``999ns``, ``12.345µs``, ``1.234567ms``, ``2.000000001s``. Integer arithmetic, so
    the digits never wobble, and the width only changes when the unit does.
    """
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{ns // 1_000}.{ns % 1_000:03d}µs"
    if ns < 1_000_000_000:
        return f"{ns // 1_000_000}.{ns % 1_000_000:06d}ms"
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}s"


def format_speed(ns_per_s: int) -> str:
    """A clock speed in simulated time per real second: ``1 s/s``, ``100 ms/s``, ``1 µs/s``."""
    for unit, scale in (("s", 1_000_000_000), ("ms", 1_000_000), ("µs", 1_000)):
        if ns_per_s >= scale:
            return f"{ns_per_s / scale:g} {unit}/s"
    return f"{ns_per_s} ns/s"


def format_window(ns: int) -> str:
    """A rate window's length, short: ``1ms``, ``120ms``, ``12.5µs``, ``1.03s``."""
    for unit, scale in (("s", 1_000_000_000), ("ms", 1_000_000), ("µs", 1_000)):
        if ns >= scale:
            return f"{ns / scale:.3g}{unit}"
    return f"{ns}ns"


def format_rtf(rtf: float) -> str:
    """A real-time factor with two significant digits and no exponent (``0.42``, ``0.0031``)."""
    if rtf <= 0:
        return "0"
    if rtf >= 0.1:
        return f"{rtf:.2f}"
    decimals = 2
    while rtf < 10 ** (1 - decimals) and decimals < 12:
        decimals += 1
    return f"{rtf:.{decimals}f}"


def format_cpus(cpus: Iterable[int]) -> str:
    """A CPU list as ``taskset``/``cpulist`` prints it: ``0-3,8,10-11``."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def program_name(name: str) -> str:
    """A program as a panel names it: a built-in by its name, an object by its file name
    (``/home/me/xdp/router_stats.o`` -> ``router_stats.o``); the whole path is in the log."""
    return name.rsplit("/", 1)[-1]
