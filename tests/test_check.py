"""`postmortem check`: fit / no fit against a real tmpfs (or a temp dir via --shm), exit codes, sizes."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem import check
from postmortem.sizes import parse_size_argument

REPO = Path(__file__).resolve().parents[1]


def run_check(*args: str, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "postmortem.check", *args], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=60, preexec_fn=preexec)


def avail(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@pytest.mark.parametrize("text,expected", [
    ("512M", 512 * 1024**2),
    ("1.5G", int(1.5 * 1024**3)),
    ("1GiB", 1024**3),
    ("1gib", 1024**3),
    ("2GB", 2 * 1000**3),
    ("64m", 64 * 1024**2),
    ("1048576", 1048576),
    ("100B", 100),
    (" 4K ", 4096),
])
def test_parse_size_argument(text: str, expected: int):
    assert parse_size_argument(text) == expected


@pytest.mark.parametrize("text", ["", "M", "1.2.3G", "12X", "-1G", "1 GiBs"])
def test_parse_size_argument_rejects(text: str):
    with pytest.raises(ValueError):
        parse_size_argument(text)


def test_need_formula():
    need = check.shm_need(workers=8, prefetch=2, batch_bytes=64 * 1024**2, procs=4)
    assert need.bytes == int(8 * 2 * 64 * 1024**2 * 4 * check.SHM_MARGIN)


def test_fits(tmp_path: Path):
    proc = run_check("--shm", str(tmp_path), "--workers", "2", "--batch-bytes", "1M")
    assert proc.returncode == 0, proc.stderr
    assert "fits" in proc.stdout


def test_does_not_fit_prints_the_fixes(tmp_path: Path):
    too_big = str(avail(tmp_path))  # x1 x2 x1.25 > available
    proc = run_check("--shm", str(tmp_path), "--workers", "1", "--batch-bytes", too_big)
    assert proc.returncode == 3
    for fix in ("--shm-size=", "shm_size:", "medium: Memory", "sizeLimit:"):
        assert fix in proc.stdout


def test_json_output(tmp_path: Path):
    proc = run_check("--shm", str(tmp_path), "--workers", "4", "--prefetch", "3", "--batch-bytes", "2M",
                     "--procs", "2", "--json")
    report = json.loads(proc.stdout)
    assert report["need"]["bytes"] == int(4 * 3 * 2 * 1024**2 * 2 * 1.25)
    assert report["fits"] is True and report["exit_code"] == proc.returncode == 0


def test_no_need_given_is_not_a_failure(tmp_path: Path):
    proc = run_check("--shm", str(tmp_path), "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["need"] is None


@pytest.mark.parametrize("args", [
    ["--workers", "2"],                                  # batch size missing
    ["--workers", "-1", "--batch-bytes", "1M"],            # 0 is valid (tests/test_check_ux.py)
    ["--workers", "2", "--batch-bytes", "lots"],
    ["--shm", "/nonexistent/shm", "--workers", "1", "--batch-bytes", "1M"],
])
def test_usage_errors_exit_2(args: list[str]):
    assert run_check(*args).returncode == 2


def test_low_nofile_warns():
    def lower_nofile():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    proc = run_check("--json", preexec=lower_nofile)
    ids = [w["id"] for w in json.loads(proc.stdout)["warnings"]]
    assert "nofile_low" in ids


def test_leftover_segments_warn(tmp_path: Path):
    (tmp_path / "torch_123_456_0").write_bytes(b"x" * 4096)
    proc = run_check("--shm", str(tmp_path), "--json")
    assert "shm_leftovers" in [w["id"] for w in json.loads(proc.stdout)["warnings"]]


def test_docker_default_64m_warns(tmp_path: Path):
    shm = check.Shm(str(tmp_path), check.DOCKER_DEFAULT_SHM, check.DOCKER_DEFAULT_SHM, 0)
    assert check.warn_docker_default(shm, None).id == "shm_docker_default"
    assert check.warn_docker_default(check.Shm("x", 2 * check.DOCKER_DEFAULT_SHM, 0, 0), None) is None


needs_root = pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/unshare").exists(),
                                reason="mounting a tmpfs needs root and unshare")


@needs_root
def test_real_64m_tmpfs(tmp_path: Path):
    """A private 64 MiB tmpfs, as Docker gives: 2 workers x 8 MiB batches fit, 8 workers do not."""
    mnt = tmp_path / "shm"
    mnt.mkdir()
    runs = {"small": "2", "large": "8"}
    script = f"mount -t tmpfs -o size=64m tmpfs {mnt} || exit 99; " + "; ".join(
        f"{sys.executable} -m postmortem.check --shm {mnt} --workers {n} --batch-bytes 8M --json"
        f" > {tmp_path / name}.json; echo $? > {tmp_path / name}.rc" for name, n in runs.items())
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    if proc.returncode == 99:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    small = json.loads((tmp_path / "small.json").read_text())
    large = json.loads((tmp_path / "large.json").read_text())
    assert small["shm"]["size_bytes"] == 64 * 1024**2
    assert "shm_docker_default" in [w["id"] for w in small["warnings"]]
    assert (small["fits"], large["fits"]) == (True, False)
    assert [(tmp_path / f"{name}.rc").read_text().strip() for name in runs] == ["0", "3"]
