"""Catch the first bad step while the run is alive: the one part of autopsy that runs inside
training, and the only one that imports torch.

* :class:`Recorder` for plain loops: ``rec.step(loss, batch=batch, batch_ids=ids)`` after
  ``backward()``, or ``with rec.guard(batch, batch_ids=ids):`` around a step to catch the
  error it raises;
* :class:`LightningCallback` wraps it for ``lightning.Trainer``, :class:`HFCallback` for the
  Hugging Face ``Trainer`` (``HFCallback().attach(trainer)``).

On the first non-finite loss or gradient (or an error inside ``guard``) the recorder saves a
bundle, ``<out_dir>/autopsy-capture/step_<N>/``: the ring of the last steps, the batch
within a size cap, the RNG states, what the data checks found, and the first module whose
output or gradient went non-finite when the batch was run again with hooks. ``autopsy
analyze`` reads the bundle. See ``docs/capture.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.capture.hf import HFCallback
    from autopsy.capture.lightning import LightningCallback
    from autopsy.capture.recorder import NonFiniteStep, Recorder, enable_flight_recorder

__all__ = ["HFCallback", "LightningCallback", "NonFiniteStep", "Recorder",
           "enable_flight_recorder"]


def __getattr__(name: str) -> Any:
    if name in ("Recorder", "NonFiniteStep", "enable_flight_recorder"):
        from autopsy.capture import recorder

        return getattr(recorder, name)
    if name == "LightningCallback":
        from autopsy.capture.lightning import LightningCallback

        return LightningCallback
    if name == "HFCallback":
        from autopsy.capture.hf import HFCallback

        return HFCallback
    raise AttributeError(f"module 'autopsy.capture' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | {"__doc__", "__name__"})
