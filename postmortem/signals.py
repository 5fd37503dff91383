"""Linux signals, in the three spellings crash artifacts use: numbers (exit codes,
UCX, cores), names (gdb, torchrun tables) and strsignal(3) texts (shells, srun,
faulthandler, DataLoader).  One table, read by every parser and rule."""
from __future__ import annotations

# Linux generic numbering (x86-64 and arm64 agree for all of these).
NAMES: dict[int, str] = {
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
    7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
    13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD",
    18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU",
    23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF",
    28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS",
}
NUMBERS: dict[str, int] = {name: number for number, name in NAMES.items()}

# strsignal(3) texts of glibc, and the hyphenated "Floating-point" of CPython 3.13's faulthandler.
TEXTS: dict[str, str] = {
    "Hangup": "SIGHUP", "Interrupt": "SIGINT", "Quit": "SIGQUIT", "Illegal instruction": "SIGILL",
    "Trace/breakpoint trap": "SIGTRAP", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
    "Floating point exception": "SIGFPE", "Floating-point exception": "SIGFPE", "Killed": "SIGKILL",
    "User defined signal 1": "SIGUSR1", "Segmentation fault": "SIGSEGV", "User defined signal 2": "SIGUSR2",
    "Broken pipe": "SIGPIPE", "Alarm clock": "SIGALRM", "Terminated": "SIGTERM",
    "CPU time limit exceeded": "SIGXCPU", "File size limit exceeded": "SIGXFSZ",
}
_TEXTS_LOWER = {text.lower(): name for text, name in TEXTS.items()}


def name_of(value: object) -> str | None:
    """SIGBUS for 7, "7", "SIGBUS", "BUS", "Bus error" or "bus error"; None when unknown."""
    if isinstance(value, int) and not isinstance(value, bool):
        return NAMES.get(value)
    text = str(value or "").strip()
    if not text:
        return None
    if text.isdecimal():
        return NAMES.get(int(text))
    upper = text.upper()
    if upper in NUMBERS:
        return upper
    if "SIG" + upper in NUMBERS:
        return "SIG" + upper
    return _TEXTS_LOWER.get(text.lower())


def of_exitcode(code: object) -> str | None:
    """A launcher's negative exit code is the signal that killed the child: -7 -> SIGBUS."""
    try:
        n = int(str(code))
    except (TypeError, ValueError):
        return None
    return NAMES.get(-n) if n < 0 else None
