"""Units for durations, rates, link speeds and sizes, as the topology and commands accept them.

Durations: ``ns us ms s`` (a bare number is nanoseconds). Rates: ``pps Kpps Mpps Gpps`` or
``bps Kbps Mbps Gbps``, or ``line``. Link speeds: ``10G 25G 40G 100G`` (or any ``bps`` unit).
Clock speeds (the app's slow motion): simulated time per real second, ``1us/s`` .. ``1s/s``
(``real``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_NUM = r"(\d+(?:\.\d*)?|\.\d+)"
# The patterns are also the topology schema's (ECMA-262 as JSON Schema takes them, so no flags:
# the case-insensitive units spell both cases out).
DURATION_PATTERN = rf"^\s*{_NUM}\s*(ns|us|µs|ms|s)?\s*$"
RATE_PATTERN = rf"^\s*{_NUM}\s*([KkMmGg]?)([Pp][Pp][Ss]|[Bb][Pp][Ss])\s*$"
LINE_PATTERN = r"^\s*[Ll][Ii][Nn][Ee]\s*$"
AS_CAPTURED_PATTERN = r"^\s*[Aa][Ss]-[Cc][Aa][Pp][Tt][Uu][Rr][Ee][Dd]\s*$"
SPEED_PATTERN = rf"^\s*{_NUM}\s*([KkMmGgTt](?:[Bb][Pp][Ss])?|[Bb][Pp][Ss])\s*$"
CLOCK_SPEED_PATTERN = rf"^\s*(?:[Rr]eal(?: time)?|{_NUM}\s*(ns|us|µs|ms|s)\s*/\s*s)\s*$"
CLOCK_SPEEDS: tuple[int, ...] = (
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
)
"""The app's clock speeds in simulated ns per real second: slow motion (1 µs/s, where one
NAPI poll on a 10 Mpps port is a second or more apart) up to real time (1 s/s)."""
_DUR = re.compile(DURATION_PATTERN)
_DUR_SCALE = {None: 1, "ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_RATE = re.compile(RATE_PATTERN)
_SPEED = re.compile(SPEED_PATTERN)
_CLOCK = re.compile(CLOCK_SPEED_PATTERN)
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


class UnitError(ValueError):
    """A value that is not a valid duration, rate or speed; the message says what would be."""


def parse_duration_ns(value: object) -> int:
    """``10ms`` -> 10_000_000. Integers are nanoseconds."""
    if isinstance(value, bool):
        raise UnitError(f"{value!r} is not a duration (use e.g. 500us, 2ms, 1s)")
    if isinstance(value, int):
        if value < 0:
            raise UnitError("a duration can't be negative")
        return value
    if isinstance(value, float):
        if value < 0:
            raise UnitError("a duration can't be negative")
        return round(value)
    m = _DUR.match(str(value))
    if not m:
        raise UnitError(f"{value!r} is not a duration (use ns, us, ms or s, e.g. 500us, 2ms)")
    return round(float(m.group(1)) * _DUR_SCALE[m.group(2)])


@dataclass(frozen=True)
class Rate:
    """An offered rate: frames per second, bits per second, the device's line rate, or (a
    replayed capture) the capture's own timing."""

    kind: Literal["pps", "bps", "line", "captured"]
    value: float = 0.0

    def __str__(self) -> str:
        if self.kind == "line":
            return "line"
        if self.kind == "captured":
            return "as-captured"
        return format_rate(self.value, self.kind)


LINE = Rate("line")
AS_CAPTURED = Rate("captured")


def parse_rate(value: object) -> Rate:
    """``14.88Mpps`` / ``40Gbps`` / ``line`` / ``as-captured``. A bare number is frames per
    second."""
    if isinstance(value, bool):
        raise UnitError(f"{value!r} is not a rate (use e.g. 14.88Mpps, 40Gbps or line)")
    if isinstance(value, int | float):
        if value < 0:
            raise UnitError("a rate can't be negative")
        return Rate("pps", float(value))
    text = str(value).strip()
    if re.match(LINE_PATTERN, text):
        return LINE
    if re.match(AS_CAPTURED_PATTERN, text):
        return AS_CAPTURED
    m = _RATE.match(text)
    if not m:
        raise UnitError(f"{value!r} is not a rate (use pps, Kpps, Mpps, bps, Mbps, Gbps or line)")
    scale = _PREFIX[m.group(2).lower()]
    kind: Literal["pps", "bps"] = "pps" if m.group(3).lower() == "pps" else "bps"
    return Rate(kind, float(m.group(1)) * scale)


def parse_speed_bps(value: object) -> int:
    """Link speed: ``100G`` -> 100_000_000_000; ``40Gbps`` works too; a bare number is Mb/s
    (as ethtool prints speeds)."""
    if isinstance(value, bool):
        raise UnitError(f"{value!r} is not a link speed (use 10G, 25G, 40G, 100G)")
    if isinstance(value, int | float):
        return round(float(value) * 1e6)
    m = _SPEED.match(str(value))
    if not m:
        raise UnitError(f"{value!r} is not a link speed (use 1G, 10G, 25G, 40G, 100G or 200G)")
    prefix = m.group(2)[0].lower()
    return round(float(m.group(1)) * _PREFIX.get(prefix, 1.0))


def parse_clock_speed(value: object) -> int:
    """``10us/s`` -> 10_000 simulated ns per real second; ``real`` (or ``1s/s``) is real time.
    Only the app's speeds (:data:`CLOCK_SPEEDS`) are valid."""
    m = _CLOCK.match(str(value)) if isinstance(value, str) else None
    valid = ", ".join(format_clock_speed(s) for s in CLOCK_SPEEDS)
    if m is None:
        raise UnitError(f"{value!r} is not a clock speed (simulated time per second: {valid})")
    ns = (
        CLOCK_SPEEDS[-1]
        if m.group(1) is None
        else round(float(m.group(1)) * _DUR_SCALE[m.group(2)])
    )
    if ns not in CLOCK_SPEEDS:
        raise UnitError(f"{value!r} is not one of the clock speeds: {valid}")
    return ns


def format_clock_speed(ns_per_s: int) -> str:
    """10_000 -> ``10us/s`` (as :func:`parse_clock_speed` takes it)."""
    for unit, scale in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if ns_per_s >= scale:
            return f"{ns_per_s / scale:g}{unit}/s"
    return f"{ns_per_s}ns/s"


def format_rate(value: float, unit: str = "pps") -> str:
    """12_500_000 -> ``12.5Mpps``."""
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g}{prefix}{unit}"
    return f"{value:.4g}{unit}"


def format_duration(ns: int) -> str:
    """2_000_000 -> ``2ms``; keeps three significant digits."""
    for unit, scale in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if ns >= scale:
            return f"{ns / scale:.4g}{unit}"
    return f"{ns}ns"
