"""interfaces._job_endpoints is read once per case (issue 17: several rules ask, each walk reads every
event's text); each case gets its own answer, never another case's."""
from postmortem.classify.rules import interfaces
from postmortem.model import Case, Event, Ref


def _case(name: str, texts: list[str]) -> Case:
    events = tuple(Event("launcher.line", t, Ref("stderr.txt", i + 1, text=t), seq=i) for i, t in enumerate(texts))
    return Case(name, events, (), (), ())


def test_each_case_gets_its_own_endpoints_however_they_alternate():
    a = _case("a", ["connect to 10.0.0.7:29500 failed", "MASTER_ADDR=10.0.0.7"])
    b = _case("b", ["peer 192.168.3.4:5000 reset the connection"])
    c = _case("c", ["nothing with an address here"])
    want = {"a": (frozenset({"10.0.0.7"}), frozenset({29500})), "b": (frozenset({"192.168.3.4"}), frozenset({5000})),
            "c": (frozenset(), frozenset())}
    for case in (a, b, a, c, b, a, c, c, a):
        assert interfaces._job_endpoints(case) == want[case.name] == interfaces._endpoints_of(case)


def test_read_once_per_case():
    calls = []
    real = interfaces._endpoints_of
    interfaces._endpoints_of = lambda case: calls.append(case.name) or real(case)
    try:
        a = _case("a2", ["connect to 10.0.0.9:1234 failed"])
        for _ in range(3):
            interfaces._job_endpoints(a)
    finally:
        interfaces._endpoints_of = real
    assert calls == ["a2"]
