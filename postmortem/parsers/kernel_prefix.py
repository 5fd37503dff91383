"""The prefix of a kernel log line: which clock it printed and what else it says.

Reads the part before the message in every style the kernel's messages reach a bundle
(docs/formats.md, Kernel logs): raw `[ sec.usec]` (BOOT), `-d` deltas, `-e`/`-H`
`[May19 19:57]` then `[  +0.000127]` (DELTA), `-T` (WALL_LOCAL), `--time-format iso`
(WALL), `-x` facility prefixes, `-r` `<6>`, /dev/kmsg records, syslog/journal
`Mon DD HH:MM:SS host kernel:` (year unknown), journal short-iso and short-monotonic,
Talos `kern: warning: [iso]:`.  `split_prefix` is used by the kernel parser and by
job.py (which matches copies of one kernel line across files).
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

from postmortem.model import ClockKind, Stamp

_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}
LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")  # syslog priority order
_FACILITIES = ("kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron",
               "authpriv", "ftp")
PLACEHOLDER_YEAR = 1900  # for formats without a year; Feb 29 uses 1904 (1900 was no leap year)

# Prefixes: (style, regex).  Groups: sec/delta/pri/mon/day/hms/year/iso/host/fac/lvl.
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
    if m and m["lvl"] in LEVELS and m["fac"] in _FACILITIES + tuple(f"local{i}" for i in range(8)):
        extras.update(facility=m["fac"], level=m["lvl"])
        text = text[m.end():]
    for style, pattern in PREFIXES:
        m = pattern.match(text)
        if m is None:
            continue
        g = m.groupdict()
        if g.get("pri"):
            pri = int(g["pri"])
            extras.setdefault("level", LEVELS[pri & 7])
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
