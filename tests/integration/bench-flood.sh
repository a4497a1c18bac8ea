#!/bin/bash
# bench/flood in the guest: one user floods corrald with List requests over thousands of
# held jobs (normal ones, 4 in flight on each of 8 connections, every reply read; and
# oneway ones on 8 more connections that never read), while another user's
# `corral queue` is timed, without and with the flood, in the same run: p50 and p99 of
# CORRAL_BENCH_K samples each. Prints figures; never fails on time. Bounded: the flood
# stops by itself after 600 s, and is stopped as soon as the samples are taken.
# timeout: 1800
. "$CORRAL_TEST_LIB"
H=${CORRAL_BENCH_Q:-5000}   # held jobs, the flooder's
K=${CORRAL_BENCH_K:-40}     # samples of the other user's corral queue, per phase
py=$(dirname "$0")/bench-flood.py
systemctl start corrald.socket
corral info >/dev/null

first=$(as_user "$USER_A" corral submit --parsable --hold --array "1-$H" -- /bin/true)
last=$((first + H - 1))
log "$USER_A holds $H jobs ($first..$last)"

# Bob's corral queue, as he would run it now and then: wall time of the whole command,
# in ms, one per line.
samples() {
    local t0 t1
    for _ in $(seq "$K"); do
        t0=$(date +%s%N)
        as_user "$USER_B" corral queue >/dev/null || fail "corral queue failed"
        t1=$(date +%s%N)
        echo $(( (t1 - t0) / 1000000 ))
        sleep 0.2
    done
}
# p50 and p99 by nearest rank (with K=40, p99 is the slowest sample).
pct() { sort -n | awk '{v[NR] = $1} END {
        i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
        printf "p50 %d ms, p99 %d ms, max %d ms (%d samples)", v[i50], v[i99], v[NR], NR }'; }

quiet=$(samples | pct)
as_user "$USER_A" python3 "$py" flood 600 8 8 > /tmp/bench-flood.out 2>&1 &
flooder=$!
sleep 3   # the flood under way: connections open, requests in flight, oneway sockets full
flooded=$(samples | pct)
kill -TERM "$flooder" 2>/dev/null
wait "$flooder" || true

echo "jobs held by the flooding user: $H"
echo "$USER_B's corral queue, no flood:   $quiet"
echo "$USER_B's corral queue, under flood: $flooded"
cat /tmp/bench-flood.out
echo "corrald's limits: $(grep -h '^Request' /etc/corral/corral.conf /etc/corral/corral.conf.d/*.conf 2>/dev/null | tr '\n' ' ')(defaults unless listed)"
python3 "$py" cancel "$first" "$last"
rm -f /tmp/bench-flood.out
