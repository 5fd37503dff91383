"""`postmortem check` against the machine's memory, and num_workers=0 (issue 16)."""
from __future__ import annotations

import argparse
import json

from conftest import run_cli
from postmortem import check


def test_a_need_beyond_physical_memory_says_need_less_not_a_shm_size():
    # 16 workers x 4 x 1 TiB x 8 x 1.25 = 640 TiB: more than any host this runs on.
    r = run_cli("check", "--workers", "16", "--prefetch", "4", "--batch-bytes", "1T", "--procs", "8", "--json")
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert doc["exceeds_memory"] is True and doc["memory"]["total_bytes"] > 0
    assert not any("--shm-size" in f or "shm_size" in f for f in doc["fixes"])
    assert any(f.startswith("need less") for f in doc["fixes"])
    text = run_cli("check", "--workers", "16", "--prefetch", "4", "--batch-bytes", "1T", "--procs", "8").stdout
    assert "host memory:" in text and "no --shm-size can hold it" in text


def test_a_need_that_fits_in_ram_gets_a_shm_size(tmp_path):
    args = argparse.Namespace(shm=str(tmp_path), workers=2, prefetch=2, batch_bytes=1 << 40, procs=1)
    big = check.Memory(total_bytes=1 << 50, available_bytes=None)
    result = check.evaluate(args, memory=big)
    assert result.fits is False and not result.exceeds_memory
    assert any("--shm-size=" in f for f in result.fixes)


def test_meminfo_is_read_in_bytes(tmp_path):
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       24686528 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n")
    assert check.read_memory(str(f)) == check.Memory(24686528 * 1024, 20000000 * 1024)


def test_zero_workers_is_a_valid_dataloader_setting():
    r = run_cli("check", "--workers", "0", "--batch-bytes", "1G", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["need"]["bytes"] == 0 and doc["fits"] is True
    assert run_cli("check", "--workers", "-1", "--batch-bytes", "1G").returncode == 2


def test_only_a_ram_backed_mount_is_compared_with_memory(tmp_path):
    m = tmp_path / "mounts"
    m.write_text("overlay / overlay rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n/dev/sda1 /data ext4 rw 0 0\n")
    assert check.is_tmpfs("/dev/shm", str(m)) and not check.is_tmpfs("/data/x", str(m))
    assert check.is_tmpfs("/dev/shm", str(tmp_path / "missing"))
