"""NCCL_DEBUG parser on real NCCL output (fixtures/nccl/SOURCE.md)."""
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.grammar import load
from postmortem.model import ClockKind
from postmortem.parsers import nccl, nccl_message, parse_text

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"
ALL_FIXTURES = sorted(p for p in FIX.rglob("*") if p.suffix in (".txt", ".log"))


def parse(name: str):
    return parse_text(name, (FIX / name).read_text(errors="replace").splitlines())


def kinds(result, kind):
    return [e for e in result.sink.events if e.kind == kind]


def test_grammar_builds_strict():
    load("nccl", strict=True)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(FIX)))
def test_every_fixture_line_is_claimed_without_problems(path):
    r = parse(str(path.relative_to(FIX)))
    assert r.unclaimed == 0 and not r.sink.problems


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(FIX)))
def test_fast_paths_agree_with_the_grammar(path):
    """The regex fast paths for chain and channel lines say what the grammar says."""
    checked = 0
    for text in path.read_text(errors="replace").splitlines():
        m = nccl._HEADER.match(text.split(") ", 1)[-1] if text.startswith("(") else text)
        msg = (m["msg"] or "") if m else ""
        for fast, shape in ((nccl.fast_chain, "chain"), (nccl.fast_channel, "channel"), (nccl.fast_ring, "ring")):
            got = fast(msg)
            if got is None:
                continue
            parsed = nccl.parse_message(msg)
            assert parsed is not None and parsed[0] == shape, msg
            if shape == "chain":
                assert parsed[1] == got
            elif shape == "ring":
                assert parsed[1]["ring"] == got["ring"] and parsed[1]["channel"] == got["channel"]
            else:
                assert {k: v for k, v in parsed[1].items()} == got
            checked += 1
    if "Channel" in path.read_text() or " -> " in path.read_text():
        assert checked


def _messages(path):
    for text in path.read_text(errors="replace").splitlines():
        m = nccl._HEADER.match(text.split(") ", 1)[-1] if text.startswith("(") else text)
        yield (m["msg"] or "") if m else text


_WHOLE_FAST_PATHS = (nccl_message._fast_network, nccl_message._fast_version, nccl_message._fast_init)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(FIX)))
def test_network_and_version_fast_paths_agree_with_the_grammar(path):
    """Where the network/version fast paths read a message, the grammar reads the same."""
    for msg in _messages(path):
        for fast in _WHOLE_FAST_PATHS:
            got = fast(msg)
            if got is not None:
                assert got == nccl_message.grammar_message(msg), msg


# Deliberately odd spellings (made here, not real output): each fast path either declines
# or says what the grammar says.
_ODD = ["Using network IB", "Using  network IB", "Using network  IB ", "Using networkIB", "Using network ",
        "Bootstrap : Using eth0:10.0.0.1<0>", "Bootstrap: Using [0]eth0:1.2.3.4<0>", "Bootstrap :Using x",
        "Bootstrap:Using x", "Bootstrap  : Using x", "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB ib0:1<0>",
        "NET/Plugin : Using internal network plugin.", "NET/IB.x : Using y", "NET/Socket : Using [0]eth0:1<0> ",
        "NET/IB : Using\ty", "NET/ : Using x", "NCCL version 2.18.3+cuda12.2", "NCCL version 2.7.8+cuda10.2 ",
        "NCCL version 2.18.3", "NCCL version 2.18.3-1+cuda12.2", "NCCL version 2.18.3+cuda12.2x",
        "NCCL version 2.18+cuda12.2", "NCCL  version 2.18.3", "NCCL version 2.18.3+cuda", "NCCL version 2.18.3.+cuda1.",
        "NCCL version 2.18.3 +cuda12.2", "NCCL version 2.18.3+cuda12.2+cuda1",
        "comm 0x1 rank 0 nranks 1 cudaDev 0 - Init START", "comm 0x1 rank 0 nranks 1 cudaDev 0 - Init START ",
        "comm  0x1 rank 0 nranks 1 cudaDev 0 - Init START", "comm 0x1 rank \u0663 nranks 1 cudaDev 0 - Init START",
        "comm 0x1 rank 0 nranks 1 cudaDev 0 busId 0000:1b:00.0 - Init COMPLETE", "comm 0x1 rank 0 nranks 1 - Init START",
        "[Rank 3] ncclCommSplit comm 0xab rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 1b000 commId 0x12 parent 0x34 "
        "splitCount 2 color -1 key 3 - Init COMPLETE", "comm 0x1 rank 0 nranks 1 cudaDev 0 color 1 color 2 - Init START",
        "ncclcomm comm 0x1 rank 0 nranks 1 cudaDev 0 - Init START", "comm 0xg rank 0 nranks 1 cudaDev 0 - Init START",
        "comm 0x1 rank 0 nranks 1 cudaDev 0 - Init DONE", "[Rank 3]ncclCommInitRank comm 0x1 rank 0 nranks 1 cudaDev 0 - Init START"]


@pytest.mark.parametrize("msg", _ODD)
def test_fast_paths_decline_or_agree_on_odd_spellings(msg):
    for fast in _WHOLE_FAST_PATHS:
        got = fast(msg)
        assert got is None or got == nccl_message.grammar_message(msg), msg
    assert nccl.parse_message(msg) == nccl_message.grammar_message(msg), msg


def test_fast_paths_read_the_printed_spellings():
    assert nccl_message._fast_network("Bootstrap : Using [0]eth1:9.73.133.81<0>") == (
        "network", {"network": "Bootstrap", "devices": ["eth1:9.73.133.81<0>"]})
    assert nccl_message._fast_network("Using network IB") == ("network", {"network": "IB", "devices": []})
    assert nccl_message._fast_version("NCCL version 2.18.3+cuda12.2") == (
        "version", {"version": "2.18.3", "cuda": "12.2"})


_PIECES = st.lists(st.sampled_from(["Using", "network", " ", "  ", "IB", "NET/IB", "NET/Plugin", "Bootstrap", ":",
                                    "NCCL", "version", "2.18.3", "+cuda", "12.2", ".", "x", "[0]", "eth0", "\t",
                                    "comm 0x1f ", "rank 0 ", "nranks 8 ", "cudaDev 1 ", "nvmlDev 2 ", "busId 1b000 ",
                                    "commId 0xab ", "color -1 ", "- Init ", "START", "COMPLETE", "ncclCommInitRank "]),
                   max_size=8)


@settings(max_examples=300, deadline=None)
@given(_PIECES)
def test_fast_paths_decline_or_agree_on_generated_messages(pieces):
    msg = "".join(pieces)
    for fast in _WHOLE_FAST_PATHS:
        got = fast(msg)
        assert got is None or got == nccl_message.grammar_message(msg), msg


def test_ib_completion_error_chain_merged_with_its_warn():
    # corpus ib-gdr-acs-01 (NVIDIA/nccl#928): WARN then three `-> 6` lines ending in [Proxy Thread]
    r = parse("corpus/ib-gdr-acs-01/nccl.log")
    warns = kinds(r, "nccl.warn")
    assert [w.host for w in warns] == ["H100-2", "H100-1", "H100-5"]
    assert warns[0].data["file"] == "transport/net_ib.cc" and warns[0].data["line"] == 1295
    chains = kinds(r, "nccl.error_chain")
    assert len(chains) == 3
    first = chains[0]
    assert first.data["rc"] == 6 and first.data["result"] == "ncclRemoteError"
    assert first.data["chain"] == ["transport/net.cc:1008", "proxy.cc:679", "proxy.cc:858"]
    assert first.data["thread"] == "Proxy Thread"
    assert first.data["origin"] == "transport/net_ib.cc:1295"
    assert (first.host, first.pid, first.tid) == ("H100-2", 19989, 20082)
    # the last chain is cut off by the end of the paste: flushed by finish()
    assert chains[2].data["chain"] == ["transport/net.cc:1008"] and chains[2].data["thread"] is None


def test_roce_enodev_bundle():
    # corpus multi-roce-hca-enodev-08 (NVIDIA/nccl#799), NCCL 2.7.8
    r = parse("corpus/multi-roce-hca-enodev-08/nccl.log")
    (version,) = kinds(r, "nccl.version")
    assert version.data == {"version": "2.7.8", "cuda": "10.2"} and version.host is None
    assert [(f.name, f.value, f.text) for f in r.sink.facts] == [("nccl.version", "2.7.8", "2.7.8+cuda10.2")]
    nets = kinds(r, "nccl.network")
    assert [(n.data["network"], n.data["devices"]) for n in nets] == [
        ("Bootstrap", ["eth1:9.73.133.81<0>"]), ("IB", ["mlx5_3:1/RoCE"]), ("IB", [])]
    (chain,) = kinds(r, "nccl.error_chain")
    assert chain.data["rc"] == 2 and chain.data["result"] == "ncclSystemError"
    assert len(chain.data["chain"]) == 8 and chain.data["thread"] == "Async thread"
    assert chain.data["origin"] == "misc/ibvwrap.cc:284"
    assert chain.data["origin_msg"] == "Call to ibv_modify_qp failed with error No such device"
    assert chain.ref.line == 8


def test_cuda_failure_warn_and_chain():
    # corpus nvls-fabricmanager-01 (NVIDIA/nccl#1488)
    r = parse("corpus/nvls-fabricmanager-01/nccl.log")
    (warn,) = kinds(r, "nccl.warn")
    assert warn.data["cuda_error"] == "invalid argument" and warn.data["result"] is None
    (chain,) = kinds(r, "nccl.error_chain")
    assert chain.data["result"] == "ncclUnhandledCudaError" and chain.data["origin"] == "transport/nvls.cc:244"


def test_timestamped_226_warns_and_rc_change_splits_chains():
    # corpus shm-nccl-k8s-ci-08 (pytorch/ci-infra#490): 2.26+ `[ts]` prefix on WARN lines
    r = parse("corpus/shm-nccl-k8s-ci-08/nccl.log")
    warns = kinds(r, "nccl.warn")
    assert len(warns) == 2
    assert warns[0].stamp.clock is ClockKind.WALL_LOCAL and warns[0].stamp.wall.isoformat() == "2026-04-22T21:34:20"
    assert warns[1].data["file"] == "misc/shmutils.cc" and warns[1].data["line"] == 132
    chains = kinds(r, "nccl.error_chain")
    assert [(c.tid, c.data["rc"], len(c.data["chain"])) for c in chains] == [
        (202235, 2, 2), (202240, 3, 2), (202235, 3, 1), (202238, 3, 2)]
    assert chains[0].data["origin"] == "misc/shmutils.cc:132"
    assert chains[2].data["origin"] is None  # a new error on the same thread, no WARN before it


def test_legacy_warn_without_nccl_token():
    # corpus multi-docker-noiface-nccltests-06 (NVIDIA/nccl-tests#14): `misc/ibvwrap.cu:61 WARN ...`
    r = parse("corpus/multi-docker-noiface-nccltests-06/nccl.log")
    warns = kinds(r, "nccl.warn")
    assert [(w.data["file"], w.data["line"]) for w in warns] == [("misc/ibvwrap.cu", 61), ("include/socket.h", 311)]


def test_nccl_tests_failure_line():
    r = parse("corpus/multi-docker-noiface-nccltests-06/nccl_tests.log")
    (fail,) = kinds(r, "nccl.test_failure")
    assert fail.data["file"] == "common.cu" and fail.data["line"] == 874
    assert fail.data["msg"] == "unhandled system error" and fail.data["result"] == "ncclSystemError"


def test_nccl_tests_device_table():
    # corpus nccl-p2p-iommu-01 (NVIDIA/nccl#257)
    r = parse("corpus/nccl-p2p-iommu-01/train.log")
    rows = kinds(r, "nccl.test_device")
    assert [(e.rank, e.pid, e.host, e.data["device"], e.data["bus"]) for e in rows] == [
        (0, 15833, "jupyter-vmarkovtsev", 0, "0x02"), (1, 15833, "jupyter-vmarkovtsev", 1, "0x03"),
        (2, 15833, "jupyter-vmarkovtsev", 2, "0x82"), (3, 15833, "jupyter-vmarkovtsev", 3, "0x83")]
    assert rows[0].data["name"] == "GeForce GTX 1080 Ti"


def test_init_start_and_ring_lines_219():
    # corpus nccl-version-mismatch-01 (NVIDIA/nccl#1267), NCCL 2.19.3
    r = parse("corpus/nccl-version-mismatch-01/nccl_instance-8g-96c-2.log")
    (init,) = kinds(r, "nccl.init")
    assert init.rank == 0 and init.data["nranks"] == 1 and init.data["busId"] == "30"
    assert init.data["commId"] == "0x795b968dc454cfee" and init.data["phase"] == "START"
    assert [n.data["network"] for n in kinds(r, "nccl.network")] == ["Bootstrap", "Socket", "Socket"]
    rings = [e for e in kinds(r, "nccl.info") if "ring" in e.data]
    assert len(rings) == 1 and rings[0].data["ring"] == [0]  # one ring event per process


def test_later_ring_lines_of_a_kept_process_are_not_read(monkeypatch):
    """Only a process's first ring line becomes an event (_ring); the others list every rank
    of the job (512 numbers a line at 512 ranks, one line per channel) and were parsed only
    to be dropped.  Same real NCCL 2.19.3 lines as above (3 ring lines of one process): the
    same single event, and fast_ring reads one line, not three."""
    read = []
    real = nccl.fast_ring
    monkeypatch.setattr(nccl, "fast_ring", lambda msg: read.append(msg) or real(msg))
    r = parse("corpus/nccl-version-mismatch-01/nccl_instance-8g-96c-2.log")
    rings = [e for e in kinds(r, "nccl.info") if "ring" in e.data]
    assert len(rings) == 1 and rings[0].data["ring"] == [0] and rings[0].data["channel"] == 0
    assert read == ["Channel 00/32 :    0"]
    # a line that only looks like a ring after the first is still read by the general path
    assert nccl_message.is_ring("Channel 01/32 :    0   1") and not nccl_message.is_ring("Channel 01/32 : 0 [x]")


def test_init_complete_api_prefixed_221():
    r = parse("tpgds_init_complete.txt")
    inits = kinds(r, "nccl.init")
    assert [(e.rank, e.data["cudaDev"], e.data["nvmlDev"], e.data["busId"], e.data["phase"]) for e in inits] == [
        (0, 0, 0, "18000", "COMPLETE"), (2, 2, 2, "3a000", "COMPLETE"), (6, 6, 6, "ba000", "COMPLETE"),
        (7, 7, 7, "e4000", "START")]
    assert inits[0].data["api"] == "ncclCommInitRank" and inits[0].data["nranks"] == 16
    (ib, plugin) = kinds(r, "nccl.network")
    assert len(ib.data["devices"]) == 8 and ib.data["devices"][0] == "mlx5_0:1/IB/SHARP"
    assert plugin.data["network"] == "NCCL RDMA Plugin v8"


def test_transports_one_event_per_connection():
    r = parse("vllm_deepseek_init_2215.txt")
    (t,) = kinds(r, "nccl.transport")
    assert t.data["transport"] == "P2P/IPC" and t.data["via"] == "P2P/IPC/read"
    assert t.data["channels"] == [0, 1, 2] and t.data["peer"] == 1
    # `NET/Plugin: Using internal network plugin.` is not a network selection
    assert [n.data["network"] for n in kinds(r, "nccl.network")] == ["Bootstrap", "Bootstrap", "IB", "IB"]
    # the Ray prefix is stripped by wrappers.py; the banner is bare and carries no host
    assert [v.host for v in kinds(r, "nccl.version")] == [None, None]


def test_host_stripped_and_timestamped_transport_lines():
    r = parse("timestamped_2026.txt")
    ts = kinds(r, "nccl.transport")
    assert [(t.host, t.data["transport"], t.data["direction"]) for t in ts] == [
        ("t-20260428141043-cmz7n-worker-0", "P2P/IPC", None), ("t-20260428141043-cmz7n-worker-0", "P2P/IPC", None),
        (None, "NET/Libfabric", "receive"), (None, "NET/Libfabric", "send")]
    assert all(t.stamp.clock is ClockKind.WALL_LOCAL for t in ts)


def test_2307_func_in_warn_and_chain():
    # NVIDIA/nccl#2237, NCCL 2.30.7: `file:line (func) NCCL WARN` and `file:line (func) -> rc`
    r = parse("nccl2307_gdaki_issue2237.txt")
    warns = kinds(r, "nccl.warn")
    assert [w.data["func"] for w in warns] == ["gdakiConnectQp", "gdakiConnectQp"]
    chains = kinds(r, "nccl.error_chain")
    assert [(c.tid, len(c.data["chain"])) for c in chains] == [(862553, 6), (862552, 4)]
    assert chains[0].data["funcs"][0] == "ncclGinGdakiCreateContext"
    assert chains[0].data["origin"] == "transport/net_ib/gdaki/gin_host_gdaki.cc:431"


def test_formats_md_doc_examples():
    r = parse("formats_md_examples.txt")
    assert kinds(r, "nccl.network")[0].data["network"] == "IB"
    (warn,) = kinds(r, "nccl.warn")
    assert warn.data["file"] == "plugin/net.cc" and warn.stamp.wall.isoformat() == "2026-05-05T06:16:47"
    (call,) = kinds(r, "nccl.trace")
    assert call.data["level"] == "CALL" and call.data["msg"] == "ncclGroupStart()"


@pytest.mark.parametrize("text,name", [
    ("unhandled system error", "ncclSystemError"),
    ("unhandled cuda error (run with NCCL_DEBUG=INFO for details)", "ncclUnhandledCudaError"),
    ("internal error - please report this issue to the NCCL developers", "ncclInternalError"),
    ("invalid usage", "ncclInvalidUsage"),
    ("remote process exited or there was a network error", "ncclRemoteError"),
    ("'invalid argument (run with NCCL_DEBUG=WARN for details) / '", "ncclInvalidArgument"),
    ("something else", None),
])
def test_result_names(text, name):
    # strings from docs/formats.md §1.7 (nccl src/misc/argcheck / ncclGetErrorString)
    assert nccl.result_name(text) == name


def test_non_nccl_lines_are_not_taken():
    lines = ["INFO 04-20 16:46:52 [__init__.py:239] Automatically detected platform cuda.",
             "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout"]
    r = parse_text("x", lines)
    assert not [e for e in r.sink.events if e.kind.startswith("nccl.")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=120), st.sampled_from([
    "h:1:2 [0] NCCL INFO a.cc:1 -> 2", "NCCL version 2.", "h:1:2 [0] x.cc:3 (f NCCL WARN",
    "#  Rank 0 Pid", "NCCL failure c.cu:1 '", "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[",
    "[2026-01-01 00:00:00] h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 - Init"])), max_size=20))
def test_arbitrary_text_never_raises(lines):
    r = parse_text("fuzz", lines)
    assert not [p for p in r.sink.problems if p.startswith("nccl ")]


def _said_lines() -> list[str]:
    """Every fixture line the parser makes an Init or network event of."""
    out = []
    for path in ALL_FIXTURES:
        r = parse(str(path.relative_to(FIX)))
        out += [e.ref.text for e in r.sink.events if e.kind in ("nccl.init", "nccl.network")]
    return out


def test_another_ranks_copy_of_an_init_or_network_line_makes_the_same_event():
    """A copy of an Init or network line that another rank printed first is made from the first
    copy's fields (nccl._MADE): the event must be what parsing the copy alone makes."""
    lines = _said_lines()
    assert len(lines) > 20
    # the same lines printed by another process (its own host:pid:tid), in another file, and
    # behind a launcher's rank wrapper
    thread = re.compile(r"[^\s:\[\]]+:\d+:\d+(?= )")
    other = [thread.sub("node7:4242:4343", line, count=1) for line in lines]
    assert sum(a != b for a, b in zip(lines, other)) > 20
    wrapped = [f"[rank5]:{line}" for line in other]
    for copies in (other, wrapped):
        nccl._MADE.clear()
        parse_text("first.log", lines)
        assert nccl._MADE, "the first copies leave their fields"
        made_before = dict(nccl._MADE)
        again = parse_text("copy.log", copies).sink.events
        assert nccl._MADE == made_before, "every copy was made from the first copy's fields"
        nccl._MADE.clear()
        alone = parse_text("copy.log", copies).sink.events
        assert [e.kind for e in again] == [e.kind for e in alone]
        assert again == alone
        assert [e.data for e in again] == [e.data for e in alone]
        # each event holds its own lists: a change to one copy's data is not another's
        lists = [id(v) for e in again for v in e.data.values() if isinstance(v, list)]
        assert len(lists) == len(set(lists))
