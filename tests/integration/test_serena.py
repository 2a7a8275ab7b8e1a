"""The serena MCP peer in its real sandbox: its TypeScript references on the demo corpus's web/
part (suites/serena-demo-typescript), offline, with the language server its image carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import images, parsers
from orchestrator.sandbox import mcp
from orchestrator.engine import Engine
from orchestrator.settings import Settings
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.test_run import _with_demo

pytestmark = pytest.mark.integration
SUITE = "serena-demo-typescript"
# What serena answered when the suite was written: every file of the hand-worked truth but the
# one holding only the definition (serena asks with include_self=False).
EXPECTED = {
    "references-format-money": {"web/src/checkout/checkout.ts", "web/src/index.ts",
                                "web/test/cart.test.ts"},
    "references-cart-line": {"web/src/cart/cartLine.ts", "web/src/api/ordersClient.ts",
                             "web/src/cart/cart.ts"},
}


@pytest.fixture(scope="module")
def serena_run(engine: Engine, built: Settings, tmp_path_factory: pytest.TempPathFactory
               ) -> Path:
    root = tmp_path_factory.mktemp("serena-run") / "bench"
    images.share_lock(built, root)
    settings = _with_demo(Settings(project_root=built.project_root, bench_root=root))
    return runner.run(settings, RunOptions(SUITE, jobs=1, arms=("serena",)), [pool.one(engine)])


def test_serena_answers_the_typescript_references_through_its_language_server(
        serena_run: Path) -> None:
    parser = parsers.get_parser("serena")
    for task, expected in EXPECTED.items():
        for rep in range(4):
            cell = serena_run / "cells" / "serena" / task / str(rep)
            record = json.loads((cell / "record.json").read_text())
            assert record["outcome"] == "ok", (task, rep, record["outcome"])
            parsed = parser.parse((cell / "stdout").read_bytes(), b"", "references")
            assert {row.path for row in parsed.rows} == expected, (task, rep)
    cells = {p.name for p in (serena_run / "cells" / "serena").iterdir()}
    assert cells == {"_setup", *EXPECTED}  # impact, locate, e2e-retrieval: not attempted


def test_serena_installs_nothing_and_writes_only_under_state(serena_run: Path) -> None:
    for task in EXPECTED:
        session = serena_run / "cells" / "serena" / task / mcp.SESSION
        log = (session / "stderr").read_text(errors="replace")
        # serena logs this before it would run npm (typescript_language_server.py).
        assert "Typescript Language Server executable not found" not in log
        assert "Storing logs in /state/serena/logs/" in log
        assert "Traceback" not in log
