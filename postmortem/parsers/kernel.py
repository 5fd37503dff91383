"""Parser for kernel logs: dmesg in every style, /dev/kmsg, journal, syslog, Talos (docs/formats.md, Kernel logs).

Each line is read in two steps:

1. the prefix (kernel_prefix.py) gives the clock reading and, where the style prints
   them, facility, level and host; journal records (`journalctl -o json` / `-o export`)
   are read by journal.py;
2. the message (`MESSAGE_KINDS`, first match wins) picks the event kind; Xid, SXid,
   OOM kills, segfaults, traps and hung tasks are checked by grammars/kernel.lark.

Every claimed line yields at least `kernel.line`.  Indented continuation lines (the
second and third line of an NVRM notice) and the lines of a PCIe AER block stay with
the line that opened them.  `ipmitool sel` rows (ipmi_sel.py, the BMC's hardware event
log) are emitted here as `kernel.mce`: they report the same memory errors as the
kernel's machine-check lines.
"""
from __future__ import annotations

import re
import signal

from lark import Transformer, Tree
from lark.exceptions import LarkError

from postmortem import grammar
from postmortem.model import Severity, Stamp
from postmortem.parsers import ipmi_sel, journal
from postmortem.parsers.base import Line, LineParser, emit
from postmortem.parsers.kernel_prefix import PLACEHOLDER_YEAR, split_prefix  # noqa: F401 - part of this module's interface
from postmortem.parsers.keywords import any_word

_SEVERITY_OF_LEVEL = {
    "emerg": Severity.FATAL, "alert": Severity.FATAL, "crit": Severity.FATAL, "err": Severity.ERROR,
    "error": Severity.ERROR, "warn": Severity.WARNING, "warning": Severity.WARNING,
    "notice": Severity.INFO, "info": Severity.INFO, "debug": Severity.DEBUG,
}
# Which lines the kernel parser is offered: one table, from which the prefilter and its cheap
# gate (see LineParser.gate_start) are both built, so they cannot drift apart.  A row is
# (a branch of the prefilter, what a line it matches starts with, a word such a line holds):
# one of the last two, a necessary condition for the branch.
_SIGNS: tuple[tuple[str, str | None, str | None], ...] = (
    (r"^__CURSOR=", r"__CURSOR=", None),                                     # journalctl -o export
    (r"^\{.*\"__REALTIME_TIMESTAMP\"", r"\{", None),                       # journalctl -o json
    (r"^(?:<\d+>)?\[\s*\+?\d+\.\d+(?: <[^>]*>)?\]", r"(?:<\d+>)?\[", None),  # dmesg, -r, -d, -e
    (r"^\[[A-Z][a-z]{2}[\d ]", r"(?:<\d+>)?\[", None),                      # dmesg -H, -T
    (r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+[+-]\d\d:?\d\d \S", r"\d{4}-\d\d-\d\dT", None),  # --time-format iso
    (r"^[a-z0-9]+ *:[a-z]+ *: ", r"[a-z0-9]+ *:[a-z]+ *: ", None),          # dmesg -x
    (r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d\S* )?[\w.-]+ kernel: ", None, " kernel: "),  # syslog, journal
    (r"^\d+,\d+,\d+,[^;]*;", r"\d+,\d+,\d+,", None),                        # /dev/kmsg
    (r"kern: *[a-z]+: \[", None, "kern:"),                                  # Talos
    *((re.escape(word), None, word) for word in ipmi_sel.WORDS),           # ipmitool sel
)
# Messages that are kernel output even when pasted without any prefix: (branch, word).
_BARE_SIGNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"NVRM: ", ("NVRM: ",)),
    (r"nvidia-nvswitch\d+: ", ("nvidia-nvswitch",)),
    (r"(?:Memory cgroup out of memory|Out of memory): Kill", ("out of memory: Kill", "Out of memory: Kill")),
    (r"(?<!\S)\S+\[\d+\]: segfault at ", ("]: segfault at ",)),
    (r"traps: ", ("traps: ",)),
    (r"\{\d+\}\[Hardware Error\]", ("[Hardware Error]",)),
    (r"mce: ", ("mce: ",)),
    (r"EDAC ", ("EDAC ",)),
    (r"INFO: task \S+ blocked for more than ", (" blocked for more than ",)),
    (r"oom-kill:constraint=", ("oom-kill:constraint=",)),
    (r"(?<!\S)\S+ invoked oom-killer: ", (" invoked oom-killer: ",)),
    (r"CMCI storm", ("CMCI storm",)),
    (r"Memory failure: ", ("Memory failure: ",)),
    (r"MCE: Killing ", ("MCE: Killing ",)),
    (r"(?:pcieport|nvidia|mlx5_core) [0-9a-f]{4}:", ("pcieport ", "nvidia ", "mlx5_core ")),
)
_BARE_MESSAGE = re.compile("^(?:" + "|".join(branch for branch, _ in _BARE_SIGNS) + ")")
PREFILTER = re.compile("|".join([*(branch for branch, _, _ in _SIGNS), *(branch for branch, _ in _BARE_SIGNS)]))
GATE_START = re.compile("|".join(dict.fromkeys(start for _, start, _ in _SIGNS if start)))
GATE_WORDS = any_word([*(word for _, _, word in _SIGNS if word), *(w for _, words in _BARE_SIGNS for w in words)])

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
_OOM_CONSTRAINT = re.compile(r"oom-kill:constraint=(?P<constraint>[A-Z_]+)(?P<rest>.*)")
_ANON_RSS = re.compile(r"anon-rss:(\d+)kB")
_FATAL_SIGNAL = re.compile(r"^(?P<comm>\S+)/(?P<pid>\d+): potentially unexpected fatal signal (?P<signo>\d+)")
_MEMORY_FAILURE = re.compile(r"(?:Sending SIGBUS to|Killing) (?P<comm>[^:\s]+):(?P<pid>\d+) due to hardware memory corruption")
_IB_DRIVER = re.compile(r"^(?P<driver>mlx[45]_(?:core|ib)|ib_\w+|ib\w*|rdma_\w+|mlx5_\w+) (?P<device>\S+?):? (?P<rest>.*)$")
_IB_TROUBLE = re.compile(r"error|fail|fatal|timeout|down|unrecoverable|health|syndrome|reset", re.I)
# mlx5_core's command interface (drivers/net/ethernet/mellanox/mlx5/core/cmd.c mlx5_cmd_out_err, older
# mlx5_cmd_check) logs every firmware command the firmware refused: a tool or agent asked for
# something unsupported ("status bad operation/parameter ..."), not a fault of the link or HCA
# (leptonai/gpud#1164; audit 6 M7).  A firmware "internal error" stays a fault.
_IB_CMD_REJECTED = re.compile(r"^mlx5_cmd_(?:out_err|check):\d+:\(pid \d+\): .*\bfailed, status (?!internal error)")
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


def _task(task: str) -> tuple[str, int]:
    comm, _, pid = task.rpartition("[")
    return comm, int(pid.rstrip("]"))


def _library(obj: str | None) -> str | None:
    return obj.split("[", 1)[0] if obj else None


class KernelParser(LineParser):
    name = "kernel"
    order = 20
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
            return self._journal_record(line, journal.json_record(text))
        if self._open and text[:1] in (" ", "\t") and text.strip():
            self._event(line, "kernel.line", Severity.INFO, self._last_stamp, {}, msg=text.strip(), continuation=True)
            return True
        self._open = False
        style, stamp, extras, msg = split_prefix(text)
        if style is None:
            row = ipmi_sel.read(text)
            if row is not None:
                return self._ipmi(line, row)
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
        """One journal entry: the kernel's are read like any kernel line, others only claimed."""
        if not record:
            return bool(record)
        entry = journal.kernel_entry(record)
        if entry is None:
            return True
        msg, stamp, extras = entry
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
        pid = int(pid) if pid and pid.isdecimal() else None
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
        dimm = ipmi_sel.DIMM.search(msg)
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
        if m is None or not _IB_TROUBLE.search(m["rest"]) or _IB_CMD_REJECTED.match(m["rest"]):
            return False
        self._event(line, "kernel.ib", max(base, Severity.WARNING, key=_rank), stamp, extras,
                    driver=m["driver"], device=m["device"], msg=m["rest"])
        return True

    def _ipmi(self, line: Line, row: ipmi_sel.SelRow) -> bool:
        emit(self.sink, line, "kernel.mce", row.severity, stamp=row.stamp, data=row.data)
        return True


_ORDER = {s: i for i, s in enumerate(Severity)}


def _rank(severity: Severity) -> int:
    return _ORDER[severity]


def _aer_severity(text: str) -> Severity:
    if "Fatal" in text and "Non-Fatal" not in text:
        return Severity.FATAL
    return Severity.ERROR if "Uncorrect" in text else Severity.WARNING
