#!/bin/bash
# bench/bill in the guest: one user floods corrald with its heaviest requests (a Usage
# report by day and a List of all their held jobs, in turn, 4 in flight on each of 8
# connections) for CORRAL_BENCH_S seconds; prints the CPU time corrald billed to that
# user (corral info --json, request_cpu) against what corrald's process used meanwhile
# (utime + stime of /proc/PID/stat, what getrusage(RUSAGE_SELF) says, every thread) and
# its service's cgroup (cpu.stat usage_usec). Prints figures; never fails on them.
# timeout: 1800
. "$CORRAL_TEST_LIB"
. "$(dirname "$0")/bench-lib.sh"
H=${CORRAL_BENCH_Q:-5000}   # held jobs, the flooder's
S=${CORRAL_BENCH_S:-60}     # seconds of flood measured
! bench_quick || { H=${CORRAL_BENCH_Q:-2000}; S=${CORRAL_BENCH_S:-20}; }
py=$(dirname "$0")/bench-flood.py
systemctl start corrald.socket
corral info >/dev/null

first=$(as_user "$USER_A" corral submit --parsable --hold --array "1-$H" -- /bin/true)
last=$((first + H - 1))
uid_a=$(id -u "$USER_A")
log "$USER_A (uid $uid_a) holds $H jobs ($first..$last)"

pid=$(systemctl show -P MainPID corrald)
cg=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup")
hz=$(getconf CLK_TCK)
# usec billed to uid_a, usec billed in all, corrald's process CPU usec, its cgroup's usec
sample() {
    corral info --json | python3 -c '
import json, sys
d = json.load(sys.stdin)["request_cpu"]
print(sum(u["usec"] for u in d["users"] if u["uid"] == int(sys.argv[1])), d["total_usec"])' "$uid_a" | tr '\n' ' '
    awk -v hz="$hz" '{printf "%d ", ($14 + $15) * 1000000 / hz}' "/proc/$pid/stat"
    awk '$1 == "usage_usec" {print $2}' "$cg/cpu.stat"
}

out=$(mktemp)
chmod 644 "$out"
setpriv --reuid="$USER_A" --regid="$(id -g "$USER_A")" --init-groups --reset-env -- \
    python3 "$py" heavy $((S + 60)) 8 >"$out" 2>&1 &
flooder=$!
sleep 3   # under way: connections open (their uid's budget kept while they are), requests in flight
read -r a0 t0 p0 c0 < <(sample)
w0=$(date +%s%N)
sleep "$S"
read -r a1 t1 p1 c1 < <(sample)
w1=$(date +%s%N)
kill -TERM "$flooder" 2>/dev/null
wait "$flooder" || true

echo "corrald's limits: $(grep -h '^Request' /etc/corral/corral.conf /etc/corral/corral.conf.d/*.conf 2>/dev/null \
    | tr '\n' ' ')(the defaults unless listed); $USER_A holds $H jobs"
awk -v a="$((a1 - a0))" -v t="$((t1 - t0))" -v p="$((p1 - p0))" -v c="$((c1 - c0))" -v w="$(( (w1 - w0) / 1000 ))" -v u="$USER_A" 'BEGIN {
    printf "over %.1f s of flood:\n", w / 1e6
    printf "  corrald CPU (getrusage: utime + stime, all threads): %.2f s (%.0f%% of one CPU)\n", p / 1e6, 100 * p / w
    printf "  corrald.service cgroup cpu.stat usage_usec: %.2f s\n", c / 1e6
    printf "  billed to %s: %.2f s = %.0f%% of corrald CPU (getrusage), %.0f%% (cgroup)\n", u, a / 1e6, 100 * a / p, 100 * a / c
    printf "  billed to every user: %.2f s = %.0f%% of corrald CPU (getrusage); the rest is billed to no one\n", t / 1e6, 100 * t / p
    printf "  (commits, syncs, scheduling passes, the event loop itself)\n" }'
figure "share of corrald's CPU billed to a flooding user, % (anchor: getrusage)" \
    "$(awk -v a="$((a1 - a0))" -v p="$((p1 - p0))" 'BEGIN {printf "%.0f", 100 * a / p}')"
sed 's/^/  /' "$out"
python3 "$py" cancel "$first" "$last"
rm -f "$out"
