"""NaN/Inf rules: where the loss or grad norm went non-finite, and why."""
