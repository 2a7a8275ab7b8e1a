"""SCIP indexes (the Semantic Code Intelligence Protocol, a protobuf), decoded without a
protobuf library: both oracles (scip-typescript, rust-analyzer) write one, and their truth is
read from it. Only the fields a truth needs are kept; every other field is skipped by its wire
type, and anything that is not well-formed protobuf of this shape is refused, never guessed.

The index is hostile input (an oracle's stdout): every length is checked against what is left
of its message, every count and size against `orchestrator.untrusted.limits`, every path it
names is confined to the corpus (`orchestrator.oracle.paths`), and decoding never recurses
into a field it does not know, so its cost is linear in the bytes and its memory bounded.

Field numbers are those of scip.proto: Index{metadata=1, documents=2}, Metadata{tool_info=2,
project_root=3}, ToolInfo{name=1, version=2}, Document{relative_path=1, occurrences=2,
language=4}, Occurrence{range=1, symbol=2, symbol_roles=3}.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from orchestrator.oracle import paths
from orchestrator.untrusted import limits
from orchestrator.untrusted.errors import HostileInput
from orchestrator.untrusted.paths import relative

ROLE_DEFINITION = 1  # SymbolRole.Definition
WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32 = 0, 1, 2, 5


class ScipDecodeError(HostileInput):
    """The bytes are not a SCIP index within its bounds: where decoding stopped, and why."""

    def __init__(self, message: str, kind: str = "malformed", **data: Any) -> None:
        super().__init__(kind, message, **data)


@dataclass(frozen=True, slots=True)
class Occurrence:
    line: int  # 0-based, as SCIP writes it
    character: int
    symbol: str
    roles: int

    @property
    def is_definition(self) -> bool:
        return bool(self.roles & ROLE_DEFINITION)


@dataclass(frozen=True, slots=True)
class Document:
    path: str
    language: str
    occurrences: tuple[Occurrence, ...]


@dataclass(frozen=True)
class Index:
    tool_name: str
    tool_version: str
    project_root: str
    documents: tuple[Document, ...]


@dataclass
class _Budget:
    """What the index may still hold, and each symbol's one string (a symbol repeats in every
    occurrence of it: one copy keeps the memory of an index near its size)."""

    occurrences: int = field(default_factory=lambda: limits.SCIP_MAX_OCCURRENCES)
    symbols: dict[str, str] = field(default_factory=dict)

    def occurrence(self, path: str) -> None:
        self.occurrences -= 1
        if self.occurrences < 0:
            raise ScipDecodeError(f"the index holds more than {limits.SCIP_MAX_OCCURRENCES} "
                                  "occurrences", kind="too-large", document=path)


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(limits.SCIP_VARINT_MAX_BYTES):
        if pos >= end:
            raise ScipDecodeError(f"a varint runs past the end of its message at byte {pos}")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if value >> 64:
                raise ScipDecodeError(f"a varint ending at byte {pos} exceeds 64 bits")
            return value, pos
        shift += 7
    raise ScipDecodeError(f"a varint longer than {limits.SCIP_VARINT_MAX_BYTES} bytes ends at "
                          f"byte {pos}")


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message: an int for varints, (start, end)
    for length-delimited fields; fixed-width fields are skipped."""
    pos = start
    while pos < end:
        key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ScipDecodeError(f"field number 0 at byte {pos}")
        if wire == WIRE_VARINT:
            value, pos = _varint(data, pos, end)
            yield number, wire, value
        elif wire == WIRE_LEN:
            length, pos = _varint(data, pos, end)
            if length > end - pos:
                raise ScipDecodeError(f"field {number} at byte {pos} claims {length} bytes, "
                                      f"{end - pos} are left")
            yield number, wire, (pos, pos + length)
            pos += length
        elif wire in (WIRE_I64, WIRE_I32):
            pos += 8 if wire == WIRE_I64 else 4
            if pos > end:
                raise ScipDecodeError(f"a fixed-width field {number} runs past byte {end}")
        else:
            raise ScipDecodeError(f"wire type {wire} of field {number} at byte {pos} is not "
                                  "protobuf's")


def _text(data: bytes, span: tuple[int, int], what: str, cap: int | None = None) -> str:
    cap = limits.SCIP_TEXT_MAX_BYTES if cap is None else cap
    if span[1] - span[0] > cap:
        raise ScipDecodeError(f"{what} at byte {span[0]} is {span[1] - span[0]} bytes, more "
                              f"than {cap}", kind="too-large")
    try:
        return data[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScipDecodeError(f"{what} at byte {span[0]} is not UTF-8") from exc


def _range(data: bytes, span: tuple[int, int], rng: list[int], path: str) -> None:
    """Append a packed range's numbers to `rng`, stopping at the first one too many."""
    pos = span[0]
    while pos < span[1]:
        value, pos = _varint(data, pos, span[1])
        _range_number(value, rng, path)


def _range_number(value: int, rng: list[int], path: str) -> None:
    if len(rng) == limits.SCIP_RANGE_MAX_NUMBERS:
        raise ScipDecodeError(f"an occurrence's range holds more than "
                              f"{limits.SCIP_RANGE_MAX_NUMBERS} numbers", document=path)
    rng.append(value - (1 << 64) if value >= 1 << 63 else value)


def _occurrence(data: bytes, start: int, end: int, path: str, budget: _Budget) -> Occurrence:
    rng: list[int] = []
    symbol, roles = "", 0
    for number, wire, value in _fields(data, start, end):
        if number == 1 and wire == WIRE_LEN:
            _range(data, value, rng, path)
        elif number == 1 and wire == WIRE_VARINT:
            _range_number(value, rng, path)
        elif number == 2 and wire == WIRE_LEN:
            text = _text(data, value, "an occurrence's symbol")
            symbol = budget.symbols.setdefault(text, text)
        elif number == 3 and wire == WIRE_VARINT:
            roles = value
    if len(rng) not in (3, 4) or min(rng) < 0:
        raise ScipDecodeError(f"an occurrence's range is {rng}, not 3 or 4 non-negative "
                              "numbers", document=path)
    return Occurrence(line=rng[0], character=rng[1], symbol=symbol, roles=roles)


def _document(data: bytes, start: int, end: int, budget: _Budget) -> Document:
    path, language = "", ""
    spans = []
    for number, wire, value in _fields(data, start, end):
        if number == 1 and wire == WIRE_LEN:
            path = _text(data, value, "a document's path", limits.SCIP_PATH_MAX_BYTES)
        elif number == 2 and wire == WIRE_LEN:
            budget.occurrence(path or f"the document at byte {start}")
            spans.append(value)
        elif number == 4 and wire == WIRE_LEN:
            language = _text(data, value, "a document's language")
    if not path:
        raise ScipDecodeError(f"the document at byte {start} has no relative_path")
    try:
        relative(path)
    except HostileInput as exc:
        exc.data.setdefault("document", path)
        raise
    return Document(path=path, language=language, occurrences=tuple(
        _occurrence(data, s, e, path, budget) for s, e in spans))


def decode(data: bytes) -> Index:
    """The index, or ScipDecodeError naming what is wrong. An index must name its tool
    (metadata.tool_info.name): bytes that merely parse as protobuf are not an index."""
    if not data:
        raise ScipDecodeError("the index is empty (0 bytes)")
    tool_name = tool_version = project_root = ""
    documents: list[Document] = []
    seen: set[str] = set()
    budget = _Budget()
    for number, wire, value in _fields(data, 0, len(data)):
        if number == 1 and wire == WIRE_LEN:
            for n2, w2, v2 in _fields(data, *value):
                if n2 == 2 and w2 == WIRE_LEN:
                    for n3, w3, v3 in _fields(data, *v2):
                        if n3 == 1 and w3 == WIRE_LEN:
                            tool_name = _text(data, v3, "the tool's name")
                        elif n3 == 2 and w3 == WIRE_LEN:
                            tool_version = _text(data, v3, "the tool's version")
                elif n2 == 3 and w2 == WIRE_LEN:
                    project_root = _text(data, v2, "the project root",
                                         limits.SCIP_PATH_MAX_BYTES + len(paths.FILE_SCHEME))
        elif number == 2 and wire == WIRE_LEN:
            if len(documents) == limits.SCIP_MAX_DOCUMENTS:
                raise ScipDecodeError(f"the index holds more than {limits.SCIP_MAX_DOCUMENTS} "
                                      "documents", kind="too-large")
            start, stop = value
            doc = _document(data, start, stop, budget)
            if doc.path in seen:
                raise ScipDecodeError(f"two documents are named {doc.path!r}", document=doc.path)
            seen.add(doc.path)
            documents.append(doc)
    if not tool_name:
        raise ScipDecodeError("no metadata.tool_info.name: not a SCIP index")
    return Index(tool_name=tool_name, tool_version=tool_version, project_root=project_root,
                 documents=tuple(documents))


# -- symbols ------------------------------------------------------------------------------

# A descriptor's suffix says what it names: namespace /, type #, term ., method (...)., type
# parameter [...], parameter (...), meta :, macro !.
_DESCRIPTOR = re.compile(r"(`(?:[^`]|``)+`|[^/#.:!(\[`]+)(\([^)]*\)\.|[/#.:!]|)|\[([^\]]*)\]|"
                         r"\(([^)]*)\)")


def is_local(symbol: str) -> bool:
    return symbol.startswith("local ")


def descriptor_names(symbol: str) -> list[tuple[str, str]]:
    """(name, suffix) of each descriptor of a global symbol, outermost first; a type or
    value parameter has suffix '[' or '('."""
    parts = _split_symbol(symbol)
    if parts is None:
        return []
    out: list[tuple[str, str]] = []
    pos = 0
    text = parts
    while pos < len(text):
        m = _DESCRIPTOR.match(text, pos)
        if m is None or m.end() == pos:
            return out
        if m.group(3) is not None:
            out.append((m.group(3), "["))
        elif m.group(4) is not None:
            out.append((m.group(4), "("))
        else:
            name = m.group(1)
            if name.startswith("`"):
                name = name[1:-1].replace("``", "`")
            suffix = m.group(2)
            out.append((name, "()." if suffix.startswith("(") else suffix))
        pos = m.end()
    return out


def _split_symbol(symbol: str) -> str | None:
    """The descriptors of `scheme manager package version descriptors` (a doubled space is
    an escaped space inside the first four)."""
    fields, pos = 0, 0
    while fields < 4:
        nxt = symbol.find(" ", pos)
        while nxt != -1 and symbol.startswith("  ", nxt):
            nxt = symbol.find(" ", nxt + 2)
        if nxt == -1:
            return None
        pos, fields = nxt + 1, fields + 1
    return symbol[pos:]


def short_name(symbol: str) -> str | None:
    """The name a reader writes for the symbol: its last descriptor's, unless that is a
    parameter (method-scoped, never a task's symbol)."""
    names = descriptor_names(symbol)
    if not names or names[-1][1] in ("[", "("):
        return None
    return names[-1][0]


def rebased(index: Index, mount: str = "/corpus") -> Index:
    """The index with every document path relative to the corpus root: an indexer writes
    paths relative to its project root (metadata.project_root, a file URI), which must be the
    corpus mount or a directory under it by plain names (`orchestrator.oracle.paths`)."""
    prefix = paths.root_under(index.project_root, mount)
    if not prefix:
        return index
    return Index(tool_name=index.tool_name, tool_version=index.tool_version,
                 project_root=f"file://{mount}", documents=tuple(
                     Document(path=f"{prefix}/{d.path}", language=d.language,
                              occurrences=d.occurrences) for d in index.documents))
