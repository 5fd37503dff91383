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
    # the rendezvous (store) address torchrun was given can name no host: the catalog's
    # pt.rdzv_endpoint_bad_host reads it as the job's comms set-up (tests/classify/test_comms_setup.py)
    assert (v.category.value, v.cause) == ("comms", "nccl_network")
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


def test_a_missing_device_node_is_not_the_jobs_path(tmp_path):
    # Edited at test time: the missing path is a device node the driver makes (/dev/nvidia3).
    text = _edited("lab-rank-raises-ckpt", "No such file or directory: '/tmp/", "No such file or directory: '/dev/nvidia3/")
    v = _verdict(tmp_path, text)
    assert not (v.root is not None and v.root.signal == "app.exception_argument_error")


def test_an_import_error_naming_a_runtime_library_is_no_missing_module(tmp_path):
    # Edited at test time: ImportError for a shared library the runtime lacks is not the job's name.
    text = _edited("lab-rank-raises-plugin", "ModuleNotFoundError: No module named 'spanmetrics_fast'",
                   "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory")
    v = _verdict(tmp_path, text)
    assert not (v.root is not None and v.root.signal == "app.exception_argument_error")


# ---- a native module on a noexec filesystem (app.native_module_noexec; fixtures/lab/native_cache_noexec.sh)
NOEXEC = OUT / "lab-native-cache-noexec"


def _native_bundle(tmp_path: Path, tables: dict[str, str], console: str | None = None) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "console.log").write_text(console or (NOEXEC / "console.log").read_text(encoding="utf-8"), encoding="utf-8")
    for name, text in tables.items():
        (bundle / name).write_text(text, encoding="utf-8")
    return bundle


def _table(name: str) -> str:
    return (NOEXEC / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("table", ["findmnt.txt", "proc_mounts.txt", "mount.txt", "findmnt_tree.txt"])
def test_a_library_that_cannot_be_mapped_from_a_noexec_mount_is_the_jobs_placement(tmp_path, table):
    console = (NOEXEC / "console.log").read_text(encoding="utf-8")
    assert "failed to map segment from shared object" in console and "Connection closed by peer" in console
    v = analyze(_native_bundle(tmp_path, {table: _table(table)})).verdict
    assert (v.category, v.cause) == ("config", "app_error")
    assert v.root.signal == "app.native_module_noexec" and v.root.strength == "strong"
    assert "mounted noexec" in v.root.summary and f"{table}:" in v.root.summary
    assert v.confidence < 0.8


def test_the_message_alone_only_leans(tmp_path):
    # No mount table: ENOMEM (RLIMIT_AS, vm.max_map_count) or SELinux print the same message.
    v = analyze(_native_bundle(tmp_path, {})).verdict
    assert v.cause == "unknown"
    assert any(f.signal == "app.exception" for f in v.alternatives)


def test_a_mount_without_noexec_says_nothing(tmp_path):
    # Edited at test time: the same table with noexec taken out of the cache mount's options.
    v = analyze(_native_bundle(tmp_path, {"findmnt.txt": _table("findmnt.txt").replace("noexec,", "")})).verdict
    assert v.cause == "unknown"


def test_a_deeper_exec_mount_holding_the_library_decides(tmp_path):
    # Edited at test time: an exec-allowed tmpfs mounted on the library's own folder, below the
    # noexec one (/proc/mounts order): the deepest mount point holding the path is what maps it.
    line = _table("proc_mounts.txt").strip()
    folder = line.split()[1] + "/fastops"
    deeper = f"tmpfs {folder} tmpfs rw,nosuid,nodev,relatime 0 0"
    v = analyze(_native_bundle(tmp_path, {"proc_mounts.txt": f"{line}\n{deeper}\n"})).verdict
    assert v.cause == "unknown"


def test_the_exec_control_run_loads_and_trains():
    # The same build on an exec-allowed tmpfs: no failure, and the parser reads its mount as not noexec.
    text = (OUT / "lab-native-cache-exec" / "console.log").read_text(encoding="utf-8")
    assert "failed to map segment" not in text and "rank 1 step 2 ok" in text
    assert "noexec" not in (OUT / "lab-native-cache-exec" / "findmnt.txt").read_text(encoding="utf-8")


def test_findmnt_tree_rows_are_read_with_their_options():
    a = analyze(NOEXEC / "findmnt_tree.txt")
    points = {f.value: f.text for f in a.case.facts if f.name == "mount.point"}
    rows = [ln for ln in _table("findmnt_tree.txt").splitlines()[1:] if ln.strip()]
    assert len(rows) == 2 and rows[1].lstrip().startswith("\u2514\u2500/") and len(points) == 2
    cache = next(p for p in points if p.endswith("/cache1"))
    scratch = next(p for p in points if not p.endswith("/cache1"))
    assert "noexec" in points[cache].split(",") and "noexec" not in points[scratch].split(",")


# ---- exit -9: the kernel log, whole since boot and collected after the kill, shows no OOM kill
# (counter.kernel_log_without_oom_kill; REAL fixtures/bundles/lab-flightrec-sigkill: rank 1 kills itself)
SIGKILL = ROOT / "fixtures/bundles/lab-flightrec-sigkill/bundle"
OOM = ROOT / "fixtures/bundles/lab-torchrun-oom-cgroup/bundle"
_COUNTER = "the kernel log, whole since boot"


def _copy(tmp_path: Path, src: Path) -> Path:
    import shutil

    dst = tmp_path / "bundle"
    shutil.copytree(src, dst)
    return dst


def test_a_sigkill_the_whole_kernel_log_does_not_explain_is_not_leaned_on_as_the_oom_killer():
    v = analyze(SIGKILL).verdict
    assert v.cause == "unknown"
    assert any(t.startswith("counter: " + _COUNTER) and "dmesg.txt:1" in t and "manifest.json" in t for t in v.trace)
    host = next(t for t in v.trace if t.startswith("resolve: host_oom support"))
    assert "counter 0.40" in host


def test_a_kernel_log_that_lost_its_start_says_nothing(tmp_path):
    # Edited at test time: the kernel log without its first 40 lines (the boot banner among them),
    # as a ring buffer that wrapped keeps only its newest lines.
    bundle = _copy(tmp_path, SIGKILL)
    for name in ("dmesg.txt", "dmesg_T.txt"):
        lines = (bundle / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (bundle / name).write_text("".join(lines[40:]), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not any(t.startswith("counter: " + _COUNTER) for t in v.trace)


def test_a_kernel_log_collected_before_the_kill_says_nothing(tmp_path):
    # Edited at test time: the manifest's clock set an hour earlier (collected before the job died).
    bundle = _copy(tmp_path, SIGKILL)
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    manifest["clock"]["time_epoch_s"] -= 3600
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not any(t.startswith("counter: " + _COUNTER) for t in v.trace)


def test_the_kernels_own_oom_kill_is_still_read():
    v = analyze(OOM).verdict
    assert (v.cause, v.category) == ("host_oom", "config")
    assert not any(t.startswith("counter: " + _COUNTER) for t in v.trace)
