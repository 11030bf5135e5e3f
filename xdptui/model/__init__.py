"""Pure value types shared by the headless engine and the UI (no simpy, textual or rich)."""
