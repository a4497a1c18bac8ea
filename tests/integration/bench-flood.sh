#!/bin/bash
# bench/flood in the guest: one user floods corrald with List requests over thousands of
# held jobs (normal ones, 4 in flight on each of 8 connections, every reply read; and
# oneway ones on 8 more connections that never read), while another user's
# `corral queue` is timed, without and with the flood, in the same run: p50 and p99 of
# CORRAL_BENCH_K samples each. Prints figures; never fails on time. Bounded: the flood
# stops by itself after 600 s, and is stopped as soon as the samples are taken; a
# `corral queue` is given 120 s at most.
# timeout: 1800
. "$CORRAL_TEST_LIB"
. "$(dirname "$0")/bench-lib.sh"
H=${CORRAL_BENCH_Q:-5000}   # held jobs, the flooder's
K=${CORRAL_BENCH_K:-30}     # samples of the other user's corral queue, per phase
! bench_quick || { H=${CORRAL_BENCH_Q:-2000}; K=${CORRAL_BENCH_K:-10}; }
py=$(dirname "$0")/bench-flood.py
systemctl start corrald.socket
corral info >/dev/null

first=$(as_user "$USER_A" corral submit --parsable --hold --array "1-$H" -- /bin/true)
last=$((first + H - 1))
log "$USER_A holds $H jobs ($first..$last)"

# Bob's corral queue, as he would run it now and then (every 2 s after the last: back to
# back, its 5,000-job pages alone would take about a third of corrald's time in the
# emulated guest, more than his own RequestSharePerUser=): wall time of the whole
# command, in ms, one per line; one that takes over 120 s counts as 120 s (a stalled
# corrald must not stall the benchmark).
samples() {
    local t0 t1
    for _ in $(seq "$K"); do
        t0=$(date +%s%N)
        timeout 120 setpriv --reuid="$USER_B" --regid="$(id -g "$USER_B")" --init-groups --reset-env -- \
            corral queue >/dev/null || echo "corral queue failed or timed out" >&2
        t1=$(date +%s%N)
        echo $(( (t1 - t0) / 1000000 ))
        sleep 2
    done
}
# p50 and p99 by nearest rank (with K under 100, p99 is the slowest sample).
pct() { sort -n | awk '{v[NR] = $1} END {
        i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
        printf "p50 %d ms, p99 %d ms, max %d ms (%d samples)", v[i50], v[i99], v[NR], NR }'; }

# CMD as USER in the background, its output in FILE: $! is CMD's own pid (setpriv execs
# it), so that it can be stopped.
bg_as() {
    local u=$1 f=$2
    shift 2
    setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups --reset-env -- "$@" >"$f" 2>&1 &
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" || true; }
daemon_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' \
                   "/proc/$(systemctl show -P MainPID corrald)/stat"; }
out=$(mktemp -d)
chmod 755 "$out"

# One phase: bob's corral queue K times, with a GetInfo probe of bob's beside it.
phase() {
    local probe c0 t0
    bg_as "$USER_B" "$out/probe-$1" python3 "$py" probe 600
    probe=$!
    c0=$(daemon_cpu) t0=$(date +%s)
    samples > "$out/samples-$1"
    pct < "$out/samples-$1" > "$out/queue-$1"
    echo "$(awk -v a="$c0" -v b="$(daemon_cpu)" 'BEGIN {printf "%.1f", b - a}') s of corrald CPU in $(( $(date +%s) - t0 )) s" > "$out/cpu-$1"
    stop "$probe"
}

phase quiet
bg_as "$USER_A" "$out/flood" python3 "$py" flood 600 8 8
flooder=$!
sleep 3   # the flood under way: connections open, requests in flight, oneway sockets full
phase flood
stop "$flooder"

echo "jobs held by the flooding user: $H; corrald's limits: $(grep -h '^Request' /etc/corral/corral.conf \
    /etc/corral/corral.conf.d/*.conf 2>/dev/null | tr '\n' ' ')(the defaults unless listed)"
for p in quiet flood; do
    echo "phase: $p"
    echo "  $USER_B's corral queue (whole command): $(cat "$out/queue-$p")"
    echo "    every sample, sorted (ms): $(sort -n "$out/samples-$p" | tr '\n' ' ')"
    echo "  $USER_B's GetInfo round trip every 50 ms: $(cat "$out/probe-$p")"
    echo "  corrald: $(cat "$out/cpu-$p")"
done
sed 's/^/  /' "$out/flood"
p50() { sed -n 's/.*p50 \([0-9.]*\) ms.*/\1/p' "$1"; }
figure "another user's corral queue p50 under a List flood, ms (anchor: quiet)" "$(p50 "$out/queue-flood")" \
    "$(p50 "$out/queue-quiet")" "$(awk -v a="$(p50 "$out/queue-flood")" -v b="$(p50 "$out/queue-quiet")" 'BEGIN {if (b > 0) printf "%.2f", a / b}')"
python3 "$py" cancel "$first" "$last"
rm -rf "$out"
