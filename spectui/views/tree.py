"""A tree pass (--drafter tree: ``PassEvent.tree``) as the ribbon draws it: the accepted path is the pass's drafts
(✓ then the first child refused after it), and beside it ``⑂`` (ASCII ``Y``) with the branches pruned: the
children of the path's nodes (the root's included) that are not on it, each taking its subtree with it."""

from __future__ import annotations

from ..contract.events import ACCEPTED, PassEvent

TREE = "⑂"  # a tree pass's pruned branches (tui.shared.ascii: "Y")


def tree_counts(ev: PassEvent) -> tuple[int, int]:
    """(nodes verified, branches pruned) of a tree pass; () for a chain's.

    Args:
        ev: the pass.

    Returns:
        The two counts, or an empty tuple.
    """
    if not ev.tree:
        return ()
    on_path = {-1} | {i for i, nd in enumerate(ev.tree) if nd.verdict == ACCEPTED}
    pruned = sum(1 for nd in ev.tree if nd.parent in on_path and nd.verdict != ACCEPTED)
    return len(ev.tree), pruned


def tree_text(counts: tuple[int, int], detailed: bool) -> str:
    """The ribbon's mark of a tree pass: ``⑂2`` (2 branches pruned), detailed ``⑂ 6 nodes, 2 pruned``."""
    nodes, pruned = counts
    return f"{TREE} {nodes} nodes, {pruned} pruned" if detailed else f"{TREE}{pruned}"
