"""Where an engine listens and where this host asks its /health (listen.py)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.listen import health_target, loopback_only


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param("127.0.0.1", True, id="v4-loopback"),
        pytest.param("127.3.0.9", True, id="v4-loopback-net"),
        pytest.param("::1", True, id="v6-loopback"),
        pytest.param("[::1]", True, id="v6-bracketed"),
        pytest.param("localhost", True, id="localhost"),
        pytest.param("/run/llama/x.sock", True, id="unix-socket"),
        pytest.param("127.0.0.1,::1", True, id="list-all-loopback"),
        pytest.param("0.0.0.0", False, id="any-v4"),
        pytest.param("::", False, id="any-v6"),
        pytest.param("10.0.0.5", False, id="lan"),
        pytest.param("127.0.0.1,10.0.0.5", False, id="list-one-open"),
        pytest.param("myhost", False, id="hostname"),
        pytest.param("", False, id="empty-is-default-any"),
    ],
)
def test_loopback_only(host, expected):
    assert loopback_only(host) is expected


@pytest.mark.parametrize(
    ("host", "url", "socket"),
    [
        pytest.param("0.0.0.0", "http://127.0.0.1:8080/health", "", id="any-v4"),
        pytest.param("::", "http://[::1]:8080/health", "", id="any-v6"),
        pytest.param("10.0.0.5,127.0.0.1", "http://10.0.0.5:8080/health", "", id="first-of-list"),
        pytest.param("fd00::5", "http://[fd00::5]:8080/health", "", id="v6"),
        pytest.param("myhost", "http://myhost:8080/health", "", id="hostname"),
        pytest.param("/run/x.sock", "http://localhost/health", "/run/x.sock", id="unix-socket"),
    ],
)
def test_health_target(host, url, socket):
    assert health_target(host, 8080) == {"url": url, "unix_socket": socket}
