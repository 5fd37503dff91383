"""The fuzz campaign's findings and corpus stay fixed (issue 19): every input kept under
fuzz/crashers/ (one per crasher class the fuzzers found: an exception, a contained parser or
core-reader failure, a hang, a memory blow-up) and every corpus input under fuzz/corpus/
goes through the same target again and must now pass.  The inputs are DELIBERATELY HOSTILE,
made by bench/fuzz_parsers.py, bench/fuzz_archives.py and bench/fuzz_cores.py."""
from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
FUZZ = ROOT / "fuzz"


def _inputs(kind: str, target: str) -> list[Path]:
    return sorted((FUZZ / kind / target).glob("*.json"))


def _ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.stem}" for p in paths]


def _replay_parsers(case: dict, tmp_path: Path) -> None:
    from postmortem import knowledge
    from postmortem.parsers import parse_text

    result = parse_text("fuzz.log", case["lines"], k=knowledge.load())
    assert not [p for p in result.sink.problems if " parser failed at " in p]
    if case.get("whole_analysis"):
        import fuzz_parsers

        fuzz_parsers.full_analysis(case["lines"], tmp_path)


def _replay_archives(case: dict, tmp_path: Path) -> None:
    from postmortem.budget import Budget
    from postmortem.bundle import BundleError
    from postmortem.run import Options, analyze

    p = tmp_path / f"fuzz{case['suffix']}"
    p.write_bytes(base64.b64decode(case["b64"]))
    try:
        a = analyze(p, Options(budget=Budget(bytes=64 << 20, files=500)))
    except BundleError as exc:
        assert str(exc)
        return
    assert a.verdict.category.value in ("config", "comms", "hardware", "unknown")


def _replay_cores(case: dict, tmp_path: Path) -> None:
    import fuzz_cores

    from postmortem.core import read_core

    if "recipe" in case:
        r = case["recipe"]
        seeds = _core_seeds()
        result = read_core(fuzz_cores.stream_of(seeds, r), r["core"], search_dirs=(fuzz_cores.CORES,))
        assert not [p for p in result.problems if p.startswith("core reader failed")]
        if case.get("whole_analysis"):
            fuzz_cores.full_analysis(fuzz_cores.stream_of(seeds, r).materialize(), r["core"], tmp_path)
    elif case.get("hex"):
        a = fuzz_cores.analyze_one(bytes.fromhex(case["hex"]), case["compressed"], tmp_path)
        assert a.verdict.category.value in ("config", "comms", "hardware", "unknown")


_SEEDS: dict[str, bytes] = {}


def _core_seeds() -> dict[str, bytes]:
    if not _SEEDS:
        import fuzz_cores

        _SEEDS.update(fuzz_cores.load_seeds())
    return _SEEDS


REPLAY = {"parsers": _replay_parsers, "archives": _replay_archives, "cores": _replay_cores}
CRASHERS = [p for t in REPLAY for p in _inputs("crashers", t)]


@pytest.mark.parametrize("path", CRASHERS, ids=_ids(CRASHERS))
def test_a_kept_crasher_passes_now(path, tmp_path):
    case = json.loads(path.read_text())
    REPLAY[path.parent.name](case, tmp_path)


@pytest.mark.parametrize("target", sorted(REPLAY))
def test_the_corpus_replays_clean(target, tmp_path):
    paths = _inputs("corpus", target)
    assert paths, f"fuzz/corpus/{target} is empty: run bench/fuzz_{target}.py"
    for path in paths:
        case = json.loads(path.read_text())
        # a corpus entry is the input itself; the recipe of a core is stored under "recipe"
        REPLAY[target](case, tmp_path)


def test_the_campaign_log_counts_every_run():
    runs = [json.loads(line) for line in (FUZZ / "runs.jsonl").read_text().splitlines() if line.strip()]
    assert {r["target"] for r in runs} >= set(REPLAY)
    assert all(r["inputs"] >= 0 and r["seconds"] >= 0 for r in runs)
