"""Citations stay inside the repository.

Code, knowledge files, grammars, docs, tests and fixture notes cite the format facts as
`docs/formats.md §N`; each such section must exist there.  Nothing the package or its grammars
ship names a path outside the repository (a reference file on a developer's machine).
"""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT / "docs" / "formats.md"
TEXT_ENDINGS = (".py", ".toml", ".lark", ".md", ".j2", ".txt", ".css", ".js", ".json")

# e.g. docs/formats.md §2.5; docs/formats.md §1.6, §5.5; docs/formats.md §2.1–2.2
CITATION = re.compile(r"(\S{0,200})formats\.md`? ?§ ?([0-9][0-9.]*(?:[–-][0-9][0-9.]*)?(?:, ?§ ?[0-9][0-9.]*)*)")
SECTION_HEADING = re.compile(r"^#{2,6} §([0-9]+(?:\.[0-9]+)*) ", re.M)
SELF_REFERENCE = re.compile(r"§ ?([0-9]+(?:\.[0-9]+)*)")
# A path that leaves the repository: the project's shared folder on a development machine.
OUTSIDE = re.compile(r"/work/|\.\./shared\b|~/")


def _tracked(*tops: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *tops], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / p for p in out.split() if p.endswith(TEXT_ENDINGS) and not p.startswith("fixtures/frozen/")]


def _files(*tops: str) -> list[Path]:
    """Files git tracks under `tops`, or every text file there outside a checkout."""
    try:
        found = _tracked(*tops)
    except (OSError, subprocess.CalledProcessError):
        found = []
    if found:
        return found
    return [p for top in tops for p in (ROOT / top).rglob("*")
            if p.is_file() and p.suffix in TEXT_ENDINGS and "frozen" not in p.parts]


def _sections() -> set[str]:
    return set(SECTION_HEADING.findall(FORMATS.read_text(encoding="utf-8")))


def _numbers(cited: str) -> list[str]:
    out = []
    for part in re.split(r",\s*§\s*", cited):
        out.extend(x.rstrip(".") for x in re.split(r"[–-]", part))
    return out


def test_the_reference_sections_exist():
    # The parts the knowledge files lean on most: the Xid catalog, NCCL WARN texts, DataLoader/shm.
    assert {"1.6", "2.5", "5.5"} <= _sections()


def test_every_formats_md_citation_names_a_section_of_docs_formats_md():
    sections = _sections()
    bad = []
    for path in _files("postmortem", "grammars", "docs", "tests", "fixtures", "tools", "bench", "README.md"):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "formats.md" not in text:
            continue   # (and a fixture's megabyte JSON line without a space is never scanned by the regex)
        for m in CITATION.finditer(text):
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            if not m.group(1).endswith("docs/"):
                bad.append(f"{where}: `{m.group(0)}` (write docs/formats.md §N)")
                continue
            bad += [f"{where}: §{n} is not a section of docs/formats.md" for n in _numbers(m.group(2))
                    if n not in sections]
    assert not bad, "\n".join(bad)


def test_section_references_inside_docs_formats_md_resolve():
    sections = _sections()
    text = FORMATS.read_text(encoding="utf-8")
    missing = sorted({n.rstrip(".") for n in SELF_REFERENCE.findall(text)} - sections)
    assert not missing, f"docs/formats.md refers to sections it does not have: {missing}"


def test_package_and_grammars_name_no_path_outside_the_repository():
    bad = []
    for path in _files("postmortem", "grammars"):
        for no, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()[:120]}")
    assert not bad, "\n".join(bad)


def test_the_checks_catch_what_they_look_for():
    # The patterns themselves: an out-of-repo citation and a bare one are seen, a good one is not
    # (written in pieces so this file holds no citation of its own).
    md = "formats" + ".md"
    assert CITATION.search(f"see ../shared/{md} §2.5").group(1) == "../shared/"
    assert CITATION.search(f"{md} §5.5 (torch)").group(1) == ""
    assert CITATION.search(f"docs/{md} §1.6, §5.5").group(2) == "1.6, §5.5"
    assert _numbers("2.1–2.2") == ["2.1", "2.2"] and _numbers("1.6, §5.5") == ["1.6", "5.5"]
    assert OUTSIDE.search("// Formats: /" + "work/shared/" + md) and not OUTSIDE.search("/dev/shm/nccl-*")
