"""Code the standard library would compile on every start, compiled at build time (issue 17).

Two costs of a start are compilations that give the same result every time:
* `@dataclass` writes each method it generates (__init__, __repr__, __eq__, __hash__, a frozen
  class's __setattr__/__delattr__) as source text and compiles it with exec(): ~0.1 ms a
  method, ~240 in a one-line analysis, a fifth of its run on Python 3.11;
* `re.compile` parses and compiles each pattern in Python: ~100 patterns, another tenth.
tools/precompile.py records both for the package (the texts its dataclasses generate, the
patterns its modules and a one-line analysis compile, the standard library's among them) and
stores the results in precompiled/*.marshal; `install()` lets dataclasses and re use a stored
result instead of compiling.

Nothing else changes: a result is looked up by exactly what would have been compiled (the
method's text; the pattern and its flags), so a class or pattern changed since is compiled as
before, and a file made by another Python version is not used at all.  Only the command
installs them (cli.main): the library leaves the standard library as it finds it.
tests/test_precompiled.py checks that the files are current and that every stored result is
what compiling gives.
"""
from __future__ import annotations

import builtins
import marshal
import os
import sys

FOLDER = "precompiled"
METHODS = "dataclass_methods.marshal"   # {method text: code object}
REGEXES = "regexes.marshal"             # {(pattern, flags): the arguments of _sre.compile after the pattern}


def header() -> bytes:
    """A file's first line: the Python that made it (bytecode, marshal and sre code are version-specific)."""
    version = ".".join(map(str, sys.version_info[:3]))
    return f"postmortem precompiled: {sys.implementation.cache_tag} {version} marshal {marshal.version}\n".encode()


def compiled_method(text: str):
    """What dataclasses' exec(text, ...) runs: compiled without this module's `from __future__`
    flags, as exec compiles it there."""
    return compile(text, "<string>", "exec", dont_inherit=True)


def compiled_regex(pattern: str | bytes, flags: int) -> tuple:
    """What re's compiler hands _sre.compile for `pattern` (re._compiler.compile, less the call)."""
    from re import _compiler, _parser

    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    indexgroup = [None] * parsed.state.groups
    for name, i in parsed.state.groupdict.items():
        indexgroup[i] = name
    return (int(flags | parsed.state.flags), [int(c) for c in code], parsed.state.groups - 1,
            dict(parsed.state.groupdict), tuple(indexgroup))


def dumps(values: dict) -> bytes:
    """A file's bytes (tools/precompile.py), entries in a stable order."""
    return header() + marshal.dumps(dict(sorted(values.items(), key=repr)))


def stored(name: str) -> dict:
    """One file's entries, or {} when it is missing, damaged or made by another Python."""
    try:   # not through packaged(): pathlib's import compiles patterns, which should come from here
        with open(os.path.join(os.path.dirname(__file__), FOLDER, name), "rb") as f:
            data = f.read()
    except OSError:
        from postmortem.packaged import packaged   # (a zip import)

        try:
            data = packaged("postmortem", FOLDER, name).read_bytes()
        except OSError:
            return {}
    head = header()
    if not data.startswith(head):
        return {}
    try:
        values = marshal.loads(data[len(head):])
    except (ValueError, EOFError, TypeError):
        return {}
    return values if isinstance(values, dict) else {}


def install_methods() -> bool:
    """Let dataclasses run stored code objects from now on in this process; False when there
    is no usable file, or dataclasses already has an `exec` of its own."""
    import dataclasses

    if "exec" in vars(dataclasses):
        return False
    code = stored(METHODS)
    if not code:
        return False

    def run(source, globals=None, locals=None):
        """dataclasses' exec(text, globals, ns), with the stored code of `text` when there is one."""
        found = code.get(source) if type(source) is str else None
        return builtins.exec(source if found is None else found, globals, locals)

    dataclasses.exec = run
    return True


def install_regexes() -> bool:
    """Let re build stored patterns without compiling them from now on in this process; False
    when there is no usable file, or re's compiler was already replaced."""
    import _sre
    from re import _compiler

    original = _compiler.compile
    if getattr(original, "__module__", None) != "re._compiler":
        return False
    made = stored(REGEXES)
    if not made:
        return False

    def compile(pattern, flags=0):
        """re._compiler.compile(pattern, flags), from the stored result when there is one."""
        found = made.get((pattern, flags)) if type(pattern) in (str, bytes) and type(flags) is int else None
        if found is None:
            return original(pattern, flags)
        return _sre.compile(pattern, *found)

    _compiler.compile = compile
    return True
