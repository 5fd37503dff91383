"""The compiled methods of the package's dataclasses, made at build time (issue 17: startup).

On Python 3.11 `@dataclass` writes each method it generates (__init__, __repr__, __eq__,
__hash__, a frozen class's __setattr__ and __delattr__) as source text and compiles it with
exec(): ~0.1 ms a method, ~240 methods in a one-line analysis, a fifth of its whole run.
tools/dataclass_code.py records those texts while importing every module of the package and
stores each one's code object (marshal, for this Python version) in dataclass_code.marshal;
`install()` lets dataclasses run the stored code object of a text instead of compiling it.

Nothing else changes: the lookup is by the exact text dataclasses wrote, so a class changed
since the file was made is compiled as before, a text the file lacks too, and a file made by
another Python version is not used at all.  Only the command installs it (cli.main): the
library leaves the standard library as it finds it.  tests/test_dataclass_code.py checks the
file is current and that every stored code object is what compiling its text gives.
"""
from __future__ import annotations

import builtins
import marshal
import sys

FILE = "dataclass_code.marshal"


def header() -> bytes:
    """The file's first line: which Python's bytecode follows (marshal is version-specific)."""
    version = ".".join(map(str, sys.version_info[:3]))
    return f"postmortem dataclass code: {sys.implementation.cache_tag} {version} marshal {marshal.version}\n".encode()


def compiled(text: str):
    """What exec(text) runs: compiled with no `from __future__` flags of this module, as
    dataclasses' own exec call compiles it."""
    return compile(text, "<string>", "exec", dont_inherit=True)


def dumps(texts) -> bytes:
    """The file's bytes for these method texts (tools/dataclass_code.py)."""
    return header() + marshal.dumps({t: compiled(t) for t in sorted(set(texts))})


def stored() -> dict:
    """{method text: code object} from the packaged file, or {} when it is missing, damaged or
    made by another Python version."""
    from postmortem.packaged import packaged

    try:
        data = packaged("postmortem", FILE).read_bytes()
    except OSError:
        return {}
    head = header()
    if not data.startswith(head):
        return {}
    try:
        code = marshal.loads(data[len(head):])
    except (ValueError, EOFError, TypeError):
        return {}
    return code if isinstance(code, dict) else {}


def install() -> bool:
    """Let dataclasses run stored code objects from now on in this process; False when there
    is no usable file or dataclasses already has an `exec` of its own (installed before)."""
    import dataclasses

    if "exec" in vars(dataclasses):
        return False
    code = stored()
    if not code:
        return False

    def run(source, globals=None, locals=None):
        """dataclasses' exec(text, globals, ns): the stored code of `text` when there is one."""
        found = code.get(source) if type(source) is str else None
        return builtins.exec(source if found is None else found, globals, locals)

    dataclasses.exec = run
    return True
