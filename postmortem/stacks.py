"""One stack interface over every source (satyr's generic layer): crash-thread choice,
frame normalization and signatures' top frames."""
from __future__ import annotations

import re
from typing import Iterable

from postmortem.model import Frame, Stack

# Frames that say nothing about the crash: signal trampolines, abort/raise, interpreter loops.
IRRELEVANT = re.compile(
    r"^(?:__?GI_)?(?:raise|abort|__pthread_kill\w*|pthread_kill|killpg|__restore_rt|__libc_start\w*|"
    r"_start|start_thread|clone3?|__clone\w*|_PyEval_\w+|PyEval_\w+|_PyObject_\w+|PyObject_\w+|"
    r"_PyFunction_\w+|method_vectorcall\w*|cfunction_\w+|__nss_database_lookup|faulthandler\w*|"
    r"c10::Error::Error|c10::detail::torchCheckFail\w*|std::terminate|__cxa_\w+|__gnu_cxx::\w+|"
    r"<signal handler called>|\?\?)$")

_HEX = re.compile(r"0x[0-9a-fA-F]+")
_TEMPLATE = re.compile(r"<[^<>]*>")
_ARGS = re.compile(r"\(.*\)$")


def normalize(frame: Frame) -> str | None:
    """A frame as text fit for a signature, or None when it is irrelevant or unknown."""
    name = frame.function or ""
    if frame.language == "python":
        return f"{name}" if name else None
    name = _ARGS.sub("", name)
    while _TEMPLATE.search(name):
        name = _TEMPLATE.sub("", name)
    name = _HEX.sub("", name).strip()
    if not name or IRRELEVANT.match(name):
        return None
    return name


def crashing(stacks: Iterable[Stack]) -> Stack | None:
    """The ladder: the source's own crash mark, then a single stack."""
    stacks = list(stacks)
    marked = [s for s in stacks if s.crashed]
    if marked:
        return marked[0]
    native = [s for s in stacks if s.origin in ("core", "gdb", "ucx", "c10", "backtrace_symbols", "eu-stack", "lldb")]
    if native:
        return native[0]
    return stacks[0] if stacks else None


def top_frames(stacks: Iterable[Stack], n: int = 3) -> list[str]:
    stack = crashing(stacks)
    if stack is None:
        return []
    out: list[str] = []
    for f in stack.frames:
        name = normalize(f)
        if name and (not out or out[-1] != name):
            out.append(name)
        if len(out) >= n:
            break
    return out
