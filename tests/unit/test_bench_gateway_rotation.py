"""bench/gateway_rotation.py: the servers in rotation per backend, read from a real capture of HAProxy's exporter
(tests/unit/fixtures/gateway/README.md), and the sampler's summary."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import gateway_rotation  # noqa: E402

CAPTURE = ROOT / "tests" / "unit" / "fixtures" / "gateway" / "haproxy-2.6.12-exporter.txt"


def test_in_rotation_counts_the_up_servers_of_each_backend():
    # llf-host1:main is down by its checks and llf-host2:main drained: one of model_tiny's three is in rotation.
    assert gateway_rotation.in_rotation(CAPTURE.read_text()) == {"model_tiny": 1, "model_other": 1}


@pytest.mark.parametrize(("text", "counts"), [
    ("", {}),
    ('haproxy_server_status{proxy="m",server="a",state="UP"} 0\n', {"m": 0}),
    ('haproxy_server_status{proxy="m",server="a",state="UP"} 1\nhaproxy_server_status{proxy="m",server="b",'
     'state="UP"} 1\n', {"m": 2}),
    ('# HELP haproxy_server_status x\nhaproxy_backend_status{proxy="m",state="UP"} 1\n', {}),
])
def test_in_rotation_table(text, counts):
    assert gateway_rotation.in_rotation(text) == counts


def test_the_summary_gives_the_fewest_seen_and_the_longest_gap():
    sampler = gateway_rotation.RotationSampler("http://unused")
    sampler.samples = [(10.0, {"m": 3, "n": 1}), (10.2, {"m": 2, "n": 1}), (10.5, {"m": 1, "n": 0}),
                       (10.7, {"m": 3, "n": 1})]
    summary = sampler.summary()
    assert summary["backends"] == {"m": {"min": 1, "max": 3, "min_at": 10.5}, "n": {"min": 0, "max": 1, "min_at": 10.5}}
    assert (summary["samples"], summary["longest_gap_s"]) == (4, 0.3)
    assert sampler.summary(since=10.6)["backends"] == {"m": {"min": 3, "max": 3, "min_at": 10.7},
                                                       "n": {"min": 1, "max": 1, "min_at": 10.7}}
