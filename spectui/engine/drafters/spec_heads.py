"""EAGLE-3 heads, MTP layers and the block drafters (DFlash, DSpark) as engine drafters: the one-line checks at
load and the drafter made for an ``Engine(head=...)`` (``head.HeadDrafter`` around ``eagle3.Eagle3Head`` /
``mtp.MtpHead``; ``block.BlockDrafter`` around ``block_head.BlockHead``). No UI imports."""

from __future__ import annotations

import os

from ...contract.errors import SpectuiError
from ...contract.events import HeadInfo
from ..files import spec_kinds
from .block import BlockDrafter
from .block_head import BlockHead
from .draft_tree import TREE_SEQS
from .eagle3 import Eagle3Head
from .eagle3_tree import HeadTreeDrafter
from .head import HeadDrafter
from .mtp import MtpHead

HEAD_KINDS = (spec_kinds.KIND_EAGLE3, spec_kinds.KIND_MTP, spec_kinds.KIND_DFLASH, spec_kinds.KIND_DSPARK)
BLOCK_KINDS = (spec_kinds.KIND_DFLASH, spec_kinds.KIND_DSPARK)


def check_head(kind: str, target: str, draft: str | None) -> str | None:
    """Refuse, in one line (exit 2), what the head ``kind`` cannot draft with; returns the head's file (the
    draft for eagle3, dflash and dspark, None for mtp: the target's own layers)."""
    if kind == spec_kinds.KIND_EAGLE3:
        if not draft:
            raise SpectuiError("--drafter eagle3 needs the EAGLE-3 head as --draft PATH")
        spec_kinds.check_eagle3_draft(draft, spec_kinds.spec_info(target))
        return draft
    if kind == spec_kinds.KIND_MTP:
        spec_kinds.check_mtp_target(target)
        if draft:
            spec_kinds.check_not_shared_kv(spec_kinds.spec_info(draft))
        if draft and not os.path.samefile(draft, target):  # the target given as its own draft: llama.cpp's way
            raise SpectuiError("--drafter mtp drafts with the target's own MTP layers; spectui does not take an MTP "
                               f"sidecar file yet (drop --draft {draft})")
        return None
    if kind in BLOCK_KINDS:
        if not draft:
            raise SpectuiError(f"--drafter {kind} needs the {kind} draft as --draft PATH")
        found = spec_kinds.check_not_shared_kv(spec_kinds.spec_info(draft)).kind
        if found != kind:
            what = {spec_kinds.KIND_EAGLE3: "an EAGLE-3 head", spec_kinds.KIND_MTP: "a model with MTP layers",
                    spec_kinds.KIND_MODEL: "a plain model (a draft model: --drafter model)"}
            raise SpectuiError(f"--drafter {kind} needs a {kind} draft (architecture 'dflash'), but the draft {draft} "
                               f"is " + what.get(found, f"a {found} draft (use --drafter {found})"))
        return draft
    raise SpectuiError(f"unknown head kind {kind!r} (one of {', '.join(HEAD_KINDS)})")


def make_head_drafter(kind: str, target, head_path: str | None, n_ctx: int, threads: int, tree=None):
    """The drafter for ``kind`` on the loaded target (``models.LoadedModel``; for mtp loaded with load_mtp).
    ``tree`` (``draft_tree.TreeParams``): an EAGLE-3 head drafts trees, its context made with ``TREE_SEQS``
    sequences (the target's must hold as many: the tree verify's)."""
    if kind in BLOCK_KINDS:
        block = BlockHead(str(head_path), target.model, target.ctx, n_ctx, dspark=kind == spec_kinds.KIND_DSPARK,
                          threads=threads)
        drafter = BlockDrafter(kind, block)
        drafter.info = HeadInfo(kind=kind, path=str(head_path), target_layers=tuple(int(i) for i in block.layer_ids))
        return drafter
    if kind == spec_kinds.KIND_EAGLE3:
        trees = tree is not None and target.n_seq >= TREE_SEQS
        head = Eagle3Head(str(head_path), target.model, target.ctx, n_ctx, threads=threads,
                          n_seq=TREE_SEQS if trees else 1)
        info = HeadInfo(kind=kind, path=str(head_path), target_layers=tuple(int(i) for i in head.layer_ids))
        if trees:
            drafter = HeadTreeDrafter(kind, head, tree)
            drafter.info = info
            return drafter
    else:
        head = MtpHead(target.model, target.ctx, n_ctx, threads=threads, path=target.path)
        info = HeadInfo(kind=kind, path=str(target.path), n_heads=int(head.n_mtp_layers), chained=bool(head.chain))
    drafter = HeadDrafter(kind, head)
    drafter.info = info  # RunStarted.head: what the screen and the trace say drafted
    return drafter
