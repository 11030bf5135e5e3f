"""The control plane: commands applied to the simulated host, with the kernel's rules and errors.

Each handler either changes the world completely or not at all (a refused command raises
:class:`KernelError` before touching state) and returns the text the real tool prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xdptui.model import commands as cmd
from xdptui.model.catalog import (
    CPUMAP_PROGRAMS_OK,
    DEVMAP_EGRESS_OK,
    PROGRAMS,
    bool_param,
    did_you_mean,
    is_object_program,
    is_user_program,
    program_info,
)
from xdptui.model.errors import Errno, KernelError
from xdptui.sim import objmaps, show
from xdptui.sim.bond.bond_main import Bond
from xdptui.sim.bond.bond_options import BondControl
from xdptui.sim.core.bpf_eval import verify_on_traffic
from xdptui.sim.core.bpf_obj import ATTACH_CPUMAP, ATTACH_DEVMAP, ATTACH_XDP
from xdptui.sim.core.derived import carry_over
from xdptui.sim.core.filter import make_context
from xdptui.sim.cpumap import CpuMap
from xdptui.sim.dev.netdev import MODE_DRV, MODE_HW, MODE_SKB, Attachment, NetDev
from xdptui.sim.dev.nic import Nic, configure_queues, configure_xdp_rings, map_entries
from xdptui.sim.dev.rings import TxRing
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.devmap import DevMap, DevmapEntry
from xdptui.sim.programs import Program, make_object_program, make_program
from xdptui.sim.replay import CapturePacing
from xdptui.sim.traffic import build_flow_table, entry_span
from xdptui.sim.world import World, concat_entries, share_tables
from xdptui.sim.xsk import XskMap

XDP_MAX_MTU = 3046  # one 4 KiB page less headroom and skb_shared_info (UNVERIFIED per driver)
KEYWORD_MODE = {"xdpgeneric": MODE_SKB, "xdpdrv": MODE_DRV, "xdpoffload": MODE_HW}


class ToolError(KernelError):
    """A failure the tool itself prints in its own words (ethtool's ``Cannot set ...``)."""


class NotFound(ToolError):
    """iproute2's ``Cannot find device "X"`` (the lookup fails before any netlink request)."""


@dataclass
class Control(BondControl):
    world: World
    now: Callable[[], int]
    schedule: Callable[..., None]  # (at_ns, timer kind, *args): xdptui.sim.clock
    log: Callable[[str], None]
    booting: bool = False  # topology programs are attached before the links come up

    # ------------------------------------------------------------ dispatch

    def apply(self, command: cmd.Command) -> str:
        handler = getattr(self, "_" + type(command).__name__)
        reply: str = handler(command)
        return reply

    def load(
        self, spec: str, given: tuple[tuple[str, str], ...], attach: str, dev: NetDev | None
    ) -> tuple[Program, list[tuple[str, str, int, int]]]:
        """``BPF_PROG_LOAD``: a real object is parsed, verified and its maps made (devmaps to
        create are returned, made only once the command succeeds); a built-in or Python
        program is run once over the flow table, the "verifier" refusing a bad one now."""
        w = self.world
        if is_object_program(spec):
            prog, create = make_object_program(spec, w.next_prog_id, w.base_dir, w, attach)
            verify_on_traffic(prog, w, dev, attach == ATTACH_DEVMAP)
            return prog, create
        params = self.resolve_params(spec, given) if attach == ATTACH_XDP else {}
        prog = make_program(spec, params, w.next_prog_id, w.base_dir)
        egress = dev if attach == ATTACH_DEVMAP else None
        prog.run(make_context(w, None if egress else dev, prog, egress=egress))
        return prog, []

    def _loaded(self, prog: Program, create: list[tuple[str, str, int, int]]) -> None:
        """The program is in: its id is taken and its load time kept (``bpftool prog show``);
        a real object's maps take their ids, devmaps it declared join the host's."""
        w = self.world
        w.prog_loaded_ns[prog.prog_id] = self.now()
        w.next_prog_id += 1
        for name, kind, max_entries, map_id in create:
            if kind == "cpumap":
                w.cpumaps[name] = CpuMap(name, max_entries, map_id, w.nr_cpus)
            elif kind == "xskmap":  # empty: bpftool map update name M key K value SOCKET
                w.xskmaps[name] = XskMap(name, max_entries, map_id)
            else:
                w.maps[name] = DevMap(name, kind, max_entries, map_id)
        if prog.obj is not None and prog.obj.map_ids:
            w.next_map_id = max(w.next_map_id, max(prog.obj.map_ids) + 1)

    def device(self, name: str) -> NetDev:
        dev = self.world.devices.get(name)
        if dev is None:
            hint = did_you_mean(name, self.world.devices)
            raise NotFound(Errno.ENODEV, f'Cannot find device "{name}"{hint}')
        return dev

    # ------------------------------------------------------------ XDP attach

    def _XdpSet(self, c: cmd.XdpSet) -> str:
        """``dev_change_xdp_fd`` -> ``dev_xdp_attach`` (net/core/dev.c), iproute2 adding
        XDP_FLAGS_UPDATE_IF_NOEXIST unless ``-force``."""
        dev = self.device(c.dev)
        mode = KEYWORD_MODE.get(c.keyword) or (MODE_DRV if dev.has_ndo_bpf() else MODE_SKB)
        if c.prog is not None:
            self.check_program(c.prog, c.params)  # iproute2 loads the object first
        self.check_upper(dev)
        if c.prog is None:
            self.detach(dev, mode)
            return ""
        current = dev.xdp.get(mode)
        if current is not None and current.inherited_from:
            current = None  # not in the slave's own xdp_state
        if current is not None and not c.force:
            raise KernelError(Errno.EBUSY, "XDP program already attached")
        other = MODE_SKB if mode == MODE_DRV else MODE_DRV if mode == MODE_SKB else None
        if other is not None and dev.xdp.get(other) is not None:
            raise KernelError(
                Errno.EEXIST, "Native and generic XDP can't be active at the same time"
            )
        if mode == MODE_HW:
            # BPF_PROG_LOAD with prog_ifindex: no offload-capable driver here (only nfp is).
            raise KernelError(
                Errno.EINVAL,
                "Device does not support XDP offload: program load with "
                "prog_ifindex failed (only offload-capable NICs such as nfp take xdpoffload)",
            )
        if mode == MODE_DRV and not dev.has_ndo_bpf():
            raise KernelError(
                Errno.EOPNOTSUPP, "Underlying driver does not support XDP in native mode"
            )
        if mode == MODE_DRV and isinstance(dev, Nic):
            assert dev.driver is not None
            dev.driver.check_attach(self.world.nr_cpus, dev.queues)
            if dev.mtu > XDP_MAX_MTU:  # ixgbe_xdp_setup / ice_xdp_setup_prog: one buffer
                raise KernelError(Errno.EINVAL, "MTU too large for XDP")
        prog, create = self.load(c.prog, c.params, ATTACH_XDP, dev)
        if isinstance(dev, Bond):
            if mode != MODE_DRV:
                raise KernelError(
                    Errno.EOPNOTSUPP,
                    "xdptui models XDP on a bond in native mode only (propagated to the slaves)",
                )
            self.bond_xdp_set(dev, prog)
            self._loaded(prog, create)
            return ""
        self._loaded(prog, create)
        if mode == MODE_DRV and isinstance(dev, Veth) and current is None:
            self._backlog_taken(dev, "native program attached")
        dev.xdp[mode] = Attachment(prog, mode)
        if isinstance(dev, Veth):
            dev.resize_queues()
        if mode == MODE_DRV and isinstance(dev, Nic) and current is None:
            if self.booting:
                configure_xdp_rings(dev, self.world.nr_cpus)
            else:
                self.driver_reset(dev, "attach")
        self.world.touch()
        return ""

    def check_upper(self, dev: NetDev) -> None:
        """``dev_xdp_attach`` (net/core/dev.c, v6.15), for an attach and a detach alike, in
        any mode: an upper device (the bond) with a program of its own -> EEXIST."""
        if dev.master is None:
            return
        upper = self.world.devices.get(dev.master)
        if upper is not None and any(a.inherited_from is None for a in upper.xdp.values()):
            raise KernelError(
                Errno.EEXIST, "Cannot attach when an upper device already has a program"
            )

    def detach(self, dev: NetDev, mode: str) -> None:
        """``xdp off``: the mode comes from the keyword, else ``dev_xdp_mode`` picks native on a
        device with ``ndo_bpf`` -- so a generic program needs ``xdpgeneric off``."""
        if dev.xdp.get(mode) is None:
            return
        if isinstance(dev, Bond):
            self.bond_xdp_set(dev, None)
            return
        del dev.xdp[mode]
        if mode == MODE_DRV and isinstance(dev, Nic):
            self.driver_reset(dev, "detach")
        if mode == MODE_DRV and isinstance(dev, Veth) and dev.admin_up:
            self._freed(dev, dev.napi_del(), "XDP program removed")
        if isinstance(dev, Veth):
            dev.resize_queues()
        self.world.touch()

    def _freed(self, dev: NetDev, frames: int, why: str) -> None:
        """Says what ``Veth.napi_del`` or ``Nic.clean_rx_rings`` freed: no counter shows it."""
        if frames:
            what = "1 frame" if frames == 1 else f"{frames} frames"
            by, rings = (
                ("veth_napi_del", "rings") if isinstance(dev, Veth) else ("the driver", "RX rings")
            )
            self.log(f"{dev.name}: {why}: {by} freed the {what} its {rings} held")

    def _backlog_taken(self, dev: Veth, why: str) -> None:
        """What ``veth_xmit`` queued for a veth with no native program waits in the CPU's
        backlog (``enqueue_to_backlog``), already counted (``Veth.sent_into``). The backlog is
        the CPU's: the veth going down or taking a native program leaves it to
        ``process_backlog``, which hands the skbs up the stack past any new program (taken at
        once here; a generic program does not see them)."""
        n = sum(rxq.clear() for rxq in dev.rxq)
        if n:
            what = "1 skb" if n == 1 else f"{n} skbs"
            self.log(f"{dev.name}: {why}: process_backlog takes the {what} its backlog held")

    def free_tx(self, nic: Nic, rings: list[TxRing]) -> None:
        """The frames ``rings`` hold are freed before they leave (a link down, rings
        re-allocated): the card never fetches them, so they take none of its DMA."""
        card = self.world.cards.get(nic.card or "")
        for ring in rings:
            if card is not None and len(ring.fifo):
                dep = ring.fifo.column("t")
                card.freed.append(dep[dep > self.now()].copy())
            ring.clear()

    def xdp_rings_again(self, nic: Nic) -> None:
        """The driver re-creates the XDP rings (``configure_xdp_rings``): what they held is
        freed; the stack's queue survives."""
        self.free_tx(nic, list(nic.tx)[: nic.xdp_rings])
        configure_xdp_rings(nic, self.world.nr_cpus)

    def driver_reset(self, nic: Nic, why: str) -> None:
        """ixgbe ``need_reset`` (none<->some program): ``ixgbe_setup_tc`` re-allocates every
        ring -- what was queued is lost and the link bounces. Program->program is hitless."""
        assert nic.driver is not None
        self.xdp_rings_again(nic)
        if not nic.driver.reset_on_attach:
            return
        self._freed(nic, nic.clean_rx_rings(), f"XDP program {why}")
        if nic.driver.reset_ns and nic.carrier:
            nic.carrier = False
            until = self.now() + nic.driver.reset_ns
            nic.down_until_ns = until
            self.log(f"{nic.name}: XDP program {why}: rings re-allocated, link down")
            self.schedule(until, "carrier", nic.name, until)
            self.slave_event(nic, carrier=True)

    def carrier_back(self, name: str, until: int) -> None:
        """The link comes back after a driver reset (unless another reset superseded it)."""
        nic = self.world.devices.get(name)
        if nic is not None and nic.down_until_ns == until:
            nic.carrier = True
            self.slave_event(nic, carrier=True)
            self.world.touch()
            self.log(f"{nic.name}: link up after ring re-allocation")

    def check_program(self, name: str, params: tuple[tuple[str, str], ...]) -> None:
        if is_object_program(name):
            if params:
                raise KernelError(
                    Errno.EINVAL,
                    f"{name}: a BPF object takes no params (its configuration is its maps "
                    "and .rodata)",
                )
            return
        info = program_info(name)
        if info is None:
            if is_user_program(name):
                return
            names = [p.name for p in PROGRAMS]
            raise KernelError(
                Errno.ENOENT,
                f'Couldn\'t load program "{name}": no such built-in program or '
                f"file.py:function{did_you_mean(name, names)}; built-ins: {', '.join(names)}",
            )
        for key, _value in params:
            if info.param(key) is None:
                valid = ", ".join(p.name for p in info.params) or "none"
                raise KernelError(
                    Errno.EINVAL,
                    f"{name}: unknown param '{key}'"
                    f"{did_you_mean(key, [p.name for p in info.params])}; valid: {valid}",
                )
        given = dict(params)
        for p in info.params:
            if p.default is None and p.name not in given:
                raise KernelError(Errno.EINVAL, f"{name}: needs param {p.name}=... ({p.help})")

    def resolve_params(self, name: str, params: tuple[tuple[str, str], ...]) -> dict[str, str]:
        """Turn ``dev=eth1`` into the ifindex the program's map/helper would hold."""
        out = dict(params)
        info = program_info(name)
        if info is None:
            return out
        for p in info.params:
            if p.name in out and p.kind == "int":
                try:
                    int(out[p.name], 0)
                except ValueError:
                    raise KernelError(
                        Errno.EINVAL, f"{name}: param {p.name} must be an integer"
                    ) from None
            if p.kind == "bool" and p.name in out:
                flag = bool_param(out[p.name])
                if flag is None:
                    raise KernelError(
                        Errno.EINVAL, f"{name}: param {p.name} is 0, 1, true or false"
                    )
                out[p.name] = flag
            if p.kind == "cpus" and out.get(p.name):
                items = out[p.name].split(",")
                if not all(i.strip().isdigit() for i in items):
                    raise KernelError(
                        Errno.EINVAL, f"{name}: param {p.name} is a list of CPUs, e.g. 2,3,4,5"
                    )
            if p.kind == "dev" and p.name in out:
                target = self.world.devices.get(out[p.name])
                if target is None:
                    hint = did_you_mean(out[p.name], self.world.devices)
                    raise KernelError(Errno.ENODEV, f'Cannot find device "{out[p.name]}"{hint}')
                out["ifindex"] = str(target.ifindex)
        return out

    # ------------------------------------------------------------ link

    def _LinkSetState(self, c: cmd.LinkSetState) -> str:
        """``dev_open`` / ``dev_close``: a NIC going down frees what its rings held."""
        dev = self.device(c.dev)
        if dev.admin_up == c.up:
            return ""
        dev.admin_up = c.up
        if not c.up and isinstance(dev, Veth) and dev.xdp.get(MODE_DRV) is not None:
            self._freed(dev, dev.napi_del(), "down")
        elif not c.up and isinstance(dev, Nic):
            self._freed(dev, dev.clean_rx_rings(), "down")
        elif not c.up and isinstance(dev, Veth):
            self._backlog_taken(dev, "down")
        elif not c.up:
            for rxq in dev.rxq:
                lost = rxq.clear()
                rxq.rx_dropped += lost
                dev.add("rx_dropped", lost)
        if isinstance(dev, Nic) and not c.up:
            self.free_tx(dev, list(dev.tx))  # (ice_down -> ice_clean_tx_ring)
        for other in self.world.devices.values():
            if isinstance(other, Veth) and other.peer == dev.name:
                other.carrier = c.up  # veth_open/veth_close toggle the peer's carrier
        if isinstance(dev, Veth):
            peer = self.world.devices.get(dev.peer)
            dev.carrier = peer is not None and peer.admin_up
        self.slave_event(dev)
        self.world.touch()
        return ""

    def _LinkSetMaster(self, c: cmd.LinkSetMaster) -> str:
        """``do_set_master``: ``ndo_add_slave`` / ``ndo_del_slave`` of the master."""
        dev = self.device(c.dev)
        if c.master is None:
            if dev.master is None:
                return ""
            bond = self.world.devices[dev.master]
            assert isinstance(bond, Bond)
            self.release(bond, dev)
            return ""
        master = self.device(c.master)
        if not isinstance(master, Bond):
            raise KernelError(Errno.EOPNOTSUPP, "")
        if dev.master == master.name:
            return ""
        self.enslave(master, dev)
        return ""

    def _LinkSetMtu(self, c: cmd.LinkSetMtu) -> str:
        """``dev_set_mtu``: 68..max_mtu; with a native program the drivers refuse an MTU whose
        frames no longer fit one XDP buffer (``ixgbe_change_mtu``, ``ice_change_mtu``:
        3046 is the usual single-buffer limit, UNVERIFIED per driver)."""
        dev = self.device(c.dev)
        if not 68 <= c.mtu <= 9702:
            raise KernelError(
                Errno.EINVAL,
                "mtu greater than device maximum" if c.mtu > 68 else "mtu less than device minimum",
            )
        if isinstance(dev, Nic) and dev.xdp.get(MODE_DRV) is not None and c.mtu > XDP_MAX_MTU:
            raise KernelError(Errno.EINVAL, "MTU too large for XDP")
        dev.mtu = c.mtu
        self.world.touch()
        return ""

    def _LinkSetCarrier(self, c: cmd.LinkSetCarrier) -> str:
        dev = self.device(c.dev)
        if dev.carrier == c.on:
            return ""
        dev.carrier = c.on
        self.slave_event(dev, carrier=True)
        self.world.touch()
        return ""

    def _BondSetOptions(self, c: cmd.BondSetOptions) -> str:
        """``bond_changelink`` -> ``__bond_opt_set`` for each option given."""
        dev = self.device(c.dev)
        if not isinstance(dev, Bond):
            raise KernelError(Errno.EOPNOTSUPP, "")
        if c.mode is not None:
            self.set_mode(dev, c.mode)
        if c.xmit_hash_policy is not None:
            self.set_policy(dev, c.xmit_hash_policy)
        return ""

    def _LinkShow(self, c: cmd.LinkShow) -> str:
        """``ip [-j] [-s] [-d] link show``: one set of facts per device, text or JSON."""
        devs = [self.device(c.dev)] if c.dev else list(self.world.devices.values())
        return show.link_show(self.world, devs, c.stats, c.details, c.json)

    def _ProgShow(self, c: cmd.ProgShow) -> str:
        return show.prog_show(self.world, c.json)

    def _NetShow(self, c: cmd.NetShow) -> str:
        return show.net_show(self.world, c.json)

    def _Help(self, c: cmd.Help) -> str:
        from xdptui.commands import help_text

        return help_text(c.topic)

    # ------------------------------------------------------------ maps

    def devmap(self, name: str) -> DevMap:
        m = self.world.maps.get(name)
        if m is None:
            hint = did_you_mean(name, self.world.maps)
            raise ToolError(
                Errno.ENOENT, f"Error: get map by name failed: No such file or directory{hint}"
            )
        return m

    def _MapUpdate(self, c: cmd.MapUpdate) -> str:
        """``bpftool map update``: the device name becomes its ifindex, an egress program must
        be a BPF_XDP_DEVMAP program (``__dev_map_alloc_node``: EINVAL otherwise); bytes for
        an object's own map (``objmaps``)."""
        if c.value_bytes is not None or c.value_map is not None:
            return self._objmap(objmaps.update, c)
        cmap = self.world.cpumaps.get(c.map)
        if cmap is not None or c.qsize is not None:
            return self._cpumap_update(c)
        xmap = self.world.xskmaps.get(c.map)
        if xmap is not None:
            return self._xskmap_update(xmap, c)
        m = self.devmap(c.map)
        dev = self.world.devices.get(c.dev)
        if dev is None:
            hint = did_you_mean(c.dev, self.world.devices)
            raise ToolError(Errno.ENODEV, f'Error: invalid value: no device "{c.dev}"{hint}')
        egress = None
        try:
            # Every refusal is decided before the egress program is loaded: a Python program
            # is imported (runs) only for an update that then happens.
            m.check_update(c.key, c.flags)  # key range and flags before __dev_map_alloc_node
            if c.egress is not None:
                ok = c.egress in DEVMAP_EGRESS_OK or is_user_program(c.egress)
                if not ok and not is_object_program(c.egress):
                    valid = ", ".join(sorted(DEVMAP_EGRESS_OK))
                    raise ToolError(
                        Errno.EINVAL,
                        f"Error: update failed: Invalid argument ({c.egress} is not a "
                        f"BPF_XDP_DEVMAP program; egress programs: {valid}, or a BPF object's "
                        'SEC("xdp/devmap") program)',
                    )
            if m.type != "devmap" and c.key not in m.entries and len(m.entries) >= m.max_entries:
                raise KernelError(Errno.E2BIG, "")  # __dev_map_hash_update_elem: the map is full
        except ToolError:
            raise
        except KernelError as exc:
            raise ToolError(exc.errno, f"Error: update failed: {exc.errno.strerror}") from None
        if c.egress is not None:
            egress, create = self.load(c.egress, (), ATTACH_DEVMAP, dev)
            self._loaded(egress, create)  # bpftool loaded it: the id stays taken
        try:
            m.update(c.key, DevmapEntry(dev.name, egress), c.flags)
        except KernelError as exc:
            raise ToolError(exc.errno, f"Error: update failed: {exc.errno.strerror}") from None
        self.world.touch()
        return ""

    def _xskmap_update(self, xmap: XskMap, c: cmd.MapUpdate) -> str:
        """``xsk_map_update_elem`` (``net/xdp/xskmap.c``), its value an AF_XDP socket (the
        socket's fd in the kernel; its name here): flags, the key's range, EEXIST/ENOENT."""
        if c.dev not in self.world.xsks:
            socks = ", ".join(self.world.xsks) or "none"
            raise ToolError(
                Errno.EOPNOTSUPP,
                f"Error: update failed: Operation not supported ({c.map} is an xskmap: its "
                f"value is an AF_XDP socket; sockets: {socks})",
            )
        try:
            xmap.update(c.key, c.dev, c.flags)
        except KernelError as exc:
            raise ToolError(exc.errno, f"Error: update failed: {exc.errno.strerror}") from None
        self.world.touch()
        return ""

    def _cpumap_update(self, c: cmd.MapUpdate) -> str:
        """``cpu_map_update_elem`` (``kernel/bpf/cpumap.c``): its checks first, then the entry's
        program must be a BPF_XDP_CPUMAP program (``__cpu_map_load_bpf_program``: EINVAL)."""
        cmap = self.world.cpumaps.get(c.map)
        if cmap is None:
            if c.map in self.world.maps:
                raise ToolError(
                    Errno.EINVAL,
                    f"Error: update failed: Invalid argument ({c.map} is a devmap: its value "
                    "is a device, value DEV [egress PROG])",
                )
            self.devmap(c.map)  # the name is unknown: bpftool's error
            raise AssertionError("unreachable")
        if c.qsize is None:
            raise ToolError(
                Errno.EINVAL,
                f"Error: update failed: Invalid argument ({c.map} is a cpumap: its value is "
                "qsize N [prog PROG])",
            )
        try:
            cmap.check_update(c.key, c.qsize, c.flags)
        except KernelError as exc:
            raise ToolError(exc.errno, f"Error: update failed: {exc.errno.strerror}") from None
        prog = None
        if c.cpu_prog is not None and c.qsize:
            if is_object_program(c.cpu_prog):
                raise ToolError(
                    Errno.EOPNOTSUPP,
                    "Error: update failed: Operation not supported (xdptui does not run a BPF "
                    'object\'s SEC("xdp/cpumap") program in a kthread yet; built-ins: '
                    + ", ".join(sorted(CPUMAP_PROGRAMS_OK))
                    + ")",
                )
            if c.cpu_prog not in CPUMAP_PROGRAMS_OK:
                # __cpu_map_load_bpf_program refuses it (EINVAL), and __cpu_map_entry_alloc
                # answers every failure with NULL: cpu_map_update_elem returns -ENOMEM
                valid = ", ".join(sorted(CPUMAP_PROGRAMS_OK))
                raise ToolError(
                    Errno.ENOMEM,
                    f"Error: update failed: Cannot allocate memory ({c.cpu_prog} is not a "
                    f"BPF_XDP_CPUMAP program, and the kernel reports any failed entry as "
                    f"ENOMEM; cpumap programs: {valid})",
                )
            prog, create = self.load(c.cpu_prog, (), ATTACH_CPUMAP, None)
            self._loaded(prog, create)
        cmap.update(c.key, c.qsize, prog, c.flags)
        self.world.touch()
        return ""

    def _objmap(self, op: Callable[[World, Any], str], c: Any) -> str:
        try:
            return op(self.world, c)
        except objmaps.MapToolError as exc:
            raise ToolError(exc.errno, exc.extack) from None

    def _MapLookup(self, c: cmd.MapLookup) -> str:
        return self._objmap(objmaps.lookup, c)

    def _MapDelete(self, c: cmd.MapDelete) -> str:
        if c.key_bytes is not None:
            return self._objmap(objmaps.delete, c)
        cmap = self.world.cpumaps.get(c.map)
        xmap = self.world.xskmaps.get(c.map)
        if xmap is not None:
            try:
                xmap.delete(c.key)
            except KernelError as exc:
                raise ToolError(exc.errno, f"Error: delete failed: {exc.errno.strerror}") from None
            self.world.touch()
            return ""
        if cmap is not None:
            try:
                cmap.delete(c.key)
            except KernelError as exc:
                raise ToolError(exc.errno, f"Error: delete failed: {exc.errno.strerror}") from None
            self.world.touch()
            return ""
        m = self.devmap(c.map)
        try:
            m.delete(c.key)
        except KernelError as exc:
            raise ToolError(exc.errno, f"Error: delete failed: {exc.errno.strerror}") from None
        self.world.touch()
        return ""

    def _MapShow(self, c: cmd.MapShow) -> str:
        """``bpftool [-j] map show|dump [name M | id N]``: the host's devmaps and the maps of
        the loaded objects (no BTF formatting: hex bytes)."""
        w = self.world
        found = show.find_maps(w, c.map, c.map_id)
        if not found and (c.map is not None or c.map_id is not None):
            what = f"id {c.map_id}" if c.map_id is not None else f"name {c.map}"
            hint = did_you_mean(c.map, show.map_names(w)) if c.map else ""
            raise ToolError(
                Errno.ENOENT, f"Error: get map by {what} failed: No such file or directory{hint}"
            )
        if not c.dump:
            return show.map_show(found, c.json)
        return show.map_dump(w, found, c.json)

    # ------------------------------------------------------------ ethtool

    def _SetChannels(self, c: cmd.SetChannels) -> str:
        """``ethtool -L``: the driver re-creates its queue vectors (rings start empty)."""
        dev = self.device(c.dev)
        if not isinstance(dev, Nic):
            raise ToolError(Errno.EOPNOTSUPP, "Cannot get device channel parameters")
        assert dev.driver is not None
        limit = min(dev.driver.max_queues, self.world.nr_cpus)
        if not 1 <= c.combined <= limit:
            raise ToolError(
                Errno.EINVAL,
                f"Cannot set device channel parameters: Invalid argument "
                f"(combined must be 1..{limit} on {dev.name})",
            )
        if c.combined == dev.queues:
            return "combined unmodified, ignoring\nno channel parameters changed, aborting"
        self._freed(dev, dev.clean_rx_rings(), f"ethtool -L combined {c.combined}")
        w = self.world
        configure_queues(
            dev, c.combined, w.nr_cpus, w.entries.rss_hash, entry_span(w.sources, dev.name), None
        )
        self.xdp_rings_again(dev)
        self.world.touch()
        return ""

    def _SetRings(self, c: cmd.SetRings) -> str:
        dev = self.device(c.dev)
        if not isinstance(dev, Nic) or not dev.rxq:
            raise ToolError(Errno.EOPNOTSUPP, "Cannot get device ring settings")
        assert dev.driver is not None
        for value in (c.rx, c.tx):
            if value is not None and not 64 <= value <= dev.driver.rx_ring_max:
                raise ToolError(
                    Errno.EINVAL,
                    f"Cannot set device ring parameters: Invalid argument "
                    f"(64..{dev.driver.rx_ring_max} on {dev.name})",
                )
        notes = []
        multiple = 8 if dev.driver.name == "ixgbe" else 32  # IXGBE_REQ_*_MULTIPLE / ICE_REQ_DESC_*
        rx = -(-c.rx // multiple) * multiple if c.rx is not None else None
        tx = -(-c.tx // multiple) * multiple if c.tx is not None else None
        if rx is not None and rx != c.rx:
            notes.append(f"Requested Rx descriptor count rounded up to {rx}")
        if tx is not None and tx != c.tx:
            notes.append(f"Requested Tx descriptor count rounded up to {tx}")
        c = cmd.SetRings(c.dev, rx, tx)
        if c.rx is not None:
            self._freed(dev, dev.clean_rx_rings(), f"ethtool -G rx {c.rx}")
            for rxq in dev.rxq:
                rxq.size = c.rx
                rxq.peak = 0
        if c.tx is not None:
            dev.tx_ring_size = c.tx
            self.xdp_rings_again(dev)
        self.world.touch()
        return "\n".join(notes)

    def _ShowStats(self, c: cmd.ShowStats) -> str:
        """``ethtool -S``: the driver's own counter names (see :mod:`xdptui.sim.show`)."""
        return show.ethtool_stats_text(self.world, self.device(c.dev))

    # ------------------------------------------------------------ traffic

    def _Pktgen(self, c: cmd.Pktgen) -> str:
        self.device(c.dev)
        sources = [s for s in self.world.sources if s.device == c.dev]
        if not sources:
            names = sorted({s.device for s in self.world.sources})
            raise KernelError(
                Errno.ENOENT,
                f"pktgen: no traffic source sends to or from {c.dev}; "
                f"sources use: {', '.join(names) or 'none'}",
            )
        now = self.now()
        replies = []
        rebuild = False
        for src in sources:
            if src.writer is not None:
                raise KernelError(
                    Errno.EINVAL,
                    f"pktgen: {src.spec.name} is {src.spec.from_}'s writer: "
                    f"use writer {src.spec.from_} [batch N] [rate R] | stop",
                )
            if src.spec.pcap is not None and (c.size or c.flows or c.gso is not None):
                raise KernelError(
                    Errno.EINVAL,
                    f"pktgen: {src.spec.name} replays a capture: its frames' sizes and flows "
                    "are the captured bytes (only its rate can change)",
                )
            if c.rate is not None and c.rate.kind == "captured" and src.pacing is None:
                raise KernelError(
                    Errno.EINVAL,
                    f"pktgen: {src.spec.name} replays no capture, so it has no captured pace",
                )
            still = isinstance(src.pacing, CapturePacing) and src.pacing.still
            if c.rate is not None and c.rate.kind == "captured" and still and src.spec.loop:
                raise KernelError(
                    Errno.EINVAL,
                    f"pktgen: every frame of {src.spec.name}'s capture has one timestamp: "
                    "it has no pace to loop at",
                )
        for src in sources:
            src.emitted_at_origin = src.emitted
            src.rate_origin_ns = max(now, src.start_ns)
            if c.stop:
                src.stopped = True
                replies.append(f"{src.spec.name}: stopped after {src.emitted} frames")
                continue
            src.stopped = False
            if c.rate is not None:
                src.rate = c.rate
            if c.size is not None or c.flows is not None or c.gso is not None:
                from dataclasses import replace

                spec = src.spec
                if c.size is not None:
                    spec = replace(spec, sizes=(c.size,))
                if c.flows is not None:
                    spec = replace(spec, flows=c.flows)
                if c.gso is not None:
                    spec = replace(spec, gso=c.gso)
                index = self.world.sources.index(src)
                seq = np.random.SeedSequence(self.world.topology.seed).spawn(index + 1)[index]
                try:
                    table = build_flow_table(spec, np.random.default_rng(seq))
                except ValueError as exc:
                    raise KernelError(Errno.EINVAL, f"pktgen: {exc}") from None
                src.spec = spec
                src.table = table
                rebuild = True
            replies.append(f"{src.spec.name}: {src.rate} to {c.dev}")
        if rebuild:
            self._rebuild_entries()
        self.world.touch()
        return "\n".join(replies)

    def _SetWriter(self, c: cmd.SetWriter) -> str:
        """An AF_XDP socket's writer changes its batch or pace, stops or starts again, from
        the state its kicks left (``XskWriter.changed``)."""
        w = self.world
        xs = w.xsks.get(c.sock)
        if xs is None:
            valid = ", ".join(sorted(w.xsks)) or "none"
            raise ToolError(Errno.ENODEV, f"writer: no AF_XDP socket {c.sock}; sockets: {valid}")
        if xs.writer is None or xs.source is None:
            raise ToolError(
                Errno.EINVAL, f"writer: {c.sock} has no writer (no traffic source from: it)"
            )
        src = w.sources[xs.source]
        now = self.now()
        old = xs.writer
        src.emitted_at_origin = src.emitted
        src.rate_origin_ns = max(now, src.start_ns)
        if c.stop:
            src.stopped = True
            w.touch()
            return f"{src.spec.name}: {c.sock}'s writer stopped after {src.emitted} frames"
        src.stopped = False
        batch = c.batch if c.batch is not None else old.batch
        pps = c.rate.value if c.rate is not None else old.batch * 1e12 / old.period_ps
        if c.rate is not None:
            src.rate = c.rate
        xs.writer = src.writer = old.changed(src.emitted, batch, pps)
        w.touch()
        return (
            f"{src.spec.name}: {c.sock}'s writer: {batch} descriptors a sendto, "
            f"{pps / 1e6:g} Mpps offered (at most {min(batch, old.cap)} sent a call)"
        )

    def _SetReader(self, c: cmd.SetReader) -> str:
        """The tap's userspace side: a reader attaches a queue (``tun_attach``: carrier on);
        without one the tap has no queue and ``tun_xdp_xmit`` answers -ENXIO. For an AF_XDP
        socket: the loop that takes its RX descriptors and refills its fill ring."""
        xs = self.world.xsks.get(c.dev)
        if xs is not None:
            pps = None if c.rate is None else c.rate.value
            if c.rate is not None and c.rate.kind != "pps":
                raise ToolError(Errno.EINVAL, "reader: an AF_XDP reader's rate is in pps")
            xs.set_reader(pps, self.now())
            return ""
        dev = self.device(c.dev)
        if not isinstance(dev, Tun):
            raise ToolError(Errno.EINVAL, f"reader: {dev.name} is not a tun/tap device")
        if c.rate is None:
            dev.reader_pps = None
            dev.carrier = False
        else:
            pps = c.rate.value if c.rate.kind == "pps" else c.rate.value / (8.0 * 84)
            dev.reader_pps = pps
            dev.carrier = True
        self.world.touch()
        return ""

    def _rebuild_entries(self) -> None:
        """A source's flow table changed size: re-lay every per-entry array. Frames already in
        rings stay in their queue (counted on the new table's first entry of their source)."""
        w = self.world
        old = w.entries
        old_offsets = [(s.offset, s) for s in w.sources]
        old_len = len(old)
        offset = 0
        mapping = np.zeros(old_len, dtype=np.int64)
        bounds = [o for o, _ in old_offsets] + [old.sources_end]
        for i, src in enumerate(w.sources):
            lo, hi = bounds[i], bounds[i + 1]
            new_len = len(src.table)
            mapping[lo:hi] = offset + (np.arange(hi - lo) % new_len)
            src.offset = offset
            offset += new_len
        # frames programs made stay, after the new tables; their pinned outcomes go
        w.entries, moved = carry_over(old, concat_entries([s.table for s in w.sources]))
        share_tables(w.sources, w.entries)
        mapping[old.sources_end :] = moved
        for dev in w.devices.values():
            for att in dev.xdp.values():
                if att.prog.obj is not None:
                    att.prog.obj.pins.clear()
        for dev in w.devices.values():
            for rxq in dev.rxq:
                rxq.resize_entries(mapping, len(w.entries))
            if isinstance(dev, Nic):
                map_entries(dev, w.entries.rss_hash, entry_span(w.sources, dev.name))


def format_kernel_error(exc: KernelError) -> str:
    """iproute2 prints the extack as ``Error: MSG.`` and otherwise ``RTNETLINK answers:
    strerror``; lookups that fail in the tool itself print their own line."""
    if isinstance(exc, ToolError):
        return exc.extack
    if exc.extack:
        text = exc.extack
        if text.startswith(("Error:", "pktgen", "ethtool")):
            return text
        return f"Error: {text}{'' if text.endswith('.') else '.'}"
    return f"RTNETLINK answers: {exc.errno.strerror}"
