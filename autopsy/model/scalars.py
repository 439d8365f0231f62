"""The long (tidy) scalars frame: every point kept, with provenance.

Columns, in order: ``step`` (int64), ``tag`` (canonical, category), ``raw_tag``
(as written, category), ``value`` (float64, NaN/Inf kept), ``wall_time``
(float64 seconds, NaN if unknown), ``rank`` (nullable Int64), ``segment``
(int64: 0, 1, 2... one per start/restart), ``source`` (path relative to the run,
category).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from autopsy.model.aliases import alias_rank, canonical_tag, normalise

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pandas as pd

#: column -> pandas dtype of ``run.scalars``.
SCALAR_COLUMNS: dict[str, str] = {
    "step": "int64",
    "tag": "category",
    "raw_tag": "category",
    "value": "float64",
    "wall_time": "float64",
    "rank": "Int64",
    "segment": "int64",
    "source": "category",
}


def empty_scalars() -> pd.DataFrame:
    """Return a scalars frame with no rows and the right dtypes."""
    import pandas as pd

    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in SCALAR_COLUMNS.items()})


def _categorical(values: Any, n: int) -> pd.Categorical:
    import numpy as np
    import pandas as pd

    if isinstance(values, pd.Categorical):
        return values
    if isinstance(values, str):
        return pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[values])
    return pd.Categorical(values)


def make_scalars(
    step: np.ndarray | Sequence[int],
    raw_tag: pd.Categorical | Sequence[str] | str,
    value: np.ndarray | Sequence[float],
    *,
    wall_time: np.ndarray | Sequence[float] | None = None,
    rank: int | np.ndarray | Sequence[int | None] | None = None,
    segment: int | np.ndarray | Sequence[int] = 0,
    source: str | pd.Categorical | Sequence[str] = "",
) -> pd.DataFrame:
    """Build a scalars frame from column arrays; ``tag`` is derived from ``raw_tag``.

    Scalars (a single ``str`` or ``int``) are broadcast. ``raw_tag`` may be a
    ``pandas.Categorical`` (fastest: only its categories are canonicalised).
    """
    import numpy as np
    import pandas as pd

    steps = np.asarray(step, dtype=np.int64)
    n = len(steps)
    raw = _categorical(raw_tag, n)
    canon = [canonical_tag(str(c)) for c in raw.categories]
    if len(set(canon)) < len(canon):
        canon = _one_name_per_point(canon, raw, steps, source, n)
    uniq = list(dict.fromkeys(canon))
    remap = np.array([uniq.index(c) for c in canon], dtype=np.int32)
    codes = raw.codes
    tag_codes = np.where(codes >= 0, remap[np.maximum(codes, 0)] if len(remap) else -1, -1)
    tag = pd.Categorical.from_codes(tag_codes, categories=uniq)
    values = np.asarray(value, dtype=np.float64)
    walls = (
        np.full(n, np.nan, dtype=np.float64)
        if wall_time is None
        else np.asarray(wall_time, dtype=np.float64)
    )
    if rank is None or isinstance(rank, (int, np.integer)):
        ranks = pd.array(np.full(n, 0 if rank is None else int(rank)), dtype="Int64")
        if rank is None:
            ranks[:] = pd.NA
    else:
        arraylike = isinstance(rank, (np.ndarray, pd.api.extensions.ExtensionArray))
        ranks = pd.array(rank if arraylike else list(rank), dtype="Int64")
    segs = (
        np.full(n, int(segment), dtype=np.int64)
        if isinstance(segment, (int, np.integer))
        else np.asarray(segment, dtype=np.int64)
    )
    frame = pd.DataFrame(
        {
            "step": steps,
            "tag": tag,
            "raw_tag": raw,
            "value": values,
            "wall_time": walls,
            "rank": ranks,
            "segment": segs,
            "source": _categorical(source, n),
        },
        copy=False,
    )
    return frame


def _one_name_per_point(canon: list[str], raw: pd.Categorical, steps: np.ndarray,
                        source: Any, n: int) -> list[str]:
    """Canonical names of ``raw``'s categories, where two written names of one canonical
    quantity never share a point: when a file writes both on one step (a line with ``loss``
    and ``total_loss``, a table with ``accuracy`` and ``sparse_categorical_accuracy``), the
    name written on the most steps keeps the canonical one (the series logged throughout,
    not an occasional extra), the more direct name (:func:`~autopsy.model.aliases.alias_rank`)
    where they are as many, and the others keep their own (normalised) names (``NAME_other``
    where that is the canonical name itself). Names that never meet on a step (one
    file's ``loss``, another's ``train_loss``) are one series, as before. One pass over the
    rows of the names concerned."""
    import numpy as np
    import pandas as pd

    out = list(canon)
    codes = np.asarray(raw.codes)
    src = np.asarray(_categorical(source, n).codes)
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(canon):
        groups.setdefault(name, []).append(i)
    for name, members in groups.items():
        if len(members) < 2:
            continue
        sel = np.isin(codes, members)
        rows = pd.DataFrame({"m": codes[sel], "s": src[sel], "t": steps[sel]}).drop_duplicates()
        meeting = set(rows.loc[rows.duplicated(["s", "t"], keep=False), "m"].tolist())
        if len(meeting) < 2:
            continue
        counts = rows["m"].value_counts()
        ordered = sorted(meeting, key=lambda i: (-int(counts[i]),
                                                 alias_rank(str(raw.categories[i]), name), i))
        for i in ordered[1:]:
            own = normalise(str(raw.categories[i]))
            out[i] = own if own != name else f"{name}_other"
    return out


def concat_scalars(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate scalars frames, keeping the categorical columns categorical."""
    import pandas as pd
    from pandas.api.types import union_categoricals

    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_scalars()
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    out: dict[str, Any] = {}
    for col, dtype in SCALAR_COLUMNS.items():
        if dtype == "category":
            out[col] = union_categoricals([f[col].array for f in frames], ignore_order=True)
        else:
            out[col] = pd.concat([f[col] for f in frames], ignore_index=True)
    return pd.DataFrame(out)


#: Canonical tag prefixes of evaluation-side series (:data:`SOLE_SERIES`).
EVAL_PREFIXES: tuple[str, ...] = ("eval", "val", "valid", "test")

#: Canonical tag prefixes of best-so-far series (``best_test_acc``, ``best_val_loss``): a
#: running extreme, never the quantity itself, so never a sole series (:data:`SOLE_SERIES`).
BEST_PREFIXES: tuple[str, ...] = ("best_", "best/")


#: (canonical name, evaluation side?, endings): a run without the name whose only series
#: of that side with one of the endings is taken for it (:func:`name_sole_series`).
SOLE_SERIES: tuple[tuple[str, bool, tuple[str, ...]], ...] = (
    # MXNet custom metrics print the objective as ``lossvalue=`` (insightface's alignment)
    ("loss", False, ("loss", "lossvalue", "loss_value")),
    ("accuracy", False, ("_acc", "accuracy")),
    ("eval_accuracy", True, ("_acc", "accuracy")),
)


def name_sole_series(scalars: pd.DataFrame) -> pd.DataFrame:
    """Give the run's ``loss``, ``accuracy`` and ``eval_accuracy`` the only series that
    can be each, where the run has none by that name (:data:`SOLE_SERIES`).

    Writers name the training objective after itself (``ctc_loss`` of a CTC model,
    ``bce_loss``, ``recon_loss``) and Keras names a multi-output model's metrics after the
    output (``out_caps_acc``, ``val_out_caps_acc``): where the run has no ``loss`` and
    exactly one training-side series whose canonical tag ends in ``loss``, that series is
    the training loss the rules read (likewise the accuracies). Two or more (``box_loss``
    and ``cls_loss`` with no total, ``top1_acc`` and ``top5_acc``) stay as they are: none
    of them alone is the quantity; a best-so-far (``best_acc``) is never one. ``raw_tag``
    keeps the name as written. Returns ``scalars`` itself when nothing changes.
    """
    if scalars.empty:
        return scalars
    tag = scalars["tag"].cat.remove_unused_categories()  # a new name must not be one
    present = {str(c) for c in tag.cat.categories}
    renames: dict[str, str] = {}
    for name, evaluation, endings in SOLE_SERIES:
        if name in present:
            continue
        found = [t for t in present if t.endswith(endings) and not t.startswith(BEST_PREFIXES)
                 and t.startswith(EVAL_PREFIXES) == evaluation]
        if len(found) == 1:
            renames[found[0]] = name
    if not renames:
        return scalars
    out = scalars.copy()
    out["tag"] = tag.cat.rename_categories(renames)
    return out
