"""The first screen: header, devices table, rings, CPU map, drops, event log, command line.

The screen only lays the panels out and passes views down; the app owns the simulator, the clock
and the projection. Panels are created once and fed new views: nothing is recomposed per frame.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer

from widgets.command_line import CommandLine
from widgets.cpus import CpuMap
from widgets.devices import DevicesTable
from widgets.drops import DropsPanel
from widgets.events import EventLog
from widgets.header import SimHeader
from widgets.project import DashboardViews, HeaderView
from widgets.rings import RingsPanel


class MainScreen(Screen[None]):
    """The live dashboard of one simulation."""

    def __init__(self) -> None:
        super().__init__(id="main")
        self.sim_header = SimHeader(id="header")
        self.devices_table = DevicesTable(id="devices")
        self.rings_panel = RingsPanel(id="rings")
        self.cpu_map = CpuMap(id="cpus")
        self.drops_panel = DropsPanel(id="drops")
        self.event_log = EventLog(id="events")
        self.command_line = CommandLine(id="command-line")

    def compose(self) -> ComposeResult:
        yield self.sim_header
        yield self.devices_table
        with Horizontal(id="middle"):
            yield self.rings_panel
            yield self.cpu_map
        with Horizontal(id="bottom"):
            yield self.drops_panel
            yield self.event_log
        yield Footer()
        yield self.command_line

    def on_mount(self) -> None:
        self.devices_table.border_title = "Devices"
        self.devices_table.border_subtitle = "click a device to focus its rings"
        self.rings_panel.border_title = "Rings"
        self.cpu_map.border_title = "CPUs"
        self.drops_panel.border_title = "Drops"
        self.event_log.border_title = "Events"
        self.event_log.border_subtitle = "$ typed  @ timeline  # topology  ! system"
        self.event_log.update_view(())

    def show(self, views: DashboardViews) -> None:
        """Hand each panel its view (panels with an equal view do not repaint)."""
        self.devices_table.update_view(views.devices)
        self.rings_panel.update_view(views.rings)
        self.cpu_map.update_view(views.cpus)
        self.drops_panel.update_view(views.drops)
        self.event_log.update_view(views.events)

    def show_header(self, view: HeaderView) -> None:
        self.sim_header.update_view(view)

    @property
    def command_line_open(self) -> bool:
        return self.has_class("-command")

    def open_command_line(self) -> None:
        self.add_class("-command")
        self.command_line.focus()

    def close_command_line(self) -> None:
        self.command_line.value = ""
        self.remove_class("-command")
        self.set_focus(None)
