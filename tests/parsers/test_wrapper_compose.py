"""docker compose's log prefix (`<container>  | `, docker/compose cmd/formatter/logs.go setPrefix) is
peeled like other launchers' prefixes, the container kept as the line's host, so a traceback or a
fatal signal behind it is read as usual.  Real lines: fixtures/launcher/compose (SOURCE.md)."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers.wrappers import strip
from postmortem.run import analyze

COMPOSE = Path(__file__).resolve().parents[2] / "fixtures/launcher/compose"


def test_prefix_is_peeled_and_names_the_container():
    assert strip("gemma3n-api-1  | Traceback (most recent call last):") == (
        "Traceback (most recent call last):", None, "gemma3n-api-1", None)
    assert strip("gemma3n-api-1  | ")[0] == "" and strip("backend-1  |")[2] == "backend-1"
    # coloured on a terminal (the whole prefix), and torch's own rank prefix behind it
    assert strip("\x1b[36mtrainer-1  | \x1b[0m[rank1]: RuntimeError: x")[:3] == ("RuntimeError: x", 1, "trainer-1")


def test_table_rows_and_messages_are_not_prefixes():
    # a name must end in compose's container index; a model summary row or a message with a pipe is left alone
    for line in ("0 | model | GPT | 124 M", "loss | 0.25", "Name  | Type  | Params"):
        assert strip(line) == (line, None, None, None)


def test_traceback_behind_the_prefix_is_read():
    a = analyze(COMPOSE)
    errors = [e for e in a.case.events if e.kind == "py.exception" and "ImportError" in e.text]
    assert errors and errors[0].host == "gemma3n-api-1", [(e.kind, e.text[:60]) for e in a.case.events][:20]
    assert any("Bus error" in e.text and e.host == "shm-bus-error-pub-1" for e in a.case.events)


def test_compose_exit_line_is_the_containers_exit():
    a = analyze(COMPOSE)
    exits = [e for e in a.case.events if e.kind == "launcher.exit" and e.data.get("launcher") == "compose"]
    assert [(e.host, e.data.get("exitcode"), e.data.get("signal")) for e in exits] == [("gemma3n-api-1", 1, None)]


def test_compose_exit_status_above_128_is_the_signal(tmp_path):
    # docker/compose printer.go: Status(container, fmt.Sprintf("exited with code %d", event.ExitCode)); a
    # container's status is 128+N when signal N killed its process
    (tmp_path / "up.log").write_text("trainer-1 exited with code 137\ntrainer-2 exited with code 135\n"
                                     "Process exited with code 1\n", encoding="utf-8")
    a = analyze(tmp_path)
    got = [(e.host, e.data.get("signal")) for e in a.case.events if e.kind == "launcher.exit"]
    assert got == [("trainer-1", "SIGKILL"), ("trainer-2", "SIGBUS")]
