#!/bin/bash
# Commits, each one fsync of the store: submits that arrive together share one (group
# commit), and a job's submit shares its commit with its start (store_commits in GetInfo).
# timeout: 300
. "$CORRAL_TEST_LIB"
systemctl start corrald.socket
corral info >/dev/null
commits() { corral info --json | jq -r .store_commits; }
syncs() { corral info --json | jq -r .store_syncs; }
pid=$(systemctl show -P MainPID corrald)

# Eight clients' submits, all readable when corrald wakes: handled in one iteration and
# acknowledged after the one commit that carries them all.
c0=$(commits); s0=$(syncs)
python3 - "$pid" <<'PY'
import json, os, signal, socket, sys, time
pid = int(sys.argv[1])
req = json.dumps({"method": "io.corral.Manager.Submit",
                  "parameters": {"argv": ["/bin/true"], "workdir": "/tmp", "cpus": 1, "hold": True}}).encode() + b"\0"
conns = []
for _ in range(8):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/corral/io.corral.Manager")
    conns.append(s)
time.sleep(1)  # all accepted
os.kill(pid, signal.SIGSTOP)
try:
    for s in conns:
        s.sendall(req)
    time.sleep(0.5)
finally:
    os.kill(pid, signal.SIGCONT)
for s in conns:
    buf = b""
    while b"\0" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("corrald closed a connection")
        buf += chunk
    if b'"error"' in buf:
        sys.exit(buf.decode())
PY
c1=$(commits); s1=$(syncs)
log "8 submits arriving together: $((c1 - c0)) commit(s), $((s1 - s0)) sync(s) of the store's log"
# One, or two if the scheduling timer's sweep happened to commit in between; each
# acknowledged only once a sync of the log covered it, one sync for them all.
assert_le $((c1 - c0)) 2 "commits for 8 submits arriving together"
assert_le $((s1 - s0)) 2 "syncs for 8 submits arriving together"
[ "$((s1 - s0))" -ge 1 ] || fail "8 submits acknowledged with no sync of the store's log"
corral cancel --user root >/dev/null

# A job from its submit to its end: the submit and its start in one commit, the end
# (and the pass after it) in another.
c0=$(commits)
as_user "$USER_A" corral submit --wait -- /bin/true
c1=$(commits)
log "one job from submit to end: $((c1 - c0)) commit(s)"
assert_le $((c1 - c0)) 2 "commits for one job's submit, start and end"
