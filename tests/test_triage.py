"""`postmortem triage`: real runs over the fixtures (no mocked analysis).

Groups must hold one true cause; the same crash on another host (other names, pids,
paths, addresses and times) must land in the same group; baselines mark new/gone;
--fail-on sets the exit status; a Dask LocalCluster runs the same work.
"""
from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from postmortem import cli
from postmortem.run import analyze
from postmortem.triage.discover import find_bundles

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
CORES = ROOT / "fixtures" / "cores"

# What each core fixture is (fixtures/cores/SOURCE.md): the crash, not the file format.
CORE_TRUTH = {"shm-sigbus": "shm_exhausted", "shm-sigbus-faulthandler": "shm_exhausted",
              "segv-maperr": "segv_in_store", "segv-accerr": "segv_in_store",
              "threads-segv": "segv_in_store", "abort": "abort"}


def triage(*argv: str) -> int:
    return cli.main(["triage", *argv])


def load(out: Path) -> dict:
    return json.loads((out / "triage.json").read_text())


def true_cause(path: str) -> str | None:
    p = Path(path)
    if (p.parent / "truth.json").is_file():
        return json.loads((p.parent / "truth.json").read_text())["cause"]
    return CORE_TRUTH.get(p.name.split(".")[0])


def copy_case(name: str, into: Path, as_name: str | None = None) -> Path:
    dest = into / (as_name or name)
    shutil.copytree(CORPUS / name, dest)
    return dest


# ---------------------------------------------------------------- discovery

def test_discovery_reads_the_corpus_layout_and_loose_crash_files():
    tasks = find_bundles([CORPUS, CORES])
    by_name = {t.name: t.path for t in tasks}
    assert by_name["xid79-fell-off-bus-01"].endswith("xid79-fell-off-bus-01/bundle")
    assert "abort.core.gz" in by_name and "threads-segv.gdb.txt" in by_name
    for not_a_bundle in ("SOURCE.md", "crash.c", "make_cores.sh", "shm_faulthandler.py", "crash"):
        assert not_a_bundle not in by_name
    assert len(by_name) == len(tasks)


# ------------------------------------------------------ corpus + cores run

@pytest.fixture(scope="module")
def full_run(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("full")
    assert triage(str(CORPUS), str(CORES), "--out", str(out), "--jobs", "2", "-q") == 0
    return {"out": out, "doc": load(out)}


def test_every_group_holds_one_true_cause(full_run):
    doc = full_run["doc"]
    assert doc["schema"] == "postmortem.triage/1"
    assert doc["totals"]["bundles"] == len(find_bundles([CORPUS, CORES]))
    for g in doc["groups"]:
        assert {"signature", "category", "cause", "count", "bundles"} <= set(g)
        causes = {true_cause(b) for b in g["bundles"]} - {None}
        # the bundles nothing was claimed for share the one 'unknown' group by design
        assert len(causes) <= 1 or g["cause"] == "unknown", f"{g['signature']} mixes {causes}"


def test_outputs_are_written_and_the_index_is_self_contained(full_run):
    out, doc = full_run["out"], full_run["doc"]
    html = (out / "index.html").read_text()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html), "no external request"
    # Its one script is inline and allowed by hash only (CSP): nothing loads, nothing injected runs.
    assert "<script src" not in html and html.count("<script>") == 1 and "script-src &#39;sha256-" in html
    for b in doc["bundles"]:
        assert (out / b["report"]).is_file()
        assert f'href="{b["report"]}"' in html
    summary = (out / "summary.md").read_text()
    assert summary.startswith("### postmortem triage") and "| count |" in summary


def test_gpus_come_from_xid_lines(full_run):
    [xid] = [g for g in full_run["doc"]["groups"] if g["cause"] == "gpu_fell_off_bus"]
    assert xid["gpus"] == [{"gpu": "? 0000:09:00", "bundles": 1}]
    assert xid["gpu_spread"].startswith("one GPU")


# ------------------------------------- the same crash on another host

HOSTS_IN_BRACKETS = re.compile(r"^\[([\w.-]+):\d+", re.M)      # UCX / NCCL `[host:pid ...]`
PID_PATTERNS = (re.compile(r"^\[[\w.-]+:(\d+)\s*:\d+:(\d+)\]", re.M), re.compile(r"tid:\s*(\d+)"),
                re.compile(r"\bLWP (\d+)"), re.compile(r"torch_(\d+)_(\d+)"),
                re.compile(r"\bpid[:= ]\s*(\d+)", re.I), re.compile(r"^[\w.-]+:(\d+):(\d+) ", re.M))
ISO = re.compile(r"\b(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)")
SYSLOG = re.compile(r"\b([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)\b")
PRINTK = re.compile(r"^\[\s*(\d+)\.(\d{6})\]", re.M)
HEX = re.compile(r"\b0x([0-9a-fA-F]+)\b")
NCCL_SHM = re.compile(r"\bnccl-[A-Za-z0-9]{6}\b")
SHIFT = timedelta(days=3, hours=5, minutes=17)


def rehost(text: str, hosts: list[str]) -> str:
    """The same log as if the crash had happened again elsewhere: other host names, pids,
    tids, /dev/shm names, addresses and times, each rewritten consistently."""
    for i, host in enumerate(sorted(set(hosts), key=len, reverse=True)):
        text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", f"gpunode{i:02d}b", text)
    numbers = {n for p in PID_PATTERNS for m in p.finditer(text) for n in m.groups() if n and int(n) >= 100}
    for n in sorted(numbers, key=len, reverse=True):
        text = re.sub(rf"(?<![0-9A-Za-z.]){n}(?![0-9A-Za-z.])", str(int(n) + 40417), text)
    text = HEX.sub(lambda m: "0x" + format(int(m.group(1), 16) ^ 0x5A5A0, "x").zfill(len(m.group(1))), text)
    text = NCCL_SHM.sub("nccl-Zq81Lm", text)
    text = ISO.sub(lambda m: (datetime.fromisoformat(m.group(1)) + SHIFT).isoformat(sep=m.group(1)[10]), text)
    text = SYSLOG.sub(lambda m: _syslog_shift(m.group(1)), text)
    return PRINTK.sub(lambda m: f"[{int(m.group(1)) + 52001:>5}.{m.group(2)}]", text)


def _syslog_shift(stamp: str) -> str:
    t = datetime.strptime(f"2001 {stamp}", "%Y %b %d %H:%M:%S") + SHIFT
    return f"{t:%b} {t.day:2d} {t:%H:%M:%S}"


def rehost_bundle(src: Path, dest: Path) -> Path:
    original = analyze(src)
    text_all = "\n".join(p.read_text(errors="replace") for p in src.rglob("*") if p.is_file())
    hosts = [*original.hosts, *HOSTS_IN_BRACKETS.findall(text_all)]
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src)
        target = dest / rehost(str(rel), hosts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rehost(path.read_text(errors="replace"), hosts))
    return dest


REHOSTED = ["shm-nccl-sigbus-ucx-06", "shm-dataloader-k8s-pangeo-02", "nvlink-nvswitch-fault-01",
            "hw-gpu-died-cuda-unknown-01", "oom-gpu-paramsync-returnn-02", "nccl-version-mismatch-01",
            "multi-roce-hca-enodev-08", "xid79-fell-off-bus-01"]


@pytest.mark.parametrize("case", REHOSTED)
def test_the_same_crash_on_another_host_has_the_same_signature(case, tmp_path):
    src = CORPUS / case / "bundle"
    moved = rehost_bundle(src, tmp_path / "moved")
    before = "".join(p.read_text(errors="replace") for p in sorted(src.rglob("*")) if p.is_file())
    after = "".join(p.read_text(errors="replace") for p in sorted(moved.rglob("*")) if p.is_file())
    assert before != after, "the rewrite must change the log"
    a, b = analyze(src), analyze(moved)
    assert set(a.hosts).isdisjoint(b.hosts) or not a.hosts
    assert a.verdict.cause == b.verdict.cause
    assert a.verdict.signature == b.verdict.signature


def test_a_gdb_backtrace_from_another_run_lands_in_the_same_group(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(CORES / "threads-segv.gdb.txt", runs / "run1.gdb.txt")
    (runs / "run2.gdb.txt").write_text(rehost((CORES / "threads-segv.gdb.txt").read_text(), []))
    copy_case("shm-nccl-sigbus-ucx-06", runs, "ucx-run1")
    rehost_bundle(CORPUS / "shm-nccl-sigbus-ucx-06" / "bundle", runs / "ucx-run2")
    out = tmp_path / "out"
    assert triage(str(runs), "--out", str(out), "--jobs", "2", "-q") == 0
    doc = load(out)
    assert sorted(g["count"] for g in doc["groups"]) == [2, 2]


# ------------------------------------------------------- errors, baseline, exit

def test_a_bundle_that_cannot_be_analysed_forms_its_own_group(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    copy_case("xid79-fell-off-bus-01", batch)
    (batch / "broken.tar.gz").write_bytes(b"\x1f\x8b\x08\x00not really gzip" * 10)
    (batch / "also-broken.zip").write_bytes(b"PK\x03\x04garbage")
    out = tmp_path / "out"
    assert triage(str(batch), "--out", str(out), "--jobs", "2", "-q") == 0
    doc = load(out)
    errors = [g for g in doc["groups"] if g["signature"].startswith("error:")]
    assert sum(g["count"] for g in errors) == 2
    assert all(g["error"] for g in errors)
    assert doc["totals"]["errors"] == 2 and doc["totals"]["bundles"] == 3
    assert triage(str(batch), "--out", str(out), "-q", "--fail-on", "any") == 3


def test_bundle_text_is_escaped_in_the_index(tmp_path):
    batch = tmp_path / "batch"
    evil = batch / "<img src=x onerror=alert(1)>"
    evil.mkdir(parents=True)
    (evil / "log.txt").write_text("<script>alert(1)</script>\n")
    out = tmp_path / "out"
    assert triage(str(batch), "--out", str(out), "-q", "--jobs", "1") == 0
    html = (out / "index.html").read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_baseline_marks_new_and_gone_and_fail_on_new(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    for case in ("xid79-fell-off-bus-01", "cfg-ulimit-fd-shapeworks-02", "ecc-uncorrectable-01"):
        copy_case(case, batch)
    first = tmp_path / "first"
    assert triage(str(batch), "--out", str(first), "-q", "--fail-on", "new") == 3   # no baseline: all new
    old = {g["signature"]: g for g in load(first)["groups"]}

    assert triage(str(batch), "--out", str(tmp_path / "same"), "-q", "--baseline", str(first / "triage.json"),
                  "--fail-on", "new") == 0

    shutil.rmtree(batch / "ecc-uncorrectable-01")
    copy_case("pcie-aer-fatal-01", batch)
    second = tmp_path / "second"
    assert triage(str(batch), "--out", str(second), "-q", "--baseline", str(first / "triage.json"),
                  "--fail-on", "new") == 3
    doc = load(second)
    new = [g["cause"] for g in doc["groups"] if g["new"]]
    assert new == ["pcie_error"]
    assert [g["cause"] for g in doc["gone"]] == [old[g["signature"]]["cause"] for g in doc["gone"]] == ["gpu_memory_ecc"]
    assert doc["totals"]["new"] == 1 and doc["totals"]["gone"] == 1
    assert "Gone since the baseline" in (second / "summary.md").read_text()


def test_fail_on_hardware_and_any(tmp_path):
    config_only = tmp_path / "config"
    config_only.mkdir()
    copy_case("cfg-ulimit-fd-shapeworks-02", config_only)
    (config_only / "quiet.log").write_text("training step 1 ok\n")      # an unknown verdict
    out = tmp_path / "out"
    assert triage(str(config_only), "--out", str(out), "-q", "--fail-on", "hardware") == 0
    assert triage(str(config_only), "--out", str(out), "-q", "--fail-on", "any") == 3
    (config_only / "cfg-ulimit-fd-shapeworks-02" / "bundle" / "train.log").write_text("nothing here\n")
    assert triage(str(config_only), "--out", str(out), "-q", "--fail-on", "any") == 0
    copy_case("xid79-fell-off-bus-01", config_only)
    assert triage(str(config_only), "--out", str(out), "-q", "--fail-on", "hardware") == 3


def test_lemon_nodes_rank_hosts_with_repeated_hardware_verdicts(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    copy_case("nvlink-nvswitch-fault-01", batch, "nvswitch-a")
    copy_case("nvlink-nvswitch-fault-01", batch, "nvswitch-b")
    copy_case("pcie-aer-fatal-01", batch)
    out = tmp_path / "out"
    assert triage(str(batch), "--out", str(out), "-q") == 0
    top = load(out)["lemon_nodes"][0]
    assert top["host"] == "192.168.11.119" and top["hardware_bundles"] == 2 and top["repeated"]
    assert "Lemon nodes" in (out / "summary.md").read_text()


def test_usage_errors_exit_2(tmp_path, capsys):
    assert triage(str(tmp_path / "missing")) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert triage(str(tmp_path), "--baseline", str(bad), "--out", str(tmp_path / "o")) == 2
    assert triage(str(tmp_path), "--jobs", "0") == 2


def test_help_documents_the_exit_status(capsys):
    assert cli.main(["triage", "--help"]) == 0
    text = capsys.readouterr().out
    for word in ("exit status", "--fail-on", "new", "hardware", "any", "usage error"):
        assert word in text


# -------------------------------------------------------------------- Dask

def test_triage_on_a_dask_local_cluster_matches_the_local_pool(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    batch = tmp_path / "batch"
    batch.mkdir()
    for case in ("xid79-fell-off-bus-01", "shm-nccl-sigbus-ucx-06", "cfg-ulimit-fd-shapeworks-02"):
        copy_case(case, batch)
    (batch / "broken.tar.gz").write_bytes(b"\x1f\x8b\x08\x00junk")
    local, remote = tmp_path / "local", tmp_path / "dask"
    assert triage(str(batch), "--out", str(local), "-q", "--jobs", "2") == 0
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        assert triage(str(batch), "--out", str(remote), "-q", "--dask", cluster.scheduler_address) == 0
    sigs = lambda out: sorted((g["signature"], g["count"]) for g in load(out)["groups"])  # noqa: E731
    assert sigs(remote) == sigs(local)
    assert all((remote / b["report"]).is_file() for b in load(remote)["bundles"] if b["report"])


def test_an_unreachable_dask_scheduler_is_a_usage_error(tmp_path):
    pytest.importorskip("dask.distributed")
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "a.log").write_text("x\n")
    assert triage(str(batch), "--out", str(tmp_path / "o"), "-q", "--dask", "tcp://127.0.0.1:9") == 2


def test_a_folder_of_case_sets_is_opened_set_by_set(tmp_path):
    """`triage fixtures/` holds sets of cases (corpus/, bundles/ ...): each case is one bundle,
    never a whole set read as one bundle whose hosts are its case folders."""
    sets = tmp_path / "fixtures"
    shutil.copytree(CORPUS, sets / "corpus")
    (sets / "README.md").write_text("not a bundle\n")
    tasks = find_bundles([sets])
    assert sorted(t.name for t in tasks) == sorted(f"corpus_{p.parent.name}" for p in CORPUS.glob("*/truth.json"))
    assert all(t.path.endswith("/bundle") for t in tasks)
