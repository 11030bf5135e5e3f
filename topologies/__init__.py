"""The shipped topologies (YAML), installed as package data and read with importlib.resources."""
