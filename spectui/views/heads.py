"""What drafted, in words every face uses the same way (status line, summary, inspector, --explain): the kind of
head (``RunStarted.head``), which head drafted each position (``PassEvent.draft_heads``) and what a draft step
costs beside a target decode. Text from a trace (the head's path) is made visible before it is shown."""

from __future__ import annotations

from ..contract.events import CHAIN_SEPARATOR, HeadInfo, PassEvent, RunStarted
from ..contract.text import visible_line
from ..engine.drafters import block_names

KIND_NAMES = {"eagle3": "EAGLE-3", "mtp": "MTP", "dflash": "DFlash", "dspark": "DSpark"}


def _layers(head: HeadInfo) -> str:
    return ", ".join(str(i) for i in head.target_layers)


def head_kind(head: HeadInfo) -> str:
    """The kind in a few words: "3 chained MTP heads (head i drafts position i)", "one MTP head, repeated",
    "EAGLE-3 head, features from target layers 1, 2, 3"."""
    if head.kind == "eagle3":
        return "EAGLE-3 head, features from target layers " + (_layers(head) or "?")
    if head.kind in block_names():
        return (f"{KIND_NAMES[head.kind]} block drafter, features from target layers {_layers(head) or '?'} "
                "(one draft pass a block)")
    if head.kind == "mtp":
        if head.chained:
            return f"{head.n_heads} chained MTP heads (head i drafts position i, at most {head.n_heads} a pass)"
        return "one MTP head, repeated at every position"
    return visible_line(head.kind)


def head_short(head: HeadInfo) -> str:
    """The status line's words: "3 chained heads", "1 head, repeated", "layers 1,2,3"."""
    if head.kind == "eagle3":
        return "layers " + ",".join(str(i) for i in head.target_layers)
    if head.kind in block_names():
        return "block, layers " + ",".join(str(i) for i in head.target_layers)
    if head.chained:
        return f"{head.n_heads} chained heads"
    return "1 head, repeated"


def head_label(drafter: str, index: int, head: HeadInfo | None = None) -> str:
    """Who drafted one position: "MTP head 2/3", "MTP head 1/1 (repeated)", "EAGLE-3 head, features from
    target layers 1, 2, 3". Without the run's HeadInfo (a pass read alone): "MTP head 2"."""
    name = KIND_NAMES.get(drafter, visible_line(drafter))
    if head is None or head.kind != drafter:
        return f"{name} head {index + 1}" if drafter == "mtp" else f"{name} head"
    if drafter == "eagle3":
        return head_kind(head)
    return f"MTP head {index + 1}/{head.n_heads}" + ("" if head.chained else " (repeated)")


def drafted_by(ev: PassEvent, slot: int, head: HeadInfo | None = None) -> str:
    """"drafted by MTP head 2/3" for draft ``slot`` of a pass a head drafted; in a chain's pass "drafted by
    ngram-mod (chain ngram-mod,model)"; else ""."""
    if 0 <= slot < len(ev.draft_heads):
        return "drafted by " + head_label(ev.drafter or ev.settings.drafter, ev.draft_heads[slot], head)
    if ev.drafter and CHAIN_SEPARATOR in ev.settings.drafter and 0 <= slot < len(ev.drafts):
        return f"drafted by {visible_line(ev.drafter)} (chain {visible_line(ev.settings.drafter)})"
    return ""


def pass_heads(ev: PassEvent, head: HeadInfo | None = None) -> str:
    """One line for a pass a head drafted: "drafts by MTP heads 1, 2, 3 of 3" / "drafts by the EAGLE-3 head
    (features from target layers 1, 2, 3)"; "" for the other passes."""
    if not ev.draft_heads:
        return ""
    if ev.settings.drafter == "eagle3":
        return "drafts by the " + (head_kind(head) if head is not None and head.kind == "eagle3" else "EAGLE-3 head")
    heads = ", ".join(str(i + 1) for i in ev.draft_heads)
    if head is None or head.kind != "mtp":
        return f"drafts by MTP heads {heads}"
    capped = head.chained and len(ev.draft_heads) == head.n_heads < ev.k
    cap = f" (k = {ev.k} > {head.n_heads} heads: llama.cpp drafts one position per head)" if capped else ""
    return f"drafts by MTP heads {heads} of {head.n_heads}{cap}"


def head_file(start: RunStarted | None) -> str:
    """The head's file (visible), or ""."""
    if start is None or start.head is None:
        return ""
    return visible_line(start.head.path)


def step_cost(draft_ms_per_token: float, target_decode_ms: float, drafter: str, per_pass_ms: float = 0.0) -> str:
    """The draft's cost per step beside one target decode, as the run measured them: "MTP head 0.41 ms per
    draft step · target decode 2.10 ms (0.20x)". A block drafter's step is its one draft pass for the whole block
    (``per_pass_ms``: the draft time per drafting pass): "DFlash 0.90 ms per draft step (one a pass, the whole
    block) · target decode 2.10 ms (0.43x)"."""
    if drafter in block_names():
        ratio = f" ({per_pass_ms / target_decode_ms:.2f}x)" if target_decode_ms > 0 else ""
        return (f"{KIND_NAMES[drafter]} {per_pass_ms:.2f} ms per draft step (one a pass, the whole block) · target "
                f"decode {target_decode_ms:.2f} ms{ratio}")
    name = {"eagle3": "EAGLE-3 head", "mtp": "MTP head", "model": "draft model"}.get(drafter, "draft")
    ratio = f" ({draft_ms_per_token / target_decode_ms:.2f}x)" if target_decode_ms > 0 else ""
    return f"{name} {draft_ms_per_token:.2f} ms per draft step · target decode {target_decode_ms:.2f} ms{ratio}"
