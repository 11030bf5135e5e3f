"""A stand-in for ``xdptui.sim.engine.Simulator`` that the app tests drive.

Counters are closed-form functions of simulated time, so a test can predict every number: eth0
receives 10 Mpps (one frame per 100 ns), eth1 5 Mpps; both are slaves of bond0, which runs
``xdp_tx`` (pushed down to the slaves). eth0 (ice) has one XDP TX ring per CPU; eth1 (ixgbe, a
made-up 8-ring setup) shares each of its 8 XDP TX rings between two CPUs, so they are locked.
The fake records every call it gets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdptui.model.commands import Command
from xdptui.model.views import (
    COUNTERS,
    BondView,
    CpuView,
    DeviceView,
    DevmapXmitView,
    EventView,
    ExceptionView,
    FlowInfo,
    Frame,
    LessonPosition,
    PacketView,
    QueueRef,
    QueueView,
    RedirectErrView,
    TraceHop,
    TracepointsView,
    TxRingView,
    XdpView,
)

POLL_NS = 1_000
NR_CPUS = 16
QUEUES = 8
RING = 512


@dataclass(frozen=True)
class FakeCommandResult:
    ok: bool
    errno: str | None
    reply: str
    command: Command | None = None


class FakeSim:
    """Implements the Simulator interface the app uses, with hand-made frames."""

    def __init__(
        self,
        *,
        name: str = "fake dual port",
        seed: int = 7,
        on_advance: Callable[[int], None] | None = None,
    ) -> None:
        self.name = name
        self.seed = seed
        self.now_ns = 0
        self.seq = 0
        self.advance_calls: list[int] = []
        self.step_calls = 0
        self.submitted: list[tuple[str, str]] = []
        self.events: list[EventView] = []
        self.eth1_up = True
        self.on_advance = on_advance
        self.traced: list[tuple[str, int]] = []
        self.exact = False  # the mode the app chose (slow motion: exact)
        self.lesson: LessonPosition | None = None
        self.steps_started: list[tuple[int, int]] = []
        self._undo: list[int] = []
        self.expected = 0  # how far the app said its running clock would go

    # --- the interface --------------------------------------------------------------------

    def expect(self, t_end: int) -> None:
        self.expected = t_end

    def advance(self, dt_ns: int) -> None:
        assert dt_ns > 0, "the app must not ask for empty advances"
        self.advance_calls.append(dt_ns)
        self.now_ns += dt_ns
        if self.on_advance is not None:
            self.on_advance(dt_ns)

    def step_poll(self) -> bool:
        self.step_calls += 1
        self._undo.append(self.now_ns)
        self.now_ns += POLL_NS
        self.exact = True
        return True

    def step_until(self, match: Callable[[dict[str, object]], bool], max_polls: int) -> bool:
        self.step_poll()
        return False

    def step_back(self) -> bool:
        if self._undo:
            self.now_ns = self._undo.pop()
            return True
        if self.now_ns < POLL_NS:
            return False
        self.now_ns -= POLL_NS
        return True

    def restart(self) -> None:
        self.now_ns = 0
        self.events = []
        self.lesson = None
        self._undo = []

    def start_step(self, lesson: int, step: int) -> None:
        self.lesson = LessonPosition(lesson, step, self.now_ns)
        self.steps_started.append((lesson, step))

    def back_to_step(self, lesson: int, step: int) -> bool:
        return False

    def submit(self, cmd: str, origin: str = "user") -> FakeCommandResult:
        self.submitted.append((cmd, origin))
        words = cmd.split()
        if words == ["ip", "link", "set", "dev", "eth1", "down"]:
            self.eth1_up = False
            result = FakeCommandResult(True, None, "")
        elif words == ["ip", "link", "set", "dev", "eth1", "up"]:
            self.eth1_up = True
            result = FakeCommandResult(True, None, "")
        elif words[:1] == ["ip"]:
            result = FakeCommandResult(
                False, "EOPNOTSUPP", "RTNETLINK answers: Operation not supported"
            )
        else:
            result = FakeCommandResult(
                False, "EINVAL", f'Error: unknown command "{words[0] if words else ""}".'
            )
        self.events.append(
            EventView(
                t_ns=self.now_ns,
                cmd=cmd,
                ok=result.ok,
                errno=result.errno,
                reply=result.reply,
                origin=origin,
            )
        )
        return result

    def flows(self, limit: int = 64) -> tuple[FlowInfo, ...]:
        return tuple(
            FlowInfo("gen0", i, f"gen0 flow {i}: 198.18.0.{i + 1} -> 10.0.0.1") for i in range(3)
        )

    def packet(self, source: str, flow: int, hops: tuple[TraceHop, ...] = ()) -> PacketView | None:
        return None

    def trace(self, source: str, flow: int) -> tuple[TraceHop, ...]:
        """eth0 queue 3, cpu 3, xdp_tx turned into a redirect to eth1 by the bond."""
        self.traced.append((source, flow))
        t = self.now_ns
        return (
            TraceHop(t, "eth0", "wire", f"{source} flow {flow} arrives"),
            TraceHop(t + 120, "eth0", "rx_ring", "queue 3 on cpu 3"),
            TraceHop(t + 300, "eth0", "xdp", "XDP_TX -> xdp_master_redirect: eth1"),
            TraceHop(t + 310, "eth0", "bulk_queue", "cpu 3 bq to eth1"),
            TraceHop(t + 900, "eth1", "ndo_xdp_xmit", "XDP TX ring 3"),
            TraceHop(t + 1500, "eth1", "tx_ring", "on the wire"),
        )

    def frame(self, live: bool = False, zoom: QueueRef | None = None) -> Frame:
        self.seq += 1
        t = self.now_ns
        return Frame(
            seq=self.seq,
            t_ns=t,
            name=self.name,
            description="two ice/ixgbe ports under an 802.3ad bond running xdp_tx",
            seed=self.seed,
            nr_cpus=NR_CPUS,
            devices=(self._eth0(t), self._eth1(t), self._bond0(t)),
            cpus=tuple(self._cpu(i, t) for i in range(NR_CPUS)),
            tracepoints=TracepointsView(
                xdp_exception=(ExceptionView("eth1", "XDP_TX", t // 20_000),),
                xdp_redirect_err=(
                    RedirectErrView("eth0", "ENETDOWN", 0 if self.eth1_up else t // 1_000),
                ),
                xdp_devmap_xmit=(
                    DevmapXmitView(
                        "eth0", "eth1", sent=t // 200, drops=0, err=0, flushes=t // 3_200
                    ),
                ),
                xdp_redirect=t // 200,
            ),
            events=tuple(self.events),
            polls=t // POLL_NS,
            exact=self.exact,
            lesson=self.lesson,
        )

    # --- hand-made devices ----------------------------------------------------------------

    @staticmethod
    def _counters(**values: int) -> tuple[tuple[str, int], ...]:
        return tuple((name, values.get(name, 0)) for name in COUNTERS)

    def _eth0(self, t: int) -> DeviceView:
        rx = t // 100
        return DeviceView(
            name="eth0",
            ifindex=2,
            type="nic",
            driver="ice",
            up=True,
            carrier=True,
            master="bond0",
            speed_bps=100_000_000_000,
            mtu=1500,
            xdp=XdpView("xdp_tx", "native", inherited_from="bond0"),
            counters=self._counters(
                rx_packets=rx,
                rx_bytes=rx * 64,
                rx_dropped=t // 10_000,
                xdp_redirect=rx // 2,
                xdp_tx=rx // 2,
                tx_packets=rx // 2,
            ),
            queues=tuple(
                QueueView(
                    queue=q,
                    cpu=q,
                    ring_size=RING,
                    occupancy=(q * 64 + t // 1_000) % RING,
                    peak=480 if q == 3 else q * 64,
                    rx_packets=rx // QUEUES,
                    rx_dropped=t // 10_000 if q == 3 else 0,
                )
                for q in range(QUEUES)
            ),
            xdp_tx_rings=tuple(
                TxRingView(
                    ring=c,
                    cpus=(c,),
                    locked=False,
                    size=RING,
                    occupancy=c,
                    sent=rx // 32,
                    dropped=0,
                )
                for c in range(NR_CPUS)
            ),
        )

    def _eth1(self, t: int) -> DeviceView:
        rx = t // 200
        return DeviceView(
            name="eth1",
            ifindex=3,
            type="nic",
            driver="ixgbe",
            up=self.eth1_up,
            carrier=self.eth1_up,
            master="bond0",
            speed_bps=100_000_000_000,
            mtu=1500,
            xdp=XdpView("xdp_tx", "native", inherited_from="bond0"),
            counters=self._counters(rx_packets=rx, xdp_tx=rx, xdp_xmit=t // 200, tx_packets=rx),
            queues=tuple(
                QueueView(
                    queue=q,
                    cpu=q + 8,
                    ring_size=RING,
                    occupancy=q,
                    peak=q,
                    rx_packets=rx // 8,
                    rx_dropped=0,
                )
                for q in range(QUEUES)
            ),
            xdp_tx_rings=tuple(
                TxRingView(
                    ring=r,
                    cpus=(r, r + 8),
                    locked=True,
                    size=RING,
                    occupancy=2 * r,
                    sent=rx // 8,
                    dropped=t // 20_000 if r == 0 else 0,
                )
                for r in range(8)
            ),
        )

    def _bond0(self, t: int) -> DeviceView:
        return DeviceView(
            name="bond0",
            ifindex=4,
            type="bond",
            driver=None,
            up=True,
            carrier=True,
            master=None,
            speed_bps=200_000_000_000,
            mtu=1500,
            xdp=XdpView("xdp_tx", "native"),
            counters=self._counters(rx_packets=t // 100 + t // 200),
            bond=BondView("802.3ad", "layer3+4", ("eth0", "eth1"), "eth0", ("eth0", "eth1"), 100),
        )

    @staticmethod
    def _cpu(cpu: int, t: int) -> CpuView:
        dev = "eth0" if cpu < 8 else "eth1"
        return CpuView(
            cpu=cpu,
            busy=(cpu % 10) / 10,
            polls=t // POLL_NS,
            rx_queues=((dev, cpu % 8),),
            xdp_tx_rings=(("eth0", cpu, False), ("eth1", cpu % 8, True)),
        )


class FakeClock:
    """A real-time clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t
