"""Tables and limits of the core reader: signal and si_code names, register layouts per
architecture, the x86-64 signal frame layout, and every bound that keeps one core's cost
small.  Only constants and the functions that name them live here; nothing reads a core.
"""
from __future__ import annotations

from dataclasses import dataclass

from postmortem import signals


SIGNAL_NAMES = signals.NAMES
SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV = 4, 5, 7, 8, 11

# Signals the kernel raises for a faulting instruction: si_addr is meaningful.
FAULT_SIGNALS = frozenset({SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV})

# si_code <= 0 (and SI_KERNEL) mean the same for every signal (include/uapi/asm-generic/siginfo.h).
GENERIC_SI_CODES = {
    0: "SI_USER", 0x80: "SI_KERNEL", -1: "SI_QUEUE", -2: "SI_TIMER", -3: "SI_MESGQ",
    -4: "SI_ASYNCIO", -5: "SI_SIGIO", -6: "SI_TKILL", -7: "SI_DETHREAD", -60: "SI_ASYNCNL",
}
# Positive si_code values are per signal.
SIGNAL_SI_CODES = {
    SIGILL: {1: "ILL_ILLOPC", 2: "ILL_ILLOPN", 3: "ILL_ILLADR", 4: "ILL_ILLTRP",
             5: "ILL_PRVOPC", 6: "ILL_PRVREG", 7: "ILL_COPROC", 8: "ILL_BADSTK",
             9: "ILL_BADIADDR"},
    SIGTRAP: {1: "TRAP_BRKPT", 2: "TRAP_TRACE", 3: "TRAP_BRANCH", 4: "TRAP_HWBKPT",
              5: "TRAP_UNK", 6: "TRAP_PERF"},
    SIGBUS: {1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR", 4: "BUS_MCEERR_AR",
             5: "BUS_MCEERR_AO"},
    SIGFPE: {1: "FPE_INTDIV", 2: "FPE_INTOVF", 3: "FPE_FLTDIV", 4: "FPE_FLTOVF",
             5: "FPE_FLTUND", 6: "FPE_FLTRES", 7: "FPE_FLTINV", 8: "FPE_FLTSUB",
             14: "FPE_FLTUNK", 15: "FPE_CONDTRAP"},
    SIGSEGV: {1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR",
              5: "SEGV_ACCADI", 6: "SEGV_ADIDERR", 7: "SEGV_ADIPERR", 8: "SEGV_MTEAERR",
              9: "SEGV_MTESERR", 10: "SEGV_CPERR"},
}

AT_NULL, AT_PAGESZ, AT_ENTRY, AT_EXECFN = 0, 6, 9, 31
PF_X = 1
NT_GNU_BUILD_ID = 3


@dataclass(frozen=True, slots=True)
class Arch:
    """Where pr_reg sits in NT_PRSTATUS, and which of its words are pc, sp and fp."""

    name: str
    reg_offset: int
    reg_count: int
    pc: int
    sp: int
    fp: int


ARCHES = {
    # user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ...
    "EM_X86_64": Arch("x86-64", reg_offset=112, reg_count=27, pc=16, sp=19, fp=4),
    # user_pt_regs: x0..x30, sp, pc, pstate (x29 is the frame pointer)
    "EM_AARCH64": Arch("aarch64", reg_offset=112, reg_count=34, pc=32, sp=31, fp=29),
}

# x86-64 `struct rt_sigframe` (arch/x86/include/asm/sigframe.h): pretcode, ucontext
# (flags, link, stack_t[24], sigcontext[256], sigmask[8]), then siginfo.
SIGFRAME_MCONTEXT = 48
SIGCONTEXT = {"rbp": 80, "rsp": 120, "rip": 128, "cs": 144, "err": 152, "trapno": 160, "cr2": 176}
SIGFRAME_SIGINFO = 312          # filled only for handlers installed with SA_SIGINFO
SIGFRAME_SIZE = SIGFRAME_SIGINFO + 128
USER_CS_64 = 0x33
UC_FLAGS_KNOWN = 0xF            # UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS | 8
TRAP_PAGE_FAULT = 14
PF_PROTECTION = 1               # page-fault error code bit: the page was present
# x86 trap numbers (sigcontext.trapno) that raise each fault signal.
TRAPS_OF_SIGNAL = {
    SIGSEGV: frozenset({12, 13, 14}),     # stack segment, general protection, page fault
    SIGBUS: frozenset({14, 17, 18}),      # page fault, alignment check, machine check
    SIGILL: frozenset({6}),               # invalid opcode
    SIGFPE: frozenset({0, 16, 19}),       # divide error, x87, SIMD
    SIGTRAP: frozenset({1, 3}),           # debug, breakpoint
}

# Bounds that keep one core's cost small whatever it holds.
CHUNK_SIZE = 64 << 10           # stream reads are cached in chunks of this size ...
CACHED_CHUNKS = 256             # ... at most this many (16 MiB)
MAX_READ = 256 << 20            # no single read larger than this
MAX_NOTE_SEGMENT = 256 << 20    # a PT_NOTE larger than this is garbage
SIGFRAME_SCAN = 256 << 10       # how far above the crashing sp to look for a signal frame
MAX_FRAMES = 64                 # frame-pointer walk depth
MAX_FRAME_STEP = 1 << 20        # a caller's frame further away than this is not believed
MAX_SYMBOL_FILES = 16           # objects looked up for symbols, per core
MAX_SYMTAB_BYTES = 64 << 20     # symbol or string tables larger than this are skipped
MAX_PROBLEMS = 50
# A process has at most vm.max_map_count mappings (65530 by default), one PT_LOAD each.
MAX_PROGRAM_HEADERS = 1 << 17
MAX_NOTES = 1 << 17             # notes decoded per core (a few per thread)
MAX_NOTE_BYTES = 64 << 20       # note bytes read per core, all PT_NOTE segments together
MAX_MAPPINGS = 1 << 17          # NT_FILE entries kept
MAX_THREAD_STACKS = 1024        # threads unwound per core (all are counted)
MAX_BUILD_ID_OBJECTS = 1024     # mapped objects whose header page is read for a build-id

# --------------------------------------------------------------------------- naming


def signal_name(signo: int) -> str:
    if signo in SIGNAL_NAMES:
        return SIGNAL_NAMES[signo]
    if 34 <= signo <= 64:
        return f"SIGRTMIN+{signo - 34}"
    return f"signal {signo}"


def si_code_name(signo: int, code: int | None) -> str | None:
    if code is None:
        return None
    if code <= 0 or code == 0x80:
        return GENERIC_SI_CODES.get(code, f"si_code {code}")
    return SIGNAL_SI_CODES.get(signo, {}).get(code, f"si_code {code}")


def describe_size(n: int | None) -> str:
    """64.0 MiB, 12 bytes ..."""
    if n is None:
        return "?"
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"
    raise AssertionError("unreachable")

