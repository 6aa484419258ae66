"""The planner's messages: a stable id (spec Appendix A) and English text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Note:
    """One message of the plan.

    ``id`` is stable and meant for tests and tooling; ``text`` is for people
    and may be reworded. ``code`` narrows ids that cover several cases (the
    reason of ``fit.ignored``, the key of ``threads.invalid``, the variant of
    ``ckpt.notice``); empty when the id says it all.
    """

    id: str
    text: str
    code: str = ""

    def as_dict(self) -> dict[str, str]:
        out = {"id": self.id, "text": self.text}
        if self.code:
            out["code"] = self.code
        return out


def gib_text(mib: int) -> str:
    """MiB as GiB with one decimal, for notes (83968 -> "82.0 GiB")."""
    return f"{mib / 1024:.1f} GiB"
