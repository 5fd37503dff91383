"""A DataLoader worker that exited by itself with a non-zero status (torch/csrc/DataLoader.cpp:
waitid() says CLD_EXITED) is the worker's own code or a library it calls -- not the OOM killer,
a full /dev/shm or a segfault, which kill it by a signal and print 'is killed by signal'
(messages.toml dataloader_worker_exit_code).  Lines are real: lab runs in fixtures/ (their
make.sh beside them); bundles made of them are arranged at test time."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
TILE = FIX / "validation22" / "lab4-tile-decoder-exits-worker" / "bundle"      # C decoder's exit(1)
ARGPARSE = FIX / "validation24" / "lab-a" / "lab6-aug-lib-argparse-exits-loader-worker" / "bundle"
MEMCG = FIX / "validation21" / "lab3-worker-cache-memcg-oom" / "bundle"        # worker OOM-killed
SIGN = "msg.dataloader_worker_exit_code"


def _line(path: Path, needle: str) -> str:
    return next(l for l in path.read_text(encoding="utf-8").splitlines(keepends=True) if needle in l)


def _one_file(tmp_path: Path, text: str) -> Path:
    b = tmp_path / "bundle"
    b.mkdir()
    (b / "train.log").write_text(text, encoding="utf-8")
    return b


def _signs(v) -> str:
    return " ".join(v.trace)


def test_the_exit_code_line_alone_names_the_worker_crash(tmp_path):
    line = _line(TILE / "torchrun.log", "exited unexpectedly with exit code 1")
    v = analyze(_one_file(tmp_path, line)).verdict
    assert (v.category.value, v.cause) == ("config", "dataloader_worker_crash"), v.trace
    assert 0.35 <= v.confidence < 0.8, v.confidence


def test_the_same_death_raised_again_from_python_is_not_a_second_sign(tmp_path):
    # the real pair of the run: the C++ check's line and dataloader.py's 'exited unexpectedly'
    # raised from it -- one death ([failure] dataloader.worker_death), support stays the one sign's
    text = (_line(TILE / "torchrun.log", "exited unexpectedly with exit code 1")
            + _line(TILE / "torchrun.log", "DataLoader worker (pid(s) 28519) exited unexpectedly"))
    v = analyze(_one_file(tmp_path, text)).verdict
    assert v.cause == "dataloader_worker_crash", v.trace
    assert "support 0.60 " in _signs(v), v.trace
    assert "independent weak signs" not in _signs(v)


def test_the_lab_runs_claim_the_worker_crash():
    for bundle in (TILE, ARGPARSE):
        v = analyze(bundle).verdict
        assert (v.category.value, v.cause) == ("config", "dataloader_worker_crash"), (bundle, v.trace)


def test_a_worker_killed_by_a_signal_is_not_read_as_exiting_by_itself(tmp_path):
    # near miss, real: the OOM killer's SIGKILL of a worker -- 'is killed by signal: Killed.' and
    # then the generic 'exited unexpectedly' (no exit code): the new reading must not fire
    text = (_line(MEMCG / "stderr.txt", "is killed by signal: Killed")
            + _line(MEMCG / "stderr.txt", "exited unexpectedly"))
    assert "with exit code" not in text
    v = analyze(_one_file(tmp_path, text)).verdict
    assert SIGN not in _signs(v) and "dataloader_worker_exit_code" not in _signs(v)
    assert v.cause != "dataloader_worker_crash" or v.confidence < 0.35, v.trace
    whole = analyze(MEMCG).verdict
    assert whole.cause == "host_oom", whole.trace


def test_a_worker_dead_of_sigbus_on_a_full_dev_shm_stays_shm():
    # near miss, real (fixtures/lab/shm_worker_sigbus.sh): 'is killed by signal: Bus error' on a 64M /dev/shm
    bundle = FIX / "bundles" / "lab-shm-worker-sigbus" / "bundle"
    v = analyze(bundle).verdict
    assert v.cause == "shm_exhausted", v.trace
    assert "dataloader_worker_exit_code" not in _signs(v)


ENDS = FIX / "lab" / "dataloader_worker_ends"   # REAL: fixtures/lab/dataloader_worker_ends/make.sh (torch 2.13 CPU)


def test_a_real_worker_ending_itself_is_read_and_a_real_signal_death_is_not(tmp_path):
    # one program, four ways a worker ends: sys.exit(3) and os._exit(3) are CLD_EXITED (the new
    # reading); SIGSEGV and SIGKILL are CLD_KILLED ('is killed by signal'), which it must not read
    for how, fires in (("exit", True), ("os_exit", True), ("segv", False), ("kill", False)):
        b = tmp_path / how
        b.mkdir()
        (b / "train.log").write_bytes((ENDS / f"{how}.log").read_bytes())
        v = analyze(b).verdict
        assert ("dataloader_worker_exit_code x1" in _signs(v)) is fires, (how, v.trace)
        if fires:
            assert v.cause == "dataloader_worker_crash" and "support 0.60 " in _signs(v), (how, v.trace)


def test_the_segfault_line_and_its_python_echo_are_one_death(tmp_path):
    # near miss of a double count: the worker's handler line, the main's 'is killed by signal:
    # Segmentation fault.' and dataloader.py's 'exited unexpectedly' are one worker's one death
    b = tmp_path / "segv"
    b.mkdir()
    (b / "train.log").write_bytes((ENDS / "segv.log").read_bytes())
    v = analyze(b).verdict
    assert v.cause == "dataloader_worker_crash", v.trace
    support = next(t for t in v.trace if t.startswith("resolve: dataloader_worker_crash support"))
    assert "support 0.66 " in support, support
