"""The names the text truth rules read from every declaration shape: a table of C# and
TypeScript sources (lexed as the rules lex them) and the names each must give."""

from __future__ import annotations

import pytest

from orchestrator.truth_declarations import declared_names
from orchestrator.truth_lexing import code_and_rest, ts_code_and_rest

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


@pytest.mark.parametrize(("shape", "source", "names"), CSHARP, ids=[c[0] for c in CSHARP])
def test_csharp_declaration_shapes(shape: str, source: str, names: list[str]) -> None:
    assert declared_names(code_and_rest(source)[0], "cs") == names, shape


@pytest.mark.parametrize(("shape", "source", "names"), TYPESCRIPT,
                         ids=[c[0] for c in TYPESCRIPT])
def test_typescript_declaration_shapes(shape: str, source: str, names: list[str]) -> None:
    assert declared_names(ts_code_and_rest(source)[0], "ts") == names, shape


def test_a_long_line_of_delegates_is_read_in_linear_time() -> None:
    """Each delegate's signature is read to a bounded length: a line of 20,000 words
    `delegate` without a parameter list is read in well under a second."""
    import time
    started = time.monotonic()
    assert declared_names("delegate " * 20_000, "cs") == []
    assert time.monotonic() - started < 1.0
