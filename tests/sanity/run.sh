#!/usr/bin/env bash
# Run `ansible-test sanity` on the collection. ansible-test needs the content root at
# .../ansible_collections/<namespace>/<name> (resolved with getcwd, so a symlink will not do),
# so the checkout's tracked and unignored files are copied there, and the dependency
# collections bundled in the `ansible` package are linked beside it.
# Usage: [SANITY_VENV=venv] tests/sanity/run.sh [extra ansible-test sanity arguments]
# SANITY_VENV: the venv whose ansible-test runs (default .venv; the matrix passes .lab/cores/<version>).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$(realpath -m "${SANITY_VENV:-${repo}/.venv}")"
python="${venv}/bin/python"
[[ -x "${python}" ]] || { echo "run 'make venv' first" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-sanity.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
dest="${work}/ansible_collections/gpufabric/rollout"
mkdir -p "${dest}"

# Tracked files plus new, unignored ones: what a commit would hold.
(cd "${repo}" && git ls-files -z --cached --others --exclude-standard) |
    (cd "${repo}" && while IFS= read -r -d '' f; do [[ -e "${f}" || -L "${f}" ]] && printf '%s\0' "${f}"; done) |
    (cd "${repo}" && xargs -0 cp -P --parents -t "${dest}")
# ansible-test lists content with git when it finds a repository; give it one of its own.
git -C "${dest}" init -q && git -C "${dest}" add -A

site="$("${python}" -c 'import ansible_collections, os; print(os.path.dirname(ansible_collections.__file__))' 2>/dev/null ||
    "${python}" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"] + "/ansible_collections")')"
for ns in kubernetes community ansible containers; do
    ln -s "${site}/${ns}" "${work}/ansible_collections/${ns}"
done

cache="${HOME}/.ansible/test/cache"
mkdir -p "${cache}"
# The pip releases this ansible-test bootstraps (its get_venv_packages pins them), read from it.
pips="$(grep -ohE "pip='[0-9]+\.[0-9]+'" "${site%/ansible_collections}/ansible_test/_internal/python_requirements.py" |
    sed -E "s/pip='([0-9]+)\.([0-9]+)'/\1_\2/" | sort -u)"
[[ -n "${pips}" ]] || { echo "tests/sanity/run.sh: cannot read ansible-test's pip version" >&2; exit 1; }
for v in ${pips}; do
    [[ -e "${cache}/get_pip_${v}.py" ]] || cp "${repo}/tests/sanity/get_pip_offline.py" "${cache}/get_pip_${v}.py"
done

cd "${dest}"
PATH="${venv}/bin:${PATH}" "${venv}/bin/ansible-test" sanity --venv --python 3.11 --color no "$@"
