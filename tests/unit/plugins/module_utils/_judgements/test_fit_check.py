"""The engine's own estimate as the last check of a placed replica: the arguments it is given (from a real
llama-fit-params --help), its answer read (a real --fit-print on capture), and the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements import fit_check

FIXTURES = Path(__file__).parents[3] / "fixtures" / "engine"
HELP = (FIXTURES / "llama-fit-params-11434.0.0-cpu.help.txt").read_text()
PRINT = (FIXTURES / "llama-fit-params-11434.0.0-cpu.print.txt").read_text()


def test_the_help_lists_the_memory_flags_and_not_the_servers():
    flags = fit_check.help_flags(HELP)
    for flag in ("-m", "--model", "-c", "--ctx-size", "-np", "--parallel", "-ngl", "--n-gpu-layers", "--flash-attn",
                 "-ctk", "--cache-type-k", "--fit", "--fit-target", "--tensor-split", "--override-tensor", "-ub"):
        assert flag in flags, flag
    for flag in ("--port", "--host", "--api-key-file", "--alias", "--metrics", "--slot-save-path"):
        assert flag not in flags, flag


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["/e/llama-server", "--model", "/m/g.gguf", "--ctx-size", "8192", "--parallel", "2"],
                     ["--model", "/m/g.gguf", "--ctx-size", "8192", "--parallel", "2"], id="memory-flags-kept"),
        pytest.param(["/e/llama-server", "-m", "/m/g.gguf", "--host", "10.0.0.1", "--port", "8081", "--metrics",
                      "--alias", "gemma", "--api-key-file", "/run/k", "-c", "4096"],
                     ["-m", "/m/g.gguf", "-c", "4096"], id="server-flags-and-values-dropped"),
        pytest.param(["/e/llama-server", "-m", "/m/g.gguf", "-ngl", "-1", "--flash-attn", "on"],
                     ["-m", "/m/g.gguf", "-ngl", "-1", "--flash-attn", "on"], id="negative-value"),
        pytest.param(["/e/llama-server", "--jinja", "-m", "/m/g.gguf", "--ctx-size=2048", "--no-webui"],
                     ["-m", "/m/g.gguf", "--ctx-size=2048"], id="switches-and-equals"),
        pytest.param(["/e/llama-server", "-m", "/m/g.gguf", "--fit-print", "off"], ["-m", "/m/g.gguf"],
                     id="its-own-print-flag-replaced"),
        pytest.param(["/e/llama-server"], [], id="nothing"),
    ],
)
def test_projection_argv(argv, expected):
    assert fit_check.projection_argv(argv, fit_check.help_flags(HELP)) == [*expected, "--fit-print", "on"]


def test_the_printed_rows_are_read_and_the_log_lines_ignored():
    assert fit_check.parse_projection(PRINT) == {"Host": 222 + 42 + 522}
    assert fit_check.parse_projection("CUDA0 4000 1000 500\nCUDA1 4000 900 500 \nHost 10 0 20\nnoise 1 2\n") == {
        "CUDA0": 5500, "CUDA1": 5400, "Host": 30}


@pytest.mark.parametrize(
    ("rows", "ram", "cards", "expected"),
    [
        pytest.param({"Host": 786}, 2000, [], "", id="fits"),
        pytest.param({"Host": 786}, 1810, [], "", id="fits-exactly-less-the-margin"),
        pytest.param({"Host": 786}, 1809, [], "Host: 786 MiB, the host has 1809 MiB of RAM free less 1024 MiB kept",
                     id="one-mib-short"),
        pytest.param({"Host": 786}, 1700, [],
                     "Host: 786 MiB, the host has 1700 MiB of RAM free less 1024 MiB kept free", id="host-too-small"),
        pytest.param({"CUDA0": 9000, "CUDA1": 9000, "Host": 100}, 9000, [12000, 9500],
                     "CUDA1: 9000 MiB, the card has 9500 MiB free less 1024 MiB kept free", id="second-card-too-small"),
        pytest.param({"CUDA0": 9000}, 9000, [-1], "", id="unknown-free-not-judged"),
        pytest.param({"CUDA3": 9000}, 9000, [20000], "", id="card-not-listed-not-judged"),
        pytest.param({}, 0, [], "", id="no-rows"),
    ],
)
def test_fit_refusal(rows, ram, cards, expected):
    found = fit_check.fit_refusal(rows, ram_free_mib=ram, ram_margin_mib=1024,
                                  cards_free_mib=cards, gpu_margin_mib=1024)
    if expected:
        assert found.startswith("the engine's own estimate (llama-fit-params) does not fit: ")
        assert expected in found
    else:
        assert found == ""
