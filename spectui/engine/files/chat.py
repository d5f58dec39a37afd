"""Chat templates, as llama-cli, llama-server and Spec-Bench apply them (no Textual, no face).

An instruct model is meant to see its chat template: the GGUF's ``tokenizer.chat_template`` (a Jinja
template) rendered over the messages with ``add_generation_prompt``, by the same Jinja setup the bindings use
(``llama_cpp.llama_chat_format.Jinja2ChatFormatter``: a sandboxed environment, trim_blocks/lstrip_blocks,
Transformers' ``tojson``). No system message unless one is given (``--system``), as llama-cli without
``-sys``. As llama.cpp does (``common_chat_templates_apply``), a BOS text the template writes at the start is
dropped when the tokenizer adds BOS itself, so the prompt never starts with two BOS tokens.

The template is the model's code: it renders in a child process under ``RENDER_BUDGET`` (3 s, 256 MiB, 4 MiB
of text: ``contract.bounded``), before any model decodes; one past it, one that fails and one that drops
the messages are each one line that names the model's file.

``ChatTemplate.label`` ("tokenizer.chat_template sha256:0123456789ab") is what ``RunStarted.chat_template``
records; "" means the prompt was used as raw text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from ...contract.bounded import Budget, BudgetExceeded, WorkFailed, call_bounded
from ...contract.errors import SpectuiError

TEMPLATE_KEY = "tokenizer.chat_template"
# A template is the model's code: its render may take this much wall time, this much memory beyond what the
# process holds, and write this much text (docs/untrusted-input.md). Real templates take milliseconds, a few
# MB and write the messages plus a few hundred bytes; 4 MiB of text is a million tokens, past any context.
RENDER_SECONDS = 3.0
RENDER_MEMORY = 256 << 20
RENDER_OUTPUT = 4 << 20
RENDER_BUDGET = Budget(RENDER_SECONDS, RENDER_MEMORY, RENDER_OUTPUT)
_PAST = {
    "time": f"ran longer than {RENDER_SECONDS:g} s (the limit on rendering a chat template)",
    "memory": f"needed more than {RENDER_MEMORY >> 20} MiB of memory (the limit on rendering a chat template)",
    "output": f"wrote more than {RENDER_OUTPUT >> 20} MiB of text (the limit on rendering a chat template)",
}


@dataclass(frozen=True)
class ChatTemplate:
    source: str  # the Jinja text
    bos_token: str = ""
    eos_token: str = ""
    add_bos: bool = False
    add_eos: bool = False
    origin: str = ""  # the GGUF file it came from (what an error names)

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()[:12]

    @property
    def label(self) -> str:
        return f"{TEMPLATE_KEY} sha256:{self.sha}"

    def render(self, messages: Sequence[dict], add_generation_prompt: bool = True) -> str:
        """The prompt text for ``messages`` ([{"role": ..., "content": ...}, ...]), rendered under
        ``RENDER_BUDGET`` in a child process (``contract.bounded``): a template that runs too long, takes
        too much memory or writes too much is one line (SpectuiError) naming the model's file and the limit,
        and so is one that drops every message's text. A stop signal meanwhile raises ``Interrupted``."""
        from ..llama.llama_lib import llama  # noqa: PLC0415

        llama()  # llama.cpp loaded the one way (its wait policy chosen first: spectui.engine.llama.omp)
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: PLC0415 - loads llama.cpp

        msgs = [dict(m) for m in messages]

        def work() -> bytes:  # in the child: the template is compiled there too (Jinja folds constants)
            fmt = Jinja2ChatFormatter(self.source, eos_token=self.eos_token, bos_token=self.bos_token,
                                      add_generation_prompt=add_generation_prompt)
            return fmt(messages=msgs).prompt.encode("utf-8", "surrogatepass")

        try:
            text = call_bounded(work, RENDER_BUDGET).decode("utf-8", "surrogatepass")
        except BudgetExceeded as exc:
            raise SpectuiError(f"{self._whose()} {_PAST[exc.kind]} (use --no-chat to run the prompt as raw "
                               "text; limits: docs/untrusted-input.md)") from None
        except WorkFailed as exc:  # a template is the model's code: any failure is one line
            raise SpectuiError(f"{self._whose()} failed to render: {exc} (use --no-chat)") from None
        if self.add_bos and self.bos_token and text.startswith(self.bos_token):
            text = text[len(self.bos_token):]
        if self.add_eos and self.eos_token and text.endswith(self.eos_token):
            text = text[: -len(self.eos_token)]
        if not text.strip() and any(str(m.get("content") or "").strip() for m in msgs):
            raise SpectuiError(f"{self._whose()} rendered an empty prompt: it dropped the messages (the prompt's "
                               "text is not in it); use --no-chat to run the prompt as raw text")
        return text

    def _whose(self) -> str:
        return f"the chat template of {self.origin}" if self.origin else "the model's chat template"


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
        origin=str(getattr(model, "path", "") or ""),
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
