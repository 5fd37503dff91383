"""Files shipped inside the package (knowledge, grammars, tables, templates).

`packaged("postmortem.knowledge", "causes.toml")` is a pathlib.Path when the package is a
folder on disk, as it is in a checkout and in an installed wheel, and importlib.resources'
Traversable otherwise (a zip import).  importlib.resources is imported only in that last
case: its file reader imports zipfile (and shutil, bz2, lzma), a few milliseconds of every
start (issue 17).

The prepared files (knowledge, parser index, grammar tables) are used only while the
sha256 of their sources holds, checked on every start: `sha256_hex` computes it with
CPython's built-in sha256 module, as hashlib does without OpenSSL, since importing
hashlib loads OpenSSL (~4 ms); the digests are the same.
"""
from __future__ import annotations

import sys
from pathlib import Path


def sha256(data: bytes):
    """hashlib.sha256(data), from CPython's built-in module when there is one (see above)."""
    try:
        from _sha256 import sha256 as built_in  # CPython 3.11 (3.12+: _sha2)
    except ImportError:
        try:
            from _sha2 import sha256 as built_in
        except ImportError:
            from hashlib import sha256 as built_in
    return built_in(data)


def sha256_hex(data: bytes) -> str:
    return sha256(data).hexdigest()


def packaged(package: str, *parts: str):
    """The file or folder `parts` of `package` (a package name, imported or importable)."""
    module = sys.modules.get(package)
    if module is None:
        import importlib

        module = importlib.import_module(package)
    origin = getattr(module, "__file__", None)
    if origin:
        folder = Path(origin).parent
        if folder.is_dir():
            return folder.joinpath(*parts)
    from importlib import resources

    return resources.files(package).joinpath(*parts)
