"""The topology loader's AF_XDP parts: ``type: xsk`` sockets under ``devices:`` and ``type:
xskmap`` maps, checked as ``xsk_bind`` and ``xsk_map_update_elem`` would check them."""

from __future__ import annotations

from dataclasses import replace

from yaml.nodes import Node, ScalarNode

from xdptui.model.limits import DRIVER_LIMITS, U32_MAX
from xdptui.model.topology import (
    BondSpec,
    DeviceSpec,
    Loc,
    NicSpec,
    TrafficSpec,
    TunSpec,
    VethSpec,
    XskMapSpec,
    XskSpec,
)
from xdptui.model.topology_spec import XSK_CHUNK_SIZES, XSK_MODES, XSK_RING_SIZES
from xdptui.topology_nodes import NodeReader
from xdptui.topology_yaml import _NULL, _choices, _construct, _describe, _join, _Pair

ZEROCOPY_DRIVERS = ("ice", "i40e", "mlx5", "ixgbe")  # the drivers with ndo_xsk_wakeup


class XskLoader:
    """AF_XDP sockets and xskmaps, read with the document's :class:`NodeReader`."""

    def __init__(self, nodes: NodeReader) -> None:
        self.nodes = nodes
        self.raw: list[tuple[XskSpec, dict[str, _Pair]]] = []
        self.names: list[str] = []

    def socket(self, name: str, fields: dict[str, _Pair], path: str, loc: Loc) -> None:
        """``type: xsk``: its fields; the device they name is checked in :meth:`check`."""
        for key in ("up", "mtu", "xdp"):
            if key in fields:
                self.nodes.error(
                    fields[key].key_node,
                    _join(path, key),
                    f"an AF_XDP socket is not a net device: it has no '{key}' (attach the "
                    f"program to the device it is bound to)",
                )
        n = self.nodes
        dev = n.opt(fields, "dev", path, n.text, None)
        if dev is None and "dev" not in fields:
            n.error(fields["type"].key_node, path, "missing required key 'dev' (the device)")

        def ring(key: str) -> int:
            return n.opt(fields, key, path, lambda x, p: self.choice(x, p, XSK_RING_SIZES), 2048)

        spec = XskSpec(
            name=name,
            dev=dev or "",
            queue=n.opt(fields, "queue", path, lambda x, p: n.integer(x, p, 0, 255), 0),
            mode=n.opt(fields, "mode", path, self.mode, ""),
            frames=n.opt(fields, "frames", path, lambda x, p: n.integer(x, p, 1, 1 << 20), 4096),
            frame_size=n.opt(
                fields, "frame_size", path, lambda x, p: self.choice(x, p, XSK_CHUNK_SIZES), 4096
            ),
            fill=ring("fill"),
            rx=ring("rx"),
            tx=ring("tx"),
            comp=ring("comp"),
            reader_pps=n.opt(fields, "reader", path, self.reader, None),
            need_wakeup=n.opt(fields, "need_wakeup", path, n.boolean, True),
            batch=n.opt(fields, "batch", path, lambda x, p: n.integer(x, p, 1, 4096), 1),
            loc=loc,
        )
        self.raw.append((spec, fields))
        self.names.append(name)

    def mode(self, node: Node, path: str) -> str | None:
        return self.nodes.choice(node, path, XSK_MODES, "AF_XDP bind mode")

    def choice(self, node: Node, path: str, allowed: tuple[int, ...]) -> int | None:
        value = self.nodes.integer(node, path, 1, max(allowed))
        if value is None or value in allowed:
            return value
        what = "a power of two" if len(allowed) > 2 else _choices([str(a) for a in allowed])
        self.nodes.error(
            node,
            path,
            f"{value} is not valid: {what} (the kernel answers EINVAL); valid: "
            f"{_choices([str(a) for a in allowed])}",
        )
        return None

    def reader(self, node: Node, path: str) -> float | None:
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return None
        rate = self.nodes.rate(node, path, allow_line=False)
        if rate is None:
            return None
        if rate.kind != "pps":
            self.nodes.error(
                node, path, "the reader takes descriptors: give a pps rate, e.g. 5Mpps"
            )
            return None
        return float(rate.value)

    def check(self, devices: tuple[DeviceSpec, ...], cpus: int) -> tuple[XskSpec, ...]:
        """``xsk_bind``: the device exists (ENODEV); the queue is one it has
        (``xsk_reg_pool_at_qid``: EINVAL); one socket per queue without a shared UMEM
        (EBUSY); XDP_ZEROCOPY needs the driver's ``ndo_xsk_wakeup`` (``xp_assign_dev``:
        EOPNOTSUPP). Without a mode the kernel tries zero-copy and falls back to copy."""
        by_name = {d.name: d for d in devices}
        taken: dict[tuple[str, int], str] = {}
        out: list[XskSpec] = []
        for spec, fields in self.raw:
            path = f"devices.{spec.name}"
            node = fields["dev"].value if "dev" in fields else None
            dev = by_name.get(spec.dev)
            if dev is None:
                if node is not None and spec.dev:
                    valid = _choices([d.name for d in devices])
                    why = "an AF_XDP socket" if spec.dev in self.names else "unknown device"
                    self.nodes.error(
                        node,
                        f"{path}.dev",
                        f"{why} '{spec.dev}': bind answers ENODEV; devices: {valid}",
                    )
                continue
            queues = _queues(dev, cpus)
            if spec.queue >= queues:
                qnode = fields["queue"].value if "queue" in fields else node
                assert qnode is not None
                self.nodes.error(
                    qnode,
                    f"{path}.queue",
                    f"{spec.dev} has {queues} queue{'s' if queues > 1 else ''}: bind answers "
                    f"EINVAL; valid: 0..{queues - 1}",
                )
                continue
            other = taken.get((spec.dev, spec.queue))
            if other is not None:
                assert node is not None
                self.nodes.error(
                    node,
                    f"{path}.dev",
                    f"{spec.dev} queue {spec.queue} already has socket {other} "
                    f"(xsk_reg_pool_at_qid: EBUSY; a shared UMEM is not modelled)",
                )
                continue
            taken[(spec.dev, spec.queue)] = spec.name
            zc = isinstance(dev, NicSpec) and dev.driver in ZEROCOPY_DRIVERS
            mode = spec.mode or ("zerocopy" if zc else "copy")
            if mode == "zerocopy" and not zc:
                driver = dev.driver if isinstance(dev, NicSpec) else dev.type
                self.nodes.error(
                    fields["mode"].value,
                    f"{path}.mode",
                    f"{spec.dev} ({driver}) has no zero-copy AF_XDP: bind with XDP_ZEROCOPY "
                    f"answers EOPNOTSUPP; valid: copy (zero-copy: "
                    f"{', '.join(ZEROCOPY_DRIVERS)})",
                )
                continue
            out.append(_with_mode(spec, mode))
        return tuple(out)

    def check_writers(
        self,
        traffic: tuple[TrafficSpec, ...],
        xsks: tuple[XskSpec, ...],
        devices: tuple[DeviceSpec, ...],
        from_nodes: dict[str, tuple[Node, str]],
    ) -> None:
        """A source ``from:`` a socket is its writer (``__xsk_generic_xmit``). Modelled in copy
        mode on a veth, whose ``veth_xmit`` hands the skb to the peer at once (its completion
        comes before ``sendto`` returns); one writer per socket."""
        by_name = {x.name: x for x in xsks}
        kinds = {d.name: d for d in devices}
        seen: dict[str, str] = {}
        for t in traffic:
            if t.from_ not in self.names:
                continue
            node, path = from_nodes[t.name]
            xs = by_name.get(t.from_)
            if xs is None:
                continue  # its own error was given
            dev = kinds.get(xs.dev)
            if not isinstance(dev, VethSpec):
                what = dev.type if dev is not None else "?"
                if isinstance(dev, NicSpec):
                    what = f"nic/{dev.driver}"
                self.nodes.error(
                    node,
                    path,
                    f"{t.from_} is bound to {xs.dev} ({what}): AF_XDP TX is modelled on a veth "
                    f"only (copy mode, veth_xmit); a NIC's driver TX (zero-copy, or the copy "
                    f"mode's completion at TX clean) and a tap's are not modelled",
                )
                continue
            if t.from_ in seen:
                self.nodes.error(
                    node,
                    path,
                    f"{t.from_} already has a writer (source {seen[t.from_]}): one writer per "
                    f"socket",
                )
                continue
            seen[t.from_] = t.name

    def xskmap(self, pair: _Pair, fields: dict[str, _Pair], path: str) -> XskMapSpec | None:
        """``type: xskmap``: max_entries (``xsk_map_alloc``: > 0) and entries {key: socket},
        each key below max_entries (``xsk_map_update_elem``: E2BIG)."""
        n = self.nodes
        size_node = n.require(fields, "max_entries", pair.key_node, path, "an integer > 0")
        size = (
            None if size_node is None else n.integer(size_node, f"{path}.max_entries", 1, U32_MAX)
        )
        entries: list[tuple[int, str]] = []
        node = fields["entries"].value if "entries" in fields else None
        if node is not None and not (isinstance(node, ScalarNode) and node.tag == _NULL):
            for epair in n.pairs(node, f"{path}.entries", "a mapping of keys to sockets") or []:
                epath = _join(f"{path}.entries", epair.key)
                key = _construct(epair.key_node) if isinstance(epair.key_node, ScalarNode) else None
                if isinstance(key, bool) or not isinstance(key, int) or key < 0:
                    n.error(
                        epair.key_node,
                        epath,
                        f"a key is an integer, got {_describe(epair.key_node)}",
                    )
                    continue
                if size is not None and key >= size:
                    n.error(
                        epair.key_node,
                        epath,
                        f"key {key} is out of range for max_entries {size} (the kernel answers "
                        f"E2BIG); valid: 0..{size - 1}",
                    )
                    continue
                sock = n.text(epair.value, epath, "an AF_XDP socket name")
                if sock is None:
                    continue
                if sock not in self.names:
                    valid = _choices(self.names) if self.names else "none are defined"
                    n.error(
                        epair.value,
                        epath,
                        f"'{sock}' is not an AF_XDP socket (a device of type xsk); "
                        f"sockets: {valid}",
                    )
                    continue
                entries.append((key, sock))
        if size is None:
            return None
        return XskMapSpec(pair.key, size, tuple(sorted(entries)), n.loc(pair.key_node))


def _queues(dev: DeviceSpec, cpus: int) -> int:
    """The queues a socket can bind to: ``max(real_num_rx_queues, real_num_tx_queues)``."""
    if isinstance(dev, NicSpec):
        return dev.queues or min(cpus, DRIVER_LIMITS[dev.driver].max_queues)
    if isinstance(dev, VethSpec | TunSpec):
        return dev.queues
    if isinstance(dev, BondSpec):
        return 16  # BOND_DEFAULT_TX_QUEUES
    return 1


def _with_mode(spec: XskSpec, mode: str) -> XskSpec:
    return replace(spec, mode=mode)
