"""The dashboard: header, tabs of panels, the event log, the footer and the command line.

Tabs (keys 1-6): Paths (topology boxes and arrows, sparklines), Devices (table and counters
crosswalk), Rings & CPUs, Drops, Bond, Lesson. The event log stays under every tab so each
command's reply is always in sight. The screen only lays the panels out and passes views down:
it hands a :class:`~widgets.project.Projection` to the panels of the visible tab (the others get
theirs when their tab opens), so hidden panels cost nothing. Nothing is recomposed per frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from xdptui.app_commands import TABS
from xdptui.widgets.bond import BondPanel
from xdptui.widgets.command_line import CommandLine, Completer, completion_columns
from xdptui.widgets.counters import CountersPanel
from xdptui.widgets.cpus import CpuMap
from xdptui.widgets.devices import DevicesTable
from xdptui.widgets.drops import DropsPanel
from xdptui.widgets.event_list import EventListPanel
from xdptui.widgets.events import EventLog
from xdptui.widgets.guard import drawing_failed
from xdptui.widgets.header import SimHeader
from xdptui.widgets.key_bar import KeyBar, KeyBarView
from xdptui.widgets.lesson import LessonBar, LessonPanel
from xdptui.widgets.lines import LinePanel
from xdptui.widgets.packet import PacketPanel
from xdptui.widgets.paths import PathsPanel
from xdptui.widgets.project import HeaderView, Projection
from xdptui.widgets.project_lesson import LessonView
from xdptui.widgets.project_taps import TapsView
from xdptui.widgets.rings import RingsPanel
from xdptui.widgets.sparklines import SparklinesPanel
from xdptui.widgets.taps import TapsPanel
from xdptui.widgets.zoom import QueueZoomPanel

HINT = "tab completes · ↑↓ history · enter runs · esc closes"
WIDE = 140  # columns from which the event list sits beside the tabs
STACK_BELOW = 150  # tab columns under which Rings and CPUs stack (side by side, both clip)
COMPACT_BELOW = 100  # columns under which panels lose their side borders

V = TypeVar("V")
V_contra = TypeVar("V_contra", contravariant=True)


class _ShowsView(Protocol[V_contra]):
    def update_view(self, view: V_contra) -> bool: ...


class MainScreen(Screen[None]):
    """The live dashboard of one simulation."""

    ALLOW_IN_MAXIMIZED_VIEW = "#header, #lesson-bar, #keys, #command-bar"

    def __init__(self, complete: Completer | None = None) -> None:
        super().__init__(id="main")
        self.sim_header = SimHeader(id="header")
        self.paths_panel = PathsPanel(id="paths")
        self.packet_panel = PacketPanel(id="packet")
        self.sparklines = SparklinesPanel(id="sparklines")
        self.devices_table = DevicesTable(id="devices")
        self.counters_panel = CountersPanel(id="counters")
        self.rings_panel = RingsPanel(id="rings")
        self.cpu_map = CpuMap(id="cpus")
        self.taps_panel = TapsPanel(id="taps")
        self.drops_panel = DropsPanel(id="drops")
        self.bond_panel = BondPanel(id="bond")
        self.lesson_panel = LessonPanel(id="lesson")
        self.zoom_panel = QueueZoomPanel(id="zoom")
        self.lesson_bar = LessonBar(id="lesson-bar")
        self.event_log = EventLog(id="events")
        self.event_list = EventListPanel(id="event-list")
        self.event_strip = EventListPanel(id="event-strip")
        self.command_hint = Static(HINT, id="command-hint", markup=False)
        self.completions = Static("", id="completions", markup=False)
        self.command_line = CommandLine(id="command-line", complete=complete)
        self.key_bar = KeyBar(id="keys")
        self.command_bar = Vertical(id="command-bar")
        self._projection: Projection | None = None
        self._active = "paths"
        self._tabs: TabbedContent | None = None

    def compose(self) -> ComposeResult:
        labels = dict(TABS)
        yield self.sim_header
        yield self.lesson_bar
        self._tabs = TabbedContent(initial="tab-paths", id="tabs")
        with Horizontal(id="body"):
            with self._tabs:
                with TabPane(f"1 {labels['paths']}", id="tab-paths"):
                    with Horizontal(id="paths-row"):
                        yield self.paths_panel
                        yield self.packet_panel
                    yield self.sparklines
                with TabPane(f"2 {labels['devices']}", id="tab-devices"):
                    yield self.devices_table
                    yield self.counters_panel
                with TabPane(f"3 {labels['rings']}", id="tab-rings"), Horizontal(id="middle"):
                    with Vertical(id="rings-column"):
                        yield self.rings_panel
                        yield self.taps_panel
                    yield self.cpu_map
                with TabPane(f"4 {labels['drops']}", id="tab-drops"):
                    yield self.drops_panel
                with TabPane(f"5 {labels['bond']}", id="tab-bond"):
                    yield self.bond_panel
                with TabPane(f"6 {labels['lesson']}", id="tab-lesson"):
                    yield self.lesson_panel
                with TabPane(f"7 {labels['zoom']}", id="tab-zoom"):
                    yield self.zoom_panel
            yield self.event_list
        yield self.event_log
        yield self.event_strip
        yield self.key_bar
        with self.command_bar:
            yield self.completions
            yield self.command_hint
            yield self.command_line

    def on_mount(self) -> None:
        self.command_line.display = False
        self.taps_panel.display = False
        self.packet_panel.display = False
        titles: dict[Widget, tuple[str, str]] = {
            self.paths_panel: ("Topology and paths", "click a device to focus it"),
            self.packet_panel: ("Packet: before and after the program", "f another flow"),
            self.sparklines: ("Rates", ""),
            self.devices_table: ("Devices", "click a device to focus it"),
            self.counters_panel: ("Counters: simulator ↔ kernel", ""),
            self.rings_panel: ("Rings", ""),
            self.cpu_map: ("CPUs", ""),
            self.taps_panel: ("Taps: fast/generic path · tap rings → userspace", "t: reader rate"),
            self.drops_panel: ("Drops and errors", "↑↓ select a row"),
            self.bond_panel: ("Bond", "b: change mode"),
            self.lesson_panel: ("Lesson", "n next · p previous · r run"),
            self.zoom_panel: ("Zoom", "z pick a queue · c colour by verdict/flow"),
            self.event_log: (
                "Commands",
                "$ typed  @ timeline  # topology  ! kernel  » plan  § lesson",
            ),
            self.event_list: ("Event list", "↑↓ select · k kind · i device · ] next"),
            self.event_strip: ("Event list", "↑↓ select · k kind · i device · ] next"),
        }
        for widget, (title, subtitle) in titles.items():
            widget.border_title = title
            widget.border_subtitle = subtitle
        self.event_log.update_view(())

    def on_resize(self) -> None:
        # Layout states as classes (app.tcss): a short terminal gives the tabs more rows; a
        # wide one has the event list beside the tabs, a narrow one under them.
        self.set_class(self.size.height < 32, "-short")
        self.set_class(self.size.width >= WIDE, "-wide")
        compact = self.size.width < COMPACT_BELOW or self.size.height < 30
        self.set_class(compact, "-compact")
        self._stack()

    def _stack(self) -> None:
        """Rings and CPUs one above the other when the tabs are narrow (the event list beside
        them takes room too)."""
        room = self.size.width
        if self.has_class("-slow") and self.has_class("-wide"):
            room -= min(72, self.size.width * 40 // 100)
        self.set_class(room < STACK_BELOW, "-stack")

    # --- tabs --------------------------------------------------------------------------------

    @property
    def active_tab(self) -> str:
        """``paths``, ``devices``, ``rings``, ``drops``, ``bond``, ``lesson`` or ``zoom``."""
        return self._active

    def show_tab(self, tab: str) -> None:
        if self._tabs is None or not self._tabs.is_mounted:
            return
        focused = self.focused
        if focused is not None and focused is not self.command_line:
            # A focused panel in the old tab would pull TabbedContent back to it.
            self.set_focus(None)
        self._tabs.active = f"tab-{tab}"

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._active = (event.pane.id or "tab-paths").removeprefix("tab-")
        if self._projection is not None:
            self.show(self._projection)

    def toggle_presenter(self) -> None:
        """``m``: the focused panel, or the tab's first, fills the screen (the header, the
        lesson bar and the footer stay); again (or escape) puts it back."""
        if self.maximized is not None:
            self.minimize()
            return
        shown = self.panels_of(self._active)
        focused = self.focused
        target = focused if focused in shown else shown[0] if shown else None
        if target is not None:
            self.maximize(target, container=False)

    def panels_of(self, tab: str) -> tuple[Widget, ...]:
        """The panels shown on ``tab``, in reading order."""
        panels: dict[str, tuple[Widget, ...]] = {
            "paths": (
                (self.paths_panel, self.packet_panel, self.sparklines)
                if self.packet_panel.display
                else (self.paths_panel, self.sparklines)
            ),
            "devices": (self.devices_table, self.counters_panel),
            "rings": (
                (self.rings_panel, self.taps_panel, self.cpu_map)
                if self.taps_panel.display
                else (self.rings_panel, self.cpu_map)
            ),
            "drops": (self.drops_panel,),
            "bond": (self.bond_panel,),
            "lesson": (self.lesson_panel,),
            "zoom": (self.zoom_panel,),
        }
        return tuple(panel for panel in panels[tab] if panel.display)

    # --- views -------------------------------------------------------------------------------

    def show(self, views: Projection) -> None:
        """Hand the visible panels their views (a panel with an equal view does not repaint)."""
        self._projection = views
        tab = self._active
        hand = self._hand
        if tab == "paths":
            hand(self.paths_panel, lambda: views.paths)
            hand(self.sparklines, lambda: views.sparklines)
            follow = views.paths.follow
            following = follow is not None and follow.packet is not None
            self.packet_panel.display = following
            # The frame's hops and headers take the Rates panel's rows while it is followed.
            self.set_class(following, "-following")
            if follow is not None and follow.packet is not None:
                hand(self.packet_panel, lambda: follow)
        elif tab == "devices":
            hand(self.devices_table, lambda: views.devices)
            hand(self.counters_panel, lambda: views.counters)
        elif tab == "rings":
            hand(self.rings_panel, lambda: views.rings)
            hand(self.cpu_map, lambda: views.cpus)
            hand(self.taps_panel, lambda: self._taps_view(views))
        elif tab == "drops":
            hand(self.drops_panel, lambda: views.drops)
        elif tab == "bond":
            hand(self.bond_panel, lambda: views.bond)
        elif tab == "lesson":
            hand(self.lesson_panel, lambda: views.lesson)
        elif tab == "zoom":
            hand(self.zoom_panel, lambda: views.zoom)
        hand(self.lesson_bar, lambda: self._lesson_bar_view(views))
        # At slow speed (exact mode) the event list joins the screen: beside the tabs when
        # wide, in place of the command log when narrow (each command is in it too).
        if views.frame.exact != self.has_class("-slow"):
            self.set_class(views.frame.exact, "-slow")
            self._stack()
        listed = self.event_list if self.has_class("-wide") else self.event_strip
        if views.frame.exact:
            hand(listed, lambda: views.event_list)
        if not views.frame.exact or self.has_class("-wide") or not self.has_class("-short"):
            hand(self.event_log, lambda: views.events)

    def shown_event_list(self) -> EventListPanel | None:
        """The event list on screen (slow speeds: beside the tabs when wide, under them when
        narrow), None when it is not shown."""
        if not self.has_class("-slow"):
            return None
        return self.event_list if self.has_class("-wide") else self.event_strip

    def _taps_view(self, views: Projection) -> TapsView:
        taps = views.taps
        self.taps_panel.display = bool(taps.rows)
        return taps

    def _lesson_bar_view(self, views: Projection) -> LessonView:
        lesson = views.lesson
        self.lesson_bar.display = lesson.lesson >= 0 and self._active != "lesson"
        return lesson

    def _hand(self, panel: _ShowsView[V], view: Callable[[], V]) -> None:
        """Give ``panel`` its view; a view that can't be made is logged and shown in the panel
        (a panel's own drawing failures are caught where it draws)."""
        try:
            panel.update_view(view())
        except Exception as exc:
            if isinstance(panel, Widget):
                drawing_failed(panel, exc)
            if isinstance(panel, LinePanel):
                panel.show_failure(exc)

    def show_header(self, view: HeaderView) -> None:
        self.sim_header.update_view(view)

    def show_keys(self, view: KeyBarView) -> None:
        self.key_bar.update_view(view)

    # --- the command line --------------------------------------------------------------------

    def open_command_line(self, text: str = "") -> None:
        # display, not a class on the screen: restyling every panel cost 0.1 s per ':'
        self.command_bar.display = True
        self.command_line.display = True
        self.command_hint.update(HINT)
        self.command_line.value = text
        self.command_line.cursor_position = len(text)
        self.command_line.focus()

    def close_command_line(self) -> None:
        self.completions.display = False
        self.command_line.value = ""
        self.command_line.display = False
        self.command_bar.display = False
        self.set_focus(None)

    @on(CommandLine.Candidates)
    def _candidates(self, event: CommandLine.Candidates) -> None:
        """The words that may come next, listed above the line (tab takes or cycles them)."""
        many = len(event.candidates) > 1
        self.completions.display = many and bool(event.line)
        if many:
            lines = completion_columns(event.candidates, max(20, self.size.width - 2))
            self.completions.update("\n".join(lines))
        if not event.line:
            self.command_hint.update(HINT)
        elif len(event.candidates) == 1:
            self.command_hint.update(f"tab: {event.candidates[0]} · enter runs it")
        elif event.candidates:
            self.command_hint.update(
                f"tab: one of the {len(event.candidates)} above (tab again cycles) · enter runs it"
            )
        else:
            self.command_hint.update("enter runs it")
