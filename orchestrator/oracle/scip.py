"""SCIP indexes (the Semantic Code Intelligence Protocol, a protobuf), decoded without a
protobuf library: both oracles (scip-typescript, rust-analyzer) write one, and their truth is
read from it. Only the fields a truth needs are kept; every other field is skipped by its wire
type, and anything that is not well-formed protobuf of this shape is refused, never guessed.

Field numbers are those of scip.proto: Index{metadata=1, documents=2}, Metadata{tool_info=2,
project_root=3}, ToolInfo{name=1, version=2}, Document{relative_path=1, occurrences=2,
language=4}, Occurrence{range=1, symbol=2, symbol_roles=3}.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROLE_DEFINITION = 1  # SymbolRole.Definition
WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32 = 0, 1, 2, 5


class ScipDecodeError(ValueError):
    """The bytes are not a SCIP index: where decoding stopped, and why."""


@dataclass(frozen=True)
class Occurrence:
    line: int  # 0-based, as SCIP writes it
    character: int
    symbol: str
    roles: int

    @property
    def is_definition(self) -> bool:
        return bool(self.roles & ROLE_DEFINITION)


@dataclass(frozen=True)
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


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise ScipDecodeError(f"a varint runs past the end of its message at byte {pos}")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ScipDecodeError(f"a varint longer than 10 bytes ends at byte {pos}")


def _fields(data: bytes, start: int, end: int):
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
            if pos + length > end:
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
    if pos != end:
        raise ScipDecodeError(f"a message overruns its end at byte {end}")


def _text(data: bytes, span: tuple[int, int], what: str) -> str:
    try:
        return data[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScipDecodeError(f"{what} at byte {span[0]} is not UTF-8") from exc


def _packed(data: bytes, span: tuple[int, int]) -> list[int]:
    values, pos = [], span[0]
    while pos < span[1]:
        value, pos = _varint(data, pos, span[1])
        values.append(value - (1 << 64) if value >= 1 << 63 else value)
    return values


def _occurrence(data: bytes, start: int, end: int, path: str) -> Occurrence:
    rng: list[int] = []
    symbol, roles = "", 0
    for number, wire, value in _fields(data, start, end):
        if number == 1 and wire == WIRE_LEN:
            rng += _packed(data, value)
        elif number == 1 and wire == WIRE_VARINT:
            rng.append(value)
        elif number == 2 and wire == WIRE_LEN:
            symbol = _text(data, value, "an occurrence's symbol")
        elif number == 3 and wire == WIRE_VARINT:
            roles = value
    if len(rng) not in (3, 4) or min(rng) < 0:
        raise ScipDecodeError(f"{path}: an occurrence's range is {rng}, not 3 or 4 "
                              "non-negative numbers")
    return Occurrence(line=rng[0], character=rng[1], symbol=symbol, roles=roles)


def _document(data: bytes, start: int, end: int) -> Document:
    path, language = "", ""
    spans = []
    for number, wire, value in _fields(data, start, end):
        if number == 1 and wire == WIRE_LEN:
            path = _text(data, value, "a document's path")
        elif number == 2 and wire == WIRE_LEN:
            spans.append(value)
        elif number == 4 and wire == WIRE_LEN:
            language = _text(data, value, "a document's language")
    if not path or path.startswith("/") or ".." in path.split("/"):
        raise ScipDecodeError(f"a document's relative_path is {path!r}, not a relative path")
    return Document(path=path, language=language, occurrences=tuple(
        _occurrence(data, s, e, path) for s, e in spans))


def decode(data: bytes) -> Index:
    """The index, or ScipDecodeError naming what is wrong. An index must name its tool
    (metadata.tool_info.name): bytes that merely parse as protobuf are not an index."""
    if not data:
        raise ScipDecodeError("the index is empty (0 bytes)")
    tool_name = tool_version = project_root = ""
    documents = []
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
                    project_root = _text(data, v2, "the project root")
        elif number == 2 and wire == WIRE_LEN:
            documents.append(_document(data, *value))
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
    paths relative to its project root (metadata.project_root, a file URI), which is the
    corpus mount or a directory under it."""
    root = index.project_root.removeprefix("file://").rstrip("/")
    if root != mount and not root.startswith(mount + "/"):
        raise ScipDecodeError(f"the index's project root {index.project_root!r} is not the "
                              f"corpus ({mount}) or a directory under it")
    prefix = root[len(mount) + 1:]
    if not prefix:
        return index
    return Index(tool_name=index.tool_name, tool_version=index.tool_version,
                 project_root=f"file://{mount}", documents=tuple(
                     Document(path=f"{prefix}/{d.path}", language=d.language,
                              occurrences=d.occurrences) for d in index.documents))
