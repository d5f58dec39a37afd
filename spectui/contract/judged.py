"""The acceptance test that judged one node of a token tree at temperature > 0 (``TreeNode.judged``), recorded so
the inspector can show every node's numbers, not only the accepted path's (docs/trees.md).

A node's children x_1, x_2, ... are judged in the order they were drawn (recursive rejection sampling without
replacement, ``spectui.engine.tree_verify``): x_i is accepted when u < min(1, p_i(x_i) / r_i(x_i)), where p_i is
the target's distribution at the parent for the first child and, after a refusal, the residual norm(max(0,
p_{i-1} - r_{i-1})), and r_i is the distribution x_i was drawn from (q without the siblings drawn before it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Judged:
    """One node's test: ``p`` p_i(x) (the target's p for a first child, the residual's after refused siblings),
    ``r`` r_i(x), ``accept_p`` min(1, p / r), ``u`` the uniform drawn (-1: none, the test passed without one)."""

    p: float = -1.0
    r: float = -1.0
    accept_p: float = -1.0
    u: float = -1.0
