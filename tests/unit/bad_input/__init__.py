"""Helpers for the bad-input properties (tests/unit/test_bad_input_properties.py).

`tomlw` writes a parsed TOML document back out, `damage` breaks valid files in realistic ways
(syntax, encoding, emptiness, and data-level mutations driven by a per-file spec in
`catalog`), `minischema` checks a document against the repo's own JSON schema (the oracle that
a generated record.json really is malformed), and `harness` runs one damaged file through its
reader and its CLI commands and asserts the outcome.
"""
