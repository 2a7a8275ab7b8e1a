"""What the host hands an image build: the Debian mirror the root file system is
bootstrapped from, the CA bundle and proxy settings that build stages (and only they) see,
and the artifacts a user supplies. No registry host is written anywhere: the mirror comes
from the host's apt sources or a setting."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from orchestrator.errors import InputError, SandbenchError

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
              "http_proxy", "https_proxy", "no_proxy", "all_proxy")


def debian_mirror(sources: Iterable[Path] | None = None) -> str:
    """SANDBENCH_DEBIAN_MIRROR, else the first Debian archive URI in the host's apt sources."""
    if env := os.environ.get("SANDBENCH_DEBIAN_MIRROR"):
        return env
    if sources is None:
        sources = [Path("/etc/apt/sources.list"),
                   *sorted(Path("/etc/apt/sources.list.d").glob("*.list")),
                   *sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))]
    for source in sources:
        try:
            text = source.read_text(encoding="utf-8")
        except OSError:
            continue
        for uri, suites in _apt_entries(text):
            if "debian" in uri and "security" not in uri and any(
                    not s.endswith(("-security", "-updates", "-backports")) for s in suites):
                return uri.rstrip("/")
    raise SandbenchError("no Debian mirror found in the host's apt sources",
                         fix="set SANDBENCH_DEBIAN_MIRROR to a Debian archive URL")


def _apt_entries(text: str) -> Iterable[tuple[str, list[str]]]:
    """(uri, suites) pairs from one-line (`deb URI SUITE ...`) and deb822 stanzas."""
    stanza: dict[str, str] = {}
    for raw in [*text.splitlines(), ""]:
        if raw.lstrip().startswith("#"):
            continue
        line = raw.split("#", 1)[0].strip()
        if line.startswith("deb "):
            words = [w for w in line.split()[1:] if not w.startswith("[")]
            if len(words) >= 2:
                yield words[0], [words[1]]
            continue
        if not line:
            if stanza.get("types", "").split().count("deb") and "uris" in stanza:
                for uri in stanza["uris"].split():
                    yield uri, stanza.get("suites", "").split()
            stanza = {}
            continue
        if ":" in line:
            key, value = line.split(":", 1)
            stanza[key.strip().lower()] = value.strip()


def build_ca_bundle() -> Path | None:
    """The CA bundle the host's pip trusts, handed to build stages only."""
    for var in ("SANDBENCH_BUILD_CA", "PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        if (value := os.environ.get(var)) and Path(value).is_file():
            return Path(value)
    default = Path("/etc/ssl/certs/ca-certificates.crt")
    return default if default.is_file() else None


def proxy_build_args() -> dict[str, str]:
    """The host's proxy settings. Docker treats these as predefined build args: they reach
    RUN steps and are never written into the image's config or history."""
    return {k: v for k in PROXY_VARS if (v := os.environ.get(k))}


def parse_artifacts(specs: Iterable[str]) -> dict[str, Path]:
    """`NAME=PATH` pairs given with --artifact; each must be an existing file."""
    artifacts = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise InputError.bad_value("--artifact", "--artifact", "NAME=PATH", spec)
        if not Path(path).is_file():
            raise InputError.bad_value("--artifact", f"--artifact {name}", "an existing file",
                                       path)
        artifacts[name] = Path(path).resolve()
    return artifacts
