"""bench/gateway_rotation.py: the servers in rotation per backend, read from a real capture of HAProxy's exporter
(tests/unit/fixtures/gateway/README.md), and the sampler's summary."""

import http.server
import sys
import threading
import time
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


def test_the_sampler_samples_in_a_process_of_its_own_with_the_key_off_its_argv():
    """A real child process against a local HTTP server that answers the capture only with the key."""
    seen_argv = []

    class Exporter(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = CAPTURE.read_bytes() if self.headers.get("Authorization") == "Bearer k-123" else b""
            self.send_response(200 if body else 401)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    try:
        good = gateway_rotation.RotationSampler(url, "k-123", interval_s=0.05).start()
        seen_argv.extend(good._child.args)
        bad = gateway_rotation.RotationSampler(url, "wrong", interval_s=0.05).start()
        time.sleep(1.0)
        summary, refused = good.stop(), bad.stop()
    finally:
        server.shutdown()
    assert summary["samples"] >= 3
    assert summary["errors"] == 0
    assert summary["backends"] == {"model_tiny": {"min": 1, "max": 1, "min_at": good.samples[0][0]},
                                   "model_other": {"min": 1, "max": 1, "min_at": good.samples[0][0]}}
    assert (refused["samples"], refused["errors"] >= 3) == (0, True)
    assert "k-123" not in " ".join(seen_argv)
