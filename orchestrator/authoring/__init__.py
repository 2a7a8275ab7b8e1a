"""Authoring by command: pin a corpus from a mirror or a URL (`corpus add`), create a suite with
its declared choices and a preregistration stating them (`suite new`), and make task files from
a file of records, their truth computed by the suite's declared rule (`suite add-tasks`).

Everything is checked before anything is written, and every write is atomic: a corpus.lock
entry, a suite folder, a set of task files appears whole or not at all. The truth rules read
the pristine corpus and the mirror only (pinned inputs, never an arm's output), and a mirror
only as objects (`orchestrator.corpus.foreign`): no git runs in a repository the user brought.
"""

from orchestrator.authoring.new_suite import DEFAULT_BANDS, SuiteChoices, new_suite
from orchestrator.authoring.pin import add_corpus
from orchestrator.authoring.records import read_records
from orchestrator.authoring.tasks import add_tasks

__all__ = ["DEFAULT_BANDS", "SuiteChoices", "add_corpus", "add_tasks", "new_suite",
           "read_records"]
