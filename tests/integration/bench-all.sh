#!/bin/bash
# bench/all in the guest (tests/vm/run --build-dir build bench-all): every benchmark that
# needs no Slurm image, one after another in this one boot, then one table of the figures
# they print (bench-lib.sh's FIGURE lines): figure, value, anchor, ratio, date. Each
# benchmark's own output is in logs/bench-all-NAME.log. CORRAL_BENCH_QUICK=1 (the default
# here; 0 for the full sizes, about an hour) gives each its smaller sizes so the set fits
# about 16 minutes under TCG. CORRAL_BENCH_ALL names a subset ("bench-submit bench-daemon").
# Prints figures; fails only when a benchmark does.
# timeout: 4500
. "$CORRAL_TEST_LIB"
export CORRAL_BENCH_QUICK=${CORRAL_BENCH_QUICK:-1}
here=$(cd "$(dirname "$0")" && pwd)
logs=${CORRAL_TEST_OUT:-/tmp}/logs
mkdir -p "$logs"
# bench-usage leaves a year of runs in the store, which bench-loop then lists (it writes
# them itself when they are not there); every other benchmark starts on an empty store.
list=(${CORRAL_BENCH_ALL:-bench-launch bench-submit bench-daemon bench-usage bench-loop bench-flood bench-bill})

fresh_store() {
    corral cancel --user "$USER_A" >/dev/null 2>&1 || true
    systemctl stop corrald.socket corrald.service
    rm -f /var/lib/corral/corral.db /var/lib/corral/corral.db-wal /var/lib/corral/corral.db-shm
    systemctl start corrald.socket
    corral info >/dev/null
}

figures=$(mktemp) failed=()
for b in "${list[@]}"; do
    [ "$b" = bench-loop ] || fresh_store
    limit=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$here/$b.sh" | head -n1)
    t0=$(date +%s)
    rc=0
    timeout -k 5 "${limit:-1800}" bash "$here/$b.sh" >"$logs/bench-all-$b.log" 2>&1 </dev/null || rc=$?
    echo "$b: $(( $(date +%s) - t0 )) s, exit $rc"
    [ $rc = 0 ] || { failed+=("$b"); tail -n 20 "$logs/bench-all-$b.log" | sed 's/^/  | /'; }
    grep -a '^FIGURE	' "$logs/bench-all-$b.log" | sed "s/^FIGURE	/$b	/" >> "$figures" || true
done
fresh_store

date=$(date -u +%Y-%m-%d)
echo
echo "bench/all, $date, the test guest ($(nproc) vCPUs$([ "$CORRAL_BENCH_QUICK" = 1 ] && echo ", quick sizes")):"
echo
echo "| benchmark | figure | value | anchor | ratio | date |"
echo "|---|---|---|---|---|---|"
awk -F'\t' -v d="$date" '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, d}' "$figures"
rm -f "$figures"
[ ${#failed[@]} = 0 ] || fail "benchmarks that failed: ${failed[*]}"
