"""A hostile scores.json for rendering tests: the golden run's scores with one arm's
tool-derived strings (answer paths, reasons, parse errors, tool version, state file names,
corpus changes, reach failures) replaced by payloads that forge Markdown structure, bring raw
HTML and links, and carry terminal control sequences. Also measures a rendering: the
structure and bytes such a payload could have injected."""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

GOLDEN_SCORES = Path(__file__).resolve().parents[1] / "golden" / "demo-run" / "scores.json"
HOSTILE_ARM = "code-review-graph"

# Every class at once: line breaks with a forged heading and table, raw HTML, a javascript:
# link and an image, the window title (OSC 0), a clipboard write (OSC 52), a screen clear,
# a carriage return before a fake success line, a bidi override, rich markup, a lone
# surrogate (a byte that was not UTF-8).
PAYLOAD = ("evil\n# Scorecard\n| a | b |\n|---|---|\n<img src=x onerror=alert(1)>"
           "[x](javascript:alert(1))![i](http://x/i.png)<https://evil.example>"
           "\x1b]0;pwned-title\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[H"
           "\r\u2714 all checks passed\u202etxt.exe[bold red]RED[/][link=http://x]l[/link]"
           "\x9b31m\x7f\udcff")


def payload(tag: str) -> str:
    return f"{tag}-{PAYLOAD}"


def honest_scores() -> dict[str, Any]:
    return json.loads(GOLDEN_SCORES.read_text(encoding="utf-8"))


def hostile_scores() -> dict[str, Any]:
    """The golden scores, every string the hostile arm's tool chose replaced by a payload."""
    scores = copy.deepcopy(honest_scores())
    scores["arms"][HOSTILE_ARM]["tool_version"] = payload("version")
    for cell in scores["cells"]:
        if cell["arm"] != HOSTILE_ARM:
            continue
        cell["parse_error"] = payload("parse-error")
        grade = cell["grade"]
        if grade:
            grade["answer"] = [payload("answer"), *grade["answer"]]
            grade["outside"] = [payload("outside"), *grade["outside"]]
            grade["notes"] = [*grade["notes"], payload("note")]
        if cell["reach"]:
            cell["reach"]["first_failures"] = [
                {"row": 1, "path": payload("reach-path"), "line": 7,
                 "problems": ["no-such-file"]}]
    state = scores["state"][HOSTILE_ARM]
    state["state_files"] = [[payload("state-file"), 1], *state["state_files"]]
    state["corpus_changes"] = [{"status": "added", "path": payload("corpus-change")}]
    return scores


# -- measures -------------------------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_ROW = re.compile(r"^ {0,3}\|")
_BIDI = {chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                          *range(0x2066, 0x206A))}


def headings(text: str) -> list[str]:
    return [line for line in _outside_fences(text) if _HEADING.match(line)]


def table_rows(text: str) -> int:
    return sum(1 for line in _outside_fences(text) if _ROW.match(line))


def _outside_fences(text: str) -> list[str]:
    lines, fence = [], None
    for line in text.split("\n"):
        opener = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence is None and opener:
            fence = opener.group(1)
        elif fence is not None and line.strip() == fence[0] * len(line.strip()) \
                and len(line.strip()) >= len(fence):
            fence = None
        elif fence is None:
            lines.append(line)
    return lines


def control_chars(text: str, allowed: str = "\n") -> list[str]:
    """Every C0/C1 control, DEL, bidi control, line/paragraph separator or lone surrogate."""
    return [ch for ch in text if ch not in allowed and (
        unicodedata.category(ch) in ("Cc", "Zl", "Zp", "Cs") or ch in _BIDI)]


def measure(text: str) -> dict[str, int]:
    return {"headings": len(headings(text)), "table_rows": table_rows(text),
            "raw_html_tags": len(re.findall(r"<(img|script|a|https?:)", text, re.I)),
            "javascript_links": len(re.findall(r"javascript:", text, re.I)),
            "markdown_links": len(re.findall(r"\]\(", text)),
            "control_chars": len(control_chars(text))}
