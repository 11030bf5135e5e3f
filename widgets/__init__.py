"""Textual widgets that draw xdptui's views; they never import the engine (``xdptui.sim``).

``project`` derives the views from frames; ``header.SimHeader``, ``devices.DevicesTable``,
``rings.RingsPanel``, ``cpus.CpuMap``, ``drops.DropsPanel``, ``events.EventLog`` and
``command_line.CommandLine`` draw them. The dense panels share the line-API base in ``lines``.
"""
