"""The languages the text truth rules read, by file extension: each one's lexer and its
reading of the names a file's code declares (a module per language)."""

from __future__ import annotations

from orchestrator.truth import csharp, rust, typescript

EXTENSIONS = ("cs", "ts", "rs")
_LEXERS = {"cs": csharp.code_and_rest, "ts": typescript.code_and_rest, "rs": rust.code_and_rest}
_NAMES = {"cs": csharp.declared_names, "ts": typescript.declared_names,
          "rs": rust.declared_names}


def code_and_rest(text: str, ext: str) -> tuple[str, str]:
    """(code, comments and literals) of a source of extension `ext` (C# for any other)."""
    return _LEXERS.get(ext, csharp.code_and_rest)(text)


def declared_names(code: str, ext: str) -> list[str]:
    """The names the code of a file of extension `ext` (cs, ts or rs) declares."""
    return _NAMES.get(ext, csharp.declared_names)(code)
