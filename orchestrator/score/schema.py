"""scores.json read back: checked against its documented schema
(`orchestrator/schemas/scores.schema.json`) before anything renders from it, so a corrupt or
hand-edited file is named with the key that is wrong.

The checker covers the part of JSON Schema the scores schema uses: type, enum, const,
required, properties, additionalProperties, items, minimum and local $ref.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.settings import PACKAGE_DIR

SCHEMA_PATH = PACKAGE_DIR / "schemas" / "scores.schema.json"
_TYPES: dict[str, Any] = {"object": dict, "array": list, "string": str, "boolean": bool,
                          "null": type(None)}


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        schema = node
    return schema


def errors(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
           where: str = "") -> list[str]:
    """Every place `value` breaks `schema`, as 'key.path: what'."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    at = where or "(top level)"
    kinds = schema.get("type")
    if kinds is not None:
        allowed = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is(value, k) for k in allowed):
            return [f"{at}: expected {' or '.join(allowed)}, found {type(value).__name__}"]
    if "const" in schema and value != schema["const"]:
        return [f"{at}: expected {schema['const']!r}, found {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{at}: expected one of {schema['enum']}, found {value!r}"]
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        return [f"{at}: expected at least {schema['minimum']}, found {value!r}"]
    out: list[str] = []
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                out.append(f"{where + '.' if where else ''}{key}: missing")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            path = f"{where}.{key}" if where else key
            if key in props:
                out += errors(item, props[key], root, path)
            elif extra is False:
                out.append(f"{path}: not in the schema")
            elif isinstance(extra, dict):
                out += errors(item, extra, root, path)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += errors(item, schema["items"], root, f"{where}[{i}]")
    return out


def load_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def load_scores(path: Path) -> dict[str, Any]:
    """A scores.json, checked; InputError naming the file and the first wrong key."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path} is missing", fix="score the run first: sandbench score "
                         f"{Path(path).parent}", file=str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: does not parse: {exc}", file=str(path)) from exc
    found = errors(data, load_schema())
    if found:
        raise InputError(f"{path}: does not match the scores schema: {found[0]}",
                         why="; ".join(found[1:6]) or None,
                         fix="score the run again: sandbench score RUN_DIR --update",
                         file=str(path), key=found[0].split(":")[0])
    return data
