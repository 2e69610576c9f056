# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print the API requests of the collection's identity from the lab API server's audit log, as a
JSON list (oldest first): time, verb, resource, subresource, namespace, name, code.

    audit.py AUDIT_LOG [--since ISO-8601 UTC time] [--user gpufabric-rollout]

The log is kube-apiserver's (audit.k8s.io/v1 Event per line, lab/controlplane/audit-policy.yaml
records the identity's requests at Metadata level); the scenario reads which evictions, cordons
and uncordons a run made, in which order, and which the API refused.
"""

import argparse
import json
import sys
from datetime import datetime, timezone


def when(text):
    text = text.rstrip("Z")
    parsed = datetime.fromisoformat(text[:26])
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--since", default="")
    parser.add_argument("--user", default="gpufabric-rollout")
    args = parser.parse_args(argv)
    since = when(args.since) if args.since else None
    out = []
    with open(args.log, encoding="utf-8") as handle:
        for line in handle:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if (event.get("user") or {}).get("username") != args.user:
                continue
            stamp = event.get("requestReceivedTimestamp") or ""
            if since is not None and when(stamp) < since:
                continue
            ref = event.get("objectRef") or {}
            out.append(
                {
                    "time": stamp,
                    "verb": event.get("verb"),
                    "resource": ref.get("resource"),
                    "subresource": ref.get("subresource", ""),
                    "namespace": ref.get("namespace", ""),
                    "name": ref.get("name", ""),
                    "code": (event.get("responseStatus") or {}).get("code"),
                }
            )
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
