"""Folder and single-file bundles, read from disk by file descriptor.

Owns the walk of a folder bundle: every file is reached from an open descriptor on the
top folder one component at a time with O_NOFOLLOW (a folder swapped for a link during
the run cannot lead outside), links that leave the bundle are not followed, FIFOs,
sockets and devices are skipped, a file with more than one hard link is refused unless
the caller allows hard links, and the walk is iterative and bounded by the budget's
file count and depth.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO, Callable

from postmortem.budget import Meter
from postmortem.model import Artifact
from postmortem.bundle.entry import Entry, assign_hosts, not_read, utc_mtime

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _hardlink_message(nlink: int) -> str:
    return (f"regular file with {nlink} hard links; not read (a hard link can be any file of this "
            f"machine); pass --allow-hardlinks to read it")


def single_file(path: Path, allow_hardlinks: bool) -> tuple[list[Entry], list[Artifact]]:
    st = path.stat()
    if st.st_nlink > 1 and not allow_hardlinks and stat.S_ISREG(st.st_mode):
        return [], [not_read(path.name, "hardlink", _hardlink_message(st.st_nlink))]
    return [Entry(path.name, st.st_size, utc_mtime(st.st_mtime), _path_opener(path, allow_hardlinks),
                  disk_path=path)], []




class _Root:
    """An open descriptor on the bundle's top folder; every file is reached from it one
    component at a time, each opened with O_NOFOLLOW.  A few recently used folder
    descriptors are kept, so a deep walk opens each level once, not once per level."""

    KEEP = 32

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        self._kept: dict[tuple[str, ...], int] = {}

    def __del__(self) -> None:
        for fd in [getattr(self, "fd", -1), *getattr(self, "_kept", {}).values()]:
            try:
                os.close(fd)
            except OSError:
                pass

    def open_dir(self, parts: tuple[str, ...]) -> int:
        """A new descriptor on the folder at `parts` below the root; the caller closes it."""
        start = len(parts)
        while start and parts[:start] not in self._kept:
            start -= 1
        fd = os.dup(self._kept[parts[:start]] if start else self.fd)
        try:
            for i in range(start, len(parts)):
                nxt = os.open(parts[i], os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError:
            os.close(fd)
            raise
        if parts and parts not in self._kept:
            if len(self._kept) >= self.KEEP:
                os.close(self._kept.pop(next(iter(self._kept))))
            self._kept[parts] = os.dup(fd)
        return fd

    def forget(self) -> None:
        """Drop the kept folder descriptors: later opens walk again from the root."""
        for fd in self._kept.values():
            os.close(fd)
        self._kept.clear()

    def opener(self, parts: tuple[str, ...], allow_hardlinks: bool) -> Callable[[], BinaryIO]:
        def open_file() -> BinaryIO:
            dfd = self.open_dir(parts[:-1])
            try:
                # O_NONBLOCK guards against a file that turned into a FIFO after the scan.
                fd = os.open(parts[-1], os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=dfd)
            finally:
                os.close(dfd)
            return _checked_file(fd, allow_hardlinks)
        return open_file


def _checked_file(fd: int, allow_hardlinks: bool) -> BinaryIO:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError("not a regular file any more")
    if st.st_nlink > 1 and not allow_hardlinks:
        os.close(fd)
        raise OSError(_hardlink_message(st.st_nlink))
    return os.fdopen(fd, "rb")


def _path_opener(path: Path, allow_hardlinks: bool) -> Callable[[], BinaryIO]:
    def open_file() -> BinaryIO:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_NOFOLLOW | _O_CLOEXEC)
        return _checked_file(fd, allow_hardlinks)
    return open_file


def scan_directory(top: Path, meter: Meter, allow_hardlinks: bool) -> tuple[list[Entry], list[Artifact]]:
    """Walk iteratively (no recursion: 1,500-deep trees are fine) by descriptor."""
    root_path = top.resolve()
    root = _Root(root_path)
    entries: list[Entry] = []
    skipped: list[Artifact] = []
    limit = meter.budget.files
    # A stack of folders still to list, each as its path components below the root;
    # reversed pushes keep the walk in name order.
    todo: list[tuple[str, ...]] = [()]
    while todo:
        parts = todo.pop()
        rel = "/".join(parts)
        if len(parts) > meter.budget.depth:
            skipped.append(not_read(rel, "folder", f"nested more than {meter.budget.depth} folders deep; not read"))
            continue
        try:
            dfd = root.open_dir(parts)
        except OSError as exc:
            skipped.append(not_read(rel or ".", "unreadable", f"cannot open folder: {exc.strerror or exc}"))
            continue
        try:
            names = _list_names(dfd, limit - len(entries) + 1)
            subdirs: list[tuple[str, ...]] = []
            for name in names:
                if len(entries) >= limit:
                    meter.note(f"the bundle holds more than {limit} files; the first {limit} were read")
                    todo.clear()
                    break
                relpath = "/".join(parts + (name,))
                try:
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                except OSError as exc:
                    skipped.append(not_read(relpath, "unreadable", exc.strerror or str(exc)))
                    continue
                if stat.S_ISLNK(st.st_mode):
                    _add_link(root, root_path, parts, name, relpath, entries, skipped, allow_hardlinks)
                elif stat.S_ISDIR(st.st_mode):
                    subdirs.append(parts + (name,))
                elif stat.S_ISREG(st.st_mode):
                    if st.st_nlink > 1 and not allow_hardlinks:
                        skipped.append(not_read(relpath, "hardlink", _hardlink_message(st.st_nlink)))
                        continue
                    entries.append(Entry(relpath, st.st_size, utc_mtime(st.st_mtime),
                                         root.opener(parts + (name,), allow_hardlinks),
                                         disk_path=root_path.joinpath(*parts, name)))
                else:
                    skipped.append(not_read(relpath, "special", "FIFO, socket or device file; skipped"))
            todo.extend(reversed(subdirs))
        finally:
            os.close(dfd)
    root.forget()
    return assign_hosts(entries), skipped


def _list_names(dfd: int, limit: int) -> list[str]:
    """Names in one folder, sorted; a folder of a million files is cut at `limit` names
    (taken in directory order) so listing stays bounded."""
    names: list[str] = []
    with os.scandir(dfd) as it:
        for e in it:
            names.append(e.name)
            if len(names) >= max(limit, 1):
                break
    return sorted(names)


def _add_link(root: _Root, root_path: Path, parts: tuple[str, ...], name: str, relpath: str,
              entries: list[Entry], skipped: list[Artifact], allow_hardlinks: bool) -> None:
    """A link to a file inside the bundle is read at its link path; anything else is not followed."""
    target = _resolve_inside(root_path.joinpath(*parts, name), root_path)
    if target is None:
        skipped.append(not_read(relpath, "link", "symbolic link leaves the bundle; not followed"))
        return
    try:
        st = target.lstat()
    except OSError:
        skipped.append(not_read(relpath, "link", "symbolic link leaves the bundle; not followed"))
        return
    if stat.S_ISDIR(st.st_mode):
        skipped.append(not_read(relpath, "link", "link to a folder inside the bundle; read at its own path"))
        return
    if not stat.S_ISREG(st.st_mode):
        skipped.append(not_read(relpath, "link", "link to a special file; not followed"))
        return
    tparts = target.relative_to(root_path).parts
    # Opened again from the root with O_NOFOLLOW per component: a swap after this check fails.
    entries.append(Entry(relpath, st.st_size, utc_mtime(st.st_mtime), root.opener(tparts, allow_hardlinks),
                         disk_path=target))


def _resolve_inside(link: Path, root: Path) -> Path | None:
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    return target if target == root or root in target.parents else None

