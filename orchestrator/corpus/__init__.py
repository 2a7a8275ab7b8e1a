"""Corpora: pinned in corpus.lock, fetched once into a pristine store, copied privately per arm.

Every published figure names a corpus and the commit it was measured on, so a corpus is a
verified input. The lock pins it (`lock`); `fetch` stores exactly the pinned commit, detached,
with no remote and no object that the pin cannot reach, so no arm can read the upstream answer
(`pristine`, through the clean git of `git`); `make_arm_copy` gives each arm an independent
copy, its own object store, since some tools write into the git directory (`copies`); git runs
on the pristine copy only, never on a copy an arm has had (its config and hooks are the arm's);
`tree_digest` proves the pristine copy unchanged across a run, and `snapshot`/`changes` list
what an arm wrote into its copy (`snapshot`, a bounded walk: `orchestrator.untrusted.walk`).
"""

from orchestrator.corpus.copies import archive_tree, make_arm_copy, verify_arm_copy
from orchestrator.corpus.git import GIT_DIR, Difference, demo_sha
from orchestrator.corpus.lock import (
    BUILTIN_SCHEME,
    BUILTINS,
    FIELDS,
    LOCK_NAME,
    CorpusPin,
    fetch_hint,
    load_lock,
    lock_path,
    pin_for,
)
from orchestrator.corpus.pristine import (
    LANGUAGES,
    CorpusState,
    PristineInfo,
    corpus_dir,
    fetch,
    info_path,
    list_corpora,
    read_info,
    verify_pristine,
)
from orchestrator.corpus.snapshot import (Change, Entry, Snapshot, changes, iter_changes,
                                          snapshot, snapshot_of_archive, tree_digest)

__all__ = ["BUILTINS", "BUILTIN_SCHEME", "Change", "CorpusPin", "CorpusState", "Difference",
           "Entry", "FIELDS", "GIT_DIR", "LANGUAGES", "LOCK_NAME", "PristineInfo", "Snapshot",
           "archive_tree", "changes", "corpus_dir", "demo_sha", "fetch", "fetch_hint",
           "info_path", "iter_changes", "list_corpora", "load_lock", "lock_path", "make_arm_copy",
           "pin_for", "read_info", "snapshot", "snapshot_of_archive", "tree_digest",
           "verify_arm_copy", "verify_pristine"]
