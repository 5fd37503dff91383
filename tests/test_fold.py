"""Routine NCCL INFO copies of many ranks folded into one event (postmortem/fold.py): what
folds, what never does, counts, rank/host/source sets and citations exact, the same
result whether copies fold while reading (NcclParser.shared_plain) or afterwards."""
from __future__ import annotations

import json
from pathlib import Path

from postmortem import fold, run, scan
from postmortem.model import ClockKind, Event, Ref, Severity, Stamp
from postmortem.report import get, RenderOptions, rows

from test_parallel import _everything, _ranks


def _info(path: str, line: int, msg: str, pid: int, seq: int, count: int = 3, **changes) -> Event:
    text = f"node{pid % 7}:{pid}:{pid + 7} [0] NCCL INFO {msg}"
    e = Event("nccl.info", text, Ref(path, line, text=text), Severity.INFO, None, f"node{pid % 7}", pid, pid + 7,
              None, {"msg": msg, "dev": 0, "count": count, "pids": [pid]}, None, seq)
    return Event(**{**{f: getattr(e, f) for f in e.__dataclass_fields__}, **changes}) if changes else e


def test_copies_from_other_files_fold_into_the_first():
    events = [_info("rank0.log", 2, "NET/Plugin : No plugin found", 100, 0),
              _info("rank0.log", 5, "Setting affinity for GPU 0 to ff00", 100, 1, count=2),
              _info("rank1.log", 2, "NET/Plugin : No plugin found", 101, 2, count=4),
              _info("rank1.log", 5, "Setting affinity for GPU 1 to ff11", 101, 3),   # same shape, other numbers
              _info("rank2.log", 7, "NET/Plugin : No plugin found", 102, 4, count=5)]
    out, away = fold.fold(events)
    assert away == 3
    assert [(e.ref.path, e.ref.line) for e in out] == [("rank0.log", 2), ("rank0.log", 5)]
    plugin, affinity = out
    assert plugin.text == events[0].text and plugin.ref == events[0].ref and plugin.seq == 0  # its own citation
    assert plugin.data["count"] == 3 + 4 + 5 and plugin.data["pids"] == [100, 101, 102]
    assert plugin.data[fold.FOLDED] == 2
    assert plugin.data[fold.MEMBERS] == (("rank1.log", 2, "node3", 101, 108, None), ("rank2.log", 7, "node4", 102, 109, None))
    assert affinity.data["msg"] == "Setting affinity for GPU 0 to ff00" and affinity.data["count"] == 5
    assert affinity.data[fold.MEMBERS] == (("rank1.log", 5, "node3", 101, 108, None),)
    assert events[0].data == {"msg": "NET/Plugin : No plugin found", "dev": 0, "count": 3, "pids": [100]}  # not mutated


def test_what_never_folds():
    msg = "NET/Plugin : No plugin found"
    stamp = Stamp(ClockKind.RELATIVE, seconds=1.0)
    lead = _info("rank0.log", 1, msg, 100, 0)
    never = [
        _info("rank1.log", 1, msg, 101, 1, kind="nccl.warn", severity=Severity.WARNING),   # a WARN
        _info("rank1.log", 2, msg, 101, 2, kind="nccl.network"),                             # Init/network lines
        _info("rank1.log", 3, msg, 101, 3, kind="msg.nccl_plugin_missing"),                  # a known message
        _info("rank1.log", 4, msg, 101, 4, stamp=stamp),                                     # its own time
        _info("rank1.log", 5, msg, 101, 5, rank=3),                                          # a wrapper's rank
        _info("rank1.log", 6, msg, 101, 6, severity=Severity.ERROR),
        _info("rank1.log", 7, msg, 101, 7, data={"msg": msg, "dev": 0, "count": 1, "pids": [101], "ring": "0 1"}),
        _info("rank0.log", 9, msg, 100, 8),                                                  # the same file's copy
    ]
    out, away = fold.fold([lead] + never)
    assert away == 0 and out == [lead] + never


def test_folding_is_associative():
    # one event per shape and file, as the parser makes them (it collapses a file's copies)
    events = [_info(f"rank{r}.log", 1 + m, f"message {'abc'[m]} of rank {r}", 100 + r, 10 * r + m, count=r + m)
              for r in range(6) for m in range(3)]
    whole, away = fold.fold(events)
    first, a = fold.fold(events[:9])
    second, b = fold.fold(events[9:])
    again, c = fold.fold(first + second)
    assert away == a + b + c == 15
    assert [(e.ref, e.data) for e in again] == [(e.ref, e.data) for e in whole]
    assert [e.data["count"] for e in whole] == [sum(r + m for r in range(6)) for m in range(3)]


def _unfolded(monkeypatch):
    """Folding off (after reading, and as read)."""
    monkeypatch.setattr(fold, "fold", lambda events: (list(events), 0))
    _not_as_read(monkeypatch)


def _not_as_read(monkeypatch):
    """Folding as read (fold.AsRead) off: every file's events are made and fold() folds them."""
    monkeypatch.setattr(fold.AsRead, "file_done", lambda self, events, deferred=(): None)


def _as_read_and_after(path: Path, monkeypatch, jobs: int = 1) -> tuple:
    """The analysis with copies folded as they are read, and with fold() alone afterwards."""
    early = run.analyze(path, run.Options(jobs=jobs))
    with monkeypatch.context() as m:
        _not_as_read(m)
        late = run.analyze(path, run.Options(jobs=jobs))
    return early, late


def test_folding_as_read_gives_what_folding_after_gives_on_every_fixture_bundle(monkeypatch):
    from test_scan import _bundles

    monkeypatch.setattr(scan, "SCAN_MIN_BYTES", 0)     # every text file through the scanning stage
    monkeypatch.setattr(scan, "DISTINCT_SHARE", 2.0)
    bundles = _bundles()
    assert len(bundles) > 50
    for b in bundles:
        early, late = _as_read_and_after(b, monkeypatch)
        assert _everything(early) == _everything(late), b


def test_folding_as_read_with_timed_small_and_compressed_files_between(tmp_path, monkeypatch):
    """Ranks whose copies fold as read, with files that fold only afterwards or never in between:
    a file with printed times (its deferred events are made after all, at their numbers), small
    files read line by line and a gzip member; one process and two."""
    import gzip

    from postmortem import parallel

    bundle = _ranks(tmp_path / "b", ranks=10)
    rank3 = (bundle / "nccl_rank3.log").read_text().splitlines()
    (bundle / "nccl_rank3.log").write_text("".join(f"{line}\n" if i >= 5 else
                                                   f"[2026-01-02 03:04:{i % 60:02d}] {line}\n"
                                                   for i, line in enumerate(rank3)))  # times only on its first lines
    (bundle / "nccl_rank5.log").write_text("\n".join((bundle / "nccl_rank5.log").read_text().splitlines()[:40]) + "\n")
    (bundle / "nccl_rank7.log.gz").write_bytes(gzip.compress((bundle / "nccl_rank7.log").read_bytes(), mtime=0))
    (bundle / "nccl_rank7.log").unlink()
    monkeypatch.setattr(scan, "SCAN_MIN_BYTES", 4 << 10)
    early, late = _as_read_and_after(bundle, monkeypatch)
    assert _everything(early) == _everything(late)
    assert any(fold.members(e) for e in early.case.events)
    assert not any(fold.members(e) for e in early.case.events if e.ref.path == "nccl_rank3.log")
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "GROUPS_PER_JOB", 3)
    early2, late2 = _as_read_and_after(bundle, monkeypatch, jobs=2)
    assert _everything(early2) == _everything(late2) == _everything(late)


def _json(a, bundle: Path) -> dict:
    import io

    out = io.StringIO()
    get("json").render(a, out, RenderOptions(bundle_path=bundle))
    return json.loads(out.getvalue())


def test_a_many_rank_bundle_folds_with_exact_counts_and_citations(tmp_path, monkeypatch):
    bundle = _ranks(tmp_path / "b", ranks=24)
    folded = run.analyze(bundle, run.Options(jobs=1))
    with monkeypatch.context() as m:
        _unfolded(m)
        plain = run.analyze(bundle, run.Options(jobs=1))
    assert len(folded.case.events) < len(plain.case.events) - 24 * 5
    assert folded.verdict == plain.verdict                      # the same verdict, the same lines cited
    # every unfolded event is still there, or is a copy listed on the event it folded into
    members = {(p, n) for e in folded.case.events for p, n, *_ in fold.members(e)}
    kept = {(e.ref.path, e.ref.line, e.kind) for e in folded.case.events}
    for e in plain.case.events:
        assert (e.ref.path, e.ref.line, e.kind) in kept or (e.kind == "nccl.info" and (e.ref.path, e.ref.line) in members), e
    assert len(members) == len(plain.case.events) - len(folded.case.events)
    # the rest untouched: the same events, data, ranks and order
    others = lambda a: [(e.kind, e.ref, e.host, e.pid, e.rank, e.data, e.seq) for e in a.case.events  # noqa: E731
                        if e.kind != "nccl.info" or "count" not in e.data]
    assert others(folded) == others(plain)
    lines = lambda a: sum(e.data["count"] for e in a.case.events if e.kind == "nccl.info" and "count" in e.data)  # noqa: E731
    assert lines(folded) == lines(plain)
    # the timeline rows: every count, rank, host and source set as without folding
    assert rows.timeline_rows(rows.digest(folded.case.events)) == rows.timeline_rows(rows.digest(plain.case.events))
    a, b = _json(folded, bundle), _json(plain, bundle)
    assert a["timeline_rows"] == b["timeline_rows"] and a["verdict"] == b["verdict"]
    assert len(a["timeline"]) + a["timeline_omitted"] == len(b["timeline"]) + b["timeline_omitted"]
    assert all(isinstance(v, int) for e in a["timeline"] for k, v in e["data"].items() if k == fold.FOLDED)
    assert not any(fold.MEMBERS in e["data"] for e in a["timeline"])   # the member list stays out of the JSON


def test_workers_fold_their_groups_and_the_parent_folds_them_alike(tmp_path, monkeypatch):
    from postmortem import parallel

    bundle = _ranks(tmp_path / "b", ranks=12)
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "GROUPS_PER_JOB", 3)  # several groups per worker
    one = run.analyze(bundle, run.Options(jobs=1))
    parts = []
    fold_parts = fold.fold_parts
    monkeypatch.setattr(fold, "fold_parts", lambda *a: parts.append(fold_parts(*a)) or parts[-1])
    two = run.analyze(bundle, run.Options(jobs=2))
    assert _everything(two) == _everything(one)   # seqs and member lists included
    assert any(fold.members(e) for e in one.case.events)


def test_an_artifact_with_printed_times_never_folds(tmp_path):
    bundle = _ranks(tmp_path / "b", ranks=3)
    first = (bundle / "nccl_rank1.log").read_text().splitlines()
    stamped = "".join(f"[2026-01-02 03:04:{i % 60:02d}] {line}\n" for i, line in enumerate(first))
    (bundle / "nccl_rank1.log").write_text(stamped)   # NCCL 2.26+ prints a time on every line
    a = run.analyze(bundle, run.Options(jobs=1))
    assert any(fold.members(e) for e in a.case.events)
    assert not any(p == "nccl_rank1.log" for e in a.case.events for p, *_ in fold.members(e))
    assert not any(fold.members(e) for e in a.case.events if e.ref.path == "nccl_rank1.log")


def test_a_folded_copy_gets_the_rank_its_own_event_would_get():
    from postmortem import job

    init = _info("rank1.log", 1, "comm 0x1 rank 3 nranks 8", 101, 0, kind="nccl.init",
                 data={"rank": 3, "nranks": 8})
    events, _ = fold.fold([_info("rank0.log", 2, "NET/Plugin : No plugin found", 100, 1),
                           _info("rank1.log", 2, "NET/Plugin : No plugin found", 101, 2)])
    joined = job.join_identities([init] + events)
    assert joined[1].data[fold.MEMBERS] == (("rank1.log", 2, "node3", 101, 108, 3),)
    assert joined[0].rank == 3


def test_folding_as_read_with_two_archive_members_of_one_name(tmp_path, monkeypatch):
    """Two archive members of one name, the second with printed times (the bundle reader names
    it `dup.log (copy 2)`; were one path read twice, folding as read would be off, fold.AsRead)."""
    import io
    import tarfile

    ranks = _ranks(tmp_path / "b", ranks=4)
    texts = [(ranks / f"nccl_rank{r}.log").read_bytes() for r in range(4)]
    stamped = b"".join(b"[2026-01-02 03:04:05] " + line + b"\n" for line in texts[3].splitlines())
    bundle = tmp_path / "bundle.tar"
    with tarfile.open(bundle, "w") as tar:
        for name, data in (("rank0.log", texts[0]), ("dup.log", texts[1]), ("rank2.log", texts[2]),
                           ("dup.log", stamped)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    monkeypatch.setattr(scan, "SCAN_MIN_BYTES", 4 << 10)
    early, late = _as_read_and_after(bundle, monkeypatch)
    assert _everything(early) == _everything(late)
    assert any(fold.members(e) for e in early.case.events)
    assert {a.path for a in early.case.artifacts} >= {"dup.log", "dup.log (copy 2)"}
    assert any(p == "dup.log" for e in early.case.events for p, *_ in fold.members(e))
    assert not any(p == "dup.log (copy 2)" for e in early.case.events for p, *_ in fold.members(e))


def test_folding_as_read_when_off_folds_nothing():
    early = fold.AsRead(on=False)
    lead = _info("rank0.log", 2, "NET/Plugin : No plugin found", 100, 0)
    assert early.file_done([lead]) is None and not early.leader(fold._shape(lead.data["msg"]), "rank1.log")
    on = fold.AsRead()
    assert on.file_done([lead]) == [lead] and on.leader(fold._shape(lead.data["msg"]), "rank1.log")
    assert not on.leader(fold._shape(lead.data["msg"]), "rank0.log")   # never into its own file's event
