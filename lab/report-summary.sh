#!/usr/bin/env bash
# The end of a lab run of site.yml or playbooks/validate.yml: the summary part of the validation
# report the run wrote (the verdict, a line per layer and node, every failure and every gate that
# did not run: what precedes its details), at most 30 lines, and the paths of the reports the run
# wrote, so that the recap stays on screen.
# Usage: lab/report-summary.sh SINCE   (SINCE: a file older than the run; reports older are not its)
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

since="${1:?usage: lab/report-summary.sh SINCE-FILE}"
text="$(find "${LAB_STATE}" -maxdepth 1 -name 'validation*.txt' -newer "${since}" -printf '%T@ %p\n' 2>/dev/null |
    sort -n | tail -n 1 | cut -d' ' -f2-)"
echo
if [[ -n "${text}" ]]; then
    summary="$(sed '/^== Details by layer and node/,$d' "${text}")"
    # Here-strings, not pipes: with pipefail, `printf | head` fails (SIGPIPE) whenever head exits
    # before printf has written a summary longer than one write (dra mode's pairs make it so).
    head -n 30 <<<"${summary}"
    (($(wc -l <<<"${summary}") <= 30)) || echo "  ... (the rest in ${text})"
else
    echo "This run wrote no validation report."
fi
echo "Reports:"
for name in rollout-report.txt validation.html validation.txt validation-junit.xml \
    validation-check-mode.html validation-check-mode.txt validation-check-mode-junit.xml; do
    [[ ! "${LAB_STATE}/${name}" -nt "${since}" ]] || echo "  ${LAB_STATE}/${name}"
done
