"""py-spy dump output, real, from the crash lab (fixtures/lab/torchrun_flightrec.sh stacks)."""
from pathlib import Path

from postmortem import stacks
from postmortem.parsers import parse_text

ROOT = Path(__file__).resolve().parents[2]
SPY = ROOT / "fixtures" / "bundles" / "lab-flightrec-hang-stacks" / "bundle" / "pyspy"


def parse(name: str):
    return parse_text(f"pyspy/{name}", (SPY / name).read_text().splitlines())


def test_plain_dump_threads_and_python_frames():
    r = parse("rank0.txt")
    spy = [s for s in r.sink.stacks if s.origin == "py-spy"]
    main = next(s for s in spy if s.thread == "MainThread")
    assert main.pid == main.tid and main.data["status"] == "idle"
    assert [f.function for f in main.frames[:3]] == ["all_reduce", "_exception_logger.<locals>.wrapper", "sync_gradients"]
    assert main.frames[0].file == "torch/distributed/distributed_c10d.py" and main.frames[0].line == 3252
    assert all(f.language == "python" for f in main.frames)
    assert len(spy) >= 2 and "py-spy" in r.parsers


def test_native_dump_keeps_native_frames_apart():
    main = next(s for s in parse("rank3.native.txt").sink.stacks if s.thread == "MainThread")
    first = main.frames[0]
    assert (first.function, first.module, first.language) == ("clock_nanosleep", "libc.so.6", "native")
    assert main.frames[2].function == "load_batch" and main.frames[2].language == "python"
    assert main.frames[-1].function is None and main.frames[-1].address and main.frames[-1].module == "libc.so.6"


def test_all_ranks_group_by_stack_and_rank_comes_from_the_file_name():
    all_stacks = []
    for f in sorted(SPY.iterdir()):
        all_stacks += parse(f.name).sink.stacks
    groups = stacks.group_by_stack(all_stacks)
    assert [(g.ranks, g.where) for g in groups] == [((0, 1, 2), "distributed_c10d.all_reduce"),
                                                     ((3,), "fr_hang.load_batch")]
