"""Round 12, the job's own code failing THROUGH a library: an exception torch raises for the
job's use of it (DDP's reducer, torch.load's format checks: catalogs/pytorch.json), the same
exception at the same own line on every rank that printed a traceback (app.exception_every_rank,
a second sign beside app.exception), an ImportError whose module file is one of the job's own
(app.import_from_own_file), and a SIGSEGV inside the interpreter's C API called by the job's
native function (app.native_frames).  Near misses: one rank alone, a peer's death, a read-only
filesystem, memory no host holds, two libraries disagreeing, the C API called from ctypes itself.
REAL runs: fixtures/lab/rank_raises_through.sh, import_shadow.sh, capi_without_gil.sh."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem.knowledge import catalog
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "fixtures/lab/output"


def _console(name: str) -> str:
    return (OUT / name / "console.log").read_text(encoding="utf-8")


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "console.log").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


def _copied(tmp_path: Path, source: Path, pattern: str = "*.log"):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for f in source.glob(pattern):
        shutil.copy(f, bundle / f.name)
    return analyze(bundle).verdict


def _every_rank(v) -> bool:
    return any("app.exception_every_rank" in line for line in v.trace if line.startswith("resolve:"))


def _readings(v):
    return [f for f in (v.root, *v.alternatives, *v.symptoms) if f is not None]


@pytest.mark.parametrize("name,entry,line", [
    # messages.toml ddp_unfinished_reduction (both of the reducer's wordings)
    ("lab-through-static_graph", "msg.ddp_unfinished_reduction",
     "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your training graph has changed"),
    ("lab-through-unused", "msg.ddp_unfinished_reduction",
     "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used"),
    ("lab-through-mmap_legacy", "pt.load_mmap_legacy_format", "RuntimeError: mmap can only be used with files saved with `torch.save("),
])
def test_torchs_check_of_the_jobs_use_is_the_jobs_code(tmp_path, name, entry, line):
    text = _console(name)
    assert f"[rank0]: {line}" in text and f"[rank1]: {line}" in text
    v = _verdict(tmp_path, text)
    assert (v.category.value, v.cause) == ("config", "app_error")
    assert v.root.signal.endswith(entry) and v.root.strength == "strong"


def test_the_static_graph_check_raised_in_backward_is_read_too():
    # The reducer's other wording (raised in backward), as the validation29 lab run printed it
    line = ("RuntimeError: Your training graph has changed in this iteration, e.g., one parameter is unused in first "
            "iteration, but then got used in the second iteration. this is not compatible with static_graph set to True.")
    m = catalog.match_message(line, ("pytorch",))
    assert m is not None and (m.entry.id, m.cause) == ("pt.ddp_static_graph_changed", "app_error")


def test_every_rank_raising_alike_at_one_own_line_is_a_second_sign(tmp_path):
    text = _console("lab-through-corrupt_all")
    assert text.count("invalid header or archive is corrupted") >= 2
    v = _verdict(tmp_path, text)
    assert (v.category.value, v.cause) == ("config", "app_error")
    assert _every_rank(v) and v.confidence < 0.8
    assert any("every rank that printed a traceback" in line or "raised the same exception" in line for line in v.trace)


def test_one_rank_alone_stays_a_lean(tmp_path):
    text = _console("lab-through-corrupt_one")
    assert "[rank1]: RuntimeError: PytorchStreamReader failed" in text and "Connection closed by peer" in text
    v = _verdict(tmp_path, text)
    assert v.cause == "unknown" and not _every_rank(v)
    assert any(f.cause == "app_error" and f.signal == "app.exception" for f in v.alternatives)


def test_a_rank_raising_at_another_line_breaks_the_agreement(tmp_path):
    # Edited at test time: rank 0's innermost own frame moved to another line of the job's file.
    text = _console("lab-through-corrupt_all")
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("[rank0]:") and "in load_init" in ln)
    lines[at] = lines[at].replace("line 83,", "line 84,")
    v = _verdict(tmp_path, "\n".join(lines) + "\n")
    assert v.cause == "unknown" and not _every_rank(v)


@pytest.mark.parametrize("name,line", [
    # a peer killed: the survivors raise gloo's closed connection at the same own line
    ("lab-through-peer_killed", "Connection closed by peer"),
    # a read-only filesystem: torch's C++ wraps the errno's text (no "[Errno N]")
    ("lab-through-readonly", "open file failed with strerror: Read-only file system"),
    # memory: numpy refuses the allocation on every rank
    ("lab-through-alloc_all", "_ArrayMemoryError: Unable to allocate 64.0 TiB"),
    # a CPU-only wheel asked for a GPU: raised in torch/cuda's lazy init on every rank
    ("lab-through-cuda_on_cpu", "AssertionError: Torch not compiled with CUDA enabled"),
])
def test_the_same_exception_everywhere_for_a_cause_outside_the_program_is_no_second_sign(tmp_path, name, line):
    text = _console(name)
    assert f"[rank0]: " in text and sum(ln.startswith(("[rank0]:", "[rank1]:")) and line in ln
                                       for ln in text.splitlines()) >= 2
    v = _verdict(tmp_path, text)
    assert not _every_rank(v)
    # (numpy's MemoryError at the job's own line is memory too: messages.toml python_memory_error, audit 12 M2)
    assert v.cause != "app_error"


def test_the_strerror_texts_are_what_the_generator_prints_for_its_python():
    data = json.loads((ROOT / "postmortem/knowledge/catalogs/python_exceptions.json").read_text(encoding="utf-8"))
    if data["version"].rsplit(".", 1)[0] != f"{sys.version_info.major}.{sys.version_info.minor}":
        pytest.skip(f"generated with Python {data['version']}")
    out = subprocess.run([sys.executable, str(ROOT / "tools/catalogs/gen_python_exceptions.py")],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["strerror"] == data["strerror"]
    assert {"Read-only file system", "No space left on device", "Stale file handle"} <= catalog.strerror_texts()


def test_an_import_from_a_file_of_the_jobs_checkout_is_the_jobs(tmp_path):
    node1 = (OUT / "lab-import-shadow" / "node1_console.log").read_text(encoding="utf-8")
    node0 = (OUT / "lab-import-shadow" / "node0_console.log").read_text(encoding="utf-8")
    assert "ImportError: cannot import name 'Number' from 'numbers' (" in node1 and "torch/_tensor.py" in node1
    assert "DistStoreError: wait timeout" in node0
    v = _copied(tmp_path, OUT / "lab-import-shadow")
    assert (v.category.value, v.cause) == ("config", "app_error")
    assert v.root.signal == "app.import_from_own_file" and v.root.strength == "strong"
    assert "ctr-train/numbers.py" in v.root.summary


def test_two_libraries_disagreeing_is_no_file_of_the_jobs(tmp_path):
    text = _console("lab-import-library")
    assert "ImportError: cannot import name 'align_spans_v2' from 'spancore' (" in text and "/site-packages/spancore/" in text
    v = _verdict(tmp_path, text)
    assert v.cause == "unknown"
    assert not any(f.signal == "app.import_from_own_file" for f in _readings(v))


def test_the_interpreters_c_api_faulting_under_the_jobs_native_function_is_the_jobs(tmp_path):
    bt = (OUT / "lab-capi-cdll" / "bundle" / "gdb_bt.txt").read_text(encoding="utf-8")
    assert "PyList_New" in bt and "ids_to_list" in bt and "libffi" in bt
    v = _copied(tmp_path, OUT / "lab-capi-cdll" / "bundle", "*")
    assert (v.category.value, v.cause) == ("config", "app_error")
    assert v.root.signal == "app.native_frames" and "ids_to_list" in v.root.summary
    assert "C API" in v.root.summary


def test_the_c_api_called_from_ctypes_itself_stays_a_lean(tmp_path):
    bt = (OUT / "lab-capi-pythonapi" / "bundle" / "gdb_bt.txt").read_text(encoding="utf-8")
    assert "PyList_Append" in bt and "libffi" in bt
    v = _copied(tmp_path, OUT / "lab-capi-pythonapi" / "bundle", "*")
    assert v.cause == "unknown"
    assert any(f.signal == "app.native_fault" for f in v.alternatives)


def test_the_interpreter_stopping_on_a_reference_the_jobs_function_dropped_is_the_jobs(tmp_path):
    bt = (OUT / "lab-refcount-release" / "bundle" / "gdb_bt.txt").read_text(encoding="utf-8")
    assert "_Py_FatalRefcountErrorFunc" in bt and "release_slots" in bt and "signal SIGABRT" in bt
    v = _copied(tmp_path, OUT / "lab-refcount-release" / "bundle", "*")
    assert (v.category.value, v.cause) == ("config", "app_error")
    assert v.root.signal == "app.native_frames" and "release_slots" in v.root.summary


def test_a_refcount_that_runs_out_later_only_leans(tmp_path):
    # the job's lookup() returned None without a reference; None's count ran out in list_dealloc
    # under the eval loop: CPython's message says a C extension, the stack names none
    bt = (OUT / "lab-refcount-lookup" / "bundle" / "gdb_bt.txt").read_text(encoding="utf-8")
    frames = [ln for ln in bt.splitlines() if ln.startswith("#")]
    assert any("list_dealloc" in ln for ln in frames) and not any(" lookup (" in ln for ln in frames)
    v = _copied(tmp_path, OUT / "lab-refcount-lookup" / "bundle", "*")
    assert v.cause == "unknown"
    assert any(f.cause == "app_error" and f.signal == "msg.python_refcount_fatal" for f in v.alternatives)
    assert not any(f.signal == "app.native_frames" for f in v.alternatives)
