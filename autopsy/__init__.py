"""autopsy: the post-mortem of a failed deep-learning training run.

The public API is loaded lazily so that importing :mod:`autopsy` (and so the
CLI's ``--help``) stays cheap: pandas and numpy are imported only when a run is
actually read.

>>> import autopsy
>>> run = autopsy.load_run("sample_runs/healthy_hf_trainer")   # doctest: +SKIP
>>> run.series("loss")                                          # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autopsy._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.api import audit_checkpoint, diagnose, load_run, load_settings
    from autopsy.model.run import Run

__all__ = ["Run", "__version__", "audit_checkpoint", "diagnose", "load_run", "load_settings"]


def __getattr__(name: str) -> Any:
    if name in ("load_run", "diagnose", "load_settings", "audit_checkpoint"):
        import autopsy.api

        return getattr(autopsy.api, name)
    if name == "Run":
        from autopsy.model.run import Run

        return Run
    raise AttributeError(f"module 'autopsy' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (loaded lazily, so the module's namespace does not show it)."""
    return sorted(set(__all__) | {"__doc__", "__name__", "__version__"})
