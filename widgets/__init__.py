"""Textual widgets that draw xdptui's views; they never import the engine (``xdptui.sim``).

Pure projections derive the views from frames: ``project`` (devices, rings, CPUs, drops, and the
lazy ``Projection`` of every panel), ``project_paths``, ``crosswalk``, ``history``,
``project_bond``, ``project_lesson``, with ``explain`` and ``format``. The panels draw them:
``paths.PathsPanel``, ``sparklines.SparklinesPanel``, ``devices.DevicesTable``,
``counters.CountersPanel``, ``rings.RingsPanel``, ``cpus.CpuMap``, ``drops.DropsPanel``,
``bond.BondPanel``, ``lesson.LessonPanel`` / ``LessonBar``, ``events.EventLog``, with
``header.SimHeader`` and ``command_line.CommandLine``. The dense panels share the line-API base in
``lines``; ``messages`` holds what they post upwards.
"""
