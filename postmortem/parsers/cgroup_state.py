"""The CPU, freezer and pids files of a container's cgroup, as `cat` / `head` print them: whether
the job's tasks could run (frozen, throttled to a CPU quota) and whether its task limit refused
them (pids).  The files and their lines are the kernel's (Documentation/admin-guide/cgroup-v1/
freezer-subsystem.rst, cgroup-v1/pids.rst, scheduler/sched-bwc.rst, cgroup-v2.rst "CPU",
"Freezer", "PID" interface files).

Three shapes of the same files:

* a header naming the file, then its lines: `$ cat /sys/fs/cgroup/freezer/job/freezer.state`
  then `FROZEN` (fixtures/validation23/lab-c/lab5-node1-container-paused-freezer node1_ps.txt),
  `== /sys/fs/cgroup/cpu/<container>/cpu.stat` then `nr_periods 1609` ...
  (fixtures/validation24/lab-a/lab6-node0-cpu-limit-10m-straggler), `==> FILE <==` (head);
* one `FILE: LINE` per line (grep -H, `postmortem collect`'s form for the memory files);
* cpu.stat's own keys without a header (`nr_throttled 1609`): no other file prints them.

Facts:
* `cgroup.cpu_periods`, `cgroup.cpu_throttled_periods` — cpu.stat nr_periods / nr_throttled
  (enforcement periods that elapsed / in which the group ran out of quota);
* `cgroup.cpu_quota_us`, `cgroup.cpu_period_us` — cpu.cfs_quota_us / cpu.cfs_period_us (v1),
  cpu.max `QUOTA PERIOD` (v2); `unlimited` for -1 / `max`;
* `cgroup.frozen` — True for freezer.state FROZEN or FREEZING (v1), cgroup.freeze 1 or
  cgroup.events `frozen 1` (v2); False for THAWED / 0; its text names the group's folder when
  the header or line gave the path (`FROZEN in /sys/fs/cgroup/freezer/job`);
* `cgroup.under_oom` — memory.oom_control `under_oom` (v1): 1 while the group is under OOM and its
  tasks may be stopped (cgroup-v1/memory.rst "OOM Control"); per group like the freezer state;
* `cgroup.pids_max` (`unlimited` for `max`), `cgroup.pids_max_hits` — pids.events `max N`: task
  creations (fork, clone of a thread) the limit refused;
* `cgroup.pids_group` — the group whose pids files these are, as the kernel names it (the path
  under the hierarchy's mount: `/pm5c-job2`, `/system.slice/docker-<id>.scope`), so that its
  "fork rejected by pids controller in <group>" line can be told from another group's.

The same freezer state per task: a `ps` row (`ps -o pid,stat,wchan,...`) whose WCHAN is the
freezer's wait -- `refrigerator` / `__refrigerator` (kernel/freezer.c, cgroup v1 freezer and
system suspend) or `do_freezer_trap` (kernel/signal.c, cgroup v2 cgroup.freeze) -- gives
`cgroup.frozen` True for that pid (node1_ps.txt of the freezer lab bundle holds both shapes).
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line, LineParser

_FILES = r"cpu\.stat|cpu\.max|cpu\.cfs_quota_us|cpu\.cfs_period_us|freezer\.state|cgroup\.freeze|cgroup\.events|pids\.max|pids\.events|memory\.oom_control"
_HEADER = re.compile(r"^(?:\$ ?(?:sudo )?(?:cat|head(?: -n ?\d+)?) +|==>? ?)(?P<path>/\S*?(?P<file>" + _FILES
                     + r"))(?: ?<==| ?==)?\s*(?:#.*)?$")
_ONE_LINE = re.compile(r"^(?P<path>/\S*?(?P<file>" + _FILES + r")):\s*(?P<value>\S.*?)\s*$")
_TOO_LONG = re.compile(r"^(?:[a-z_]+ )?\d{20,}\s*$")
_CPU_STAT_KEY = re.compile(r"^(?P<key>nr_periods|nr_throttled) +(?P<n>\d{1,19})\s*$")
# the pids hierarchy's mount (cgroup v1 /sys/fs/cgroup/pids, v2 /sys/fs/cgroup): the rest is the group
_PIDS_MOUNT = re.compile(r"^/sys/fs/cgroup(?:/pids(?=/|$))?")
_VALUE = re.compile(r"^(?:-?\d{1,19}|max|FROZEN|FREEZING|THAWED|[a-z_]+ -?\d{1,19}|(?:max|\d{1,19}) \d{1,19})\s*$")

# a ps row: a pid first, the freezer's wait as a whole word among the columns before the
# command (no path before it, more columns after it: not a word of the command line)
_PS_FROZEN = re.compile(r"^\s*(?P<pid>\d{1,10})\s[^/]*?\s(?P<wchan>__refrigerator|refrigerator|do_freezer_trap)\s+\S")

PREFILTER = re.compile(r"^(?:\$ ?(?:sudo )?(?:cat|head)\b.*/(?:" + _FILES + r")\b|==>? ?/\S*/(?:" + _FILES + r")\b"
                       r"|/\S*/(?:" + _FILES + r"):|(?:nr_periods|nr_throttled) \d"
                       r"|^\s*\d+\s[^/]*\s(?:__refrigerator|refrigerator|do_freezer_trap)\s+\S)")

# (file, key or None) -> fact
_KEYED = {("cpu.stat", "nr_periods"): "cgroup.cpu_periods", ("cpu.stat", "nr_throttled"): "cgroup.cpu_throttled_periods",
          ("pids.events", "max"): "cgroup.pids_max_hits", ("cgroup.events", "frozen"): "cgroup.frozen",
          # only under_oom of memory.oom_control: its oom_kill count under a transcript's header names
          # no group the way `postmortem collect`'s does (cgroup.py reads those), so it is not a count
          # of the job's group to weigh against host_oom
          ("memory.oom_control", "under_oom"): "cgroup.under_oom"}
_SINGLE = {"cpu.cfs_quota_us": "cgroup.cpu_quota_us", "cpu.cfs_period_us": "cgroup.cpu_period_us",
           "pids.max": "cgroup.pids_max", "cgroup.freeze": "cgroup.frozen", "freezer.state": "cgroup.frozen"}
_FREEZER = {"FROZEN": True, "FREEZING": True, "THAWED": False}


class CgroupStateParser(LineParser):
    name = "cgroup_state"
    order = 125
    prefilter = PREFILTER

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        self._file: str | None = None   # the file a header named, whose lines follow
        self._folder = ""               # that file's folder: the cgroup it belongs to

    @property
    def busy(self) -> bool:
        return self._file is not None

    def feed(self, line: Line) -> bool:
        text = line.text.strip()
        if self._file is not None:
            if _VALUE.match(text):
                self._value(line, self._file, text, self._folder)
                return True
            if _TOO_LONG.search(text):
                self._too_long(line, self._file)
                return True
            self._file = None
        if m := _HEADER.match(text):
            self._file, self._folder = m.group("file"), _group_of(m.group("path"))
            self._group(line, m.group("path"), m.group("file"))
            return True
        if m := _ONE_LINE.match(text):
            self._group(line, m.group("path"), m.group("file"))
            if _VALUE.match(m.group("value")):
                self._value(line, m.group("file"), m.group("value"), _group_of(m.group("path")))
            elif _TOO_LONG.search(m.group("value")):
                self._too_long(line, m.group("file"))
            return True
        if m := _PS_FROZEN.match(line.text):
            self.sink.fact(line, "cgroup.frozen", True, text=f"pid {m.group('pid')} waits in {m.group('wchan')}")
            return True
        if m := _CPU_STAT_KEY.match(text):
            self._value(line, "cpu.stat", text)
            return True
        return False

    def finish(self) -> None:
        self._file = None

    def _too_long(self, line: Line, file: str) -> None:
        """A value longer than any 64-bit counter the kernel prints: not read, and said (audit 8 L7)."""
        self.sink.problems.append(f"{line.ref().describe()}: {file} value with more than 19 digits: not read")

    def _group(self, line: Line, path: str, file: str) -> None:
        if file.startswith("pids.") and path.startswith("/sys/fs/cgroup"):
            group = _PIDS_MOUNT.sub("", path[:-len(file)].rstrip("/")) or "/"
            self.sink.fact(line, "cgroup.pids_group", group, text=group)

    def _value(self, line: Line, file: str, value: str, group: str = "") -> None:
        words = value.split()
        if file == "cpu.max" and len(words) == 2:
            quota, period = words
            self.sink.fact(line, "cgroup.cpu_quota_us", "unlimited" if quota == "max" else int(quota), "us", value)
            self.sink.fact(line, "cgroup.cpu_period_us", int(period), "us", value)
            return
        if len(words) == 2 and (fact := _KEYED.get((file, words[0]))):
            n = int(words[1])
            self.sink.fact(line, fact, bool(n) if fact == "cgroup.frozen" else n, text=_in_group(value, group, fact))
            return
        fact = _SINGLE.get(file)
        if fact is None or len(words) != 1:
            return
        word = words[0]
        if fact == "cgroup.frozen":
            frozen = _FREEZER.get(word, word == "1" if word in ("0", "1") else None)
            if frozen is not None:
                self.sink.fact(line, fact, frozen, text=_in_group(value, group, fact))
        elif word == "max" or (fact == "cgroup.cpu_quota_us" and word == "-1"):
            self.sink.fact(line, fact, "unlimited", text=value)
        elif word.isdecimal():
            self.sink.fact(line, fact, int(word), "us" if fact.startswith("cgroup.cpu_") else "", value)


def _group_of(path: str) -> str:
    """The cgroup a file path belongs to: its folder (/sys/fs/cgroup/freezer/job/freezer.state -> .../job)."""
    return path.rsplit("/", 1)[0] if "/" in path else ""


# facts read per group: a freezer listing of several groups (audit 8 H4), cpu.stat read twice per
# group to date its throttling (audit 8 H7)
_PER_GROUP = ("cgroup.frozen", "cgroup.cpu_periods", "cgroup.cpu_throttled_periods", "cgroup.under_oom")


def _in_group(value: str, group: str, fact: str) -> str:
    """A freezer state says which group it is of (`FROZEN in /sys/fs/cgroup/freezer/job`): a listing
    of several groups is read per group (audit 8 H4; rules/hang.py reads it back)."""
    return f"{value} in {group}" if group and fact in _PER_GROUP else value

