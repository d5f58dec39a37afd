"""Chat templates, as llama-cli, llama-server and Spec-Bench apply them (no Textual, no face).

An instruct model is meant to see its chat template: the GGUF's ``tokenizer.chat_template`` (a Jinja
template) rendered over the messages with ``add_generation_prompt``, by the same Jinja setup the bindings use
(``llama_cpp.llama_chat_format.Jinja2ChatFormatter``: a sandboxed environment, trim_blocks/lstrip_blocks,
Transformers' ``tojson``). No system message unless one is given (``--system``), as llama-cli without
``-sys``. As llama.cpp does (``common_chat_templates_apply``), a BOS text the template writes at the start is
dropped when the tokenizer adds BOS itself, so the prompt never starts with two BOS tokens.

``ChatTemplate.label`` ("tokenizer.chat_template sha256:0123456789ab") is what ``RunStarted.chat_template``
records; "" means the prompt was used as raw text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from ...contract.errors import SpectuiError

TEMPLATE_KEY = "tokenizer.chat_template"


@dataclass(frozen=True)
class ChatTemplate:
    source: str  # the Jinja text
    bos_token: str = ""
    eos_token: str = ""
    add_bos: bool = False
    add_eos: bool = False

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()[:12]

    @property
    def label(self) -> str:
        return f"{TEMPLATE_KEY} sha256:{self.sha}"

    def render(self, messages: Sequence[dict], add_generation_prompt: bool = True) -> str:
        """The prompt text for ``messages`` ([{"role": ..., "content": ...}, ...])."""
        from ..llama.llama_lib import llama  # noqa: PLC0415

        llama()  # llama.cpp loaded the one way (its wait policy chosen first: spectui.engine.llama.omp)
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: PLC0415 - loads llama.cpp

        try:
            fmt = Jinja2ChatFormatter(self.source, eos_token=self.eos_token, bos_token=self.bos_token,
                                      add_generation_prompt=add_generation_prompt)
            text = fmt(messages=list(messages)).prompt
        except Exception as exc:  # noqa: BLE001 - a template is the model's code: any failure is one line
            raise SpectuiError(
                f"the model's chat template failed to render: {type(exc).__name__}: {exc} (use --no-chat)"
            ) from None
        if self.add_bos and self.bos_token and text.startswith(self.bos_token):
            text = text[len(self.bos_token):]
        if self.add_eos and self.eos_token and text.endswith(self.eos_token):
            text = text[: -len(self.eos_token)]
        return text


def chat_template_of(model) -> ChatTemplate | None:
    """The chat template of a loaded model (``engine.models.LoadedModel`` or ``VocabOnly``), None without one."""
    from ..llama.llama_lib import llama  # noqa: PLC0415 - the module that loads llama.cpp

    L = llama()
    raw = L.llama_model_chat_template(model.model, None)
    if not raw:
        return None
    source = raw.decode("utf-8", "replace")
    if not source.strip():
        return None
    v = model.vocab

    def text(tid: int) -> str:
        if tid < 0:
            return ""
        t = L.llama_vocab_get_text(v, tid)
        return t.decode("utf-8", "replace") if t is not None else ""

    return ChatTemplate(
        source=source,
        bos_token=text(L.llama_vocab_bos(v)),
        eos_token=text(L.llama_vocab_eos(v)),
        add_bos=bool(L.llama_vocab_get_add_bos(v)),
        add_eos=bool(L.llama_vocab_get_add_eos(v)),
    )


def chat_messages(turns: Sequence[str], answers: Sequence[str] = (), system: str | None = None) -> list[dict]:
    """Messages for the next turn: the system message (if any), then each earlier turn with the model's own
    answer to it, then ``turns[len(answers)]``."""
    msgs: list[dict] = []
    if system:
        msgs.append({"role": "system", "content": system})
    for i, a in enumerate(answers):
        msgs.append({"role": "user", "content": turns[i]})
        msgs.append({"role": "assistant", "content": a})
    msgs.append({"role": "user", "content": turns[len(answers)]})
    return msgs
