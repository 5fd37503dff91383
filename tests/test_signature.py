"""Signatures (sig2): the frame lists as data, normalization, the siggen walk, and
signatures of the real corpus (different true causes never share one)."""
from __future__ import annotations

import itertools
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from postmortem import stacks
from postmortem.classify.signature import SCHEME, explain_signature, signature_of
from postmortem.model import Case, Frame, Ref, Stack
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
CORES = ROOT / "fixtures" / "cores"


def _stack(*names: str, language: str = "native", crashed: bool = False, origin: str = "gdb", tid=None) -> Stack:
    frames = tuple(Frame(function=n, language=language) for n in names)
    return Stack(frames=frames, origin=origin, ref=Ref("t.txt", 1), crashed=crashed, tid=tid)


# --------------------------------------------------------------------------- lists

def _list_files() -> set[str]:
    folder = resources.files("postmortem.knowledge") / "frames"
    return {p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt")}


def test_every_frame_list_file_is_loaded():
    assert _list_files() == set(stacks.FRAME_LISTS)
    lists = stacks.frame_lists()
    for name in stacks.FRAME_LISTS:
        assert getattr(lists, name), f"{name}.txt loaded no pattern"


@pytest.mark.parametrize("name", sorted(_list_files()))
def test_every_line_of_a_frame_list_compiles_and_the_header_points_to_the_readme(name):
    text = (resources.files("postmortem.knowledge") / "frames" / f"{name}.txt").read_text()
    header = list(itertools.takewhile(lambda line: line.startswith("#"), text.splitlines()))
    assert any("postmortem/knowledge/README.md" in line for line in header)
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            re.compile(line.strip())   # raises on a bad line, naming it
            assert not line.strip().endswith(".*"), f"{name}.txt:{number}: no trailing .*"


def test_a_bad_line_is_reported_with_file_and_line(monkeypatch, tmp_path):
    class FakeRef:
        def __truediv__(self, other):
            return self

        def read_text(self, encoding="utf-8"):
            return "# header\nfine\nbad(\n"

    monkeypatch.setattr(stacks, "packaged", lambda pkg, *parts: FakeRef())
    with pytest.raises(stacks.FrameListError, match=r"frames/irrelevant.txt:3"):
        stacks.read_list("irrelevant")


def test_lists_say_what_they_mean():
    lists = stacks.frame_lists()
    match = lambda text, patterns: any(p.fullmatch(text) for p in patterns)  # noqa: E731
    assert match("__GI_raise", lists.irrelevant) and match("__GI_abort", lists.irrelevant)
    assert match("_PyEval_EvalFrameDefault", lists.irrelevant)
    assert match("<signal handler called>", lists.sentinel)
    assert match("__memset_avx2_unaligned_erms", lists.prefix)
    assert match("__libc_pause", lists.idle) and match("__futex_abstimed_wait_common64", lists.idle)
    assert not match("store", lists.irrelevant) and not match("store", lists.prefix)


# ---------------------------------------------------------------------- normalize

@pytest.mark.parametrize("function, expected", [
    ("c10d::ProcessGroupNCCL::WorkNCCL::isCompleted()", "c10d::ProcessGroupNCCL::WorkNCCL::isCompleted"),
    ("c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const",
     "c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal"),
    ("std::vector<std::pair<int, float>>::push_back(int const&)", "std::vector::push_back"),
    ("ncclGroupEnd+0x1f3", "ncclGroupEnd"),
    ("memcpy@@GLIBC_2.14", "memcpy"),
    ("fill_shm [clone .cold]", "fill_shm"),
    ("open_torch_4242_123", "open_torch_4242_123"),   # inside an identifier: left alone
])
def test_native_frames_lose_arguments_templates_offsets_and_versions(function, expected):
    assert stacks.normalize(Frame(function=function)) == expected


def test_python_frames_are_file_stem_and_function():
    frame = Frame(function="reduce_storage", file="/srv/conda/envs/x/lib/python3.8/site-packages/torch/"
                  "multiprocessing/reductions.py", line=321, language="python")
    assert stacks.normalize(frame) == "reductions.reduce_storage"


def test_unsymbolized_frames_keep_the_module_not_the_offset():
    assert stacks.normalize(Frame(module="/usr/lib/x86_64-linux-gnu/libnccl.so.2", offset=0x489B1)) == "libnccl.so.2@?"
    assert stacks.normalize(Frame(function="??")) is None


@pytest.mark.parametrize("text, expected", [
    ("unable to open /dev/shm/torch_1394_2747491098", "unable to open /dev/shm/*"),
    ("segment nccl-AbC123 gone", "segment nccl-* gone"),
    ("fault at 0x7f1625bea6c0 in 3095", "fault at 0x* in N"),
    ("xid79", "xid79"),
])
def test_scrub_removes_run_specific_text(text, expected):
    assert stacks.scrub(text) == expected


# --------------------------------------------------------------------------- walk

def test_walk_skips_irrelevant_keeps_prefixes_and_stops_at_the_first_other_frame():
    stack = _stack("__pthread_kill_implementation", "__GI_raise", "<signal handler called>",
                   "__memset_avx2_unaligned_erms", "fill_shm", "main", crashed=True)
    walked = stacks.walk(stack)
    assert walked.frames == ("__memset_avx2_unaligned_erms", "fill_shm")
    text = "\n".join(walked.notes)
    assert "sentinel; starting at frame 2" in text
    assert "prefix; continue: __memset_avx2_unaligned_erms" in text
    assert "not a prefix; stop: fill_shm" in text


def test_walk_without_a_sentinel_notes_each_irrelevant_frame():
    walked = stacks.walk(_stack("killpg", "abort", "do_work"))
    assert walked.frames == ("do_work",)
    assert sum("irrelevant; skipped" in n for n in walked.notes) == 2


def test_crashing_thread_prefers_the_signal_tid_then_a_thread_that_is_not_waiting():
    waiting = _stack("__futex_abstimed_wait_common64", "pthread_join", "main", crashed=True, tid=1)
    paused = _stack("__libc_pause", "worker", crashed=True, tid=2)
    storing = _stack("store", "worker", crashed=True, tid=3)
    assert stacks.crashing([waiting, paused, storing]) is storing
    from postmortem.model import Event
    signal = Event(kind="core.signal", text="SIGSEGV", ref=Ref("core", offset=0), tid=2, data={"signo": 11})
    assert stacks.crashing([waiting, paused, storing], [signal]) is paused


def test_explain_is_the_signature_plus_its_reasons():
    case = Case("c", (), (_stack("abort", "do_abort", "main", crashed=True),), (), ())
    explained = explain_signature("unknown", "unknown", None, case)
    assert explained.signature == f"{SCHEME}:unknown:unknown:-:do_abort"
    assert explained.plaintext().splitlines()[0] == explained.signature
    assert any("irrelevant; skipped: abort" in n for n in explained.notes)


# ------------------------------------------------------------- real bundles

def _truth(case_dir: Path) -> str:
    return json.loads((case_dir / "truth.json").read_text())["cause"]


@pytest.fixture(scope="module")
def corpus_signatures() -> dict[str, tuple[str, str]]:
    cases = sorted(p.parent for p in CORPUS.glob("*/truth.json"))
    return {c.name: (_truth(c), analyze(c / "bundle").verdict.signature) for c in cases}


def test_corpus_signatures_use_the_current_scheme(corpus_signatures):
    assert corpus_signatures
    assert all(sig.startswith(f"{SCHEME}:") for _, sig in corpus_signatures.values())


def test_different_true_causes_never_share_a_signature(corpus_signatures):
    # (verdicts that claim nothing share the one 'unknown' group by design: they are what to look at)
    claimed = {c: v for c, v in corpus_signatures.items() if not v[1].startswith(f"{SCHEME}:unknown:")}
    # four corpus cases lean (unknown) under the strict claim policy: a version mismatch, a P2P hang,
    # CUDA's catch-all 'unknown error' and a lone UCX SIGBUS inside libnccl (audit 6 H5, audit 5 M3)
    assert len(claimed) >= len(corpus_signatures) - 4
    for (a, (cause_a, sig_a)), (b, (cause_b, sig_b)) in itertools.combinations(claimed.items(), 2):
        if cause_a != cause_b:
            assert sig_a != sig_b, f"{a} ({cause_a}) and {b} ({cause_b}) share {sig_a}"


@pytest.mark.parametrize("name, frames", [
    ("shm-sigbus.gdb.txt", "__memset_avx2_unaligned_erms|fill_shm"),
    ("abort.gdb.txt", "do_abort"),                 # raise/abort skipped, full print of the thread
    ("threads-segv.gdb.txt", "store"),             # the thread that is not waiting
    ("shm-sigbus-faulthandler.stderr.txt", "shm_faulthandler.fill"),
])
def test_core_fixture_signatures_name_the_crashing_function(name, frames):
    sig = analyze(CORES / name).verdict.signature
    assert sig.split(":", 4)[4] == frames


def test_signature_of_is_the_entry_point_used_by_classify():
    a = analyze(CORES / "abort.gdb.txt")
    v = a.verdict
    assert signature_of(v.cause, v.category.value, v.root, a.case) == v.signature
    assert v.signature.split(":")[3] == "SIGABRT"    # no root key: the fatal signal discriminates
