#!/bin/bash
# bench/loop in the guest (issue #23, "never blocked"): while one user runs the heaviest
# requests a user can make -- `corral usage` over 1,000,000 stored runs, `corral queue`
# over 100,000 jobs (every page), `corral why` and `submit --test-only` -- another user's
# `corral queue --me` and a bare GetInfo round trip are timed, and the same without the
# heavy user, in the same run: p50/p99 of each. Prints figures; never fails on time.
# timeout: 3600
. "$CORRAL_TEST_LIB"
. "$(dirname "$0")/bench-lib.sh"
bench=${CORRAL_BUILDDIR:?}/bench/bench-usage
[ -x "$bench" ] || skip "$bench was not built"
Q=${CORRAL_BENCH_Q:-100000}  # jobs held by the heavy user
K=${CORRAL_BENCH_K:-40}      # samples of the other user's corral queue --me, per phase
! bench_quick || { Q=${CORRAL_BENCH_Q:-20000}; K=${CORRAL_BENCH_K:-15}; }
py=$(dirname "$0")/bench-flood.py
state=/var/lib/corral

# A year of runs in corrald's own store, written while it is stopped.
# (bench-all runs bench-usage first, which leaves that year in the store: not twice.)
if [ "$(sqlite3 "$state/corral.db" 'select count(*) from job_usage' 2>/dev/null || echo 0)" -lt 500000 ]; then
    systemctl stop corrald.socket corrald.service
    "$bench" "$state" >/dev/null
    systemctl start corrald.socket
fi
corral info >/dev/null

# The queue is root's (above any user's MaxArraySize=): what the heavy user lists.
first=$(corral submit --parsable --hold --array "1-$Q" -- /bin/true)
last=$((first + Q - 1))
log "root holds $Q jobs ($first..$last)"
# bob's own: ten held jobs, after root's, that his corral queue --me shows.
as_user "$USER_B" corral submit --parsable --hold --array 1-10 -- /bin/true >/dev/null

# Timed in bob's own shell, entered once per phase, as he would type it, with bash's own
# clock: a setpriv into the user around every run costs more than the command itself under
# emulation (bench-submit prints it), and a `date` its own fork and exec; neither is
# corral's.
samples() {
    as_user "$USER_B" env PATH="$PATH" bash -c '
        for _ in $(seq "$1"); do
            t0=${EPOCHREALTIME/[.,]/}
            corral queue --me >/dev/null || echo "corral queue --me failed" >&2
            t1=${EPOCHREALTIME/[.,]/}
            echo $(( (t1 - t0) / 1000 ))
            sleep 0.5
        done' bench "$K"
}
pct() { sort -n | awk '{v[NR] = $1} END {
        i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
        printf "p50 %d ms, p99 %d ms, max %d ms (%d samples)", v[i50], v[i99], v[NR], NR }'; }
bg_as() {
    local u=$1 f=$2
    shift 2
    setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups --reset-env -- "$@" >"$f" 2>&1 &
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null || true; }
out=$(mktemp -d)
chmod 755 "$out"

# The heavy user, one request after another for as long as the phase lasts; each kind's
# wall time is logged (ms) so the load is known.
cat > "$out/heavy" <<HEAVY
#!/bin/bash
t() { local k=\$1 t0 t1; shift; t0=\$(date +%s%N); "\$@" >/dev/null 2>&1; t1=\$(date +%s%N)
      echo "\$k \$(( (t1 - t0) / 1000000 ))"; }
while :; do
    t usage corral usage --since all --by day
    t queue-all corral queue
    t why corral why $last
    t test-only corral submit --test-only -c 1 -- /bin/true
done
HEAVY
chmod 755 "$out/heavy"

phase() {
    local probe lprobe
    bg_as "$USER_B" "$out/probe-$1" python3 "$py" probe 1200
    probe=$!
    bg_as "$USER_B" "$out/lprobe-$1" python3 "$py" probe 1200 "$USER_B"
    lprobe=$!
    samples > "$out/samples-$1"
    pct < "$out/samples-$1" > "$out/queue-$1"
    stop "$probe"
    stop "$lprobe"
}

phase quiet
bg_as "$USER_A" "$out/heavy-log" "$out/heavy"
heavy=$!
sleep 5
phase heavy
stop "$heavy"

echo "held jobs (root's): $Q; runs in the store: about 1,000,000 (bench-usage's year)"
for p in quiet heavy; do
    echo "phase: $p"
    echo "  $USER_B's corral queue --me (whole command): $(cat "$out/queue-$p")"
    echo "  $USER_B's List of his own jobs (corral queue --me's request, all pages) every 50 ms: $(cat "$out/lprobe-$p")"
    echo "  $USER_B's GetInfo round trip every 50 ms: $(cat "$out/probe-$p")"
done
p99() { sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' "$1"; }
figure "another user's GetInfo p99 while one runs the heaviest, ms (anchor: quiet)" "$(p99 "$out/probe-heavy")" \
    "$(p99 "$out/probe-quiet")" "$(awk -v a="$(p99 "$out/probe-heavy")" -v b="$(p99 "$out/probe-quiet")" 'BEGIN {if (b > 0) printf "%.2f", a / b}')"
echo "  $USER_A's requests meanwhile (ms each):"
for k in usage queue-all why test-only; do
    echo "    $k (ms): $(awk -v k=$k '$1 == k {print $2}' "$out/heavy-log" | sort -n | awk '{v[NR]=$1} END {if (NR) printf "median %d, max %d, n %d", v[int((NR+1)/2)], v[NR], NR}')"
done
python3 "$py" cancel "$first" "$last"
corral cancel --user "$USER_B" >/dev/null 2>&1 || true
rm -rf "$out"
