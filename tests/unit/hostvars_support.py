"""hostvars that count how often each host's variables are read: for the tests that bound the reads
of a pass over thousands of nodes (the report, the cluster plan)."""

from __future__ import annotations

from collections import Counter


class CountingHostvars(dict):
    """A host's variables read by hostvars[host], hostvars.get(host) or hostvars.raw_get(host) (HostVars'
    read without templating) count once per read."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.reads: Counter = Counter()

    def __getitem__(self, host):
        self.reads[host] += 1
        return super().__getitem__(host)

    def get(self, host, default=None):
        self.reads[host] += 1
        return super().get(host, default)

    def raw_get(self, host):
        self.reads[host] += 1
        return super().get(host)
