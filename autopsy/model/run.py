"""The Run: one model of everything a run left behind."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autopsy.model.config import RunConfig
from autopsy.model.problem import Problem

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from autopsy.ckpt.components import CheckpointAudit


#: Readers whose numbers are printed text, often rounded (a tie-break in :meth:`Run.series`).
LOW_FIDELITY_READERS: frozenset[str] = frozenset({"ranklogs"})


@dataclass(frozen=True)
class SourceInfo:
    """One file that a reader read: which reader, and how many rows it gave."""

    path: str
    reader: str
    scalars: int = 0
    events: int = 0
    config: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict."""
        return {
            "path": self.path,
            "reader": self.reader,
            "scalars": self.scalars,
            "events": self.events,
            "config": self.config,
        }


@dataclass
class Run:
    """Everything autopsy knows about one run.

    Attributes:
        root: the directory (or file) the run was loaded from.
        scalars: the long scalars frame (see :mod:`autopsy.model.scalars`).
        events: the events frame (see :mod:`autopsy.model.events`).
        config: what the run was told to do, each value with its source.
        checkpoints: checkpoint audit results (:class:`autopsy.ckpt.components.CheckpointAudit`,
            filled by ``autopsy.ckpt``), oldest first.
        problems: inputs that could not be read fully.
        sources: the files read, with their reader and row counts.
        unread: files found that no reader recognises (relative paths).
    """

    root: Path
    scalars: pd.DataFrame
    events: pd.DataFrame
    config: RunConfig = field(default_factory=RunConfig)
    checkpoints: list[CheckpointAudit] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    sources: list[SourceInfo] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    #: :meth:`series` results, each with the frame and source count it was computed from
    #: (rules ask for the same tag many times; a new frame or source list misses)
    _series_memo: dict[tuple[Any, ...], tuple[Any, int, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    @property
    def tags(self) -> list[str]:
        """Canonical tags present, sorted."""
        return self.tags_where(None)

    def tags_where(self, mask: Any) -> list[str]:
        """Canonical tags of the rows selected by a boolean ``mask`` (all rows if None), sorted.

        Works on the categorical codes: no per-row strings, whatever the frame's size.
        """
        import numpy as np

        tag = self.scalars["tag"]
        if tag.empty:
            return []
        codes = tag.cat.codes.to_numpy()
        if mask is not None:
            codes = codes[np.asarray(mask, dtype=bool)]
        present = np.unique(codes[codes >= 0])
        categories = tag.cat.categories
        return sorted(str(categories[i]) for i in present)

    def has(self, tag: str) -> bool:
        """Whether the run has at least one point of canonical ``tag``."""
        return bool((self.scalars["tag"] == tag).any())

    def series(
        self,
        tag: str,
        *,
        rank: int | None = None,
        segment: int | None = None,
        source: str | None = None,
    ) -> pd.Series:
        """Return one canonical tag as a float Series indexed by step.

        When several sources or segments hold the same step, the row from the
        latest segment wins (the run as it finally went), and within a segment an
        exact source (event files, trainer_state.json) wins over a text log, which
        prints rounded values; pass ``segment`` to see a pre-restart tail.
        ``rank=None`` takes rows of any rank only when the run has a single rank
        (or none); otherwise it takes rank 0. Each call returns a new Series.
        """
        key = (tag, rank, segment, source)
        memo = self._series_memo.get(key)
        if memo is None or memo[0] is not self.scalars or memo[1] != len(self.sources):
            memo = (self.scalars, len(self.sources),
                    self._series(tag, rank=rank, segment=segment, source=source))
            self._series_memo[key] = memo
        return memo[2].copy()

    def _series(self, tag: str, *, rank: int | None, segment: int | None,
                source: str | None) -> pd.Series:
        import pandas as pd

        df = self.scalars
        mask = df["tag"] == tag
        if rank is not None:
            mask &= df["rank"] == rank
        else:
            ranks = df.loc[mask, "rank"].dropna().unique()
            if len(ranks) > 1:
                mask &= df["rank"] == min(int(r) for r in ranks)
        if segment is not None:
            mask &= df["segment"] == segment
        if source is not None:
            mask &= df["source"] == source
        sub = df.loc[mask, ["step", "segment", "value", "source"]]
        if sub.empty:
            return pd.Series([], dtype="float64", name=tag, index=pd.Index([], name="step"))
        low = {s.path for s in self.sources if s.reader in LOW_FIDELITY_READERS}
        exact = (~sub["source"].isin(low)).to_numpy() if low else True  # no per-row strings
        sub = sub.assign(exact=exact).sort_values(["step", "segment", "exact"], kind="stable")
        sub = sub.drop_duplicates("step", keep="last")
        index = pd.Index(sub["step"].to_numpy(), name="step")
        out = pd.Series(sub["value"].to_numpy(), index=index)
        out.name = tag
        return out

    def wide(self, tags: list[str] | None = None, *, rank: int | None = None) -> pd.DataFrame:
        """Return a wide frame: one row per step, one column per canonical tag."""
        import pandas as pd

        names = tags if tags is not None else self.tags
        cols = {t: self.series(t, rank=rank) for t in names}
        if not cols:
            return pd.DataFrame(index=pd.Index([], name="step"))
        return pd.DataFrame(cols).sort_index()

    def segments(self) -> list[dict[str, Any]]:
        """Steps covered per segment: ``[{"segment", "first_step", "last_step", "points"}]``."""
        if self.scalars.empty:
            return []
        grouped = self.scalars.groupby("segment", observed=True)["step"].agg(["min", "max", "size"])
        return [
            {
                "segment": int(seg),
                "first_step": int(row["min"]),
                "last_step": int(row["max"]),
                "points": int(row["size"]),
            }
            for seg, row in grouped.iterrows()
        ]
