"""The fatal signal as best known, and where it hit.

From NT_SIGINFO when the kernel wrote a fault address there; otherwise, when a signal
handler (faulthandler, torch, UCX) re-raised the fatal signal with tkill and the note says
SI_TKILL with no address, from the kernel's x86-64 rt_sigframe left on the stack the
handler ran on (`struct rt_sigframe`, arch/x86/include/asm/sigframe.h).
`Fault.how` tells which way the fault address was found.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from postmortem.core.notes import Notes, SigInfo, Thread
from postmortem.core.stream import Memory
from postmortem.core.tables import (
    PF_PROTECTION, SIGBUS, SIGCONTEXT, SIGFPE, SIGFRAME_MCONTEXT, SIGFRAME_SCAN, SIGFRAME_SIGINFO,
    SIGFRAME_SIZE, SIGILL, SIGSEGV, TRAP_PAGE_FAULT, TRAPS_OF_SIGNAL, UC_FLAGS_KNOWN, USER_CS_64, Arch,
)


@dataclass(frozen=True, slots=True)
class Fault:
    """The fatal signal as best known: from NT_SIGINFO, or from a handler's signal frame."""

    signo: int
    code: int | None
    addr: int | None
    how: str                # "siginfo" | "sigframe" | "none"
    ref_offset: int         # file offset of the evidence (note or signal frame)
    reraised_code: int | None = None     # the SI_TKILL/SI_USER code of the re-raise
    frame_addr: int | None = None        # the signal frame (sigframe only)
    pc: int | None = None                # registers at the fault (sigframe only)
    sp: int | None = None
    fp: int | None = None
    trapno: int | None = None            # x86 trap and page-fault error code (sigframe only)
    err: int | None = None
    code_inferred: bool = False          # si_code worked out from trapno/err, not read


def crashing_thread(notes: Notes) -> Thread | None:
    # The kernel writes the thread that took the signal first (binfmt_elf.c).
    return notes.threads[0] if notes.threads else None


def find_fault(notes: Notes, memory: Memory, arch: Arch | None,
               problem: Callable[[str], None]) -> Fault | None:
    info = notes.siginfos[0] if notes.siginfos else None
    thread = crashing_thread(notes)
    if info is None:
        if thread is None or thread.signo <= 0:
            return None
        problem("no NT_SIGINFO: signal number from NT_PRSTATUS only")
        return Fault(thread.signo, None, None, "none", thread.note_offset)
    if info.signo <= 0:   # gcore of a live process: no signal at all
        return None
    if info.addr is not None:
        return Fault(info.signo, info.code, info.addr, "siginfo", info.note_offset)
    recovered = _fault_from_sigframe(info, thread, memory, arch)
    if recovered is not None:
        return recovered
    return Fault(info.signo, info.code, None, "none", info.note_offset)


def _fault_from_sigframe(info: SigInfo, thread: Thread | None, memory: Memory,
                         arch: Arch | None) -> Fault | None:
    """The fault a handler re-raised: the kernel's rt_sigframe above the handler's sp."""
    if thread is None or not thread.regs or arch is None or arch.name != "x86-64":
        return None
    sp = thread.regs[arch.sp]
    window = memory.read_upto(sp, SIGFRAME_SCAN)
    for at in range((8 - sp) % 16, len(window) - SIGFRAME_SIZE + 1, 16):
        fault = _sigframe_at(window, at, sp + at, info, memory)
        if fault is not None:
            return fault
    return None


def _sigframe_at(window: bytes, at: int, addr: int, info: SigInfo, memory: Memory) -> Fault | None:
    """A Fault if a believable x86-64 rt_sigframe for `info.signo` starts at window[at]."""
    ctx = {name: struct.unpack_from("<Q", window, at + SIGFRAME_MCONTEXT + off)[0]
           for name, off in SIGCONTEXT.items()}
    pretcode, uc_flags = struct.unpack_from("<QQ", window, at)
    # The restorer is libc code, user code was running in 64-bit mode at a mapped
    # pc and sp, and the trap fits the signal.
    if (ctx["cs"] & 0xFFFF != USER_CS_64 or uc_flags & ~UC_FLAGS_KNOWN
            or ctx["trapno"] not in TRAPS_OF_SIGNAL.get(info.signo, ())
            or not memory.is_code(pretcode) or not memory.is_mapped(ctx["rip"])
            or not memory.is_mapped(ctx["rsp"])):
        return None
    exact = _frame_siginfo(window, at, info.signo, ctx)
    code, si_addr = exact if exact is not None else fault_from_trap(info.signo, ctx)
    return Fault(info.signo, code, si_addr, "sigframe",
                 ref_offset=memory.file_offset(addr) or info.note_offset,
                 reraised_code=info.code, frame_addr=addr, pc=ctx["rip"],
                 sp=ctx["rsp"], fp=ctx["rbp"], trapno=ctx["trapno"], err=ctx["err"],
                 code_inferred=exact is None)


def _frame_siginfo(window: bytes, at: int, signo: int,
                   ctx: dict[str, int]) -> tuple[int, int] | None:
    """(si_code, si_addr) from the frame's siginfo, if the kernel filled it (SA_SIGINFO)."""
    info_signo, _, code = struct.unpack_from("<iii", window, at + SIGFRAME_SIGINFO)
    si_addr = struct.unpack_from("<Q", window, at + SIGFRAME_SIGINFO + 16)[0]
    if info_signo != signo or code <= 0 or code == 0x80:
        return None
    if ctx["trapno"] == TRAP_PAGE_FAULT and si_addr != ctx["cr2"]:
        return None
    return code, si_addr


def fault_from_trap(signo: int, ctx: dict[str, int]) -> tuple[int | None, int | None]:
    """(si_code, si_addr) as the kernel would have set them, from the saved trap state.

    Used when the handler was installed without SA_SIGINFO (faulthandler): the kernel
    then leaves the frame's siginfo unwritten, but cr2/trapno/err are always saved.
    """
    if ctx["trapno"] == TRAP_PAGE_FAULT:
        if signo == SIGSEGV:
            return (2 if ctx["err"] & PF_PROTECTION else 1), ctx["cr2"]  # SEGV_ACCERR / MAPERR
        if signo == SIGBUS:
            return 2, ctx["cr2"]   # BUS_ADRERR: no backing page (a poisoned one would be MCEERR)
        return None, ctx["cr2"]
    if signo in (SIGILL, SIGFPE):
        return None, ctx["rip"]   # the kernel reports the faulting instruction
    return None, None


