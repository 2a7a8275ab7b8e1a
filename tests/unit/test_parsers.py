"""Output parsers: real outputs captured from the arms' containers on the demo corpus
(tests/unit/parser_fixtures/, see its README), and the edge cases around them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import parsers
from orchestrator.errors import InputError
from orchestrator.parsers import ParseError, Row

FIXTURES = Path(__file__).parent / "parser_fixtures"

MONEY_CS = {
    "dotnet/src/Ordering/Money.cs", "dotnet/src/Ordering/Order.cs",
    "dotnet/src/Ordering/OrderLine.cs", "dotnet/src/Ordering/Events/OrderPlaced.cs",
    "dotnet/src/Ordering/Pricing/BulkDiscountRule.cs", "dotnet/src/Ordering/Pricing/CouponRule.cs",
    "dotnet/src/Ordering/Pricing/PricingContext.cs", "dotnet/src/Ordering/Pricing/PricingEngine.cs",
    "dotnet/src/Ordering/Pricing/PricingRule.cs", "dotnet/src/Ordering/Pricing/TaxRule.cs",
    "dotnet/tests/Ordering.Tests/OrderServiceTests.cs",
    "dotnet/tests/Ordering.Tests/PricingEngineTests.cs",
}
FORMAT_MONEY = {"web/src/money.ts", "web/src/checkout/checkout.ts", "web/src/index.ts",
                "web/test/cart.test.ts"}
STOCK_LEVEL = {"inventory/src/stock.rs", "inventory/src/lib.rs", "inventory/src/policy.rs",
               "inventory/src/warehouse.rs"}


def fixture(arm: str, name: str) -> tuple[bytes, bytes]:
    folder = FIXTURES / arm
    err = folder / f"{name}.stderr"
    return (folder / f"{name}.stdout").read_bytes(), err.read_bytes() if err.exists() else b""


def parse(arm: str, name: str, kind: str) -> parsers.Parsed:
    return parsers.get_parser(arm).parse(*fixture(arm, name), kind)


def files(parsed: parsers.Parsed) -> list[str]:
    """Distinct paths in first-seen order."""
    return list(dict.fromkeys(row.path for row in parsed.rows))


def reaches(parsed: parsers.Parsed) -> bool:
    return bool(parsed.rows) and all(r.line is not None and r.line >= 1 and r.reason
                                     for r in parsed.rows)


# -- the registry -----------------------------------------------------------------------------

def test_every_parser_is_registered_under_its_own_name() -> None:
    assert set(parsers.PARSERS) == {"rg", "ast-grep", "code-review-graph", "devscout",
                                    "code-index-mcp", "serena", "aider-repomap", "rg-heading"}
    for name, parser in parsers.PARSERS.items():
        assert parser.name == name
        assert parsers.get_parser(name) is parser


def test_an_unknown_parser_lists_the_known_ones() -> None:
    with pytest.raises(InputError) as err:
        parsers.get_parser("grep")
    assert err.value.exit_code == 2
    assert err.value.data["name"] == "grep"
    for name in parsers.PARSERS:
        assert name in str(err.value)


def test_an_unknown_task_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown task kind 'find'"):
        parsers.get_parser("rg").parse(b"", b"", "find")


# -- rg: captured -----------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "expected"), [
    ("references-money-csharp", MONEY_CS),
    ("references-format-money", FORMAT_MONEY),
    ("references-stock-level", STOCK_LEVEL),
])
def test_rg_references_name_the_files_that_spell_the_symbol(name: str,
                                                            expected: set[str]) -> None:
    parsed = parse("rg", name, "references")
    assert set(files(parsed)) == expected
    assert parsed.calls == 1
    assert reaches(parsed)
    symbol = {"references-money-csharp": "Money", "references-format-money": "formatMoney",
              "references-stock-level": "StockLevel"}[name]
    assert all(symbol in row.reason for row in parsed.rows if row.reason)


def test_rg_rows_carry_the_line_and_the_source_text() -> None:
    parsed = parse("rg", "references-format-money", "references")
    assert Row("web/src/money.ts", 27, "export function formatMoney(m: Money): string {") \
        in parsed.rows
    assert not any(row.path.startswith(("./", "/")) for row in parsed.rows)


def test_rg_impact_is_four_calls_two_hops_out() -> None:
    out, err = fixture("rg", "impact-money")
    parsed = parsers.get_parser("rg").parse(out, err, "impact")
    assert parsed.calls == 4 == err.count(b"sandbench-call: rg ")
    # Call 1 (-o -r '$1') names what the seed declares, as the row's reason.
    assert parsed.rows[0] == Row("dotnet/src/Ordering/Money.cs", 4, "Money")
    found = set(files(parsed))
    assert found >= MONEY_CS
    # Hop 2: files that name a type declared by a file that names Money.
    assert {"dotnet/src/Ordering/Services/OrderService.cs",
            "dotnet/src/Ordering/Services/IOrderRepository.cs"} <= found
    assert reaches(parsed)


def test_rg_impact_on_rust() -> None:
    parsed = parse("rg", "impact-allocation-policy", "impact")
    assert parsed.calls == 4
    assert set(files(parsed)) == {"inventory/src/policy.rs", "inventory/src/lib.rs",
                                  "inventory/src/warehouse.rs",
                                  "inventory/tests/reservations.rs"}


def test_rg_locate_rows_follow_the_ranking_and_count_rows_are_not_answers() -> None:
    out, err = fixture("rg", "locate-bulk-threshold")
    parsed = parsers.get_parser("rg").parse(out, err, "locate")
    assert parsed.calls == 2
    counted = [line.rsplit(":", 1)[0].removeprefix("./")
               for line in out.decode().splitlines() if line.count(":") == 1]
    assert len(counted) == 5
    assert files(parsed) == counted
    assert "dotnet/src/Ordering/Pricing/BulkDiscountRule.cs" in counted
    assert reaches(parsed)


# -- ast-grep: captured -----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "expected"), [
    ("references-money-csharp", MONEY_CS),
    ("references-format-money", FORMAT_MONEY),
    ("references-stock-level", STOCK_LEVEL),
])
def test_ast_grep_references_agree_with_rg_on_the_demo_corpus(name: str,
                                                              expected: set[str]) -> None:
    parsed = parse("ast-grep", name, "references")
    assert set(files(parsed)) == expected
    assert parsed.calls == 1
    assert reaches(parsed)


def test_ast_grep_lines_are_made_one_based() -> None:
    out, _ = fixture("ast-grep", "references-format-money")
    raw = [json.loads(line) for line in out.splitlines()]
    definition = next(m for m in raw if m["file"] == "web/src/money.ts")
    assert definition["range"]["start"]["line"] == 26
    parsed = parsers.get_parser("ast-grep").parse(out, b"", "references")
    assert Row("web/src/money.ts", 27, "export function formatMoney(m: Money): string {") \
        in parsed.rows


# -- code-review-graph: captured --------------------------------------------------------------

def test_crg_references_disambiguate_then_ask_for_the_declaring_files_importers() -> None:
    out, err = fixture("code-review-graph", "references-money-csharp")
    assert out.count(b'"status": "ambiguous"') == 1
    parsed = parsers.get_parser("code-review-graph").parse(out, err, "references")
    assert parsed.calls == 2
    assert parsed.rows == (
        Row("dotnet/tests/Ordering.Tests/OrderServiceTests.cs", 1, "IMPORTS_FROM"),
        Row("dotnet/tests/Ordering.Tests/PricingEngineTests.cs", 1, "IMPORTS_FROM"),
    )


def test_crg_references_of_a_function_are_its_call_sites() -> None:
    parsed = parse("code-review-graph", "references-format-money", "references")
    assert parsed.calls == 1
    assert parsed.rows == (Row("web/src/checkout/checkout.ts", 26, "CALLS"),
                           Row("web/test/cart.test.ts", 17, "CALLS"))


def test_crg_references_of_a_rust_struct() -> None:
    parsed = parse("code-review-graph", "references-stock-level", "references")
    assert parsed.calls == 2
    assert set(files(parsed)) == {"inventory/src/warehouse.rs", "inventory/src/reservation.rs",
                                  "inventory/src/lib.rs", "inventory/src/policy.rs"}
    assert reaches(parsed)


def test_crg_impact_rows_are_the_impacted_nodes_made_repo_relative() -> None:
    parsed = parse("code-review-graph", "impact-money", "impact")
    assert parsed.calls == 1
    assert parsed.rows[0] == Row("dotnet/src/Ordering/Order.cs", 44, "Order.Subtotal")
    assert set(files(parsed)) == {
        "dotnet/src/Ordering/Order.cs", "dotnet/src/Ordering/OrderLine.cs",
        "dotnet/src/Ordering/Pricing/BulkDiscountRule.cs",
        "dotnet/src/Ordering/Pricing/CouponRule.cs",
        "dotnet/src/Ordering/Pricing/PricingContext.cs",
        "dotnet/src/Ordering/Pricing/PricingEngine.cs",
        "dotnet/tests/Ordering.Tests/OrderServiceTests.cs",
        "dotnet/tests/Ordering.Tests/PricingEngineTests.cs"}
    assert reaches(parsed)


def test_crg_impact_file_nodes_are_named_by_their_kind() -> None:
    parsed = parse("code-review-graph", "impact-allocation-policy", "impact")
    assert parsed.rows == (Row("inventory/src/lib.rs", 1, "File"),
                           Row("inventory/src/warehouse.rs", 1, "File"))


def test_crg_search_keeps_the_tools_ranking() -> None:
    parsed = parse("code-review-graph", "locate-bulk-threshold", "locate")
    assert parsed.rows[:2] == (
        Row("dotnet/tests/Ordering.Tests/PricingEngineTests.cs", 26,
            "PricingEngineTests.BulkDiscountAppliesAboveTheThreshold"),
        Row("dotnet/src/Ordering/Pricing/BulkDiscountRule.cs", 4, "BulkDiscountRule"))
    assert len(parsed.rows) == 20
    assert reaches(parsed)


def test_crg_search_with_no_result_is_an_empty_answer() -> None:
    parsed = parse("code-review-graph", "locate-coupon-code-case", "e2e-retrieval")
    assert parsed == parsers.Parsed((), 1)


# -- devscout: its documented answers ---------------------------------------------------------

def test_devscout_refs_rows_come_from_every_member_and_edge_kind() -> None:
    parsed = parse("devscout", "refs-members", "references")
    assert parsed.rows == (Row("CatalogController.cs", 9, "uses-member-precise"),
                           Row("CatalogStoreTests.cs", 12, "uses-member-precise"))
    assert parsed.calls == 1


def test_devscout_impact_rows_take_their_line_from_from_lines() -> None:
    parsed = parse("devscout", "impact", "impact")
    assert parsed.rows == (Row("InMemoryCatalogStore.cs", 5, "inherits"),
                           Row("CatalogController.cs", 5, "uses-type"),
                           Row("CatalogStoreTests.cs", 11, "uses-type"))


def test_devscout_impact_row_without_from_lines_has_no_line() -> None:
    out = json.dumps({"schema_version": 1, "outcome": "hit",
                      "rows": [{"file": "A/User.cs", "hop": 1, "why": "uses-type"}]}).encode()
    parsed = parsers.get_parser("devscout").parse(out, b"", "impact")
    assert parsed.rows == (Row("A/User.cs", None, "uses-type"),)


def test_devscout_ambiguous_answer_has_no_rows() -> None:
    assert parse("devscout", "refs-ambiguous", "references").rows == ()


def test_devscout_find_reads_declaration_and_manifest_lines() -> None:
    parsed = parse("devscout", "find-manifest", "locate")
    assert parsed.rows == (
        Row("src/ArticleCard.tsx", 1, "function ArticleCard | interface ArticleCardProps"),
        Row("src/articleTypes.ts", 1, "interface ArticleItem | interface ArticleAuthor | "
            "type ArticleItemStatus | type ArticlePage"))
    text = ("dotnet/src/Ordering/Pricing/BulkDiscountRule.cs:4  public sealed class "
            "BulkDiscountRule : PricingRule\n"
            "dotnet/src/Ordering/Money.cs:4\n"
            "… +3 more declarations (refine query)\n"
            "+2 resource-key hits, use --resources\n"
            "dotnet/src/Ordering/Order.cs:3: orders and their lines; see Money.cs:5  x\n"
            "… +7 more (refine query)\n")
    parsed = parsers.get_parser("devscout").parse(text.encode(), b"", "e2e-retrieval")
    assert parsed.rows == (
        Row("dotnet/src/Ordering/Pricing/BulkDiscountRule.cs", 4,
            "public sealed class BulkDiscountRule : PricingRule"),
        Row("dotnet/src/Ordering/Money.cs", 4, None),
        Row("dotnet/src/Ordering/Order.cs", 3, "orders and their lines; see Money.cs:5  x"))


def test_devscout_find_zero_hit_line_is_an_empty_answer() -> None:
    out = b'no matches for "bulk threshold" (run \'devscout map\' if manifest is missing)\n'
    assert parsers.get_parser("devscout").parse(out, b"", "locate").rows == ()


# -- edge cases, every parser -----------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(parsers.PARSERS))
@pytest.mark.parametrize("kind", ["locate", "references", "impact", "e2e-retrieval"])
def test_empty_output_is_an_empty_answer_of_one_call(name: str, kind: str) -> None:
    assert parsers.get_parser(name).parse(b"", b"", kind) == parsers.Parsed((), 1)
    assert parsers.get_parser(name).parse(b"\n\n", b"", kind).rows == ()


@pytest.mark.parametrize(("name", "kind", "out"), [
    ("rg", "references", b"Traceback (most recent call last):\n"),
    ("rg", "references", b"./a.cs:12:ok\nthis line is not rg output\n"),
    ("ast-grep", "references", b"Error: Cannot parse rule INLINE_RULES\n"),
    ("ast-grep", "references", b'{"file": "a.rs"}\n'),
    ("ast-grep", "references", b'{"file": "a.rs", "range": {"start": {"line": -1}}}\n'),
    ("code-review-graph", "references", b"No graph found. Run `code-review-graph build`.\n"),
    ("code-review-graph", "references", b'{"status": "error", "error": "boom"}'),
    ("code-review-graph", "impact", b'{"status": "ok", "pattern": "callers_of", "edges": []}'),
    ("code-review-graph", "references", b'{"status": "ok", "results": []}'),
    ("code-review-graph", "locate", b'{"status": "ok", "query": "x", "results": [1]}'),
    ("devscout", "references", b"error: not a repository\n"),
    ("devscout", "impact", b'{"rows": [{"line": 3}]}'),
    ("devscout", "impact", b'{"rows": [{"file": "a.cs", "line": "3"}]}'),
    ("devscout", "locate", b"error: no repository at /corpus\n"),
])
def test_output_a_parser_cannot_read_is_a_parse_error(name: str, kind: str, out: bytes) -> None:
    with pytest.raises(ParseError) as err:
        parsers.get_parser(name).parse(out, b"", kind)
    assert err.value.message.startswith(name)


def test_invalid_utf8_is_kept_exactly_and_a_path_made_portable() -> None:
    """A path's undecodable byte is spelled \\xNN (as the listing of a corpus spells it, and
    never as another path's name); the rest of a row keeps the byte exactly (a lone surrogate
    the writers can hold)."""
    out = b"./src/caf\xe9.cs:3:var \xff = Money.Zero;\n./src/caf\\xe9.cs:4:x\n"
    parsed = parsers.get_parser("rg").parse(out, b"", "references")
    assert parsed.rows == (Row("src/caf\\xe9.cs", 3, "var \udcff = Money.Zero;"),
                           Row("src/caf\\\\xe9.cs", 4, "x"))
    match = {"file": "a.cs", "range": {"start": {"line": 0}}, "lines": "x", "text": "x"}
    out = json.dumps(match).encode().replace(b'"x"', b'"\xc3"', 1)
    assert parsers.get_parser("ast-grep").parse(out, b"", "references").rows[0].reason == \
        "\udcc3"
    escaped = json.dumps({**match, "file": "b\udcff.cs"}).encode()  # a lone surrogate escape
    assert parsers.get_parser("ast-grep").parse(escaped, b"", "references").rows[0].path == \
        "b\\xff.cs"


@pytest.mark.parametrize(("raw", "expected"), [
    ("./a/b.cs", "a/b.cs"), ("././a.cs", "a.cs"), ("/corpus/a/b.cs", "a/b.cs"),
    ("a/b.cs", "a/b.cs"), ("/corpus/./a.cs", "a.cs"),
])
def test_paths_are_made_repo_relative(raw: str, expected: str) -> None:
    assert parsers.repo_path(raw, "test") == expected


@pytest.mark.parametrize("raw", ["/etc/passwd", "/corpusx/a.cs", "/corpus/", "./", "",
                                 "../outside.cs", "a/../../b.cs"])
def test_paths_outside_the_repository_are_refused(raw: str) -> None:
    with pytest.raises(ParseError):
        parsers.repo_path(raw, "test")


@pytest.mark.parametrize(("name", "kind", "out"), [
    ("rg", "references", b"/etc/passwd:1:root:x:0:0\n"),
    ("ast-grep", "references",
     b'{"file": "/tmp/a.cs", "range": {"start": {"line": 0}}, "text": "a"}\n'),
    ("code-review-graph", "references", b'{"status": "ok", "pattern": "callers_of", "edges": '
     b'[{"kind": "CALLS", "file_path": "/home/me/a.ts", "line": 2}]}'),
    ("devscout", "locate", b"/etc/shadow:1: purpose\n"),
])
def test_every_parser_refuses_an_absolute_path_outside_corpus(name: str, kind: str,
                                                               out: bytes) -> None:
    with pytest.raises(ParseError, match="outside /corpus"):
        parsers.get_parser(name).parse(out, b"", kind)


def test_ast_grep_strips_corpus_and_converts_line_zero() -> None:
    out = b'{"file": "/corpus/src/a.rs", "range": {"start": {"line": 0, "column": 4}}, ' \
          b'"lines": "    let x = Stock;", "text": "Stock"}\n'
    assert parsers.get_parser("ast-grep").parse(out, b"", "references").rows == \
        (Row("src/a.rs", 1, "let x = Stock;"),)


def test_ast_grep_reads_the_array_forms_too() -> None:
    stream, _ = fixture("ast-grep", "references-format-money")
    array = ("[" + ",".join(stream.decode().splitlines()) + "]").encode()
    parser = parsers.get_parser("ast-grep")
    assert parser.parse(array, b"", "references") == parser.parse(stream, b"", "references")


def test_rg_skips_count_and_binary_notice_lines_and_strips_cr() -> None:
    out = (b"./a.cs:7\n./b.bin: binary file matches (found \"\\0\" byte around offset 9)\n"
           b"./a.cs:3:Money m;\r\n./a.cs:4:\n")
    assert parsers.get_parser("rg").parse(out, b"", "locate").rows == (
        Row("a.cs", 3, "Money m;"), Row("a.cs", 4, None))


def test_rg_count_lines_belong_to_ranked_kinds_only() -> None:
    parser = parsers.get_parser("rg")
    assert parser.parse(b"./a.cs:7\n", b"", "e2e-retrieval").rows == ()
    with pytest.raises(ParseError, match="line 1 is not path:line:text"):
        parser.parse(b"./a.cs:7\n", b"", "references")


def test_calls_count_marker_lines_only_at_line_start() -> None:
    err = (b"sandbench-call: rg -c x .\nrg: ./secret: Permission denied\n"
           b"warning: sandbench-call: not a marker\nsandbench-call: rg -n x -- a.cs\n")
    assert parsers.count_calls(err) == 2
    assert parsers.count_calls(b"INFO: building\n") == 1
    assert parsers.get_parser("rg").parse(b"", err, "locate").calls == 2


@pytest.mark.parametrize(("name", "kind", "truth"), [
    ("references-money-csharp", "references", MONEY_CS),
    ("references-format-money", "references", FORMAT_MONEY),
    ("references-stock-level", "references", STOCK_LEVEL),
])
def test_code_index_mcp_matches_are_rows_with_line_and_text(name: str, kind: str,
                                                            truth: set[str]) -> None:
    parsed = parse("code-index-mcp", name, kind)
    assert {r.path for r in parsed.rows} == truth
    assert all(r.line is not None and r.line >= 1 and r.reason for r in parsed.rows)
    assert parsed.calls == 1


def test_code_index_mcp_money_row_is_the_declaration_line() -> None:
    rows = parse("code-index-mcp", "references-money-csharp", "references").rows
    assert Row("dotnet/src/Ordering/Money.cs", 4,
               "public readonly record struct Money(long MinorUnits, string Currency)") in rows


@pytest.mark.parametrize("stdout", [b'{"results": {}}', b"[]", b'{"results": [{"line": 3}]}',
                                    b'{"results": [{"file": "/etc/passwd", "line": 1}]}',
                                    b'{"results": [{"file": "a.cs", "line": 0}]}', b"not json"])
def test_code_index_mcp_refuses_other_shapes(stdout: bytes) -> None:
    with pytest.raises(ParseError):
        parsers.get_parser("code-index-mcp").parse(stdout, b"", "references")


def test_serena_references_are_the_marked_lines_one_based() -> None:
    parsed = parse("serena", "references-format-money", "references")
    # serena leaves out the definition (include_self=False): money.ts is not answered.
    assert files(parsed) == ["web/src/checkout/checkout.ts", "web/src/index.ts",
                             "web/test/cart.test.ts"]
    # The marked line `  >   2:import { formatMoney } ...` is 0-based: line 3 of the file.
    assert parsed.rows[0] == Row("web/src/checkout/checkout.ts", 3,
                                 'import { formatMoney } from "../money.js";')
    assert Row("web/test/cart.test.ts", 17,
               'assert.equal(formatMoney(cart.total()), "36.99 EUR");') in parsed.rows
    assert len(parsed.rows) == 5 and reaches(parsed) and parsed.calls == 1


def test_serena_references_include_uses_inside_the_declaring_file() -> None:
    parsed = parse("serena", "references-cart-line", "references")
    assert files(parsed) == ["web/src/cart/cartLine.ts", "web/src/api/ordersClient.ts",
                             "web/src/cart/cart.ts"]
    assert Row("web/src/api/ordersClient.ts", 1,
               'import type { CartLine } from "../cart/cartLine.js";') in parsed.rows


def test_serena_shortened_answers_keep_their_paths() -> None:
    serena = parsers.get_parser("serena")
    no_context = (b"References without surrounding lines:\n"
                  b'{"web/src/index.ts": {"File": [{"name_path": "index", "reference_line": 5}]}}')
    assert serena.parse(no_context, b"", "references").rows == (
        Row("web/src/index.ts", 6, "index"),)
    counts = b'Reference counts per file:\n{"web/src/a.ts": 2, "web/src/b.ts": 1}'
    assert serena.parse(counts, b"", "references").rows == (
        Row("web/src/a.ts", None, None), Row("web/src/b.ts", None, None))
    assert serena.parse(b"{}", b"", "references").rows == ()


@pytest.mark.parametrize("stdout", [
    b"Found 812 references.", b"[]", b'{"a.ts": []}', b'{"a.ts": {"File": {}}}',
    b'{"a.ts": {"File": [{"name_path": "a"}]}}',
    b'{"a.ts": {"File": [{"content_around_reference": "...   1:x\\n...   2:y"}]}}',
    b'{"/etc/passwd": {"File": [{"content_around_reference": "  >   0:x"}]}}',
    b'References without surrounding lines:\n{"a.ts": {"File": [{"reference_line": -1}]}}',
    b"not json"])
def test_serena_refuses_other_shapes(stdout: bytes) -> None:
    with pytest.raises(ParseError):
        parsers.get_parser("serena").parse(stdout, b"", "references")


def test_ctags_locate_is_ranked_files_of_definitions_one_call_per_word() -> None:
    parsed = parsers.get_parser("rg").parse(*fixture("ctags", "locate-bulk-threshold"),
                                            "locate")
    files = list(dict.fromkeys(r.path for r in parsed.rows))
    assert files[:2] == ["dotnet/src/Ordering/Order.cs",
                         "dotnet/src/Ordering/Pricing/BulkDiscountRule.cs"]
    assert len(files) == 5 and all(r.line and r.reason for r in parsed.rows)
    stderr = fixture("ctags", "locate-bulk-threshold")[1]
    assert parsed.calls == stderr.count(b"sandbench-call: readtags ") == 19
