"""Spec section 1.6: token helpers."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    arg_value,
    env_truthy,
    flag_name,
    flag_value,
    flag_values,
    has_any_flag,
    has_flag_prefix,
    parse_c_int,
    parse_int,
)


@pytest.mark.parametrize(
    ("tokens", "names", "expected"),
    [
        pytest.param(["-ngl", "99"], ("-ngl",), True, id="plain"),
        pytest.param(["--n-gpu-layers=99"], ("-ngl", "--n-gpu-layers"), True, id="name=value"),
        pytest.param(["=-ngl"], ("=-ngl",), True, id="leading-equals-not-separator"),
        pytest.param(["=-ngl"], ("",), False, id="leading-equals-keeps-token"),
        pytest.param(["-NGL", "1"], ("-ngl",), False, id="case-sensitive"),
        pytest.param(["--foo", "-ngl"], ("-ngl",), True, id="value-that-looks-like-flag-counts"),
        pytest.param([], ("-ngl",), False, id="empty"),
        pytest.param(["-nglx"], ("-ngl",), False, id="prefix-is-not-match"),
    ],
)
def test_has_any_flag(tokens, names, expected):
    assert has_any_flag(tokens, *names) is expected


@pytest.mark.parametrize(
    ("tokens", "names", "values"),
    [
        pytest.param(["-ot", "a=CPU", "--override-tensor=b=CUDA1"], ("-ot", "--override-tensor"), ["a=CPU", "b=CUDA1"],
                     id="both-forms-in-order"),
        pytest.param(["-c", "4096", "-c"], ("-c",), ["4096"], id="trailing-name-ignored"),
        pytest.param(["-c", "-t"], ("-c",), ["-t"], id="next-token-whatever-it-is"),
        pytest.param(["-c="], ("-c",), [""], id="empty-after-equals"),
        pytest.param(["-x", "1"], ("-c",), [], id="absent"),
    ],
)
def test_flag_values(tokens, names, values):
    assert flag_values(tokens, *names) == values
    assert flag_value(tokens, *names) == (values[-1] if values else "")


def test_flag_value_last_wins_across_names():
    assert flag_value(["--ctx-size", "1", "-c", "2", "--ctx-size=3"], "-c", "--ctx-size") == "3"


def test_has_flag_prefix_returns_first_name():
    assert has_flag_prefix(["--a", "--spec-ngram-x=1", "--spec-ngram-y"], "--spec-ngram-") == "--spec-ngram-x"
    assert has_flag_prefix(["--a"], "--spec-") == ""


@pytest.mark.parametrize(
    ("argv", "flag", "value"),
    [
        (["bin", "--port", "8080", "--port", "9000"], "--port", "9000"),
        (["bin", "--port=9000"], "--port", ""),
        (["bin", "--port"], "--port", ""),
    ],
)
def test_arg_value(argv, flag, value):
    assert arg_value(argv, flag) == value


@pytest.mark.parametrize(
    ("value", "truthy"),
    [("on", True), (" true ", True), ("1", True), ("enabled", True), ("ON", False), ("yes", False),
     ("0", False), ("", False), (None, False)],
)
def test_env_truthy(value, truthy):
    assert env_truthy(value) is truthy


@pytest.mark.parametrize(
    ("text", "value"),
    [("12", 12), ("+5", 5), ("-1", -1), ("0", 0), (" 1", None), ("1_000", None), ("١٢", None), ("", None),
     ("-", None), ("0x10", None), ("1.5", None), (str(1 << 63), None), (str(-(1 << 63)), -(1 << 63))],
)
def test_parse_int_is_strict(text, value):
    assert parse_int(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("2147483647", 2**31 - 1), ("-2147483648", -(2**31)), ("2147483648", None), ("-2147483649", None),
     ("+2147483647", 2**31 - 1), ("0", 0), (str(1 << 62), None), ("x", None)],
)
def test_parse_c_int_is_what_std_stoi_accepts(text, value):
    """llama.cpp reads integer flags with std::stoi: beyond a C int the engine exits at start (fuzz finding)."""
    assert parse_c_int(text) == value


def test_flag_name():
    assert flag_name("--a=b=c") == "--a"
    assert flag_name("=x") == "=x"
