"""Modal dialogs: pick a device / flow / lesson, pick a program, edit traffic, change a bond's
mode, and the help page.

Each dialog only collects a choice and dismisses with it; the app turns the choice into commands
(``xdptui.actions``, ``xdptui.plans``) and submits them, so every dialog's effect is a line in the
event log, as if typed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.markdown import Markdown as RichMarkdown
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from xdptui.model.catalog import PROGRAMS, program_info
from xdptui.model.topology import BOND_MODES, XMIT_HASH_POLICIES
from xdptui.plans import bond_supports_xdp
from xdptui.widgets.command_line import ESCAPE_KEYS

DIALOG_CSS = """
Dialog {
    align: center middle;
}
#dialog {
    width: 90%;
    max-width: 110;
    height: auto;
    max-height: 90%;
    border: thick $accent 60%;
    background: $surface;
    padding: 0 1;
}
#dialog > .dialog-title { text-style: bold; color: $accent; width: 1fr; }
#dialog > .dialog-help { color: $foreground-muted; width: 1fr; }
#dialog OptionList { height: auto; max-height: 20; }
#dialog Input { width: 1fr; }
#dialog Horizontal { height: auto; }
#dialog Button { margin: 0 1 0 0; }
#dialog .field { height: 1; margin: 1 0 0 0; }
#dialog .field-label { width: 14; color: $foreground-muted; }
"""


class Dialog(ModalScreen[object]):
    """Escape cancels (dismisses with None)."""

    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(ESCAPE_KEYS, "cancel", "Cancel", id="dialog-cancel", tooltip="Close, do nothing")
    ]

    def action_cancel(self) -> None:
        self.dismiss(None)


class PickScreen(Dialog):
    """Pick one item from a list: ``items`` are (id, label) pairs; dismisses with the id."""

    def __init__(self, title: str, items: Sequence[tuple[str, str]], help: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.items = tuple(items)
        self.help_text = help

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield OptionList(
                *(Option(Text(label), id=item) for item, label in self.items), id="pick"
            )
            if self.help_text:
                yield Static(self.help_text, classes="dialog-help", markup=False)

    def on_mount(self) -> None:
        self.query_one("#pick", OptionList).focus()

    @on(OptionList.OptionSelected, "#pick")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


@dataclass(frozen=True)
class ProgramChoice:
    program: str
    params: str


def program_label(name: str, summary: str, width: int = 20) -> Text:
    text = Text(name.ljust(width), style="bold")
    text.append(summary, style="dim")
    return text


def param_template(program: str) -> str:
    """``K=V`` words for a built-in program's parameters (defaults filled in, required empty)."""
    info = program_info(program)
    if info is None:
        return ""
    return " ".join(f"{p.name}={p.default or ''}" for p in info.params if p.default is None)


class ProgramScreen(Dialog):
    """Pick a program: every built-in with its one-line summary, the user programs seen so far,
    and a field for ``path/to/file.py:function``; parameters as ``K=V`` words."""

    def __init__(self, title: str, user_programs: Sequence[str] = ()) -> None:
        super().__init__()
        self.title_text = title
        self.user_programs = tuple(user_programs)

    def compose(self) -> ComposeResult:
        options = [Option(program_label(p.name, p.summary), id=p.name) for p in PROGRAMS]
        options += [
            Option(program_label(path, "user program"), id=path) for path in self.user_programs
        ]
        with Vertical(id="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield OptionList(*options, id="programs")
            with Horizontal(classes="field"):
                yield Label("params", classes="field-label")
                yield Input(placeholder="K=V … (e.g. dev=eth1)", id="params", compact=True)
            with Horizontal(classes="field"):
                yield Label("user program", classes="field-label")
                yield Input(placeholder="path/to/file.py:function", id="path", compact=True)
            yield Static(
                "enter picks · tab moves to the parameters · esc cancels",
                classes="dialog-help",
                markup=False,
            )

    def on_mount(self) -> None:
        self.query_one("#programs", OptionList).focus()

    @on(OptionList.OptionHighlighted, "#programs")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        program = event.option.id or ""
        info = program_info(program)
        params = self.query_one("#params", Input)
        params.value = param_template(program)
        if info is not None and info.params:
            params.placeholder = "  ".join(
                f"{p.name}={p.default if p.default is not None else '?'} ({p.help})"
                for p in info.params
            )
        else:
            params.placeholder = "no parameters"

    def _choose(self, program: str) -> None:
        self.dismiss(ProgramChoice(program, self.query_one("#params", Input).value.strip()))

    @on(OptionList.OptionSelected, "#programs")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self._choose(event.option.id or "")

    @on(Input.Submitted, "#params")
    def _params_done(self) -> None:
        highlighted = self.query_one("#programs", OptionList).highlighted_option
        if highlighted is not None and highlighted.id:
            self._choose(highlighted.id)

    @on(Input.Submitted, "#path")
    def _path_done(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self._choose(event.value.strip())


@dataclass(frozen=True)
class TrafficChoice:
    """What the traffic editor collected; empty fields mean "leave as it is"."""

    dev: str
    rate: str
    size: str
    flows: str
    gso: str
    reader: str = ""  # taps: the userspace reader's rate (``reader TAP rate R``), or "stop"


class TrafficScreen(Dialog):
    """The traffic editor: which device's source, its rate, frame size, flows and GSO share,
    and for a tap how fast its userspace reader takes frames off the rings.

    ``defaults`` are the live source's settings (``Frame.sources``), ``readers`` each tap's
    reader rate. A tap no source writes into (one a redirect feeds) only has the reader field.
    Dismisses with a :class:`TrafficChoice`; the app issues ``pktgen DEV ...`` for the fields
    that changed and ``reader TAP rate R`` when the reader's changed.
    """

    def __init__(
        self,
        devices: Sequence[str],
        defaults: dict[str, tuple[str, str, str, str]],
        gso_supported: bool,
        readers: dict[str, str] | None = None,
        hints: dict[str, str] | None = None,
        fixed: Collection[str] = (),
    ) -> None:
        super().__init__()
        self.fixed = frozenset(fixed)  # sources replaying a capture: their frames are fixed
        self.devices = tuple(devices)
        self.defaults = defaults
        self.gso_supported = gso_supported
        self.readers = dict(readers or {})
        self.hints = dict(hints or {})
        self._dev = self.devices[0] if self.devices else ""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Traffic: pktgen DEV rate R size S flows F gso G", classes="dialog-title")
            yield Label(
                "source (the device it sends into or out of); taps: reader TAP rate R",
                classes="dialog-help",
            )
            yield OptionList(
                *(Option(self._option_label(dev), id=dev) for dev in self.devices),
                id="traffic-dev",
            )
            fields = (
                ("rate", "rate", "e.g. 10Mpps, 40Gbps, line; a capture: as-captured"),
                ("size", "frame size", "bytes, 60-9600"),
                ("flows", "flows", "pktgen-style flow count"),
                ("gso", "GSO share", "0-1: share of writes that are GSO super-frames"),
                ("reader", "tap reader", "e.g. 200Kpps, or stop: slow it, watch the ring fill"),
            )
            for name, label, hint in fields:
                with Horizontal(classes="field"):
                    yield Label(label, classes="field-label")
                    field = Input(placeholder=hint, id=name, compact=True)
                    if name == "gso" and not self.gso_supported:
                        field.placeholder = "not settable: pktgen has no gso parameter yet"
                        field.disabled = True
                    yield field
            with Horizontal():
                yield Button("Apply", id="apply", variant="primary")
                yield Button("Cancel", id="cancel")

    def _option_label(self, dev: str) -> str:
        hint = self.hints.get(dev)
        return f"{dev}  {hint}" if hint else dev

    def on_mount(self) -> None:
        self._fill(self._dev)
        first = "#rate" if self._dev in self.defaults else "#reader"
        self.query_one(first, Input).focus()

    def _fill(self, dev: str) -> None:
        source = dev in self.defaults
        rate, size, flows, gso = self.defaults.get(dev, ("", "", "", ""))
        for name, value in (("rate", rate), ("size", size), ("flows", flows), ("gso", gso)):
            field = self.query_one(f"#{name}", Input)
            field.value = value if name != "gso" or self.gso_supported else ""
            field.disabled = (
                not source
                or (name == "gso" and not self.gso_supported)
                or (name != "rate" and dev in self.fixed)
            )
        reader = self.query_one("#reader", Input)
        reader.value = self.readers.get(dev, "")
        reader.disabled = dev not in self.readers

    @on(OptionList.OptionHighlighted, "#traffic-dev")
    def _dev_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and event.option.id != self._dev:
            self._dev = event.option.id
            self._fill(self._dev)

    def _value(self, name: str) -> str:
        field = self.query_one(f"#{name}", Input)
        return "" if field.disabled else field.value.strip()

    @on(Button.Pressed, "#apply")
    @on(Input.Submitted)
    def _apply(self) -> None:
        self.dismiss(
            TrafficChoice(
                self._dev,
                self._value("rate"),
                self._value("size"),
                self._value("flows"),
                self._value("gso"),
                self._value("reader"),
            )
        )

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True)
class DirectAttempt:
    """What the direct mode command got: the command, the reply, and the legal sequence."""

    command: str
    ok: bool
    errno: str | None
    reply: str
    plan: tuple[str, ...]


class BondModeScreen(Dialog):
    """The mode switcher: pick a mode and a policy; Apply tries the direct command and shows
    the kernel's answer; on a refusal, "Run the legal sequence" dismisses with the plan.

    ``attempt(mode, policy)`` submits the direct command and returns the
    :class:`DirectAttempt` (the app's side: it knows the simulator).
    """

    def __init__(
        self,
        bond: str,
        mode: str,
        policy: str,
        attempt: Callable[[str, str | None], DirectAttempt],
    ) -> None:
        super().__init__()
        self.bond = bond
        self.mode = mode
        self.policy = policy
        self.attempt = attempt
        self.last: DirectAttempt | None = None

    def compose(self) -> ComposeResult:
        modes = [
            Option(
                program_label(
                    m,
                    ("XDP ok" if bond_supports_xdp(m, "layer2") else "no XDP")
                    + ("  (current)" if m == self.mode else ""),
                    16,
                ),
                id=m,
            )
            for m in BOND_MODES
        ]
        policies = [
            Option(program_label(p, "(current)" if p == self.policy else "", 14), id=p)
            for p in XMIT_HASH_POLICIES
        ]
        with Vertical(id="dialog"):
            yield Label(
                f"{self.bond}: mode {self.mode}, xmit_hash_policy {self.policy}",
                classes="dialog-title",
            )
            with Horizontal():
                yield OptionList(*modes, id="modes")
                yield OptionList(*policies, id="policies")
            yield Static("", id="attempt", markup=False)
            with Horizontal():
                yield Button("Apply (direct command)", id="apply", variant="primary")
                yield Button("Run the legal sequence", id="run", disabled=True)
                yield Button("Close", id="close")
            yield Static(
                "pick a mode and a policy (tab moves), then Apply: the kernel answers first",
                classes="dialog-help",
                markup=False,
            )

    def on_mount(self) -> None:
        modes = self.query_one("#modes", OptionList)
        modes.highlighted = BOND_MODES.index(self.mode) if self.mode in BOND_MODES else 0
        policies = self.query_one("#policies", OptionList)
        if self.policy in XMIT_HASH_POLICIES:
            policies.highlighted = XMIT_HASH_POLICIES.index(self.policy)
        modes.focus()

    def _chosen(self) -> tuple[str, str | None]:
        mode = self.query_one("#modes", OptionList).highlighted_option
        policy = self.query_one("#policies", OptionList).highlighted_option
        chosen_policy = policy.id if policy is not None else None
        return (mode.id if mode is not None and mode.id else self.mode), (
            None if chosen_policy == self.policy else chosen_policy
        )

    @on(OptionList.OptionSelected, "#modes")
    def _mode_picked(self) -> None:
        self.query_one("#policies", OptionList).focus()

    @on(OptionList.OptionSelected, "#policies")
    @on(Button.Pressed, "#apply")
    def apply(self) -> None:
        """Submit the direct command and show the answer (and the plan, if refused)."""
        mode, policy = self._chosen()
        result = self.attempt(mode, policy)
        self.last = result
        text = Text()
        text.append("$ " + result.command + "\n", style="bold")
        if result.ok:
            text.append("✓ done", style="green")
        else:
            text.append(f"✗ {result.errno}  {result.reply}\n", style="bold red")
            if result.plan:
                text.append(f"The legal sequence ({len(result.plan)} commands):\n", style="bold")
                for i, command in enumerate(result.plan, start=1):
                    text.append(f"  {i:>2}  {command}\n")
        self.query_one("#attempt", Static).update(text)
        run = self.query_one("#run", Button)
        run.disabled = result.ok or not result.plan
        if not run.disabled:
            run.focus()

    @on(Button.Pressed, "#run")
    def _run(self) -> None:
        if self.last is not None and self.last.plan:
            self.dismiss(self.last.plan)

    @on(Button.Pressed, "#close")
    def _close(self) -> None:
        self.dismiss(None)


class HelpScreen(Dialog):
    """What a panel shows and which kernel code decides it, then every key."""

    DEFAULT_CSS = (
        DIALOG_CSS
        + """
    HelpScreen #dialog { height: 90%; }
    HelpScreen #help-scroll { height: 1fr; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            f"{ESCAPE_KEYS},question_mark,q", "cancel", "Close", id="help-close", tooltip="Close"
        )
    ]

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            with VerticalScroll(id="help-scroll"):
                # Rich draws the Markdown into one widget: Textual's Markdown widget mounts one
                # per block, a third of a second for this page on a loaded machine.
                yield Static(RichMarkdown(self.markdown), id="help-text")
            yield Static(
                "↑↓ pgup pgdn scroll · esc or ? closes", classes="dialog-help", markup=False
            )

    def on_mount(self) -> None:
        self.query_one("#help-scroll", VerticalScroll).focus()
