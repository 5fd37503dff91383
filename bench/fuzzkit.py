"""What the fuzzers share: a per-input alarm (a hang is a finding, not a stalled campaign),
a memory watch, crashers and a corpus kept in the repo, and a progress log.

Kept in the repo, under fuzz/ (see fuzz/README.md):
  fuzz/crashers/<target>/<class>.json   one input per crasher class (the innermost frame and
                                        exception type, or `hang`/`memory`), replayed by
                                        tests/test_fuzz_crashers.py
  fuzz/corpus/<target>/<feature>.json   inputs that showed a behaviour not seen before (an
                                        event kind, a problem message shape); fed back as seeds
  fuzz/runs.jsonl                       one line per finished run: target, seed, inputs, seconds
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"


class Hang(Exception):
    """Raised by the per-input alarm."""


def _alarm(signum, frame):  # noqa: ARG001 - the signal handler's signature
    raise Hang()


class Campaign:
    """The bookkeeping of one fuzzer process."""

    def __init__(self, target: str, seed: int, seconds: float, hang_seconds: float = 20.0,
                 memory_mib: int = 500, corpus_cap: int = 400) -> None:
        self.target, self.seed, self.seconds = target, seed, seconds
        self.hang_seconds, self.memory_kib = hang_seconds, memory_mib << 10
        self.crash_dir = FUZZ / "crashers" / target
        self.corpus_dir = FUZZ / "corpus" / target
        self.corpus_cap = corpus_cap
        self.inputs = 0
        self.findings: dict[str, int] = {}      # crasher class -> times seen
        self.features: set[str] = set(p.stem for p in self.corpus_dir.glob("*.json"))
        self.started = time.monotonic()
        self.last_report = self.started
        self.baseline_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.stopping = False
        signal.signal(signal.SIGALRM, _alarm)
        signal.signal(signal.SIGTERM, self._stop)   # `kill PID` ends the run with its figures kept

    def _stop(self, signum, frame) -> None:  # noqa: ARG002 - the signal handler's signature
        self.stopping = True

    # ------------------------------------------------------------------ the loop
    def running(self) -> bool:
        now = time.monotonic()
        if now - self.last_report > 300:
            self.last_report = now
            print(f"[{self.target} seed {self.seed}] {self.inputs:,} inputs, "
                  f"{sum(self.findings.values())} findings in {now - self.started:.0f} s", flush=True)
        return not self.stopping and now - self.started < self.seconds

    def arm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, self.hang_seconds)

    def disarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def memory_grew(self) -> bool:
        """True the first time this process's peak RSS passes the memory budget."""
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if peak - self.baseline_kib > self.memory_kib:
            self.baseline_kib = peak     # report each new excess once
            return True
        return False

    # ------------------------------------------------------------------ findings
    def crashed(self, exc: BaseException | None, payload: dict[str, Any], kind: str | None = None) -> str:
        """Keep one input per crasher class; returns the class."""
        if exc is not None:
            tb = traceback.extract_tb(exc.__traceback__)
            inner = next((f for f in reversed(tb) if "/postmortem/" in f.filename), tb[-1] if tb else None)
            where = f"{Path(inner.filename).stem}.{inner.name}" if inner else "?"
            kind = f"{kind or type(exc).__name__}-{where}"     # a hang is named by where it was stuck
        first = kind not in self.findings
        self.findings[kind] = self.findings.get(kind, 0) + 1
        if first:
            self.crash_dir.mkdir(parents=True, exist_ok=True)
            detail = "".join(traceback.format_exception(exc)[-6:]) if exc is not None else kind
            path = self.crash_dir / (re.sub(r"[^A-Za-z0-9_.-]+", "_", kind)[:120] + ".json")
            _write(path, json.dumps({"target": self.target, "seed": self.seed, "input_no": self.inputs,
                                     "class": kind, "detail": detail, **payload}, indent=1) + "\n")
            print(f"[{self.target} seed {self.seed}] FINDING {kind} at input {self.inputs:,}: {path}\n{detail}",
                  flush=True)
        return kind

    # ------------------------------------------------------------------ corpus
    def novel(self, features: set[str], payload: dict[str, Any]) -> bool:
        """Keep the input if it shows a feature never seen; True when kept."""
        new = features - self.features
        if not new:
            return False
        self.features |= new
        if len(list(self.corpus_dir.glob("*.json"))) >= self.corpus_cap:
            return False
        self.corpus_dir.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha1(min(new).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        _write(self.corpus_dir / f"{name}.json",
               json.dumps({"features": sorted(new), **payload}, indent=1, ensure_ascii=True) + "\n")
        return True

    def corpus(self) -> list[dict[str, Any]]:
        out = []
        for p in sorted(self.corpus_dir.glob("*.json")):
            try:
                out.append(json.loads(p.read_text()))
            except (OSError, ValueError):
                continue
        return out

    # ------------------------------------------------------------------ the end
    def finish(self, extra: dict[str, Any] | None = None) -> int:
        seconds = time.monotonic() - self.started
        record = {"target": self.target, "seed": self.seed, "inputs": self.inputs, "seconds": round(seconds),
                  "findings": self.findings, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  **(extra or {})}
        FUZZ.mkdir(exist_ok=True)
        with open(FUZZ / "runs.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        print(f"[{self.target} seed {self.seed}] {self.inputs:,} inputs in {seconds:.0f} s; "
              f"findings: {self.findings or 'none'}", flush=True)
        return 0


def _write(path: Path, text: str) -> None:
    """Whole or not at all: the replay test may read the folder while a fuzzer writes."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")   # one per process: fuzzers run side by side
    tmp.write_text(text)
    tmp.replace(path)


def shape(text: str) -> str:
    """A problem message without its numbers and quoted names: its shape, for the corpus."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return re.sub(r"\d+", "N", text)[:120]


if __name__ == "__main__":
    sys.exit("a library for bench/fuzz_*.py")
