"""Every user action in one table: its key, footer label, palette entry and help text.

The app's ``BINDINGS``, its command-palette entries (``get_system_commands``) and the keys
listed by ``?`` are all made from :data:`APP_COMMANDS`, so the three never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class AppCommand:
    """One user command: its key binding, footer label and palette entry in one place."""

    id: str
    key: str
    action: str
    description: str
    title: str
    help: str
    key_display: str | None = None
    show: bool = True

    def binding(self) -> Binding:
        return Binding(
            self.key,
            self.action,
            self.description,
            show=self.show,
            key_display=self.key_display,
            tooltip=self.help,
            id=self.id,
        )


TABS: tuple[tuple[str, str], ...] = (
    ("paths", "Paths"),
    ("devices", "Devices"),
    ("rings", "Rings & CPUs"),
    ("drops", "Drops"),
    ("bond", "Bond"),
    ("lesson", "Lesson"),
    ("zoom", "Zoom"),
)
"""(id, label) of the main screen's tabs, in key order 1..7."""


APP_COMMANDS: tuple[AppCommand, ...] = (
    AppCommand(
        "toggle-pause",
        "space",
        "toggle_pause",
        "Run",
        "Pause / resume",
        "Stop or restart the simulated clock",
        key_display="space",
    ),
    AppCommand(
        "step",
        "full_stop",
        "step",
        "Step",
        "Step one NAPI poll",
        "Advance the simulation by exactly one NAPI poll, the next on any CPU (pauses first); "
        "runs a plan's next command",
        key_display=".",
    ),
    AppCommand(
        "step-back",
        "comma",
        "step_back",
        "Back",
        "Step one NAPI poll back",
        "Go back one NAPI poll: exactly the state before the last step (pauses first)",
        key_display=",",
    ),
    AppCommand(
        "lesson-next",
        "n",
        "lesson_step(1)",
        "Next",
        "Lesson: next step",
        "Start the lesson's next step now: its timeline entries run, its speed applies",
    ),
    AppCommand(
        "lesson-previous",
        "p",
        "lesson_step(-1)",
        "Prev",
        "Lesson: previous step",
        "Go back to when the lesson's previous step started (that state, paused)",
    ),
    AppCommand(
        "restart",
        "home",
        "restart",
        "t=0",
        "Restart at t = 0",
        "Start again at t = 0 with the same seed and timeline (a lesson: its first step)",
        key_display="home",
    ),
    AppCommand(
        "slower",
        "minus",
        "slower",
        "Slow",
        "Slower",
        "Divide the clock speed by ten (down to 1 µs of simulated time per second)",
        key_display="-",
    ),
    AppCommand(
        "faster",
        "plus,equals_sign",
        "faster",
        "Fast",
        "Faster",
        "Multiply the clock speed by ten (up to real time)",
        key_display="+",
    ),
    AppCommand(
        "help",
        "question_mark",
        "help",
        "Help",
        "Help for this panel",
        "What the panel shows and which kernel code decides it, and every key",
        key_display="?",
    ),
    AppCommand("quit", "q", "quit", "Quit", "Quit", "Quit xdptui"),
    AppCommand(
        "command-line",
        "colon",
        "command_line",
        "Command",
        "Command line",
        "Type an ip / bpftool / ethtool / pktgen command (tab completes, up/down: history)",
        key_display=":",
    ),
    AppCommand(
        "events-kind",
        "k",
        "event_kind",
        "Kind",
        "Event list: next kind filter",
        "Show only polls, tap writes, flushes, drops or commands in the event list (again: the"
        " next kind); works wherever the focus is, while the list is shown (slow speeds)",
        show=False,
    ),
    AppCommand(
        "events-device",
        "i",
        "event_device",
        "Device",
        "Event list: next device filter",
        "Show only the events of one device in the event list (again: the next device)",
        show=False,
    ),
    AppCommand(
        "events-next",
        "right_square_bracket",
        "event_next",
        "Next event",
        "Event list: run to the next event",
        "Run poll by poll to the next event the list's filters let through (, goes back one poll)",
        key_display="]",
        show=False,
    ),
    AppCommand(
        "jump-ring",
        "j",
        "jump_ring",
        "Shared ring",
        "CPUs: jump to the next shared XDP TX ring",
        "Mark the CPUs sharing the next locked XDP TX ring (ixgbe with more than 64 CPUs) and"
        " scroll the CPUs panel to them (Rings & CPUs tab)",
        show=False,
    ),
    AppCommand(
        "zoom",
        "z",
        "zoom",
        "Zoom",
        "Zoom on a queue…",
        "Pick an RX ring, XDP TX ring, tap ring or bulk queue and see its slots (tab 7)",
    ),
    AppCommand(
        "follow",
        "f",
        "follow",
        "Follow",
        "Follow a packet…",
        "Pick a flow and follow its next frame hop by hop with simulated timestamps",
    ),
    AppCommand(
        "attach",
        "a",
        "attach",
        "Attach",
        "Attach a program…",
        "Attach an XDP program to the focused device: pick a built-in or user program "
        "(ip link set dev DEV xdp obj PROG)",
    ),
    AppCommand(
        "swap",
        "s",
        "swap",
        "Swap",
        "Swap the program…",
        "Replace a device's program in place, without a gap (ip -force link set dev DEV xdp "
        "obj PROG)",
    ),
    AppCommand(
        "detach",
        "d",
        "detach",
        "Detach",
        "Detach the program",
        "Remove a device's program (ip link set dev DEV xdp off)",
    ),
    AppCommand(
        "bond-mode",
        "b",
        "bond_mode",
        "Bond",
        "Change bond mode / policy…",
        "Pick a bond mode and hash policy: the direct command first, then the legal "
        "sequence step by step if the kernel refuses",
    ),
    AppCommand(
        "link",
        "l",
        "link",
        "Link",
        "Link up / down…",
        "Toggle a device's administrative state (ip link set dev DEV up|down)",
    ),
    AppCommand(
        "traffic",
        "t",
        "traffic",
        "Traffic",
        "Edit traffic…",
        "Change a source's rate, frame size and flows (pktgen DEV rate R size S flows F)",
    ),
    AppCommand(
        "write-pcap",
        "w",
        "write_pcap",
        "pcapng",
        "Write pcapng…",
        "The followed packet at each hop, or the focused device's next millisecond of frames, "
        "as pcapng in the current directory (tcpdump -r, Wireshark)",
        show=False,
    ),
    AppCommand(
        "lesson-run",
        "r",
        "lesson_run",
        "Run step",
        "Lesson: run this step",
        "Submit the shown step's commands, exactly as if typed",
        show=False,
    ),
    AppCommand(
        "lesson-expand",
        "e",
        "lesson_expand",
        "Read all",
        "Lesson: show the whole step",
        "Expand the lesson bar to the step's whole text (e again: two lines)",
        show=False,
    ),
    AppCommand(
        "lessons",
        "L",
        "lessons",
        "Lessons",
        "Lesson: choose a lesson…",
        "Pick one of the topology's lessons",
        show=False,
    ),
    AppCommand(
        "presenter",
        "m",
        "presenter",
        "Max",
        "Presenter zoom: one panel fills the screen",
        "The focused panel (or the tab's first) takes the whole screen under the header and"
        " the lesson, for a room at the back; m or escape goes back",
        show=False,
    ),
    AppCommand(
        "unfocus",
        # ^: an Escape the terminal merged with the key after it (widgets.command_line)
        "escape,circumflex_accent",
        "unfocus",
        "Clear",
        "Clear focus and stop following",
        "Show every device again and stop following a packet",
        show=False,
    ),
    *(
        AppCommand(
            f"tab-{tab}",
            str(i),
            f"show_tab('{tab}')",
            label,
            f"Show the {label} tab",
            f"Switch to the {label} tab",
            show=False,
        )
        for i, (tab, label) in enumerate(TABS, start=1)
    ),
)
