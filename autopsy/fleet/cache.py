"""The fleet's per-run cache: a run's result, keyed by the run's path, the paths, sizes and
mtimes of its files, autopsy's version and the rule settings, so a nightly re-run over
thousands of runs diagnoses only what changed.

Entries are JSON files under the cache folder (``--cache``; by default
``$XDG_CACHE_HOME/autopsy/fleet`` or ``~/.cache/autopsy/fleet``), never in a run. A
damaged entry is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from autopsy._version import __version__
from autopsy.readers.discover import walk_files

#: Files stat'ed per run for its key; a run with more is keyed by these and their count.
MAX_KEY_FILES = 200_000


def default_dir() -> Path:
    """``$XDG_CACHE_HOME/autopsy/fleet``, else ``~/.cache/autopsy/fleet``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "autopsy" / "fleet"


def run_key(path: Path, sets: tuple[str, ...] = ()) -> str:
    """The cache key of the run at ``path`` (see the module docstring)."""
    digest = hashlib.sha256()
    # the run's own path too: two copies of one run have the same files, but their
    # reports name where each lies
    digest.update(f"{__version__}\0{sorted(sets)!r}\0{path.resolve()}\0".encode(
        "utf-8", "surrogateescape"))
    entries = []
    for n, file in enumerate(walk_files(path, [])):
        if n >= MAX_KEY_FILES:
            break
        try:
            st = file.stat()
        except OSError:
            continue
        rel = os.path.relpath(file, path) if path.is_dir() else file.name
        entries.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
    for entry in sorted(entries):
        digest.update(entry.encode("utf-8", "surrogateescape"))
        digest.update(b"\n")
    return digest.hexdigest()


class Cache:
    """Results stored by key; ``folder=None`` is no cache at all."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.hits = 0
        self.misses = 0

    def _file(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored result, or None."""
        if self.folder is None:
            return None
        try:
            with open(self._file(key), encoding="utf-8") as fh:
                got = json.load(fh)
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(got, dict) or "row" not in got:
            self.misses += 1
            return None
        self.hits += 1
        return got

    def put(self, key: str, result: dict[str, Any]) -> None:
        """Store ``result`` (written to a temporary file, then renamed into place)."""
        if self.folder is None:
            return
        error = result["row"].get("error")
        if isinstance(error, str) and error.startswith("timed out"):
            return  # a run that timed out is tried again next time
        target = self._file(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(result, allow_nan=False), encoding="utf-8")
            os.replace(tmp, target)
        except (OSError, ValueError):
            pass  # a cache that cannot be written costs a re-run next time, nothing else
