"""Generate postmortem/knowledge/catalogs/python_exceptions.json: every exception class of
CPython's standard library that is a built-in argument error by inheritance, under the name
a traceback prints for it.

Why: CPython's traceback (Lib/traceback.py TracebackException: `stype = self.exc_type.__qualname__`,
prefixed by `__module__` unless it is "builtins" or "__main__") prints a subclass under its own
name -- `json.decoder.JSONDecodeError`, `UnicodeDecodeError`, `statistics.StatisticsError` --
never its base.  A rule that knows only the base names (ValueError, TypeError ...) misses them.
Which base a class has is the interpreter's own fact (its __mro__), read here, not guessed.

Kept: subclasses of ValueError, TypeError, LookupError, AttributeError and ArithmeticError
(CPython Doc/library/exceptions.rst: the operation or function received an argument or
operand of the wrong type or value, a key or index its mapping or sequence lacks, a division
by zero, a result too large to represent).  Dropped: any class that is also an OSError
(io.UnsupportedOperation is both an OSError and a ValueError: the file's state) or a
RuntimeError, or a Warning.

Also: the C library's error texts, strerror(3) of every errno the platform defines, as
os.strerror returns them (glibc's string/_strerror.c over its errlist).  A library that failed an
OS call and wraps it in its own exception prints the errno's text, not "[Errno N]": PyTorch's
C++ (caffe2 inline_container.cc: "open file failed with strerror: Read-only file system", c10
SocketError, gloo's "Read error ...: Connection reset by peer").  Those texts say an OS call
failed on the system's state (rules/app.py app.exception_every_rank sets such exceptions aside).

Also: every class that is an OSError by inheritance (os_error_classes), under its printed name: the
standard library's (FileNotFoundError, socket.gaierror, urllib.error.URLError, ssl.SSLError ...) and
those of the data and model-hub clients in LIBRARIES that the generating interpreter has installed
(their versions are recorded).  An OSError reports the state of the system or of a remote the call
reached -- a file, a mount, a connection, a service -- which every rank of a job shares; a library
wraps a failed download in one without an errno (huggingface_hub.errors.LocalEntryNotFoundError is
a FileNotFoundError: 'cannot find the requested files in the local cache ... check your connection').
rules/app.py app.exception_every_rank sets such exceptions aside.

Re-run with the interpreter whose library is to be read (the version is recorded):
    python3.11 tools/catalogs/gen_python_exceptions.py > postmortem/knowledge/catalogs/python_exceptions.json
"""
from __future__ import annotations

import importlib
import inspect
import errno
import json
import os
import platform
import sys
import warnings

BASES = (ValueError, TypeError, LookupError, AttributeError, ArithmeticError)
NOT = (OSError, RuntimeError, Warning)
# Modules importing which opens a window, a browser or prints (or which only exist on another OS)
SKIP = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3", "pydoc_data",
        "msvcrt", "winreg", "winsound", "_winapi", "nt", "ensurepip", "venv", "__main__"}


def printed_name(cls: type) -> str:
    """The name traceback.format_exception_only prints for an exception of this class."""
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__", None) else f"{module}.{cls.__qualname__}"


def base_of(cls: type) -> str:
    return next(b.__name__ for b in BASES if issubclass(cls, b))


def classes() -> dict[str, str]:
    found: dict[str, str] = {}
    names = sorted(n for n in sys.stdlib_module_names if n not in SKIP and not n.startswith("_"))
    modules = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ["builtins", *names]:
            try:
                modules.append(importlib.import_module(name))
            except Exception:   # noqa: BLE001 -- a module this platform lacks (e.g. a Windows-only one)
                continue
    seen: set[type] = set()
    for module in modules:
        for _, obj in inspect.getmembers(module, inspect.isclass):
            todo = [obj]
            while todo:   # the classes a module defines and their subclasses elsewhere in the library
                cls = todo.pop()
                if cls in seen or not issubclass(cls, BaseException):
                    continue
                seen.add(cls)
                todo.extend(cls.__subclasses__())
                if issubclass(cls, BASES) and not issubclass(cls, NOT) and cls not in BASES:
                    name = printed_name(cls)
                    top = name.split(".")[0]
                    if "." in name and (top.startswith("_") or top not in sys.stdlib_module_names):
                        continue   # a third-party package's class (pip's, setuptools' vendored ones)
                    if "<locals>" in name:
                        continue
                    found[name] = base_of(cls)
    return dict(sorted(found.items()))


# Exception modules of clients that fetch data, models and files over the network or from shared
# storage; only those importable in the generating interpreter are read.
LIBRARIES = ("huggingface_hub.errors", "fsspec.exceptions", "requests.exceptions", "datasets.exceptions",
             "botocore.exceptions", "s3fs.errors", "aiohttp.client_exceptions")

# Standard-library submodules an import of their package does not load, whose exceptions are OSErrors
# (urllib.request raises urllib.error.URLError for a failed connection, HTTPError for a server's answer).
STDLIB_SUBMODULES = ("urllib.error",)


def os_error_classes() -> tuple[dict[str, str], dict[str, str]]:
    """(printed name -> the builtin OSError subclass it derives from, package -> version): every
    OSError subclass of the standard library and of the LIBRARIES installed."""
    found: dict[str, str] = {}
    versions: dict[str, str] = {}
    modules = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ["builtins", *sorted(n for n in sys.stdlib_module_names if n not in SKIP and not n.startswith("_")),
                     *STDLIB_SUBMODULES]:
            try:
                modules.append(importlib.import_module(name))
            except Exception:   # noqa: BLE001 -- a module this platform lacks
                continue
        for name in LIBRARIES:
            try:
                modules.append(importlib.import_module(name))
            except Exception:   # noqa: BLE001 -- not installed here
                continue
            top = name.split(".")[0]
            versions[top] = str(getattr(importlib.import_module(top), "__version__", "?"))
    for module in modules:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, OSError) or "<locals>" in cls.__qualname__:
                continue
            name = printed_name(cls)
            top = name.split(".")[0]
            if "." in name and top not in sys.stdlib_module_names and top not in versions:
                continue   # a class another package defines and this module only imports
            if "." in name and top.startswith("_"):
                continue
            found[name] = next(b.__name__ for b in cls.__mro__ if b.__module__ == "builtins")
    return dict(sorted(found.items())), dict(sorted(versions.items()))


def strerror_texts() -> dict[str, str]:
    """errno name -> the C library's text for it (os.strerror), every errno the platform names."""
    return {name: os.strerror(num) for num, name in sorted(errno.errorcode.items())
            if not os.strerror(num).startswith("Unknown error")}


def main() -> None:
    os_errors, libraries = os_error_classes()
    json.dump({
        "catalog": "python_exceptions",
        "upstream": "CPython standard library (the running interpreter's classes and their __mro__)",
        "version": platform.python_version(),
        "generator": "tools/catalogs/gen_python_exceptions.py",
        "bases": [b.__name__ for b in BASES],
        "excluded_bases": [b.__name__ for b in NOT],
        "classes": classes(),
        "libc": platform.libc_ver()[0] + " " + platform.libc_ver()[1],
        "strerror": strerror_texts(),
        "os_error_classes": os_errors,
        "os_error_libraries": libraries,
    }, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
