"""The `aider-repomap` parser: the aider-repomap arm prints rg's `path:line:name` rows
(images/aider-repomap/aider-repomap), read as the rg parser reads them, after aider's own
notice on stdout when it tags more than 100 files it has no cache for (aider/repomap.py,
`RepoMap.get_ranked_tags`, through `InputOutput.tool_output`): a cold cell on a large corpus."""

from __future__ import annotations

from orchestrator.parsers import Parsed, skip_banners
from orchestrator.parsers.rg import RgParser

# Exactly as aider-chat 0.86.2 prints it (one line; a non-terminal console is 80 columns wide).
BANNERS = ("Initial repo scan can be slow in larger repos, but only happens once.",)


class AiderRepomapParser(RgParser):
    """rg's format after aider's leading banner lines; a banner anywhere else is not a row."""

    name = "aider-repomap"
    banners = BANNERS

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        return super().parse(skip_banners(stdout, self.banners), stderr, kind)


PARSER = AiderRepomapParser()
