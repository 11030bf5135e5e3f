"""Screens of the xdptui app: they lay out the widgets and hand them views."""
