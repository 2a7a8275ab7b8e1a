"""Every parser and decoder of what a tool wrote runs in time linear in its input: for each
family of pathological inputs (and an honest one of the same size), doubling the input may
at most multiply the time by GROWTH. A quadratic pattern multiplies it by 4, and at the
64 MiB stream cap costs hours; this is the test that finds one.

Each case is timed at `size` and `2 * size` (the median of REPEATS runs, interleaved, so a
neighbour's load on the shared machine falls on both sizes alike); a case whose small size
runs under MIN_SECONDS is doubled first (up to MAX_SIZE), so the comparison is never of timer
noise, and a slow one starts smaller (256 KiB), so the file runs in well under a minute. A case
that fails is measured again with more runs before it counts. The largest input tried per
parser or decoder is shown in the terminal summary (`-rA` or `-s`) and as a junit property.
"""

from __future__ import annotations

import gc
import io
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from orchestrator import parsers
from orchestrator.sandbox import execproto, mcp
from orchestrator.score.shapes import Shape, parse_output
from orchestrator.parsers.aider_repomap import BANNERS
from orchestrator.oracle import rust_sites, scip
from orchestrator.score import environment, published
from orchestrator.untrusted import decode, strings, text
from orchestrator.untrusted.errors import HostileInput
from tests.unit.test_oracle_truth import _varint, document, index, occurrence

AIDER_BANNER = BANNERS[0].encode() + b"\n"
GROWTH = 2.5
REPEATS = 3
RETRY_REPEATS = 5
MIN_SECONDS = 0.025
MIB = 1 << 20
MAX_SIZE = 4 * MIB  # a case still under MIN_SECONDS here is compared at this size
# Timer and allocator noise on a run of a few milliseconds (a fresh mapping's page faults
# fall on one size and not the other): far below what a quadratic case adds.
SLACK_SECONDS = 0.005
LARGEST: dict[str, int] = {}


@dataclass(frozen=True)
class Case:
    target: str    # the parser or decoder
    family: str    # the kind of input
    make: Callable[[int], Any]  # an input of about n bytes
    run: Callable[[Any], object]
    size: int = MIB

    @property
    def id(self) -> str:
        return f"{self.target}/{self.family}"


def _repeat(unit: str | bytes, n: int, head: str | bytes = "") -> Any:
    return head + unit * max(1, n // len(unit))


def _quiet(fn: Callable[..., object], *args: Any) -> object:
    """fn(*args); a refusal of the input (the outcome a hostile input should have) counts as
    done: what is timed is how long it took to get there."""
    try:
        return fn(*args)
    except (parsers.ParseError, HostileInput, execproto.ProtocolError):
        return None


def parse(name: str, kind: str = "references") -> Callable[[Any], object]:
    parser = parsers.PARSERS[name]

    def run(stdout: bytes) -> object:
        return _quiet(parser.parse, stdout, b"", kind)
    return run


def shaped(shape: Shape, on_stderr: bool = False) -> Callable[[Any], object]:
    """parse_output of a task command's declared shape (rg's parser where the tool reads) on
    the input as stdout, or with `on_stderr` as stderr (a script's call lines)."""
    parser = parsers.PARSERS["rg"]

    def run(data: bytes) -> object:
        streams = (b"", data) if on_stderr else (data, b"")
        return _quiet(parse_output, parser, *streams, "impact", shape)
    return run


def _b(text: str) -> bytes:
    return text.encode()


DEEP = lambda n: b"[" * n  # noqa: E731
ESCAPES = lambda n: _repeat(b'\\"', n, b'{"file": "')  # noqa: E731 - an unterminated string
LONG_NUMBER = lambda n: b'{"file": "a.rs", "line": ' + b"9" * n + b"}"  # noqa: E731

ROWS = "src/lib.rs:12:    let money = Money::new(1);\n"
AST_MATCH = json.dumps({"file": "src/a.rs", "range": {"start": {"line": 3}},
                        "lines": "let money = 1;", "text": "money"}) + "\n"
CRG_QUERY_EDGE = {"file_path": "/corpus/src/a.rs", "line": 7, "kind": "CALLS"}
DS_HIT = {"file": "src/a.rs", "line": 3, "why": "calls money"}
CIM_MATCH = {"file": "src/a.rs", "line": 3, "text": "money"}
SERENA_ITEM = {"name_path": "f", "content_around_reference": "  23: a\n  >  24: money\n  25: b"}


def _json_doc(key: str, item: dict[str, Any], n: int, **extra: Any) -> bytes:
    one = len(json.dumps(item)) + 2
    return _b(json.dumps({**extra, key: [item] * max(1, n // one)}))


def _serena(n: int) -> bytes:
    one = len(json.dumps(SERENA_ITEM)) + 2
    return _b(json.dumps({"src/a.rs": {"Function": [SERENA_ITEM] * max(1, n // one)}}))


def _transcript(frames: list[str]) -> bytes:
    lines = [{"t": 1, "kind": "start"}]
    lines += [{"t": 2 + i, "kind": "recv", "frame": f} for i, f in enumerate(frames)]
    lines += [{"t": 10 ** 9, "kind": "result", "call": 0, "sent": 2, "answered": 3,
               "outcome": "ok", "detail": ""}, {"t": 10 ** 9 + 1, "kind": "end"}]
    return b"".join(_b(json.dumps(line)) + b"\n" for line in lines)


def _answer(text: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1,
                       "result": {"content": [{"type": "text", "text": text}]}})


def _exec_stream(stdout_bytes: int, result_payload: bytes | None = None) -> list[bytes]:
    chunks = [execproto.encode_frame(b"o", b"x" * min(execproto.MAX_CHUNK, stdout_bytes - i))
              for i in range(0, stdout_bytes, execproto.MAX_CHUNK)]
    result = dict.fromkeys(execproto.RESULT_KEYS, 0)
    result.update(helper_version="0.3.0", exit_code=0, signal=None, timed_out=False,
                  oom_kills=None, stdout_truncated=False, stderr_truncated=False,
                  spawn_error=None, stdout_bytes=stdout_bytes, cap_bytes=64 * MIB)
    payload = result_payload if result_payload is not None else _b(json.dumps(result))
    return [*chunks, execproto.encode_frame(b"r", payload)]


def _decode_stream(chunks: list[bytes]) -> object:
    return execproto.decode_exec_stream(chunks, io.BytesIO(), io.BytesIO(), 64 * MIB)


def _envelope(n: int) -> list[bytes]:
    frame = execproto.ENVELOPE_CHUNK + (1).to_bytes(4, "big") + b"o"
    return [frame * max(1, n // len(frame))]


def _feed(chunks: list[bytes]) -> object:
    envelope = execproto.Envelope()
    return [envelope.feed(c) for c in chunks]


def _scip_honest(n: int) -> bytes:
    occ = occurrence(3, "scip-typescript npm demo 1.0.0 src/`money.ts`/Money#")
    per_doc = 2000
    docs = max(1, n // (len(occ) + 2) // per_doc)
    return index(*(document(f"src/f{i}.ts", *([occ] * per_doc)) for i in range(docs)))


def _scip_unknown_nesting(n: int) -> bytes:
    """An unknown field nested in itself as far as the bytes go, each level with 64 bytes of
    its own after the one inside: stepped over whole."""
    headers, length = [], 0
    for _ in range(max(1, n // 70)):
        payload = length + 64
        header = _varint(9 << 3 | 2) + _varint(payload)
        headers.append(header)
        length = len(header) + payload
    return index() + b"".join(reversed(headers)) + b"\x00" * (64 * len(headers))


def _scip(data: bytes) -> object:
    return _quiet(scip.decode, data)


RUST = ('fn money(a: &str) -> u32 { let s = "str \\" esc"; /* c /* nested */ */ '
        "let r = r#\"raw\"#; let c = 'x'; m!(a, b); Money::new::<u32>(1) }\n")


def _rust(text: str) -> object:
    src = rust_sites.Source.of(text)
    lines = len(src.line_starts)
    return [rust_sites.classify(src, line, 5) for line in range(0, lines, 7)]


CASES = [
    # -- rg --------------------------------------------------------------------------------
    Case("rg", "binary-notice marks", lambda n: _b(_repeat(": binary file matches (found ", n,
                                                           "a")), parse("rg")),
    Case("rg", "binary-notice offsets", lambda n: _b(_repeat(" byte around offset 1", n,
                                                             "a: binary file matches (found ")
                                                     + ")x"), parse("rg")),
    Case("rg", "colon digit runs", lambda n: _b(_repeat("a:" + "9" * 30, n)), parse("rg")),
    Case("rg", "colons", lambda n: b"a" + b":" * n, parse("rg")),
    Case("rg", "count lines", lambda n: _b(_repeat(":1", n, "a")), parse("rg", "locate")),
    Case("rg", "one long row", lambda n: _b(_repeat("x", n, "src/a.rs:12:")), parse("rg")),
    Case("rg", "many rows", lambda n: _b(_repeat(ROWS, n)), parse("rg"), MIB // 2),
    Case("rg", "giant line number", lambda n: b"a.rs:" + b"9" * n + b":x", parse("rg")),
    # -- rg-heading (a path line, then line:text rows) ------------------------------------------
    Case("rg-heading", "many rows", lambda n: _b(_repeat("12:x\n", n, "src/a.rs\n")),
         parse("rg-heading"), MIB // 2),
    Case("rg-heading", "many groups", lambda n: _b(_repeat("src/a.rs\n1:x\n\n", n)),
         parse("rg-heading"), MIB // 2),
    Case("rg-heading", "giant line number", lambda n: b"a.rs\n" + b"9" * n + b":x",
         parse("rg-heading")),
    Case("rg-heading", "binary-notice marks", lambda n: _b(_repeat(
        ": binary file matches (found ", n, "a.rs\n1:x\na")), parse("rg-heading")),
    # -- aider-repomap (rg's rows after aider's banner lines) --------------------------------
    Case("aider-repomap", "many banners", lambda n: _repeat(AIDER_BANNER, n, b"") + b"a.py:1:f\n",
         parse("aider-repomap", "locate")),
    Case("aider-repomap", "near-banner first line", lambda n: _b(_repeat("I", n)),
         parse("aider-repomap", "locate")),
    Case("aider-repomap", "many rows", lambda n: AIDER_BANNER + _b(_repeat(ROWS, n)),
         parse("aider-repomap", "locate"), MIB // 2),
    # -- score.shapes.parse_output: a task command's file list, sections, call lines ------
    Case("parse_output", "many paths", lambda n: _b(_repeat("/corpus/src/a.cs\n", n)),
         shaped(Shape(output="file-list"))),
    Case("parse_output", "blank lines", lambda n: b"\n" * n,
         shaped(Shape(output="file-list"))),
    Case("parse_output", "many separators", lambda n: _b(_repeat("----\n", n)),
         shaped(Shape(output="file-list", sections="----"))),
    Case("parse_output", "near separators", lambda n: _b(_repeat("----x\r\n", n)),
         shaped(Shape(output="file-list", sections="----", answer_section=2))),
    Case("parse_output", "sections of rows", lambda n: _b(_repeat(ROWS + "----\n", n)),
         shaped(Shape(sections="----", answer_section=3))),
    Case("parse_output", "one long line", lambda n: _b(_repeat("-", n)),
         shaped(Shape(output="file-list", sections="----"))),
    Case("parse_output", "call lines",
         lambda n: _b(_repeat("sandbench-call: rg -l x\n", n)), shaped(Shape(script=True), True)),
    Case("parse_output", "call lines after carriage returns",
         lambda n: _b(_repeat("\rsandbench-call:", n)), shaped(Shape(script=True), True)),
    Case("parse_output", "near call lines", lambda n: _b(_repeat("\rsandbench-call", n)),
         shaped(Shape(script=True), True)),
    Case("parse_output", "separator prefixes", lambda n: _b(_repeat("\n---", n)),
         shaped(Shape(output="file-list", sections="----"))),
    # -- ast-grep ----------------------------------------------------------------------------
    Case("ast-grep", "deep nesting", DEEP, parse("ast-grep")),
    Case("ast-grep", "escaped quotes", ESCAPES, parse("ast-grep")),
    Case("ast-grep", "giant number", LONG_NUMBER, parse("ast-grep")),
    Case("ast-grep", "many matches", lambda n: _b(_repeat(AST_MATCH, n)), parse("ast-grep"),
         MIB // 2),
    # -- code-review-graph -------------------------------------------------------------------
    Case("code-review-graph", "deep nesting", DEEP, parse("code-review-graph")),
    Case("code-review-graph", "many edges",
         lambda n: _json_doc("edges", CRG_QUERY_EDGE, n, status="ok", pattern="callers_of"),
         parse("code-review-graph")),
    Case("code-review-graph", "graph-edge names",
         lambda n: _b(json.dumps({"kind": "CALLS", "file": "a.rs", "line": 1,
                                  "source": "/corpus/a.rs" + "::x" * (n // 3),
                                  "target": "::" * (n // 2)})), parse("code-review-graph",
                                                                     "call-edges")),
    # -- devscout ---------------------------------------------------------------------------
    Case("devscout", "find colon digit runs", lambda n: _b(_repeat("a:" + "9" * 30 + "x", n)),
         parse("devscout", "locate")),
    Case("devscout", "find separators", lambda n: _b(_repeat(": ", n, "a")),
         parse("devscout", "locate")),
    Case("devscout", "find zero-hit quotes", lambda n: _b(_repeat('"', n, 'no matches for "')),
         parse("devscout", "locate")),
    Case("devscout", "find many rows", lambda n: _b(_repeat("src/a.rs:3  let money = 1;\n", n)),
         parse("devscout", "locate")),
    Case("devscout", "deep members", lambda n: _b(_repeat('{"members": [', n)),
         parse("devscout")),
    Case("devscout", "many rows", lambda n: _json_doc("rows", DS_HIT, n), parse("devscout"),
         MIB // 2),
    # -- code-index-mcp ----------------------------------------------------------------------
    Case("code-index-mcp", "deep nesting", DEEP, parse("code-index-mcp")),
    Case("code-index-mcp", "many results", lambda n: _json_doc("results", CIM_MATCH, n),
         parse("code-index-mcp")),
    # -- serena -----------------------------------------------------------------------------
    Case("serena", "marked lines", lambda n: _b(json.dumps({"a.rs": {"F": [
        {"content_around_reference": _repeat("  >  1:x\n", n)}]}})), parse("serena")),
    Case("serena", "long marker line", lambda n: _b(json.dumps({"a.rs": {"F": [
        {"content_around_reference": "  >" + " " * n + "9" * 30}]}})), parse("serena")),
    Case("serena", "many references", _serena, parse("serena"), MIB // 2),
    Case("serena", "counts", lambda n: _b(_repeat('"a": 1, ', n, "Reference counts per file:\n{")),
         parse("serena")),
    # -- untrusted.decode --------------------------------------------------------------------
    Case("decode.loads", "deep nesting", lambda n: "[" * n,
         lambda t: _quiet(lambda: decode.loads(t, what="t"))),
    Case("decode.loads", "deep then closed", lambda n: "[" * (n // 2) + "]" * (n // 2),
         lambda t: _quiet(lambda: decode.loads(t, what="t"))),
    Case("decode.loads", "escaped quotes", lambda n: _repeat('\\"', n, '"'),
         lambda t: _quiet(lambda: decode.loads(t, what="t"))),
    Case("decode.loads", "many numbers", lambda n: "[" + _repeat("1234567,", n) + "1]",
         lambda t: _quiet(lambda: decode.loads(t, what="t"))),
    Case("decode.loads", "giant number", lambda n: "9" * n,
         lambda t: _quiet(lambda: decode.loads(t, what="t"))),
    Case("decode.json_values", "many values", lambda n: _repeat("0 ", n),
         lambda t: _quiet(lambda: list(decode.json_values(t, what="t"))), MIB // 4),
    Case("decode.json_values", "blank stream", lambda n: " " * n,
         lambda t: _quiet(lambda: list(decode.json_values(t, what="t")))),
    Case("decode.json_values", "structure inside strings", lambda n: _repeat('",[{"', n, "["),
         lambda t: _quiet(lambda: list(decode.json_values(t, what="t", max_items=1000)))),
    Case("decode.json_values", "many empty items", lambda n: _repeat("[],", n, "["),
         lambda t: _quiet(lambda: list(decode.json_values(t, what="t", max_items=1000)))),
    Case("decode.json_values", "non-ASCII strings", lambda n: _repeat('"\U0001f600",', n, "["),
         lambda t: _quiet(lambda: list(decode.json_values(t, what="t", max_items=1000)))),
    # -- MCP transcripts and frames -----------------------------------------------------------
    Case("mcp.read_transcript", "deep frame", lambda n: _transcript(["[" * n]),
         mcp.read_transcript),
    Case("mcp.read_transcript", "many frames", lambda n: _transcript(
        [_answer("x")] * max(1, n // 120)), mcp.read_transcript),
    Case("mcp.read_transcript", "one long answer", lambda n: _transcript([_answer("x" * n)]),
         mcp.read_transcript),
    Case("mcp.payload", "many text items", lambda n: _b(json.dumps(
        {"result": {"content": [{"type": "text", "text": "x"}] * max(1, n // 30)}})),
         mcp.payload, MIB // 4),
    # -- exec frames --------------------------------------------------------------------------
    Case("execproto.decode_exec_stream", "stdout frames", _exec_stream,
         _decode_stream),
    Case("execproto.decode_exec_stream", "deep result", lambda n: _exec_stream(0, b"[" * n),
         _decode_stream),
    Case("execproto.decode_exec_stream", "escaped result",
         lambda n: _exec_stream(0, _b(_repeat('\\"', n, '{"a": "') + '"}')), _decode_stream),
    Case("execproto.Envelope", "one-byte chunks", _envelope, _feed, MIB // 4),
    # -- oracle decoders ----------------------------------------------------------------------
    Case("oracle.scip.decode", "many occurrences", _scip_honest, _scip),
    Case("oracle.scip.decode", "nested unknown fields", _scip_unknown_nesting, _scip),
    Case("oracle.scip.decode", "endless varints", lambda n: index() + b"\x12" + b"\xff" * n,
         _scip),
    Case("oracle.rust_sites", "honest source", lambda n: _repeat(RUST, n), _rust, MIB // 16),
    Case("oracle.rust_sites", "nested comments", lambda n: "/*" * (n // 2), _rust, MIB // 16),
    Case("oracle.rust_sites", "escapes in a string", lambda n: _repeat('\\"', n, '"'), _rust,
         MIB // 16),
    Case("oracle.rust_sites", "quotes and lifetimes", lambda n: "'" * n, _rust, MIB // 16),
    Case("oracle.rust_sites", "raw string openers", lambda n: _repeat('r#"', n), _rust,
         MIB // 16),
    Case("oracle.rust_sites", "open delimiters", lambda n: _repeat("m!(#[", n), _rust,
         MIB // 16),
    # -- the scorer's published comparison ------------------------------------------------------
    Case("score.published.swapped_figures", "mount lines", lambda n: _b(_repeat("/corpus/a\n", n)),
         lambda t: published.swapped_figures(t, "p/")),
    Case("score.published.swapped_figures", "carriage returns",
         lambda n: _b(_repeat("\r/corpus", n)), lambda t: published.swapped_figures(t, "p/")),
    # -- the scorer's disclosure of paths -------------------------------------------------------
    Case("score.environment.bench_roots", "slashes", lambda n: {"run_id": "r", "x": "/" * n},
         environment.bench_roots),
    Case("score.environment.rewrite_paths", "path segments",
         lambda n: _repeat("/a", n, " "), lambda t: environment.rewrite_paths(t, ["/b"])),
    # -- names made portable, text shown to a person ---------------------------------------------
    Case("untrusted.strings.portable", "backslashes and bytes",
         lambda n: _repeat("\\x\udcff\\\\u", n), strings.portable),
    Case("untrusted.text.visible", "lookalikes and overlays",
         lambda n: _repeat("src/\u041coney\u0338\u3164\u2215\uff53", n), text.visible,
         MIB // 4),
    Case("untrusted.text.visible", "one long mixed word",
         lambda n: _repeat("a\u0430\u0301", n), text.visible, MIB // 4),
]


def _median(case: Case, inputs: list[Any], repeats: int) -> list[float]:
    """The median seconds of each input, the runs interleaved; the collector is off while
    they run (its passes over every object the run made are the interpreter's, not the
    parser's, and fall unevenly)."""
    times: list[list[float]] = [[] for _ in inputs]
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            for i, value in enumerate(inputs):
                started = time.perf_counter()
                case.run(value)
                times[i].append(time.perf_counter() - started)
    finally:
        gc.enable()
    return [statistics.median(t) for t in times]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_doubling_the_input_at_most_multiplies_the_time_by_the_growth_budget(
        case: Case, record_property: Callable[[str, object], None]) -> None:
    size = case.size
    small = case.make(size)
    while _median(case, [small], 1)[0] < MIN_SECONDS and 2 * size < MAX_SIZE:
        size *= 2
        small = case.make(size)
    large = case.make(2 * size)
    t_small, t_large = _median(case, [small, large], REPEATS)
    if t_large > GROWTH * t_small + SLACK_SECONDS:
        t_small, t_large = _median(case, [small, large], RETRY_REPEATS)
    LARGEST[case.target] = max(LARGEST.get(case.target, 0), _length(large))
    record_property("sizes_bytes", [_length(small), _length(large)])
    record_property("seconds", [round(t_small, 4), round(t_large, 4)])
    assert t_large <= GROWTH * t_small + SLACK_SECONDS, (
        f"{case.id}: {_length(small):,} bytes took {t_small:.3f} s, {_length(large):,} bytes "
        f"{t_large:.3f} s: {t_large / t_small:.1f}x for 2x the input (budget {GROWTH}x)")


def _length(value: Any) -> int:
    if isinstance(value, (bytes, str)):
        return len(value)
    if isinstance(value, list):
        return sum(map(_length, value))
    if isinstance(value, dict):
        return sum(_length(v) for v in value.values())
    return 0


def test_every_parser_and_decoder_is_tried(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last in this file: every registered parser has cases, and the largest input each
    target was tried with is shown."""
    targets = {c.target for c in CASES}
    assert set(parsers.PARSERS) <= targets
    with capsys.disabled():
        for target in sorted(LARGEST):
            print(f"\n  largest input tried: {target}: {LARGEST[target]:,} bytes", end="")
        print()
