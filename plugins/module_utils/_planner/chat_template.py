# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CHAT_TEMPLATE, and a model whose GGUF carries no chat template (a llamafleet addition; Loki has neither).

llama-server formats a chat request with the Jinja template of the GGUF's ``tokenizer.chat_template``. A file
without one makes the engine fall back to ChatML and say nothing: a model trained on another format then answers
with ChatML's markers (Gemma-3-270M's file of the local fleet answers with ``<|im_end|>``). So:

* the plan notes such a model (``chat_template.missing``), unless a template is given (CHAT_TEMPLATE, EXTRA_ARGS'
  ``--chat-template``/``--chat-template-file``, or their LLAMA_ARG_ variables) or the engine serves no chat
  (``--embedding``, ``--reranking``);
* CHAT_TEMPLATE passes one: a name of the engine's built-in templates (its ``--chat-template`` help lists them)
  becomes ``--chat-template NAME``; an absolute path to a template file becomes ``--chat-template-file PATH``,
  which the engine reads when it parses its arguments (the preflight finds a missing or unreadable file). Anything
  else is refused, naming the accepted names.

Pure: the preset, EXTRA_ARGS, the service environment, the flag table and the GGUF facts in; flags and notes out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import FlagTable
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note

TEMPLATE_FLAG = "--chat-template"
TEMPLATE_FILE_FLAG = "--chat-template-file"
TEMPLATE_ENVS = ("LLAMA_ARG_CHAT_TEMPLATE", "LLAMA_ARG_CHAT_TEMPLATE_FILE")
# An engine started for these serves no chat: its template does not matter.
NO_CHAT_FLAGS = ("--embedding", "--embeddings", "--rerank", "--reranking")
_BUILT_IN = re.compile(r"list of built-in templates:\s*(.*?)\s*(?:\(env:|\Z)", re.DOTALL)
# What a built-in template's name looks like, for an engine whose help is unknown (its parser then decides).
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def built_in_templates(table: FlagTable) -> tuple[str, ...]:
    """The template names this engine's ``--chat-template`` help lists; () when it lists none (or is unknown)."""
    spec = table.lookup(TEMPLATE_FLAG)
    found = _BUILT_IN.search(spec.description) if spec is not None else None
    if not found:
        return ()
    return tuple(name.strip() for name in found.group(1).replace("\n", " ").split(",") if name.strip())


def template_given(extra: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    """A template chosen outside CHAT_TEMPLATE: by EXTRA_ARGS or the service environment."""
    return has_any_flag(extra, TEMPLATE_FLAG, TEMPLATE_FILE_FLAG) or any(arg_env.get(name) for name in TEMPLATE_ENVS)


def read_chat_template(text: str, table: FlagTable) -> list[str]:
    """CHAT_TEMPLATE's flags: ``--chat-template NAME`` or ``--chat-template-file PATH``; refused otherwise."""
    names = built_in_templates(table)
    accepted = (f"one of this engine's built-in templates ({', '.join(names)})" if names
                else "the name of one of the engine's built-in templates") + \
        ", or the absolute path of a Jinja template file"
    if text.startswith("/"):
        if _CONTROL.search(text) or text.endswith("/"):
            raise PlanError(f"CHAT_TEMPLATE={text!r} is not valid; accepted: {accepted} (a file's path, without "
                            "control characters)", key="CHAT_TEMPLATE", value=text)
        if table and table.lookup(TEMPLATE_FILE_FLAG) is None:
            raise PlanError(f"CHAT_TEMPLATE={text!r}: this engine's --help has no {TEMPLATE_FILE_FLAG}; accepted: "
                            f"{accepted.split(', or', maxsplit=1)[0]}", key="CHAT_TEMPLATE", value=text)
        return [TEMPLATE_FILE_FLAG, text]
    if (text in names) or (not names and _NAME.match(text)):
        if table and table.lookup(TEMPLATE_FLAG) is None:
            raise PlanError(f"CHAT_TEMPLATE={text!r}: this engine's --help has no {TEMPLATE_FLAG}",
                            key="CHAT_TEMPLATE", value=text)
        return [TEMPLATE_FLAG, text]
    lowered = text.lower()
    hint = f" (did you mean {lowered}?)" if lowered != text and lowered in names else ""
    raise PlanError(f"CHAT_TEMPLATE={text!r} is not valid; accepted: {accepted}{hint}", key="CHAT_TEMPLATE",
                    value=text)


def chat_template_args(preset: Mapping[str, str], extra: Sequence[str], arg_env: Mapping[str, str],
                       table: FlagTable, gguf: GGUFInfo | None) -> tuple[list[str], list[Note]]:
    """The flags of CHAT_TEMPLATE, and the notes: a template given twice, or a chat model without one."""
    text = preset.get("CHAT_TEMPLATE", "").strip()
    if text:
        flags = read_chat_template(text, table)
        if template_given(extra, arg_env):
            return [], [Note("chat_template.by_hand", f"CHAT_TEMPLATE={text}: EXTRA_ARGS or the service "
                             "environment already chooses the chat template; CHAT_TEMPLATE ignored")]
        return flags, []
    if template_given(extra, arg_env) or has_any_flag(extra, *NO_CHAT_FLAGS):
        return [], []
    if gguf is not None and gguf.has_chat_template is False:
        return [], [Note("chat_template.missing", "the model's GGUF has no tokenizer.chat_template: the engine "
                         "formats chat requests as ChatML without saying so, and a model trained on another "
                         "format answers with ChatML's markers (<|im_end|>); set CHAT_TEMPLATE to a built-in "
                         "template (gemma, llama3, chatml, ...) or a template file")]
    return [], []
