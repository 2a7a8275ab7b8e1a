"""Checks that several readers share, written once: a finite number within bounds, a
repo-relative path, a JSON document against one of the committed schemas. Each failure is one
InputError naming the file and the dotted key."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import best_match

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
def _validator(name: str) -> Any:
    return _Validator(json.loads((SCHEMAS / name).read_text(encoding="utf-8")))


def check_schema(file: Path, data: Any, schema: str) -> Any:
    """`data` if it matches orchestrator/schemas/`schema`, else an error naming its first
    wrong key (a missing or unknown member by its own name)."""
    error = best_match(_validator(schema).iter_errors(data))
    if error is None:
        return data
    where: list[str | int] = list(error.absolute_path)
    found = error.instance
    if error.validator == "required":
        where.append(next(k for k in error.validator_value if k not in error.instance))
        expected, found = "present", None
    elif error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        found = next(k for k in error.instance if k not in known)
        where.append(found)
        expected = f"one of {known}"
    else:
        expected = f"{error.validator} {error.validator_value!r}"
    raise InputError.bad_value(file, key_path(where), expected, found)
