"""Finding the bundles under the folders given to `postmortem triage`.

Directly under each DIR, one bundle per:
* subfolder - or its `bundle/` when it also holds `truth.json` (the corpus layout); a
  subfolder that holds such cases itself (a set of cases, like fixtures/corpus) is opened
  and each of its cases is a bundle, named `set/case`;
* archive   - .tar, .tar.gz, .tgz, .zip (read in place by postmortem.bundle);
* loose file that is a crash artifact - a core, a gzip, a log (single-file bundles, as
  in fixtures/cores); sources, docs and executables beside them are not bundles.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from postmortem import bundle

# Loose files that sit beside bundles but are not crash evidence.
NOT_BUNDLE_SUFFIXES = (".md", ".rst", ".c", ".cc", ".cpp", ".h", ".py", ".sh", ".json", ".toml",
                       ".yaml", ".yml", ".html", ".css", ".j2")
NOT_BUNDLE_NAMES = ("readme", "license", "makefile")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class DiscoveryError(ValueError):
    """A DIR given on the command line is not a folder."""


@dataclass(frozen=True, slots=True)
class Task:
    """One bundle to analyse: its path as found, and a unique name for its report."""

    name: str
    path: str


def find_bundles(dirs: list[Path]) -> list[Task]:
    tasks: list[Task] = []
    taken: set[str] = set()
    for folder in dirs:
        if not folder.is_dir():
            raise DiscoveryError(f"{folder}: not a directory")
        for child in sorted(folder.iterdir(), key=lambda p: p.name):
            inside = _cases_in(child)
            for name, path in inside or filter(None, [_bundle_at(child)]):
                tasks.append(Task(_unique(_safe(name), taken), str(path)))
    return tasks


def _cases_in(folder: Path) -> list[tuple[str, Path]]:
    """The cases of a folder that is a set of cases (`<case>/bundle/` + `<case>/truth.json`),
    else nothing: such a folder is many crashes, not one bundle."""
    if folder.name.startswith(".") or folder.is_symlink() or not folder.is_dir() or _is_case(folder):
        return []
    cases = sorted((c for c in folder.iterdir() if not c.is_symlink() and _is_case(c)), key=lambda p: p.name)
    return [(f"{folder.name}/{c.name}", c / "bundle") for c in cases]


def _is_case(folder: Path) -> bool:
    return (folder / "bundle").is_dir() and (folder / "truth.json").is_file()


def _bundle_at(child: Path) -> tuple[str, Path] | None:
    if child.name.startswith("."):
        return None
    if child.is_dir():
        if _is_case(child):
            return child.name, child / "bundle"
        return child.name, child
    if child.name.lower().endswith(bundle.ARCHIVE_SUFFIXES):
        return bundle.bundle_name(child), child
    if child.is_file() and _is_crash_artifact(child):
        return child.name, child
    return None


def _is_crash_artifact(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith(NOT_BUNDLE_SUFFIXES) or name in NOT_BUNDLE_NAMES:
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(bundle.SNIFF_BYTES)
    except OSError:
        return True   # unreadable: let the analysis say so in its own error group
    return bundle.sniff(head) in ("core", "gzip", "text")


def _safe(name: str) -> str:
    return _UNSAFE_NAME.sub("_", name).strip("._") or "bundle"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate
