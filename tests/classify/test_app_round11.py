"""Round 11, the job's own failures: an exception class that is a built-in argument error by
inheritance (catalogs/python_exceptions.json, generated from CPython's own classes by
tools/catalogs/gen_python_exceptions.py) reads like its base -- json.decoder.JSONDecodeError,
UnicodeDecodeError, ZeroDivisionError, statistics.StatisticsError raised in the standard library
under the job's own frame are the job's side; and an exception torchrun's own rendezvous code
raised, with no frame of the job's, is no app_error.  So does an OSError whose errno answers for the
path the job handed a library (ENOENT, EEXIST ...; not the device's errnos, not a shared-memory
object) and a ModuleNotFoundError for a module the job asked for.  REAL consoles:
fixtures/lab/rank_raises.sh."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem.knowledge import catalog
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "fixtures/lab/output"
# (case, the exception line rank 1 printed, the job's own frame that called the library)
RAISES = [("json", "json.decoder.JSONDecodeError: Expecting ',' delimiter", "read_record"),
          ("unicode", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9", "read_vocab"),
          ("fraction", "ZeroDivisionError: Fraction(3, 0)", "sampling_ratio"),
          ("statistics", "statistics.StatisticsError: fmean requires at least one data point", "mean_loss"),
          # an OSError whose errno answers for the path the job passed (path_errnos), and a module
          # the job's configuration names that its environment lacks (missing_name_types)
          ("ckpt", "FileNotFoundError: [Errno 2] No such file or directory:", "load_checkpoint"),
          ("rundir", "FileExistsError: [Errno 17] File exists:", "make_run_dir"),
          ("plugin", "ModuleNotFoundError: No module named 'spanmetrics_fast'", "load_metrics_plugin")]


def _console(name: str) -> str:
    return (OUT / name / "console.log").read_text(encoding="utf-8")


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "console.log").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


@pytest.mark.parametrize("how,line,frame", RAISES)
def test_a_subclass_of_an_argument_error_under_the_jobs_frame_is_app_error(tmp_path, how, line, frame):
    text = _console(f"lab-rank-raises-{how}")
    assert f"[rank1]: {line}" in text and "Connection closed by peer" in text   # rank 0's fallout
    v = _verdict(tmp_path, text)
    assert (v.category, v.cause) == ("config", "app_error")
    assert v.root.signal == "app.exception_argument_error" and v.root.strength == "strong"
    assert "rank 1" in v.root.summary and frame in v.root.summary
    assert any("Connection closed by peer" in (s.summary or "") for s in v.symptoms)
    assert v.confidence < 0.8


def test_without_the_jobs_frames_the_same_exception_only_leans(tmp_path):
    # Edited at test time: the job's frames (rank_raises.py) cut from rank 1's traceback and rank
    # 0's lines dropped, so every frame left is json's: where the value came from is not shown.
    kept = [ln for ln in _console("lab-rank-raises-json").splitlines()
            if ln.startswith("[rank1]:") and "rank_raises.py" not in ln and not ln.startswith("[rank1]:     ")]
    assert kept[0].endswith("Traceback (most recent call last):") and "json/decoder.py" in "\n".join(kept)
    v = _verdict(tmp_path, "\n".join(kept) + "\n")
    assert v.cause == "unknown"
    assert any(f.cause == "app_error" and f.signal == "app.exception" for f in v.alternatives)


def test_the_launchers_own_rendezvous_error_is_no_app_error(tmp_path):
    text = _console("lab-launcher-endpoint-cr")
    assert "elastic/rendezvous/utils.py" in text and "ValueError: The hostname of the rendezvous endpoint" in text
    v = _verdict(tmp_path, text)
    assert v.cause == "unknown"
    assert not any(f.cause == "app_error" for f in (v.root, *v.alternatives) if f is not None)


def test_the_same_raise_site_under_a_frame_of_the_job_is_still_read(tmp_path):
    # Edited at test time: a frame of a job's own launch script is put outermost in the launcher's
    # traceback -- the job called torch.distributed's code itself, so what it handed decides.
    lines = _console("lab-launcher-endpoint-cr").splitlines()
    start = lines.index("Traceback (most recent call last):")
    own = ['  File "/home/user/proj/launch.py", line 12, in <module>', "    main()"]
    v = _verdict(tmp_path, "\n".join(lines[:start + 1] + own + lines[start + 1:]) + "\n")
    assert (v.cause, v.root.signal) == ("app_error", "app.exception_argument_error")


def test_the_catalog_holds_subclasses_only_never_an_os_or_runtime_error():
    classes = catalog.argument_error_classes()
    assert {"json.decoder.JSONDecodeError", "UnicodeDecodeError", "ZeroDivisionError",
            "statistics.StatisticsError", "tomllib.TOMLDecodeError"} <= classes
    # io.UnsupportedOperation is an OSError and a ValueError: the file's state, not the argument
    assert not {"io.UnsupportedOperation", "ValueError", "RuntimeError", "NotImplementedError",
                "RecursionError", "TimeoutError"} & classes


def test_the_catalog_is_what_the_generator_prints_for_its_python():
    data = json.loads((ROOT / "postmortem/knowledge/catalogs/python_exceptions.json").read_text(encoding="utf-8"))
    if data["version"].rsplit(".", 1)[0] != f"{sys.version_info.major}.{sys.version_info.minor}":
        pytest.skip(f"generated with Python {data['version']}")
    out = subprocess.run([sys.executable, str(ROOT / "tools/catalogs/gen_python_exceptions.py")],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["classes"] == data["classes"]


def _edited(name: str, old: str, new: str) -> str:
    text = _console(name)
    assert old in text
    return text.replace(old, new)


def test_a_device_errno_through_the_same_call_stays_the_storages_lean(tmp_path):
    # Edited at test time: the errno of torch.load's open is EIO (the device failed the read), not
    # ENOENT: storage.job_io_errno reads it, never the job's path.
    text = _edited("lab-rank-raises-ckpt", "FileNotFoundError: [Errno 2] No such file or directory:",
                   "OSError: [Errno 5] Input/output error:")
    v = _verdict(tmp_path, text)
    assert v.cause != "app_error"
    assert any(f.signal == "storage.job_io_errno" for f in (v.root, *v.alternatives) if f is not None)


def test_a_shared_memory_object_gone_is_not_the_jobs_path(tmp_path):
    # Edited at test time: the missing name is a POSIX shared-memory object (multiprocessing's
    # /psm_*), whose lifetime another process (or logind's RemoveIPC) governs.
    text = _edited("lab-rank-raises-ckpt", "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/",
                   "FileNotFoundError: [Errno 2] No such file or directory: '/psm_")
    v = _verdict(tmp_path, text)
    assert not (v.root is not None and v.root.signal == "app.exception_argument_error")


def test_an_import_error_naming_a_runtime_library_is_no_missing_module(tmp_path):
    # Edited at test time: ImportError for a shared library the runtime lacks is not the job's name.
    text = _edited("lab-rank-raises-plugin", "ModuleNotFoundError: No module named 'spanmetrics_fast'",
                   "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory")
    v = _verdict(tmp_path, text)
    assert not (v.root is not None and v.root.signal == "app.exception_argument_error")
