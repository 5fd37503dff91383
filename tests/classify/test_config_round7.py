"""Round 7 (issue 13, area config): mechanisms for the job's own side, each tested on a real line
(the fixture it comes from is named beside it) and on a near miss that must not fire.  Edits made
at test time are marked as such."""
from __future__ import annotations

from pathlib import Path

from postmortem import knowledge
from postmortem.classify import rules
from postmortem.classify.rules.hang import CgroupHeldBack
from postmortem.classify.rules.config import PidsLimitRefused
from postmortem.parsers.pytrace import is_exception_name
from postmortem.run import analyze

from tests.classify.arrange import analyze_files as _bundle

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
K = knowledge.load()

_PIPED = FIXTURES / "validation24/lab-c/lab6-console-piped-to-head-brokenpipe/bundle/terminal.txt"
_RAGGED = FIXTURES / "validation24/lab-c/lab6-ragged-reviews-default-collate/bundle"
_PANO = FIXTURES / "validation24/lab-c/lab6-ulimit-v-pano-decode-buffer/bundle"
_SHM_WORKER = FIXTURES / "bundles/lab-shm-worker-enospc/bundle"       # real: fixtures/lab/shm_worker_enospc.sh
_WORKER_SEGV = FIXTURES / "validation24/lab-c/lab6-deep-json-record-worker-segv/bundle"


def _rank1_traceback() -> str:
    """Rank 1's traceback from the piped terminal (real), with torchrun's summary after it."""
    lines = _PIPED.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("[rank1]: Traceback"))
    return "\n".join(lines[start:start + 6]) + "\n"


# ---------------------------------------------------------------- pytrace: private exception classes

def test_a_private_exception_class_is_read_as_an_exception():
    # numpy/_core/_exceptions.py: class _ArrayMemoryError(MemoryError); the real line ends the
    # worker's Original Traceback in lab6-ulimit-v-pano-decode-buffer/bundle/launcher.log.
    case = analyze(_PANO).case
    lines = [e.text for e in case.events if e.kind == "py.exception"]
    assert any(t.startswith("numpy._core._exceptions._ArrayMemoryError: Unable to allocate 11.9 GiB") for t in lines)
    assert is_exception_name("numpy._core._exceptions._ArrayMemoryError")
    # near miss: a lower-case private word is no exception name
    assert not is_exception_name("_private_error") and not is_exception_name("__init__")


# ---------------------------------------------------------------- BrokenPipeError: whose write

def test_broken_pipe_raised_by_the_job_s_own_print_is_its_own_failure(tmp_path):
    a = _bundle(tmp_path, {"terminal.txt": _rank1_traceback()})
    assert a.verdict.cause == "app_error", a.verdict.trace
    assert a.verdict.root.signal == "app.exception_in_own_code"


def test_broken_pipe_raised_inside_a_library_stays_a_peer_s_fallout(tmp_path):
    # Edited at test time: the same real traceback with the write moved into multiprocessing's
    # connection (a library frame): a pipe to another process closed -- a peer's end, no claim.
    text = _rank1_traceback().replace(
        '[rank1]: BrokenPipeError',
        '[rank1]:   File "/root/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/connection.py", '
        'line 373, in _send\n[rank1]:     n = write(self._handle, buf)\n[rank1]: BrokenPipeError')
    a = _bundle(tmp_path, {"terminal.txt": text})
    assert not any(f.rule == "app-error" for f in rules.AppError().findings(a.case, K, []))
    assert a.verdict.cause != "app_error"


def test_a_connection_reset_in_a_library_after_a_worker_segfault_is_not_the_job_s_exception():
    # Real: lab6-deep-json-record-worker-segv, rank 1's ConnectionResetError raised in
    # multiprocessing/connection.py after its worker died: fallout, the worker crash is the cause.
    v = analyze(_WORKER_SEGV).verdict
    assert v.cause == "dataloader_worker_crash", v.trace
    assert not any("ConnectionResetError" in f.summary for f in rules.AppError().findings(analyze(_WORKER_SEGV).case, K, []))


# ---------------------------------------------------------------- an exception from the job's dataset

def test_an_exception_raised_through_the_dataloader_fetch_is_the_job_s_data():
    # Real: default_collate's torch.stack failing on ragged rows inside the worker's fetch().
    a = analyze(_RAGGED)
    assert a.verdict.cause == "app_error", a.verdict.trace
    assert a.verdict.root.signal == "app.exception_in_dataset" and a.verdict.root.strength == "strong"
    assert "stack expects each tensor to be equal size" in a.verdict.root.summary


def test_an_exception_in_fetch_with_a_reading_of_its_own_keeps_that_reading():
    # Near miss (real, fixtures/lab/shm_worker_enospc.sh): collate's shared-memory allocation
    # failing with ENOSPC is raised through fetch() too, but its message reads as /dev/shm full.
    a = analyze(_SHM_WORKER)
    assert a.verdict.cause == "shm_exhausted", a.verdict.trace
    assert not any(f.signal == "app.exception_in_dataset" for f in rules.AppError().findings(a.case, K, []))


def test_an_exception_in_the_job_s_own_dataset_code_is_raised_in_own_code(tmp_path):
    # Edited at test time: the real pano traceback (the job's __getitem__ frame first) with numpy's
    # allocation refusal swapped for numpy's own argument error of np.empty ('negative dimensions are
    # not allowed'): raised at the job's own line inside the DataLoader's fetch, in own code first.
    text = (_PANO / "launcher.log").read_text(encoding="utf-8")
    refused = next(ln for ln in text.splitlines() if ln.startswith("numpy._core._exceptions._ArrayMemoryError"))
    text = text.replace(refused, "ValueError: negative dimensions are not allowed").replace(
        "Caught MemoryError in DataLoader", "Caught ValueError in DataLoader")
    v = _bundle(tmp_path, {"launcher.log": text}).verdict
    assert v.cause == "app_error" and v.root.signal == "app.exception_in_own_code", v.trace


def test_the_allocation_refused_under_ulimit_v_in_the_job_s_own_dataset_code_is_memory():
    # Real, unedited: numpy's _ArrayMemoryError under `ulimit -v` (ulimit_a.txt) is the memory
    # reading, never the job's own code (audit 12 M2: messages.toml python_memory_error beside the
    # limit, rule memory-limit-set)
    v = analyze(_PANO).verdict
    assert v.cause == "host_oom", v.trace
    assert "resolve: host_oom rests on 2 independent weak signs: memory.limit_set, msg.python_memory_error" in v.trace


# ---------------------------------------------------------------- a cgroup that held the job's ranks back

_FREEZER_LAB = FIXTURES / "validation23/lab-c/lab5-node1-container-paused-freezer/bundle"
_CPU_LAB = FIXTURES / "validation24/lab-a/lab6-node0-cpu-limit-10m-straggler/bundle"
_CGROUP = FIXTURES / "cgroup_state"            # real: fixtures/cgroup_state/make.sh


def _timeout_rank0() -> str:
    """Rank 0's real gloo timeout (the freezer lab's node0.log: traceback and the timeout line)."""
    lines = (_FREEZER_LAB / "node0.log").read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[7:21]) + "\n"


def _held_back(case):
    return [f for f in CgroupHeldBack().findings(case, K, []) if f.rule == "cgroup-held-back"]


def test_a_frozen_group_beside_a_collective_timeout_is_a_straggler():
    v = analyze(_FREEZER_LAB).verdict
    assert v.cause == "straggler_timeout" and v.root.signal == "cgroup.frozen_during_hang", v.trace
    assert any(r.path.endswith("node1_ps.txt") for r in v.root.evidence)


def test_a_frozen_then_thawed_group_or_a_frozen_group_without_a_hang_says_nothing(tmp_path):
    # freezer.txt (real) holds FROZEN then THAWED: only FROZEN is a frozen group
    a = _bundle(tmp_path, {"node0.log": _timeout_rank0(),
                           "freezer.txt": (_CGROUP / "freezer.txt").read_text(encoding="utf-8").splitlines()[-1] + "\n"})
    assert not _held_back(a.case)
    b = _bundle(tmp_path / "b", {"freezer.txt": (_CGROUP / "freezer.txt").read_text(encoding="utf-8")})
    assert not _held_back(b.case)   # no timeout: a frozen group alone is no failure


def test_a_cpu_starved_group_beside_a_timeout_leans_straggler_and_pairs_with_a_silent_rank(tmp_path):
    a = _bundle(tmp_path, {"node0.log": _timeout_rank0(), "cpu.txt": (_CGROUP / "cpu_starved.txt").read_text(encoding="utf-8")})
    (f,) = _held_back(a.case)
    assert f.signal == "cgroup.cpu_throttled_during_hang" and f.strength == "weak" and "15 of 16" in f.summary
    v = analyze(_CPU_LAB).verdict   # the lab: rank 0's container throttled, rank 0 silent
    assert v.cause == "straggler_timeout", v.trace
    assert any("independent weak signs" in t and "timeout.silent_ranks" in t and "cgroup.cpu_throttled_during_hang" in t
               for t in v.trace), v.trace


def test_a_group_that_was_never_throttled_says_nothing(tmp_path):
    # near miss (real): the same loop under a 4-CPU quota, 0 of 15 periods throttled
    a = _bundle(tmp_path, {"node0.log": _timeout_rank0(), "cpu.txt": (_CGROUP / "cpu_generous.txt").read_text(encoding="utf-8")})
    assert not _held_back(a.case)


# ---------------------------------------------------------------- a task limit refused the job's threads

_PIDS_LAB = FIXTURES / "validation23/lab-c/lab5-container-pids-limit-omp-threads/bundle"
_EAGAIN = "libgomp: Thread creation failed: Resource temporarily unavailable\n"     # real: _PIDS_LAB/launcher.log
_PIDS_KERNEL = "[40728.904542] cgroup: fork rejected by pids controller in /pm5c-job2\n"  # real: _PIDS_LAB/dmesg.txt


def test_the_job_s_eagain_and_its_group_s_pids_refusal_claim_together():
    # the job's EAGAIN (with the kernel's line, one refusal read twice: audit 7 M14) and its group's
    # measured refusals (pids.events), which say which limit refused it
    v = analyze(_PIDS_LAB).verdict
    assert v.cause == "app_error", v.trace
    assert any("2 independent weak signs: msg.task_create_eagain, limits.pids_refused" in t for t in v.trace), v.trace
    assert any(a.startswith("Lower the threads per process") for a in v.remediation)


def test_either_sign_of_a_task_limit_alone_only_leans(tmp_path):
    a = _bundle(tmp_path / "a", {"launcher.log": _EAGAIN})
    assert a.verdict.cause == "unknown" and "app_error" in " ".join(a.verdict.trace)
    b = _bundle(tmp_path / "b", {"dmesg.txt": _PIDS_KERNEL})
    assert b.verdict.cause == "unknown"


def test_the_pids_counter_counts_the_kernel_s_refusals_once():
    # pids.events `max 4` and the kernel's first-refusal line read the same refused forks
    from postmortem.knowledge.registry import registry
    failures = registry().failures
    # and the job's EAGAIN is one of those refusals: the kernel line unread for its group adds nothing to it
    assert failures["catalog.k.pids_fork_rejected"] == failures["msg.task_create_eagain"]
    assert "limits.pids_refused" not in failures
    case = analyze(_PIDS_LAB).case
    (f,) = PidsLimitRefused().findings(case, K, [])
    assert f.signal == "limits.pids_refused" and "refused 4 task creation(s)" in f.summary and "limit of 24" in f.summary


def test_a_refused_count_without_the_job_s_eagain_says_nothing(tmp_path):
    # near miss: the group's counter (real file) with no thread-creation failure in the job's log
    text = (_PIDS_LAB / "container_pids_cgroup.txt").read_text(encoding="utf-8")
    a = _bundle(tmp_path, {"container_pids_cgroup.txt": text})
    assert not PidsLimitRefused().findings(a.case, K, [])


def test_a_thread_creation_refused_by_seccomp_is_no_task_limit(tmp_path):
    # near miss (public: a deployment note quoting OpenBLAS under a strict Docker seccomp profile,
    # clone3 blocked): EPERM, not EAGAIN -- no limit was reached.
    a = _bundle(tmp_path, {"worker.log": "OpenBLAS blas_thread_init: pthread_create failed for thread 52 of 64: "
                                         "Operation not permitted\n"})
    assert not [e for e in a.case.events if e.kind == "msg.task_create_eagain"]
    b = _bundle(tmp_path / "b", {"worker.log": "OpenBLAS blas_thread_init: pthread_create failed for thread 26 of 32: "
                                               "Resource temporarily unavailable\n"})   # public: the same program at RLIMIT_NPROC
    assert [e for e in b.case.events if e.kind == "msg.task_create_eagain"]


def test_a_rank_s_process_waiting_in_the_freezer_beside_a_timeout_is_a_straggler(tmp_path):
    # ps's view of the same freeze (real rows of the freezer lab's node1_ps.txt, without its
    # freezer.state lines) beside rank 0's real timeout
    ps = (_FREEZER_LAB / "node1_ps.txt").read_text(encoding="utf-8").splitlines()[:5]
    a = _bundle(tmp_path, {"node0.log": _timeout_rank0(), "node1_ps.txt": "\n".join(ps) + "\n"})
    assert a.verdict.cause == "straggler_timeout" and a.verdict.root.signal == "cgroup.frozen_during_hang", a.verdict.trace


def test_an_os_call_failing_inside_the_dataset_is_no_strong_sign_of_its_code(tmp_path):
    # Edited at test time: the ragged lab's real worker traceback, its last line replaced by an
    # EIO (a failing disk answers the dataset's read): the environment, so only the weak sign.
    lines = (_RAGGED / "console.log").read_text(encoding="utf-8").splitlines()
    end = next(i for i, ln in enumerate(lines) if "stack expects each tensor to be equal size" in ln)
    start = next(i for i in range(end, -1, -1) if "Original Traceback" in lines[i])
    text = "\n".join(ln.split("]: ", 2)[-1] for ln in lines[start:end]) + "\nOSError: [Errno 5] Input/output error\n"
    a = _bundle(tmp_path, {"train.log": text})
    fs = [f for f in rules.AppError().findings(a.case, K, []) if "Errno 5" in f.summary]
    # weak either way: the job's weak exception, or (EIO reports the device: audit 7 H7) the storage's
    assert fs and all(f.signal in ("app.exception", "storage.job_io_errno") and f.strength == "weak" for f in fs)
