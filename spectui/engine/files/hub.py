"""Models by name: ``-hf user/repo[:quant]`` resolved to a GGUF file through huggingface_hub.

The rules are llama.cpp's (``common/download.cpp``, ``common_download_get_hf_plan``):

- ``user/repo[:quant]``: the quant is optional and case-insensitive. Without one, ``Q4_K_M`` is tried,
  then ``Q8_0``, then the first model file of the repository. A file matches a quant when its path
  contains ``QUANT.`` or ``QUANT-`` (case-insensitive).
- Files that are not models are skipped: ``mmproj``, ``imatrix`` and speculative side-cars (``mtp-``,
  ``eagle3-``, ``dflash-``, ``dspark-``); of a split model (``-00001-of-00003.gguf``) the first part is
  chosen and every part is fetched.
- ``--hf-file NAME`` picks an exact file of the repository instead.
- The repository's file list comes from the Hub; when the Hub cannot be reached, or ``HF_HUB_OFFLINE``
  is set, from huggingface_hub's local cache (``HF_HOME`` / ``HF_HUB_CACHE``), as llama.cpp does.

Downloads go through ``hf_hub_download``: its cache, ``HF_TOKEN``, ``HF_HUB_OFFLINE`` and its progress
bar on stderr. Every failure is one line (``SpectuiError``). Both files are resolved (and fetched)
before anything loads, so the vocabulary check still runs before any weights are read.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from ...contract.errors import SpectuiError
from ...contract.outputs import missing
from ...contract.text import visible_line

DEFAULT_QUANTS = ("Q4_K_M", "Q8_0")
_NOT_MODEL = ("mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-")
_SPLIT = re.compile(r"^(.+)-([0-9]{5})-of-([0-9]{5})$", re.IGNORECASE)
_MOST_LOOKED_AT = 10_000  # entries of a repository's cached snapshots looked at for a loop of links


@dataclass(frozen=True)
class HfRef:
    repo: str
    quant: str  # "" when not given


def parse_ref(text: str, flag: str = "-hf") -> HfRef:
    """'user/repo[:quant]' -> HfRef; a one-line error for anything else."""
    parts = text.strip().split(":")
    repo, quant = parts[0], (parts[-1] if len(parts) > 1 else "")
    if len(repo.split("/")) != 2 or not all(repo.split("/")):
        raise SpectuiError(f"{flag} {text!r}: expected user/repo[:quant], e.g. Qwen/Qwen2.5-7B-Instruct-GGUF:Q4_K_M")
    return HfRef(repo, quant)


def is_model_file(path: str) -> bool:
    if not path.endswith(".gguf"):
        return False
    name = path.rsplit("/", 1)[-1]
    return not any(word in name for word in _NOT_MODEL)


def split_info(path: str) -> tuple[str, int, int]:
    """(prefix, index, count) of a GGUF file name; (prefix, 1, 1) when not split."""
    prefix = path[: -len(".gguf")] if path.endswith(".gguf") else path
    m = _SPLIT.match(prefix)
    if m:
        return m.group(1), int(m.group(2)), int(m.group(3))
    return prefix, 1, 1


def choose_file(files: list[str], quant: str) -> str | None:
    """The model file llama.cpp would choose for ``quant`` ("" = its defaults), or None."""
    tags = [quant] if quant else list(DEFAULT_QUANTS)
    for tag in tags:
        pattern = re.compile(re.escape(tag) + r"[.-]", re.IGNORECASE)
        for f in files:
            if is_model_file(f) and pattern.search(f):
                _, index, count = split_info(f)
                if count > 1 and index != 1:
                    continue
                return f
    if not quant:
        for f in files:
            if is_model_file(f):
                _, index, count = split_info(f)
                if count > 1 and index != 1:
                    continue
                return f
    return None


def split_parts(files: list[str], primary: str) -> list[str]:
    """Every part of a split model (in order), or just ``primary``."""
    prefix, _, count = split_info(primary)
    if count == 1:
        return [primary]
    parts = {}
    for f in files:
        p, i, c = split_info(f)
        if p == prefix and c == count:
            parts[i] = f
    return [parts[i] for i in sorted(parts)]


def quants_in(files: list[str]) -> list[str]:
    """Quant tags of the model files, for error messages ('Q4_K_M', 'Q8_0', ...)."""
    out = []
    for f in files:
        if is_model_file(f):
            prefix, _, _ = split_info(f)
            m = re.search(r"[-.]([A-Za-z0-9_]+)$", prefix)
            tag = m.group(1).upper() if m else prefix
            if tag not in out:
                out.append(tag)
    return out


def _offline() -> bool:
    from huggingface_hub import is_offline_mode  # noqa: PLC0415 - only -hf needs huggingface_hub

    return bool(is_offline_mode())


def cached_files(repo: str) -> list[str]:
    """Files of the newest cached revision of ``repo`` in huggingface_hub's cache (no network)."""
    from huggingface_hub import scan_cache_dir  # noqa: PLC0415
    from huggingface_hub.errors import CacheNotFound  # noqa: PLC0415

    try:
        info = scan_cache_dir()
    except CacheNotFound:
        return []
    except (OSError, RuntimeError) as exc:  # pathlib's "Symlink loop", a snapshot folder that is a loop of links
        _refuse_loops(repo)
        raise SpectuiError(f"cannot read the Hugging Face cache for {repo}: {getattr(exc, 'strerror', '') or exc}"
                           ) from None
    for r in info.repos:
        if r.repo_id == repo and r.repo_type == "model":
            revs = sorted(r.revisions, key=lambda rev: ("main" not in rev.refs, -rev.last_modified))
            if revs:
                root = str(revs[0].snapshot_path)
                return sorted(os.path.relpath(str(f.file_path), root).replace(os.sep, "/") for f in revs[0].files)
    _refuse_loops(repo)  # the scan leaves out a repository it cannot read: say why, when it is a loop of links
    return []


def _refuse_loops(repo: str) -> None:
    """A one-line SpectuiError when a file or a folder of ``repo``'s cached snapshots is a loop of symbolic links
    (``a -> b -> a``, a folder linking to itself or to a folder above it), as for any input."""
    from huggingface_hub import constants  # noqa: PLC0415

    snapshots = os.path.join(constants.HF_HUB_CACHE, "models--" + repo.replace("/", "--"), "snapshots")
    looked = 0
    for folder, dirs, files in os.walk(snapshots):  # links to folders are not followed
        for name in sorted((*dirs, *files)):
            looked += 1
            path = os.path.join(folder, name)
            if looked > _MOST_LOOKED_AT or not os.path.islink(path):
                continue
            real = os.path.realpath(path)
            if missing(path).startswith("a loop") or os.path.join(folder, "").startswith(os.path.join(real, "")):
                where = os.path.relpath(path, snapshots)
                raise SpectuiError(f"Hugging Face repository {repo} in the local cache: snapshots/{where} is a loop "
                                   "of symbolic links (it never names a file)")


def repo_files(repo: str, token: str | None = None) -> tuple[list[str], str]:
    """(files, where from): the Hub's list, or the cache's when offline or the Hub cannot be reached."""
    from huggingface_hub import HfApi  # noqa: PLC0415
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError  # noqa: PLC0415

    if not _offline():
        try:
            return sorted(HfApi().list_repo_files(repo, token=token)), "hub"
        except GatedRepoError:
            raise SpectuiError(f"Hugging Face repository {repo} is gated: accept its terms and set HF_TOKEN") from None
        except RepositoryNotFoundError:
            raise SpectuiError(
                f"Hugging Face repository {repo} not found (or private: set HF_TOKEN)"
            ) from None
        except Exception:  # noqa: BLE001, S110 - no network, proxy, timeouts: fall back to the cache as llama.cpp does
            pass
    files = cached_files(repo)
    if not files:
        why = "HF_HUB_OFFLINE is set" if _offline() else "the Hub could not be reached"
        raise SpectuiError(f"Hugging Face repository {repo} is not in the local cache and {why}")
    return files, "cache"


def resolve(ref_text: str, hf_file: str | None = None, flag: str = "-hf", quiet: bool = False) -> str:
    """Local path of the GGUF model that ``-hf ref_text`` names (downloaded into the cache if needed)."""
    try:
        from huggingface_hub import hf_hub_download  # noqa: PLC0415
    except ImportError:  # pragma: no cover - a dependency; a clear line if someone removed it
        raise SpectuiError(f"{flag} needs the huggingface_hub package (pip install huggingface_hub)") from None
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError  # noqa: PLC0415

    ref = parse_ref(ref_text, flag)
    token = os.environ.get("HF_TOKEN") or None
    files, source = repo_files(ref.repo, token)
    if hf_file:
        if hf_file not in files:
            ggufs = [f for f in files if f.endswith(".gguf")]
            raise SpectuiError(
                f"file {hf_file} not found in {ref.repo}"
                + (f" ({source}); GGUF files there: {', '.join(ggufs[:8])}" if ggufs else " (it has no GGUF files)")
            )
        primary = hf_file
    else:
        primary = choose_file(files, ref.quant)
        if primary is None:
            quants = quants_in(files)
            if not quants:
                raise SpectuiError(f"no GGUF model files in Hugging Face repository {ref.repo} ({source})")
            raise SpectuiError(
                f"no {ref.quant} file in {ref.repo} ({source}); quants there: {', '.join(quants)}"
            )
    paths = []
    for name in split_parts(files, primary):
        if not quiet and sys.stderr.isatty():
            print(visible_line(f"spectui: {ref.repo}: {name}"), file=sys.stderr)
        try:
            paths.append(hf_hub_download(ref.repo, name, token=token))
        except LocalEntryNotFoundError:
            raise SpectuiError(
                f"{ref.repo}/{name} is not in the local cache and cannot be downloaded "
                "(offline, or the Hub could not be reached)"
            ) from None
        except EntryNotFoundError:
            raise SpectuiError(f"file {name} not found in Hugging Face repository {ref.repo}") from None
        except OSError as exc:
            raise SpectuiError(f"cannot download {ref.repo}/{name}: {exc}") from None
    return paths[0]


def resolve_models(models, use_draft: bool = True, quiet: bool = False) -> tuple[str | None, str | None]:
    """(target path, draft path or None) for ``contract.options.ModelOptions``: local paths, or ``-hf`` / ``-hfd``."""
    if models.target and models.hf_repo:
        raise SpectuiError("give either --target PATH or -hf user/repo, not both")
    if models.draft and models.hf_repo_draft:
        raise SpectuiError("give either --draft PATH or -hfd user/repo, not both")
    if models.hf_file and not models.hf_repo:
        raise SpectuiError("--hf-file needs -hf user/repo")
    if models.hf_file_draft and not models.hf_repo_draft:
        raise SpectuiError("--hf-file-draft needs -hfd user/repo")
    target = models.target
    if models.hf_repo:
        target = resolve(models.hf_repo, models.hf_file, "-hf", quiet)
    draft = models.draft if use_draft else None
    if use_draft and models.hf_repo_draft:
        draft = resolve(models.hf_repo_draft, models.hf_file_draft, "-hfd", quiet)
    return target, draft
