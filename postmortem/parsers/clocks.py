"""Clock state files: which zone the host's local times are in, and where its boot sits on the wall clock.

Read here (each format's clock is listed in docs/formats.md):
* `clock.json` as `postmortem collect` writes it, one instant read three ways:
  `{"realtime": <unix s>, "monotonic": <s>, "boottime": <s>, "tz": "<IANA or null>", "utc_offset_s": <int>}`;
* `manifest.json`'s `clock` block of older collects (`time_epoch_s`, `clock_boottime_s`) and its
  `host` and `pid`;
* `timezone.txt` as collect writes it (`cat /etc/timezone: Europe/Berlin`,
  `readlink /etc/localtime: /usr/share/zoneinfo/Europe/Berlin`, `date +%z: +0100`), a copied
  `/etc/timezone`, `timedatectl`'s `Time zone:` line, and `TZ=` in an environment dump.

Also the one safe way to turn a zone name into a zone (`zone`): IANA names and fixed
offsets only; a name is never opened as a path.  And timestamp arithmetic that never
raises (`add_seconds`, `from_unix`, `plausible`): a hostile stamp becomes "no time", with a note.
"""
from __future__ import annotations

import json
import posixpath
import re
from datetime import datetime, timedelta, timezone, tzinfo

from postmortem.model import Fact
from postmortem.parsers.base import Line, LineParser

UTC = timezone.utc

# Wall times outside these years are not times any bundle can hold (a kernel stamp near
# overflow, a boot time plus a huge offset, an anchor that lands before year 1).
EARLIEST_YEAR, LATEST_YEAR = 1970, 2200

_IANA = re.compile(r"[A-Za-z][A-Za-z0-9_+-]{0,30}(?:/[A-Za-z0-9][A-Za-z0-9_+-]{0,30}){0,3}")
_OFFSET = re.compile(r"(?:UTC|GMT)?([+-])(\d\d):?(\d\d)")


def zone(name: str | None) -> tzinfo | None:
    """An IANA zone name (`Europe/Berlin`, `UTC`) or a fixed offset (`+02:00`, `-0500`);
    None for anything else.  Never reads a path the name spells."""
    if not name:
        return None
    name = name.strip()
    m = _OFFSET.fullmatch(name)
    if m:
        hh, mm = int(m[2]), int(m[3])
        if hh > 23 or mm > 59:
            return None
        sign = 1 if m[1] == "+" else -1
        return timezone(sign * timedelta(hours=hh, minutes=mm))
    if name in ("UTC", "Z", "GMT", "Etc/UTC", "Etc/GMT", "UCT", "Zulu"):
        return UTC
    if not _IANA.fullmatch(name) or ".." in name:
        return None
    try:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            return None
    except ImportError:  # pragma: no cover - Python 3.9+ has zoneinfo
        return None


def plausible(t: datetime | None) -> datetime | None:
    if t is None:
        return None
    try:
        year = t.astimezone(UTC).year if t.tzinfo else t.year
    except (OverflowError, ValueError, OSError):
        return None
    return t if EARLIEST_YEAR <= year <= LATEST_YEAR else None


def add_seconds(t: datetime, seconds: float) -> datetime | None:
    """t + seconds, or None when the sum leaves the plausible years (never raises)."""
    try:
        if seconds != seconds or abs(seconds) > 1e11:  # NaN, or more than 3,000 years
            return None
        return plausible(t + timedelta(seconds=seconds))
    except (OverflowError, ValueError):
        return None


def from_unix(seconds: float, tz: tzinfo = UTC) -> datetime | None:
    try:
        if seconds != seconds:
            return None
        return plausible(datetime.fromtimestamp(float(seconds), tz))
    except (OverflowError, ValueError, OSError, TypeError):
        return None


# -- the clock files ------------------------------------------------------------------------

# (regex, fact name): lines of timezone.txt and its relatives.
ZONE_LINES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^cat /etc/timezone: *(?P<v>\S+)\s*$"), "host.tz"),
    (re.compile(r"^readlink /etc/localtime: *\S*?zoneinfo/(?:posix/|right/)?(?P<v>[A-Za-z][\w/+-]*)\s*$"), "host.tz"),
    (re.compile(r"^\s*Time zone: (?P<v>[A-Za-z][\w/+-]*) \("), "host.tz"),               # timedatectl
    (re.compile(r"^date \+%z: *(?P<v>[+-]\d{4})\s*$"), "host.utc_offset"),
    (re.compile(r"^(?:export )?TZ=[\"']?:?(?P<v>[A-Za-z][\w/+-]*)[\"']?\s*$"), "env.TZ"),
)
_JSON_FILES = ("clock.json", "manifest.json")
_MAX_JSON = 1 << 20


class ClockParser(LineParser):
    name = "clock"
    order = 90
    prefilter = re.compile(r"^(?:cat /etc/timezone: |readlink /etc/localtime: |\s*Time zone: |date \+%z: "
                           r"|(?:export )?TZ=)")

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        base = posixpath.basename(path)
        self._json: list[str] | None = [] if base in _JSON_FILES else None
        self._json_first: Line | None = None
        self._json_size = 0
        self._bare_zone = base == "timezone"  # a copied /etc/timezone holds just the name

    def wants(self, line: Line) -> bool:
        return self._json is not None or self._bare_zone or super().wants(line)

    @property
    def busy(self) -> bool:
        return self._json is not None

    def feed(self, line: Line) -> bool:
        if self._json is not None:
            self._json_first = self._json_first or line
            self._json_size += len(line.raw) + 1
            if self._json_size <= _MAX_JSON:
                self._json.append(line.raw)
            return True
        if self._bare_zone and zone(line.text.strip()) is not None:
            self.sink.fact(line, "host.tz", line.text.strip(), text=line.text.strip())
            return True
        for rx, name in ZONE_LINES:
            m = rx.match(line.text)
            if m and zone(m["v"]) is not None:
                self.sink.fact(line, name, m["v"], text=line.text.strip())
                return True
        return False

    def finish(self) -> None:
        if self._json is None or self._json_first is None:
            return
        try:
            doc = json.loads("\n".join(self._json))
        except (ValueError, RecursionError):
            return
        finally:
            self._json = None
        if not isinstance(doc, dict):
            return
        line = self._json_first
        if posixpath.basename(self.path) == "clock.json":
            self._clock(line, doc)
        else:
            self._manifest(line, doc)

    def _clock(self, line: Line, doc: dict) -> None:
        for key in ("realtime", "monotonic", "boottime"):
            value = _finite_number(doc.get(key))
            if value is not None:
                self.sink.fact(line, f"clock.{key}", value, "s")
        tz = doc.get("tz")
        if isinstance(tz, str) and zone(tz) is not None:
            self.sink.fact(line, "clock.tz", tz)
        offset = _finite_number(doc.get("utc_offset_s"))
        if offset is not None and abs(offset) <= 86400:
            self.sink.fact(line, "clock.utc_offset_s", int(offset), "s")

    def _manifest(self, line: Line, doc: dict) -> None:
        clock = doc.get("clock")
        if isinstance(clock, dict):
            realtime, boottime = _finite_number(clock.get("time_epoch_s")), _finite_number(clock.get("clock_boottime_s"))
            if realtime is not None and boottime is not None:
                self.sink.fact(line, "manifest.realtime", realtime, "s")
                self.sink.fact(line, "manifest.boottime", boottime, "s")
        pid = doc.get("pid")
        if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
            self.sink.fact(line, "job.pid", pid)


def _finite_number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if v == v and abs(v) < 1e12 else None


def bundle_zone(facts: list[Fact] | tuple[Fact, ...]) -> tuple[tzinfo | None, str]:
    """The host's zone from the bundle, best source first: collect's clock.json, the
    system's zone files, TZ in an environment dump, then a bare UTC offset."""
    for name in ("clock.tz", "host.tz", "env.TZ", "host.utc_offset"):
        for f in facts:
            if f.name != name or not f.value:
                continue
            z = zone(str(f.value))
            if z is not None:
                return z, f"{f.value} (from {f.ref.describe()})"
    for f in facts:
        if f.name == "clock.utc_offset_s":
            try:
                return timezone(timedelta(seconds=int(f.value))), f"UTC{int(f.value):+d} s (from {f.ref.describe()})"
            except (TypeError, ValueError, OverflowError):
                continue
    return None, ""
