"""Frames of chosen devices, one record per frame and place, for ``xdptui run --pcap``.

Where tcpdump on a real host sees a frame only as an skb (after XDP, or on its way out), the
simulator can say what happened at every place a frame is counted: taken off the RX ring by
the driver's poll with the program's verdict (``napi_poll``), handed to a TX ring or a veth
peer, or refused by a full ring. Exact mode records them (a frame is a row there); each record
keeps the flow-table entries, so the bytes are read once, at the end, from the entries (an
output frame of a program is an entry of its own).

Kinds a record belongs to: ``rx`` (the driver took it off its ring), ``pass``, ``drop``,
``redirect`` (the program's verdicts, and drops where a ring refused it), ``tx`` (it left the
device: onto the wire, to the veth peer, to the tap's reader).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
KINDS = ("rx", "tx", "drop", "pass", "redirect", "all")

_VERDICT_KIND = {0: "drop", 1: "drop", 2: "pass", 3: "", 4: "redirect"}
_ACTIONS = ("XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT")


@dataclass(frozen=True)
class Record:
    """Frames seen at one place: their times (one per frame), entries and kinds."""

    dev: str
    kinds: frozenset[str]
    times: IntArray
    entries: IntArray
    comments: tuple[str, ...]


@dataclass(eq=False)
class FrameLog:
    """Records for the devices asked for (device -> kinds wanted)."""

    wants: dict[str, frozenset[str]]
    records: list[Record] = field(default_factory=list)

    def __deepcopy__(self, memo: dict[int, Any]) -> FrameLog:
        return self  # checkpoints of a recording run share the one log

    def _wanted(self, dev: str, kinds: frozenset[str]) -> bool:
        want = self.wants.get(dev)
        return want is not None and ("all" in want or bool(want & kinds))

    def add(
        self,
        dev: str,
        kinds: frozenset[str],
        times: IntArray | np.int64,
        entries: IntArray,
        comment: str,
    ) -> None:
        if len(entries) and self._wanted(dev, kinds):
            t = np.broadcast_to(np.asarray(times, np.int64), entries.shape).copy()
            self.records.append(Record(dev, kinds, t, entries.copy(), (comment,) * len(entries)))

    def polled(
        self,
        dev: str,
        t: int,
        entries: IntArray,
        raw: IntArray | None,
        program: str,
        where: str,
    ) -> None:
        """``napi_poll``: frames the driver took off a ring, each with its verdict (``raw``:
        the program's return codes; None: no program, up the stack)."""
        if dev not in self.wants or not len(entries):
            return
        program = os.path.basename(program)  # a real object's path: its file name
        if raw is None:
            self.add(
                dev,
                frozenset({"rx", "pass"}),
                np.int64(t),
                entries,
                f"{where}: no XDP program: up the stack",
            )
            return
        for code in np.unique(raw).tolist():
            mine = raw == code
            name = (
                _ACTIONS[code] if 0 <= code < len(_ACTIONS) else f"{code} (treated as XDP_ABORTED)"
            )
            kind = _VERDICT_KIND.get(code, "drop")
            kinds = frozenset({"rx", kind} - {""})
            self.add(dev, kinds, np.int64(t), entries[mine], f"{where}: {program} returned {name}")


def sent_by(ref_kind: str, src: str, ring: int) -> str:
    """How frames reached a transmit ring, for their comment."""
    if ref_kind == "tx":
        return f"XDP_TX from {src}: TX ring {ring}, then the wire"
    if ref_kind == "xmit":
        return f"redirected by {src} (ndo_xdp_xmit): TX ring {ring}, then the wire"
    if ref_kind == "gtx":
        return f"generic XDP_TX from {src}: TX ring {ring}"
    return f"sent by {src}: TX ring {ring}"
