#!/bin/bash
# bench/usage in the guest: `corral usage` through corrald over 1,000,000 stored runs, as
# users run it (the CLI over the socket, the daemon's store), beside the same report read
# by bench-usage from the store directly. The runs are written into corrald's own store
# by bench-usage while corrald is stopped. Prints figures; never fails on time.
# timeout: 3000
. "$CORRAL_TEST_LIB"
. "$(dirname "$0")/bench-lib.sh"
bench=${CORRAL_BUILDDIR:?}/bench/bench-usage
[ -x "$bench" ] || skip "$bench was not built"
state=/var/lib/corral

# The runs go in beside the jobs corrald has: stop it (socket too, so no client wakes it).
systemctl stop corrald.socket corrald.service
"$bench" "$state" | sed 's/^/store directly: /'
systemctl start corrald.socket

best_of() {   # best_of N CMD...: the fastest of N runs, in ms, of a command's wall time
    local n=$1 best= t0 t1 ms
    shift
    for _ in $(seq "$n"); do
        t0=$(date +%s%N)
        "$@" >/dev/null || fail "'$*' failed"
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 ))
        [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
    done
    echo "$best"
}
corral info >/dev/null   # started, and its store opened
rows=$(corral usage --since all --by project --json | jq '.rows | length')
[ "$rows" -gt 0 ] || fail "corral usage by project gave no rows over the stored runs"
echo "through corrald (the CLI over the socket, best of 3, whole command):"
for by in project day user queue; do
    echo "  corral usage --since all --by $by: $(best_of 3 corral usage --since all --by "$by") ms"
done
echo "  corral usage --since all --by day --csv: $(best_of 3 corral usage --since all --by day --csv) ms"
# A bare call of the CLI over the socket, for what the command costs besides the report.
info=$(best_of 3 corral info)
echo "  corral info (a round trip, for scale): $info ms"
day=$(best_of 3 corral usage --since all --by day)
figure "corral usage --by day over 1,000,000 runs, ms (anchor: corral info)" "$day" "$info" \
    "$(awk -v a="$day" -v b="$info" 'BEGIN {printf "%.1f", a / b}')"
