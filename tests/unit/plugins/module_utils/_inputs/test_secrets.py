"""Secrets found by meaning (secrets.py): key flags in every spelling, secret-named variables and preset keys."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.secrets import (
    api_key_problem,
    misspelt_secret_key,
    secret_flag,
    secret_flags_in,
    secret_variable,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table


@pytest.mark.parametrize(
    ("word", "flag"),
    [
        ("--api-key", "--api-key"),
        ("--api_key", "--api-key"),  # the engine reads it (b11434: exit 0)
        ("--api-key=s3cr3t-key", "--api-key"),  # the engine refuses it, and prints the key
        ("--API-KEY", "--api-key"),
        ("--Api_Key", "--api-key"),
        ("--api-key-file", "--api-key-file"),
        ("--api_key_file", "--api-key-file"),
        ("--api-key-file=/etc/shadow", "--api-key-file"),
        ("--hf-token", "--hf-token"),
        ("--hf_token", "--hf-token"),
        ("-hft", "--hf-token"),
        ("--api-key-", ""),
        ("--alias", ""),
        ("api-key", ""),
        ("--ssl-key-file", ""),
        ("-a", ""),
    ],
)
def test_secret_flag(word, flag):
    assert secret_flag(word) == flag


def test_the_engines_own_other_names_count():
    table = read_flag_table("--api-key, -ak KEY   API key to use (env: LLAMA_API_KEY)\n")
    assert secret_flag("-ak", table) == "--api-key"
    assert secret_flag("-ak") == ""  # without the engine's help, only the spellings known here


def test_flags_in_words():
    words = ["-c", "4096", "--api_key", "x", "--api-key=y", "-hft", "t"]
    assert secret_flags_in(words) == ["--api-key", "--hf-token"]


@pytest.mark.parametrize(
    ("name", "secret"),
    [("LLAMA_API_KEY", True), ("LLAMA_ARG_API_KEY", True), ("LLAMA_ARG_API_KEY_FILE", True), ("HF_TOKEN", True),
     ("my_apikey", True), ("LLAMA_ARG_HF_TOKEN", True), ("LLAMA_ARG_THREADS", False), ("KEYBOARD", False),
     ("CUDA_VISIBLE_DEVICES", False)],
)
def test_secret_variable(name, secret):
    assert secret_variable(name) is secret


@pytest.mark.parametrize(
    ("key", "meant"),
    [("API_KEY", ""), ("EXTERNAL_KEY", ""), ("API-KEY", "API_KEY"), ("APIKEY", "API_KEY"),
     ("LLAMA_API_KEY", "API_KEY"), ("API_KEY ", "API_KEY"), ("HF_TOKEN", "API_KEY"), ("TOKEN", "API_KEY"),
     ("EXTERNAL-KEY", "EXTERNAL_KEY"), ("EXTERNALKEY", "EXTERNAL_KEY"), ("EXTERNAL_API_KEY", "EXTERNAL_KEY"),
     ("CTX", ""), ("KV_TYPE_K", ""), ("EXTERNAL_URL", ""), ("SPEC_N_MAX", "")],
)
def test_misspelt_secret_key(key, meant):
    assert misspelt_secret_key(key) == meant


@pytest.mark.parametrize(
    ("key", "why"),
    [("k-1-of-main", ""), ("a" * 8, ""), ("x", "1 characters long: a key has at least 8"),
     ("a" * 4097, "at most 4096"), ("abcdefgh,ij", "may only hold"), ("abcdefgh#", "may only hold"),
     ("abcdefgh\n", "may only hold"), ("abcd efgh", "may only hold"), ("abcdéfgh", "may only hold")],
)
def test_api_key_problem(key, why):
    found = api_key_problem(key)
    assert (why in found) if why else found == ""
    assert key not in found or len(key) < 2
