"""Environment dumps (`env`, `export -p`, `declare -x`, tcsh `setenv`; docs/formats.md,
system): the variables that steer NCCL, PyTorch, CUDA and the launcher.
Facts: `env.NAME`.
"""
from __future__ import annotations

import re

from lark import Tree

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import LineFormat, tree_tokens

# Which environment variables are worth a fact (`env.NAME`): prefixes and exact names.
ENV_PREFIXES = ("NCCL_", "TORCH_", "CUDA_", "PYTORCH_", "OMP_", "NVIDIA_", "UCX_", "MASTER_", "GLOO_")
ENV_NAMES = ("WORLD_SIZE", "LOCAL_RANK", "RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
             "CUDA_VISIBLE_DEVICES")
_ENV_NAME_RX = "|".join([*(re.escape(p) + r"\w*" for p in ENV_PREFIXES), *ENV_NAMES])


def env(parser, line: Line, tree: Tree) -> None:
    tokens = tree_tokens(tree)
    name = next(str(t) for t in tokens if t.type == "ENV_NAME")
    value = next((str(t) for t in tokens if t.type == "ENV_VALUE"), "").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    parser.sink.fact(line, f"env.{name}", value, text=line.text.strip())


LINE_FORMATS = (
    LineFormat("env_line", re.compile(rf"^(?:export |declare -x |setenv )?(?:{_ENV_NAME_RX})=(?!=)"), env),
)
