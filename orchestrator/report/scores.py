"""scores.json read back: checked against its documented schema
(`orchestrator/schemas/scores.schema.json`, with jsonschema) before anything renders from it,
so a corrupt or hand-edited file is named with the key that is wrong.

Every problem is listed in document order (a value before what it holds, members in the
file's order), one per place: `cells[0].verdict: expected one of [...], found 'great'`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import ValidationError

from orchestrator.errors import InputError
from orchestrator.sandbox.shared_checks import schema_errors

SCHEMA_FILE = "scores.schema.json"
# A value's own checks, in the order they are reported; only the first that fails counts.
_VALUE_CHECKS = ("type", "const", "enum", "minimum")
_Order = tuple[tuple[int, int], ...]


def load_scores(path: Path) -> dict[str, Any]:
    """A scores.json, checked; InputError naming the file and the first wrong key."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path} is missing", fix="score the run first: sandbench score "
                         f"{Path(path).parent}", file=str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: does not parse: {exc}", file=str(path)) from exc
    found = problems(data)
    if found:
        raise InputError(f"{path}: does not match the scores schema: {found[0]}",
                         why="; ".join(found[1:6]) or None,
                         fix="score the run again: sandbench score RUN_DIR --update",
                         file=str(path), key=found[0].split(":")[0])
    assert isinstance(data, dict)  # the schema's top level is an object
    return data


def problems(data: Any) -> list[str]:
    """Every place `data` breaks the scores schema, as 'key.path: what', in document order."""
    own: dict[tuple[Any, ...], tuple[int, _Order, str]] = {}
    rest: list[tuple[_Order, str]] = []
    for error in schema_errors(data, SCHEMA_FILE):
        where = tuple(error.absolute_path)
        order = _order(data, where)
        if error.validator in _VALUE_CHECKS:
            rank = _VALUE_CHECKS.index(str(error.validator))
            if where not in own or rank < own[where][0]:
                own[where] = (rank, (*order, (0, rank)), _value_problem(error, where))
        elif error.validator == "required":
            required, instance = error.validator_value, error.instance
            assert isinstance(required, list) and isinstance(instance, dict)  # what it checks
            missing = [k for k in required if k not in instance]
            rest += [((*order, (1, i)), f"{_dotted((*where, key))}: missing")
                     for i, key in enumerate(missing)]
        elif error.validator == "additionalProperties":
            schema, instance = error.schema, error.instance
            assert isinstance(schema, dict) and isinstance(instance, dict)  # what it checks
            known = schema.get("properties", {})
            rest += [(_order(data, (*where, key)), f"{_dotted((*where, key))}: not in the schema")
                     for key in instance if key not in known]
        else:
            rest.append((order, f"{_dotted(where) or '(top level)'}: {error.message}"))
    listed = sorted([*((o, text) for _, o, text in own.values()), *set(rest)])
    return [text for _, text in listed]


def _value_problem(error: ValidationError, where: tuple[Any, ...]) -> str:
    at, value, want = _dotted(where) or "(top level)", error.instance, error.validator_value
    if error.validator == "type":
        kinds = want if isinstance(want, list) else [want]
        return f"{at}: expected {' or '.join(map(str, kinds))}, found {type(value).__name__}"
    if error.validator == "const":
        return f"{at}: expected {want!r}, found {value!r}"
    if error.validator == "enum":
        return f"{at}: expected one of {want}, found {value!r}"
    return f"{at}: expected at least {want}, found {value!r}"


def _order(data: Any, where: tuple[Any, ...]) -> _Order:
    """Where a value is in the document: each step's position among its siblings."""
    steps = []
    for part in where:
        steps.append((2, list(data).index(part) if isinstance(data, dict) else part))
        data = data[part]
    return tuple(steps)


def _dotted(where: tuple[Any, ...]) -> str:
    """`cells[0].verdict`: members joined by dots, items by their index in brackets."""
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out
