"""The recorder for the Hugging Face ``Trainer``.

The Trainer gives its callbacks neither the batch nor the per-step loss, so
:meth:`HFCallback.attach` also wraps the trainer's ``compute_loss`` to keep the last
micro-batch's inputs and loss; the step is recorded at ``on_pre_optimizer_step`` (after the
backward passes and gradient clipping, before the weights change), so a non-finite gradient
is probed on the weights that produced it. Under ``fp16`` (loss scaling) only the loss is
judged: a non-finite gradient there is the scaler's business.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transformers import Trainer, TrainerCallback

from autopsy.capture.recorder import Recorder


class HFCallback(TrainerCallback):
    """``HFCallback().attach(trainer)`` before ``trainer.train()``: the bundle goes to
    ``out_dir`` (default: ``args.output_dir``); ``batch_ids`` maps the inputs to sample ids
    (default: an ``ids``/``idx`` key, when the model's forward accepts one); other
    arguments are :class:`~autopsy.capture.recorder.Recorder`'s."""

    def __init__(self, out_dir: str | None = None, *,
                 batch_ids: Callable[[Any], Any] | None = None, **recorder_args: Any) -> None:
        self.out_dir = out_dir
        self.batch_ids = batch_ids
        self.args = recorder_args
        self.recorder: Recorder | None = None
        self._inputs: Any = None
        self._loss: Any = None

    def attach(self, trainer: Trainer) -> Trainer:
        """Wrap ``trainer.compute_loss`` (to see each micro-batch) and add this callback."""
        original = trainer.compute_loss

        def compute_loss(model: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(model, inputs, *args, **kwargs)
            self._inputs = inputs
            self._loss = out[0] if isinstance(out, tuple) else out
            return out

        trainer.compute_loss = compute_loss  # type: ignore[method-assign]
        trainer.add_callback(self)
        return trainer

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       optimizer: Any = None, **kwargs: Any) -> None:
        settings = {"check_grads": not getattr(args, "fp16", False), **self.args}
        self.recorder = Recorder(self.out_dir or args.output_dir, model, optimizer, **settings)

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.recorder is None:
            return
        ids = self.batch_ids(self._inputs) if self.batch_ids is not None else _ids(self._inputs)
        self.recorder.step(self._loss, batch=self._inputs, batch_ids=ids,
                           step=state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            self.recorder.close()


def _ids(inputs: Any) -> Any:
    if hasattr(inputs, "get"):
        for key in ("ids", "idx", "index", "sample_ids"):
            value = inputs.get(key)
            if value is not None:
                return value
    return None
