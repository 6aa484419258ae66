"""First-failing-step ladders: the inputs that make step N fail together with every later step."""


def ladder_inputs(base_preset: dict, ladder: list, step: int) -> tuple[dict, list[str], dict, dict]:
    """(preset, EXTRA tokens, arg_env, HostFacts changes) combining the failures of ``ladder[step:]``.

    Each rung is (preset changes, EXTRA tokens, env, other facts, reason). Later rungs are applied first,
    so an earlier rung's change wins where two touch the same input.
    """
    preset = dict(base_preset)
    extra: list[str] = []
    arg_env: dict[str, str] = {}
    facts_changes: dict = {}
    for preset_changes, tokens, env, other, _reason in reversed(ladder[step:]):
        preset.update(preset_changes)
        extra = tokens + extra
        arg_env.update(env)
        facts_changes.update(other)
    return preset, extra, arg_env, facts_changes
