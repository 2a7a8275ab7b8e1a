"""The names the text truth rules read from every declaration shape: a table of C#,
TypeScript and Rust sources (lexed as the rules lex them) and the names each must give; and
the Rust lexer's split of code from comments and literals."""

from __future__ import annotations

import pytest

from orchestrator.truth import csharp, rust, typescript
from orchestrator.truth.languages import declared_names

CSHARP = [
    ("plain class", "public class Money { }", ["Money"]),
    ("generic, constraint on the same line",
     "public interface Ack<THub> where THub : Hub { }", ["Ack"]),
    ("generic, constraint on the next line",
     "public interface Ack<THub>\n    where THub : Hub\n{\n}", ["Ack"]),
    ("two constraints on two next lines",
     "public class Pair<TA, TB> : IPair\n    where TA : class\n    where TB : struct, IFoo\n{\n}",
     ["Pair"]),
    ("constraint keyword class then a capitalised where-less line",
     "class Box<T>\n    where T : class\n{\n    Money money;\n}", ["Box"]),
    ("base list on the next line", "public sealed class Handler\n    : IHandler<Order>\n{\n}",
     ["Handler"]),
    ("attributes before", "[Serializable]\n[Obsolete(\"old\")]\npublic class Old { }", ["Old"]),
    ("attribute on the same line", "[Serializable] public struct Point { }", ["Point"]),
    ("nested", "public class Outer\n{\n    private class Inner { }\n    public enum Kind { A }\n}",
     ["Inner", "Kind", "Outer"]),
    ("partial", "public static partial class Registration { }", ["Registration"]),
    ("record with a primary constructor", "public record Person(string Name);", ["Person"]),
    ("record struct and record class",
     "public readonly record struct Id(int Value);\npublic record class Name(string Text);",
     ["Id", "Name"]),
    ("record with a body on the next line", "public sealed record Order\n{\n}", ["Order"]),
    ("file-scoped namespace", "namespace MassTransit.Courier;\n\npublic interface IRoutingSlip\n"
     "{\n}", ["IRoutingSlip"]),
    ("enum with a base type", "public enum Color : byte { Red }", ["Color"]),
    ("empty body with a semicolon", "internal class Marker;", ["Marker"]),
    ("generic struct with a constraint", "public readonly ref struct Span<T>\n    where T : "
     "unmanaged\n{\n}", ["Span"]),
    ("delegate", "public delegate void Callback(int code);", ["Callback"]),
    ("generic delegate with a generic return type",
     "public delegate Task<TResult> Handler<in T, TResult>(T message)\n    where T : class;",
     ["Handler"]),
    ("anonymous delegate declares nothing", "var f = delegate (int x) { return x; };", []),
    ("constraint keywords alone", "void M<T>() where T : class, new() { }", []),
    ("in a comment or a string: nothing", "// public class Ghost { }\n"
     "var s = \"class Phantom { }\";", []),
]

TYPESCRIPT = [
    ("class", "export class Money {}", ["Money"]),
    ("abstract, default export", "export default abstract class Base<T> {}", ["Base"]),
    ("anonymous class expression", "const X = class extends Base {}", []),
    ("interface, generic, extends on the next line",
     "export interface Repo<T>\n  extends Store<T> {}", ["Repo"]),
    ("type alias", "export type Id = string;\ntype Pair<A, B> = [A, B];", ["Id", "Pair"]),
    ("a type import declares nothing", "import type Money from './money';\n"
     "import type { Id } from './id';", []),
    ("const enum and enum", "const enum Flag { A }\nenum Color { Red }", ["Color", "Flag"]),
    ("function, async and generator", "function plain() {}\nasync function later() {}\n"
     "export function* items() {}\nfunction *more() {}", ["items", "later", "more", "plain"]),
    ("namespace and declare", "declare namespace Api {\n  class Client {}\n}", ["Api", "Client"]),
    ("overloads once", "function f(x: string): void;\nfunction f(x: number): void;", ["f"]),
    ("in a template literal: nothing", "const s = `class Ghost {}`;", []),
]

RUST = [
    ("struct, generic, where on the next line",
     "pub struct Pool<T>\nwhere\n    T: Clone,\n{\n    items: Vec<T>,\n}", ["Pool"]),
    ("visibility and attributes", "#[derive(Debug)]\npub(crate) enum Level { Low }", ["Level"]),
    ("trait, type alias and union", "pub trait Store {\n    type Item;\n}\n"
     "type Id = u64;\nunion Bits { f: f32, u: u32 }", ["Bits", "Id", "Item", "Store"]),
    ("functions: generic, qualified, in an impl",
     "pub async fn load<'a>(x: &'a str) {}\nunsafe extern \"C\" fn raw() {}\n"
     "impl Store for Disk {\n    fn get(&self) {}\n}", ["get", "load", "raw"]),
    ("module and macro", "mod tests {}\nmacro_rules! square { ($x:expr) => { $x * $x }; }",
     ["square", "tests"]),
    ("function pointers, impl, a union variable and keyword-led words declare nothing",
     "let f: fn(i32) -> i32 = g;\nimpl<T> From<T> for Wrap<T> {}\nlet union = 3;\n"
     "let types = structure(fnord, modules);", []),
    ("in comments, strings and raw strings: nothing",
     "// struct Ghost;\n/* outer /* struct Nested; */ struct Still; */\n"
     "let s = \"fn phantom()\";\nlet r = r#\"struct \"Raw\" {}\"#;", []),
]


@pytest.mark.parametrize(("shape", "source", "names"), CSHARP, ids=[c[0] for c in CSHARP])
def test_csharp_declaration_shapes(shape: str, source: str, names: list[str]) -> None:
    assert declared_names(csharp.code_and_rest(source)[0], "cs") == names, shape


@pytest.mark.parametrize(("shape", "source", "names"), TYPESCRIPT,
                         ids=[c[0] for c in TYPESCRIPT])
def test_typescript_declaration_shapes(shape: str, source: str, names: list[str]) -> None:
    assert declared_names(typescript.code_and_rest(source)[0], "ts") == names, shape


@pytest.mark.parametrize(("shape", "source", "names"), RUST, ids=[c[0] for c in RUST])
def test_rust_declaration_shapes(shape: str, source: str, names: list[str]) -> None:
    assert declared_names(rust.code_and_rest(source)[0], "rs") == names, shape


RUST_SOURCE = """// Money in a comment
/* outer /* Money nested */ still Money */ let m: Money = Money::new();
let s = "Money \\" Money"; let r = r#"a "Money" b"#; let b = b"Money"; let br = br"Money";
fn f<'a>(x: &'a Money) -> char { 'M' } let e = '\\u{1F600}'; 'outer: loop {}
let multi = "line1
Money line2"; for r in x {}
"""


def test_rust_code_and_rest_split_every_occurrence() -> None:
    """Nested comments, escapes, raw, byte and multi-line strings are the rest; a lifetime's
    and a label's quote stay code, and positions stay put."""
    code, rest = rust.code_and_rest(RUST_SOURCE)
    assert len(code) == len(rest) == len(RUST_SOURCE)
    assert code.count("\n") == rest.count("\n") == RUST_SOURCE.count("\n")
    assert code.count("Money") == 3  # the annotation, Money::new, the parameter's type
    assert rest.count("Money") == 9  # 3 in comments, 2 + 1 + 1 + 1 + 1 in strings
    assert "'a Money" in code and "'outer: loop" in code and "for r in x" in code
    assert "'M'" in rest and 'br"Money"' in rest and 'r#"a "Money" b"#' in rest


def test_a_long_line_of_delegates_is_read_in_linear_time() -> None:
    """Each delegate's signature is read to a bounded length: a line of 20,000 words
    `delegate` without a parameter list is read in well under a second."""
    import time
    started = time.monotonic()
    assert declared_names("delegate " * 20_000, "cs") == []
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("source", ['x = $"{', 'x = $@"{', 'x = $$"""{', 'x = $"{a} {',
                                    'x = "a\\', 'x = $"{a}\\'])
def test_a_csharp_file_cut_off_inside_a_string_is_split_like_any_other(source: str) -> None:
    """A C# source cut off just after a hole's `{` or an escape's backslash (a truncated or
    generated file) is split like any other: not read forever, no IndexError. The lexer runs
    in a thread given two seconds."""
    import threading
    result: list[tuple[str, str]] = []
    worker = threading.Thread(target=lambda: result.append(csharp.code_and_rest(source)),
                              daemon=True)
    worker.start()
    worker.join(2.0)
    assert result, "the lexer did not return"
    code, rest = result[0]
    assert len(code) == len(rest) == len(source)
    assert code.startswith("x = ") and "$" not in code
