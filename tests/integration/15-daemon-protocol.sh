#!/bin/bash
# corrald over its socket-activated socket, spoken to directly: it answers malformed and
# oversized requests with named errors and carries on serving everyone else; durable
# submission works as an unprivileged user; peer identity comes from the kernel.
# timeout: 300
. "$CORRAL_TEST_LIB"
sock=/run/corral/io.corral.Manager
client=$(dirname "$0")/proto-client.py
systemctl start corrald.socket
assert_eq "$(stat -c %a "$sock")" 666 "socket mode"

out=$(as_user "$USER_A" python3 "$client" "$sock" <<'REQ'
RAW:{not json
RAW:[1,2]
{"method":"io.corral.Manager.Frobnicate","parameters":{}}
BIG:1100000
{"method":"io.corral.Manager.Show","parameters":{"job_id":"x"}}
{"method":"io.corral.Manager.GetInfo","parameters":{}}
REQ
)
log "$out"
mapfile -t r <<<"$out"
assert_match "${r[0]}" '"error": *"io.corral.Manager.InvalidRequest"' "malformed JSON"
assert_match "${r[1]}" '"error": *"io.corral.Manager.InvalidRequest"' "a JSON array"
assert_match "${r[2]}" '"error": *"io.corral.Manager.MethodNotFound"' "unknown method"
assert_match "${r[3]}" '"error": *"io.corral.Manager.MessageTooLarge"' "oversized message"
assert_match "${r[4]}" '"parameter": *"job_id"' "bad job id names the parameter"
assert_match "${r[5]}" '"cpus": *2' "GetInfo after all that, on the same connection"
systemctl is-active -q corrald.service || fail "corrald not running after bad requests"

sub='{"method":"io.corral.Manager.Submit","parameters":{"argv":["/bin/true"],"workdir":"/tmp","cpus":1}}'
out=$(as_user "$USER_A" python3 "$client" "$sock" <<<"$sub")
assert_match "$out" '"job_id": *[0-9]+' "submit reply"
id=$(jq -r .parameters.job_id <<<"$out")
wait_for 120 sh -c "sqlite3 /var/lib/corral/corral.db \"select state from jobs where id=$id\" | grep -qx COMPLETED" \
    || fail "job $id not COMPLETED: $(sqlite3 /var/lib/corral/corral.db "select state, reason from jobs where id=$id")"
assert_eq "$(sqlite3 /var/lib/corral/corral.db "select user || ':' || project from jobs where id=$id")" \
    "$USER_A:$PROJECT_A" "owner and project recorded from the peer's credentials"

# The job belongs to alice: bob may see it in the queue but not its details, nor cancel it.
out=$(as_user "$USER_B" python3 "$client" "$sock" <<EOF2
{"method":"io.corral.Manager.Cancel","parameters":{"job_id":$id}}
{"method":"io.corral.Manager.Show","parameters":{"job_id":$id}}
EOF2
)
mapfile -t r <<<"$out"
assert_match "${r[0]}" 'PermissionDenied' "bob cancelling alice's job"
if jq -e '.parameters.job.argv' <<<"${r[1]}" >/dev/null; then fail "bob sees alice's job details: ${r[1]}"; fi

# One user cannot take every connection: past the per-user cap bob is refused with a named
# error, while alice is still served.
out=$(as_user "$USER_B" python3 - "$sock" <<'PY'
import socket, sys
conns = []
for i in range(70):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    conns.append(s)
last = conns[-1]
last.settimeout(10)
# The daemon answers a connection over the cap at once and closes it, so the request may
# meet a closed socket: that is the refusal working, and the reply is still there to read.
try:
    last.sendall(b'{"method":"io.corral.Manager.GetInfo","parameters":{}}\0')
except (BrokenPipeError, ConnectionResetError):
    pass
data = b""
try:
    while b"\0" not in data:
        chunk = last.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError as e:
    data = str(e).encode()
print(data.split(b"\0")[0].decode())
PY
)
assert_match "$out" 'TooManyConnections' "the 70th connection of one user"
out=$(as_user "$USER_A" python3 "$client" "$sock" <<<'{"method":"io.corral.Manager.GetInfo","parameters":{}}')
assert_match "$out" '"hostname"' "another user is still served"
