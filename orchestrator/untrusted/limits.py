"""Every bound the host puts on what a sandboxed tool produced, declared once.

Each section belongs to one module of `orchestrator.untrusted`; a bound is named for what it
caps, and its docstring comment says why the number is safe and still large enough for any
real tool's output.
"""

from __future__ import annotations

# -- names and paths (paths.py) ---------------------------------------------------------------

# Bytes of one relative name a tool chose (a document, an answer's path, a file under /state):
# Linux's PATH_MAX; no path a real tool writes or names is longer.
PATH_MAX_BYTES = 4096

# -- walks and reads of state, out and corpus copies (walk.py) ------------------------------
# A walk holds two descriptors per level and one Entry (~270 bytes with its name) per path in
# memory; what it reads is also bounded by the size of the file system it walks (the arm's
# declared state_mib, out_mib and corpus size), which these caps sit above for any honest
# tool. The entry, depth and name caps are per listing; reads, extent steps and time are one
# budget for all of an arm's listings (its corpus copy, /state and /out, walked one at a time).

# Levels below the root a listing descends: a real tree (a node_modules, a .git) is under 40
# deep; 256 levels keep at most ~514 descriptors open.
WALK_MAX_DEPTH = 256
# Entries one listing holds: 2x the largest registered corpus copy with its .git (~450,000).
# With the name cap below, one listing holds at most ~600 MiB (measured: 1,000,000 entries of
# 251-byte names, the whole state.json written, peaked at 456 MiB), and an arm's listings are
# held one at a time: that is the host memory per arm, beside its corpus-before snapshot.
WALK_MAX_ENTRIES = 1_000_000
# Bytes of relative names one listing holds: 256 bytes on average for the entry cap, where a
# real tree averages under 80.
WALK_MAX_PATH_BYTES = 256 << 20
# Bytes an arm's listings read to digest files (allocated extents only, so holes cost
# nothing; a file with several names is read once): 16x the file systems an arm is given by
# default (4 GiB of /state, 1 GiB of /out, a corpus copy under 2 GiB), 2-5 minutes of sha256
# on one core of the shared machine (0.2-0.6 GB/s measured, by load): the deadline's order.
WALK_MAX_READ_BYTES = 64 << 30
# SEEK_DATA/SEEK_HOLE calls an arm's listings make over files with holes (two per extent),
# paid before each call: one file of 100,000 one-block extents hard-linked 65,000 times cost
# 6.5 G calls (~3.4 hours) when every name was enumerated. An honest sparse file (a database,
# a preallocated index) has a few thousand extents; 4 M steps take 4-16 s (1-4 us a step
# measured on ext4 here, by load) and are 4x every one-block extent (a block, then a hole) a
# default 4 GiB /state can hold.
WALK_MAX_EXTENT_STEPS = 4_000_000
# Seconds the host spends on one arm's listings, from the first to the last, checked per
# entry, per extent step and per 1 MiB read: a listing past it stops, cut `time`. 1,000,000
# entries of 251-byte names were listed in 76 s on the loaded 2-core machine, so the largest
# registered corpus copy with its .git (~450,000 entries) takes ~35 s plus its bytes' sha256:
# 300 s is ~4x an honest arm's listings, and bounds how long the next arm's sandbox sits idle.
WALK_MAX_SECONDS = 300

# -- what the run's documents hold of an arm's files (orchestrator/disclosure.py) -------------
# arms/ARM/state.json lists names from the listings above (corpus changes, state and out files,
# sparse files: seven lists); scores.json repeats two of them per arm. Each list keeps its
# first names in byte order of the path and gives the count and bytes of the rest, so a
# million names cost the documents what 10,000 do: a state.json of at most ~12 MB for names
# of honest length, ~45 MB if every byte of every name is an escaped non-UTF-8 byte.

# Names one list keeps: the largest honest list measured is two files (code-review-graph's
# /state); a tool's HOME with its caches, or an index directory, is under a few thousand.
DISCLOSED_NAMES = 10_000
# Bytes of names one list keeps (a list stops at the first of the two bounds): 104 bytes a
# name for the whole 10,000, where a real tree averages under 80 (one name is at most 4,096).
DISCLOSED_NAME_BYTES = 1 << 20

# -- decoding: JSON, integers, frames (decode.py) ---------------------------------------------

# Characters of one JSON document (or one stream of JSON values) a tool produced: the exec's
# stream cap (64 MiB). Nothing a tool wrote is kept longer, so nothing honest is refused; a
# longer text can only be something the host built from several, and is refused whole.
JSON_MAX_CHARS = 64 * 1024 * 1024
# Nesting of arrays and objects, checked by a linear scan BEFORE Python's recursive decoder
# runs, so that decoder never nears the interpreter's recursion limit (about 1,000 frames,
# less the caller's own): the deepest honest answer (a code-review-graph impact, serena's
# path > kind > symbol grouping, an MCP result in its JSON-RPC envelope) nests under 12.
JSON_MAX_DEPTH = 128
# Characters of one JSON number: a 64-bit integer has at most 20, a double's shortest repr
# at most 24. Python converts a decimal integer in time quadratic in its digits (and refuses
# past 4,300 with a ValueError of its own); at 40 a number costs nothing, a longer one is
# refused before it is converted.
NUMBER_MAX_CHARS = 40
# Digits of a line number a tool printed as text (`path:LINE:text`): 999,999,999 lines is
# 1,000x the longest source file of any corpus; a longer run of digits is not a line.
LINE_NUMBER_MAX_DIGITS = 9
# Characters of a path a tool names (an answer's file, a node's file): PATH_MAX.
PATH_MAX_CHARS = 4096
# Characters of a tool's text quoted in an error or a failure's detail (`clip`): enough to
# recognise it, never the whole of a 64 MiB stream.
EXCERPT_CHARS = 200

# -- answers: what the host builds from one answer (parsers/, score/) -------------------------
# An answer is one rep's stdout (at most the exec's 64 MiB stream cap). The largest honest
# answer of the demo's recorded run (tests/golden/demo-run) has 86 rows, 881 lines and 1,330
# JSON items (a JSON node of 10 fields is 11 items); the largest registered corpus (csharp) has
# 5,849 files. A parser reads an answer up to these bounds and stops at the first thing past
# one: the cell is then `parse-error` naming the guard (`too-many-rows`, `too-many-lines`,
# `too-many-items`), graded `wrong` with recall 0 like any answer the host cannot read whole.
# It is never graded on a cut: a cut would make a flood look precise (precision counts every
# file an answer names, and an impact answer over its cap is wrong whatever it names). Only
# that arm's bytes decide it, and the same bytes always do.

# Rows one answer is read to: 1,000x the largest honest answer measured (86), 17x the files of
# the largest corpus (an honest answer names few files more than once or twice).
ANSWER_MAX_ROWS = 100_000
# Lines of a text answer read, rows or not (blank lines, rg's count lines and binary notices,
# devscout's trailers): twice the row budget, for the lines a format prints beside its rows.
ANSWER_MAX_LINES = 2 * ANSWER_MAX_ROWS
# Items of one answer's JSON: its arrays, objects and separating commas outside strings
# (counted by the linear scan that measures nesting, before Python's decoder builds a value)
# and its top-level values; a value count is at most twice it. 750x the largest honest
# answer's (1,330), the row budget's worth of 10-field nodes.
ANSWER_MAX_JSON_ITEMS = 1_000_000
# What one answer may then cost `sandbench score`, whatever it holds: its bytes read once,
# digested and decoded (a line at a time for a text format), at most ANSWER_MAX_ROWS rows (a
# Row is ~300 bytes beside its path and reason, which are the answer's own characters), or one
# JSON text of at most ANSWER_MAX_JSON_ITEMS items decoded. Measured on 64 MiB answers on the
# shared 2-core machine: 1.55 M distinct rg rows, 100 MB and 2.5 s; JSON of 146,000 matches of
# 400-byte lines (880,000 items, decoded, then refused for its rows), 320 MB and 4.4 s; JSON of
# 22 M items (refused by the scan), 340 MB and 1.5 s. The process's peak memory stays under
# ANSWER_BUDGET_MIB whatever one answer holds, and one answer adds at most ANSWER_BUDGET_S
# seconds (a cell parses each distinct rep's answer once).
ANSWER_BUDGET_MIB = 512
ANSWER_BUDGET_S = 10.0

# -- documents: tool-derived lists copied into scores.json and the results documents -------
# Items of one tool-derived list a document holds (an answer's files, its files outside the
# truth, an edge cell's non-matches, a listing of /state or of corpus changes): past it the
# first ones in the list's own order are kept and the document records how many there were
# (`lists_cut`). Every count, recall and precision is computed over the whole list first. An
# honest answer names at most a few hundred files; 1,000 paths of at most 4,096 bytes keep
# one list under 4 MiB, one cell's lists under 12 MiB.
DOCUMENT_LIST_MAX_ITEMS = 1_000

# -- text shown to a person: Markdown, terminal (text.py) --------------------------------------

# One tool-derived field on a terminal (a path, a version, a found value in an error): past
# this it is cut, with the count of what was left out. A real path is at most 4,096 bytes.
TERMINAL_FIELD_CHARS = 4096
# One line of a message printed on a terminal (an error, a line of a diff): a stderr tail the
# host quotes is already capped where it is read; this keeps one hostile line from filling
# the screen.
TERMINAL_LINE_CHARS = 16384

# -- oracle indexes (oracle/) ------------------------------------------------------------------
# An oracle's SCIP index is at most one kept transcript (64 MiB). The largest honest index
# measured (typescript-parity: 12 MB, 516 documents, 166,707 occurrences, 73 bytes each) is far
# below every bound; a 64 MiB index of minimal occurrences (7 bytes each) is 9.6 M of them,
# 2.4 GB of host memory and 95 s of decoding before these caps. The decoder descends only into
# the schema's three known levels (Index > Document > Occurrence, Index > Metadata > ToolInfo)
# and steps over every other field by its length, so nesting costs nothing and needs no bound.

# Bytes of one varint: protobuf's own maximum (a 64-bit value in 7-bit groups).
SCIP_VARINT_MAX_BYTES = 10
# Documents of one index: 190x the largest honest one (516).
SCIP_MAX_DOCUMENTS = 100_000
# Occurrences of one index, all documents together: 12x the largest honest one (166,707); an
# honest index averaging 73 bytes per occurrence cannot hold more than ~920,000 in 64 MiB.
SCIP_MAX_OCCURRENCES = 2_000_000
# Numbers in an occurrence's range: SCIP's [line, start, end] or [sl, sc, el, ec].
SCIP_RANGE_MAX_NUMBERS = 4
# Bytes of a path the index names (project root, a document's relative path): PATH_MAX.
SCIP_PATH_MAX_BYTES = 4096
# Bytes of one source file at the pin read because an index named it (the pristine copy's, a
# file git tracks): 64x the largest source file of the registered corpora (~1 MB); a truth
# holds every line of it in memory.
PINNED_SOURCE_MAX_BYTES = 64 << 20
# Bytes of a symbol, a language or a tool's name or version: the longest honest symbol is a
# few hundred bytes (a package, a version and a file's path).
SCIP_TEXT_MAX_BYTES = 65_536

# -- image builds and short containers (images/build_stream.py, engine/client.py) -------------
# A build's RUN steps run third-party install scripts, with the network the build needs; what
# they print reaches the host in the build's stream, and a short container's output (a tool's
# version, the image's dpkg and pip manifests) in its log.

# Characters of one build's log kept on disk: 100x the longest honest build log here (the
# serena image's, ~0.6 MB); past it the log says how much it left out.
BUILD_LOG_MAX_BYTES = 64 << 20
# Characters of one line of a build's stream the host looks at: a step or image line is under
# 200; a longer line is kept only up to this, and only in the log.
BUILD_LINE_MAX_CHARS = 65_536
# Bytes of the log the engine keeps for a short container (json-file `max-size`, one file):
# what the host then reads of it is bounded too. The largest honest output, an image's dpkg
# and pip manifests with its version line, is under 200 KB.
SHORT_CONTAINER_LOG_BYTES = 16 << 20
# Characters of a tool's version line kept in the lock (and shown in every document): an
# honest one ("ripgrep 13.0.0 (rev af6b6c543b)") is under 100.
TOOL_VERSION_MAX_CHARS = 200
