#!/bin/bash
# The environment Corral needs, proven part by part: cgroup v2 controllers, a transient
# scope's limits landing in its cgroup, the freezer, 2 NUMA nodes, and an unprivileged
# user reaching a root-owned unix socket. Any missing part fails this test.
# timeout: 180
. "$CORRAL_TEST_LIB"

[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || fail "/sys/fs/cgroup is not cgroup2"
ctrl=$(cat /sys/fs/cgroup/cgroup.controllers)
for c in cpuset cpu io memory pids; do
    [[ " $ctrl " == *" $c "* ]] || fail "cgroup controller '$c' not available (have: $ctrl)"
done
log "controllers: $ctrl"

unit=corral-envtest-$$.scope
systemd-run --scope --unit="$unit" --slice=corral-envtest.slice -p AllowedCPUs=1 -p MemoryMax=64M \
    -p IOWeight=500 -p CPUAccounting=yes sleep 120 &
trap 'systemctl stop "$unit" 2>/dev/null || true' EXIT
wait_for 30 systemctl is-active -q "$unit" || fail "$unit did not start"
cg=$(unit_cgroup "$unit")
log "scope cgroup: $cg"
assert_eq "$(cat "$cg/cpuset.cpus")" 1 "cpuset.cpus of the scope"
assert_eq "$(cat "$cg/memory.max")" $((64 * 1024 * 1024)) "memory.max of the scope"
assert_match "$(cat "$cg/io.weight")" '^default 500$' "io.weight of the scope"
pid=$(head -n1 "$cg/cgroup.procs")
assert_match "$(grep Cpus_allowed_list /proc/"$pid"/status)" ':[[:space:]]*1$' "the process's allowed CPUs"

systemctl freeze "$unit"
wait_for 10 grep -qx 'frozen 1' "$cg/cgroup.events" || fail "cgroup.events not frozen after FreezeUnit"
assert_eq "$(systemctl show -P FreezerState "$unit")" frozen "FreezerState after freeze"
systemctl thaw "$unit"
wait_for 10 grep -qx 'frozen 0' "$cg/cgroup.events" || fail "cgroup.events still frozen after ThawUnit"
log "freeze/thaw flip cgroup.events"

nodes=$(numactl --hardware | sed -n 's/^available: \([0-9]*\) nodes.*/\1/p')
assert_eq "$nodes" 2 "NUMA nodes seen by numactl --hardware"

sock=/run/corral-envtest.sock
rm -f "$sock"
python3 - "$sock" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(1)
c, _ = s.accept()
c.sendall(b"hello " + c.recv(64))
PY
server=$!
wait_for 10 test -S "$sock" || fail "test socket did not appear"
assert_eq "$(stat -c %U "$sock")" root "socket owner"
reply=$(as_user "$USER_A" python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1])
s.sendall(b"alice"); print(s.recv(64).decode())' "$sock")
assert_eq "$reply" "hello alice" "reply over the root-owned socket"
wait $server
log "unprivileged user reached a root-owned unix socket"
