"""The SCIP decoder and the truth rules, on indexes encoded here field by field (an encoder
independent of the decoder), and the ways an index is refused."""

from __future__ import annotations

import pytest

from orchestrator.oracle import scip, truth
from orchestrator.untrusted.errors import HostileInput

PKG = "scip-typescript npm demo 1.0.0 "


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _len(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def occurrence(line: int, symbol: str, roles: int = 0) -> bytes:
    rng = b"".join(_varint(v) for v in (line, 4, 9))
    return _len(1, rng) + _len(2, symbol.encode()) + (_int(3, roles) if roles else b"")


def document(path: str, *occurrences: bytes) -> bytes:
    return _len(4, b"TypeScript") + _len(1, path.encode()) + b"".join(
        _len(2, o) for o in occurrences)


def index(*documents: bytes, root: str = "file:///corpus") -> bytes:
    tool = _len(1, b"scip-typescript") + _len(2, b"0.4.0")
    metadata = _int(1, 0) + _len(2, tool) + _len(3, root.encode())
    return _len(1, metadata) + b"".join(_len(2, d) for d in documents)


MONEY = PKG + "src/`money.ts`/Money#"
FORMAT = PKG + "src/`money.ts`/formatMoney()."
PARAM = PKG + "src/`money.ts`/formatMoney().(Money)"
CART = PKG + "src/`cart.ts`/Cart#"
LIB = "scip-typescript npm typescript 5.9.3 lib/`lib.es5.d.ts`/Math#"

SAMPLE = index(
    document("web/src/money.ts", occurrence(0, MONEY, 1), occurrence(3, FORMAT, 1),
             occurrence(3, PARAM, 1), occurrence(4, MONEY), occurrence(5, LIB),
             occurrence(6, "local 1", 1)),
    document("web/src/cart.ts", occurrence(0, CART, 1), occurrence(2, MONEY),
             occurrence(8, FORMAT)),
    document("web/src/other.ts", occurrence(1, PARAM)),
    document("web/test/cart.test.ts", occurrence(2, CART), occurrence(3, CART)))


def test_decode_keeps_paths_lines_symbols_and_roles() -> None:
    decoded = scip.decode(SAMPLE)
    assert (decoded.tool_name, decoded.tool_version) == ("scip-typescript", "0.4.0")
    assert [d.path for d in decoded.documents] == ["web/src/money.ts", "web/src/cart.ts",
                                                   "web/src/other.ts", "web/test/cart.test.ts"]
    first = decoded.documents[0].occurrences[0]
    assert (first.line, first.character, first.symbol, first.is_definition) == (0, 4, MONEY,
                                                                                 True)
    assert not decoded.documents[1].occurrences[1].is_definition


def test_the_rules_give_exactly_these_sets() -> None:
    decoded = scip.decode(SAMPLE)
    defs = truth.Definitions.of(decoded)
    assert truth.references(decoded, defs, "Money", "ts") == (
        ["web/src/cart.ts", "web/src/money.ts"], [MONEY])
    # A parameter named like the symbol is never the symbol.
    assert truth.references(decoded, defs, "formatMoney", "ts")[0] == [
        "web/src/cart.ts", "web/src/money.ts"]
    assert truth.dependents(decoded, defs, "web/src/money.ts") == (
        ["web/src/cart.ts", "web/src/other.ts"], 3)
    assert truth.dependents(decoded, defs, "web/src/cart.ts") == (["web/test/cart.test.ts"], 1)
    assert truth.edges(decoded, defs) == [
        ["web/src/cart.ts", 3, "Money", "web/src/money.ts", 1],
        ["web/src/cart.ts", 9, "formatMoney", "web/src/money.ts", 4],
        ["web/src/money.ts", 5, "Money", "web/src/money.ts", 1],
        ["web/test/cart.test.ts", 3, "Cart", "web/src/cart.ts", 1],
        ["web/test/cart.test.ts", 4, "Cart", "web/src/cart.ts", 1]]
    assert truth.resolution(decoded, defs) == {
        "documents": 4, "occurrences": 12, "symbols_defined_in_corpus": 4,
        "defined_in_corpus": 10, "defined_outside": 1, "local": 1, "without_symbol": 0}


def test_an_empty_rule_is_refused() -> None:
    decoded = scip.decode(SAMPLE)
    defs = truth.Definitions.of(decoded)
    with pytest.raises(truth.EmptyTruth, match="'Nope'"):
        truth.references(decoded, defs, "Nope", "ts")
    with pytest.raises(truth.EmptyTruth, match="Money.*in a .rs file"):
        truth.references(decoded, defs, "Money", "rs")
    with pytest.raises(truth.EmptyTruth, match="no file beyond web/test/cart.test.ts|defines no"):
        truth.dependents(decoded, defs, "web/test/cart.test.ts")


def test_paths_are_rebased_onto_the_corpus_root() -> None:
    sub = scip.decode(index(document("src/lib.rs", occurrence(0, MONEY, 1)),
                            root="file:///corpus/inventory/"))
    assert [d.path for d in scip.rebased(sub).documents] == ["inventory/src/lib.rs"]
    with pytest.raises(HostileInput, match="path-escape: .*not the corpus"):
        scip.rebased(scip.decode(index(root="file:///home/x")))


@pytest.mark.parametrize(("data", "why"), [
    (b"", "empty"),
    (b"not an index at all\n", "wire type|varint|claims|field number"),
    (SAMPLE[:-3], "claims|runs past|overruns"),
    (_len(2, document("a.ts")), "tool_info"),
    (index(document("/etc/passwd")), "path-escape: .* is absolute"),
    (index(document("a.ts", _len(1, _varint(1)) + _len(2, b"x"))), "range"),
])
def test_what_is_not_an_index_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(HostileInput, match=why):
        scip.decode(data)


@pytest.mark.parametrize(("symbol", "name"), [
    (MONEY, "Money"), (FORMAT, "formatMoney"), (PARAM, None),
    ("rust-analyzer cargo acme 0.2.0 stock/StockLevel#available().", "available"),
    ("rust-analyzer cargo acme 0.2.0 stock/impl#[StockLevel]new().", "new"),
    ("scip-typescript npm @a/b 1.0.0 src/`a.ts`/`weird name`#", "weird name"),
    ("rust-analyzer cargo acme 0.2.0 macros/vec!", "vec"),
    ("local 12", None),
])
def test_short_names(symbol: str, name: str | None) -> None:
    assert scip.short_name(symbol) == name
