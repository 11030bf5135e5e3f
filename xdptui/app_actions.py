"""The keys that change the host: attach, swap, detach, link, traffic, bond mode, zoom, follow.

:class:`DeviceActions` opens each key's dialog (``xdptui.screens.dialogs``) and turns the choice
into command lines sent through the :class:`~xdptui.app_console.Console`, so the event log shows
them as if typed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from textual.app import App

from xdptui import actions
from xdptui.app_console import Console, TrafficFields
from xdptui.app_stage import Stage
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
from xdptui.screens.main import MainScreen
from xdptui.widgets.format import format_cpus, format_pps
from xdptui.widgets.project import Highlight

PCAP_WINDOW_NS = 1_000_000  # ``w`` on a device: this much of what comes next

PlanStarter = Callable[[str, tuple[str, ...]], None]
"""Runs a plan of command lines one per tick (``Guide.start_plan``)."""


class DeviceActions:
    """``a`` ``s`` ``d`` ``l`` ``t`` ``b`` ``z`` ``f``: each a dialog, then command lines.

    Args:
        stage: the simulation on screen (its newest frame says what each key can act on).
        console: where the command lines go.
        app: the Textual app (dialogs, notifications).
        screen: the dashboard (its tabs).
        focus: the device the panels focus on (a key acts on it without asking).
        set_focus: moves that focus (``b`` on a slave focuses its bond).
        start_plan: runs a bond change's legal sequence.
    """

    def __init__(
        self,
        stage: Stage,
        console: Console,
        app: App[Any],
        screen: MainScreen,
        *,
        focus: Callable[[], str | None],
        set_focus: Callable[[str | None], None],
        start_plan: PlanStarter,
    ) -> None:
        self.stage = stage
        self.console = console
        self.app = app
        self.screen = screen
        self._focus = focus
        self._set_focus = set_focus
        self._start_plan = start_plan

    def attach(self) -> None:
        frame = self.stage.frame
        if frame is None:
            return

        def chosen(dev: DeviceView) -> None:
            def done(choice: object) -> None:
                if isinstance(choice, ProgramChoice) and choice.program:
                    self.console.submit(
                        actions.attach_command(dev.name, choice.program, choice.params)
                    )

            self.app.push_screen(
                ProgramScreen(f"Attach a program to {dev.name}", self.console.user_programs), done
            )

        self._with_device(
            actions.attachable(frame),
            "Attach a program to which device?",
            chosen,
            "every device has a program: s swaps one, d detaches one",
        )

    def swap(self) -> None:
        frame = self.stage.frame
        if frame is None:
            return

        def chosen(dev: DeviceView) -> None:
            current = f" ({dev.xdp.program} {dev.xdp.mode})" if dev.xdp else ""

            def done(choice: object) -> None:
                if isinstance(choice, ProgramChoice) and choice.program:
                    self.console.submit(actions.swap_command(dev, choice.program, choice.params))

            self.app.push_screen(
                ProgramScreen(
                    f"Swap {dev.name}'s program{current} for", self.console.user_programs
                ),
                done,
            )

        self._with_device(
            actions.with_program(frame),
            "Swap the program of which device?",
            chosen,
            "no device has a program of its own: a attaches one",
        )

    def detach(self) -> None:
        frame = self.stage.frame
        if frame is None:
            return
        self._confirm(
            actions.with_program(frame),
            "Detach the program of which device?",
            actions.detach_command,
            "no device has a program of its own",
        )

    def link(self) -> None:
        frame = self.stage.frame
        if frame is None:
            return
        self._confirm(
            frame.devices,
            "Take which device up or down?",
            actions.link_command,
            "no devices",
        )

    def _confirm(
        self,
        candidates: Sequence[DeviceView],
        title: str,
        command_of: Callable[[DeviceView], str],
        empty: str,
    ) -> None:
        """A key that takes something away from a running lecture (a link, a program) acts
        only after a pick: always a list, even of one device, each line the exact command it
        runs; the focused device first. Enter runs it, escape does nothing."""
        if not candidates:
            self.app.notify(empty, severity="warning")
            return
        focus = self._focus()
        ordered = sorted(candidates, key=lambda dev: dev.name != focus)
        commands = {dev.name: command_of(dev) for dev in ordered}
        items = [
            (dev.name, f"{dev.name:<10} {_state(dev):<10} → {commands[dev.name]}")
            for dev in ordered
        ]

        def picked(name: object) -> None:
            if isinstance(name, str) and name in commands:
                self.console.submit(commands[name])

        self.app.push_screen(
            PickScreen(title, items, "enter runs the command shown · escape: nothing"), picked
        )

    # --- traffic -----------------------------------------------------------------------------

    def _live_traffic(self) -> dict[str, TrafficFields]:
        """Each source's settings as it runs now (``Frame.sources``): what ``pktgen`` left."""
        frame = self.stage.frame
        out: dict[str, TrafficFields] = {}
        for src in frame.sources if frame is not None else ():
            if src.device in out:
                continue
            # A size mix (64,64,64,1500) has no single pktgen value: empty keeps the mix.
            size = str(src.sizes[0]) if len(set(src.sizes)) == 1 else ""
            out[src.device] = (src.rate, size, str(src.flows), f"{src.gso:g}")
        return out

    def _tap_readers(self) -> dict[str, str]:
        """Each tap's reader rate as ``reader TAP rate R`` takes it (``stop``: none attached)."""
        frame = self.stage.frame
        out: dict[str, str] = {}
        for dev in frame.devices if frame is not None else ():
            if dev.tap is not None:
                out[dev.name] = reader_rate_text(dev.tap.reader_pps)
        return out

    def traffic(self) -> None:
        sources = self.console.traffic_devices()
        readers = self._tap_readers()
        devices = list(dict.fromkeys([*sources, *readers]))
        if not devices:
            self.app.notify("this topology has no traffic sources or taps", severity="warning")
            return
        focus = self._focus()
        if focus in devices:
            devices.remove(focus)
            devices.insert(0, focus)
        defaults = {
            **self.console.traffic_defaults(),
            **self.console.pktgen,
            **self._live_traffic(),
        }
        defaults = {dev: value for dev, value in defaults.items() if dev in sources}
        hints = {dev: "(tap: reader only)" for dev in readers if dev not in defaults}
        frame = self.stage.frame
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
                    self.console.submit(actions.pktgen_command(choice.dev, *changed))
                    sent = True
            if choice.dev in readers and choice.reader and choice.reader != readers[choice.dev]:
                self.console.submit(actions.reader_command(choice.dev, choice.reader))
                sent = True
            if not sent:
                self.app.notify("nothing changed", timeout=3)

        self.app.push_screen(
            TrafficScreen(
                devices, defaults, gso_supported(), readers=readers, hints=hints, fixed=captures
            ),
            done,
        )

    # --- bond mode ---------------------------------------------------------------------------

    def bond_mode(self) -> None:
        frame = self.stage.frame
        if frame is None:
            return
        bonds = [dev for dev in frame.devices if dev.type == "bond"]
        focused = self._focus()
        focus = next((dev for dev in frame.devices if dev.name == focused), None)
        if focus is not None and focus.master is not None:
            self._set_focus(focus.master)

        def chosen(bond: DeviceView) -> None:
            info = bond.bond
            screen = BondModeScreen(
                bond.name,
                info.mode if info is not None else "",
                info.xmit_hash_policy if info is not None else "",
                partial(self.try_bond_mode, bond.name),
            )
            self.app.push_screen(screen, self._plan_chosen)

        self._with_device(bonds, "Change which bond?", chosen, "no bond in this topology")

    def try_bond_mode(self, bond: str, mode: str, policy: str | None) -> DirectAttempt:
        """Submit the direct mode command; on a refusal, plan the legal sequence from the
        frame as it is now."""
        frame = self.stage.sim.frame() if self.stage.frame is None else self.stage.frame
        info = frame.device(bond).bond
        current = info.mode if info is not None else None
        command = bond_mode_command(bond, None if mode == current else mode, policy)
        plan = bond_mode_change_plan(frame, bond, mode, policy)
        result = self.console.submit(command)
        return DirectAttempt(command, result.ok, result.errno, result.reply, plan)

    def _plan_chosen(self, plan: object) -> None:
        if isinstance(plan, tuple) and plan and all(isinstance(c, str) for c in plan):
            self._start_plan("legal sequence", tuple(str(c) for c in plan))

    # --- zoom on a queue -------------------------------------------------------------------

    def zoom(self) -> None:
        """``z``: pick a queue; the Zoom tab shows its slots from the next frame on."""
        frame = self.stage.frame
        if frame is None:
            return
        choices = zoom_choices(frame, self.stage.highlight)
        if not choices:
            self.app.notify("no queues in this topology", severity="warning")
            return
        by_key = {str(i): item for i, item in enumerate(choices)}

        def picked(key: object) -> None:
            if isinstance(key, str) and key in by_key:
                self.stage.zoom_ref, self.stage.zoom_label = by_key[key]
                self.screen.show_tab("zoom")
                self.stage.refresh()

        self.app.push_screen(
            PickScreen(
                "Zoom on which queue?",
                [(key, label) for key, (_, label) in by_key.items()],
                "its slots, head and tail, each descriptor (Zoom tab, 7)",
            ),
            picked,
        )

    # --- follow a packet ---------------------------------------------------------------------

    def pick_flow(self) -> None:
        flows = self.stage.sim.flows()
        if not flows:
            self.app.notify("no traffic source to follow", severity="warning")
            return
        by_id = {f"{f.source}:{f.flow}": f for f in flows}

        def picked(key: object) -> None:
            if isinstance(key, str) and key in by_id:
                self.follow(by_id[key])

        self.app.push_screen(
            PickScreen(
                "Follow the next frame of which flow?",
                list((key, flow.label) for key, flow in by_id.items()),
                "its hops show on the Paths tab with simulated timestamps (escape stops)",
            ),
            picked,
        )

    def write_pcap(self) -> None:
        """``w``: the followed packet at each hop, or the focused device's next millisecond
        of frames (on a fork), as pcapng in the current directory."""
        from xdptui import pcap_export
        from xdptui.pcap import write_atomically
        from xdptui.sim.engine import Simulator

        sim = self.stage.sim
        t = sim.now_ns
        view, flow, dev = self.stage.follow_view, self.stage.follow, self._focus()
        if view is not None and flow is not None:
            content = pcap_export.trace_pcapng(sim, flow.source, flow.flow, view.hops)
            path, what = Path(f"xdptui-{flow.source}-{flow.flow}-{t}ns.pcapng"), "the packet"
        elif dev is not None and isinstance(sim, Simulator):
            content, n = pcap_export.device_pcapng(sim, dev, PCAP_WINDOW_NS)
            path, what = Path(f"xdptui-{dev}-{t}ns.pcapng"), f"{n} frames of {dev} (next 1 ms)"
        else:
            self.app.notify("follow a packet (f) or click a device first", severity="warning")
            return
        try:
            write_atomically(path, content)
        except OSError as exc:
            self.app.notify(f"cannot write {path}: {exc.strerror}", severity="error")
            return
        self.app.notify(f"wrote {what} to {path.resolve()}", timeout=6)

    def follow(self, flow: FlowInfo) -> None:
        """Follow ``flow``'s next frame: its hops from ``sim.trace`` go to the paths panel."""
        self.stage.start_following(flow)
        self.screen.show_tab("paths")

    # --- which device --------------------------------------------------------------------

    def _with_device(
        self,
        candidates: Sequence[DeviceView],
        title: str,
        then: Callable[[DeviceView], object],
        empty: str,
    ) -> None:
        """Run ``then`` on the focused device if it qualifies, the only candidate, or a pick."""
        if not candidates:
            self.app.notify(empty, severity="warning")
            return
        by_name = {dev.name: dev for dev in candidates}
        focus = self._focus()
        if focus in by_name:
            then(by_name[focus])
            return
        if len(candidates) == 1:
            then(candidates[0])
            return

        def picked(name: object) -> None:
            if isinstance(name, str) and name in by_name:
                then(by_name[name])

        items = [(dev.name, device_label(dev)) for dev in candidates]
        self.app.push_screen(PickScreen(title, items), picked)


def _state(dev: DeviceView) -> str:
    return "down" if not dev.up else "up" if dev.carrier else "no-carrier"


def device_label(dev: DeviceView) -> str:
    """A device in a picker: name, kind, state and program."""
    kind = f"{dev.type}/{dev.driver}" if dev.driver else dev.type
    xdp = f"  xdp {dev.xdp.program} {dev.xdp.mode}" if dev.xdp else ""
    return f"{dev.name:<10} {kind:<10} {_state(dev)}{xdp}"


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
    for x in frame.xsks:
        fill, rx = x.ring("fill"), x.ring("rx")
        label = (
            f"{x.name} AF_XDP socket ({x.dev} q{x.queue}) fill {fill.entries}/{fill.size} "
            f"RX {rx.entries}/{rx.size}"
        )
        out.append((QueueRef("xsk", x.name), label))
    if mark is not None:

        def concerns(ref: QueueRef) -> bool:
            if ref.kind == "bq":
                return (ref.index, ref.dev, ref.target) == (mark.cpu, mark.dev, mark.target)
            return ref.kind == "rx" and (ref.dev, ref.index) == (mark.dev, mark.queue)

        out.sort(key=lambda item: not concerns(item[0]))
    return out
