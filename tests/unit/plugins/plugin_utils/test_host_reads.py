"""plugin_utils/host_reads.py: hostvars read once per host within one plugin call."""

from collections.abc import Mapping

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import HostReads, read_once


class CountingHostvars(Mapping):
    """hostvars as Ansible's behave for these reads: an unknown host gives a falsy value, not a KeyError."""

    def __init__(self, hosts):
        self.hosts = hosts
        self.reads = []

    def __getitem__(self, name):
        self.reads.append(name)
        return dict(self.hosts[name]) if name in self.hosts else None

    def __iter__(self):
        return iter(self.hosts)

    def __len__(self):
        return len(self.hosts)


HOSTS = {"a": {"x": 1}, "b": {"x": 2}}


@pytest.mark.parametrize(("asked", "values", "reads"), [
    (["a", "a", "b", "a"], [{"x": 1}, {"x": 1}, {"x": 2}, {"x": 1}], ["a", "b"]),
    (["zz", "zz"], [None, None], ["zz"]),  # an unknown host's value is kept as hostvars gives it
    ([], [], []),
])
def test_each_host_is_read_once(asked, values, reads):
    hostvars = CountingHostvars(HOSTS)
    wrapped = read_once(hostvars)
    assert [wrapped.get(name) for name in asked] == values
    assert hostvars.reads == reads


def test_a_key_error_is_not_kept():
    hostvars = {"a": {"x": 1}}
    wrapped = HostReads(hostvars)
    assert wrapped.get("b", "none") == "none"
    hostvars["b"] = {"x": 2}
    assert wrapped["b"] == {"x": 2}


@pytest.mark.parametrize("value", ["", None, [], "not hostvars"])
def test_what_is_not_a_mapping_stays_as_it_is(value):
    assert read_once(value) is value


def test_it_is_the_mapping_it_wraps():
    wrapped = read_once(CountingHostvars(HOSTS))
    assert read_once(wrapped) is wrapped
    assert sorted(wrapped) == ["a", "b"]
    assert len(wrapped) == 2
    assert "a" in wrapped
    assert "c" not in read_once({"a": {}})
