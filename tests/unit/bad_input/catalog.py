"""Data-level damage per file: each strategy takes the parsed valid file and breaks one rule of
its spec (a required key removed, a key of the wrong type, an unknown key, an out-of-range
value), returning the new bytes and the key the error must name.

The spec is written here from the file's documentation and reader, independently of the
reader's checks: where the reader and this spec disagree, the property fails and the
disagreement is reported (see the xfail properties in test_bad_input_properties.py).

Every function returns `{class name: strategy}`; `defects` functions return the classes the
readers get wrong today, kept apart so that the passing classes stay in the green suite.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from orchestrator import arms as arms_mod, corpus as corpus_mod, kinds, suite as suite_mod
from orchestrator.run import transcripts

from .damage import (
    JSON_TYPES,
    TOML_TYPES,
    Damage,
    dotted,
    drop,
    json_doc,
    non_str_list,
    other_than,
    put,
    toml_doc,
    typo_key,
)

S = st.SearchStrategy
HEX = "0123456789abcdef"


def _toml(kind: str, doc: dict[str, Any], key: str | tuple[str, ...], note: str) -> Damage:
    keys = (key,) if isinstance(key, str) else key
    return Damage(kind, toml_doc(doc), keys, note)


def _json(kind: str, doc: Any, key: str | tuple[str, ...], note: str) -> Damage:
    keys = (key,) if isinstance(key, str) else key
    return Damage(kind, json_doc(doc), keys, note)


def _set(base: dict[str, Any], path: tuple[str, ...], kind: str, values: S[Any],
         key: str | None = None, fmt: str = "toml") -> S[Damage]:
    make = _toml if fmt == "toml" else _json
    return values.map(lambda v: make(kind, put(base, path, v), key or dotted(path),
                                     f"{dotted(path)} = {v!r}"))


def _del(base: dict[str, Any], path: tuple[str, ...], key: str | tuple[str, ...] | None = None,
         fmt: str = "toml") -> S[Damage]:
    make = _toml if fmt == "toml" else _json
    return st.just(make("missing", drop(base, path), key or dotted(path),
                        f"{dotted(path)} removed"))


def _any(strategies: list[S[Damage]]) -> S[Damage]:
    return st.one_of(strategies)


def _toml_wrong(accepted: set[str]) -> S[Any]:
    return other_than(TOML_TYPES, accepted)


def _str_list_wrong() -> S[Any]:
    return st.one_of(_toml_wrong({"list"}), non_str_list(TOML_TYPES))


def sha(n: int) -> S[str]:
    return st.text(HEX, min_size=n, max_size=n)


def non_positive_int() -> S[int]:
    return st.integers(-(2 ** 31), 0)


def non_positive_number() -> S[int | float]:
    return st.one_of(non_positive_int(), st.floats(max_value=0.0, allow_nan=False,
                                                   allow_infinity=True))


def non_finite() -> S[float]:
    return st.sampled_from([math.nan, math.inf])


def blank() -> S[str]:
    return st.sampled_from(["", " ", "   ", "\n", "\t \n"])


# -- corpus.lock ------------------------------------------------------------------------------

BAD_SHAS = st.one_of(
    st.sampled_from([0, 7, 12, 39, 41, 64]).flatmap(sha),
    st.tuples(sha(40), st.integers(0, 39), st.sampled_from("ghxyzABCDEF -G")).map(
        lambda t: t[0][:t[1]] + t[2] + t[0][t[1] + 1:]),
    sha(40).map(str.upper).filter(lambda s: s != s.lower()),
    sha(40).map(lambda s: " " + s), sha(40).map(lambda s: s + "\n"),
)
BAD_REPOS = st.sampled_from(["", "MassTransit", "a/b/c", "owner/", "/name", "own er/name",
                             "owner/na me", "https://github.com/a/b", "owner\\name"])
BAD_URLS = st.sampled_from(["", "http://github.com/a/b.git", "git@github.com:a/b.git",
                            "file:///tmp/x", "ssh://git@github.com/a/b", "builtin:",
                            "builtin:other", "builtin:demo2", "github.com/a/b",
                            "HTTPS://github.com/a/b", " https://github.com/a/b"])
BAD_KINDS = st.sampled_from(["", "Target", "targets", "heldout", "held_out", "main", "DEMO"])
BAD_STATUSES = st.sampled_from(["", "Registered", "pinned", "draft", "registered "])
BAD_TABLE_NAMES = st.sampled_from(["Demo", "DEMO", "demo_x", "-demo", "de mo", "démo",
                                   "demo!", "", "x.y"])


def _rename(doc: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    return {(new if k == old else k): v for k, v in doc.items()}


def corpus_lock(base: dict[str, Any]) -> dict[str, S[Damage]]:
    tables = sorted(k for k in base if k != "version")
    fields = corpus_mod.FIELDS
    pairs = st.tuples(st.sampled_from(tables), st.sampled_from(fields))
    table = st.sampled_from(tables)

    def field(strategy_for: S[Any], *names: str) -> S[Damage]:
        return st.tuples(st.sampled_from(tables), st.sampled_from(names), strategy_for).map(
            lambda t: _toml("out-of-range", put(base, (t[0], t[1]), t[2]), f"{t[0]}.{t[1]}",
                            f"{t[0]}.{t[1]} = {t[2]!r}"))

    missing = _any([
        _del(base, ("version",)),
        # A proposed substitute may go without its sha (corpus.lock's own rule).
        pairs.filter(lambda tf: not (tf[1] == "sha" and base[tf[0]].get("status") == "proposed")
                     ).map(lambda tf: _toml("missing", drop(base, tf), dotted(tf),
                                            f"{dotted(tf)} removed")),
    ])
    wrong = _any([
        _set(base, ("version",), "wrong-type", _toml_wrong({"int"})),
        st.tuples(pairs, _toml_wrong({"str"})).map(
            lambda t: _toml("wrong-type", put(base, t[0], t[1]), dotted(t[0]),
                            f"{dotted(t[0])} = {t[1]!r}")),
        st.tuples(table, _toml_wrong({"table"})).map(
            lambda t: _toml("wrong-type", put(base, (t[0],), t[1]), t[0],
                            f"[{t[0]}] replaced by {t[1]!r}")),
    ])
    unknown = _any([
        st.tuples(table, typo_key(fields), st.one_of(TOML_TYPES.values())).map(
            lambda t: _toml("unknown-key", put(base, (t[0], t[1]), t[2]), f"{t[0]}.{t[1]}",
                            f"{t[0]}.{t[1]} = {t[2]!r} added")),
        st.tuples(typo_key(["version", *tables]), _toml_wrong({"table"})).map(
            lambda t: _toml("unknown-key", put(base, (t[0],), t[1]), t[0],
                            f"top-level {t[0]} = {t[1]!r} added")),
    ])
    out_of_range = _any([
        field(BAD_SHAS, "sha"),
        field(BAD_REPOS, "repo"),
        field(BAD_URLS, "url"),
        field(BAD_KINDS, "kind"),
        field(BAD_STATUSES, "status"),
        field(st.just(""), "license"),
        st.tuples(table, st.text(min_size=0, max_size=12)).filter(lambda t: t[0] != t[1]).map(
            lambda t: _toml("out-of-range", put(base, (t[0], "id"), t[1]), f"{t[0]}.id",
                            f"{t[0]}.id = {t[1]!r} (not the table name)")),
        st.tuples(table, st.one_of(BAD_TABLE_NAMES, st.sampled_from(["demo2", "csharp-2"]))
                  ).filter(lambda t: t[1] not in base).map(
            lambda t: _toml("out-of-range", _rename(base, t[0], t[1]), f"{t[1]}.id",
                            f"[{t[0]}] renamed [{t[1]}], its id unchanged")),
        _set(base, ("version",), "out-of-range", st.integers(-(2 ** 31), 2 ** 31).filter(
            lambda v: v != 1)),
        # A proposed substitute may carry its sha, but only a full one.
        table.map(lambda t: _toml("out-of-range", put(put(base, (t, "status"), "proposed"),
                                                      (t, "sha"), "0123abc"),
                                  f"{t}.sha", f"{t} marked proposed, its sha cut short")),
    ])
    return {"missing": missing, "wrong-type": wrong, "unknown-key": unknown,
            "out-of-range": out_of_range}


# -- arms/*.toml --------------------------------------------------------------------------------

BAD_ENV_NAMES = st.sampled_from(["1X", "A-B", "A B", "", "PATH=", "É", "X.Y"])
OTHER_PLACEHOLDERS = ["ticket", "symbol", "seed", "path", "corpus", "file", "Symbol", "EXT", "x"]


def _with_setup(base: dict[str, Any]) -> dict[str, Any]:
    return base if "setup" in base else put(base, ("setup",), {"argv": ["true"]})


def arm(base: dict[str, Any]) -> dict[str, S[Damage]]:
    attempted = sorted(base.get("tasks", {}))
    declined = sorted(base.get("not_attempted", {}))
    env = sorted(base.get("env", {}))
    limit_ints = ["memory_mib", "pids", "tmp_mib"]
    setup = _with_setup(base)

    def each(names: list[str], fn) -> list[S[Damage]]:
        return [st.sampled_from(names).flatmap(fn)] if names else []

    missing = _any([
        _del(base, ("image",)), _del(base, ("parser",)),
        *each(attempted, lambda k: _del(base, ("tasks", k))),
        *each(attempted, lambda k: _del(base, ("tasks", k, "argv"), f"tasks.{k}")),
        *each(declined, lambda k: _del(base, ("not_attempted", k),
                                       (f"tasks.{k}", f"not_attempted.{k}"))),
        *each(declined, lambda k: st.sampled_from(["reason", "source"]).flatmap(
            lambda f: _del(base, ("not_attempted", k, f)))),
        _del(setup, ("setup", "argv")),
    ])
    wrong = _any([
        _set(base, ("image",), "wrong-type", _toml_wrong({"str"})),
        _set(base, ("parser",), "wrong-type", _toml_wrong({"str"})),
        _set(base, ("description",), "wrong-type", _toml_wrong({"str"})),
        _set(base, ("env",), "wrong-type", _toml_wrong({"table"})),
        *each(env, lambda k: _set(base, ("env", k), "wrong-type", _toml_wrong({"str"}))),
        _set(base, ("limits",), "wrong-type", _toml_wrong({"table"})),
        st.sampled_from(limit_ints).flatmap(
            lambda k: _set(base, ("limits", k), "wrong-type", _toml_wrong({"int"}))),
        _set(base, ("limits", "cpus"), "wrong-type", _toml_wrong({"int", "float", "bool"})),
        _set(base, ("setup",), "wrong-type", _toml_wrong({"table"})),
        _set(setup, ("setup", "timeout_s"), "wrong-type", _toml_wrong({"int", "float"})),
        _set(setup, ("setup", "argv"), "wrong-type", _str_list_wrong()),
        _set(base, ("tasks",), "wrong-type", _toml_wrong({"table"})),
        *each(attempted, lambda k: _set(base, ("tasks", k), "wrong-type",
                                        _toml_wrong({"table"}))),
        *each(attempted, lambda k: _set(base, ("tasks", k, "argv"), "wrong-type",
                                        _str_list_wrong())),
        _set(base, ("not_attempted",), "wrong-type", _toml_wrong({"table"})),
        *each(declined, lambda k: _set(base, ("not_attempted", k), "wrong-type",
                                       _toml_wrong({"table"}))),
        *each(declined, lambda k: st.sampled_from(["reason", "source"]).flatmap(
            lambda f: _set(base, ("not_attempted", k, f), "wrong-type",
                           _toml_wrong({"str"})))),
    ])
    values = st.one_of(TOML_TYPES.values())
    unknown = _any([
        st.tuples(typo_key(arms_mod.ARM_KEYS), values).map(
            lambda t: _toml("unknown-key", put(base, (t[0],), t[1]), t[0],
                            f"top-level {t[0]} added")),
        st.tuples(typo_key(arms_mod.LIMIT_KEYS), values).map(
            lambda t: _toml("unknown-key", put(base, ("limits", t[0]), t[1]),
                            f"limits.{t[0]}", f"limits.{t[0]} added")),
        st.tuples(typo_key(["argv", "timeout_s"]), values).map(
            lambda t: _toml("unknown-key", put(setup, ("setup", t[0]), t[1]),
                            f"setup.{t[0]}", f"setup.{t[0]} added")),
        st.tuples(typo_key(arms_mod.KINDS), values).map(
            lambda t: _toml("unknown-key", put(base, ("tasks", t[0]), {"argv": ["x"]}),
                            f"tasks.{t[0]}", f"tasks.{t[0]} (no such kind) added")),
        st.tuples(typo_key(arms_mod.KINDS)).map(
            lambda t: _toml("unknown-key", put(base, ("not_attempted", t[0]),
                                               {"reason": "r", "source": "s"}),
                            f"not_attempted.{t[0]}", f"not_attempted.{t[0]} added")),
        *each(attempted, lambda k: st.tuples(typo_key(["argv"]), values).map(
            lambda t: _toml("unknown-key", put(base, ("tasks", k, t[0]), t[1]),
                            f"tasks.{k}.{t[0]}", f"tasks.{k}.{t[0]} added"))),
        *each(declined, lambda k: st.tuples(typo_key(["reason", "source"]), values).map(
            lambda t: _toml("unknown-key", put(base, ("not_attempted", k, t[0]), t[1]),
                            f"not_attempted.{k}.{t[0]}", f"not_attempted.{k}.{t[0]} added"))),
    ])

    def bad_placeholder(kind: str) -> S[Damage]:
        allowed = arms_mod.PLACEHOLDERS[kind] | arms_mod.COMMON_PLACEHOLDERS
        names = [n for n in OTHER_PLACEHOLDERS if n not in allowed]
        argv = base["tasks"][kind]["argv"]
        return st.tuples(st.sampled_from(names), st.integers(0, len(argv))).map(
            lambda t: _toml("out-of-range", put(base, ("tasks", kind, "argv"),
                                                [*argv[:t[1]], "{" + t[0] + "}", *argv[t[1]:]]),
                            f"tasks.{kind}.argv", f"{{{t[0]}}} in tasks.{kind}.argv"))

    out_of_range = _any([
        st.sampled_from(limit_ints).flatmap(
            lambda k: _set(base, ("limits", k), "out-of-range", non_positive_int())),
        _set(base, ("limits", "cpus"), "out-of-range", non_positive_number()),
        _set(setup, ("setup", "timeout_s"), "out-of-range", non_positive_number()),
        _set(setup, ("setup", "argv"), "out-of-range", st.just([])),
        _set(setup, ("setup", "argv"), "out-of-range",
             st.sampled_from(["{ext}", "{lang}", "{seed}", "--x={symbol}"]).map(
                 lambda p: [*setup["setup"]["argv"], p])),
        *each(attempted, lambda k: _set(base, ("tasks", k, "argv"), "out-of-range",
                                        st.just([]))),
        *each(attempted, bad_placeholder),
        BAD_ENV_NAMES.map(lambda n: _toml("out-of-range", put(base, ("env", n), "x"),
                                          f"env.{n}", f"env name {n!r}")),
        _set(base, ("parser",), "out-of-range",
             st.sampled_from(["", "grep", "RG", "rg ", "ripgrep", "json"])),
        _set(base, ("image",), "out-of-range", st.just("")),
        *each(declined, lambda k: st.tuples(st.sampled_from(["reason", "source"]),
                                            blank()).map(
            lambda t: _toml("out-of-range", put(base, ("not_attempted", k, t[0]), t[1]),
                            f"not_attempted.{k}.{t[0]}", f"not_attempted.{k}.{t[0]} blank"))),
        *each(attempted, lambda k: st.just(_toml(
            "out-of-range", put(base, ("not_attempted", k), {"reason": "r", "source": "s"}),
            f"not_attempted.{k}", f"{k} both attempted and not_attempted"))),
    ])
    return {"missing": missing, "wrong-type": wrong, "unknown-key": unknown,
            "out-of-range": out_of_range}


def arm_defects(base: dict[str, Any]) -> dict[str, S[Damage]]:
    setup = _with_setup(base)
    return {
        "bool-or-non-finite-number": _any([
            _set(base, ("limits", "cpus"), "wrong-type", st.just(True)),  # False is <= 0
            _set(base, ("limits", "cpus"), "out-of-range", non_finite()),
            _set(setup, ("setup", "timeout_s"), "out-of-range", non_finite()),
        ]),
    }


# -- suites/NAME/suite.toml ---------------------------------------------------------------------

def suite(base: dict[str, Any]) -> dict[str, S[Damage]]:
    keys = sorted(suite_mod.SUITE_KEYS)
    bands = sorted(suite_mod.BAND_KEYS)
    ints = ["reps", "precision_cap", "top_k"]
    missing = _any([
        st.sampled_from(keys).flatmap(lambda k: _del(base, (k,))),
        st.sampled_from(bands).flatmap(lambda k: _del(base, ("bands", k))),
    ])
    wrong = _any([
        _set(base, ("version",), "wrong-type", _toml_wrong({"int", "bool", "float"})),
        _set(base, ("name",), "wrong-type", _toml_wrong({"str"})),
        _set(base, ("arms",), "wrong-type", _str_list_wrong()),
        _set(base, ("baseline",), "wrong-type", _toml_wrong({"str"})),
        st.sampled_from(ints).flatmap(
            lambda k: _set(base, (k,), "wrong-type", _toml_wrong({"int"}))),
        _set(base, ("timeout_s",), "wrong-type", _toml_wrong({"int", "float", "bool"})),
        _set(base, ("bands",), "wrong-type", _toml_wrong({"table"})),
        st.sampled_from(bands).flatmap(
            lambda k: _set(base, ("bands", k), "wrong-type", _toml_wrong({"int", "float"}))),
    ])
    values = st.one_of(TOML_TYPES.values())
    unknown = _any([
        st.tuples(typo_key(keys), values).map(
            lambda t: _toml("unknown-key", put(base, (t[0],), t[1]), t[0],
                            f"top-level {t[0]} added")),
        st.tuples(typo_key(bands), values).map(
            lambda t: _toml("unknown-key", put(base, ("bands", t[0]), t[1]),
                            f"bands.{t[0]}", f"bands.{t[0]} added")),
    ])
    out_of_range = _any([
        _set(base, ("version",), "out-of-range", st.integers(-9, 2 ** 31).filter(
            lambda v: v != 1)),
        _set(base, ("name",), "out-of-range", st.text(max_size=8).filter(
            lambda v: v != base["name"])),
        _set(base, ("arms",), "out-of-range", st.just([])),
        _set(base, ("baseline",), "out-of-range", st.text(max_size=8).filter(
            lambda v: v not in base["arms"])),
        st.sampled_from(ints).flatmap(
            lambda k: _set(base, (k,), "out-of-range", non_positive_int())),
        _set(base, ("timeout_s",), "out-of-range", non_positive_number()),
    ])
    return {"missing": missing, "wrong-type": wrong, "unknown-key": unknown,
            "out-of-range": out_of_range}


def suite_defects(base: dict[str, Any], arm_names: list[str], corpus_ids: list[str]
                  ) -> dict[str, S[Damage]]:
    bands = sorted(suite_mod.BAND_KEYS)
    fractions = [b for b in bands if b != "references_correct_max_outside"]
    return {
        "bool-or-non-finite-number": _any([
            _set(base, ("version",), "wrong-type", st.sampled_from([True, 1.0])),
            _set(base, ("timeout_s",), "wrong-type", st.just(True)),  # False is <= 0
            _set(base, ("timeout_s",), "out-of-range", non_finite()),
            st.tuples(st.sampled_from(bands), non_finite()).map(
                lambda t: _toml("out-of-range", put(base, ("bands", t[0]), t[1]),
                                f"bands.{t[0]}", f"bands.{t[0]} = {t[1]!r}")),
        ]),
        "corpus-unchecked": _any([
            _set(base, ("corpus",), "wrong-type", _toml_wrong({"str"})),
            _set(base, ("corpus",), "out-of-range", st.sampled_from(
                ["", "nope", "Demo", "../demo", "demo "]).filter(lambda c: c not in corpus_ids)),
        ]),
        "arms-duplicate-or-unknown": _any([
            st.sampled_from(arm_names).map(lambda a: _toml(
                "duplicate-id", put(base, ("arms",), [*base["arms"], a]), "arms",
                f"arm {a!r} listed twice")),
            st.sampled_from(["nope", "RG", "rg ", "ripgrep"]).map(lambda a: _toml(
                "out-of-range", put(base, ("arms",), [*base["arms"], a]), "arms",
                f"arm {a!r} (no arms/{a}.toml) listed")),
        ]),
        "bands-out-of-range": _any([
            st.tuples(st.sampled_from(fractions), st.one_of(
                st.floats(min_value=1.0001, max_value=1e6), st.floats(max_value=-0.0001,
                                                                       min_value=-1e6))).map(
                lambda t: _toml("out-of-range", put(base, ("bands", t[0]), t[1]),
                                f"bands.{t[0]}", f"bands.{t[0]} = {t[1]!r}")),
            _set(base, ("bands", "references_correct_max_outside"), "out-of-range",
                 st.one_of(st.integers(-1000, -1), st.sampled_from([0.5, -0.5]))),
        ]),
    }


# -- suites/NAME/tasks/*.toml -------------------------------------------------------------------

BAD_IDS = st.sampled_from(["", "x", "Locate", "task_1", "a b", "-x"])


def task(base: dict[str, Any], stem: str) -> dict[str, S[Damage]]:
    kind = base["kind"]
    want = kinds.INPUT_KEY[kind]
    required, optional = suite_mod.TRUTH_KEYS[kind]
    truth_keys = sorted(required | optional)
    path_lists = sorted(k for k in base["truth"] if k not in ("primary", "types"))
    required_lists = sorted(k for k in required if k != "primary")
    strings = ["id", "kind", "language", "explanation"]

    missing = _any([
        st.sampled_from(sorted(suite_mod.TASK_KEYS)).flatmap(lambda k: _del(base, (k,))),
        _del(base, ("input", want), "input"),
        st.sampled_from(sorted(required)).flatmap(lambda k: _del(base, ("truth", k))),
    ])
    wrong = _any([
        st.sampled_from(strings).flatmap(
            lambda k: _set(base, (k,), "wrong-type", _toml_wrong({"str"}))),
        _set(base, ("input",), "wrong-type", _toml_wrong({"table"})),
        _set(base, ("input", want), "wrong-type", _toml_wrong({"str"})),
        _set(base, ("truth",), "wrong-type", _toml_wrong({"table"})),
        *([_set(base, ("truth", "primary"), "wrong-type", _toml_wrong({"str"}))]
          if "primary" in required else []),
        *([_set(base, ("truth", "types"), "wrong-type", _str_list_wrong())]
          if "types" in base["truth"] else []),
        st.sampled_from(path_lists).flatmap(
            lambda k: _set(base, ("truth", k), "wrong-type", _str_list_wrong())),
    ])
    values = st.one_of(TOML_TYPES.values())
    unknown = _any([
        st.tuples(typo_key(suite_mod.TASK_KEYS), values).map(
            lambda t: _toml("unknown-key", put(base, (t[0],), t[1]), t[0],
                            f"top-level {t[0]} added")),
        st.tuples(typo_key([want]), values).map(
            lambda t: _toml("unknown-key", put(base, ("input", t[0]), t[1]),
                            f"input.{t[0]}", f"input.{t[0]} added")),
        st.tuples(typo_key(truth_keys), values).map(
            lambda t: _toml("unknown-key", put(base, ("truth", t[0]), t[1]),
                            f"truth.{t[0]}", f"truth.{t[0]} added")),
    ])
    out_of_range = [
        _set(base, ("id",), "out-of-range", st.one_of(BAD_IDS, st.just(stem.upper()),
                                                      st.just(stem + "-2"))),
        _set(base, ("kind",), "out-of-range", st.sampled_from(
            ["", "Locate", "locate ", "reference", "e2e", "retrieval"])),
        _set(base, ("language",), "out-of-range", st.sampled_from(
            ["", "python", "CSharp", "c#", "ts", "rs", "Rust"])),
        _set(base, ("explanation",), "out-of-range", blank()),
        _set(base, ("input", want), "out-of-range", blank()),
        *([_set(base, ("truth", "primary"), "out-of-range", st.just(""))]
          if "primary" in required else []),
        *[_set(base, ("truth", k), "out-of-range", st.just([])) for k in required_lists],
        st.tuples(st.sampled_from(path_lists), st.integers(0, 5)).map(
            lambda t: _toml("out-of-range", put(base, ("truth", t[0]), [
                *base["truth"][t[0]][:t[1]], "", *base["truth"][t[0]][t[1]:]]),
                f"truth.{t[0]}", f"an empty path in truth.{t[0]}")),
    ]
    if kind == "impact":
        out_of_range.append(st.integers(0, 9).map(lambda i: _toml(
            "out-of-range", put(base, ("truth", "graded"), [
                *base["truth"]["graded"][:i], base["input"]["seed"],
                *base["truth"]["graded"][i:]]), "truth.graded", "the seed in truth.graded")))
    return {"missing": missing, "wrong-type": wrong, "unknown-key": unknown,
            "out-of-range": _any(out_of_range)}


ESCAPING_PATHS = st.sampled_from(["../etc/passwd", "../../outside.cs", "web/../../x.ts",
                                  "/etc/passwd", "/corpus/web/src/cart/cart.ts",
                                  "dotnet/src/../../../x.cs", "..", "./../x"])


def task_defects(base: dict[str, Any]) -> dict[str, S[Damage]]:
    kind = base["kind"]
    path_keys = sorted(k for k in base["truth"] if k != "types")
    cases = [st.tuples(st.sampled_from(path_keys), ESCAPING_PATHS).map(
        lambda t: _toml("out-of-range", put(base, ("truth", t[0]), t[1] if t[0] == "primary"
                                            else [*base["truth"][t[0]], t[1]]),
                        f"truth.{t[0]}", f"{t[1]!r} in truth.{t[0]}"))]
    if kind == "impact":
        cases.append(_set(base, ("input", "seed"), "out-of-range", ESCAPING_PATHS))
    return {"truth-path-escapes": _any(cases)}


# -- images/*/recipe.toml -----------------------------------------------------------------------

def recipe(base: dict[str, Any], name: str, names: list[str]) -> dict[str, S[Damage]]:
    root = "bootstrap" in base
    missing = [_del(base, ("tool_version",))]
    if root:
        missing += [_del(base, ("bootstrap",), ("parent", "bootstrap")),
                    st.sampled_from(["suite", "variant", "source_date_epoch"]).flatmap(
                        lambda k: _del(base, ("bootstrap", k), "bootstrap"))]
    else:
        missing.append(_del(base, ("parent",), ("parent", "bootstrap")))
    wrong = [
        _set(base, ("description",), "wrong-type", _toml_wrong({"str"})),
        _set(base, ("parent",), "wrong-type", _toml_wrong({"str"})),
        _set(base, ("tool_version",), "wrong-type", _str_list_wrong()),
        _set(base, ("artifact",), "wrong-type", _toml_wrong({"str"})),
        _set(base, ("bootstrap",), "wrong-type", _toml_wrong({"table"})),
    ]
    if root:
        wrong.append(st.sampled_from(["suite", "variant"]).flatmap(
            lambda k: _set(base, ("bootstrap", k), "wrong-type", _toml_wrong({"str"}))))
        wrong.append(_set(base, ("bootstrap", "source_date_epoch"), "wrong-type",
                          _toml_wrong({"int"})))
    values = st.one_of(TOML_TYPES.values())
    unknown = [st.tuples(typo_key(["description", "parent", "tool_version", "bootstrap",
                                   "artifact"]), values).map(
        lambda t: _toml("unknown-key", put(base, (t[0],), t[1]), t[0],
                        f"top-level {t[0]} added"))]
    if root:
        unknown.append(st.tuples(typo_key(["suite", "variant", "source_date_epoch"]),
                                 values).map(
            lambda t: _toml("unknown-key", put(base, ("bootstrap", t[0]), t[1]),
                            f"bootstrap.{t[0]}", f"bootstrap.{t[0]} added")))
    bad_names = st.sampled_from(["", "Bookworm", "book worm", "bookworm/updates", "a;b",
                                 "bookworm_x", "../x"])
    out_of_range = [
        _set(base, ("tool_version",), "out-of-range", st.just([])),
        _set(base, ("artifact",), "out-of-range", bad_names),
    ]
    if root:
        out_of_range += [
            st.tuples(st.sampled_from(["suite", "variant"]), bad_names).map(
                lambda t: _toml("out-of-range", put(base, ("bootstrap", t[0]), t[1]),
                                f"bootstrap.{t[0]}", f"bootstrap.{t[0]} = {t[1]!r}")),
            _set(base, ("bootstrap", "source_date_epoch"), "out-of-range",
                 st.one_of(non_positive_int(), st.integers(2 ** 32, 2 ** 40))),
            st.sampled_from([n for n in names if n != name]).map(
                lambda p: _toml("out-of-range", put(base, ("parent",), p), ("parent",),
                                f"root recipe given parent {p!r} as well as [bootstrap]")),
        ]
    else:
        out_of_range += [
            _set(base, ("parent",), "out-of-range", st.sampled_from(
                ["", "nope", "Base", "base ", "images/base"]).filter(lambda p: p not in names)),
            st.just(_toml("out-of-range", put(base, ("bootstrap",),
                                              {"suite": "bookworm", "variant": "minbase"}),
                          ("parent", "bootstrap"), "child recipe given a [bootstrap] too")),
        ]
    return {"missing": _any(missing), "wrong-type": _any(wrong), "unknown-key": _any(unknown),
            "out-of-range": _any(out_of_range)}


def recipe_defects(base: dict[str, Any], name: str) -> dict[str, S[Damage]]:
    if "bootstrap" in base:
        return {}
    return {"parent-cycle": st.just(_toml("out-of-range", put(base, ("parent",), name),
                                          "parent", f"recipe {name!r} is its own parent"))}


# -- bench/images.lock --------------------------------------------------------------------------

ENTRY_KEYS = ("recipe_hash", "image_id", "tag", "build_seconds", "size_bytes")


def _json_wrong(accepted: set[str]) -> S[Any]:
    return other_than(JSON_TYPES, accepted)


def images_lock(base: dict[str, Any]) -> dict[str, S[Damage]]:
    names = sorted(base["images"])
    pairs = st.tuples(st.sampled_from(names), st.sampled_from(ENTRY_KEYS))
    name = st.sampled_from(names)
    missing = _any([
        _del(base, ("version",), fmt="json"), _del(base, ("images",), fmt="json"),
        pairs.map(lambda t: _json("missing", drop(base, ("images", *t)), f"images.{t[0]}.{t[1]}",
                                  f"images.{t[0]}.{t[1]} removed")),
    ])
    wrong = _any([
        _json_wrong({"object"}).map(lambda v: _json("wrong-type", v, "(top level)",
                                                    f"the whole lock is {v!r}")),
        _set(base, ("version",), "wrong-type", _json_wrong({"int", "bool"}), fmt="json"),
        _set(base, ("images",), "wrong-type", _json_wrong({"object"}), fmt="json"),
        st.tuples(name, _json_wrong({"object"})).map(
            lambda t: _json("wrong-type", put(base, ("images", t[0]), t[1]), f"images.{t[0]}",
                            f"images.{t[0]} = {t[1]!r}")),
        st.tuples(name, _json_wrong({"str"})).map(
            lambda t: _json("wrong-type", put(base, ("images", t[0], "image_id"), t[1]),
                            f"images.{t[0]}.image_id", f"images.{t[0]}.image_id = {t[1]!r}")),
    ])
    out_of_range = _any([
        _set(base, ("version",), "out-of-range", st.integers(-9, 2 ** 31).filter(
            lambda v: v != 1), fmt="json"),
        st.tuples(name, st.one_of(sha(64), st.sampled_from(["", "sha256", "SHA256:" + "a" * 64,
                                                             "sha512:" + "a" * 64]))).map(
            lambda t: _json("out-of-range", put(base, ("images", t[0], "image_id"), t[1]),
                            f"images.{t[0]}.image_id", f"images.{t[0]}.image_id = {t[1]!r}")),
    ])
    return {"missing": missing, "wrong-type": wrong, "out-of-range": out_of_range}


def images_lock_defects(base: dict[str, Any]) -> dict[str, S[Damage]]:
    names = sorted(base["images"])
    name = st.sampled_from(names)
    bad_ids = st.one_of(
        st.sampled_from([39, 63, 65, 0]).flatmap(sha).map(lambda h: "sha256:" + h),
        st.tuples(sha(64), st.integers(0, 63), st.sampled_from("gzXA ")).map(
            lambda t: "sha256:" + t[0][:t[1]] + t[2] + t[0][t[1] + 1:]))
    entry_types = {"recipe_hash": {"str"}, "tag": {"str"}, "build_seconds": {"int", "float"},
                   "size_bytes": {"int"}}
    return {
        "version-bool-or-float": _set(base, ("version",), "wrong-type",
                                      st.sampled_from([True, 1.0]), fmt="json"),
        "entry-values-unchecked": _any([
            st.tuples(name, bad_ids).map(lambda t: _json(
                "out-of-range", put(base, ("images", t[0], "image_id"), t[1]),
                f"images.{t[0]}.image_id", f"images.{t[0]}.image_id = {t[1]!r}")),
            st.tuples(name, st.sampled_from(sorted(entry_types))).flatmap(lambda t: _json_wrong(
                entry_types[t[1]]).map(lambda v: _json(
                    "wrong-type", put(base, ("images", t[0], t[1]), v),
                    f"images.{t[0]}.{t[1]}", f"images.{t[0]}.{t[1]} = {v!r}"))),
            st.tuples(name, st.sampled_from(["size_bytes", "build_seconds"]),
                      st.integers(-(2 ** 40), -1)).map(lambda t: _json(
                          "out-of-range", put(base, ("images", t[0], t[1]), t[2]),
                          f"images.{t[0]}.{t[1]}", f"images.{t[0]}.{t[1]} = {t[2]}")),
            st.tuples(name, sha(64), st.sampled_from([12, 63, 65])).map(
                lambda t: _json("out-of-range", put(base, ("images", t[0], "recipe_hash"),
                                                    t[1][:t[2]] if t[2] <= 64 else t[1] + "a"),
                                f"images.{t[0]}.recipe_hash",
                                f"images.{t[0]}.recipe_hash of {t[2]} hex digits")),
        ]),
        "artifact-entry-without-build-args": st.just(_json(
            "missing", put(base, ("images", "devscout"), {
                "recipe_hash": "0" * 64, "image_id": "sha256:" + "0" * 64,
                "tag": "sandbench/devscout:000000000000", "build_seconds": 1.0,
                "size_bytes": 1}), "images.devscout.build_args",
            "a devscout entry with every key ImageLock.load requires, but no build_args")),
    }


# -- cells/ARM/TASK/REP/record.json -------------------------------------------------------------

RECORD_FIELDS = sorted(transcripts.ExecRecord.__dataclass_fields__)
# Present in every record made now, optional in the schema: older records lack them.
REQUIRED_RECORD_FIELDS = [k for k in RECORD_FIELDS if k not in ("exec_path", "engine", "runtime")]
STREAM_FIELDS = sorted(transcripts.StreamInfo.__dataclass_fields__)


def record(base: dict[str, Any]) -> dict[str, S[Damage]]:
    stream = st.sampled_from(["stdout", "stderr"])
    missing = _any([
        st.sampled_from(REQUIRED_RECORD_FIELDS).flatmap(lambda k: _del(base, (k,), fmt="json")),
        st.tuples(stream, st.sampled_from(STREAM_FIELDS)).map(lambda t: _json(
            "missing", drop(base, t), dotted(t), f"{dotted(t)} removed")),
    ])
    wrong = _any([
        _json_wrong({"object"}).map(lambda v: _json("wrong-type", v, "(top level)",
                                                    f"the whole record is {v!r}")),
        _set(base, ("schema",), "wrong-type", _json_wrong({"str"}), fmt="json"),
        st.tuples(stream, _json_wrong({"object"})).map(lambda t: _json(
            "wrong-type", put(base, (t[0],), t[1]), t[0], f"{t[0]} = {t[1]!r}")),
        _set(base, ("outcome",), "wrong-type", _json_wrong({"str", "list", "object"}),
             fmt="json"),
    ])
    unknown = st.tuples(stream, typo_key(STREAM_FIELDS), st.one_of(JSON_TYPES.values())).map(
        lambda t: _json("unknown-key", put(base, (t[0], t[1]), t[2]), f"{t[0]}.{t[1]}",
                        f"{t[0]}.{t[1]} added"))
    out_of_range = _any([
        _set(base, ("schema",), "out-of-range", st.sampled_from(
            ["", "sandbench.exec-record/2", "sandbench.exec-record", "sandbench.run/1",
             "SANDBENCH.EXEC-RECORD/1"]), fmt="json"),
        _set(base, ("outcome",), "out-of-range", st.sampled_from(
            ["", "OK", "success", "failed", "nonzero", "killed"]), fmt="json"),
    ])
    return {"missing": missing, "wrong-type": wrong, "unknown-key": unknown,
            "out-of-range": out_of_range}


RECORD_TYPES = {  # from orchestrator/schemas/exec-record.schema.json
    "run_id": {"str"}, "arm": {"str"}, "argv": {"list"}, "env": {"object"}, "workdir": {"str"},
    "user": {"str"}, "image_id": {"str"}, "container_id": {"str"}, "limits": {"object"},
    "started_at": {"str"}, "timing": {"object"}, "exit": {"object"}, "helper": {"object"},
    "flags": {"list"},
}
NESTED_REQUIRED = {
    "limits": ["memory_bytes", "pids", "cpus", "tmp_bytes", "timeout_s", "grace_s", "cap_bytes"],
    "timing": ["wall_ns", "user_us", "sys_us", "maxrss_kb", "host_bracket_ns"],
    "exit": ["exit_code", "signal", "timed_out", "host_timed_out", "oom_killed", "oom_kills",
             "spawn_error", "stray_killed"],
    "helper": ["version", "exit_code", "errors", "protocol_error", "stderr_tail"],
}


def record_defects(base: dict[str, Any]) -> dict[str, S[Damage]]:
    stream = st.sampled_from(["stdout", "stderr"])
    return {
        "outcome-unhashable": _set(base, ("outcome",), "wrong-type",
                                   _json_wrong({"null", "str", "int", "float", "bool"}),
                                   fmt="json"),
        "schema-not-enforced": _any([
            st.sampled_from(sorted(RECORD_TYPES)).flatmap(lambda k: _set(
                base, (k,), "wrong-type", _json_wrong(RECORD_TYPES[k]), fmt="json")),
            st.tuples(typo_key(RECORD_FIELDS), st.one_of(JSON_TYPES.values())).map(
                lambda t: _json("unknown-key", put(base, (t[0],), t[1]), t[0],
                                f"top-level {t[0]} added")),
            st.sampled_from(sorted(NESTED_REQUIRED)).flatmap(lambda k: st.sampled_from(
                NESTED_REQUIRED[k]).map(lambda f: _json("missing", drop(base, (k, f)),
                                                        f"{k}.{f}", f"{k}.{f} removed"))),
            _set(base, ("image_id",), "out-of-range", st.sampled_from(
                ["", "sha256:abc", "26cb6875be96", "sha256:" + "A" * 64]), fmt="json"),
            st.tuples(stream, st.sampled_from(["", "abc", "A" * 64, "0" * 63])).map(
                lambda t: _json("out-of-range", put(base, (t[0], "sha256"), t[1]),
                                f"{t[0]}.sha256", f"{t[0]}.sha256 = {t[1]!r}")),
            st.tuples(stream, st.sampled_from(["bytes_total", "bytes_kept"]),
                      _json_wrong({"int"})).map(lambda t: _json(
                          "wrong-type", put(base, (t[0], t[1]), t[2]), f"{t[0]}.{t[1]}",
                          f"{t[0]}.{t[1]} = {t[2]!r}")),
            _set(base, ("flags",), "out-of-range", st.sampled_from(
                [["fast"], [1], ["impossible-timing", "x"]]), fmt="json"),
        ]),
    }


# -- runs/RUN/guards/ARM/*.json ---------------------------------------------------------------

POLICY_FIELDS = ["run_id", "arm", "image_id", "user", "env", "mounts", "tmpfs", "memory_bytes",
                 "pids", "nano_cpus"]  # labels has a default


def policy(base: dict[str, Any]) -> dict[str, S[Damage]]:
    mounts = base["mounts"]
    n = len(mounts)
    missing = _any([
        st.sampled_from(POLICY_FIELDS).flatmap(lambda k: _del(base, (k,), fmt="json")),
        st.tuples(st.integers(0, n - 1), st.sampled_from(["source", "target", "read_only"])
                  ).map(lambda t: _json("missing", put(base, ("mounts",), [
                      *mounts[:t[0]], {k: v for k, v in mounts[t[0]].items() if k != t[1]},
                      *mounts[t[0] + 1:]]), t[1], f"mounts[{t[0]}].{t[1]} removed")),
    ])
    unknown = _any([
        st.tuples(typo_key([*POLICY_FIELDS, "labels"]), st.one_of(JSON_TYPES.values())).map(
            lambda t: _json("unknown-key", put(base, (t[0],), t[1]), t[0],
                            f"top-level {t[0]} added")),
        st.tuples(st.integers(0, n - 1), typo_key(["source", "target", "read_only"])).map(
            lambda t: _json("unknown-key", put(base, ("mounts",), [
                *mounts[:t[0]], {**mounts[t[0]], t[1]: "x"}, *mounts[t[0] + 1:]]), t[1],
                f"mounts[{t[0]}].{t[1]} added")),
    ])
    wrong = _any([
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                  st.lists(st.integers(), min_size=1, max_size=3)).map(
            lambda v: Damage("wrong-type", json_doc(v), (), f"the whole policy is {v!r}")),
    ])
    return {"missing": missing, "unknown-key": unknown, "wrong-type": wrong}


def guards_defects(policy_doc: dict[str, Any], inspect_doc: dict[str, Any],
                   probe_doc: dict[str, Any]) -> dict[str, S[Damage]]:
    """Keyed by the snapshot file each class damages."""
    mounts = policy_doc["mounts"]
    containers = {"env": {"list"}, "tmpfs": {"object"}, "labels": {"object"}}
    scalars = {"run_id": {"str"}, "arm": {"str"}, "image_id": {"str"}, "user": {"str"},
               "memory_bytes": {"int"}, "pids": {"int"}, "nano_cpus": {"int"}}
    not_object = st.sampled_from([["x"], "x", 1, True, [{"a": 1}]])
    return {
        "policy.json": _any([
            st.sampled_from(["x", "policy", "{}"]).map(  # "" is dict(""), refused: no mounts
                lambda v: Damage("wrong-type", json_doc(v), (), f"the whole policy is {v!r}")),
            st.sampled_from(["65532", "", "65532:65532:0", "root", "a:b"]).map(
                lambda v: _json("out-of-range", put(policy_doc, ("user",), v), "user",
                                f"user = {v!r}")),
            st.sampled_from(sorted(containers)).flatmap(lambda k: _json_wrong(
                containers[k]).map(lambda v: _json("wrong-type", put(policy_doc, (k,), v), k,
                                                   f"{k} = {v!r}"))),
            st.sampled_from(sorted(scalars)).flatmap(lambda k: _json_wrong(
                scalars[k]).map(lambda v: _json("wrong-type", put(policy_doc, (k,), v), k,
                                                f"{k} = {v!r}"))),
            st.tuples(st.integers(0, len(mounts) - 1), _json_wrong({"object"})).map(
                lambda t: _json("wrong-type", put(policy_doc, ("mounts",), [
                    *mounts[:t[0]], t[1], *mounts[t[0] + 1:]]), "mounts",
                    f"mounts[{t[0]}] = {t[1]!r}")),
        ]),
        "inspect.json": _any([
            _json_wrong({"object"}).map(lambda v: Damage("wrong-type", json_doc(v), (),
                                                         f"the whole inspect is {v!r}")),
            st.tuples(st.sampled_from(["HostConfig", "Config", "NetworkSettings", "Mounts"]),
                      not_object).map(lambda t: _json(
                          "wrong-type", put(inspect_doc, (t[0],), t[1]), t[0],
                          f"{t[0]} = {t[1]!r}")),
        ]),
        "probe.json": _any([
            _json_wrong({"object"}).map(lambda v: Damage("wrong-type", json_doc(v), (),
                                                         f"the whole probe is {v!r}")),
            st.tuples(st.sampled_from(["facts", "canary"]), not_object).map(
                lambda t: _json("wrong-type", put(probe_doc, (t[0],), t[1]), t[0],
                                f"{t[0]} = {t[1]!r}")),
        ]),
    }


# -- runs/RUN/run.json (read by `sandbench score`) --------------------------------------------

RUN_TYPES = {  # the keys the scorer needs, from the run's run.json and score/inputs.py's docs
    "run_id": "str", "date": "str", "status": "str", "suite.name": "str",
    "suite.manifest_sha256": "str", "suite.reps": "int", "corpus.id": "str",
    "corpus.repo": "str", "corpus.sha": "str", "corpus.tracked_files": "int",
    "corpus.languages": "object", "arms": "object", "host.arch": "str", "host.cores": "int",
    "host.memory_bytes": "int", "engine": "object", "deviations": "list", "resumes": "list",
}
RUN_ARM_TYPES = {"image": "str", "tool_version": "str", "spec": "object", "spec.parser": "str",
                 "spec.tasks": "object", "spec.not_attempted": "object", "spec.env": "object",
                 "spec_sha256": "str"}


def run_json(base: dict[str, Any]) -> dict[str, S[Damage]]:
    def path(dotted_key: str) -> tuple[str, ...]:
        return tuple(dotted_key.split("."))

    ran = sorted(a for a, d in base["arms"].items() if not d.get("unavailable"))
    top = sorted(RUN_TYPES)
    missing = _any([
        _del(base, ("schema",), fmt="json"),
        st.sampled_from(top).flatmap(lambda k: _del(base, path(k), fmt="json")),
    ])
    wrong = _any([
        _json_wrong({"object"}).map(lambda v: _json("wrong-type", v, "(top level)",
                                                    f"the whole run.json is {v!r}")),
        _set(base, ("schema",), "wrong-type", _json_wrong({"str"}), fmt="json"),
        st.sampled_from(top).flatmap(lambda k: _set(
            base, path(k), "wrong-type", _json_wrong({RUN_TYPES[k]} | (
                {"float"} if RUN_TYPES[k] == "int" else set())), fmt="json")),
    ])
    out_of_range = _any([
        _set(base, ("schema",), "out-of-range", st.sampled_from(
            ["", "sandbench.run/2", "sandbench.exec-record/1", "SANDBENCH.RUN/1"]), fmt="json"),
        _set(base, ("status",), "out-of-range", st.sampled_from(
            ["", "running", "failed", "Complete", "interrupted"]), fmt="json"),
        _set(base, ("date",), "out-of-range", st.sampled_from(
            ["", "2026-12-2", "02.12.2026", "2026-12-02T15:00:00Z", "yesterday", "20261202"]),
            fmt="json"),
        _set(base, ("suite", "reps"), "out-of-range", st.integers(-5, 1000).filter(
            lambda r: r != base["suite"]["reps"]), fmt="json"),
        st.tuples(st.sampled_from(ran), sha(64)).map(lambda t: _json(
            "out-of-range", put(base, ("arms", t[0], "spec_sha256"), t[1]),
            f"arms.{t[0]}.spec_sha256", f"arms.{t[0]}.spec_sha256 not the sealed arm's")),
    ])
    return {"missing": missing, "wrong-type": wrong, "out-of-range": out_of_range}


def run_json_defects(base: dict[str, Any]) -> dict[str, S[Damage]]:
    ran = sorted(a for a, d in base["arms"].items() if not d.get("unavailable"))
    arm_keys = sorted(RUN_ARM_TYPES)
    return {"arm-keys": _any([
        st.tuples(st.sampled_from(ran), st.sampled_from(arm_keys)).flatmap(
            lambda t: _del(base, ("arms", t[0], *t[1].split(".")), fmt="json")),
        st.tuples(st.sampled_from(ran), st.sampled_from(arm_keys)).flatmap(lambda t: _set(
            base, ("arms", t[0], *t[1].split(".")), "wrong-type",
            _json_wrong({RUN_ARM_TYPES[t[1]]}), fmt="json")),
        st.tuples(st.sampled_from(ran), _json_wrong({"object"})).map(lambda t: _json(
            "wrong-type", put(base, ("arms", t[0]), t[1]), f"arms.{t[0]}",
            f"arms.{t[0]} = {t[1]!r}")),
    ])}


def golden_record(base: dict[str, Any]) -> dict[str, S[Damage]]:
    """A record of the golden run, scored: the record classes, and one of another run/arm."""
    classes = record(base)
    classes["out-of-range"] = _any([classes["out-of-range"], *(
        _set(base, (k,), "out-of-range", st.sampled_from(["", "other", base[k] + "x"]),
             fmt="json") for k in ("arm", "run_id"))])
    return classes
