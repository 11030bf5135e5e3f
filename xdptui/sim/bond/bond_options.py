"""The bond's control plane (``drivers/net/bonding/bond_main.c``, ``bond_options.c``):
enslave/release, XDP program propagation with rollback, option changes and the MII monitor --
each following the bonding function named in its docstring."""

from __future__ import annotations

from collections.abc import Callable

from xdptui.model.errors import Errno, KernelError
from xdptui.model.topology import bond_xdp_check, default_miimon
from xdptui.sim.bond.bond_main import FOLDED_STATS, Bond, BondLogic
from xdptui.sim.dev.netdev import MODE_DRV, Attachment, NetDev
from xdptui.sim.dev.nic import Nic, configure_xdp_rings
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.programs import Program
from xdptui.sim.world import World


class BondControl:
    """Mixed into :class:`~xdptui.sim.control.Control`."""

    world: World
    booting: bool
    now: Callable[[], int]
    log: Callable[[str], None]
    schedule: Callable[..., None]  # (at_ns, timer kind, *args): xdptui.sim.clock

    def device(self, name: str) -> NetDev:  # provided by Control
        raise NotImplementedError

    def driver_reset(self, nic: Nic, why: str) -> None:  # provided by Control
        raise NotImplementedError

    # ------------------------------------------------------------ helpers

    def logic(self, bond: Bond) -> BondLogic:
        return BondLogic(bond, self.world.devices)

    def master_key(self) -> bool:
        """``bpf_master_redirect_enabled_key``: on while any bond has an XDP program."""
        return any(isinstance(d, Bond) and d.bond_prog for d in self.world.devices.values())

    def slave_supports_xdp(self, dev: NetDev) -> bool:
        """``bond_enslave`` / ``bond_xdp_set``: ``ndo_bpf`` and ``ndo_xdp_xmit`` both present --
        a NIC whose driver has them, a veth, a bond, a tap (``tap_netdev_ops``: ``tun_xdp``,
        ``tun_xdp_xmit``; a tun device has neither)."""
        if isinstance(dev, Nic):
            assert dev.driver is not None
            return dev.driver.native_xdp and dev.driver.ndo_xdp_xmit
        if isinstance(dev, Tun):
            return dev.mode == "tap"
        return isinstance(dev, Veth | Bond)

    def own_prog_count(self, dev: NetDev) -> int:
        """``dev_xdp_prog_count``: programs attached to the device itself (a program the bond
        propagated through ``ndo_bpf`` is not in the slave's ``xdp_state``)."""
        return sum(1 for att in dev.xdp.values() if att.inherited_from is None)

    def propagate(self, slave: NetDev, prog: Program | None, bond: Bond) -> None:
        """``dev_xdp_propagate`` -> the slave driver's ``ndo_bpf`` (XDP_SETUP_PROG)."""
        old = slave.xdp.get(MODE_DRV)
        if isinstance(slave, Bond):
            self.bond_xdp_set(slave, prog, inherited=bond.name)
            return
        if prog is None:
            if old is not None:
                del slave.xdp[MODE_DRV]
                if isinstance(slave, Nic):
                    self.driver_reset(slave, "detach (from the bond)")
            return
        if isinstance(slave, Nic):
            assert slave.driver is not None
            slave.driver.check_attach(self.world.nr_cpus, slave.queues)
        slave.xdp[MODE_DRV] = Attachment(prog, MODE_DRV, inherited_from=bond.name)
        if isinstance(slave, Nic) and old is None:
            if self.booting:
                configure_xdp_rings(slave, self.world.nr_cpus)
            else:
                self.driver_reset(slave, "attach (from the bond)")

    # ------------------------------------------------------------ XDP on the bond

    def bond_xdp_set(self, bond: Bond, prog: Program | None, inherited: str | None = None) -> None:
        """``bond_xdp_set``: mode check, then push the program to every slave in list order;
        on a failure the slaves already updated get the old program back (``err:`` label)."""
        if not bond_xdp_check(bond.mode, bond.xmit_hash_policy):
            raise KernelError(
                Errno.EOPNOTSUPP, "No native XDP support for the current bonding mode"
            )
        old_att = bond.xdp.get(MODE_DRV)
        old = old_att.prog if old_att is not None else None
        done: list[NetDev] = []
        for name in bond.slaves:
            slave = self.world.devices[name]
            try:
                if not self.slave_supports_xdp(slave):
                    raise KernelError(Errno.EOPNOTSUPP, "Slave device does not support XDP")
                if self.own_prog_count(slave) > 0:
                    raise KernelError(
                        Errno.EOPNOTSUPP,
                        "Slave has XDP program loaded, please unload before enslaving",
                    )
                self.propagate(slave, prog, bond)
            except KernelError:
                for back in done:  # unwind: errors here are only logged by the kernel
                    try:
                        self.propagate(back, old, bond)
                    except KernelError as exc:
                        self.log(
                            f"{bond.name}: Error {-exc.errno} when unwinding XDP program "
                            f"change on {back.name}"
                        )
                raise
            done.append(slave)
        if prog is None:
            bond.xdp.pop(MODE_DRV, None)
        else:
            bond.xdp[MODE_DRV] = Attachment(prog, MODE_DRV, inherited_from=inherited)
        self.world.touch()

    # ------------------------------------------------------------ enslave / release

    def enslave(self, bond: Bond, slave: NetDev) -> None:
        """``bond_enslave``: refusals first (a slave must be down, not the bond itself, not in
        use), then open the slave, link it, and push the bond's program to it -- undoing it all
        if that fails."""
        if slave is bond:
            raise KernelError(Errno.EPERM, "Cannot enslave bond to itself.")
        if slave.master is not None:
            raise KernelError(Errno.EBUSY, "Device is in use and cannot be enslaved")
        if isinstance(slave, Bond) and self._is_upper(slave, bond):
            raise KernelError(Errno.EBUSY, "Device is in use and cannot be enslaved")
        if slave.admin_up and not self.booting:
            raise KernelError(Errno.EPERM, "Device can not be enslaved while up")
        bond_att = bond.xdp.get(MODE_DRV)
        if bond_att is not None:
            if not self.slave_supports_xdp(slave):
                raise KernelError(Errno.EOPNOTSUPP, "Slave does not support XDP")
            if self.own_prog_count(slave) > 0:
                raise KernelError(
                    Errno.EOPNOTSUPP,
                    "Slave has XDP program loaded, please unload before enslaving",
                )
            self.propagate(slave, bond_att.prog, bond)  # a driver error aborts the enslave
        slave.admin_up = True  # bond_enslave: dev_open(slave_dev)
        slave.master = bond.name
        bond.slaves.append(slave.name)
        bond.link[slave.name] = slave.running
        lg = self.logic(bond)
        if bond.curr_active is None or bond.primary == slave.name:
            lg.select_active()
        lg.update_slave_arr()
        role = "an active" if lg.can_tx(slave.name) or bond.mode != "active-backup" else "a backup"
        link = "an up" if bond.link[slave.name] else "a down"
        self.log(f"{bond.name}: ({slave.name}) Enslaving as {role} interface with {link} link")
        self.world.touch()

    def _is_upper(self, dev: NetDev, of: NetDev) -> bool:
        up = of.master
        while up is not None:
            if up == dev.name:
                return True
            nxt = self.world.devices.get(up)
            up = nxt.master if nxt is not None else None
        return False

    def release(self, bond: Bond, slave: NetDev) -> None:
        """``__bond_release_one``: take the bond's program off the slave first (a failure is
        only a warning), drop it from the arrays, reselect the active slave, close it."""
        if bond.xdp.get(MODE_DRV) is not None:
            try:
                self.propagate(slave, None, bond)
            except KernelError:
                self.log(f"{bond.name}: ({slave.name}) failed to unload XDP program")
        active = bond.mode != "active-backup" or bond.curr_active == slave.name
        was = "active" if active else "backup"
        for key in FOLDED_STATS:  # bond_get_stats keeps what the slave brought (bond_stats)
            if key in slave.counters:
                bond.folded[key] = bond.folded.get(key, 0) + slave.get_stats64()[key]
        bond.slaves.remove(slave.name)
        bond.link.pop(slave.name, None)
        slave.master = None
        lg = self.logic(bond)
        if bond.curr_active == slave.name:
            bond.curr_active = None
            lg.select_active()
        lg.update_slave_arr()
        slave.admin_up = False  # dev_close(slave_dev)
        self.log(f"{bond.name}: ({slave.name}) Releasing {was} interface")
        self.world.touch()

    # ------------------------------------------------------------ options

    def set_mode(self, bond: Bond, mode: str) -> None:
        """``bond_opt_check_deps`` (NOSLAVES -> ENOTEMPTY, IFDOWN -> EBUSY, with the extack
        ``bond_opt_error_interpret`` sets since v6.0, which iproute2 prints), then
        ``bond_option_mode_set``: a loaded program must be able to run in the new mode; a mode
        that can't use ARP monitoring (802.3ad, tlb, alb) starts MII monitoring at 100 ms when
        miimon is 0."""
        if mode == bond.mode:
            return
        if bond.slaves:
            raise KernelError(
                Errno.ENOTEMPTY, "unable to set option because the bond device has slaves"
            )
        if bond.admin_up:
            raise KernelError(Errno.EBUSY, "unable to set option because the bond is up")
        if bond.bond_prog and not bond_xdp_check(mode, bond.xmit_hash_policy):
            raise KernelError(Errno.EOPNOTSUPP, "")
        bond.mode = mode
        if bond.mode != "balance-rr":
            bond.packets_per_slave = 1
        if not bond.miimon_ms and default_miimon(mode):  # set miimon to default value
            bond.miimon_ms = default_miimon(mode)
            self.schedule(self.now() + bond.miimon_ms * 1_000_000, "miimon", bond.name)
        self.world.touch()

    def set_policy(self, bond: Bond, policy: str) -> None:
        """``bond_option_xmit_hash_policy_set``: live, except that with XDP loaded a policy the
        current mode can't run XDP with (vlan+srcmac in xor/802.3ad) is refused."""
        if bond.bond_prog and not bond_xdp_check(bond.mode, policy):
            raise KernelError(Errno.EOPNOTSUPP, "")
        bond.xmit_hash_policy = policy
        self.logic(bond).update_slave_arr()
        self.world.touch()

    # ------------------------------------------------------------ link events

    def slave_event(self, dev: NetDev, carrier: bool = False) -> None:
        """``bond_slave_netdev_event`` (bond_main.c, v6.15): NETDEV_UP/DOWN/CHANGE refresh the
        xmit arrays of the hash modes at once; everything else waits for the MII monitor. In
        802.3ad a carrier change (NETDEV_CHANGE) whose speed/duplex can't be read
        (``bond_update_speed_duplex`` fails without a link) marks the slave BOND_LINK_FAIL, so
        a slave whose carrier comes back stays unusable until the next MII tick sees it up
        (``bond_miimon_inspect``: BOND_LINK_BACK -> UP). LACP itself is not modelled."""
        if dev.master is None:
            return
        bond = self.world.devices.get(dev.master)
        if not isinstance(bond, Bond):
            return
        if bond.mode == "802.3ad" and carrier and not dev.carrier:
            bond.link[dev.name] = False
        if bond.mode in ("balance-xor", "802.3ad"):
            self.logic(bond).update_slave_arr()

    def mii_monitor(self, bond: Bond) -> None:
        """``bond_mii_monitor`` (every miimon ms): commit link changes it sees, fail over the
        active slave, rebuild the arrays, log what the kernel logs."""
        changed = False
        for name in bond.slaves:
            dev = self.world.devices[name]
            up = dev.running
            if bond.link.get(name) != up:
                bond.link[name] = up
                changed = True
                if up:
                    self.log(f"{bond.name}: ({name}) link status definitely up")
                else:
                    self.log(f"{bond.name}: ({name}) link status definitely down, disabling slave")
        if not changed:
            return
        lg = self.logic(bond)
        before = bond.curr_active
        primary_back = bond.primary and bond.link.get(bond.primary) and before != bond.primary
        if before is None or not bond.link.get(before) or primary_back:
            lg.select_active()
        if bond.curr_active != before:
            if bond.curr_active is None:
                self.log(f"{bond.name}: now running without any active interface!")
            else:
                self.log(f"{bond.name}: ({bond.curr_active}) making interface the new active one")
        lg.update_slave_arr()
        self.world.touch()
