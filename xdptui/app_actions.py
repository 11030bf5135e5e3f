"""The device actions: attach, swap, detach, link, traffic, bond mode, follow a packet.

Each opens a dialog (``xdptui.screens.dialogs``) and ends as command lines sent through
``SimApp.submit_command``, so the event log shows them as if typed.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from xdptui import actions
from xdptui.app_base import SimApp
from xdptui.model.views import DeviceView, FlowInfo, Frame, QueueRef
from xdptui.plans import bond_mode_change_plan, bond_mode_command
from xdptui.screens.dialogs import (
    BondModeScreen,
    DirectAttempt,
    PickScreen,
    ProgramChoice,
    ProgramScreen,
    TrafficChoice,
    TrafficScreen,
)
from xdptui.widgets.format import format_cpus, format_pps
from xdptui.widgets.project import Highlight

PCAP_WINDOW_NS = 1_000_000  # ``w`` on a device: this much of what comes next


class ActionsApp(SimApp):
    """``a`` ``s`` ``d`` ``l`` ``t`` ``b`` ``f``: the keys that change the host."""

    def action_attach(self) -> None:
        frame = self._frame
        if frame is None:
            return

        def chosen(dev: DeviceView) -> None:
            def done(choice: object) -> None:
                if isinstance(choice, ProgramChoice) and choice.program:
                    self.submit_command(
                        actions.attach_command(dev.name, choice.program, choice.params)
                    )

            self.push_screen(
                ProgramScreen(f"Attach a program to {dev.name}", self._user_programs), done
            )

        self._with_device(
            actions.attachable(frame),
            "Attach a program to which device?",
            chosen,
            "every device has a program: s swaps one, d detaches one",
        )

    def action_swap(self) -> None:
        frame = self._frame
        if frame is None:
            return

        def chosen(dev: DeviceView) -> None:
            current = f" ({dev.xdp.program} {dev.xdp.mode})" if dev.xdp else ""

            def done(choice: object) -> None:
                if isinstance(choice, ProgramChoice) and choice.program:
                    self.submit_command(actions.swap_command(dev, choice.program, choice.params))

            self.push_screen(
                ProgramScreen(f"Swap {dev.name}'s program{current} for", self._user_programs),
                done,
            )

        self._with_device(
            actions.with_program(frame),
            "Swap the program of which device?",
            chosen,
            "no device has a program of its own: a attaches one",
        )

    def action_detach(self) -> None:
        frame = self._frame
        if frame is None:
            return
        self._with_device(
            actions.with_program(frame),
            "Detach the program of which device?",
            lambda dev: self.submit_command(actions.detach_command(dev)),
            "no device has a program of its own",
        )

    def action_link(self) -> None:
        frame = self._frame
        if frame is None:
            return
        self._with_device(
            frame.devices,
            "Take which device up or down?",
            lambda dev: self.submit_command(actions.link_command(dev)),
            "no devices",
        )

    # --- traffic -----------------------------------------------------------------------------

    def _live_traffic(self) -> dict[str, tuple[str, str, str, str]]:
        """Each source's settings as it runs now (``Frame.sources``): what ``pktgen`` left."""
        frame = self._frame
        out: dict[str, tuple[str, str, str, str]] = {}
        for src in frame.sources if frame is not None else ():
            if src.device in out:
                continue
            # A size mix (64,64,64,1500) has no single pktgen value: empty keeps the mix.
            size = str(src.sizes[0]) if len(set(src.sizes)) == 1 else ""
            out[src.device] = (src.rate, size, str(src.flows), f"{src.gso:g}")
        return out

    def _tap_readers(self) -> dict[str, str]:
        """Each tap's reader rate as ``reader TAP rate R`` takes it (``stop``: none attached)."""
        frame = self._frame
        out: dict[str, str] = {}
        for dev in frame.devices if frame is not None else ():
            if dev.tap is not None:
                out[dev.name] = reader_rate_text(dev.tap.reader_pps)
        return out

    def action_traffic(self) -> None:
        sources = self._traffic_devices()
        readers = self._tap_readers()
        devices = list(dict.fromkeys([*sources, *readers]))
        if not devices:
            self.notify("this topology has no traffic sources or taps", severity="warning")
            return
        if self.focus_device in devices:
            devices.remove(self.focus_device)
            devices.insert(0, self.focus_device)
        defaults = {**self._traffic_defaults(), **self._pktgen, **self._live_traffic()}
        defaults = {dev: value for dev, value in defaults.items() if dev in sources}
        hints = {dev: "(tap: reader only)" for dev in readers if dev not in defaults}
        frame = self._frame
        captures = {s.device: Path(s.pcap).name for s in (frame.sources if frame else ()) if s.pcap}
        hints.update({dev: f"(replays {name}: rate only)" for dev, name in captures.items()})

        def done(choice: object) -> None:
            if not isinstance(choice, TrafficChoice):
                return
            sent = False
            old = defaults.get(choice.dev)
            if old is not None:
                new = (choice.rate, choice.size, choice.flows, choice.gso)
                changed = [n if n != o else "" for n, o in zip(new, old, strict=True)]
                if any(changed):
                    self.submit_command(actions.pktgen_command(choice.dev, *changed))
                    sent = True
            if choice.dev in readers and choice.reader and choice.reader != readers[choice.dev]:
                self.submit_command(actions.reader_command(choice.dev, choice.reader))
                sent = True
            if not sent:
                self.notify("nothing changed", timeout=3)

        self.push_screen(
            TrafficScreen(
                devices, defaults, gso_supported(), readers=readers, hints=hints, fixed=captures
            ),
            done,
        )

    # --- bond mode ---------------------------------------------------------------------------

    def action_bond_mode(self) -> None:
        frame = self._frame
        if frame is None:
            return
        bonds = [dev for dev in frame.devices if dev.type == "bond"]
        focus = self._device(self.focus_device) if self.focus_device else None
        if focus is not None and focus.master is not None:
            self.focus_device = focus.master

        def chosen(bond: DeviceView) -> None:
            info = bond.bond
            screen = BondModeScreen(
                bond.name,
                info.mode if info is not None else "",
                info.xmit_hash_policy if info is not None else "",
                partial(self.try_bond_mode, bond.name),
            )
            self.push_screen(screen, self._plan_chosen)

        self._with_device(bonds, "Change which bond?", chosen, "no bond in this topology")

    def try_bond_mode(self, bond: str, mode: str, policy: str | None) -> DirectAttempt:
        """Submit the direct mode command; on a refusal, plan the legal sequence from the
        frame as it is now."""
        frame = self.sim.frame() if self._frame is None else self._frame
        info = frame.device(bond).bond
        current = info.mode if info is not None else None
        command = bond_mode_command(bond, None if mode == current else mode, policy)
        plan = bond_mode_change_plan(frame, bond, mode, policy)
        result = self.submit_command(command)
        return DirectAttempt(command, result.ok, result.errno, result.reply, plan)

    def _plan_chosen(self, plan: object) -> None:
        if isinstance(plan, tuple) and plan and all(isinstance(c, str) for c in plan):
            self.start_plan("legal sequence", tuple(str(c) for c in plan))

    # --- zoom on a queue -------------------------------------------------------------------

    def action_zoom(self) -> None:
        """``z``: pick a queue; the Zoom tab shows its slots from the next frame on."""
        frame = self._frame
        if frame is None:
            return
        choices = zoom_choices(frame, self.highlight)
        if not choices:
            self.notify("no queues in this topology", severity="warning")
            return
        by_key = {str(i): item for i, item in enumerate(choices)}

        def picked(key: object) -> None:
            if isinstance(key, str) and key in by_key:
                self.zoom_ref, self.zoom_label = by_key[key]
                self._main.show_tab("zoom")
                self.refresh_frame()

        self.push_screen(
            PickScreen(
                "Zoom on which queue?",
                [(key, label) for key, (_, label) in by_key.items()],
                "its slots, head and tail, each descriptor (Zoom tab, 7)",
            ),
            picked,
        )

    # --- follow a packet ---------------------------------------------------------------------

    def action_follow(self) -> None:
        flows = self.sim.flows()
        if not flows:
            self.notify("no traffic source to follow", severity="warning")
            return
        by_id = {f"{f.source}:{f.flow}": f for f in flows}

        def picked(key: object) -> None:
            if isinstance(key, str) and key in by_id:
                self.follow(by_id[key])

        self.push_screen(
            PickScreen(
                "Follow the next frame of which flow?",
                list((key, flow.label) for key, flow in by_id.items()),
                "its hops show on the Paths tab with simulated timestamps (escape stops)",
            ),
            picked,
        )

    # --- write pcapng ------------------------------------------------------------------------

    def action_write_pcap(self) -> None:
        """``w``: the followed packet at each hop, or the focused device's next millisecond
        of frames (on a fork), as pcapng in the current directory."""
        from xdptui import pcap_export
        from xdptui.pcap import write_atomically
        from xdptui.sim.engine import Simulator

        t = self.sim.now_ns
        view = self._follow_view
        if view is not None and self._follow is not None:
            flow = self._follow
            content = pcap_export.trace_pcapng(self.sim, flow.source, flow.flow, view.hops)
            path, what = Path(f"xdptui-{flow.source}-{flow.flow}-{t}ns.pcapng"), "the packet"
        elif self.focus_device is not None and isinstance(self.sim, Simulator):
            dev = self.focus_device
            content, n = pcap_export.device_pcapng(self.sim, dev, PCAP_WINDOW_NS)
            path, what = Path(f"xdptui-{dev}-{t}ns.pcapng"), f"{n} frames of {dev} (next 1 ms)"
        else:
            self.notify("follow a packet (f) or click a device first", severity="warning")
            return
        try:
            write_atomically(path, content)
        except OSError as exc:
            self.notify(f"cannot write {path}: {exc.strerror}", severity="error")
            return
        self.notify(f"wrote {what} to {path.resolve()}", timeout=6)

    def follow(self, flow: FlowInfo) -> None:
        """Follow ``flow``'s next frame: its hops from ``sim.trace`` go to the paths panel."""
        self._follow = flow
        self._retrace()
        self._main.show_tab("paths")
        self._show_views()


def reader_rate_text(pps: float | None) -> str:
    """A tap's reader rate as ``reader TAP rate`` takes it (``stop``: none attached)."""
    if pps is None:
        return "stop"
    return format_pps(pps, digits=4)


def gso_supported() -> bool:
    """Whether the command language takes ``pktgen DEV gso G`` (the traffic editor's GSO field)."""
    from xdptui.commands import validate

    return validate("pktgen eth0 gso 0.5") is None


def zoom_choices(frame: Frame, mark: Highlight | None) -> list[tuple[QueueRef, str]]:
    """Every queue of ``frame`` a zoom can show, labelled (what the selected event concerns
    first): RX rings, XDP TX rings, tap rings, devmap bulk queues."""
    out: list[tuple[QueueRef, str]] = []
    for dev in frame.devices:
        kind = "tap" if dev.type == "tun" else "tx"
        if dev.type != "tun":
            for q in dev.queues:
                label = f"{dev.name} RX q{q.queue} (cpu{q.cpu}) {q.occupancy}/{q.ring_size}"
                out.append((QueueRef("rx", dev.name, q.queue), label))
        for r in dev.xdp_tx_rings:
            what = "tap ring" if kind == "tap" else "XDP TX ring"
            cpus = f" (cpu{format_cpus(r.cpus)})" if r.cpus else ""
            label = f"{dev.name} {what} {r.ring}{cpus} {r.occupancy}/{r.size}"
            out.append((QueueRef(kind, dev.name, r.ring), label))
    for bq in frame.bulk_queues:
        label = f"bulk queue cpu{bq.cpu} {bq.from_dev}→{bq.to_dev} ({bq.flushes} flushes)"
        out.append((QueueRef("bq", bq.from_dev, bq.cpu, bq.to_dev), label))
    if mark is not None:

        def concerns(ref: QueueRef) -> bool:
            if ref.kind == "bq":
                return (ref.index, ref.dev, ref.target) == (mark.cpu, mark.dev, mark.target)
            return ref.kind == "rx" and (ref.dev, ref.index) == (mark.dev, mark.queue)

        out.sort(key=lambda item: not concerns(item[0]))
    return out
