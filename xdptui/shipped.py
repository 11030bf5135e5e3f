"""The topologies shipped inside the package (``xdptui.topologies``): their names, a one-line
description of each, and a bare name (``dual_port``) resolved to the shipped file -- what a
``pipx install xdptui`` user has without a checkout.

A real file always wins: a bare name is looked up here only when no such file exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

DEFAULT = "dual_port"
SUFFIXES = (".yaml", ".yml")
# the end of a description's first sentence: a period after a word, a digit or a bracket
_SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9)\]])\.(?:\s|$)")


@dataclass(frozen=True)
class Shipped:
    """One shipped topology: its bare name, its ``name:`` and its description's first
    sentence."""

    stem: str
    title: str
    summary: str


class UnknownTopology(Exception):
    """A bare name that is neither a file nor a shipped topology."""


def folder() -> Path:
    """Where the shipped topologies are: plain files inside the package (never zipped), so the
    path stays valid after ``as_file``."""
    with as_file(files("xdptui.topologies")) as path:
        return Path(path)


def examples_folder() -> Path:
    """The examples shipped with the package: ``bpf/`` (C sources, their objects, the
    Makefile) and ``drop_dns.py``: beside the topologies, in the installed package
    (``xdptui/examples``) as in a checkout (``examples/``)."""
    return folder().parent / "examples"


def names() -> list[str]:
    """The shipped topologies' bare names, sorted."""
    return sorted(p.stem for p in folder().glob("*.yaml"))


def path_of(stem: str) -> str:
    return str(folder() / f"{stem}.yaml")


def default_path() -> str:
    """The shipped ``dual_port.yaml``, opened when no file is named."""
    return path_of(DEFAULT)


def is_bare(arg: str) -> bool:
    """A name without a directory part: what a user types for a shipped topology."""
    return "/" not in arg and "\\" not in arg and arg not in (".", "..")


def resolve(arg: str) -> str:
    """``arg`` itself when a file (or anything else) exists there or it names a path; the
    shipped file for a bare name (``dual_port`` or ``dual_port.yaml``) that does not exist here.
    Raises :class:`UnknownTopology` for a bare name without a suffix that is not shipped (a
    name with ``.yaml`` is left to the loader, whose "can't read file" says the rest)."""
    if Path(arg).exists() or not is_bare(arg):
        return arg
    stem = next((arg[: -len(s)] for s in SUFFIXES if arg.endswith(s)), arg)
    if stem in names():
        return path_of(stem)
    if stem != arg:
        return arg
    raise UnknownTopology(
        f"no file {arg!r} here and no shipped topology of that name; the shipped ones are: "
        + ", ".join(names())
        + " (xdptui topologies describes them)"
    )


def catalog() -> list[Shipped]:
    """Every shipped topology with its ``name:`` and its description's first sentence, read
    as plain YAML (no validation, no programs loaded: listing is instant)."""
    import yaml

    out = []
    for stem in names():
        doc = yaml.safe_load(Path(path_of(stem)).read_text(encoding="utf-8"))
        title = str(doc.get("name", stem)) if isinstance(doc, dict) else stem
        text = " ".join(str(doc.get("description", "")).split()) if isinstance(doc, dict) else ""
        end = _SENTENCE_END.search(text)
        out.append(Shipped(stem, title, text[: end.start() + 1] if end else text))
    return out
