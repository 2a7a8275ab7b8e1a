"""untrusted/text: what a tool wrote, escaped for a terminal and for Markdown. Properties over
arbitrary text (hypothesis) and the honest names that must read as before."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.untrusted import limits
from orchestrator.untrusted.text import (
    markdown_cell,
    markdown_code,
    markdown_code_span,
    markdown_inline,
    terminal,
    terminal_lines,
    visible,
)

BIDI = [chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]
# Text weighted towards what breaks documents and terminals: pieces joined.
PIECES = st.one_of(
    st.sampled_from(list("#|>-+*=_`~[]()!<>&:@$\\/.0123456789 \t\n\r\x1b\x07\x00\x7f\x85\x9b"
                         "\u2028\u2029\ufeff\udcff\U000e0001") + BIDI
                    + ["www.", "http://", "javascript:", "](", "    ", "1. ", "```"]),
    st.text(max_size=8))
NASTY = st.lists(PIECES, max_size=20).map("".join)


def _forbidden_terminal(text: str, allowed: str = "") -> list[str]:
    return [ch for ch in text if ch not in allowed and (
        ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or ch in BIDI
        or ch in "\u2028\u2029\ufeff" or 0xD800 <= ord(ch) <= 0xDFFF)]


@settings(max_examples=400, deadline=None)
@given(NASTY)
def test_terminal_output_holds_no_control_and_no_bidi(s: str) -> None:
    out = terminal(s)
    assert not _forbidden_terminal(out)
    out.encode("utf-8")  # a lone surrogate is shown as its byte, never written raw


@settings(max_examples=300, deadline=None)
@given(NASTY)
def test_terminal_lines_keeps_only_line_breaks(s: str) -> None:
    out = terminal_lines(s)
    assert not _forbidden_terminal(out, allowed="\n")
    assert out.count("\n") == s.count("\n")


_BLOCK = re.compile(r"^( {0,3}#{1,6}(\s|$)| {0,3}[-+*](\s|$)| {0,3}\d{1,9}[.)](\s|$)| {0,3}>|"
                    r" {0,3}\||=+\s*$|-+\s*$| {4}|\t| {0,3}(```|~~~))")


@settings(max_examples=500, deadline=None)
@given(NASTY)
def test_markdown_inline_can_open_no_construct(s: str) -> None:
    out = markdown_inline(s)
    assert "\n" not in out and "\r" not in out
    assert not _BLOCK.match(out), out  # no heading, list, quote, table, code block at a line start
    assert "<" not in out and "](" not in out
    assert not re.search(r"(?<!\\):[^ ]", out)  # no scheme (javascript:, http://) or :emoji:
    assert not re.search(r"(?i)www\.", out)
    assert not re.search(r"(?<!\\)(\\\\)*[`*~\[\]|$@]", out)  # every such character escaped
    assert not _forbidden_terminal(out)
    cell = markdown_cell(s)
    assert cell.strip() or cell == " "


@settings(max_examples=200, deadline=None)
@given(NASTY)
def test_a_code_span_is_one_span_of_the_visible_text(s: str) -> None:
    out = markdown_code_span(s)
    fence = re.match(r"`+", out).group(0)
    inner = out[len(fence):len(out) - len(fence)]
    assert out.endswith(fence) and fence not in inner and "\n" not in out
    assert markdown_code(s) == visible(s) and "\n" not in markdown_code(s)


@pytest.mark.parametrize("honest", [
    "dotnet/src/Ordering/Pricing/BulkDiscountRule.cs", "inventory/src/warehouse.rs",
    "web/test/cart.test.ts", "src/call_edges.rs", "ripgrep 13.0.0",
    "Universal Ctags 5.9.0, Copyright (C) 2015 Universal Ctags Team", "code-review-graph 2.3.9",
    "wrong: mcp-call-timeout", "0.51.1", "a-b c.d"])
def test_honest_names_are_written_as_they_are(honest: str) -> None:
    assert markdown_inline(honest) == honest
    assert terminal(honest) == honest


@pytest.mark.parametrize(("raw", "shown"), [
    ("__init__.py", "\\_\\_init\\_\\_.py"), ("# Scorecard", "\\# Scorecard"),
    ("| a | b |", "\\| a \\| b \\|"), ("1. first", "1\\. first"), ("- item", "\\- item"),
    ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
    ("[x](javascript:alert(1))", "\\[x\\]\\(javascript\\:alert(1))"),
    ("https://e.example www.e.example", "https\\://e.example www\\.e.example"),
    ("    code", "&#32;   code"), ("a\nb", "a\\\\nb"), ("\x1b[2J", "\\\\x1b\\[2J"),
    ("caf\udce9", "caf\\\\xe9")])
def test_markdown_escapes(raw: str, shown: str) -> None:
    assert markdown_inline(raw) == shown


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
    ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),
    ("\x1b[2J", "\\x1b[2J"), ("failed\r\u2714 passed", "failed\\r\u2714 passed"),
    ("a\tb", "a\\tb"), ("\x9b31m", "\\x9b31m"), ("\x7f", "\\x7f"),
    ("abc\u202etxt", "abc\\u202etxt"), ("\u2066x\u2069", "\\u2066x\\u2069"),
    ("bad-\udcff", "bad-\\xff"), ("\U000e0041", "\\U000e0041"),
    ("caf\u00e9 \u2714", "caf\u00e9 \u2714")])
def test_terminal_escapes(raw: str, shown: str) -> None:
    assert terminal(raw) == shown


def test_a_long_field_is_cut_with_the_count_left_out() -> None:
    long = "x" * (limits.TERMINAL_FIELD_CHARS + 10)
    assert terminal(long) == "x" * limits.TERMINAL_FIELD_CHARS + "... (10 more characters)"


# -- lookalikes: text that reads as other text -------------------------------------------------

@pytest.mark.parametrize(("shown", "expected"), [
    ("src/\u041coney.cs", "src/\\u041coney.cs"),          # a Cyrillic M in a Latin word
    ("src/Money.cs\u3164", "src/Money.cs\\u3164"),        # a Hangul filler: renders blank
    ("src/Money.cs\u2800", "src/Money.cs\\u2800"),        # the Braille blank
    ("src\u00a0/Money.cs", "src\\xa0/Money.cs"),          # a no-break space
    ("src/\u0338Money.cs", "src/\\u0338Money.cs"),        # a combining overlay on a slash
    ("src/M\u0336oney.cs", "src/M\\u0336oney.cs"),        # a strike-through overlay
    ("src\u2215Money.cs", "src\\u2215Money.cs"),          # a division slash
    ("src/Money\u2024cs", "src/Money\\u2024cs"),          # a one-dot leader
    ("\uff53rc/Money.cs", "\\uff53rc/Money.cs"),          # fullwidth s
    ("src/\U0001d40cone.cs", "src/\\U0001d40cone.cs"),    # mathematical bold M
    ("src/\u0440\u043e\u0441.cs", "src/\\u0440\\u043e\\u0441.cs"),  # all lookalikes: "poc"
])
def test_a_lookalike_is_shown_as_an_escape(shown: str, expected: str) -> None:
    assert visible(shown) == expected
    assert terminal(shown) == expected
    assert "\\" in markdown_inline(shown)


@pytest.mark.parametrize("honest", ["café.cs", "naïve/straße.md", "отчет.txt", "λόγος.py",
                                    "日本語/ファイル.ts", "हिन्दी.txt", "Ωmega.cs", "t\u00e9"])
def test_honest_non_ascii_text_reads_as_itself(honest: str) -> None:
    assert visible(honest) == honest


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_marking_is_linear_and_keeps_ascii_as_it_is(s: str) -> None:
    shown = visible(s)
    assert all(ch in shown for ch in s if ch.isascii() and ch.isprintable())
