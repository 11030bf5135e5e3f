"""Legal command sequences the app offers when the kernel refuses a direct change.

Pure functions of a :class:`~xdptui.model.views.Frame` (no Textual, no engine), so a test can
check a plan without running anything, and :class:`PlanRunner`, which hands the app the plan's
commands one at a time and keeps each reply.

A bond's mode can only change on a bond that is down and has no slaves
(``bond_opt_check_deps``: ``BOND_OPTFLAG_NOSLAVES`` -> ENOTEMPTY, ``BOND_OPTFLAG_IFDOWN`` ->
EBUSY), and with a program loaded only to a mode ``__bond_xdp_check`` accepts
(``bond_option_mode_set`` -> EOPNOTSUPP). :func:`bond_mode_change_plan` writes the sequence an
operator would type to get there and back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdptui.model.topology import bond_xdp_check
from xdptui.model.views import Frame


def bond_supports_xdp(mode: str, policy: str) -> bool:
    """``__bond_xdp_check`` (the rule lives in :mod:`xdptui.model.topology`)."""
    return bond_xdp_check(mode, policy)


def bond_mode_command(bond: str, mode: str | None, policy: str | None) -> str:
    """``ip link set dev BOND type bond [mode M] [xmit_hash_policy P]``."""
    words = ["ip", "link", "set", "dev", bond, "type", "bond"]
    if mode is not None:
        words += ["mode", mode]
    if policy is not None:
        words += ["xmit_hash_policy", policy]
    return " ".join(words)


def bond_mode_change_plan(
    frame: Frame, bond: str, mode: str, policy: str | None
) -> tuple[str, ...]:
    """The commands that take ``bond`` to ``mode`` (and ``policy``; None keeps the current one).

    In order: detach the bond's program if it can't run through the change
    (``bond_option_mode_set`` checks the new mode against the policy in force, then
    ``bond_option_xmit_hash_policy_set`` checks the new policy); take the bond down
    (IFDOWN); release every slave (NOSLAVES; ``__bond_release_one`` closes each released
    slave, which is why re-enslaving works: ``bond_enslave`` wants slaves down); set the
    mode and policy; re-enslave the slaves in their old order; bring the bond back up if it
    was up; re-attach the program if one was detached and the new mode runs XDP.

    Only the policy changing, with the mode kept, is a live change: one command (after a
    detach if the new policy can't run XDP in this mode). Nothing to change: no commands.

    Raises:
        KeyError: ``bond`` is not a device of ``frame``.
        ValueError: ``bond`` is not a bond.
    """
    dev = frame.device(bond)
    info = dev.bond
    if info is None:
        raise ValueError(f"{bond} is not a bond")
    old_mode = info.mode
    old_policy = info.xmit_hash_policy
    new_policy = old_policy if policy is None else policy
    own = dev.xdp if dev.xdp is not None and dev.xdp.inherited_from is None else None
    program = own.program if own is not None else None
    # Re-attach exactly what ran: the same mode keyword and every `param K=V` it was given.
    keyword = (
        {"generic": "xdpgeneric", "offload": "xdpoffload"}.get(own.mode, "xdp") if own else "xdp"
    )
    params = "".join(f" param {k}={v}" for k, v in own.params) if own is not None else ""

    if mode == old_mode:
        if new_policy == old_policy:
            return ()
        plan: list[str] = []
        if program is not None and not bond_supports_xdp(mode, new_policy):
            plan.append(f"ip link set dev {bond} {keyword} off")
        plan.append(bond_mode_command(bond, None, new_policy))
        return tuple(plan)

    # The mode option is applied before the policy (bond_changelink), so with a program
    # loaded both the new mode under the old policy and the final pair must pass the check.
    detach = program is not None and not (
        bond_supports_xdp(mode, old_policy) and bond_supports_xdp(mode, new_policy)
    )
    slaves = list(info.slaves)
    plan = []
    if detach:
        plan.append(f"ip link set dev {bond} {keyword} off")
    if dev.up:
        plan.append(f"ip link set dev {bond} down")
    plan += [f"ip link set dev {slave} nomaster" for slave in slaves]
    plan.append(bond_mode_command(bond, mode, policy))
    plan += [f"ip link set dev {slave} master {bond}" for slave in slaves]
    if dev.up:
        plan.append(f"ip link set dev {bond} up")
    if detach and program is not None and bond_supports_xdp(mode, new_policy):
        plan.append(f"ip link set dev {bond} {keyword} obj {program}{params}")
    return tuple(plan)


@dataclass(frozen=True)
class StepResult:
    """One command of a plan as the simulator answered it."""

    command: str
    ok: bool
    errno: str | None
    reply: str


@dataclass
class PlanRunner:
    """Hands out a plan's commands one at a time and records the replies.

    The app calls :meth:`next_command` once per tick, submits it and passes the answer to
    :meth:`record`. A refused command stops the plan (the rest would build on it).
    """

    title: str
    commands: tuple[str, ...]
    results: list[StepResult] = field(default_factory=list)
    stopped: bool = False

    @property
    def done(self) -> bool:
        """Every command ran, or one was refused."""
        return self.stopped or len(self.results) >= len(self.commands)

    @property
    def position(self) -> int:
        """How many commands ran."""
        return len(self.results)

    def next_command(self) -> str | None:
        """The command to submit now, or None when the plan is over."""
        if self.done:
            return None
        return self.commands[len(self.results)]

    def record(self, ok: bool, errno: str | None, reply: str) -> None:
        """The answer to the command :meth:`next_command` returned."""
        command = self.next_command()
        if command is None:
            raise RuntimeError("the plan is over")
        self.results.append(StepResult(command, ok, errno, reply))
        if not ok:
            self.stopped = True

    def summary(self) -> str:
        """One line for a notification: how it ended."""
        total = len(self.commands)
        if self.stopped and self.results:
            last = self.results[-1]
            return (
                f"{self.title}: stopped at step {len(self.results)}/{total}: "
                f"{last.command} -> {last.errno or 'error'}"
            )
        if self.done:
            return f"{self.title}: done, {total} commands"
        return f"{self.title}: {len(self.results)}/{total}"
