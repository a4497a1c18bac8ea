#!/bin/bash
# bench/daemon in the guest: durable submits/s (1 and 8 clients), corrald's RSS with the
# resulting held jobs queued, and end-to-end throughput of trivial jobs vs systemd-run.
# Prints figures; never fails on time.
# timeout: 1500
. "$CORRAL_TEST_LIB"
N=${CORRAL_BENCH_N:-2000}
systemctl start corrald.socket
python3 "$(dirname "$0")/bench-daemon.py" "$N"
pid=$(systemctl show -P MainPID corrald)
queued=$(sqlite3 /var/lib/corral/corral.db "select count(*) from jobs where state='HELD'")
echo "corrald RSS with $queued queued jobs: $(awk '/VmRSS/ {print $2, $3}' /proc/$pid/status)"
E=${CORRAL_BENCH_E:-100}
t0=$(date +%s%N)
for i in $(seq "$E"); do systemd-run --quiet --scope /bin/true; done
t1=$(date +%s%N)
first=$(as_user "$USER_A" corral submit --parsable -- /bin/true)
for i in $(seq $((E - 1))); do as_user "$USER_A" corral submit --parsable -- /bin/true >/dev/null; done
last=$((first + E - 1))
as_user "$USER_A" corral wait "$last" >/dev/null || true
until [ "$(sqlite3 /var/lib/corral/corral.db "select count(*) from jobs where id between $first and $last and state in ('COMPLETED','FAILED')")" = "$E" ]; do sleep 0.2; done
t2=$(date +%s%N)
bare=$(awk -v n="$E" -v ns=$((t1 - t0)) 'BEGIN {printf "%.1f", n / (ns / 1e9)}')
ours=$(awk -v n="$E" -v ns=$((t2 - t1)) 'BEGIN {printf "%.1f", n / (ns / 1e9)}')
echo "end to end, $E trivial jobs: corral $ours jobs/s, bare systemd-run --scope $bare jobs/s, ratio $(awk -v a="$ours" -v b="$bare" 'BEGIN {printf "%.2f", a / b}')"
