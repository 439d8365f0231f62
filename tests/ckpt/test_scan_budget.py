"""The value scan's byte budget: the tensors scanned are a prefix of the scan order."""

from autopsy.ckpt.checks.values import ScanBudget


def test_prefix_stops_at_the_first_tensor_past_the_budget() -> None:
    budget = ScanBudget(left=100)
    # 60 fits, 50 does not; the empty tensor after it must not count as scanned
    assert budget.prefix([60, 50, 0, 10]) == 1
    assert budget.left == 0
    assert budget.prefix([0]) == 1  # an empty tensor costs nothing on a spent budget


def test_prefix_takes_all_without_a_limit_and_counts_bytes() -> None:
    assert ScanBudget(left=None).prefix([1 << 40, 5]) == 2
    budget = ScanBudget(left=100)
    assert budget.prefix([40, 60]) == 2 and budget.left == 0
    assert budget.prefix([1]) == 0
