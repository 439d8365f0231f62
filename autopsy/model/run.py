"""The Run: one model of everything a run left behind."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autopsy.model.config import RunConfig
from autopsy.model.problem import Problem

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
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

    def _rows(self, tag: str, rank: int | None) -> dict[str, Any]:
        """The rows of ``tag`` (rank applied) as arrays (``step``, ``segment``, ``value``,
        ``exact`` source) with their positions per segment and per source; memoised like
        :meth:`series`, so asking for every segment or every file of a run of a thousand
        costs one pass over the frame, not one each."""
        import numpy as np

        key = ("rows", tag, rank)
        memo = self._series_memo.get(key)
        if memo is not None and memo[0] is self.scalars and memo[1] == len(self.sources):
            return memo[2]  # type: ignore[no-any-return]
        df = self.scalars
        mask = df["tag"] == tag
        if rank is not None:
            mask &= df["rank"] == rank
        else:
            ranks = df.loc[mask, "rank"].dropna().unique()
            if len(ranks) > 1:
                mask &= df["rank"] == min(int(r) for r in ranks)
        sub = df.loc[mask, ["step", "segment", "value", "source"]]
        low = {s.path for s in self.sources if s.reader in LOW_FIDELITY_READERS}
        exact = (~sub["source"].isin(low)).to_numpy(dtype=bool) if low else np.ones(
            len(sub), dtype=bool)  # no per-row strings
        rows = {
            "step": sub["step"].to_numpy(dtype=np.int64),
            "segment": sub["segment"].to_numpy(dtype=np.int64),
            "value": sub["value"].to_numpy(dtype=np.float64),
            "exact": exact,
            "by_segment": {int(k): v for k, v in sub.groupby(
                "segment", observed=True, sort=False).indices.items()},
            "by_source": {str(k): v for k, v in sub.groupby(
                "source", observed=True, sort=False).indices.items()},
        }
        self._series_memo[key] = (self.scalars, len(self.sources), rows)
        return rows

    def _series(self, tag: str, *, rank: int | None, segment: int | None,
                source: str | None) -> pd.Series:
        import numpy as np
        import pandas as pd

        rows = self._rows(tag, rank)
        step, seg, value, exact = rows["step"], rows["segment"], rows["value"], rows["exact"]
        none = np.zeros(0, dtype=np.int64)
        where: np.ndarray | None = None
        if source is not None:
            where = rows["by_source"].get(source, none)
        if segment is not None:
            in_seg = rows["by_segment"].get(int(segment), none)
            # filter the smaller of the two position lists by the other's value
            if where is None:
                where = in_seg
            elif len(in_seg) < len(where):
                where = in_seg[np.isin(in_seg, where)]
            else:
                where = where[seg[where] == int(segment)]
        if where is not None:
            where = np.sort(where)  # file order, as a mask would give
            step, seg, value, exact = step[where], seg[where], value[where], exact[where]
        if not len(step):
            return pd.Series([], dtype="float64", name=tag, index=pd.Index([], name="step"))
        # sorted by step, then segment, then exact (a stable sort: file order after that);
        # the last row of each step wins
        order = np.lexsort((exact, seg, step))
        step, value = step[order], value[order]
        last = np.ones(len(step), dtype=bool)
        last[:-1] = step[1:] != step[:-1]
        out = pd.Series(value[last], index=pd.Index(step[last], name="step"))
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
