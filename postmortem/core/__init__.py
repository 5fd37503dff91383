"""Read Linux ELF core files: the fatal signal, where it hit, and every thread's pc.

The core is read in place, from any seekable binary stream (a file, a gzip.GzipFile,
a tar member): the ELF and program headers, the notes, and only the few pages of
memory that a question needs (an auxv string, the ELF header page of each mapped
object, a window of each thread's stack).  Cores can be many GB; nothing reads one
whole.  Layouts: the kernel's fs/binfmt_elf.c and include/uapi/linux/elfcore.h.

pyelftools is imported in this package only, and everything it raises is caught where
it is called (per segment, per note) and turned into a problem string: `read_core`
never raises.  A core cut short is reported `truncated`, with whatever could still be read.

The package, one concern per module:
  tables    signal and si_code names, register layouts, signal-frame layout, limits
  stream    the cached, fenced byte view of a core, its memory, sniffing (is_core)
  notes     PT_NOTE segments decoded into threads, siginfo, process, auxv, mappings
  fault     the fatal signal and its address, from siginfo or a handler's signal frame
  unwind    every thread's frames by frame-pointer walk
  symbols   mappings by address, build-ids, function symbols from object files
  analysis  facts, the signal event and stacks assembled into a CoreResult
  reader    the one pass over a core: read_core
  gdb       the gdb subprocess for `analyze --gdb`
"""
from __future__ import annotations

from postmortem.core.analysis import CoreResult
from postmortem.core.gdb import gdb_backtrace
from postmortem.core.reader import read_core
from postmortem.core.stream import CoreStream, Memory, is_core, open_core
from postmortem.core.tables import describe_size, si_code_name, signal_name

__all__ = ["CoreResult", "CoreStream", "Memory", "describe_size", "gdb_backtrace", "is_core",
           "open_core", "read_core", "si_code_name", "signal_name"]
