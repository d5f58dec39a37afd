"""A Hugging Face hub cache laid out offline with huggingface_hub's own functions (repo folder name, refs,
snapshot pointers and blobs), for the -hf / -hfd tests (tests/engine/test_hub.py, tests/race/)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def lay_out(cache: Path, repo_id: str, files: dict[str, Path | bytes]) -> None:
    """Put ``files`` (repo path -> local file or bytes) into a hub cache at ``cache`` as a download would."""
    from huggingface_hub import file_download as fd

    storage = cache / fd.repo_folder_name(repo_id=repo_id, repo_type="model")
    fd._cache_commit_hash_for_specific_revision(str(storage), "main", COMMIT)
    for i, (name, src) in enumerate(files.items()):
        blob = storage / "blobs" / f"{i:040x}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(src, bytes):
            blob.write_bytes(src)
        else:
            shutil.copyfile(src, blob)
        pointer = Path(fd._get_pointer_path(str(storage), COMMIT, name))
        pointer.parent.mkdir(parents=True, exist_ok=True)
        fd._create_symlink(str(blob), str(pointer), new_blob=False)


def hf_env(cache: Path, offline: bool = True) -> dict:
    """The environment of a command that reads the hub cache at ``cache`` (offline unless told otherwise)."""
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_DISABLE_TELEMETRY="1")
    env.pop("HF_HUB_OFFLINE", None)
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return env
