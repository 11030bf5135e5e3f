"""The lesson view: a topology's ``lessons:`` as a guided walkthrough.

A lesson is an ordered list of steps, each a text and the commands it runs (``Topology.lessons``:
``Lesson(title, steps: LessonStep(text, commands))``). The view shows one step: where it is in the
lesson, its text, and each command with how it went the last time the step ran. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.topology import Lesson


@dataclass(frozen=True)
class CommandRow:
    """A step's command: ``status`` pending | ok | failed (with the errno and reply)."""

    command: str
    status: str = "pending"
    errno: str | None = None
    reply: str = ""


@dataclass(frozen=True)
class LessonView:
    titles: tuple[str, ...]  # every lesson of the topology
    lesson: int  # index into titles, -1 without lessons
    step: int  # index of the shown step
    steps: int
    text: str
    commands: tuple[CommandRow, ...] = ()


Outcome = tuple[str, bool, str | None, str]
"""(command, ok, errno, reply) of one command a step ran."""


def project_lesson(
    lessons: tuple[Lesson, ...],
    lesson: int,
    step: int,
    outcomes: tuple[Outcome, ...] | None = None,
) -> LessonView:
    """Step ``step`` of lesson ``lesson``; ``outcomes``: how its commands went when it last ran
    (None: not run yet)."""
    titles = tuple(item.title for item in lessons)
    if not lessons:
        return LessonView(titles, -1, 0, 0, "")
    lesson = max(0, min(lesson, len(lessons) - 1))
    current = lessons[lesson]
    if not current.steps:
        return LessonView(titles, lesson, 0, 0, "")
    step = max(0, min(step, len(current.steps) - 1))
    shown = current.steps[step]
    done = {command: (ok, errno, reply) for command, ok, errno, reply in outcomes or ()}
    rows = []
    for command in shown.commands:
        if command in done:
            ok, errno, reply = done[command]
            rows.append(CommandRow(command, "ok" if ok else "failed", errno, reply))
        else:
            rows.append(CommandRow(command))
    return LessonView(titles, lesson, step, len(current.steps), shown.text, tuple(rows))
