"""What a run summary shows, computed once and shared by the text and JSON forms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autopsy.model.run import Run


def tag_table(run: Run) -> list[dict[str, Any]]:
    """One row per canonical tag: raw spellings, points, step range, non-finite count."""
    import numpy as np

    df = run.scalars
    if df.empty:
        return []
    rows = []
    finite = np.isfinite(df["value"].to_numpy())
    all_steps = df["step"].to_numpy()
    raw_codes = df["raw_tag"].cat.codes.to_numpy()
    raw_names = df["raw_tag"].cat.categories
    for tag, idx in df.groupby("tag", observed=True).indices.items():
        steps = all_steps[idx]
        codes = np.unique(raw_codes[idx])
        raws = sorted(str(raw_names[c]) for c in codes if c >= 0)
        rows.append(
            {
                "tag": str(tag),
                "raw_tags": raws,
                "points": len(idx),
                "first_step": int(steps.min()),
                "last_step": int(steps.max()),
                "non_finite": int((~finite[idx]).sum()),
            }
        )
    return sorted(rows, key=lambda r: r["tag"])


def run_summary(run: Run) -> dict[str, Any]:
    """The ``run`` object of the JSON report (and the content of the text summary)."""
    steps = run.scalars["step"]
    return {
        "path": run.root.as_posix(),
        "sources": [s.to_dict() for s in run.sources],
        "unread": list(run.unread),
        "steps": (
            {"first": int(steps.min()), "last": int(steps.max())} if len(steps) else None
        ),
        "segments": run.segments(),
        "tags": tag_table(run),
        "config": run.config.to_dict(),
        "points": len(run.scalars),
        "events": len(run.events),
        "checkpoints": checkpoint_rows(run),
    }


def checkpoint_rows(run: Run) -> list[dict[str, Any]]:
    """The checkpoints audited for the run (oldest first): path relative to the run,
    layout, step, whether a resume from it is exact, and what it would lose."""
    rows = []
    for audit in run.checkpoints:
        path = Path(audit.path)
        try:
            shown = path.resolve().relative_to(run.root.resolve()).as_posix()
        except (ValueError, OSError):
            shown = path.as_posix()
        rows.append({
            "path": shown,
            "layout": audit.layout,
            "step": audit.step,
            "resumable": audit.resumable,
            "resume_level": audit.resume_level,
            "losses": audit.losses(),
        })
    return rows
