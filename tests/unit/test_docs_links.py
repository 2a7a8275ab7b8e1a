"""Every Markdown link in README.md and docs/ leads somewhere in this checkout: a relative
file that exists inside the repository, an `#anchor` that a heading of the target defines
(by GitHub's slug rules), never a `../` path out of the checkout, and no web address but the
few ALLOWED_HOSTS (none today: the docs must read offline, and nothing here is fetched).
A file of the repository named in code (`orchestrator/untrusted/walk.py`) must exist too, so
a module that moves takes its mentions along."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Hosts an absolute link may name; each entry says why. Empty: every page is in the checkout.
ALLOWED_HOSTS: dict[str, str] = {}

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # the text, one nesting deep
                         r"\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
# A repository path in a code span: lower case only, so `suites/NAME/suite.toml` (a pattern,
# not a file) is left alone.
REPOSITORY_PATH = re.compile(
    r"`((?:orchestrator|tests|scripts|benchmarks|images|suites|compose|docs)/[a-z0-9_./+-]*)`")


def documents() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def unfenced_lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line outside fenced code blocks, with its number."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield number, line


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line outside fenced code blocks, with its code spans blanked out."""
    for number, line in unfenced_lines(text):
        yield number, CODE_SPAN.sub("", line)


def links(text: str) -> Iterator[tuple[int, str]]:
    """(line number, target) of every inline link, image and reference definition."""
    for number, line in prose_lines(text):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)
            continue
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: inline markup and punctuation dropped (hyphens and
    underscores kept), lower case, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    kept = "".join(ch for ch in text
                   if ch in " -_" or unicodedata.category(ch)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a page defines: its headings' slugs, repeats numbered as GitHub numbers
    them (`name`, `name-1`, ...), and explicit `<a name=...>`/`<a id=...>` tags."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    text = path.read_text(encoding="utf-8")
    for _, line in unfenced_lines(text):
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if heading is None:
            continue
        slug = github_slug(heading.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def problem(page: Path, target: str) -> str | None:
    """Why a link from page to target does not resolve inside the checkout, or None."""
    parts = urlsplit(target)
    if parts.scheme in ("http", "https"):
        if parts.hostname in ALLOWED_HOSTS:
            return None
        return (f"a web address ({parts.hostname}): link a file of the checkout instead, or "
                f"add the host to ALLOWED_HOSTS in {Path(__file__).name} with why")
    if parts.scheme or parts.netloc:
        return f"a {parts.scheme or 'network'} link: only files of the checkout are linked"
    path_text = unquote(parts.path)
    if path_text.startswith("/"):
        return "an absolute path: write it relative to the page"
    destination = (page.parent / path_text).resolve() if path_text else page
    if ROOT not in (destination, *destination.parents):
        return "a path outside the checkout (it must work from any clone)"
    if not destination.exists():
        return f"{destination.relative_to(ROOT)} does not exist"
    if parts.fragment:
        if destination.is_dir() or destination.suffix != ".md":
            return "an anchor into a file that is not Markdown"
        if unquote(parts.fragment) not in anchors(destination):
            return f"no heading of {destination.relative_to(ROOT)} makes #{parts.fragment}"
    return None


def test_every_link_of_the_docs_resolves_inside_the_checkout() -> None:
    broken = []
    for page in documents():
        for number, target in links(page.read_text(encoding="utf-8")):
            why = problem(page, target)
            if why is not None:
                broken.append(f"{page.relative_to(ROOT)}:{number}: ({target}) {why}")
    assert not broken, "broken links in the docs:\n" + "\n".join(broken)


def test_every_repository_path_the_docs_name_exists() -> None:
    missing = [f"{page.relative_to(ROOT)}:{number}: `{path}` does not exist"
               for page in documents()
               for number, line in unfenced_lines(page.read_text(encoding="utf-8"))
               for path in REPOSITORY_PATH.findall(line)
               if not (ROOT / path).exists()]
    assert not missing, "the docs name files that are not there:\n" + "\n".join(missing)


def test_the_docs_have_links_to_check() -> None:
    """The check reads what it should: the README links to several docs pages."""
    targets = [target for _, target in links((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert sum(target.startswith("docs/") for target in targets) >= 5


@pytest.mark.parametrize(("heading", "slug"), [
    ("Hosts", "hosts"),
    ("The host side: every byte a tool produced is hostile input",
     "the-host-side-every-byte-a-tool-produced-is-hostile-input"),
    ("`sandbench run` and `--resume`", "sandbench-run-and---resume"),
    ("runsc against runc (gVisor)", "runsc-against-runc-gvisor"),
    ("Arms, suites and runs", "arms-suites-and-runs"),
    ("A [linked](x.md) heading", "a-linked-heading"),
    ("snake_case & co.", "snake_case--co"),
])
def test_headings_slug_as_github_slugs_them(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_repeated_headings_are_numbered(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Figures\n\n## Figures\n\n```\n# not a heading\n```\n## Figures\n",
                    encoding="utf-8")
    assert anchors(page) == {"figures", "figures-1", "figures-2"}


@pytest.mark.parametrize(("target", "why"), [
    ("../shared/README.md", "outside the checkout"),
    ("docs/missing.md", "does not exist"),
    ("docs/methodology.md#no-such-heading", "no heading"),
    ("https://example.org/page", "a web address"),
    ("/etc/passwd", "absolute path"),
    ("mailto:someone", "mailto link"),
])
def test_a_bad_link_is_named(target: str, why: str) -> None:
    found = problem(ROOT / "README.md", target)
    assert found is not None and why in found


def test_links_in_code_are_not_links() -> None:
    text = "[a](one.md) `[b](two.md)`\n```\n[c](three.md)\n```\n[d]: four.md\n"
    assert [target for _, target in links(text)] == ["one.md", "four.md"]
