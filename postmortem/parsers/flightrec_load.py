"""The bytes of a Flight Recorder dump, read without running anything (see flightrec.py).

Sniffing (pickle protocol 2+, or a JSON object with Flight Recorder's keys) and loading.
A pickle is never given to `pickle.load`: it is read by an Unpickler whose `find_class`
and `persistent_load` always refuse, so the only objects it can build are dicts, lists,
tuples, sets, strings, bytes, numbers, booleans and None -- no import, no call, no code.
Size is capped before reading.
"""
from __future__ import annotations

import functools
import io
import json
from typing import Any

MAX_DUMP_BYTES = 512 << 20     # a 2,000-entry dump with Python frames is a few MB
PICKLE_PROTOCOLS = b"\x02\x03\x04\x05"


class DumpError(ValueError):
    """The file cannot be read as a Flight Recorder dump; the message says why."""


def looks_like_pickle(head: bytes) -> bool:
    """Pickle protocol 2+ (torch writes protocol 2)."""
    return len(head) >= 2 and head[0] == 0x80 and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")


def looks_like_json_dump(head: bytes) -> bool:
    """A JSON object with Flight Recorder's keys in its first bytes (torch sorts the keys)."""
    start = head.lstrip()[:1]
    return start == b"{" and b'"entries"' in head and (
        b'"profiling_name"' in head or b'"pg_config"' in head or b'"collective_seq_id"' in head
        or b'"comm_lib_version"' in head or b'"version"' in head)


# ------------------------------------------------------------------------------ loading

@functools.cache
def _no_objects() -> type:
    """The Unpickler class below, made the first time a pickle is read: importing pickle is
    a cost of every start otherwise (this module also sniffs every file of a bundle)."""
    import pickle

    class _NoObjects(pickle.Unpickler):
        """An Unpickler that can build builtin containers and scalars only."""

        def find_class(self, module: str, name: str) -> Any:
            raise DumpError(f"the pickle asks to import {module}.{name}; a Flight Recorder dump holds only "
                            "dicts, lists, strings and numbers, so it was refused and nothing in it was run")

        def persistent_load(self, pid: Any) -> Any:
            raise DumpError("the pickle refers to a persistent object; refused, nothing in it was run")

    return _NoObjects


def load(data: bytes) -> dict:
    """The dump as plain Python data, or DumpError.  Never runs code from the file."""
    if len(data) > MAX_DUMP_BYTES:
        raise DumpError(f"{len(data)} bytes is over the {MAX_DUMP_BYTES >> 20} MiB cap for a dump; not read")
    if not data.strip():
        raise DumpError("empty file")
    if looks_like_pickle(data[:2]):
        import pickle

        try:
            # a buffered stream: the C unpickler prefetches through peek() instead of one read() per opcode
            obj = _no_objects()(io.BufferedReader(io.BytesIO(data), buffer_size=1 << 20)).load()
        except DumpError:
            raise
        except (pickle.UnpicklingError, EOFError) as exc:
            raise DumpError(f"truncated or damaged pickle: {exc}") from None
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, MemoryError, OverflowError,
                RecursionError, UnicodeDecodeError) as exc:
            raise DumpError(f"damaged pickle: {type(exc).__name__}: {exc}") from None
    elif data.lstrip()[:1] == b"{":
        try:
            obj = json.loads(data)
        except RecursionError:
            raise DumpError("JSON nested too deeply for a Flight Recorder dump") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise DumpError(f"truncated or damaged JSON: {exc}") from None
    else:
        raise DumpError("neither a pickle nor a JSON object")
    if not isinstance(obj, dict):
        raise DumpError(f"the top level is a {type(obj).__name__}, not the dict a Flight Recorder dump is")
    if "entries" not in obj and "version" not in obj:
        raise DumpError("a dict without 'entries' or 'version': not a Flight Recorder dump")
    return obj