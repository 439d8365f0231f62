"""PyTorch's char-RNN tutorials' own prints, from a real (tiny) run of their loops: the
classification loop's ``5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓`` and the generation
loop's ``0m 5s (5000 5%) 2.6523`` lines are the loss at the iteration."""

from __future__ import annotations

import contextlib
import io
import math
import time
from pathlib import Path

import pytest

import autopsy


def timeSince(since: float) -> str:
    now = time.time()
    s = now - since
    m = math.floor(s / 60)
    s -= m * 60
    return '%dm %ds' % (m, s)  # noqa: UP031 - as the tutorial prints it


def _run(root: Path, generation: bool, n_iters: int = 400, print_every: int = 50,
         lr: float = 0.005) -> list[tuple[int, float]]:
    import torch
    from torch import nn

    torch.manual_seed(0)
    letters, categories = "abcdefghij", ["Dutch", "Greek", "Korean"]
    rnn = nn.RNN(len(letters), 16)
    head = nn.Linear(16, len(categories))
    criterion = nn.NLLLoss()
    optim = torch.optim.SGD([*rnn.parameters(), *head.parameters()], lr=lr)
    names = ["abc", "bcd", "cde", "def", "efg", "fgh", "ghi", "hij"]
    printed: list[tuple[int, float]] = []
    start = time.time()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for iter in range(1, n_iters + 1):
            line = names[iter % len(names)]
            category = categories[iter % len(categories)]
            x = torch.zeros(len(line), 1, len(letters))
            for i, ch in enumerate(line):
                x[i, 0, letters.index(ch)] = 1
            hidden, _ = rnn(x)
            output = torch.log_softmax(head(hidden[-1]), dim=1)
            loss = criterion(output, torch.tensor([categories.index(category)]))
            optim.zero_grad()
            loss.backward()
            optim.step()
            loss = loss.item()
            if iter % print_every == 0:
                printed.append((iter, float('%.4f' % loss)))  # noqa: UP031
                if generation:
                    print('%s (%d %d%%) %.4f' % (timeSince(start), iter,  # noqa: UP031
                                                 iter / n_iters * 100, loss))
                else:
                    guess = categories[int(output.argmax())]
                    correct = '✓' if guess == category else '✗ (%s)' % category  # noqa: UP031
                    print('%d %d%% (%s) %.4f %s / %s %s' % (  # noqa: UP031
                        iter, iter / n_iters * 100, timeSince(start), loss, line, guess,
                        correct))
    (root / "train.log").write_text(out.getvalue(), encoding="utf-8")
    return printed


@pytest.mark.parametrize("generation", [False, True])
def test_char_rnn_lines_are_the_loss_at_the_iteration(tmp_path: Path, generation: bool) -> None:
    printed = _run(tmp_path, generation)
    loss = autopsy.load_run(tmp_path).series("loss")
    assert list(loss.index) == [i for i, _ in printed]
    assert list(loss.values) == pytest.approx([v for _, v in printed])


def test_a_char_rnn_loss_gone_nan_is_a_nan_verdict(tmp_path: Path) -> None:
    _run(tmp_path, generation=False)
    log = tmp_path / "train.log"
    lines = log.read_text(encoding="utf-8").splitlines()
    # the same loop with its loss gone NaN from the fifth print on (as `%.4f` prints it)
    nan_lines = [ln if i < 4 else ln.replace(ln.split()[4], "nan", 1)
                 for i, ln in enumerate(lines)]
    log.write_text("\n".join(nan_lines) + "\n", encoding="utf-8")
    verdict = autopsy.api.diagnose(autopsy.load_run(tmp_path)).verdict
    assert (verdict.family.value, verdict.step) == ("nan_inf", 250)
