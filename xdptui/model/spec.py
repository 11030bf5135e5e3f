"""A small declarative vocabulary for the file formats, and its JSON Schema (draft 2020-12).

A format is declared once: the topology as :class:`Obj`/:class:`Field` trees
(``xdptui.model.topology_spec``, whose key sets and enums the loader reads), the report as
``TypedDict`` classes (``xdptui.model.report_spec``, which mypy holds ``report.py`` to).
:func:`json_schema` and :func:`typed_dict_schema` turn either into the schema ``xdptui schema``
prints.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, Required, TypeAlias, Union

JSONSchema: TypeAlias = dict[str, Any]
DRAFT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Str:
    """A string, optionally matching ``pattern`` (ECMA-262, as JSON Schema uses)."""

    pattern: str | None = None
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Int:
    minimum: int | None = None
    maximum: int | None = None


@dataclass(frozen=True)
class Num:
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class Bool:
    pass


@dataclass(frozen=True)
class Enum:
    """One of ``values`` (``descriptions``: one each, for editors); ``numbered`` also takes the
    index (0..n-1), as bonding options do."""

    values: tuple[str, ...]
    numbered: bool = False
    descriptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class IntEnum:
    values: tuple[int, ...]


@dataclass(frozen=True)
class ListOf:
    """A list; ``nullable`` when an empty YAML value (null) means the empty list."""

    item: Shape
    min_items: int = 0
    max_items: int | None = None
    nullable: bool = True


@dataclass(frozen=True)
class MapOf:
    """A mapping of user-chosen names (matching ``key_pattern``) to values of one shape."""

    value: Shape
    key_pattern: str | None = None
    key_description: str = ""
    min_items: int = 0
    nullable: bool = True


@dataclass(frozen=True)
class AnyOf:
    options: tuple[Shape, ...]


@dataclass(frozen=True)
class Field:
    """One key of a mapping: its shape, the text editors show, and whether it must be given."""

    name: str
    shape: Shape
    description: str
    required: bool = False
    default: object = None


@dataclass(frozen=True)
class Obj:
    """A mapping with a fixed set of keys; ``closed``: unknown keys are errors.
    ``exactly_one``: keys of which exactly one must be given."""

    fields: tuple[Field, ...]
    description: str = ""
    closed: bool = True
    exactly_one: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


@dataclass(frozen=True)
class Tagged:
    """A mapping whose ``tag`` key picks a variant: ``common`` keys plus the variant's own."""

    tag: str
    tag_description: str
    common: tuple[Field, ...]
    variants: Mapping[str, Obj]

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(self.variants)

    def keys(self, tag: str) -> tuple[str, ...]:
        """Every key a ``tag`` variant may have: the tag, the common keys, its own."""
        return (self.tag, *(f.name for f in self.common), *self.variants[tag].keys)

    @property
    def all_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k for t in self.tags for k in self.keys(t)))


Shape: TypeAlias = Str | Int | Num | Bool | Enum | IntEnum | ListOf | MapOf | AnyOf | Obj | Tagged


def json_schema(root: Obj, *, schema_id: str, title: str) -> JSONSchema:
    """The draft 2020-12 schema of a declared format; variants of :class:`Tagged` go to $defs."""
    defs: dict[str, JSONSchema] = {}
    body = _shape(root, defs)
    head: JSONSchema = {"$schema": DRAFT, "$id": schema_id, "title": title}
    return {**head, **body, **({"$defs": defs} if defs else {})}


def _nullable(schema: JSONSchema, nullable: bool) -> JSONSchema:
    if nullable:
        schema["type"] = [schema["type"], "null"]
    return schema


def _shape(shape: Shape, defs: dict[str, JSONSchema]) -> JSONSchema:
    if isinstance(shape, Str):
        out: JSONSchema = {"type": "string"}
        if shape.pattern is not None:
            out["pattern"] = shape.pattern
        if shape.examples:
            out["examples"] = list(shape.examples)
        return out
    if isinstance(shape, Int | Num):
        out = {"type": "integer" if isinstance(shape, Int) else "number"}
        if shape.minimum is not None:
            out["minimum"] = shape.minimum
        if shape.maximum is not None:
            out["maximum"] = shape.maximum
        return out
    if isinstance(shape, Bool):
        return {"type": "boolean"}
    if isinstance(shape, Enum):
        names: JSONSchema = {"enum": list(shape.values)}
        if shape.descriptions:
            consts = zip(shape.values, shape.descriptions, strict=True)
            names = {"anyOf": [{"const": v, "description": d} for v, d in consts]}
        if not shape.numbered:
            return names
        number = {"type": "integer", "minimum": 0, "maximum": len(shape.values) - 1}
        return {"anyOf": [names, number]}
    if isinstance(shape, IntEnum):
        return {"enum": list(shape.values)}
    if isinstance(shape, ListOf):
        out = {"type": "array", "items": _shape(shape.item, defs)}
        if shape.min_items:
            out["minItems"] = shape.min_items
        if shape.max_items is not None:
            out["maxItems"] = shape.max_items
        return _nullable(out, shape.nullable)
    if isinstance(shape, MapOf):
        out = {"type": "object", "additionalProperties": _shape(shape.value, defs)}
        if shape.key_pattern is not None:
            out["propertyNames"] = {"pattern": shape.key_pattern}
            if shape.key_description:
                out["propertyNames"]["description"] = shape.key_description
        if shape.min_items:
            out["minProperties"] = shape.min_items
        return _nullable(out, shape.nullable)
    if isinstance(shape, AnyOf):
        return {"anyOf": [_shape(s, defs) for s in shape.options]}
    if isinstance(shape, Obj):
        return _object(shape.fields, shape, defs)
    return _tagged(shape, defs)


def _property(f: Field, defs: dict[str, JSONSchema]) -> JSONSchema:
    schema = _shape(f.shape, defs)
    if "$ref" in schema:  # keep the $ref alone; the description goes beside it in an allOf
        schema = {"allOf": [schema]}
    schema["description"] = f.description
    if f.default is not None:
        schema["default"] = f.default
    return schema


def _object(fields: tuple[Field, ...], obj: Obj, defs: dict[str, JSONSchema]) -> JSONSchema:
    out: JSONSchema = {"type": "object"}
    if obj.description:
        out["description"] = obj.description
    out["properties"] = {f.name: _property(f, defs) for f in fields}
    required = [f.name for f in fields if f.required]
    if required:
        out["required"] = required
    if obj.closed:
        out["additionalProperties"] = False
    if obj.exactly_one:
        out["oneOf"] = [{"required": [k]} for k in obj.exactly_one]
    return out


def _tagged(shape: Tagged, defs: dict[str, JSONSchema]) -> JSONSchema:
    tag_field = Field(shape.tag, Enum(shape.tags), shape.tag_description, required=True)
    branches: list[JSONSchema] = []
    for tag, variant in shape.variants.items():
        const = Field(shape.tag, Enum((tag,)), shape.tag_description, required=True)
        fields = (const, *shape.common, *variant.fields)
        defs[tag] = _object(fields, variant, defs)
        branches.append(
            {
                "if": {"properties": {shape.tag: {"const": tag}}, "required": [shape.tag]},
                "then": {"$ref": f"#/$defs/{tag}"},
            }
        )
    return {
        "type": "object",
        "properties": {shape.tag: _property(tag_field, defs)},
        "required": [shape.tag],
        "allOf": branches,
    }


# --- TypedDict declarations --------------------------------------------------------------


@dataclass(frozen=True)
class Keys:
    """``Annotated`` metadata for a ``dict[str, int]`` whose keys are known names:
    ``required`` always present, ``optional`` only on some values."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choices:
    """``Annotated`` metadata for a ``str`` that is one of ``values``."""

    values: tuple[str, ...]


def typed_dict_schema(root: type, *, schema_id: str, title: str) -> JSONSchema:
    """The draft 2020-12 schema of a ``TypedDict`` tree: every TypedDict is a closed object
    (its required keys from ``total``/``NotRequired``), ``Annotated[T, "text"]`` gives a
    description, :class:`Choices` an enum and :class:`Keys` names a dict's keys."""
    head: JSONSchema = {"$schema": DRAFT, "$id": schema_id, "title": title}
    return {**head, **_annotation(root)}


def _is_typed_dict(tp: object) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def _annotation(tp: Any) -> JSONSchema:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        inner = _annotation(args[0])
        for meta in args[1:]:
            if isinstance(meta, str):
                inner["description"] = meta
            elif isinstance(meta, Choices):
                inner["enum"] = list(meta.values)
            elif isinstance(meta, Keys):
                value = inner.get("additionalProperties", {})
                inner["properties"] = {k: value for k in (*meta.required, *meta.optional)}
                inner["required"] = list(meta.required)
                inner["additionalProperties"] = False
        return inner
    if origin in (Required, NotRequired):
        return _annotation(args[0])
    if _is_typed_dict(tp):
        return _typed_dict(tp)
    if tp is type(None):
        return {"type": "null"}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if tp in simple:
        return {"type": simple[tp]}
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin in (Union, types.UnionType):
        options = [_annotation(a) for a in args]
        if all(set(o) == {"type"} and isinstance(o["type"], str) for o in options):
            return {"type": [o["type"] for o in options]}
        return {"anyOf": options}
    if origin is list:
        return {"type": "array", "items": _annotation(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _annotation(args[1])}
    raise TypeError(f"no JSON Schema for {tp!r}")


def _typed_dict(td: type) -> JSONSchema:
    hints = typing.get_type_hints(td, include_extras=True)
    out: JSONSchema = {"type": "object"}
    doc = (td.__doc__ or "").strip()
    if doc and not doc.startswith(f"{td.__name__}("):  # not the functional form's default
        out["description"] = " ".join(doc.split())
    out["properties"] = {k: _annotation(v) for k, v in hints.items()}
    required_keys: frozenset[str] = getattr(td, "__required_keys__", frozenset())
    out["required"] = [k for k in hints if k in required_keys]
    out["additionalProperties"] = False
    return out
