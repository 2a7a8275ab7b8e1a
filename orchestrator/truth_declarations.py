"""The names a source file declares, as the text truth rules read them (a locate task's types,
an impact seed's types, the file declaring a references symbol, the `declares` rule), from the
code of a file (its comments and literals already blanked by `truth_lexing`).

A declaration's name is the identifier right after its keyword, never a word further on: a
generic type whose constraints stand on the next line (`interface Ack<THub>` then
`where THub : Hub`) declares `Ack`, not `THub` (version 1 of the rules crossed the line break
to the type parameter). Each keyword is found by one anchored pattern whose runs are bounded by
the next character class, so reading is linear in the code.
"""

from __future__ import annotations

import re

# C#: class, interface, struct, enum and record (`record class`, `record struct`), whatever
# modifiers and attributes stand before them; the name starts with a capital (the keywords of
# a constraint, `where T : class, new()`, are followed by no capitalised name) and is followed
# by what a declaration's name is: type parameters, a primary constructor, a base list, a body,
# a constraint, a `;` or the end of the line.
_CS_TYPE = re.compile(r"\b(?:class|interface|struct|enum|record(?:[ \t]+(?:class|struct))?)"
                      r"\s+(?P<name>[A-Z]\w*)(?=[ \t]*(?:[<(:{;]|where\b|$))", re.M)
# C#: a delegate is named by the last identifier before its parameter list (after its return
# type, itself perhaps generic: `delegate Task<T> Handler<T>(T message)`), on the same line.
_CS_DELEGATE = re.compile(r"\bdelegate[ \t]+(?P<signature>[\w.<>,?\[\] \t]{1,400})\(")
_TYPE_PARAMETERS_AT_END = re.compile(r"<[\w \t,]*>[ \t]*$")
_LAST_NAME = re.compile(r"(?P<name>[A-Z]\w*)[ \t]*$")

# TypeScript: class, interface, enum and namespace (`const enum`, `abstract class`,
# `declare ...`, `export default ...` alike; an anonymous `class extends Base` declares
# nothing), a function (a generator's `function*` too) and a type alias (`type Name =` or
# `type Name<T> =`, so that `import type Name from` declares nothing).
_TS_NAME = r"(?!(?:extends|implements)\b)(?P<name>[A-Za-z_$][\w$]*)"
_TS_DECLARATION = re.compile(r"\b(?:(?:class|interface|enum|namespace)\s+"
                             r"|function\b\s*\*?\s*)" + _TS_NAME)
_TS_TYPE_ALIAS = re.compile(r"\btype\s+" + _TS_NAME + r"(?=\s*[<=])")

# Rust: struct, enum, union, trait, type alias, function, module and macro_rules! items, whatever
# visibility and qualifiers stand before them (`pub(crate)`, `unsafe`, `async`, `extern "C"`);
# a function pointer type (`fn(i32) -> i32`) and `impl Trait for Type` declare nothing, and a
# `union` keyword is one only before a name (`let union = ...` is a variable).
_RS_DECLARATION = re.compile(r"\b(?:struct|enum|union|trait|type|fn|mod|macro_rules!)[ \t]*"
                             r"(?<=[ \t!])\s*(?P<name>[A-Za-z_]\w*)")


def _delegates(code: str) -> set[str]:
    names = set()
    for match in _CS_DELEGATE.finditer(code):
        signature = _TYPE_PARAMETERS_AT_END.sub("", match.group("signature"))
        if (" " in signature.strip() or "\t" in signature.strip()) and (
                name := _LAST_NAME.search(signature)):
            names.add(name.group("name"))  # an anonymous `delegate (int x)` has no name
    return names


def csharp_types(code: str) -> list[str]:
    """The C# types (class, interface, struct, enum, record, delegate) the code declares,
    sorted, each once."""
    return sorted({m.group("name") for m in _CS_TYPE.finditer(code)} | _delegates(code))


def typescript_names(code: str) -> list[str]:
    """The TypeScript classes, interfaces, enums, namespaces, functions and type aliases the
    code declares, sorted, each once."""
    return sorted({m.group("name") for pattern in (_TS_DECLARATION, _TS_TYPE_ALIAS)
                   for m in pattern.finditer(code)})


def rust_names(code: str) -> list[str]:
    """The Rust structs, enums, unions, traits, type aliases, functions, modules and macros
    the code declares, sorted, each once."""
    return sorted({m.group("name") for m in _RS_DECLARATION.finditer(code)})


def declared_names(code: str, ext: str) -> list[str]:
    """The names the code of a file of extension `ext` (cs, ts or rs) declares."""
    return {"ts": typescript_names, "rs": rust_names}.get(ext, csharp_types)(code)
