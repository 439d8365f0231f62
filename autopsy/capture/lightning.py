"""The recorder as a Lightning callback.

The batch is kept at ``on_train_batch_start``; at ``on_before_optimizer_step`` (after
``backward()``, before the weights change) the step is recorded with its gradient norm, so a
non-finite gradient is probed on the weights that produced it; at ``on_train_batch_end`` the
step's loss is added. Under fp16 mixed precision a non-finite gradient is the scaler's
business (the step is skipped and the scale lowered), so only the loss is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning.pytorch as pl

from autopsy.capture.recorder import Recorder


class LightningCallback(pl.Callback):
    """``Trainer(callbacks=[LightningCallback()])``: the recorder's bundle goes to
    ``out_dir`` (default: the trainer's ``default_root_dir``); other arguments are
    :class:`~autopsy.capture.recorder.Recorder`'s."""

    def __init__(self, out_dir: str | None = None, *,
                 batch_ids: Callable[[Any], Any] | None = None, **recorder_args: Any) -> None:
        super().__init__()
        self.out_dir = out_dir
        self.batch_ids = batch_ids  # batch -> its sample ids (default: an "ids"/"idx" key)
        self.args = recorder_args
        self.recorder: Recorder | None = None
        self._batch: Any = None
        self._recorded = False
        self._grads = True

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        optimizer = trainer.optimizers[0] if trainer.optimizers else None
        self.recorder = Recorder(self.out_dir or trainer.default_root_dir, pl_module, optimizer,
                                 **self.args)
        self._grads = "16-mixed" not in str(trainer.precision)

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                             batch: Any, batch_idx: int) -> None:
        self._batch, self._recorded = batch, False

    def on_before_optimizer_step(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                                 optimizer: Any) -> None:
        if self.recorder is None or not self._grads:
            return
        self._recorded = True
        self.recorder.step(None, batch=self._batch, batch_ids=self._ids(self._batch),
                           step=trainer.global_step)

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.recorder is None:
            return
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if self._recorded and self.recorder.ring:
            entry = self.recorder.ring[-1]
            entry.loss = loss.detach() if hasattr(loss, "detach") else loss
            entry.read()
            if not entry.finite and not self.recorder.bundles:
                self.recorder.pending.append(entry)
                self.recorder._batches[entry.step] = self._batch
                self.recorder.check()
        else:
            self.recorder.step(loss, batch=batch, batch_ids=self._ids(batch),
                               step=max(trainer.global_step - 1, 0))

    def _ids(self, batch: Any) -> Any:
        if self.batch_ids is not None:
            return self.batch_ids(batch)
        if isinstance(batch, dict):
            for key in ("ids", "idx", "index", "sample_ids"):
                if key in batch:
                    return batch[key]
        return None

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.recorder is not None:
            self.recorder.close()
