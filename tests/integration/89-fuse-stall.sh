#!/bin/bash
# corrald never waits on a user's file (security round 3, item 1): alice, in a user and
# mount namespace of her own, mounts a FUSE file system whose server stops answering
# everyone but herself, reaches it through an overlayfs, and passes one of its files to
# corrald as a `corral run` job's stdin. corrald must refuse it without asking her server
# anything, keep answering bob and root meanwhile, get out of the FLUSH its close() sends
# her server (it aborts her FUSE connection), and restart as usual.
# Before the fix: corrald's fstat() of the descriptor waited on her server for ever, so
# bob's `corral queue` and root's `corral info` got no answer and the restart hung.
# timeout: 300
. "$CORRAL_TEST_LIB"
here=$(dirname "$0")
sock=/run/corral/io.corral.Manager
out=/tmp/fuse-stall.out

modprobe fuse 2>/dev/null || true
[ -c /dev/fuse ] || skip "no /dev/fuse in this kernel"
# What systemd's sys-fs-fuse-connections.mount does when the module loads.
mountpoint -q /sys/fs/fuse/connections || mount -t fusectl fusectl /sys/fs/fuse/connections \
    || skip "cannot mount fusectl"
chmod 0666 /dev/fuse
systemctl start corrald.socket
corral info >/dev/null || fail "corrald does not answer before the test"

rm -f "$out"
as_user "$USER_A" python3 "$here/fuse-stall.py" "$sock" >"$out" 2>&1 &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
trap cleanup EXIT
wait_for 120 sh -c "grep -q '^sent\\|^fuse-stall:\\|^Traceback' '$out' || ! kill -0 $server" || {
    cat "$out"; fail "alice's FUSE set-up did not finish in 120 s"; }
grep -q '^fuse-stall:\|^Traceback' "$out" && fail "the FUSE set-up failed: $(cat "$out")"

log "bob and root are answered while alice's descriptor is in corrald's hands"
sleep 2
t0=$(date +%s%N)
as_user "$USER_B" timeout 30 corral queue >/dev/null || { cat "$out"; fail "bob's corral queue got no answer"; }
timeout 30 corral info >/dev/null || { cat "$out"; fail "root's corral info got no answer"; }
log "answered in $(( ($(date +%s%N) - t0) / 1000000 )) ms"

wait_for 60 grep -q '^reply:' "$out" || { cat "$out"; fail "alice's Run got no answer"; }
cat "$out"
reply=$(sed -n 's/^reply: //p' "$out")
assert_match "$reply" 'InvalidParameter' "alice's file was not refused"
assert_match "$reply" 'stdin you passed cannot be the job.s: the file lives on a file system mounted in another mount namespace' \
    "the refusal does not say why"
grep -q '^stalled GETATTR' "$out" && fail "corrald asked alice's server for the file's attributes"

log "corrald aborts her FUSE connection once the close has waited 5 s"
wait_for 60 grep -q '^aborted' "$out" || {
    cat "$out"; ls -lnR /sys/fs/fuse/connections; journalctl -u corrald -n 30 --no-pager
    fail "her FUSE connection was never aborted"; }
grep -q '^stalled FLUSH' "$out" || fail "no FLUSH reached her server: the test did not test the close"
journalctl -u corrald --since "-5min" --no-pager | grep -q 'aborted 1 FUSE connection(s) of that user' \
    || fail "corrald did not log the abort"

log "corrald restarts as usual"
timeout 60 systemctl restart corrald || fail "systemctl restart corrald did not finish in 60 s"
timeout 30 corral info >/dev/null || fail "corrald does not answer after its restart"
cleanup

log "a restart while such a close waits: corrald aborts her connection on its way out"
rm -f "$out"
as_user "$USER_A" python3 "$here/fuse-stall.py" "$sock" >"$out" 2>&1 &
server=$!
wait_for 120 grep -q '^stalled FLUSH' "$out" || { cat "$out"; fail "the second Run's close did not reach her server"; }
t0=$(date +%s)
timeout 60 systemctl restart corrald || fail "systemctl restart corrald with a close waiting did not finish in 60 s"
log "restarted in $(( $(date +%s) - t0 )) s"
grep -q '^aborted' "$out" || fail "her FUSE connection was not aborted when corrald stopped"
timeout 30 corral info >/dev/null || fail "corrald does not answer after its restart"
cleanup

log "her file as a fourth descriptor, one more than a request may carry: closed off the loop too"
rm -f "$out"
as_user "$USER_A" python3 "$here/fuse-stall.py" "$sock" four >"$out" 2>&1 &
server=$!
wait_for 120 grep -q '^stalled FLUSH' "$out" || { cat "$out"; fail "the fourth descriptor's close did not reach her server"; }
as_user "$USER_B" timeout 30 corral queue >/dev/null || { cat "$out"; fail "bob's corral queue got no answer"; }
timeout 30 corral info >/dev/null || { cat "$out"; fail "root's corral info got no answer"; }
wait_for 60 grep -q '^aborted' "$out" || { cat "$out"; fail "her FUSE connection was never aborted"; }
log "ok"
