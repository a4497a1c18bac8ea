#!/bin/bash
# The README's two commands run as root on a bare Debian, where sudo is not installed:
# no script the project runs calls sudo, and the README shows both commands as root types
# them (with sudo only as the alternative for a user who has it). The pattern is checked
# against planted lines first, so that it cannot silently match nothing.
set -euo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# sudo where a command starts: line start, after ; & | ( $( && || or a shell keyword.
cmd='(^|[;&|(`]|\$\(|\b(then|do|else|exec|xargs|time|!))[[:space:]]*sudo([[:space:]]|$)'

calls_sudo() { grep -vE '^[[:space:]]*#' | grep -qE "$cmd"; }
for planted in 'sudo apt-get install x' '  x=$(sudo id -u)' 'true && sudo make' 'if a; then sudo b; fi' \
               'exec sudo "$@"'; do
    printf '%s\n' "$planted" | calls_sudo || { echo "self-test: '$planted' not caught" >&2; exit 1; }
done
for fine in 'corral submit --name sudo -- true' '# sudo is not needed' 'n=$(journalctl SYSLOG_IDENTIFIER=sudo)'; do
    printf '%s\n' "$fine" | calls_sudo && { echo "self-test: '$fine' taken for a sudo call" >&2; exit 1; }
done

bad=0
while IFS= read -r -d '' f; do
    head -c 64 "$f" | grep -q '^#!.*\(ba\)\?sh' || [[ "$f" == *.sh ]] || continue
    if calls_sudo <"$f"; then
        echo "$f calls sudo (a bare Debian has none; the scripts run as root):" >&2
        grep -nE "$cmd" "$f" | grep -vE '^[0-9]+:[[:space:]]*#' >&2 || true
        bad=1
    fi
done < <(find "$src/scripts" "$src/tests" "$src/.ci" "$src/bench" "$src/debian" -type f \
              -not -path '*/corpus/*' -not -name test-no-sudo.sh -print0 2>/dev/null)
[ "$bad" = 0 ] || exit 1

# The README shows the two commands as root types them.
for c in scripts/demo scripts/test; do
    grep -qE "^    $c([[:space:]]|$)" "$src/README.md" || { echo "README.md does not show '$c' as root runs it" >&2; exit 1; }
done
echo "ok: no script calls sudo; README shows scripts/demo and scripts/test as root runs them"
