"""Checks that several readers share, written once: a finite number within bounds, a
repo-relative path, a JSON document against one of the committed schemas. Each failure is one
InputError naming the file and the dotted key."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from orchestrator.errors import InputError
from orchestrator.settings import PACKAGE_DIR

SCHEMAS = PACKAGE_DIR / "schemas"


def key_path(parts: Iterable[str | int]) -> str:
    """A key's place in a document as one dotted name: `images.rg.image_id`, `flags.0`."""
    return ".".join(str(p) for p in parts) or "(top level)"


def _is_number(value: Any, integer: bool = False) -> bool:
    """int (or float unless `integer`), never bool, never nan or inf."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return not integer and isinstance(value, float) and math.isfinite(value)


def number(file: object, key: str, value: Any, expected: str, *, integer: bool = False,
           minimum: float = -math.inf, maximum: float = math.inf,
           exclusive_minimum: bool = False) -> Any:
    """`value` if it is a finite number (an int if `integer`) within the bounds."""
    if not (_is_number(value, integer) and value <= maximum
            and (value > minimum if exclusive_minimum else value >= minimum)):
        raise InputError.bad_value(file, key, expected, value)
    return value


def repo_path(file: object, key: str, value: Any) -> str:
    """A path inside the corpus: relative, normalised, no `.` or `..` part, so that it can
    name nothing outside the checkout it is joined to."""
    if not isinstance(value, str) or not value or any(
            part in ("", ".", "..") for part in value.split("/")):
        raise InputError.bad_value(file, key, "a repo-relative path (no '..', not absolute, "
                                   "normalised)", value)
    return value


# JSON Schema's integer admits 1.0 and its number admits nan: the readers admit neither.
_STRICT_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many({
    "integer": lambda _, v: _is_number(v, integer=True),
    "number": lambda _, v: _is_number(v)})
_Validator = validators.extend(Draft202012Validator, type_checker=_STRICT_TYPES)


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """orchestrator/schemas/`name`, parsed (once)."""
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return schema


@functools.cache
def _validator(name: str) -> Any:
    return _Validator(load_schema(name))


def schema_errors(data: Any, schema: str) -> Iterator[ValidationError]:
    """Every way `data` breaks orchestrator/schemas/`schema` (the strict numbers above)."""
    errors: Iterator[ValidationError] = _validator(schema).iter_errors(data)
    return errors


@dataclass(frozen=True)
class SchemaProblem:
    """The first wrong key of a document, in the words of the reader's messages."""

    where: tuple[str | int, ...]
    expected: str
    found: Any

    @property
    def key(self) -> str:
        return key_path(self.where)


def schema_problem(data: Any, schema: str) -> SchemaProblem | None:
    """The best-matching error of `data` against `schema`, or None if it matches.

    A schema words its own messages with annotations (JSON Schema ignores `x-` keywords):
    `x-expected` on a value is what it must be (also when it is missing, unless `x-missing`
    says otherwise); `x-unknown` on an object is what a key it does not know should have been
    (by default: one of its properties); `x-whole` on an object or array reports a missing or
    unknown key, or a wrong item or member its properties do not name, as the whole value
    being wrong (its x-expected, found the whole value).
    Without annotations: `present` for a missing key, the keyword and its value otherwise.
    """
    error = best_match(schema_errors(data, schema))
    if error is None:
        return None
    where = tuple(error.absolute_path)
    node = error.schema
    root = load_schema(schema)
    holder = _node_at(root, where[:-1]) if where else {}
    if holder.get("x-whole") and where[-1] not in holder.get("properties", {}):
        return SchemaProblem(where[:-1], holder["x-expected"], _value_at(data, where[:-1]))
    if error.validator in ("required", "additionalProperties") and node.get("x-whole"):
        return SchemaProblem(where, node["x-expected"], error.instance)
    if error.validator == "required":
        key = next(k for k in error.validator_value if k not in error.instance)
        child = _resolve(root, node.get("properties", {}).get(key, {}))
        return SchemaProblem((*where, key), child.get("x-missing", child.get(
            "x-expected", "present")), None)
    if error.validator == "additionalProperties":
        known = sorted(node.get("properties", {}))
        found = next(k for k in error.instance if k not in known)
        return SchemaProblem((*where, found), node.get("x-unknown", f"one of {known}"), found)
    return SchemaProblem(where, node.get(
        "x-expected", f"{error.validator} {error.validator_value!r}"), error.instance)


def _resolve(root: dict[str, Any], node: Any) -> dict[str, Any]:
    """A subschema with its local `$ref` (`#/$defs/name`) followed."""
    while isinstance(node, dict) and "$ref" in node:
        node = root["$defs"][node["$ref"].removeprefix("#/$defs/")]
    return node if isinstance(node, dict) else {}


def _node_at(root: dict[str, Any], where: tuple[str | int, ...]) -> dict[str, Any]:
    """The subschema that describes the value at `where` (through properties,
    patternProperties, additionalProperties and items)."""
    node = _resolve(root, root)
    for part in where:
        if isinstance(part, int):
            node = _resolve(root, node.get("items", {}))
            continue
        patterns = [s for p, s in node.get("patternProperties", {}).items()
                    if re.search(p, part)]
        properties = node.get("properties", {})
        node = _resolve(root, properties[part] if part in properties else next(
            iter(patterns), node.get("additionalProperties", {})))
    return node


def _value_at(data: Any, where: tuple[str | int, ...]) -> Any:
    for part in where:
        data = data[part]
    return data


def check_schema(file: Path, data: Any, schema: str) -> Any:
    """`data` if it matches orchestrator/schemas/`schema`, else an error naming its first
    wrong key (a missing or unknown member by its own name)."""
    problem = schema_problem(data, schema)
    if problem is None:
        return data
    raise InputError.bad_value(file, problem.key, problem.expected, problem.found)
