"""`postmortem collect` end to end, run as `python -m postmortem.collect` like the crash lab does."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from datetime import datetime
from pathlib import Path

import pytest

from postmortem import collect

REPO = Path(__file__).resolve().parents[1]

# Tools the base items need; nvidia-smi, gdb, journalctl and coredumpctl are left out on purpose.
PRESENT_TOOLS = ("dmesg", "uptime", "df", "mount", "free", "sh", "date")
ABSENT_TOOLS = ("nvidia-smi", "gdb", "journalctl", "coredumpctl")

PLANTED = {
    "NCCL_IB_TOKEN": "abc",
    "TORCH_URL": "https://user:pass@host/x",
    "NCCL_SOCKET_SECRET": "s3cr3t-planted-value",
    "CUDA_API_KEY": "planted-api-key-value",
    "PYTORCH_DB_PASSWORD": "planted-db-password",
    "OMP_HUB_CREDENTIALS": "planted-credential-value",
    "TORCH_MIRROR": "see https://alice:planted-url-pw@mirror.example/simple and more",
    "NCCL_DEBUG": "INFO",
    "UNRELATED_VARIABLE": "not-collected-value",
}
NEVER_IN_OUTPUT = ("NCCL_IB_TOKEN=abc", "user:pass", "s3cr3t-planted-value", "planted-api-key-value",
                   "planted-db-password", "planted-credential-value", "planted-url-pw",
                   "not-collected-value")


def tool_farm(tmp_path: Path) -> Path:
    """A PATH holding only the present tools (symlinks to the real ones) and python."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for tool in PRESENT_TOOLS:
        real = shutil.which(tool)
        if real:
            (farm / tool).symlink_to(real)
    return farm


def run_collect(out: Path, env_path: str, *extra: str) -> subprocess.CompletedProcess:
    env = {"PATH": env_path, "PYTHONPATH": str(REPO), **PLANTED}
    return subprocess.run([sys.executable, "-m", "postmortem.collect", "--out", str(out), *extra],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("collect")
    out = tmp / "bundle"
    proc = run_collect(out, str(tool_farm(tmp)), "--since", "2h")
    assert proc.returncode == 0, proc.stderr
    return out


def manifest_items(folder: Path) -> dict[str, dict]:
    manifest = json.loads((folder / "manifest.json").read_text())
    return {item["file"]: item for item in manifest["items"]}


def test_manifest_header(bundle: Path):
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["postmortem_version"]
    assert manifest["host"]
    assert datetime.fromisoformat(manifest["collected_at"]).utcoffset() is not None
    assert manifest["since"] == "2h"


def test_every_item_is_recorded_with_its_timing(bundle: Path):
    for item in manifest_items(bundle).values():
        assert item["status"] in {"ok", "missing", "timeout", "error"}
        assert item["command"]
        assert item["duration_s"] >= 0
        assert datetime.fromisoformat(item["started_at"]).utcoffset() is not None


@pytest.mark.parametrize("name", ["meminfo.txt", "proc_stat_btime.txt", "df_shm.txt", "df_B1_shm.txt",
                                  "ulimit.txt", "env.txt", "timezone.txt", "cgroup_memory.txt",
                                  "mount.txt", "uptime_s.txt", "free.txt"])
def test_descriptive_files_are_written(bundle: Path, name: str):
    assert (bundle / name).is_file()
    assert manifest_items(bundle)[name]["status"] == "ok"


def test_contents_are_what_they_say(bundle: Path):
    assert (bundle / "proc_stat_btime.txt").read_text().startswith("btime ")
    assert "/dev/shm" in (bundle / "df_B1_shm.txt").read_text()
    assert "MemTotal:" in (bundle / "meminfo.txt").read_text()
    assert any(word in (bundle / "ulimit.txt").read_text() for word in ("open files", "nofiles"))
    assert "Max open files" in (bundle / "proc_limits.txt").read_text()
    assert "date +%z: " in (bundle / "timezone.txt").read_text()


@pytest.mark.parametrize("name", ["nvidia-smi-q.txt", "nvidia-smi-topo.txt", "journalctl_k.txt",
                                  "coredumpctl_list.txt"])
def test_missing_tools_are_noted_not_fatal(bundle: Path, name: str):
    item = manifest_items(bundle)[name]
    assert item["status"] == "missing"
    assert "not found" in item["note"]
    assert not (bundle / name).exists()


def test_gdb_missing_for_a_requested_core(tmp_path: Path):
    core = tmp_path / "core.1234"
    core.write_bytes(b"\x7fELF not really a core")
    out = tmp_path / "b"
    proc = run_collect(out, str(tool_farm(tmp_path)), "--core", str(core))
    assert proc.returncode == 0, proc.stderr
    items = manifest_items(out)
    assert items["cores/core.1234"]["status"] == "ok"
    assert (out / "cores" / "core.1234").read_bytes() == core.read_bytes()
    assert items["gdb_bt_core.1234.txt"]["status"] == "missing"


def test_env_is_filtered_and_redacted(bundle: Path):
    env = (bundle / "env.txt").read_text().splitlines()
    assert "NCCL_IB_TOKEN=<redacted>" in env
    assert "TORCH_URL=https://<redacted>@host/x" in env
    assert "NCCL_DEBUG=INFO" in env
    assert not any(line.startswith("UNRELATED_VARIABLE") for line in env)


def test_no_secret_appears_anywhere(bundle: Path):
    for path in bundle.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for secret in NEVER_IN_OUTPUT:
                assert secret not in text, f"{secret!r} leaked into {path.name}"


def test_env_of_another_process_via_pid(tmp_path: Path):
    env = {"PATH": os.environ["PATH"], "NCCL_IB_TOKEN": "abc", "TORCH_URL": "https://user:pass@host/x",
           "NCCL_ALGO": "Ring"}
    child = subprocess.Popen(["sleep", "60"], env=env)
    try:
        out = tmp_path / "b"
        proc = run_collect(out, os.environ["PATH"], "--pid", str(child.pid))
        assert proc.returncode == 0, proc.stderr
    finally:
        child.kill()
        child.wait()
    text = (out / "env.txt").read_text()
    assert "NCCL_ALGO=Ring" in text and "NCCL_IB_TOKEN=<redacted>" in text
    assert "user:pass" not in text
    assert "Max open files" in (out / "proc_limits.txt").read_text()


def test_tarball_has_the_same_layout(tmp_path: Path, bundle: Path):
    target = tmp_path / "node.tar.gz"
    proc = run_collect(target, str(tool_farm(tmp_path)), "--since", "2h")
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(target) as tar:
        members = {m.name for m in tar.getmembers() if m.isfile()}
        manifest = json.load(tar.extractfile("node/manifest.json"))
    # Everything under one top-level folder named after the tarball.
    assert {n.split("/", 1)[0] for n in members} == {"node"}
    names = {n.split("/", 1)[1] for n in members}
    written = {f for f, item in manifest_items(bundle).items() if (bundle / f).exists()}
    assert written | {"manifest.json", "clock.json"} == names
    assert all(not n.startswith(("/", "..")) for n in names)
    assert {i["file"] for i in manifest["items"]} == set(manifest_items(bundle))


def test_refuses_a_non_empty_folder(tmp_path: Path):
    (tmp_path / "keep.txt").write_text("x")
    proc = run_collect(tmp_path, os.environ["PATH"])
    assert proc.returncode == 2


def test_timeout_is_recorded():
    result = collect.Run(("sleep", "5"), timeout_s=0.2)()
    assert result.status == "timeout" and result.exit_code is None


def test_missing_file_and_failing_command():
    assert collect.Read("/nonexistent/file")().status == "missing"
    failed = collect.Run(("sh", "-c", "exit 3"))()
    assert failed.status == "error" and failed.exit_code == 3


@pytest.mark.parametrize("name,value,expected", [
    ("NCCL_IB_TOKEN", "abc", "<redacted>"),
    ("torch_api_key", "k", "<redacted>"),
    ("TORCH_HOME", "/data/torch", "/data/torch"),
    ("TORCH_URL", "https://user:pass@host/x", "https://<redacted>@host/x"),
    ("TORCH_URL", "https://u:p@ss@host/x?y=a@b", "https://<redacted>@host/x?y=a@b"),
    ("TORCH_URL", "https://u:pa/ss#x@host/x", "https://<redacted>@host/x"),
    ("NCCL_HUB", "alice:pw@host.example", "<redacted>@host.example"),
    ("NCCL_ARGS", "--password hunter2 --token=abc", "--password <redacted> --token=<redacted>"),
    ("TORCH_HDR", "Authorization: Bearer abc.def", "Authorization: Bearer <redacted>"),
    ("TORCH_URL", "https://host/x", "https://host/x"),
])
def test_redact_value(name: str, value: str, expected: str):
    assert collect.redact_value(name, value) == expected


def test_parse_since():
    now = datetime(2026, 1, 2, 12, 0, 0)
    assert collect.parse_since("2h", now) == "2026-01-02 10:00:00"
    assert collect.parse_since("30m", now) == "2026-01-02 11:30:00"
    assert collect.parse_since("yesterday", now) == "yesterday"
    assert collect.parse_since("2026-01-02T10:00", now) == "2026-01-02 10:00:00"
    assert collect.parse_since(None) is None
    with pytest.raises(collect.BadArgument):
        collect.parse_since("-ex=1; rm", now)


# --------------------------------------------------------------------------- secrets (issue 19)
# Planted secrets of every shape the red team found surviving, in the environment of a
# separate process whose /proc/PID/environ collect reads (generated at test time).
KEY_BLOCK = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAplantedkeybody\n"
             "-----END OPENSSH PRIVATE KEY-----")
SECRETS = {
    "NCCL_HUB_AUTH": "planted-auth-1", "TORCH_DB_PWD": "planted-pwd-2", "NCCL_SMTP_PASS": "planted-pass-3",
    "TORCH_CLOUD_CREDS": "planted-creds-4", "NCCL_GH": "ghp_plantedGithubToken000000000000",
    "TORCH_GH2": "github_pat_planted_Fine_Grained_0000000", "NCCL_GL": "glpat-plantedGitlab000000000",
    "TORCH_SLACK": "xoxb-planted-slack-0000", "NCCL_OAI": "sk-plantedOpenAiKey000000000000",
    "TORCH_AWS": "AKIAPLANTED000000000", "NCCL_HDR": "Authorization: Bearer planted.bearer.value",
    "TORCH_ARGS": "--password planted-cli-pw --token planted-cli-token",
    "NCCL_SIGNED": "https://b.s3.amazonaws.com/k?X-Amz-Signature=plantedsig000&X-Amz-Date=1",
    "TORCH_GCS": "https://storage.googleapis.com/b/o?X-Goog-Signature=plantedgoog000",
    "NCCL_SSH": KEY_BLOCK, "TORCH_URL1": "https://bob:planted/slash@host/x",
    "TORCH_URL2": "https://bob:planted#hash@host/x", "NCCL_BARE": "carol:planted-bare@db.example.com",
}
SECRET_MARKS = ("planted-auth-1", "planted-pwd-2", "planted-pass-3", "planted-creds-4", "plantedGithubToken",
                "planted_Fine_Grained", "plantedGitlab", "xoxb-planted", "plantedOpenAiKey", "AKIAPLANTED",
                "planted.bearer", "planted-cli-pw", "planted-cli-token", "plantedsig", "plantedgoog",
                "plantedkeybody", "planted/slash", "planted#hash", "planted-bare")


def test_every_planted_secret_is_redacted_from_env_and_logs(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text("step 1\n" + "".join(f"{k}={v}\n" for k, v in SECRETS.items()) + "step 2\n")
    env = {"PATH": os.environ["PATH"], "NCCL_ALGO": "Ring", **SECRETS}
    child = subprocess.Popen(["sleep", "60"], env=env)
    try:
        out = tmp_path / "b"
        proc = run_collect(out, str(tool_farm(tmp_path)), "--pid", str(child.pid), "--log", str(log))
        assert proc.returncode == 0, proc.stderr
    finally:
        child.kill()
        child.wait()
    assert "NCCL_ALGO=Ring" in (out / "env.txt").read_text()
    assert "step 2" in (out / "logs" / "train.log").read_text()
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for mark in SECRET_MARKS:
                assert mark not in text, f"{mark!r} leaked into {path.relative_to(out)}"


def test_kernel_log_text_is_redacted():
    text = "[  1.0] audit: cmd=\"curl -H 'Authorization: Bearer planted.k' https://u:planted@h/\"\n"
    out = collect.redact_text(text)
    assert "planted" not in out and "audit" in out


def test_a_core_symlink_is_refused_and_a_core_is_flagged_as_secret(tmp_path: Path):
    real = tmp_path / "core.1"
    real.write_bytes(b"\x7fELF not really a core")
    link = tmp_path / "core.2"
    link.symlink_to("/etc/shadow" if Path("/etc/shadow").exists() else real)
    out = tmp_path / "b"
    proc = run_collect(out, str(tool_farm(tmp_path)), "--core", str(real), "--core", str(link))
    assert proc.returncode == 0, proc.stderr
    items = manifest_items(out)
    assert items["cores/core.2"]["status"] == "error" and "symbolic link" in items["cores/core.2"]["note"]
    assert not (out / "cores" / "core.2").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert any("process's memory" in w and "secrets" in w for w in manifest["warnings"])
    assert "process's memory" in proc.stderr and "cores/core.2" in proc.stderr


def test_clock_json_is_a_triple_read_at_one_instant(bundle: Path):
    clock = json.loads((bundle / "clock.json").read_text())
    assert set(clock) >= {"realtime", "monotonic", "boottime", "tz", "utc_offset_s"}
    assert all(isinstance(clock[k], float) for k in ("realtime", "monotonic", "boottime"))
    assert isinstance(clock["utc_offset_s"], int) and clock["read_gap_s"] < 0.01
    assert clock["boottime"] >= clock["monotonic"] > 0


@pytest.mark.parametrize("args", [("--since", "next tuesday-ish"), ("--pid", "999999999"), ("--pid", "0")])
def test_bad_since_or_pid_is_a_usage_error(tmp_path: Path, args):
    proc = run_collect(tmp_path / "b", os.environ["PATH"], *args)
    assert proc.returncode == 2 and args[0] in proc.stderr
    assert not (tmp_path / "b").exists()


def test_job_files_from_the_environment(tmp_path: Path):
    """NCCL_DEBUG_FILE (%h/%p expanded) and Flight Recorder dumps named by the job's environment;
    py-spy stacks of --pid, noted as missing when py-spy is not on PATH."""
    host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
    (tmp_path / f"nccl.{host}.4242.log").write_text("host:4242:4242 [0] NCCL INFO ok\n")
    (tmp_path / "fr_rank_0").write_bytes(b"\x80\x04planted pickle bytes")
    (tmp_path / "fr_rank_1").write_bytes(b"\x80\x04planted pickle bytes")
    env = {"PATH": os.environ["PATH"], "NCCL_DEBUG_FILE": str(tmp_path / "nccl.%h.%p.log"),
           "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "fr_rank_")}
    child = subprocess.Popen(["sleep", "60"], env=env)
    try:
        out = tmp_path / "b"
        proc = run_collect(out, str(tool_farm(tmp_path)), "--pid", str(child.pid))
        assert proc.returncode == 0, proc.stderr
    finally:
        child.kill()
        child.wait()
    assert "NCCL INFO ok" in (out / "logs" / "nccl" / f"nccl.{host}.4242.log").read_text()
    assert (out / "flightrec" / "fr_rank_1").read_bytes() == (tmp_path / "fr_rank_1").read_bytes()
    items = manifest_items(out)
    spy = items[f"py-spy/dump_{child.pid}.txt"]
    assert spy["status"] == "missing" and "py-spy" in spy["note"]


# ---- cores held by systemd-coredump (coredumpctl is not installed here)

FAKE_COREDUMPCTL = r'''#!{python}
# STAND-IN for coredumpctl's program interface, written by the test: NOT real output.
# Shapes from systemd's source: `--json=short list` prints the list table as a JSON array
# (src/coredump/coredumpctl.c table_new("time", "pid", "uid", "gid", "sig", "corefile", "exe",
# "size"); src/shared/format-table.c: time in µs, integers, size in bytes or null);
# `-o FILE dump PID` writes that process's core to FILE.
import gzip, json, os, sys
args = sys.argv[1:]
log = os.environ["FAKE_COREDUMPCTL_LOG"]
with open(log, "a") as f:
    f.write(" ".join(args) + "\n")
rows = [
    {{"time": 1764590000000000, "pid": 4242, "uid": 0, "gid": 0, "sig": 11, "corefile": "present",
      "exe": "/usr/bin/python3.11", "size": 17576}},
    {{"time": 1764590100000000, "pid": 4343, "uid": 0, "gid": 0, "sig": 6, "corefile": "missing",
      "exe": "/usr/bin/python3.11", "size": None}},
    {{"time": 1764590200000000, "pid": 4444, "uid": 0, "gid": 0, "sig": 7, "corefile": "journal",
      "exe": "/opt/app/train", "size": 17576}},
]
if "list" in args:
    print(json.dumps(rows))
    sys.exit(0)
if "dump" in args:
    out = args[args.index("-o") + 1]
    pid = args[-1]
    if os.environ.get("FAKE_COREDUMPCTL_LINK") == pid:
        os.symlink("/etc/passwd", out)
        sys.exit(0)
    if pid not in ("4242", "4444"):
        print("No match found.", file=sys.stderr)
        sys.exit(1)
    with gzip.open({core!r}, "rb") as src, open(out, "wb") as dst:
        dst.write(src.read())
    sys.exit(0)
sys.exit(2)
'''


def fake_coredumpctl(farm: Path) -> Path:
    script = farm / "coredumpctl"
    script.write_text(FAKE_COREDUMPCTL.format(python=sys.executable,
                                              core=str(REPO / "fixtures/cores/segv-maperr.core.gz")))
    script.chmod(0o755)
    return script


def run_with_fake(tmp_path: Path, *extra: str, link_pid: str = "") -> tuple[subprocess.CompletedProcess, Path, Path]:
    farm = tool_farm(tmp_path)
    fake_coredumpctl(farm)
    log = tmp_path / "coredumpctl.calls"
    out = tmp_path / "b"
    env = {"PATH": str(farm), "PYTHONPATH": str(REPO), **PLANTED, "FAKE_COREDUMPCTL_LOG": str(log),
           "FAKE_COREDUMPCTL_LINK": link_pid}
    proc = subprocess.run([sys.executable, "-m", "postmortem.collect", "--out", str(out), *extra],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    return proc, out, log


def test_core_of_a_pid_from_coredumpctl(tmp_path: Path):
    proc, out, log = run_with_fake(tmp_path, "--core", "4242", "--since", "2h")
    assert proc.returncode == 0, proc.stderr
    items = manifest_items(out)
    core = items["cores/core.python3.11.4242"]
    assert core["status"] == "ok" and "process's memory" in core["note"] and "sig 11" in core["note"]
    raw = (out / "cores/core.python3.11.4242").read_bytes()
    assert raw[:4] == b"\x7fELF" and len(raw) > 100_000
    calls = log.read_text().splitlines()
    assert any(c.startswith("--json=short --no-pager -q list --since ") for c in calls)
    assert any(c.endswith("dump 4242") and " -o " in c and "--since" in c for c in calls)
    manifest = json.loads((out / "manifest.json").read_text())
    assert any("process's memory" in w for w in manifest["warnings"])
    # gdb is not on this PATH: its backtrace is named as not gathered, the core is still there
    assert items["gdb_bt_core.python3.11.4242.txt"]["status"] == "missing"


def test_every_stored_core_in_the_window_and_only_stored_ones(tmp_path: Path):
    proc, out, log = run_with_fake(tmp_path, "--core", "coredumpctl")
    assert proc.returncode == 0, proc.stderr
    cores = sorted(p.name for p in (out / "cores").iterdir())
    assert cores == ["core.python3.11.4242", "core.train.4444"]     # 4343's corefile is "missing"
    calls = log.read_text().splitlines()
    assert not any(c.endswith("dump 4343") for c in calls)


def test_a_core_coredumpctl_leaves_as_a_symlink_is_refused(tmp_path: Path):
    proc, out, _ = run_with_fake(tmp_path, "--core", "4242", link_pid="4242")
    assert proc.returncode == 0, proc.stderr
    item = manifest_items(out)["cores/core.python3.11.4242"]
    assert item["status"] == "error" and "not a regular file" in item["note"]
    assert not (out / "cores/core.python3.11.4242").exists()


def test_without_the_core_flag_coredumpctl_is_never_asked_for_a_core(tmp_path: Path):
    proc, out, log = run_with_fake(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (out / "cores").exists()
    assert not log.exists() or not any(" dump " in c for c in log.read_text().splitlines())


def test_core_pid_without_coredumpctl_is_named_not_fatal(tmp_path: Path):
    out = tmp_path / "b"
    proc = run_collect(out, str(tool_farm(tmp_path)), "--core", "4242")
    assert proc.returncode == 0, proc.stderr
    item = manifest_items(out)["cores/core.4242"]
    assert item["status"] == "missing" and "coredumpctl: not found" in item["note"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert any(n.startswith("cores from coredumpctl: coredumpctl: not found") for n in manifest["not_gathered"])


def test_pid_namespaces_of_the_pid_and_its_descendants(tmp_path: Path):
    """A real process tree in its own pid namespace (unshare, when this machine allows it)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare not available")
    tree = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", "sleep 30 & sleep 30; wait"])
    try:
        deadline = 50
        kids: list[int] = []
        while deadline and len(kids) < 1:
            import time
            time.sleep(0.1)
            deadline -= 1
            kids = collect.process.descendants(tree.pid)[1:]
        out = tmp_path / "b"
        proc = run_collect(out, str(tool_farm(tmp_path)), "--pid", str(tree.pid))
        assert proc.returncode == 0, proc.stderr
        lines = (out / "pid_ns.txt").read_text().splitlines()
        assert lines[0] == f"/proc/{tree.pid}/status: NSpid:\t{tree.pid}"
        inner = [ln for ln in lines if len(ln.split("NSpid:")[1].split()) == 2]
        if not inner:
            pytest.skip("unshare --pid did not make a pid namespace here")
        assert any(ln.split()[-1] == "1" for ln in inner)     # the namespace's first process
    finally:
        tree.kill()
        tree.wait()
