"""Both oracles on the pinned demo corpus (its TypeScript part web/ and its Rust crate
inventory/, small enough to check by reading): the exact truth sets, equal to the demo suite's
hand-worked truth, the exact edges of one file, the seal over the truth file, and every way a
truth build is refused with nothing written."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import suite
from orchestrator.cli import app
from orchestrator.engine import Engine
from orchestrator.errors import InputError
from orchestrator.fsutil import read_json
from orchestrator.oracle import build as oracle_build
from orchestrator.settings import Settings
from tests.integration.conftest import project_copy

pytestmark = pytest.mark.integration

TS_TASKS = ("references-format-money", "references-cart-line", "impact-cart",
            "impact-payment-method")
RUST_TASKS = ("references-stock-level", "references-inventory-error", "impact-sku",
              "impact-allocation-policy")


def _oracle_suite(settings: Settings, name: str, arm: str, project: str,
                  tasks: tuple[str, ...]) -> Path:
    """A suite on the demo corpus whose tasks are the demo suite's, with an [oracle]."""
    folder = settings.suites_dir / name
    (folder / "tasks").mkdir(parents=True)
    text = (settings.suites_dir / "demo" / "suite.toml").read_text()
    text = text.replace('name = "demo"', f'name = "{name}"')
    (folder / "suite.toml").write_text(
        text + f'\n[oracle]\narm = "{arm}"\nproject = "{project}"\nedges = true\n')
    (folder / "preregistration.md").write_text("The demo suite's tasks, with compiler truth.\n")
    for task in tasks:
        shutil.copy2(settings.suites_dir / "demo" / "tasks" / f"{task}.toml", folder / "tasks")
    return folder


def _hand_truth(settings: Settings, task: str) -> list[str]:
    data = tomllib.loads((settings.suites_dir / "demo" / "tasks" / f"{task}.toml").read_text())
    return sorted(data["truth"].get("core") or data["truth"]["graded"])


@pytest.fixture
def project(built: Settings, tmp_path: Path) -> Settings:
    settings = project_copy(built, tmp_path)
    _oracle_suite(settings, "oracle-ts", "oracle-scip-typescript", "web", TS_TASKS)
    _oracle_suite(settings, "oracle-rust", "oracle-rust-analyzer", "inventory", RUST_TASKS)
    return settings


def test_scip_typescript_gives_the_hand_worked_sets(engine: Engine, project: Settings) -> None:
    path = oracle_build.build(engine, project, "oracle-ts")
    document = read_json(path)
    assert document["oracle"]["index_tool"] == "scip-typescript 0.4.0"
    assert document["oracle"]["image_id"] == project_lock_id(project, "oracle-scip-typescript")
    assert {t: sorted(v.get("core") or v["graded"]) for t, v in document["tasks"].items()} == {
        t: _hand_truth(project, t) for t in TS_TASKS}
    assert document["tasks"]["references-cart-line"]["core"] == [
        "web/src/api/ordersClient.ts", "web/src/cart/cart.ts", "web/src/cart/cartLine.ts"]
    assert [e for e in document["edges"] if e[0] == "web/src/checkout/checkout.ts"
            and e[2] in ("Cart", "formatMoney", "placeOrder")] == [
        ["web/src/checkout/checkout.ts", 2, "Cart", "web/src/cart/cart.ts", 6],
        ["web/src/checkout/checkout.ts", 3, "formatMoney", "web/src/money.ts", 27],
        ["web/src/checkout/checkout.ts", 15, "Cart", "web/src/cart/cart.ts", 6],
        ["web/src/checkout/checkout.ts", 26, "formatMoney", "web/src/money.ts", 27],
        ["web/src/checkout/checkout.ts", 28, "placeOrder", "web/src/api/ordersClient.ts", 22]]
    assert document["resolution"]["documents"] == 13
    cell = (project.runs_dir / document["run"]["run_id"] / "cells" / "oracle-scip-typescript"
            / "index")
    assert document["transcript"]["stdout_sha256"] == read_json(cell / "record.json")[
        "stdout"]["sha256"]
    # The seal covers the truth file and the oracle's spec; a changed truth breaks it.
    the_suite = suite.load_suite(project.suites_dir, "oracle-ts")
    suite.seal(the_suite, project)
    assert suite.verify_seal(the_suite, project) == []
    sealed = read_json(the_suite.path / "manifest.json")["inputs"]
    assert {"suites/oracle-ts/truth/oracle-scip-typescript.json",
            "arms/oracle-scip-typescript.toml"} <= set(sealed)
    path.write_text(path.read_text().replace("cartLine.ts", "cartline.ts"))
    assert [d.file for d in suite.verify_seal(the_suite, project)] == [
        "suites/oracle-ts/truth/oracle-scip-typescript.json"]


def test_rust_analyzer_gives_the_hand_worked_sets_and_edges(engine: Engine,
                                                           project: Settings) -> None:
    document = read_json(oracle_build.build(engine, project, "oracle-rust"))
    assert document["oracle"]["tool_version"] == "rust-analyzer 1.85.1"
    assert {t: sorted(v.get("core") or v["graded"]) for t, v in document["tasks"].items()} == {
        t: _hand_truth(project, t) for t in RUST_TASKS}
    assert document["tasks"]["references-stock-level"]["symbols"] == [
        "rust-analyzer cargo acme-inventory 0.2.0 stock/StockLevel#"]
    assert [e for e in document["edges"] if e[0] == "inventory/src/policy.rs"] == [
        ["inventory/src/policy.rs", 1, "BinId", "inventory/src/stock.rs", 5],
        ["inventory/src/policy.rs", 1, "StockLevel", "inventory/src/stock.rs", 15],
        ["inventory/src/policy.rs", 8, "BinId", "inventory/src/stock.rs", 5],
        ["inventory/src/policy.rs", 8, "StockLevel", "inventory/src/stock.rs", 15],
        ["inventory/src/policy.rs", 14, "AllocationPolicy", "inventory/src/policy.rs", 5],
        ["inventory/src/policy.rs", 14, "FirstBinPolicy", "inventory/src/policy.rs", 12],
        ["inventory/src/policy.rs", 19, "BinId", "inventory/src/stock.rs", 5],
        ["inventory/src/policy.rs", 19, "StockLevel", "inventory/src/stock.rs", 15],
        ["inventory/src/policy.rs", 21, "take_in_order", "inventory/src/policy.rs", 39],
        ["inventory/src/policy.rs", 28, "AllocationPolicy", "inventory/src/policy.rs", 5],
        ["inventory/src/policy.rs", 28, "FewestBinsPolicy", "inventory/src/policy.rs", 26],
        ["inventory/src/policy.rs", 33, "BinId", "inventory/src/stock.rs", 5],
        ["inventory/src/policy.rs", 33, "StockLevel", "inventory/src/stock.rs", 15],
        ["inventory/src/policy.rs", 35, "take_in_order", "inventory/src/policy.rs", 39],
        ["inventory/src/policy.rs", 39, "BinId", "inventory/src/stock.rs", 5],
        ["inventory/src/policy.rs", 39, "StockLevel", "inventory/src/stock.rs", 15],
        ["inventory/src/policy.rs", 46, "take", "inventory/src/stock.rs", 31],
        ["inventory/src/policy.rs", 48, "bin", "inventory/src/stock.rs", 16]]
    assert document["resolution"]["documents"] == 8


def project_lock_id(settings: Settings, image: str) -> str:
    from orchestrator.images import ImageLock
    return ImageLock.load(settings.images_lock).image_id(image)


def _refused(project: Settings, suite_name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The CLI's answer to a truth build that must be refused: exit 2, nothing written."""
    monkeypatch.setenv("SANDBENCH_PROJECT", str(project.project_root))
    result = CliRunner().invoke(app, ["truth", "build", suite_name, "--bench-root",
                                      str(project.bench_root)], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert not (project.suites_dir / suite_name / "truth").exists()
    return result.output


def test_an_oracle_that_fails_writes_nothing(project: Settings,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    toml = project.suites_dir / "oracle-ts" / "suite.toml"
    toml.write_text(toml.read_text().replace('project = "web"', 'project = "nowhere"'))
    out = _refused(project, "oracle-ts", monkeypatch)
    assert "oracle 'oracle-scip-typescript' ended nonzero-exit" in out
    assert "cells/oracle-scip-typescript/index" in out


def test_an_index_that_does_not_decode_writes_nothing(project: Settings,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    spec = (project.arms_dir / "oracle-scip-typescript.toml").read_text()
    (project.arms_dir / "oracle-garbage.toml").write_text(spec.replace(
        'argv = ["scip-oracle", "{project}"]',
        'argv = ["node", "-e", "process.stdout.write(\'not an index {project}\')"]'))
    toml = project.suites_dir / "oracle-ts" / "suite.toml"
    toml.write_text(toml.read_text().replace('"oracle-scip-typescript"', '"oracle-garbage"'))
    out = _refused(project, "oracle-ts", monkeypatch)
    assert "does not decode as SCIP" in out and "index/stdout" in out


def test_an_empty_truth_set_names_the_task_and_writes_nothing(
        project: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    task = project.suites_dir / "oracle-rust" / "tasks" / "references-stock-level.toml"
    task.write_text(task.read_text().replace('symbol = "StockLevel"', 'symbol = "StockLevels"'))
    out = _refused(project, "oracle-rust", monkeypatch)
    assert "references-stock-level.toml: the oracle's truth for this task is empty" in out
    assert "'StockLevels'" in out


def test_a_truth_path_not_at_the_pin_is_refused_before_any_oracle(
        engine: Engine, project: Settings) -> None:
    task = project.suites_dir / "oracle-ts" / "tasks" / "impact-cart.toml"
    task.write_text(task.read_text().replace('"web/src/index.ts"', '"web/src/main.ts"'))
    with pytest.raises(InputError, match="impact-cart.toml: truth: expected a file tracked at "
                       "the pin.*web/src/main.ts"):
        oracle_build.build(engine, project, "oracle-ts")
    assert not project.runs_dir.exists() or not list(project.runs_dir.glob("truth-*"))
    with pytest.raises(InputError, match="no compiler truth yet"):
        suite.seal(suite.load_suite(project.suites_dir, "oracle-ts"), project)
