"""Names the dead-code check cannot see used: read by Textual, NumPy, user programs or tests.

vulture reads this file with ``xdptui`` and ``widgets`` (``[tool.vulture] paths``); nothing
imports or runs it. Each line names an attribute so vulture counts it as used.
"""

# ruff: noqa: B018, F821

from xdptui.app import XdpApp
from xdptui.bpf.batch import Record
from xdptui.bpf.isa import encode
from xdptui.bpf.maps import MapType
from xdptui.model.report_spec import (
    BpfMapEntry,
    DeviceEntry,
    ObjectEntry,
    QueueEntry,
    XskWriterEntry,
)
from xdptui.sim.dev.tun import FAST_PATH_MAX
from xdptui.sim.dev.vhost_net import BATCH_MAX
from xdptui.sim.engine import Simulator
from xdptui.sim.programs import XdpContext
from xdptui.widgets.drops import DropsPanel
from xdptui.widgets.project import project

XdpApp.main_screen  # the app's main screen, as the Pilot tests reach it
_.parameters  # Textual calls check_action(action, parameters); the app only reads the action
DropsPanel.selected  # the selected drops row, as the Pilot tests read it
project  # the pure projection (frame -> views) the projection tests drive
XdpContext.ingress_ifindex  # the user-program API (ctx.ingress_ifindex)
XdpContext.egress_ifindex
_.ALLOW_IN_MAXIMIZED_VIEW  # Textual reads it: what stays on screen beside a maximized panel
_.writeable  # numpy's flags.writeable = False freezes shared arrays
QueueEntry.ring_peak  # report keys (TypedDict fields): report.py writes them as string keys
DeviceEntry.active_slave
XskWriterEntry.sendto
DeviceEntry.slow_path_reasons
DeviceEntry.writes_throttled
DeviceEntry.verdicts_by_path
BpfMapEntry.elements
ObjectEntry.frames_run
Simulator.from_file  # the Python API (DESIGN, "Python API"): scripts and notebooks use it
Simulator.rewind
Simulator.previous_poll_ns  # the app's step back, and the tests
__getattr__  # xdptui.Simulator, imported on first use (PEP 562)
Record.packet  # xdptui.bpf API: which packet of the batch wrote an output record
encode  # xdptui.bpf.isa: instructions back to bytes, for tools that build programs

FAST_PATH_MAX  # tests/test_tun.py: the Taps help states it
BATCH_MAX  # tests/test_tun.py: the Taps help states it

# enum bpf_map_type: every value named, shown by name (MapType(n).name) wherever one appears
MapType.UNSPEC
MapType.LPM_TRIE
MapType.STACK_TRACE
MapType.CGROUP_ARRAY
MapType.SOCKMAP
MapType.SOCKHASH
MapType.CGROUP_STORAGE
MapType.REUSEPORT_SOCKARRAY
MapType.PERCPU_CGROUP_STORAGE
MapType.SK_STORAGE
MapType.STRUCT_OPS
MapType.INODE_STORAGE
MapType.TASK_STORAGE
MapType.USER_RINGBUF
MapType.CGRP_STORAGE
MapType.ARENA
_.animation_level  # App: set to "none" (Textual reads it)
