"""Parser for kernel logs: dmesg in every style, /dev/kmsg, journal, syslog, Talos (docs/formats.md, Kernel logs).

Each line is read in two steps:

1. the prefix (`PREFIXES`, tried in order) gives the clock reading and, where the style
   prints them, facility, level and host: raw `[ sec.usec]` (BOOT), `-d` deltas,
   `-e`/`-H` `[May19 19:57]` then `[  +0.000127]` (DELTA), `-T` (WALL_LOCAL),
   `--time-format iso` (WALL), `-x` facility prefixes, `-r` `<6>`, kmsg records,
   syslog/journal `Mon DD HH:MM:SS host kernel:` (year unknown), journal short-iso,
   Talos `kern: warning: [iso]:`;
2. the message (`MESSAGE_KINDS`, first match wins) picks the event kind; Xid, SXid,
   OOM kills, segfaults, traps and hung tasks are checked by grammars/kernel.lark.

Every claimed line yields at least `kernel.line`.  Indented continuation lines (the
second and third line of an NVRM notice) and the lines of a PCIe AER block stay with
the line that opened them.  `ipmitool sel` lines are read here too ("hardware event
log"): they report the same memory errors as the kernel's MCE lines.
"""
from __future__ import annotations

import re
import signal
from datetime import datetime, timezone

from lark import Transformer, Tree
from lark.exceptions import LarkError

from postmortem import grammar
from postmortem.model import ClockKind, Severity, Stamp
from postmortem.parsers.base import Line, LineParser, emit
from postmortem.parsers.keywords import any_word

_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}
_LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")  # syslog priority order
_SEVERITY_OF_LEVEL = {
    "emerg": Severity.FATAL, "alert": Severity.FATAL, "crit": Severity.FATAL, "err": Severity.ERROR,
    "error": Severity.ERROR, "warn": Severity.WARNING, "warning": Severity.WARNING,
    "notice": Severity.INFO, "info": Severity.INFO, "debug": Severity.DEBUG,
}
_FACILITIES = ("kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron",
               "authpriv", "ftp")
PLACEHOLDER_YEAR = 1900  # for formats without a year; Feb 29 uses 1904 (1900 was no leap year)

# ---------------------------------------------------------------------------------
# 1. prefixes: (style, regex).  Groups: sec/delta/pri/mon/day/hms/year/iso/host/fac/lvl.
# ---------------------------------------------------------------------------------
_FACILITY_PREFIX = re.compile(r"(?P<fac>[a-z0-9]+)\s*:(?P<lvl>[a-z]+)\s*: ")  # dmesg -x, before the time
PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # dmesg, dmesg -r (<pri>), dmesg -d (<delta>), optional CONFIG_PRINTK_CALLER [T123]
    ("raw", re.compile(r"(?:<(?P<pri>\d+)>)?\[\s*(?P<sec>\d+\.\d+)(?: <\s*(?P<delta>\d+\.\d+)>)?\]"
                       r" ?(?:\[\s*[TC]\d+\] )?")),
    ("delta", re.compile(r"\[\s*\+(?P<delta>\d+\.\d+)\] ?")),                       # dmesg -e / -H
    ("reltime", re.compile(r"\[(?P<mon>[A-Z][a-z]{2})(?P<day>\d{1,2}) (?P<hm>\d\d:\d\d)\] ?")),
    ("ctime", re.compile(r"\[[A-Z][a-z]{2} (?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) "
                         r"(?P<hms>\d\d:\d\d:\d\d) (?P<year>\d{4})\] ?")),           # dmesg -T
    ("iso", re.compile(r"(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+[+-]\d\d:?\d\d) ")),  # --time-format iso
    ("syslog", re.compile(r"(?P<mon>[A-Z][a-z]{2}) {1,2}(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d)"
                          r"(?:\.(?P<frac>\d+))? (?P<host>\S+) kernel: (?:\[\s*(?P<sec>\d+\.\d+)\] )?")),
    ("journal_iso", re.compile(r"(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) "
                               r"(?P<host>\S+) kernel: (?:\[\s*(?P<sec>\d+\.\d+)\] )?")),
    ("kmsg", re.compile(r"(?P<pri>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;")),          # /dev/kmsg record
    ("talos", re.compile(r"(?:(?P<host>[\w.:-]+): )?(?P<fac>kern): *(?P<lvl>[a-z]+): \[(?P<iso>[^\]]+)\]: ")),
    # the CI-timestamp wrapper took a journal short-iso stamp: `host kernel: msg` remains
    ("host_kernel", re.compile(r"(?P<host>[\w.-]+) kernel: (?:\[\s*(?P<sec>\d+\.\d+)\] )?")),
)
# short-monotonic `[ 12.345] host kernel: msg`: after the raw stamp
_MONOTONIC_HOST = re.compile(r"(?P<host>[\w.-]+) kernel: ")

# Messages that are kernel output even when pasted without any prefix.
_BARE_MESSAGE = re.compile(
    r"^(?:NVRM: |nvidia-nvswitch\d+: |(?:Memory cgroup out of memory|Out of memory): Kill|(?<!\S)\S+\[\d+\]: segfault at "
    r"|traps: |\{\d+\}\[Hardware Error\]|mce: |EDAC |INFO: task \S+ blocked for more than "
    r"|oom-kill:constraint=|(?<!\S)\S+ invoked oom-killer: |CMCI storm|Memory failure: |MCE: Killing "
    r"|(?:pcieport|nvidia|mlx5_core) [0-9a-f]{4}:)")
_IPMI_SEL = re.compile(
    r"^\s*[0-9a-fA-F]+ \| (?P<date>[\d/]+) \| (?P<time>[\d:]+(?: [AP]M)?) \| (?P<sensor>[^|]+?) \| "
    r"(?P<event>[^|]+?) \| (?P<state>Asserted|Deasserted)"
    r"|^(?P<text>.*?(?:ECC|[Mm]emory error|[Mm]achine [Cc]heck).*?)(?: @(?P<where>\S+))? - (?P<assert>Assertion|Deassertion)\s*$")

PREFILTER = re.compile(
    r"^__CURSOR=|^\{.*\"__REALTIME_TIMESTAMP\""
    r"|^(?:<\d+>)?\[\s*\+?\d+\.\d+(?: <[^>]*>)?\]"
    r"|^\[[A-Z][a-z]{2}[\d ]"
    r"|^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+[+-]\d\d:?\d\d \S"
    r"|^[a-z0-9]+ *:[a-z]+ *: "
    r"|^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d\S* )?[\w.-]+ kernel: "
    r"|^\d+,\d+,\d+,[^;]*;"
    r"|kern: *[a-z]+: \["
    r"|ECC| \| Asserted|- Assertion"
    r"|" + _BARE_MESSAGE.pattern[1:])

# A necessary condition for PREFILTER, checked first (see LineParser.gate_start).
GATE_START = re.compile(r"__CURSOR=|\{|(?:<\d+>)?\[|\d{4}-\d\d-\d\dT|[a-z0-9]+ *:[a-z]+ *: |\d+,\d+,\d+,|[A-Z][a-z]{2} [ \d]\d |"
                        r"NVRM: |nvidia-nvswitch|\S+\[\d+\]: |traps: |\{\d+\}|mce: |EDAC |INFO: task |oom-kill|"
                        r"\S+ invoked oom-killer|CMCI|Memory |MCE: |Out of memory|pcieport |nvidia |mlx5_core |\s*[0-9a-fA-F]+ \| ")
GATE_WORDS = any_word(["kern:", "ECC", " | Asserted", "- Assertion", " kernel: ", "NVRM: ", "nvidia-nvswitch",
                       "out of memory: Kill", "Out of memory: Kill", "]: segfault at ", "traps: ", "[Hardware Error]",
                       "mce: ", "EDAC ", " blocked for more than ", "oom-kill:constraint=", " invoked oom-killer: ",
                       "CMCI storm", "Memory failure: ", "MCE: Killing ", "pcieport ", "nvidia ", "mlx5_core ",
                       "emory error", "achine heck", "achine Check"])

# ---------------------------------------------------------------------------------
# 2. message kinds
# ---------------------------------------------------------------------------------
_PCI_BDF = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_DEVICE = re.compile(rf"^(?P<driver>[\w-]+) (?P<device>{_PCI_BDF}): (?P<rest>.*)$")
_AER_HEADER = re.compile(
    r"PCIe Bus Error: severity=(?P<severity>[^,]+), type=(?P<type>[^,]+)(?:, \((?P<agent>[^)]*)\))?")
_AER_SUMMARY = re.compile(
    rf"AER: (?:Multiple )?(?P<severity>Corrected|Uncorrected \((?:Non-)?Fatal\)) error (?:message )?"
    rf"received(?::| from) (?:id=)?(?P<source>{_PCI_BDF}|\w+)")
_AER_STATUS = re.compile(r"^\s*device \[(?P<ids>[0-9a-f:]+)\] error status/mask=(?P<status>[0-9a-f]+)/(?P<mask>[0-9a-f]+)")
_AER_BIT = re.compile(r"^\s*\[\s*(?P<bit>\d+)\] (?P<name>\S+)\s*(?P<first>\(First\))?")
_FELL_OFF = re.compile(rf"NVRM: GPU (?P<pci>{_PCI_BDF}): GPU has fallen off the bus")
_NVRM_PCI = re.compile(r"(?:PCI:)?(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)")
_CAUSED_BY = re.compile(r"caused by (?:the )?previous Xid(?: (?P<code>\d+))?", re.I)
_DIMM = re.compile(r"\b(\S*DIMM\S*?)(?=[\s,)]|$)")
_OOM_CONSTRAINT = re.compile(r"oom-kill:constraint=(?P<constraint>[A-Z_]+)(?P<rest>.*)")
_ANON_RSS = re.compile(r"anon-rss:(\d+)kB")
_FATAL_SIGNAL = re.compile(r"^(?P<comm>\S+)/(?P<pid>\d+): potentially unexpected fatal signal (?P<signo>\d+)")
_MEMORY_FAILURE = re.compile(r"(?:Sending SIGBUS to|Killing) (?P<comm>[^:\s]+):(?P<pid>\d+) due to hardware memory corruption")
_IB_DRIVER = re.compile(r"^(?P<driver>mlx[45]_(?:core|ib)|ib_\w+|ib\w*|rdma_\w+|mlx5_\w+) (?P<device>\S+?):? (?P<rest>.*)$")
_IB_TROUBLE = re.compile(r"error|fail|fatal|timeout|down|unrecoverable|health|syndrome|reset", re.I)
_MCE_CORRECTED = re.compile(r"\bCE\b|[Cc]orrected|CMCI|severity: corrected")
_MCE_UNCORRECTED = re.compile(r"\bUE\b|[Uu]ncorrect|[Ff]atal|recoverable|Killing|Memory failure")

# (kind, test) in order: the first whose regex searches true decides the line.
MESSAGE_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("xid", re.compile(r"NVRM: Xid \(")),
    ("sxid", re.compile(r"^nvidia-nvswitch\d+: SXid \(")),
    ("fell_off_bus", _FELL_OFF),
    ("nvlink", re.compile(r"^NVRM: .*NVLink", re.I)),
    ("nvrm", re.compile(r"^NVRM: ")),
    ("aer", re.compile(r"\bAER: |PCIe Bus Error: ")),
    ("mce", re.compile(r"\[Hardware Error\]|^mce: |^EDAC |^CMCI storm|^Memory failure: |^MCE: Killing|Machine check")),
    ("oom_kill", re.compile(r"(?:out of memory|Out of memory): Kill(?:ed)? process|^Killed process \d+")),
    ("oom_constraint", re.compile(r"^oom-kill:constraint=")),
    ("segfault", re.compile(r"^\S+\[\d+\]: segfault at |^traps: ")),
    ("fatal_signal", _FATAL_SIGNAL),
    ("hung_task", re.compile(r"^INFO: task \S+ blocked for more than")),
    ("ib", re.compile(r"^(?:mlx[45]_|ib_|rdma_)")),
)

# trap name (x86 do_trap / do_error_trap) -> signal the task got
_TRAP_SIGNALS = {
    "divide error": "SIGFPE", "general protection fault": "SIGSEGV", "general protection": "SIGSEGV",
    "invalid opcode": "SIGILL", "int3": "SIGTRAP", "bounds": "SIGSEGV", "stack segment": "SIGBUS",
    "alignment check": "SIGBUS", "coprocessor segment overrun": "SIGFPE", "invalid TSS": "SIGSEGV",
    "segment not present": "SIGBUS",
}


class _Fields(Transformer):
    """A grammars/kernel.lark tree -> {"rule": name, TOKEN_TYPE: [values], ...}."""

    def __default__(self, data, children, meta):
        if str(data).startswith("__"):  # lark's own helper rules (`x+`) are inlined by lark itself
            return Tree(data, children, meta)
        fields: dict = {"rule": str(data)}
        for child in children:
            if isinstance(child, dict):
                fields.update({k: v for k, v in child.items() if k != "rule"})
            else:
                fields.setdefault(child.type, []).append(str(child))
        return fields

    def start(self, children):
        return children[0]


_TRANSFORMER = _Fields()


def parse_message(text: str) -> dict | None:
    """Parse a structured kernel message with grammars/kernel.lark; None when it is not one."""
    try:
        return grammar.load("kernel", transformer=_TRANSFORMER).parse(text)
    except LarkError:
        return None
    except Exception:  # noqa: BLE001 - one bad line, never the file
        return None


def _json_record(text: str) -> dict | None:
    import json

    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _micro(value) -> float | None:
    """Journal stamps: microseconds as a decimal string."""
    if isinstance(value, str) and value.isdigit() and len(value) <= 20:
        return int(value) / 1e6
    return None


def _task(task: str) -> tuple[str, int]:
    comm, _, pid = task.rpartition("[")
    return comm, int(pid.rstrip("]"))


def _library(obj: str | None) -> str | None:
    return obj.split("[", 1)[0] if obj else None


def _year(month: int, day: int) -> int:
    return 1904 if (month, day) == (2, 29) else PLACEHOLDER_YEAR


def _iso(text: str) -> datetime | None:
    text = text.replace(",", ".").replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # Python wants at most 6 fraction digits; Talos prints nanoseconds
        digits = re.match(r"\d*", rest).group(0)
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits):]}"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _stamp(style: str, m: re.Match) -> Stamp | None:
    g = m.groupdict()
    if style == "raw":  # with -d the absolute reading wins; the delta goes to data
        return Stamp(ClockKind.BOOT, seconds=float(g["sec"]), resolution_s=1e-6)
    if style == "delta":
        return Stamp(ClockKind.DELTA, seconds=float(g["delta"]), resolution_s=1e-6)
    if style == "kmsg":
        return Stamp(ClockKind.BOOT, seconds=int(g["usec"]) / 1e6, resolution_s=1e-6)
    if style in ("iso", "journal_iso", "talos"):
        when = _iso(g["iso"])
        return Stamp(ClockKind.WALL, wall=when, resolution_s=1e-6 if "." in g["iso"] or "," in g["iso"] else 1.0) \
            if when else None
    if style in ("reltime", "ctime", "syslog"):
        month = _MONTHS.get(g["mon"])
        if month is None:
            return None
        day = int(g["day"])
        year = int(g["year"]) if g.get("year") else _year(month, day)
        hms = g.get("hms") or g["hm"] + ":00"
        try:
            wall = datetime.strptime(f"{year}-{month}-{day} {hms}", "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None
        frac = g.get("frac")
        if frac:
            wall = wall.replace(microsecond=int(frac[:6].ljust(6, "0")))
        resolution = 60.0 if style == "reltime" else (10.0 ** -len(frac) if frac else 1.0)
        return Stamp(ClockKind.WALL_LOCAL, wall=wall, year_known=bool(g.get("year")), resolution_s=resolution)
    if style == "host_kernel" and g.get("sec"):
        return Stamp(ClockKind.BOOT, seconds=float(g["sec"]), resolution_s=1e-6)
    return None


def split_prefix(text: str) -> tuple[str | None, Stamp | None, dict, str]:
    """(style, stamp, extras {facility, level, host, boot_s}, message) for one kernel line."""
    extras: dict = {}
    m = _FACILITY_PREFIX.match(text)
    if m and m["lvl"] in _LEVELS and m["fac"] in _FACILITIES + tuple(f"local{i}" for i in range(8)):
        extras.update(facility=m["fac"], level=m["lvl"])
        text = text[m.end():]
    for style, pattern in PREFIXES:
        m = pattern.match(text)
        if m is None:
            continue
        g = m.groupdict()
        if g.get("pri"):
            pri = int(g["pri"])
            extras.setdefault("level", _LEVELS[pri & 7])
            extras.setdefault("facility", _FACILITIES[pri >> 3] if pri >> 3 < len(_FACILITIES) else str(pri >> 3))
        if g.get("lvl"):
            extras.setdefault("level", g["lvl"])
            extras.setdefault("facility", g.get("fac"))
        if g.get("host"):
            extras["host"] = g["host"]
        if style in ("syslog", "journal_iso") and g.get("sec"):
            extras["boot_s"] = float(g["sec"])  # imklog keeps the printk time inside the message
        if style == "raw" and g.get("delta"):
            extras["delta_s"] = float(g["delta"])
        msg = text[m.end():]
        if style == "raw":
            host = _MONOTONIC_HOST.match(msg)  # journalctl -o short-monotonic
            if host:
                extras["host"] = host["host"]
                msg = msg[host.end():]
        return style, _stamp(style, m), extras, msg
    return None, None, extras, text


class KernelParser(LineParser):
    name = "kernel"
    prefilter = PREFILTER
    gate_start = GATE_START
    gate_words = GATE_WORDS

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        self._open = False           # the last claimed line may have indented continuations
        self._last_stamp: Stamp | None = None
        self._aer_block: dict | None = None  # the open AER block: {"device", "errors", ...}
        self._pending_constraint: dict | None = None  # `oom-kill:constraint=` before its kill line
        self._export: dict | None = None     # the `journalctl -o export` record being read
        self._export_first: Line | None = None

    @property
    def busy(self) -> bool:
        return self._open or self._export is not None

    def feed(self, line: Line) -> bool:
        text = line.text
        if self._export is not None or text.startswith("__CURSOR="):
            return self._export_line(line)
        if text.startswith("{") and '"__REALTIME_TIMESTAMP"' in text:
            return self._journal_record(line, _json_record(text))
        if self._open and text[:1] in (" ", "\t") and text.strip():
            self._event(line, "kernel.line", Severity.INFO, self._last_stamp, {}, msg=text.strip(), continuation=True)
            return True
        self._open = False
        style, stamp, extras, msg = split_prefix(text)
        if style is None:
            if _IPMI_SEL.search(text):
                return self._ipmi(line)
            if not _BARE_MESSAGE.match(text):
                return False
        self._last_stamp = stamp
        self._message(line, msg, stamp, extras)
        self._open = True
        return True

    def finish(self) -> None:
        if self._export:
            self._journal_record(self._export_first, self._export)  # type: ignore[arg-type]
        self._export = None
        self._open = False
        self._aer_block = None

    # -- the journal's own formats: `journalctl -o json` and `-o export` ------------------------

    def _export_line(self, line: Line) -> bool:
        """`-o export`: KEY=value lines, one record per blank-line-separated block."""
        text = line.raw.rstrip("\r\n") if line.raw else line.text
        if not text.strip():
            record, self._export = self._export, None
            if record:
                self._journal_record(self._export_first, record)  # type: ignore[arg-type]
            return True
        if self._export is None:
            self._export, self._export_first = {}, line
        key, eq, value = text.partition("=")
        if eq and len(self._export) < 200:
            self._export[key] = value
        return True

    def _journal_record(self, line: Line, record: dict | None) -> bool:
        """One journal entry of the kernel: the printk moment on the wall clock (realtime at
        receipt minus the time it waited, from the two monotonic stamps), the printk stamp
        itself (`boot_s`: ties raw dmesg copies to the wall clock to the microsecond)."""
        if not record or (record.get("_TRANSPORT") != "kernel" and record.get("SYSLOG_IDENTIFIER") != "kernel"):
            return bool(record)
        msg = record.get("MESSAGE")
        if not isinstance(msg, str):
            return True
        ident, pid = record.get("SYSLOG_IDENTIFIER"), record.get("SYSLOG_PID")
        if isinstance(ident, str) and ident != "kernel":  # journald split `comm[pid]: ` off the kernel's line
            msg = f"{ident}[{pid}]: {msg}" if isinstance(pid, str) and pid.isdigit() else f"{ident}: {msg}"
        extras: dict = {}
        if isinstance(record.get("_HOSTNAME"), str):
            extras["host"] = record["_HOSTNAME"]
        prio = record.get("PRIORITY")
        if isinstance(prio, str) and prio.isdigit() and int(prio) < 8:
            extras["level"] = _LEVELS[int(prio)]
        realtime, mono, source = (_micro(record.get(k)) for k in
                                  ("__REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP", "_SOURCE_MONOTONIC_TIMESTAMP"))
        stamp = None
        if realtime is not None:
            waited = mono - source if mono is not None and source is not None and 0 <= mono - source < 1e9 else 0.0
            try:
                wall = datetime.fromtimestamp(realtime - waited, timezone.utc)
                stamp = Stamp(ClockKind.WALL, wall=wall, resolution_s=1e-6)
            except (OverflowError, ValueError, OSError):
                stamp = None
        if source is not None:
            extras["boot_s"] = source
        self._last_stamp = stamp
        self._message(line, msg, stamp, extras)
        return True

    # -- dispatch ------------------------------------------------------------------------

    def _message(self, line: Line, msg: str, stamp: Stamp | None, extras: dict) -> None:
        base = _SEVERITY_OF_LEVEL.get(extras.get("level", ""), Severity.INFO)
        if self._aer_member(line, msg, stamp, extras, base):
            return
        for kind, test in MESSAGE_KINDS:
            if test.search(msg):
                handler = getattr(self, "_" + kind)
                if handler(line, msg, stamp, extras, base):
                    return
                break
        self._event(line, "kernel.line", base, stamp, extras, msg=msg)

    def _event(self, line: Line, kind: str, importance: Severity, stamp: Stamp | None, extras: dict, **data):
        """An event; `_pid` becomes Event.pid, extras give host, facility, level."""
        pid = data.pop("_pid", None)
        fields = {k: v for k, v in extras.items() if k != "host"}
        return emit(self.sink, line, kind, importance, stamp=stamp, host=extras.get("host"), pid=pid,
                    data={**fields, **data})

    # -- NVIDIA ---------------------------------------------------------------------------

    def _xid(self, line, msg, stamp, extras, base) -> bool:
        fields = parse_message(msg[msg.index("NVRM: Xid"):])
        if fields is None or fields["rule"] != "xid":
            return False
        code = int(fields["INT"][-1])
        pid = fields.get("XID_PID", [None])[0]
        detail = fields.get("DETAIL", [""])[0]
        caused = _CAUSED_BY.search(detail)
        gi = fields.get("INT")[:-1]  # GPU-I / GPU-CI numbers precede the code
        pid = int(pid) if pid and pid.isdigit() else None
        self._event(line, "kernel.xid", Severity.ERROR, stamp, extras, code=code, pci=fields["PCI"][0],
                    _pid=pid or None, pid=pid,
                    comm=None if not fields.get("XID_NAME") or fields["XID_NAME"][0] == "<unknown>"
                    else fields["XID_NAME"][0],
                    detail=detail, caused_by=(int(caused["code"]) if caused and caused["code"] else
                                              (True if caused else None)),
                    gpu_instance=int(gi[0]) if gi else None)
        return True

    def _sxid(self, line, msg, stamp, extras, base) -> bool:
        fields = parse_message(msg)
        if fields is None or fields["rule"] != "sxid":
            return False
        detail = fields.get("DETAIL", [""])[0]
        sev = re.search(r"Severity (\d+)", detail)
        self._event(line, "kernel.sxid", Severity.ERROR, stamp, extras, code=int(fields["INT"][0]),
                    device=fields["SWITCH"][0], pci=fields["PCI"][0],
                    severity=int(sev.group(1)) if sev else None, detail=detail)
        return True

    def _fell_off_bus(self, line, msg, stamp, extras, base) -> bool:
        self._event(line, "kernel.fell_off_bus", Severity.FATAL, stamp, extras,
                    pci=_FELL_OFF.search(msg)["pci"], msg=msg)
        return True

    def _nvrm(self, line, msg, stamp, extras, base, kind="kernel.nvrm") -> bool:
        pci = _NVRM_PCI.search(msg)
        self._event(line, kind, base, stamp, extras, pci=pci["pci"] if pci else None, msg=msg)
        return True

    def _nvlink(self, line, msg, stamp, extras, base) -> bool:
        return self._nvrm(line, msg, stamp, extras, max(base, Severity.WARNING, key=_rank), "kernel.nvlink")

    # -- PCIe AER -------------------------------------------------------------------------

    def _aer(self, line, msg, stamp, extras, base) -> bool:
        dev = _DEVICE.match(msg)
        device = dev["device"] if dev else None
        header = _AER_HEADER.search(msg)
        if header:
            errors: list[str] = []
            sev = header["severity"].strip()
            self._event(line, "kernel.aer", _aer_severity(sev), stamp, extras, device=device, severity=sev,
                        type=header["type"].strip(), agent=header["agent"], errors=errors, msg=msg)
            self._aer_block = {"device": device, "errors": errors}
            return True
        summary = _AER_SUMMARY.search(msg)
        sev = summary["severity"] if summary else None
        self._event(line, "kernel.aer", _aer_severity(sev) if sev else max(base, Severity.WARNING, key=_rank),
                    stamp, extras, device=device, severity=sev,
                    source=summary["source"] if summary else None, msg=msg)
        return True

    def _aer_member(self, line, msg, stamp, extras, base) -> bool:
        """`device [8086:6f08] error status/mask=...` and `[14] CmpltTO (First)` of the open block."""
        if self._aer_block is None:
            return False
        dev = _DEVICE.match(msg)
        rest = dev["rest"] if dev else msg
        if dev and dev["device"] != self._aer_block["device"]:
            self._aer_block = None
            return False
        status = _AER_STATUS.match(rest)
        bit = None if status else _AER_BIT.match(rest)
        if not status and not bit:
            self._aer_block = None
            return False
        if bit:
            self._aer_block["errors"].append(bit["name"])
            self._event(line, "kernel.line", base, stamp, extras, msg=msg, aer_bit=int(bit["bit"]),
                        aer_error=bit["name"], first=bool(bit["first"]))
        else:
            self._event(line, "kernel.line", base, stamp, extras, msg=msg, aer_status=status["status"],
                        aer_mask=status["mask"], ids=status["ids"])
        return True

    # -- machine checks, memory ---------------------------------------------------------------

    def _mce(self, line, msg, stamp, extras, base) -> bool:
        source = "edac" if msg.startswith("EDAC") else "apei" if msg.startswith("{") else "mce"
        corrected = False if _MCE_UNCORRECTED.search(msg) else True if _MCE_CORRECTED.search(msg) else None
        dimm = _DIMM.search(msg)
        failure = _MEMORY_FAILURE.search(msg)
        severity = Severity.ERROR if corrected is False else Severity.WARNING
        self._event(line, "kernel.mce", severity, stamp, extras, source=source, corrected=corrected,
                    dimm=dimm.group(1) if dimm else None, msg=msg,
                    comm=failure["comm"] if failure else None, _pid=int(failure["pid"]) if failure else None)
        return True

    def _oom_constraint(self, line, msg, stamp, extras, base) -> bool:
        m = _OOM_CONSTRAINT.match(msg)
        if m is None:   # the gate saw the prefix but not a constraint the kernel prints
            return False
        fields = dict(kv.split("=", 1) for kv in m["rest"].strip(",").split(",") if "=" in kv)
        self._pending_constraint = {"constraint": m["constraint"], "task_memcg": fields.get("task_memcg"),
                                "pid": fields.get("pid")}
        self._event(line, "kernel.line", base, stamp, extras, msg=msg, constraint=m["constraint"],
                    oom_memcg=fields.get("oom_memcg"), task=fields.get("task"))
        return True

    def _oom_kill(self, line, msg, stamp, extras, base) -> bool:
        start = msg.find("Memory cgroup out of memory")
        start = msg.find("Out of memory") if start < 0 else start
        fields = parse_message(msg[max(start, 0):])
        if fields is None or fields["rule"] != "oom_kill":
            return False
        pid = int(fields["INT"][0])
        detail = fields.get("DETAIL", [""])[0]
        rss = _ANON_RSS.search(detail)
        scope = fields.get("OOM_SCOPE", [None])[0]
        pending = self._pending_constraint
        constraint = pending if pending and pending["pid"] == str(pid) else None
        self._event(line, "kernel.oom_kill", Severity.ERROR, stamp, extras, _pid=pid, comm=fields["COMM"][0].strip(),
                    anon_rss_kb=int(rss.group(1)) if rss else None,
                    memcg=scope == "Memory cgroup out of memory" or bool(
                        constraint and constraint["constraint"] == "CONSTRAINT_MEMCG"),
                    constraint=constraint["constraint"] if constraint else None, scope=scope, detail=detail)
        return True

    # -- signals, hangs ---------------------------------------------------------------------------

    def _segfault(self, line, msg, stamp, extras, base) -> bool:
        fields = parse_message(msg)
        if fields is None:
            return False
        comm, pid = _task(fields["TASK"][0])
        obj = fields.get("OBJECT", [None])[0]
        hexes = fields["HEXNUM"]
        if fields["rule"] == "segfault":
            addr, ip, sp, err = hexes
            sig = "SIGSEGV"
        else:
            ip, sp, err = hexes
            addr = None
            trap = " ".join(fields["TRAP_WORD"]).removeprefix("trap ")
            sig = _TRAP_SIGNALS.get(trap, trap)
        self._event(line, "kernel.segfault", Severity.ERROR, stamp, extras, comm=comm, _pid=pid, signal=sig,
                    ip=ip, addr=addr, sp=sp, error=err, library=_library(obj), mapping=obj,
                    detail=fields.get("DETAIL", [None])[0])
        return True

    def _fatal_signal(self, line, msg, stamp, extras, base) -> bool:
        m = _FATAL_SIGNAL.search(msg)
        signo = int(m["signo"])
        try:
            name = signal.Signals(signo).name
        except ValueError:
            name = str(signo)
        self._event(line, "kernel.segfault", Severity.ERROR, stamp, extras, comm=m["comm"], _pid=int(m["pid"]),
                    signal=name, signo=signo)
        return True

    def _hung_task(self, line, msg, stamp, extras, base) -> bool:
        fields = parse_message(msg)
        if fields is None or fields["rule"] != "hung_task":
            return False
        comm, _, pid = fields["TASK_PID"][0].rpartition(":")
        self._event(line, "kernel.hung_task", Severity.WARNING, stamp, extras, comm=comm, _pid=int(pid),
                    seconds=int(fields["INT"][0]))
        return True

    def _ib(self, line, msg, stamp, extras, base) -> bool:
        m = _IB_DRIVER.match(msg)
        if m is None or not _IB_TROUBLE.search(m["rest"]):
            return False
        self._event(line, "kernel.ib", max(base, Severity.WARNING, key=_rank), stamp, extras,
                    driver=m["driver"], device=m["device"], msg=m["rest"])
        return True

    # -- ipmitool sel ------------------------------------------------------------------------------

    def _ipmi(self, line: Line) -> bool:
        """`ipmitool sel elist` rows and BMC event texts (`... @P2-DIMMF1 - Assertion`)."""
        m = _IPMI_SEL.search(line.text)
        event = (m["event"] or m["text"]).strip()
        where = m["where"] or (m["sensor"].strip() if m["sensor"] else None)
        asserted = (m["state"] or m["assert"]) in ("Asserted", "Assertion")
        corrected = False if re.search(r"[Uu]ncorrect", event) else True if re.search(r"[Cc]orrect", event) else None
        in_text = _DIMM.search(event)
        dimm = where if where and "DIMM" in where.upper() else (in_text.group(1) if in_text else None)
        stamp = None
        if m["date"]:
            try:
                stamp = Stamp(ClockKind.WALL_LOCAL, wall=datetime.strptime(f"{m['date']} {m['time']}", "%m/%d/%Y %H:%M:%S"))
            except ValueError:
                stamp = None
        emit(self.sink, line, "kernel.mce", Severity.ERROR if corrected is False else Severity.WARNING, stamp=stamp,
             data={"source": "ipmi", "corrected": corrected, "dimm": dimm, "sensor": where, "asserted": asserted,
                   "msg": event})
        return True


_ORDER = {s: i for i, s in enumerate(Severity)}


def _rank(severity: Severity) -> int:
    return _ORDER[severity]


def _aer_severity(text: str) -> Severity:
    if "Fatal" in text and "Non-Fatal" not in text:
        return Severity.FATAL
    return Severity.ERROR if "Uncorrect" in text else Severity.WARNING
