"""`docker inspect` (HostConfig) or a container's hostconfig.json (docs/formats.md, System
state): the size Docker gave the container's /dev/shm, and whether it shares the host's.
Facts: `docker.shm_size_bytes`, `docker.ipc_mode`.
"""
from __future__ import annotations

import re

from lark import Tree

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import LineFormat, tree_tokens


def docker(parser, line: Line, tree: Tree) -> None:
    """`docker inspect` (HostConfig) or a container's hostconfig.json: the size Docker gave
    the container's /dev/shm, and whether it shares the host's (`IpcMode: host`)."""
    tokens = tree_tokens(tree)
    key = next(str(t) for t in tokens if t.type == "DOCKER_KEY").strip('"')
    value = next(str(t) for t in tokens if t.type == "DOCKER_VALUE").strip('"')
    if key == "ShmSize":
        parser.sink.fact(line, "docker.shm_size_bytes", int(value), "B", text=line.text.strip())
    else:
        parser.sink.fact(line, "docker.ipc_mode", value, text=line.text.strip())


LINE_FORMATS = (
    LineFormat("docker_line", re.compile(r'^\s*"(?:ShmSize|IpcMode)":'), docker),
)
