"""suites/tools/text_truth.py's lexers, which the C# and TypeScript suites' text truth rests on:
a word is in code or in a comment or literal, never both, and positions stay put."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "text_truth", Path(__file__).resolve().parents[2] / "suites" / "tools" / "text_truth.py")
assert SPEC is not None and SPEC.loader is not None
text_truth = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(text_truth)

CSHARP = '''// Money in a comment
var m = new Money(1); /* Money
   again */ var s = "Money"; var t = $"{Money.Zero} Money"; var c = 'M';
'''
TYPESCRIPT = '''// Money in a comment
const m: Money = money(); /* Money */ const s = 'Money'
const t = `${Money.zero} Money`
'''


def test_csharp_code_and_rest_split_every_occurrence() -> None:
    code, rest = text_truth.code_and_rest(CSHARP)
    assert len(code) == len(rest) == len(CSHARP)
    assert code.count("\n") == rest.count("\n") == CSHARP.count("\n")
    assert code.count("Money") == 2  # new Money(1) and the interpolation hole's Money.Zero
    assert rest.count("Money") == 4  # two comments, a string, the interpolated text
    assert "'M'" in rest and "'M'" not in code


def test_typescript_code_and_rest_split_every_occurrence() -> None:
    code, rest = text_truth.ts_code_and_rest(TYPESCRIPT)
    assert len(code) == len(rest) == len(TYPESCRIPT)
    assert code.count("Money") == 2  # the type annotation and the template hole
    assert rest.count("Money") == 4  # a line comment, a block comment, a string, the template
