"""Sealed task suites: tasks with their truth, a preregistration, and a manifest that hashes
every input before any arm runs, so a number can be traced to exactly what produced it.

The package is the suite in three parts: `model` (what a suite and its tasks declare once
loaded, and the keys and choices their files may hold), loading (`loading` reads and checks
suite.toml, `task_file` one task file, each against its schema in orchestrator/schemas/ and
then for what a schema cannot say) and `sealing` (the manifest, and the check that it still
holds). Callers reach all three here.
"""

from orchestrator.suite.loading import (
    check_truth_at_pin, families, known_suites, load_suite, oracle_ref, runtime, truth_rule,
    truth_rule_version)
from orchestrator.suite.model import (
    BAND_KEYS, COMMAND_KEYS, COMMAND_OUTPUTS, CORPUS_ROOT, DECIMAL, EDGE_BAND_KEYS, FAMILIES,
    GRADING_CHOICES, GRADING_KEYS, LANGUAGES, MANIFEST, OPTIONAL_SUITE_KEYS, OPTIONAL_TASK_KEYS,
    ORACLE_KEYS, ORACLE_OPTIONAL_KEYS, PARSERS_PACKAGE, PREREGISTRATION, PUBLISHED_KEYS,
    PUBLISHED_OPTIONAL_KEYS, RECORDS_DIR, SCORER_ENTRY, SCRIPT_PLACEHOLDER, SCRIPT_PRELUDE,
    SUITE_KEYS, TASK_ID, TASK_KEYS, TEST_FILES, TRUTH_DIR, TRUTH_KEYS, TRUTH_RULES,
    VERDICT_NAMES, GradingRules, OracleRef, Published, Suite, Task, TaskCommand)
from orchestrator.suite.sealing import (
    SealDifference, corpus_pin, every_scorer_source, manifest_sha256, parser_module,
    scorer_sources, seal, sealed_inputs, verify_seal)
from orchestrator.suite.task_file import check_rules, grading, load_task

__all__ = [
    "BAND_KEYS", "COMMAND_KEYS", "COMMAND_OUTPUTS", "CORPUS_ROOT", "DECIMAL",
    "EDGE_BAND_KEYS", "FAMILIES", "GRADING_CHOICES", "GRADING_KEYS", "GradingRules",
    "LANGUAGES", "MANIFEST", "OPTIONAL_SUITE_KEYS", "OPTIONAL_TASK_KEYS", "ORACLE_KEYS",
    "ORACLE_OPTIONAL_KEYS", "OracleRef", "PARSERS_PACKAGE", "PREREGISTRATION",
    "PUBLISHED_KEYS", "PUBLISHED_OPTIONAL_KEYS", "Published", "RECORDS_DIR", "SCORER_ENTRY",
    "SCRIPT_PLACEHOLDER", "SCRIPT_PRELUDE", "SUITE_KEYS", "SealDifference", "Suite",
    "TASK_ID", "TASK_KEYS", "TEST_FILES", "TRUTH_DIR", "TRUTH_KEYS", "TRUTH_RULES", "Task",
    "TaskCommand", "VERDICT_NAMES", "check_rules", "check_truth_at_pin", "corpus_pin",
    "every_scorer_source", "families", "grading", "known_suites", "load_suite", "load_task",
    "manifest_sha256", "oracle_ref", "parser_module", "scorer_sources", "seal", "sealed_inputs",
    "runtime", "truth_rule", "truth_rule_version", "verify_seal"]
