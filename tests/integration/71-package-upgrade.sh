#!/bin/bash
# Upgrading the package under load: with one job running and others queued and held, a
# newer build of the package (the same one, its version raised) is installed over it.
# The running job keeps running (same processes, its scope never stopped) and is recorded
# when it ends by the new daemon; queued and held jobs are kept; the socket stays active
# throughout (never stopped: clients queue on it while the daemon restarts) and corrald
# runs the new binary. Then the original package goes back.
# timeout: 400
. "$CORRAL_TEST_LIB"

dpkg-query -W -f='${Status}\n' corral 2>/dev/null | grep -qx 'install ok installed' \
    || skip "Corral was installed without its package"
deb=$(ls "$CORRAL_BUILDDIR"/deb/corral_*_"$(dpkg --print-architecture)".deb 2>/dev/null | head -n1)
[ -f "$deb" ] || skip "no corral .deb in $CORRAL_BUILDDIR/deb"
db=/var/lib/corral/corral.db
state() { sqlite3 "$db" "select state from jobs where id=$1"; }
state_is() { [ "$(state "$1")" = "$2" ]; }

old=$(dpkg-deb -f "$deb" Version)
new=$old+upgrade1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -R "$deb" "$work/pkg"
sed -i "s/^Version: .*/Version: $new/" "$work/pkg/DEBIAN/control"
dpkg-deb -b "$work/pkg" "$work/corral_new.deb" >/dev/null
dpkg --compare-versions "$new" gt "$old" || fail "$new is not newer than $old"

systemctl start corrald.socket
# One job fills both CPUs; one waits for them; one is held.
a=$(as_user "$USER_A" corral submit --parsable -n 2 -D /tmp -- sh -c 'sleep 25; echo survived') || fail "submit: $a"
wait_for 60 state_is "$a" RUNNING || fail "job $a is $(state "$a"), not RUNNING"
b=$(as_user "$USER_B" corral submit --parsable -n 1 -D /tmp -- sh -c 'echo queued') || fail "submit: $b"
h=$(as_user "$USER_B" corral submit --parsable --hold -n 1 -D /tmp -- true) || fail "submit: $h"
wait_for 30 state_is "$b" PENDING || fail "job $b is $(state "$b"), not PENDING"
procs_a=$(cat "$(unit_cgroup "corral-job-$a.scope")/job/cgroup.procs")
[ -n "$procs_a" ] || fail "job $a has no processes"
daemon_pid=$(systemctl show -P MainPID corrald.service)
socket_since=$(systemctl show -P ActiveEnterTimestampMonotonic corrald.socket)
log "job $a running ($procs_a), $b pending, $h held; corrald $daemon_pid; upgrading $old -> $new"

out=$(DEBIAN_FRONTEND=noninteractive dpkg -i "$work/corral_new.deb" 2>&1) || fail "dpkg -i: $out"
assert_eq "$(dpkg-query -W -f='${Version}' corral)" "$new" "installed version"

assert_eq "$(systemctl is-active corrald.socket)" active "corrald.socket after the upgrade"
assert_eq "$(systemctl show -P ActiveEnterTimestampMonotonic corrald.socket)" "$socket_since" \
    "corrald.socket was stopped or restarted by the upgrade"
wait_for 60 systemctl is-active -q corrald.service || fail "corrald.service is not active after the upgrade"
new_pid=$(systemctl show -P MainPID corrald.service)
[ "$new_pid" != "$daemon_pid" ] || fail "corrald was not restarted: the old binary still runs"
systemctl is-active -q "corral-job-$a.scope" || fail "job $a's scope did not survive the upgrade"
assert_eq "$(cat "$(unit_cgroup "corral-job-$a.scope")/job/cgroup.procs")" "$procs_a" "job $a's processes"
assert_eq "$(state "$b")" PENDING "queued job $b after the upgrade"
assert_eq "$(state "$h")" HELD "held job $h after the upgrade"
as_user "$USER_A" corral info >/dev/null || fail "corral info after the upgrade"

# The new daemon records the adopted job's end and starts the queued one.
wait_for 120 state_is "$a" COMPLETED || fail "job $a ended $(state "$a") after the upgrade"
wait_for 120 state_is "$b" COMPLETED || fail "job $b is $(state "$b"), not COMPLETED"
journalctl --no-pager -o cat -u "corral-job-$a.scope" | grep -qx survived || fail "job $a's output is not in the journal"
as_user "$USER_B" corral cancel "$h" >/dev/null || fail "cancel $h"

log "reinstalling $old"
out=$(DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" 2>&1) || fail "dpkg -i $deb: $out"
assert_eq "$(dpkg-query -W -f='${Version}' corral)" "$old" "installed version"
assert_eq "$(systemctl is-active corrald.socket)" active "corrald.socket after reinstalling"
as_user "$USER_A" corral info >/dev/null || fail "corral info after reinstalling"
log "ok"
