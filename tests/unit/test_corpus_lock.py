"""corpus.lock: the shipped pins, and one clear error (file, table, key) for each bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import corpus
from orchestrator.errors import InputError

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
version = 1

[sample]
id = "sample"
repo = "acme/sample"
url = "https://example.invalid/acme/sample.git"
sha = "0123456789abcdef0123456789abcdef01234567"
license = "MIT"
kind = "target"
status = "registered"
note = ""

[later]
id = "later"
repo = "acme/later"
url = "https://example.invalid/acme/later.git"
license = "MIT"
kind = "held-out"
status = "proposed"
note = "no sha until registered"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "corpus.lock"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_lock_pins_the_methodologys_corpora() -> None:
    pins = corpus.load_lock(ROOT / "corpus.lock")
    registered = {k: p for k, p in pins.items() if p.status == "registered"}
    assert {(p.id, p.repo, p.sha, p.license) for p in registered.values() if p.id != "demo"} == {
        ("csharp", "MassTransit/MassTransit", "855cf1752c94ca9498e0c45ce8d09fdc9e957dd6",
         "Apache-2.0"),
        ("typescript", "nrwl/nx", "1ce5e91f5ec13cf8812f3e67e1fae33079336876", "MIT"),
        ("csharp-target-held-out", "serilog/serilog",
         "4c9a312bc72e335897553472d0a2e91819bc51b1", "Apache-2.0"),
    }
    assert pins["demo"].builtin == "demo"
    # Substitutes for corpora that cannot be brought here: proposed, pinned, the reason noted.
    proposed = {k: p for k, p in pins.items() if p.status == "proposed"}
    assert {(p.id, p.repo, p.sha) for p in proposed.values()} == {
        ("typescript-substitute", "honojs/hono", "0293343dbf8f0bca52b210a98bcef31cc61395ee"),
        ("rust-substitute", "tokio-rs/bytes", "76c0fbb54ed4336caf9d2311658a2f4a5627c21d")}
    assert all("cannot be brought to this machine" in p.note for p in proposed.values())


def test_a_proposed_substitute_may_carry_its_sha(tmp_path: Path) -> None:
    text = GOOD.replace('status = "proposed"', 'status = "proposed"\nsha = "' + "a" * 40 + '"')
    pins = corpus.load_lock(write(tmp_path, text))
    assert pins["later"].sha == "a" * 40 and pins["later"].status == "proposed"


def test_a_proposed_corpus_loads_without_a_sha(tmp_path: Path) -> None:
    pins = corpus.load_lock(write(tmp_path, GOOD))
    assert pins["later"].sha is None and pins["later"].status == "proposed"
    assert pins["sample"] == corpus.CorpusPin(
        id="sample", repo="acme/sample", url="https://example.invalid/acme/sample.git",
        sha="0123456789abcdef0123456789abcdef01234567", license="MIT", kind="target",
        status="registered", note="")


BAD = {
    "short sha": (GOOD.replace('"0123456789abcdef0123456789abcdef01234567"', '"0123abc"'),
                  "sample.sha", 7),
    "upper-case sha": (GOOD.replace("0123456789abcdef", "0123456789ABCDEF", 1), "sample.sha", 7),
    "missing field": (GOOD.replace('license = "MIT"\nkind = "target"', 'kind = "target"'),
                      "sample.license", 3),
    "unknown field": (GOOD.replace('note = ""', 'note = ""\ntag = "v1"'), "sample.tag", 12),
    "id not the table": (GOOD.replace('id = "sample"', 'id = "other"'), "sample.id", 4),
    "bad status": (GOOD.replace('"registered"', '"approved"'), "sample.status", 10),
    "bad kind": (GOOD.replace('"target"', '"main"'), "sample.kind", 9),
    "proposed with a short sha": (GOOD.replace('status = "proposed"',
                                               'status = "proposed"\nsha = "' + "a" * 7 + '"'),
                                  "later.sha", 20),
    "registered without a sha": (GOOD.replace(
        'sha = "0123456789abcdef0123456789abcdef01234567"\n', ""), "sample.sha", 3),
    "non-string": (GOOD.replace('note = ""', "note = 3"), "sample.note", 11),
    "plain http url": (GOOD.replace("https://example.invalid/acme/sample",
                                    "http://example.invalid/acme/sample"), "sample.url", 6),
    "unknown builtin": (GOOD.replace("https://example.invalid/acme/sample.git",
                                     "builtin:nope"), "sample.url", 6),
    "bad repo": (GOOD.replace('"acme/sample"', '"sample"'), "sample.repo", 5),
    "wrong version": (GOOD.replace("version = 1", "version = 2"), "version", 1),
    "no version": (GOOD.replace("version = 1\n", ""), "version", None),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_lock_is_one_error_naming_file_table_and_key(tmp_path: Path, case: str) -> None:
    text, key, line = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        corpus.load_lock(path)
    err = info.value
    assert err.exit_code == 2
    assert err.data["key"] == key
    assert err.data["file"] == (f"{path}:{line}" if line else str(path))
    assert key in err.what and str(path) in err.what
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.lock"]


def test_a_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + GOOD[GOOD.index("[sample]"):GOOD.index("[later]")])
    with pytest.raises(InputError) as info:
        corpus.load_lock(path)
    assert info.value.data["key"] == "sample.id"
    assert f"{path}:21: sample.id: duplicate id 'sample' (first declared at line 3)" \
        in info.value.what


def test_a_lock_that_does_not_parse_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace('note = ""', "note = "))
    with pytest.raises(InputError, match=rf"{path}: not valid TOML: .*line 11") as info:
        corpus.load_lock(path)
    assert info.value.exit_code == 2


def test_a_missing_lock_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the corpus lock"):
        corpus.load_lock(tmp_path / "absent.lock")


def test_an_unknown_id_lists_the_known_ones(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    with pytest.raises(InputError) as info:
        corpus.pin_for(corpus.load_lock(path), "nope", path)
    assert info.value.fix == "known corpora: later, sample"
