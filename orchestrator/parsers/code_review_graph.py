"""The `code-review-graph` parser: its JSON answers, and its graph's edges for the edge
kinds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from orchestrator.kinds import EDGE_KINDS
from orchestrator.parsers import (Edge, Parsed, Row, answer_rows, check_kind, count_calls, decode,
                                  json_values, line_value, reason, repo_path, require)

_CRG_SHAPES = {"references": "query", "impact": "impact", "locate": "search",
               "e2e-retrieval": "search"}


class CodeReviewGraphParser:
    """code-review-graph's JSON answers, one document per call, back to back.

    - ``ambiguous`` (a question back: which of these nodes?) and ``not_found`` yield no row.
    - ``query`` (references: callers_of, importers_of): one row per edge, ``file_path``,
      ``line``, the edge ``kind`` (CALLS, IMPORTS_FROM) as reason.
    - ``impact``: one row per impacted node, at its call site's line when it has one, else its
      first line, with its name after ``::`` (or its kind, for a File node) as reason; then,
      line-less, every impacted file no shown node covers (the tool caps the nodes it lists).
    - ``search`` (locate, e2e-retrieval): one row per result in the tool's rank order, at the
      node's first line, reason as for impact.

    Every other status, or a document of another shape than the task kind's, is a ParseError.
    """

    name = "code-review-graph"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        check_kind(kind)
        if kind in EDGE_KINDS:
            edges = answer_rows((self._graph_edge(doc, kind)
                                 for doc in json_values(decode(stdout), self.name)), self.name)
            return Parsed(tuple(Row(e.path, e.line, e.target[1]) for e in edges),
                          count_calls(stderr), edges)
        return Parsed(answer_rows(self._rows(stdout, kind), self.name), count_calls(stderr))

    def _rows(self, stdout: bytes, kind: str) -> Iterator[Row]:
        for doc in json_values(decode(stdout), self.name):
            require(isinstance(doc, dict), self.name, "a JSON object per answer", doc)
            status = doc.get("status")
            if status in ("ambiguous", "not_found"):
                continue
            require(status == "ok", self.name, "status ok, ambiguous or not_found", status)
            shape = _CRG_SHAPES[kind]
            if shape == "query":
                yield from self._edges(doc)
            elif shape == "impact":
                yield from self._impact(doc)
            else:
                yield from self._search(doc)

    def _node(self, qualified: object) -> tuple[str | None, str]:
        """A graph node's (file, name): `/corpus/FILE::Type.name` or `/corpus/FILE::name`
        (the graph names nodes by absolute path), or the call's text the tool did not
        resolve to a node (`helper`, `Box::new`, `mem::take`): no file, its last segment."""
        require(isinstance(qualified, str) and bool(qualified), self.name,
                "a node's qualified name", qualified)
        assert isinstance(qualified, str)
        file, sep, rest = qualified.partition("::")
        if not sep or not file.startswith("/"):
            return None, qualified.rsplit("::", 1)[-1].rsplit(".", 1)[-1]
        return repo_path(file, self.name), rest.rsplit(".", 1)[-1]

    def _graph_edge(self, doc: Any, kind: str) -> Edge:
        """One line of crg-edges: a CALLS edge (caller -> callee) for call-edges, a
        TESTED_BY edge (stored callee -> test, turned round to test -> callee) for
        test-edges."""
        want = {"call-edges": "CALLS", "test-edges": "TESTED_BY"}[kind]
        require(isinstance(doc, dict) and doc.get("kind") == want, self.name,
                f"a {want} edge object", doc)
        require(isinstance(doc.get("file"), str), self.name, "an edge with a `file`", doc)
        line = line_value(doc.get("line"), self.name)
        source, target = self._node(doc.get("source")), self._node(doc.get("target"))
        if kind == "test-edges":
            source, target = target, source
        return Edge(repo_path(doc["file"], self.name), line, source, target)

    def _list(self, doc: dict[str, Any], key: str, shape: str) -> list[Any]:
        value = doc.get(key)
        require(isinstance(value, list), self.name, f"a {shape} answer with a `{key}` list",
                {k: doc[k] for k in list(doc)[:4]})
        assert isinstance(value, list)
        return value

    def _edges(self, doc: dict[str, Any]) -> Iterator[Row]:
        require("pattern" in doc, self.name, "a query answer (with `pattern`)", list(doc))
        for edge in self._list(doc, "edges", "query"):
            require(isinstance(edge, dict) and isinstance(edge.get("file_path"), str),
                    self.name, "an edge with a `file_path`", edge)
            line = edge.get("line")
            yield Row(repo_path(edge["file_path"], self.name),
                      None if line is None else line_value(line, self.name),
                      reason(edge.get("kind")))

    def _node_row(self, node: Any, line: object) -> Row:
        require(isinstance(node, dict) and isinstance(node.get("file_path"), str), self.name,
                "a node with a `file_path`", node)
        qualified = node.get("qualified_name")
        label = (qualified.split("::", 1)[1] if isinstance(qualified, str) and "::" in qualified
                 else node.get("kind"))
        return Row(repo_path(node["file_path"], self.name),
                   None if line is None else line_value(line, self.name), reason(label))

    def _impact(self, doc: dict[str, Any]) -> Iterator[Row]:
        shown = set()
        for node in self._list(doc, "impacted_nodes", "impact"):
            require(isinstance(node, dict), self.name, "an impacted node", node)
            site = node.get("call_site")
            line = site.get("line") if isinstance(site, dict) else None
            row = self._node_row(node, node.get("line_start") if line is None else line)
            shown.add(row.path)
            yield row
        for file in self._list(doc, "impacted_files", "impact"):
            require(isinstance(file, str), self.name, "a path in `impacted_files`", file)
            path = repo_path(file, self.name)
            if path not in shown:
                shown.add(path)
                yield Row(path, None, "impacted file")

    def _search(self, doc: dict[str, Any]) -> Iterator[Row]:
        require("query" in doc, self.name, "a search answer (with `query`)", list(doc))
        for node in self._list(doc, "results", "search"):
            require(isinstance(node, dict), self.name, "a search result", node)
            yield self._node_row(node, node.get("line_start"))


PARSER = CodeReviewGraphParser()
