"""Scripted command sequences: a topology's lessons, and the legal-sequence plans.

:class:`Guide` knows where the lesson is (which lesson and step, what the step's commands
answered), starts a step in the engine (its ``at: step`` timeline entries run then), goes back to
when a step started, and runs a plan one command per tick. Every command goes through the
:class:`~xdptui.app_console.Console`, so the event log shows it as if typed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App

from xdptui.app_console import Console
from xdptui.app_stage import Stage
from xdptui.model.topology import Lesson
from xdptui.plans import PlanRunner
from xdptui.screens.dialogs import PickScreen
from xdptui.screens.main import MainScreen
from xdptui.widgets.project_bond import PlanRow
from xdptui.widgets.project_lesson import Outcome

ClockSetter = Callable[[int | None, bool], None]
"""Sets the app's clock: a speed (None: unchanged) and whether to pause."""


class Guide:
    """Lessons and plans.

    Args:
        stage: the simulation on screen.
        console: where the steps' and plans' commands go.
        app: the Textual app (notifications, the lesson picker).
        screen: the dashboard (its tabs and lesson bar).
        lessons: the topology's lessons.
        set_clock: the app's clock, which a step's ``speed:`` and ``pause:`` set.
    """

    def __init__(
        self,
        stage: Stage,
        console: Console,
        app: App[Any],
        screen: MainScreen,
        lessons: tuple[Lesson, ...],
        set_clock: ClockSetter,
    ) -> None:
        self.stage = stage
        self.console = console
        self.app = app
        self.screen = screen
        self.lessons = lessons
        self._set_clock = set_clock
        self.lesson = 0
        self.step = 0
        self.outcomes: dict[tuple[int, int], tuple[Outcome, ...]] = {}
        self.plan: PlanRunner | None = None
        """The legal-sequence plan being run (or the last one), one command per tick."""

    # --- lessons -----------------------------------------------------------------------------

    def position(self) -> tuple[int, int]:
        """(lesson, step) on at the newest frame: the engine's (a rewind before a step's start
        shows the step before it), else the one last started."""
        frame = self.stage.frame
        if frame is not None and frame.lesson is not None:
            return frame.lesson.lesson, frame.lesson.step
        return self.lesson, self.step

    def step_outcomes(self) -> tuple[Outcome, ...] | None:
        """What the shown step's commands answered when ``r`` ran them (None: not run)."""
        return self.outcomes.get(self.position())

    def begin(self, lesson: int, step: int, *, settings: bool = True) -> None:
        """Start ``step`` of ``lesson`` in the engine (its ``at: step`` timeline entries run)
        and, with ``settings``, take the step's clock speed and pause."""
        steps = self.lessons[lesson].steps
        self.lesson, self.step = lesson, step
        if not steps:
            return
        self.stage.sim.start_step(lesson, step)
        if settings:
            self._step_settings(lesson, step)
        if self.app.is_running:
            self.stage.refresh()

    def _step_settings(self, lesson: int, step: int) -> None:
        shown = self.lessons[lesson].steps[step]
        self._set_clock(shown.speed_ns_per_s, shown.pause)

    def restart(self) -> None:
        """t = 0 again: the plan and the steps' answers are forgotten, the first step starts."""
        self.plan = None
        self.outcomes.clear()
        if self.lessons:
            self.begin(self.lesson, 0)

    def move(self, delta: int) -> None:
        """``n`` starts the next step now; ``p`` goes back to when the previous step started
        (exactly that state, the later story forgotten), paused."""
        if not self.lessons:
            return
        lesson, step = self.position()
        steps = len(self.lessons[lesson].steps)
        target = max(0, min(steps - 1, step + delta))
        if target == step:
            return
        if delta < 0 and self.stage.sim.back_to_step(lesson, target):
            self.lesson, self.step = lesson, target
            shown = self.lessons[lesson].steps[target]
            self._set_clock(shown.speed_ns_per_s, True)
            self.stage.time_moved()
            return
        self.begin(lesson, target)

    def run_step(self) -> None:
        """Submit the shown step's commands, in order, as if typed (origin ``lesson``)."""
        if not self.lessons:
            return
        lesson, step = self.position()
        if not self.lessons[lesson].steps:
            return
        shown = self.lessons[lesson].steps[step]
        outcomes: list[Outcome] = []
        for command in shown.commands:
            result = self.console.submit(command, origin="lesson")
            outcomes.append((command, result.ok, result.errno, result.reply))
        self.outcomes[(lesson, step)] = tuple(outcomes)
        self.stage.show_views()

    def pick(self) -> None:
        """``L``: pick a lesson; its first step starts and the Lesson tab opens."""
        if not self.lessons:
            return

        def picked(key: object) -> None:
            if isinstance(key, str) and key.isdigit():
                self.begin(int(key), 0)
                self.screen.show_tab("lesson")
                self.stage.show_views()

        items = [
            (str(i), f"{lesson.title}  ({len(lesson.steps)} steps)")
            for i, lesson in enumerate(self.lessons)
        ]
        self.app.push_screen(PickScreen("Which lesson?", items), picked)

    # --- plans -------------------------------------------------------------------------------

    def start_plan(self, title: str, commands: tuple[str, ...]) -> None:
        """Run ``commands`` one per tick (one per ``.`` while paused)."""
        self.plan = PlanRunner(title, commands)
        self.screen.show_tab("bond")
        if self.stage.paused:
            self.app.notify(
                f"{title}: paused, press . to run one command or space to run", timeout=10
            )
        self.stage.show_views()

    def run_plan_step(self) -> None:
        """The plan's next command, if one is left."""
        plan = self.plan
        if plan is None or plan.done:
            return
        command = plan.next_command()
        assert command is not None
        result = self.console.submit(command, origin="plan")
        plan.record(result.ok, result.errno, result.reply)
        if plan.done:
            severity = "warning" if plan.stopped else "information"
            self.app.notify(plan.summary(), severity=severity, timeout=10)

    def plan_title(self) -> str:
        return self.plan.summary() if self.plan is not None else ""

    def plan_rows(self) -> tuple[PlanRow, ...]:
        """The plan's commands: done, failed (with the reply), next, pending."""
        plan = self.plan
        if plan is None:
            return ()
        rows: list[PlanRow] = []
        for i, command in enumerate(plan.commands):
            if i < len(plan.results):
                step = plan.results[i]
                rows.append(
                    PlanRow(
                        command,
                        "done" if step.ok else "failed",
                        step.reply if not step.ok else "",
                    )
                )
            elif i == len(plan.results) and not plan.done:
                rows.append(PlanRow(command, "next"))
            else:
                rows.append(PlanRow(command, "pending"))
        return tuple(rows)
