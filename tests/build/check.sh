#!/usr/bin/env bash
# Build the collection tarball, install it into a scratch path outside the checkout, and check
# that ansible-doc serves every module and filter from the installed copy (not the checkout).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

cd "${repo}"
ansible-galaxy collection build --force --output-path "${work}/dist" >/dev/null
tarball="$(ls "${work}"/dist/gpufabric-rollout-*.tar.gz)"
echo "built $(basename "${tarball}") ($(du -k "${tarball}" | cut -f1) KiB)"

# Nothing a user must not receive.
if tar -tzf "${tarball}" | grep -E '^(\.collections|\.venv|\.lab|\.tools|molecule|lab|tests/output|\.git)(/|$)'; then
    echo "the tarball carries development-only paths (see build_ignore in galaxy.yml)" >&2
    exit 1
fi

cd "${work}"   # outside the checkout, so its ansible.cfg is not in play
env -u ANSIBLE_CONFIG ansible-galaxy collection install --no-deps --force -p "${work}/installed" "${tarball}" >/dev/null
listing="$(env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="${work}/installed" ansible-doc -l gpufabric.rollout 2>&1)"
filters="$(env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="${work}/installed" ansible-doc -t filter -l gpufabric.rollout 2>&1 || true)"
status=0
for m in "${repo}"/plugins/modules/*.py; do
    [[ -e "$m" ]] || continue
    name="gpufabric.rollout.$(basename "$m" .py)"
    if ! grep -q "^${name} " <<<"${listing}"; then
        echo "ansible-doc does not list ${name} from the installed collection" >&2
        status=1
    fi
done
count="$(grep -c '^gpufabric\.rollout\.' <<<"${listing}" || true)"
echo "ansible-doc lists ${count} module(s) and $(grep -c '^gpufabric\.rollout\.' <<<"${filters}" || true) filter(s) from the installed collection"
exit "${status}"
