"""The topology loader's devices: NICs, veth pairs, bonds, taps, their XDP programs and the
kernel rules that tie them (``ethtool`` and ``ip link`` bounds, bond option dependencies)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from xdptui.model.catalog import (
    PROGRAMS,
    ParamInfo,
    bool_param,
    did_you_mean,
    is_object_program,
    program_info,
)
from xdptui.model.limits import (
    CPUS_MAX,
    DRIVER_LIMITS,
    INT_MAX,
    MTU_MAX,
    MTU_MIN,
    U32_MAX,
    XDP_MAX_MTU,
    max_channels,
    ring_sizes,
)
from xdptui.model.topology import (
    BOND_MODES,
    NIC_DRIVERS,
    XMIT_HASH_POLICIES,
    BondSpec,
    DeviceSpec,
    Loc,
    NicSpec,
    TunSpec,
    VethSpec,
    XdpSpec,
    default_miimon,
)
from xdptui.model.topology_spec import (
    ALL_DEVICE_KEYS,
    DEVICE,
    DEVICE_TYPES,
    TUN_MODES,
    TUN_WRITERS,
    XDP_KEYS,
    XDP_MODES,
)
from xdptui.topology_nodes import NodeReader
from xdptui.topology_programs import ProgramResolver, object_file
from xdptui.topology_xsk import XskLoader
from xdptui.topology_yaml import (
    _NULL,
    PRIMARY_MODES,
    USER_PROGRAM,
    _choices,
    _construct,
    _dev_name_problem,
    _join,
    _Pair,
    _parse_ipv4,
)


class DeviceLoader:
    """``devices:`` and what each device's fields must satisfy, read with the document's
    :class:`NodeReader` (which learns the device names, for references) and its programs
    resolved by :class:`ProgramResolver`. ``cpus`` is the host's CPU count, which bounds
    queues and IRQ affinities."""

    def __init__(
        self, nodes: NodeReader, programs: ProgramResolver, cpus: int, xsk: XskLoader | None = None
    ) -> None:
        self.nodes = nodes
        self.programs = programs
        self.cpus = cpus
        # ``type: xsk``: AF_XDP sockets, which are not net devices
        self.xsk = xsk if xsk is not None else XskLoader(nodes)
        self.mtu_nodes: dict[str, Node] = {}  # where each device's mtu was given

    def prescan_devices(self, pairs: list[_Pair]) -> list[str]:
        """Declared device names plus the veth peers that will be synthesized, in final order."""
        declared = [p.key for p in pairs]
        names: list[str] = []
        for pair in pairs:
            if _type_of(pair.value) == "xsk":
                continue  # a socket: no device to name in a program or a map
            names.append(pair.key)
            peer = self.peek_peer(pair.value)
            if peer is not None and peer not in declared and peer not in names:
                names.append(peer)
        return names

    @staticmethod
    def peek_peer(node: Node) -> str | None:
        if not isinstance(node, MappingNode):
            return None
        values = {str(k.value): v for k, v in node.value if isinstance(k, ScalarNode)}
        kind, peer = values.get("type"), values.get("peer")
        if not (isinstance(kind, ScalarNode) and kind.value == "veth"):
            return None
        if isinstance(peer, ScalarNode) and peer.tag != _NULL:
            return str(peer.value)
        return None

    # devices

    def devices(self, node: Node) -> tuple[DeviceSpec, ...]:
        pairs = self.nodes.pairs(node, "devices", "a mapping of device names to their settings")
        if pairs is None:
            return ()
        if not pairs:
            self.nodes.error(node, "devices", "at least one device is needed")
            return ()
        self.nodes.device_names = self.prescan_devices(pairs)
        specs: list[DeviceSpec] = []
        peer_nodes: dict[str, Node] = {}
        slave_nodes: dict[str, list[tuple[str, Node]]] = {}
        for pair in pairs:
            path = f"devices.{pair.key}"
            problem = _dev_name_problem(pair.key)
            if problem is not None:
                self.nodes.error(pair.key_node, path, problem)
            spec = self.device(pair, path, peer_nodes, slave_nodes)
            if spec is not None:
                specs.append(spec)
        specs = self.link_veths(specs, peer_nodes)
        self.check_bonds(specs, slave_nodes)
        by_name = {s.name: s for s in specs}
        for bond in specs:
            if isinstance(bond, BondSpec) and bond.xdp is not None:
                for slave in bond.slaves:
                    nic = by_name.get(slave)
                    if isinstance(nic, NicSpec) and DRIVER_LIMITS[nic.driver].native_xdp:
                        program = f"{bond.name}'s program {bond.xdp.program}, pushed to its slaves"
                        self.check_xdp_mtu(nic.name, nic.mtu, program)
        return tuple(specs)

    def check_xdp_mtu(self, dev: str, mtu: int, program: str, other: str = "") -> None:
        """A native program needs frames that fit one buffer (``ice_xdp_setup_prog``,
        ``ixgbe_xdp_setup``: -EINVAL "MTU too large for XDP")."""
        node = self.mtu_nodes.get(dev)
        if node is None or mtu <= XDP_MAX_MTU:
            return
        self.nodes.error(
            node,
            f"devices.{dev}.mtu",
            f"{mtu} is too large for native XDP ({program}); valid: {MTU_MIN}..{XDP_MAX_MTU}, "
            f"one buffer per frame (the driver answers EINVAL: MTU too large for XDP){other}",
        )

    def device(
        self,
        pair: _Pair,
        path: str,
        peer_nodes: dict[str, Node],
        slave_nodes: dict[str, list[tuple[str, Node]]],
    ) -> DeviceSpec | None:
        pairs = self.nodes.pairs(
            pair.value, path, f"a mapping with 'type:' ({_choices(DEVICE_TYPES)})"
        )
        if pairs is None:
            return None
        by_key = {p.key: p for p in pairs}
        if "type" not in by_key:
            self.nodes.error(
                pair.key_node, path, f"missing required key 'type' ({_choices(DEVICE_TYPES)})"
            )
            self.nodes.known(pairs, path, ALL_DEVICE_KEYS)
            return None
        kind = self.nodes.choice(by_key["type"].value, f"{path}.type", DEVICE_TYPES, "device type")
        if kind is None:
            return None
        fields = self.nodes.known(pairs, path, DEVICE.keys(kind), f" for a {kind}")
        if kind == "xsk":
            self.xsk.socket(pair.key, fields, path, self.nodes.loc(pair.key_node))
            return None
        if "mtu" in fields:
            self.mtu_nodes[pair.key] = fields["mtu"].value
        common = _Common(
            name=pair.key,
            up=self.nodes.opt(fields, "up", path, self.nodes.boolean, True),
            mtu=self.nodes.opt(
                fields, "mtu", path, lambda n, p: self.nodes.integer(n, p, MTU_MIN, MTU_MAX), 1500
            ),
            xdp=self.nodes.opt(fields, "xdp", path, self.xdp, None),
            loc=self.nodes.loc(pair.key_node),
        )
        if kind == "nic":
            return self.nic(fields, path, common)
        if kind == "veth":
            return self.veth(fields, path, common, pair.key_node, peer_nodes)
        if kind == "bond":
            return self.bond(fields, path, common, slave_nodes)
        return self.tun(fields, path, common)

    def nic(self, fields: dict[str, _Pair], path: str, c: _Common) -> NicSpec:
        driver = self.nodes.opt(fields, "driver", path, self.driver, "ice")
        limit = max_channels(driver, self.cpus)
        why = (
            f" (ethtool -L takes 1..{limit} on {driver} with {self.cpus} CPUs: "
            f"the driver's {DRIVER_LIMITS[driver].max_queues} queues, at most one per CPU)"
        )
        queues = self.nodes.opt(
            fields, "queues", path, lambda n, p: self.nodes.integer(n, p, 1, limit, why), None
        )
        irq_cpus = self.nodes.opt(fields, "irq_cpus", path, self.irq_cpus, None)
        if irq_cpus is not None and queues is None and len(irq_cpus) > limit:
            self.nodes.error(
                fields["irq_cpus"].value,
                f"{path}.irq_cpus",
                f"lists {len(irq_cpus)} CPUs, one per queue, but the device takes at most "
                f"{limit} queues{why}",
            )
            irq_cpus = None
        if irq_cpus is not None and queues is not None and len(irq_cpus) != queues:
            self.nodes.error(
                fields["irq_cpus"].value,
                f"{path}.irq_cpus",
                f"lists {len(irq_cpus)} CPUs but the device has {queues} queues; "
                "give one CPU per queue",
            )
        if irq_cpus is not None and queues is None:
            queues = len(irq_cpus)
        xdp = c.xdp
        if xdp is not None and xdp.mode in (None, "native") and DRIVER_LIMITS[driver].native_xdp:
            self.check_xdp_mtu(
                c.name, c.mtu, f"its program {xdp.program}", ", or attach it with mode: generic"
            )
        return NicSpec(
            name=c.name,
            up=c.up,
            mtu=c.mtu,
            xdp=c.xdp,
            loc=c.loc,
            driver=driver,
            speed_bps=self.nodes.opt(fields, "speed", path, self.nodes.speed, 100_000_000_000),
            queues=queues,
            ring=self.nodes.opt(
                fields, "ring", path, lambda n, p: self.ring_size(n, p, driver), None
            ),
            tx_ring=self.nodes.opt(
                fields, "tx_ring", path, lambda n, p: self.ring_size(n, p, driver), None
            ),
            irq_cpus=irq_cpus,
            card=self.nodes.opt(fields, "card", path, self.nodes.text, None),
        )

    def driver(self, node: Node, path: str) -> str | None:
        return self.nodes.choice(node, path, NIC_DRIVERS, "driver")

    def ring_size(self, node: Node, path: str, driver: str) -> int | None:
        sizes = ring_sizes(driver)
        valid = f"valid on {driver}: {_choices(map(str, sizes))}"
        why = f" (ethtool -G takes up to {DRIVER_LIMITS[driver].rx_ring_max} on {driver})"
        size = self.nodes.integer(node, path, sizes[0], sizes[-1], why)
        if size is not None and size not in sizes:
            self.nodes.error(node, path, f"{size} is not a power of two; {valid}")
            return None
        return size

    def irq_cpus(self, node: Node, path: str) -> tuple[int, ...] | None:
        items = self.nodes.sequence(node, path, "a list of CPU numbers, one per queue")
        if items is None:
            return None
        if not items:
            self.nodes.error(node, path, "needs one CPU per queue, got an empty list")
            return None
        if len(items) > CPUS_MAX:
            self.nodes.error(node, path, f"lists {len(items)} CPUs; there are at most {CPUS_MAX}")
            return None
        cpus = [
            self.nodes.integer(item, f"{path}[{i}]", 0, self.cpus - 1)
            for i, item in enumerate(items)
        ]
        return tuple(c for c in cpus if c is not None) if None not in cpus else None

    def veth(
        self,
        fields: dict[str, _Pair],
        path: str,
        c: _Common,
        key_node: Node,
        peer_nodes: dict[str, Node],
    ) -> VethSpec:
        peer_node = self.nodes.require(fields, "peer", key_node, path, "the name of the other end")
        peer = (
            None
            if peer_node is None
            else self.nodes.text(peer_node, f"{path}.peer", "a device name")
        )
        if peer is not None and peer_node is not None:
            problem = _dev_name_problem(peer)
            if problem is not None:
                self.nodes.error(peer_node, f"{path}.peer", problem)
            else:
                peer_nodes[c.name] = peer_node
        return VethSpec(
            name=c.name,
            up=c.up,
            mtu=c.mtu,
            xdp=c.xdp,
            loc=c.loc,
            peer=peer or "",
            queues=self.nodes.opt(
                fields, "queues", path, lambda n, p: self.nodes.integer(n, p, 1, 64), 1
            ),
        )

    def link_veths(self, specs: list[DeviceSpec], peer_nodes: dict[str, Node]) -> list[DeviceSpec]:
        """Check both ends of each pair agree and add the ends that are not listed, each right
        after the device that declares it (``veth_newlink`` creates both)."""
        by_name = {s.name: s for s in specs}
        reported: set[frozenset[str]] = set()
        synthesized: dict[str, str] = {}
        result: list[DeviceSpec] = []
        for spec in specs:
            result.append(spec)
            node = peer_nodes.get(spec.name)
            if not isinstance(spec, VethSpec) or node is None:
                continue
            path, peer = f"devices.{spec.name}.peer", spec.peer
            other = by_name.get(peer)
            if peer == spec.name:
                self.nodes.error(node, path, "a veth can't be its own peer; name the other end")
            elif isinstance(other, VethSpec):
                pair = frozenset((spec.name, peer))
                if other.peer != spec.name and pair not in reported:
                    reported.add(pair)
                    self.nodes.error(
                        node,
                        path,
                        f"'{peer}' is listed with peer '{other.peer}', not '{spec.name}'; "
                        "the two ends of a veth pair must name each other",
                    )
            elif other is not None:
                self.nodes.error(
                    node, path, f"'{peer}' is a {other.type}, not a veth; a veth's peer is a veth"
                )
            elif peer in synthesized:
                self.nodes.error(node, path, f"'{peer}' is already the peer of {synthesized[peer]}")
            else:
                synthesized[peer] = spec.name
                result.append(VethSpec(name=peer, peer=spec.name, loc=self.nodes.loc(node)))
        return result

    def bond(
        self,
        fields: dict[str, _Pair],
        path: str,
        c: _Common,
        slave_nodes: dict[str, list[tuple[str, Node]]],
    ) -> BondSpec:
        mode = self.nodes.opt(
            fields,
            "mode",
            path,
            lambda n, p: self.nodes.numbered_choice(n, p, BOND_MODES, "bond mode"),
            "balance-rr",
        )
        policy = self.nodes.opt(
            fields,
            "xmit_hash_policy",
            path,
            lambda n, p: self.nodes.numbered_choice(n, p, XMIT_HASH_POLICIES, "xmit_hash_policy"),
            "layer2",
        )
        slaves: tuple[str, ...] = ()
        if "slaves" in fields:
            slaves, slave_nodes[c.name] = self.slaves(fields["slaves"].value, f"{path}.slaves")
        primary = self.nodes.opt(fields, "primary", path, self.nodes.text, None)
        if primary is not None:
            self.check_primary(fields["primary"].value, f"{path}.primary", c.name, mode, slaves)
        pps = self.nodes.opt(
            fields, "packets_per_slave", path, lambda n, p: self.nodes.integer(n, p, 0, 65535), 1
        )
        if "packets_per_slave" in fields and mode != "balance-rr":
            self.nodes.error(
                fields["packets_per_slave"].key_node,
                f"{path}.packets_per_slave",
                f"packets_per_slave is only valid in balance-rr mode, not {mode} "
                "(the kernel answers EACCES)",
            )
        return BondSpec(
            name=c.name,
            up=c.up,
            mtu=c.mtu,
            xdp=c.xdp,
            loc=c.loc,
            mode=mode,
            xmit_hash_policy=policy,
            slaves=slaves,
            miimon_ms=self.nodes.opt(fields, "miimon", path, self.miimon, default_miimon(mode)),
            primary=primary if primary in slaves else None,
            packets_per_slave=pps,
        )

    def slaves(self, node: Node, path: str) -> tuple[tuple[str, ...], list[tuple[str, Node]]]:
        """The slave names that resolve, with path and node each (checked across bonds later)."""
        items = self.nodes.sequence(node, path, "a list of device names")
        names: list[str] = []
        nodes: list[tuple[str, Node]] = []
        for i, item in enumerate(items or []):
            name = self.nodes.device_ref(item, f"{path}[{i}]")
            if name is None:
                continue
            if name in names:
                self.nodes.error(item, f"{path}[{i}]", f"'{name}' is listed twice")
                continue
            names.append(name)
            nodes.append((f"{path}[{i}]", item))
        return tuple(names), nodes

    def check_primary(
        self, node: Node, path: str, bond: str, mode: str, slaves: tuple[str, ...]
    ) -> None:
        primary = str(node.value)
        if primary not in slaves:
            hint = did_you_mean(primary, slaves)
            valid = f"slaves: {_choices(slaves)}" if slaves else f"{bond} has no slaves"
            self.nodes.error(node, path, f"'{primary}' is not a slave of {bond}{hint}; {valid}")
        if mode not in PRIMARY_MODES:
            self.nodes.error(
                node,
                path,
                "primary is only valid in active-backup, balance-tlb or balance-alb mode, "
                f"not {mode} "
                "(the kernel answers EACCES)",
            )

    def miimon(self, node: Node, path: str) -> int | None:
        """Milliseconds: an integer, or a duration with a unit that is a whole number of ms."""
        if isinstance(node, ScalarNode) and isinstance(_construct(node), str):
            ns = self.nodes.duration(node, path)
            if ns is None:
                return None
            if ns % 1_000_000:
                self.nodes.error(node, path, "miimon is a whole number of milliseconds (e.g. 100)")
                return None
            return ns // 1_000_000
        return self.nodes.integer(node, path, 0, 2**31 - 1)

    def check_bonds(
        self, specs: list[DeviceSpec], slave_nodes: dict[str, list[tuple[str, Node]]]
    ) -> None:
        """Enslave in file order as the kernel would: not the bond itself (-EPERM), one master
        per device (-EBUSY), and no loops of nested bonds (``__netdev_upper_dev_link``, -EBUSY)."""
        master: dict[str, str] = {}

        def uppers(dev: str) -> list[str]:
            chain = [dev]
            while chain[-1] in master and master[chain[-1]] not in chain:
                chain.append(master[chain[-1]])
            return chain

        for spec in specs:
            if not isinstance(spec, BondSpec):
                continue
            for path, node in slave_nodes.get(spec.name, []):
                slave = str(node.value)
                chain = uppers(spec.name)
                if slave == spec.name:
                    self.nodes.error(
                        node, path, "cannot enslave bond to itself (the kernel answers EPERM)"
                    )
                elif slave in master:
                    self.nodes.error(
                        node,
                        path,
                        f"'{slave}' is already a slave of {master[slave]}; a device has one master "
                        "(the kernel answers EBUSY)",
                    )
                elif slave in chain:
                    loop = " -> ".join([*reversed(chain[: chain.index(slave) + 1]), slave])
                    self.nodes.error(
                        node,
                        path,
                        f"enslaving '{slave}' would make a loop of bonds ({loop}) "
                        "(the kernel answers EBUSY)",
                    )
                else:
                    master[slave] = spec.name

    def tun(self, fields: dict[str, _Pair], path: str, c: _Common) -> TunSpec:
        mode = self.nodes.opt(
            fields, "mode", path, lambda n, p: self.nodes.choice(n, p, TUN_MODES, "tun mode"), "tap"
        )
        writer = self.nodes.opt(
            fields,
            "writer",
            path,
            lambda n, p: self.nodes.choice(n, p, TUN_WRITERS, "writer"),
            "write",
        )
        return TunSpec(
            name=c.name,
            up=c.up,
            mtu=c.mtu,
            xdp=c.xdp,
            loc=c.loc,
            mode="tun" if mode == "tun" else "tap",
            queues=self.nodes.opt(
                fields, "queues", path, lambda n, p: self.nodes.integer(n, p, 1, 256), 1
            ),
            tx_queue_len=self.nodes.opt(
                fields, "tx_queue_len", path, lambda n, p: self.nodes.integer(n, p, 1, U32_MAX), 500
            ),
            vnet_hdr=self.nodes.opt(fields, "vnet_hdr", path, self.nodes.boolean, True),
            reader=self.nodes.opt(
                fields, "reader", path, lambda n, p: self.nodes.rate(n, p, allow_line=False), None
            ),
            writer="vhost" if writer == "vhost" else "write",
            blocking=self.nodes.opt(fields, "blocking", path, self.nodes.boolean, False),
            zerocopy=self.nodes.opt(fields, "zerocopy", path, self.nodes.boolean, False),
            sndbuf=self.nodes.opt(
                fields, "sndbuf", path, lambda n, p: self.nodes.integer(n, p, 1, INT_MAX), None
            ),
            napi_frags=self.nodes.opt(fields, "napi_frags", path, self.nodes.boolean, False),
        )

    # xdp programs

    def xdp(self, node: Node, path: str) -> XdpSpec | None:
        if isinstance(node, ScalarNode):
            names = [p.name for p in PROGRAMS]
            program = self.programs.program(node, path, names, "program")
            if program is None:
                return None
            self.params(program, [], node, path)
            return XdpSpec(program)
        fields = self.nodes.mapping(
            node, path, XDP_KEYS, "a program name or {program, mode, params}"
        )
        if fields is None:
            return None
        prog_node = self.nodes.require(
            fields, "program", node, path, f"a program name or {USER_PROGRAM}"
        )
        names = [p.name for p in PROGRAMS]
        program = (
            None
            if prog_node is None
            else self.programs.program(prog_node, f"{path}.program", names, "program")
        )
        mode = self.nodes.opt(
            fields, "mode", path, lambda n, p: self.nodes.choice(n, p, XDP_MODES, "XDP mode"), None
        )
        param_pairs: list[_Pair] = []
        if "params" in fields:
            param_pairs = (
                self.nodes.pairs(fields["params"].value, f"{path}.params", "a mapping of params")
                or []
            )
        section = self.nodes.opt(
            fields, "section", path, lambda n, p: self.nodes.text(n, p, "a section"), None
        )
        if program is None:
            return None
        if section is not None:
            if not is_object_program(program):
                self.nodes.error(
                    fields["section"].value,
                    f"{path}.section",
                    f"section applies to a BPF object (path/to/file.o), not to {program}",
                )
                return None
            file = object_file(program)
            if not self.programs.verify_object(
                fields["section"].value, f"{path}.section", Path(file), section
            ):
                return None
            program = f"{file}:{section}"
        params = self.params(program, param_pairs, node, f"{path}.params")
        return XdpSpec(program, next((m for m in XDP_MODES if m == mode), None), params)

    def params(
        self, program: str, pairs: list[_Pair], at: Node, path: str
    ) -> tuple[tuple[str, str], ...]:
        """Check params against the catalog; values are normalised text (ints in decimal,
        bools as 0/1). User programs take any params."""
        info = program_info(program)
        result: dict[str, str] = {}
        if is_object_program(program) and pairs:
            self.nodes.error(
                pairs[0].key_node,
                path,
                "a BPF object takes no params (its configuration is its maps and .rodata)",
            )
            return ()
        for pair in pairs:
            ppath = _join(path, pair.key)
            param = info.param(pair.key) if info is not None else None
            if info is not None and param is None:
                valid = _choices(p.name for p in info.params) or "none"
                hint = did_you_mean(pair.key, [p.name for p in info.params])
                self.nodes.error(
                    pair.key_node,
                    path,
                    f"unknown param '{pair.key}' for {program}{hint}; valid: {valid}",
                )
                continue
            value = self.param_value(param, pair.value, ppath)
            if value is not None:
                result[pair.key] = value
        for param in info.params if info is not None else ():
            if (
                param.default is None
                and param.name not in result
                and param.name not in {p.key for p in pairs}
            ):
                self.nodes.error(
                    at,
                    path,
                    f"{program} needs param '{param.name}' ({param.help}); "
                    f"write xdp: {{program: {program}, params: {{{param.name}: ...}}}}",
                )
        return tuple(sorted(result.items()))

    def cpu_list(self, node: Node, path: str) -> str | None:
        """A list of CPUs, as a YAML list or ``2,3,4``: kept as ``2,3,4``."""
        if isinstance(node, SequenceNode):
            cpus = [
                self.nodes.integer(item, f"{path}[{i}]", 0, self.cpus - 1)
                for i, item in enumerate(node.value)
            ]
            if not cpus or None in cpus:
                if not cpus:
                    self.nodes.error(node, path, "a list of CPUs, e.g. [2, 3, 4, 5]")
                return None
            return ",".join(str(c) for c in cpus)
        text = self.nodes.text(node, path, "a list of CPUs")
        if text is None:
            return None
        parts = [x.strip() for x in text.split(",")]
        if not all(x.isdigit() for x in parts):
            self.nodes.error(node, path, f"'{text}' is not a list of CPUs, e.g. [2, 3, 4, 5]")
            return None
        bad = [int(x) for x in parts if int(x) >= self.cpus]
        if bad:
            self.nodes.error(node, path, f"CPU {bad[0]} does not exist; valid: 0..{self.cpus - 1}")
            return None
        return ",".join(parts)

    def param_value(self, param: ParamInfo | None, node: Node, path: str) -> str | None:
        if param is None:
            return self.nodes.text(node, path, "a param value")
        if param.kind == "int":
            sc = self.nodes.scalar(node, path, "an integer")
            value = None if sc is None else _construct(sc)
            if sc is not None and (isinstance(value, bool) or not isinstance(value, int)):
                self.nodes.expected(sc, path, "an integer")
                return None
            return None if value is None else str(value)
        if param.kind == "bool":
            sc = self.nodes.scalar(node, path, "0, 1, true or false")
            value = None if sc is None else _construct(sc)
            if isinstance(value, bool) or value in (0, 1):
                return "1" if value else "0"
            if isinstance(value, str) and bool_param(value) is not None:
                return bool_param(value)  # ("false", quoted: as the command line takes it)
            if sc is not None:
                self.nodes.expected(sc, path, "0, 1, true or false")
            return None
        if param.kind == "dev":
            return self.nodes.device_ref(node, path)
        if param.kind == "map":
            return self.nodes.map_ref(node, path)
        if param.kind == "cpus":
            return self.cpu_list(node, path)
        text = self.nodes.text(node, path, "an IPv4 address")
        if text is not None and _parse_ipv4(text) is None:
            self.nodes.error(node, path, f"'{text}' is not an IPv4 address (e.g. 10.0.0.1)")
            return None
        return text


def _type_of(node: Node) -> str | None:
    """A device mapping's ``type:``, if plainly given."""
    if not isinstance(node, MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, ScalarNode) and k.value == "type" and isinstance(v, ScalarNode):
            return str(v.value)
    return None


@dataclass(frozen=True)
class _Common:
    """The keys every device type has, parsed once."""

    name: str
    up: bool
    mtu: int
    xdp: XdpSpec | None
    loc: Loc
