"""What the pass loop asks of a draft-length policy: the ``DraftPolicy`` protocol.

The engine never imports a policy: it is handed a factory (``Engine(draft_policy=...)``, in spectui
``analysis.draft_policy.PolicyByMode``), makes one policy per run and lets it see every event of that run;
before each decode pass under automatic k (``Settings.auto``) the loop asks it for the pass's draft length and
caps the answer like any other (context, batch, n_predict). For a chain it then asks which members draft
(``members``): the pass's ``DraftLimits.members``, and ``PassEvent.left_out`` names those left out; for a tree
drafter, whether the pass drafts a chain or a tree (``children``: the pass's ``DraftLimits.children``).
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

from ...contract.events import Event, Settings


@runtime_checkable
class DraftPolicy(Protocol):
    """A draft-length policy: it learns from the run's events and chooses the next pass's k."""

    def observe(self, event: Event) -> None:
        """See one event of the run (every event, in order, ``RunStarted`` first).

        Args:
            event: the event the run just yielded.
        """

    def choose(self, settings: Settings) -> int:
        """The draft length for the next decode pass (the loop caps it to what the pass can use).

        Args:
            settings: the settings the pass runs with (``settings.auto`` is set).

        Returns:
            k, a number of draft tokens (0: the pass drafts nothing).
        """

    def members(self) -> tuple[tuple[str, int], ...]:
        """After ``choose``: for a chain (``Settings.drafter`` "ngram-mod,model"), each member's most drafts in the
        pass just chosen, 0 leaving it out (it loses on this machine); () drafts with every member up to k.

        Returns:
            (member name, its most drafts) pairs, or ().
        """

    def children(self) -> int:
        """After ``choose``: for a tree drafter (``--drafter tree``, ``suffix-tree``), its most children per node in
        the pass just chosen: 1 drafts a chain (the cost model predicts it faster than any tree here), 0 a tree
        within the drafter's own limits; 0 for every other drafter.

        Returns:
            0 or 1.
        """


DraftPolicyFactory = Callable[[], DraftPolicy]  # what Engine(draft_policy=...) is handed: a fresh policy per run

__all__ = ["DraftPolicy", "DraftPolicyFactory"]
