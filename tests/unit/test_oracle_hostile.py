"""An oracle's index is hostile input: crafted SCIP indexes whose project root or documents
climb out of the corpus, name /proc or a link, or whose bytes are built to cost the host
(truncated and endless varints, lengths past the buffer, deep nesting, endless ranges, more
documents and occurrences than the bounds) are refused with a classified `HostileInput`; the
truth build turns it into one error naming the oracle, the document and the reason, and reads
no host file."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrator import arms, suite
from orchestrator.oracle import build, scip, truth
from orchestrator.oracle.sources import PinnedSources
from orchestrator.untrusted import limits, paths as untrusted_paths
from orchestrator.untrusted.errors import HostileInput
from tests.unit.test_oracle_truth import MONEY, _int, _len, _varint, document, index, occurrence

REPO = Path(__file__).resolve().parents[2]
UP = "/".join([".."] * 12)


def _refused(data: bytes, kind: str, match: str | None = None) -> HostileInput:
    with pytest.raises(HostileInput, match=match) as caught:
        scip.rebased(scip.decode(data))
    assert caught.value.kind == kind, caught.value
    return caught.value


# -- paths ----------------------------------------------------------------------------------

@pytest.mark.parametrize("root", [
    "file:///corpus/../etc", "file:///corpus/web/../../etc", f"file:///corpus/{UP}/proc/self",
    "file:///proc/self/", "file:///etc", "file:///", "file:///corpuses/web",
    "file:///corpus/./web", "file:///corpus//web", "file:///corpus/%2e%2e/etc",
    "file:///corpus/%2E%2E", "file:///corpus/a%00b", "file:///corpus/%ff",
    "file://host/corpus", "/corpus", "", "corpus/web"])
def test_a_project_root_outside_the_corpus_is_refused(root: str) -> None:
    exc = _refused(index(document("lib.rs"), root=root), "path-escape")
    assert len(exc.message) < 400


@pytest.mark.parametrize(("root", "prefix"), [
    ("file:///corpus", ""), ("file:///corpus/", ""), ("file:///corpus/inventory/", "inventory/"),
    ("file:///corpus/my%20dir/web", "my dir/web/")])
def test_the_corpus_and_directories_under_it_are_roots(root: str, prefix: str) -> None:
    decoded = scip.rebased(scip.decode(index(document("src/a.ts"), root=root)))
    assert [d.path for d in decoded.documents] == [f"{prefix}src/a.ts"]


def test_the_oracles_own_mount_is_its_corpus() -> None:
    decoded = scip.decode(index(document("src/lib.rs"), root="file:///state/export/"))
    assert [d.path for d in scip.rebased(decoded, "/state/export").documents] == ["src/lib.rs"]
    with pytest.raises(HostileInput, match="path-escape"):
        scip.rebased(decoded, "/corpus")
    climbing = scip.decode(index(document("environ"),
                                 root=f"file:///state/export/{UP}/proc/self"))
    with pytest.raises(HostileInput, match="path-escape: .*'\\.\\.'"):
        scip.rebased(climbing, "/state/export")


@pytest.mark.parametrize("path", [
    "../../etc/passwd", "/etc/passwd", "src/../../etc/passwd", "src/..", "./src/a.rs",
    "src//a.rs", "src/", "a\0b", "x" * (limits.SCIP_PATH_MAX_BYTES + 1)])
def test_a_document_outside_the_corpus_is_refused(path: str) -> None:
    kind = "too-large" if len(path) > limits.SCIP_PATH_MAX_BYTES else "path-escape"
    exc = _refused(index(document("ok.rs"), document(path)), kind)
    assert kind == "too-large" or exc.data["document"] == path


# -- the decoder's bounds -------------------------------------------------------------------

def _meta() -> bytes:
    return _len(1, _len(2, _len(1, b"rust-analyzer")) + _len(3, b"file:///corpus"))


@pytest.mark.parametrize(("data", "match"), [
    (_meta() + b"\x12\xff\xff\xff", "varint runs past the end"),
    (_meta() + b"\x12" + b"\xff" * 10 + b"\x01", "longer than 10 bytes"),
    (_meta() + b"\x12" + b"\xff" * 9 + b"\x7f", "exceeds 64 bits"),
    (_meta() + b"\x12" + _varint(1 << 62) + b"xx", "claims 4611686018427387904 bytes, 2 are"),
    (_meta() + b"\x12" + _varint(3) + b"xx", "claims 3 bytes, 2 are left"),
    (_meta() + _len(2, _len(1, b"a.rs") + b"\x22\x05ab"), "claims 5 bytes, 2 are left"),
    (_meta() + b"\x15\x01\x02", "fixed-width field 2 runs past"),
    (_meta() + b"\x17", "wire type 7"),
    (_meta() + b"\x00\x01", "field number 0"),
])
def test_bytes_that_are_not_protobuf_are_refused(data: bytes, match: str) -> None:
    _refused(data, "malformed", match)


def test_an_endless_range_stops_at_its_bound_with_a_short_message() -> None:
    packed = _len(1, b"\x01" * (32 << 20))
    started = time.monotonic()
    exc = _refused(_meta() + _len(2, _len(1, b"a.rs") + _len(2, packed)), "malformed",
                   "more than 4 numbers")
    assert time.monotonic() - started < 3  # the whole range: ~15 s here
    assert len(str(exc)) < 200 and exc.data["document"] == "a.rs"
    repeated = _len(2, b"".join(_int(1, 1) for _ in range(5)))
    _refused(_meta() + _len(2, _len(1, b"a.rs") + repeated), "malformed", "more than 4")


def test_deep_nesting_is_stepped_over_in_linear_time() -> None:
    nested = b""
    for _ in range(100_000):  # 100,000 levels in fields the decoder does not know
        nested = _len(9, nested)
    data = _meta() + _len(2, _len(1, b"a.rs") + nested + _len(2, occurrence(0, MONEY))
                          + _len(15, nested)) + _len(7, nested)
    started = time.monotonic()
    decoded = scip.decode(data)
    assert time.monotonic() - started < 5
    assert [(d.path, len(d.occurrences)) for d in decoded.documents] == [("a.rs", 1)]
    # A known field holding the nesting is not an occurrence: refused, not descended.
    _refused(_meta() + _len(2, _len(1, b"a.rs") + _len(2, nested)), "malformed", "range")


def test_documents_and_occurrences_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "SCIP_MAX_DOCUMENTS", 3)
    monkeypatch.setattr(limits, "SCIP_MAX_OCCURRENCES", 5)
    three = [document(f"f{i}.rs", occurrence(0, MONEY)) for i in range(3)]
    assert len(scip.decode(index(*three)).documents) == 3
    _refused(index(*three, document("f3.rs")), "too-large", "more than 3 documents")
    spread = [document(f"f{i}.rs", occurrence(0, MONEY), occurrence(1, MONEY)) for i in range(3)]
    exc = _refused(index(*spread), "too-large", "more than 5 occurrences")
    assert exc.data["document"] == "f2.rs"


def test_sizes_of_texts_and_duplicate_documents() -> None:
    long_symbol = "x" * (limits.SCIP_TEXT_MAX_BYTES + 1)
    _refused(index(document("a.rs", occurrence(0, long_symbol))), "too-large", "symbol")
    _refused(index(document("a.rs"), document("a.rs")), "malformed", "two documents")
    _refused(index(root="file:///corpus/" + "d/" * 3000), "too-large", "project root")


def test_the_real_documents_bound_on_an_index_just_past_it() -> None:
    tiny = _len(2, _len(1, b"a"))
    data = _meta() + b"".join(_len(2, _len(1, f"{i}".encode())) for i in
                              range(limits.SCIP_MAX_DOCUMENTS)) + tiny
    _refused(data, "too-large", f"more than {limits.SCIP_MAX_DOCUMENTS} documents")


# -- reading source: the pristine copy's tracked regular files, never a link ----------------

@pytest.fixture
def pristine(tmp_path: Path) -> tuple[Path, str, Path]:
    """A git checkout standing for the pristine copy: a tracked file, a tracked link to a
    host canary, a tracked link to /; and the canary outside it."""
    canary = tmp_path / "host-canary.rs"
    canary.write_text("fn host_canary_leaked() {}\n")
    repo = tmp_path / "pristine"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "lib.rs").write_text("fn make() {\n    helper();\n}\n")
    os.symlink(canary, repo / "src" / "link.rs")
    os.symlink("/", repo / "root")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pin"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env)
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, env=env,
                         capture_output=True, text=True).stdout.strip()
    return repo, sha, canary


def test_sources_are_read_only_from_tracked_regular_files(pristine: tuple[Path, str, Path]
                                                          ) -> None:
    repo, sha, canary = pristine
    sources = PinnedSources.at_pin(repo, sha)
    assert sources.read("src/lib.rs").startswith("fn make()")
    for rel, kind in [("src/link.rs", "path-escape"), ("root", "path-escape"),
                      ("root/etc/passwd", "not-at-pin"), ("../host-canary.rs", "path-escape"),
                      (f"{UP}/proc/self/environ", "path-escape"), ("/etc/passwd", "path-escape"),
                      ("src/untracked.rs", "not-at-pin")]:
        with pytest.raises(HostileInput) as caught:
            sources.read(rel)
        assert caught.value.kind == kind, (rel, caught.value)


def test_a_tracked_file_turned_into_a_link_is_never_followed(pristine: tuple[Path, str, Path]
                                                             ) -> None:
    repo, sha, canary = pristine
    sources = PinnedSources.at_pin(repo, sha)
    (repo / "src" / "lib.rs").unlink()
    os.symlink(canary, repo / "src" / "lib.rs")
    with pytest.raises(HostileInput, match="path-escape: .*without following a link \\(ELOOP\\)"):
        sources.read("src/lib.rs")
    shutil.move(repo / "src", repo / "real-src")
    os.symlink(repo / "real-src", repo / "src")
    with pytest.raises(HostileInput, match="path-escape: .*(ELOOP|ENOTDIR)"):
        sources.read("src/lib.rs")
    os.mkfifo(repo / "fifo")
    with pytest.raises(HostileInput, match="not a regular file"):
        untrusted_paths.read_bytes(repo, "fifo", 1 << 20)


# -- the truth build: one error naming the oracle, the document, the reason -----------------

def _cell(tmp_path: Path, data: bytes) -> tuple[Path, SimpleNamespace]:
    cell = tmp_path / "cell"
    cell.mkdir(parents=True)
    (cell / "stdout").write_bytes(data)
    (cell / "stderr").write_bytes(b"indexing \x1b[2J done\n")
    stream = SimpleNamespace(truncated=False, bytes_total=len(data), bytes_kept=len(data),
                             sha256="0" * 64)
    record = SimpleNamespace(outcome="ok", exit={"exit_code": 0}, stdout=stream, stderr=stream,
                             image_id="sha256:" + "0" * 64, argv=["scip-oracle", "."],
                             timing={})
    return cell, record


def _rust_suite(tmp_path: Path) -> tuple[suite.Suite, arms.ArmSpec]:
    shutil.copytree(REPO / "suites" / "rust-edges", tmp_path / "suites" / "rust-edges",
                    ignore=shutil.ignore_patterns("truth"))
    (spec,) = arms.load_arms(REPO / "arms", ["oracle-rust-analyzer"])
    return suite.load_suite(tmp_path / "suites", "rust-edges"), spec


def rust_index(root: str, *documents: bytes) -> bytes:
    tool = _len(1, b"rust-analyzer") + _len(2, b"1.85.1")
    return _len(1, _len(2, tool) + _len(3, root.encode())) + b"".join(
        _len(2, d) for d in documents)


def _every_position(path: str, length: int) -> bytes:
    """A document with a local symbol at every byte of its first line: the lexer's name at
    each position would carry any identifier of the file into the truth."""
    occs = b"".join(_len(2, _len(1, b"".join(_varint(v) for v in (0, c, c + 1)))
                         + _len(2, b"local 1")) for c in range(length))
    return _len(4, b"Rust") + _len(1, path.encode()) + occs


@pytest.mark.parametrize(("root", "doc", "kind", "named"), [
    (f"file:///state/export/{UP}/proc/self", "environ", "path-escape", None),
    ("file:///state/export/", f"{UP}/proc/self/environ", "path-escape", f"{UP}/proc/self/environ"),
    ("file:///state/export/", "src/link.rs", "path-escape", "src/link.rs"),
    ("file:///state/export/", "src/oracle-made.rs", "not-at-pin", "src/oracle-made.rs"),
])
def test_truth_build_refuses_the_oracle_naming_the_document(
        tmp_path: Path, pristine: tuple[Path, str, Path], monkeypatch: pytest.MonkeyPatch,
        root: str, doc: str, kind: str, named: str | None) -> None:
    repo, sha, canary = pristine
    the_suite, spec = _rust_suite(tmp_path)
    # The oracle's own copy holds a link to the host canary under the name it indexes: the
    # host never looks there.
    copy = tmp_path / "oracle-copy" / "src"
    copy.mkdir(parents=True)
    os.symlink(canary, copy / "oracle-made.rs")
    cell, record = _cell(tmp_path, rust_index(root, _every_position(doc, 40)))
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(
        p, *a, **k))
    with pytest.raises(build.OracleFailed) as caught:
        build._truth(the_suite, spec, record, cell, "rust-analyzer 1.85.1",  # type: ignore
                     PinnedSources.at_pin(repo, sha))
    exc = caught.value
    assert exc.data["oracle"] == "oracle-rust-analyzer" and exc.data["kind"] == kind
    assert exc.data["document"] == named
    assert "the index of oracle 'oracle-rust-analyzer' is refused" in exc.what
    assert f"is refused ({kind})" in exc.what and str(cell / "stdout") in exc.what
    assert "host_canary" not in str(exc) and not any("environ" in p or "canary" in p
                                                     for p in opened)
    assert not (the_suite.path / "truth").exists()


def test_any_failure_on_the_index_is_the_oracles(tmp_path: Path,
                                                 pristine: tuple[Path, str, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo, sha, _ = pristine
    the_suite, spec = _rust_suite(tmp_path)
    cell, record = _cell(tmp_path, rust_index("file:///state/export/",
                                              _every_position("src/lib.rs", 3)))

    def broken(*_: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(truth, "resolution", broken)
    sources = PinnedSources.at_pin(repo, sha)
    with pytest.raises(build.OracleFailed, match="is refused \\(unprocessable\\)") as caught:
        build._truth(the_suite, spec, record, cell, "v", sources)  # type: ignore[arg-type]
    assert "RecursionError" in (caught.value.why or "")
    malformed, record = _cell(tmp_path / "m", b"\x0a\xff")
    with pytest.raises(build.OracleFailed, match="does not decode as SCIP"):
        build._truth(the_suite, spec, record, malformed, "v", sources)  # type: ignore[arg-type]


def test_an_honest_index_still_gives_its_sites(tmp_path: Path,
                                               pristine: tuple[Path, str, Path]) -> None:
    repo, sha, _ = pristine
    the_suite, spec = _rust_suite(tmp_path)
    fn = "rust-analyzer cargo demo 0.1.0 make()."
    helper = "rust-analyzer cargo demo 0.1.0 helper()."
    doc = _len(4, b"Rust") + _len(1, b"src/lib.rs") + _len(2, occurrence(0, fn, 1)) + _len(
        2, occurrence(1, helper, 1)) + _len(2, _len(1, b"".join(_varint(v) for v in (1, 4, 10)))
                                             + _len(2, helper.encode()))
    decoded = scip.rebased(scip.decode(rust_index("file:///state/export/", doc)),
                           "/state/export")
    sites = truth.rust_sites(decoded, truth.Definitions.of(decoded),
                             PinnedSources.at_pin(repo, sha).read)
    assert sites["sites"] == [["src/lib.rs", 2, 4, "helper", "plain", "path-call", "fn",
                               "src/lib.rs", 2]]
    assert sites["unindexed"] == [] and sites["universe"] == ["src/lib.rs"]
