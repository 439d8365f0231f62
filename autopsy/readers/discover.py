"""Walk a run directory, recognise each file, and dispatch it to its reader.

Discovery reads only: it never writes anything into the run directory. It walks a
symlinked folder only where it lies inside the run (a link out of it, say to ``/``, is a
recorded ``outside_link`` problem, not a walk of the system; a linked *file* is read
wherever it lies, as the Hugging Face hub cache links every file to its blob), and
symlinked directories once
(a visited set of ``(st_dev, st_ino)`` breaks loops),
records every file it has no reader for, and turns a reader's unexpected failure
into a recorded problem instead of a crash.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from autopsy.model.problem import Problem
from autopsy.readers.registry import READER_MODULES, reader_modules

__all__ = ["READER_MODULES", "Discovery", "discover", "printable_name", "reader_modules",
           "walk_files"]

#: Directory names never descended into (tool caches, VCS metadata).
SKIP_DIRS: frozenset[str] = frozenset({".git", "__pycache__", ".ipynb_checkpoints", ".hg", ".svn"})

#: Walking stops (with a recorded problem) after this many files.
MAX_FILES = 200_000


@dataclass
class Discovery:
    """What a walk found: files per reader, files nobody reads, problems."""

    root: Path
    by_reader: dict[str, list[Path]] = field(default_factory=dict)
    unread: list[Path] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def rel(self, path: Path) -> str:
        """Return ``path`` relative to the run root, with ``/`` separators.

        Bytes of a file name that are not UTF-8 are written as ``\\xNN``: the name is a
        label on every row (``source``), and frames, JSON and terminals need real text.
        """
        if self.root.is_file():
            rel = path.name
        else:
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                rel = path.as_posix()
        return printable_name(rel)


def printable_name(name: str) -> str:
    """``name`` with the undecodable bytes of a file-system name (surrogate escapes)
    written as ``\\xNN``; a valid name is returned unchanged."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def walk_files(root: Path, problems: list[Problem]) -> Iterator[Path]:
    """Yield every regular file under ``root``, sorted per directory, loop-safe."""
    if root.is_file():
        yield root
        return
    seen: set[tuple[int, int]] = set()
    stack: list[Path] = [root]
    count = 0
    try:
        base = root.resolve()
    except (OSError, RuntimeError):
        base = root.absolute()
    while stack:
        directory = stack.pop()
        try:
            st = directory.stat()
        except OSError as exc:
            problems.append(Problem(str(directory), f"cannot stat directory: {exc.strerror}",
                                    kind="unreadable"))
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(str(directory), f"cannot list directory: {exc.strerror}",
                                    kind="unreadable"))
            continue
        subdirs: list[Path] = []
        for entry in entries:
            try:
                if (entry.is_symlink() and entry.is_dir()
                        and not _inside(Path(entry.path), base)):
                    problems.append(Problem(
                        printable_name(os.path.relpath(entry.path, root)),
                        "a symbolic link to the folder "
                        f"{printable_name(os.readlink(entry.path))}, outside the run: not "
                        "walked (give it to autopsy itself to read it)", kind="outside_link"))
                    continue
                if entry.is_dir():
                    if entry.name not in SKIP_DIRS:
                        subdirs.append(Path(entry.path))
                elif entry.is_file():
                    count += 1
                    if count > MAX_FILES:
                        what = f"more than {MAX_FILES} files; the rest were not looked at"
                        problems.append(Problem(str(root), what, kind="too_many_files"))
                        return
                    yield Path(entry.path)
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def _inside(link: Path, base: Path) -> bool:
    """Whether the symbolic link ``link`` resolves to a place inside ``base``."""
    try:
        target = link.resolve()
    except (OSError, RuntimeError):  # a loop of links: not followed
        return False
    return target == base or target.is_relative_to(base)


def discover(root: Path, paths: list[Path] | None = None) -> Discovery:
    """Walk ``root`` (or each of ``paths`` under it) and give every file to the first
    reader that sniffs it. Relative paths in the result are relative to ``root``."""
    found = Discovery(root=root)
    modules = reader_modules()
    seen: set[Path] = set()
    for path in (p for start in (paths or [root]) for p in walk_files(start, found.problems)):
        if path in seen:  # the same file named twice on the command line
            continue
        seen.add(path)
        for module in modules:
            try:
                recognised = bool(module.sniff(path))
            except Exception:  # a sniff must never take discovery down
                recognised = False
            if recognised:
                found.by_reader.setdefault(module.NAME, []).append(path)
                break
        else:
            found.unread.append(path)
    return found
