"""Ray's coloured line prefix (ray/_private/worker.py print_worker_logs: colorama Style.DIM and Fore.CYAN
before '(ActorName pid=N, ip=A)', Style.RESET_ALL after it) is peeled like the plain one, so the NCCL
line behind it is read the same.  Real lines: vllm-project/vllm#5477 (the paste turned each ESC into
U+FFFD) and its NCCL WARN line from an LLMRayActor (plain prefix)."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers.wrappers import strip
from postmortem.run import analyze

# verbatim from vllm-project/vllm#5477 (the issue body's error block)
PASTED = ("\ufffd[36m(RayWorkerWrapper pid=4183, ip=10.3.32.122)\ufffd[0m ERROR 06-03 23:13:39 worker_base.py:148] "
          "Error executing method start_worker_execution_loop. This might cause deadlock in distributed execution.")
# verbatim from the same issue: an NCCL WARN behind Ray's prefix
NCCL = "(LLMRayActor pid=116812) a5fa65866c9c:116812:120170 [0] proxy.cc:1336 NCCL WARN Cuda failure 1 'invalid argument'"
BODY = "a5fa65866c9c:116812:120170 [0] proxy.cc:1336 NCCL WARN Cuda failure 1 'invalid argument'"


def test_a_pasted_coloured_prefix_is_peeled():
    text, _, _, _ = strip(PASTED)
    assert text.startswith("ERROR 06-03 23:13:39 worker_base.py:148] Error executing method")


def test_the_console_forms_of_the_colour_codes_are_peeled():
    # Ray's console bytes (ESC, which the paste above lost), and a paste that dropped the ESC altogether
    for coloured in ("\x1b[2m\x1b[36m(LLMRayActor pid=116812)\x1b[0m " + BODY, "[2m[36m(LLMRayActor pid=116812)[0m " + BODY):
        assert strip(coloured)[0] == strip(NCCL)[0] == BODY


def test_the_nccl_line_behind_a_coloured_prefix_is_read_as_without_it(tmp_path: Path):
    plain, coloured = tmp_path / "plain.log", tmp_path / "coloured.log"
    plain.write_text(NCCL + "\n", encoding="utf-8")
    coloured.write_text("\x1b[2m\x1b[36m(LLMRayActor pid=116812)\x1b[0m " + BODY + "\n", encoding="utf-8")
    got = [[(e.kind, e.host, e.pid) for e in analyze(p).case.events if e.kind == "nccl.warn"] for p in (plain, coloured)]
    assert got[0] == got[1] == [("nccl.warn", "a5fa65866c9c", 116812)]


def test_colour_codes_without_a_ray_prefix_are_left():
    # near miss: an SGR code before ordinary text is no launcher wrapper
    assert strip("[1m(not a ray prefix) x")[0] == "[1m(not a ray prefix) x"
