"""The part of JSON Schema that orchestrator/schemas/exec-record.schema.json uses (type,
required, properties, additionalProperties, const, enum, pattern, items, $ref into $defs):
enough to confirm that a generated record.json really breaks the project's own schema.
jsonschema is not a project dependency, hence this."""

from __future__ import annotations

import re
from typing import Any

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def errors(schema: dict[str, Any], value: Any, root: dict[str, Any] | None = None,
           where: str = "") -> list[str]:
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return errors(root["$defs"][name], value, root, where)
    out: list[str] = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            return [f"{where or '(top level)'}: not {types}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: not one of {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append(f"{where}: does not match {schema['pattern']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                out.append(f"{where}.{key}: missing".lstrip("."))
        for key, item in value.items():
            if key in props:
                out += errors(props[key], item, root, f"{where}.{key}".lstrip("."))
            elif schema.get("additionalProperties") is False:
                out.append(f"{where}.{key}: not allowed".lstrip("."))
            elif isinstance(schema.get("additionalProperties"), dict):
                out += errors(schema["additionalProperties"], item, root,
                              f"{where}.{key}".lstrip("."))
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += errors(schema["items"], item, root, f"{where}[{i}]")
    return out
