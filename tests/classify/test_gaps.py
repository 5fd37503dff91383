"""General mechanisms for misses the development sets showed (issue 13, round 5): each is read
from the program that prints the evidence.  Positive cases use real lines from the lab bundles
named beside them (fixtures/lab/*.sh made them); near misses are variants generated at test time
and marked as such."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _bundle(tmp_path: Path, files: dict[str, str]):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for name, text in files.items():
        (bundle / name).write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


def _lines(case: str, name: str, first: int, last: int) -> str:
    text = (FIXTURES / "bundles" / case / "bundle" / name).read_text(encoding="utf-8").splitlines()
    return "\n".join(text[first - 1:last]) + "\n"


# ---------------------------------------------------------------- (a) a read-only /dev/shm

def _semlock_erofs() -> str:
    """Rank 0's traceback from fixtures/bundles/lab-readonly-shm-loader (real, torch 2.13 CPU)."""
    text = (FIXTURES / "bundles/lab-readonly-shm-loader/bundle/train.log").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith("[rank0]: Traceback"))
    end = next(i for i, line in enumerate(text) if "[Errno 30]" in line)
    return "\n".join(text[start:end + 1]) + "\n"


def test_erofs_creating_a_semaphore_in_dev_shm_is_the_container_setting(tmp_path):
    v = _bundle(tmp_path, {"train.log": _semlock_erofs()})
    assert (v.category.value, v.cause) == ("config", "shm_permissions"), v.trace


def test_a_read_only_mount_line_is_a_second_sign_beside_the_failed_create(tmp_path):
    mount = _lines("lab-readonly-shm-loader", "mount.txt", 1, 10**6)
    v = _bundle(tmp_path, {"train.log": _semlock_erofs(), "mount.txt": mount})
    assert v.cause == "shm_permissions" and "shm.mounted_read_only" in v.root.signs, v.trace


def test_erofs_writing_a_checkpoint_elsewhere_is_not_shared_memory(tmp_path):
    # Near miss (generated): the same errno from torch.save on a read-only data volume.
    tb = ("Traceback (most recent call last):\n"
          '  File "/w/proj/train.py", line 88, in save\n'
          "    torch.save(state, path)\n"
          "OSError: [Errno 30] Read-only file system: '/data/ckpt/step1000.pt'\n")
    v = _bundle(tmp_path, {"train.log": tb})
    assert v.cause != "shm_permissions", v.trace


def test_a_read_only_dev_shm_alone_claims_nothing(tmp_path):
    # The mount table of the lab bundle, with no failure beside it: a setting, not a crash.
    mount = _lines("lab-readonly-shm-loader", "mount.txt", 1, 10**6)
    v = _bundle(tmp_path, {"mount.txt": mount})
    assert v.cause == "unknown", v.trace


# ---------------------------------------------------------------- (b) ENOMEM under a memlock limit

_MLOCK = FIXTURES / "validation22/lab4-mlock-cache-memlock/bundle"   # real lab lines (README-lab.md)


def _mlock_files(**replace: str) -> dict[str, str]:
    files = {name: (_MLOCK / name).read_text(encoding="utf-8") for name in ("torchrun.log", "ulimit.txt", "free.txt")}
    for name, (old, new) in ((n.replace("_", "."), r.split("|", 1)) for n, r in replace.items()):
        assert old in files[name]
        files[name] = files[name].replace(old, new)
    return files


def test_enomem_with_a_finite_memlock_limit_and_memory_free_is_the_memlock_limit(tmp_path):
    v = _bundle(tmp_path, _mlock_files())
    assert (v.category.value, v.cause) == ("config", "memlock_limit"), v.trace
    assert {"limits.memlock_beside_enomem", "mem.enomem_with_memory_free"} <= set(v.root.signs)


def test_enomem_with_memlock_unlimited_stays_host_memory(tmp_path):
    # Near miss (the real files, memlock edited to unlimited at test time): the limit cannot refuse.
    v = _bundle(tmp_path, _mlock_files(ulimit_txt="(kbytes, -l) 8192|(kbytes, -l) unlimited"))
    assert v.cause == "host_oom", v.trace


def test_enomem_on_a_host_short_of_memory_is_not_read_as_the_limit(tmp_path):
    # Near miss (edited at test time): 1 GiB of 23 available — the host's memory may be what ran out.
    v = _bundle(tmp_path, _mlock_files(free_txt="4.7Gi        20Gi|4.7Gi        1.0Gi"))
    assert v.cause != "memlock_limit", v.trace
