"""The headless XDP data-path engine."""
