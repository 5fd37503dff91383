"""procps `ps` tables that show each task's state and kernel wait: `ps -o pid,ppid,stat,wchan,etime,args`
(any order, `--forest` or not), `ps -l` (its S column).  The header names the columns; the command
is the last one and may hold spaces.  A table without STAT/S and WCHAN says nothing this reads.

One Fact `proc.task` per row, its value a dict: pid, ppid (None without the column), stat (the
state letters: procps ps/output.c pr_stat -- R running, S interruptible sleep, D uninterruptible,
T stopped by a signal, t traced, Z zombie -- then its flags < N L s l +), wchan (the kernel function
the task sleeps in, `-` when running: /proc/PID/wchan, kernel/sched/core.c get_wchan), cmd.  A thread
table (`ps -L`: a TID/LWP/SPID column) gives each process's main-thread row only: another thread's
wait (an uploader thread on a frozen volume) does not hold the process's main thread.

The shapes (fixtures/validation23/lab-a/lab5-scorer-pipe-deadlock-hang ps.txt, REAL fixtures/lab/held_waits):

      PID  PPID STAT     ELAPSED WCHAN                  COMMAND
    11634 11251 SNsl       01:00 do_wait                 \\_ python3 -u train_qa_eval.py
    12155 11634 SN         00:40 anon_pipe_write         |   \\_ python3 score_preds.py

A row whose WCHAN is the freezer's wait is also cgroup_state's (its per-task `cgroup.frozen`): it
is recorded here and left unclaimed, so that parser reads it too.
"""
from __future__ import annotations

import re

from postmortem.parsers.base import Line, LineParser

FACT = "proc.task"

# a header: upper-case column names, PID and WCHAN among them (the state column checked in feed)
_HEADER = re.compile(r"^\s*(?:\$ .*)?(?:[A-Z%]+\s+)*PID\s+(?:[A-Z%:]+\s+)*?WCHAN\b(?:\s+[A-Z%:]+)*\s*$")
_STATE_COLUMNS = ("STAT", "S")
_COMMAND_COLUMNS = ("CMD", "COMMAND", "ARGS")
_STAT = re.compile(r"^[DIRSTtWXZ][<NLsl+]*$")
_FOREST = re.compile(r"^[\s|\\_]*")
_FREEZER_WAITS = ("__refrigerator", "refrigerator", "do_freezer_trap")
_THREAD_COLUMNS = ("TID", "LWP", "SPID")
_NOT_MAIN: dict = {}

PREFILTER = re.compile(r"^\s*(?:[A-Z%]+\s+)*PID\s.*\bWCHAN\b")


class ProcessTableParser(LineParser):
    name = "procs"
    order = 122
    prefilter = PREFILTER

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        self._columns: list[str] | None = None

    @property
    def busy(self) -> bool:
        return self._columns is not None

    def feed(self, line: Line) -> bool:
        text = line.text.rstrip()
        if self._columns is not None:
            row = self._row(text)
            if row is _NOT_MAIN:
                return True
            if row is not None:
                self.sink.fact(line, FACT, row, text=f"pid {row['pid']} {row['stat']} in {row['wchan']}: {row['cmd']}"[:200])
                return row["wchan"] not in _FREEZER_WAITS
            self._columns = None
        if _HEADER.match(text):
            columns = text.split()
            if any(c in columns for c in _STATE_COLUMNS) and columns[-1] in _COMMAND_COLUMNS:
                self._columns = columns
                return True
        return False

    def finish(self) -> None:
        self._columns = None

    def _row(self, text: str) -> dict | None:
        columns = self._columns or []
        fields = text.split(None, len(columns) - 1)
        if len(fields) < len(columns) - 1:
            return None
        values = dict(zip(columns, fields))
        stat = values.get("STAT") or values.get("S") or ""
        pid = values.get("PID", "")
        if not pid.isdecimal() or not _STAT.match(stat):
            return None
        tid = next((values[c] for c in _THREAD_COLUMNS if c in values), pid)
        if tid != pid:
            return _NOT_MAIN   # a thread table (ps -L): the process's row is its main thread's
        ppid = values.get("PPID", "")
        command = next((values[c] for c in _COMMAND_COLUMNS if c in values), "")
        return {"pid": int(pid), "ppid": int(ppid) if ppid.isdecimal() else None, "stat": stat,
                "wchan": values.get("WCHAN", "-"), "cmd": _FOREST.sub("", command)}
