#!/bin/bash
# A job's stdio paths are the user's to choose and so may be tricks: a symbolic link to a
# file of root's, a path into another user's private directory, a FIFO nobody reads, a
# directory that does not exist. Each is opened with the user's rights or refused — never
# with root's, never leaving the supervisor waiting — and a refusal ends the job FAILED
# with a reason that says what was wrong without naming the path to other users. Root's
# corral logs reads them as the user, only as regular files, escaped on a terminal. Also:
# files are created with the submitter's umask, and journal lines cannot pose as another
# program (SYSLOG_IDENTIFIER is corral-job-ID, not the job's name).
# timeout: 600
. "$CORRAL_TEST_LIB"
systemctl start corrald.socket
A() { as_user "$USER_A" "$@"; }
B() { as_user "$USER_B" "$@"; }
jfield() { corral show --json "$1" | jq -r ".job.$2 // empty"; }
is_final() {
    case "$(jfield "$1" state)" in COMPLETED | FAILED | CANCELLED | TIMEOUT | OUT_OF_MEMORY | NODE_FAIL) return 0 ;; esac
    return 1
}
ha=/home/$USER_A hb=/home/$USER_B
cleanup() {
    corral cancel -u "$USER_A" >/dev/null 2>&1 || true
    rm -rf "$hb/private" /usr/local/share/corral-root-owned "$ha"/op-* 2>/dev/null || true
}
trap cleanup EXIT

# Submits as alice, waits (bounded: a supervisor that blocks leaves the job RUNNING) and
# prints the outcome; sets $id, $state and $reason. Guest code is slow: 90 s is generous
# for a job that must end at once.
run_case() {
    local what=$1; shift
    id=$(A corral submit --parsable -n 1 --mem 64M --time 2:00 --name op-case -D "$ha" "$@")
    wait_for 90 is_final "$id" || fail "$what: job $id still $(jfield "$id" state) after 90 s: the supervisor is blocked"
    state=$(jfield "$id" state) reason=$(jfield "$id" reason)
    echo "case: $what -> job $id $state${reason:+ ($reason)}"
}

# corral submit checks the paths as the user before it sends anything, and refuses with
# the reason; the supervisor checks again when it opens them (a request need not come
# from this CLI, and paths change between submission and start). Both are tested: the
# CLI's refusal, then the same request sent over the socket as another client could.
client=$(dirname "$0")/proto-client.py
submit_refused() { # WHAT WORDS CORRAL-SUBMIT-ARGS...
    local what=$1 words=$2 out
    shift 2
    if out=$(A corral submit --parsable -n 1 --mem 64M --time 2:00 --name op-case -D "$ha" "$@" 2>&1); then
        fail "$what: submitted as job $out, expected a refusal at submission"
    fi
    assert_match "$out" "${words/: /( [^:]*)?: }" "$what: the refusal at submission"
    echo "case: $what -> refused at submission: $out"
}
raw_case() { # WHAT SUBMIT-PARAMETERS (JSON members beyond the common ones)
    local what=$1 reply
    reply=$(A python3 "$client" /run/corral/io.corral.Manager <<<"{\"method\":\"io.corral.Manager.Submit\",\"parameters\":{\"cpus\":1,\"memory\":67108864,\"walltime_sec\":120,\"name\":\"op-case\",\"workdir\":\"$ha\",$2}}")
    id=$(jq -r '.parameters.job_id // empty' <<<"$reply")
    [ -n "$id" ] || fail "$what: the request sent over the socket was refused: $reply"
    wait_for 90 is_final "$id" || fail "$what: job $id still $(jfield "$id" state) after 90 s: the supervisor is blocked"
    state=$(jfield "$id" state) reason=$(jfield "$id" reason)
    echo "case: $what (over the socket) -> job $id $state${reason:+ ($reason)}"
}

# The owner (and root) see what was wrong, with the path; bob sees that the launch
# failed, never the path; the job's journal stream has the path, for its owner.
assert_refused() {
    local what=$1 path=$2 words=$3 pub re
    # The owner's (and root's) view may name the path: "cannot open the output file PATH: why".
    re=${words/: /( [^:]*)?: }
    assert_eq "$state" FAILED "$what: state"
    assert_match "$reason" "^LaunchFailed: .*$re" "$what: reason"
    assert_match "$(A corral show --json "$id" | jq -r '.job.reason // empty')" "$re" "$what: the reason alice sees"
    pub=$(B corral show --json "$id" | jq -r '.job.reason // empty')
    assert_match "$pub" "^LaunchFailed" "$what: the reason bob sees"
    echo "    bob sees: $pub"
    case "$pub$(B corral queue -a 2>/dev/null)" in *"$path"* | *"$ha"*) fail "$what: bob sees the path: $pub" ;; esac
    wait_for 20 sh -c 'journalctl -q -o cat CORRAL_JOB_ID="$1" CORRAL_STREAM=supervisor | grep -qF -- "$2"' _ "$id" "$path" ||
        fail "$what: the path is not in the job's journal stream for its owner"
}

install -m 0644 -o root -g root /dev/null /usr/local/share/corral-root-owned
echo "root's own" > /usr/local/share/corral-root-owned
before=$(sha256sum < /usr/local/share/corral-root-owned)

log "a symbolic link to a file of root's, as output: opened as alice, so refused"
A ln -sfn /usr/local/share/corral-root-owned "$ha/op-link-out"
submit_refused "output symlink to a root-owned file" "cannot open the output file: Permission denied" \
    -o "$ha/op-link-out" -- echo pwned
raw_case "output symlink to a root-owned file" "\"argv\":[\"echo\",\"pwned\"],\"stdout_path\":\"$ha/op-link-out\""
assert_refused "output symlink" "$ha/op-link-out" "cannot open the output file: Permission denied"
assert_eq "$(sha256sum < /usr/local/share/corral-root-owned)" "$before" "the root-owned file's content"
assert_eq "$(stat -c %U /usr/local/share/corral-root-owned)" root "the root-owned file's owner"

log "a symbolic link to /etc/shadow, as input"
A ln -sfn /etc/shadow "$ha/op-link-in"
submit_refused "input symlink to /etc/shadow" "cannot open the input file: Permission denied" \
    -i "$ha/op-link-in" -o "$ha/op-in.out" -- cat
raw_case "input symlink to /etc/shadow" "\"argv\":[\"cat\"],\"stdin_path\":\"$ha/op-link-in\",\"stdout_path\":\"$ha/op-in.out\""
assert_refused "input symlink" "$ha/op-link-in" "cannot open the input file: Permission denied"
[ ! -s "$ha/op-in.out" ] || fail "the job read /etc/shadow: $(head -c 64 "$ha/op-in.out")"

log "a path into bob's private directory"
install -d -m 0700 -o "$USER_B" -g "$PROJECT_B" "$hb/private"
submit_refused "output into another user's private directory" "Permission denied" \
    -o "$hb/private/from-alice" -- echo hello
raw_case "output into another user's private directory" "\"argv\":[\"echo\",\"hello\"],\"stdout_path\":\"$hb/private/from-alice\""
assert_refused "other user's directory" "$hb/private/from-alice" "cannot open the output file: Permission denied"
[ ! -e "$hb/private/from-alice" ] || fail "a file was created in bob's private directory"

log "a directory that does not exist"
submit_refused "output in a missing directory" "op-no-such-dir" -o "$ha/op-no-such-dir/out" -- echo hello
raw_case "output in a missing directory" "\"argv\":[\"echo\",\"hello\"],\"stdout_path\":\"$ha/op-no-such-dir/out\""
assert_refused "missing directory" "$ha/op-no-such-dir/out" "cannot open the output file: a directory on its path does not exist"

log "a FIFO that nobody reads: refused at once, the supervisor never waits"
A mkfifo "$ha/op-fifo"
t0=$(date +%s)
run_case "output FIFO without a reader" -o "$ha/op-fifo" -- echo hello
echo "    ended after $(( $(date +%s) - t0 )) s"
assert_refused "FIFO without reader" "$ha/op-fifo" "cannot open the output file: it is a FIFO that no process is reading"

log "a FIFO with a reader works"
rm -f /tmp/op-fifo-read
A sh -c "cat '$ha/op-fifo' > /tmp/op-fifo-read" &
reader=$!
wait_for 20 pgrep -u "$USER_A" -x cat >/dev/null || fail "the FIFO's reader did not start"
run_case "output FIFO with a reader" -o "$ha/op-fifo" -- echo through-the-fifo
assert_eq "$state" COMPLETED "FIFO with a reader: state"
wait $reader || true
assert_eq "$(cat /tmp/op-fifo-read)" through-the-fifo "what the reader got through the FIFO"

log "a FIFO as input without a writer: the job starts and reads end-of-file"
run_case "input FIFO without a writer" -i "$ha/op-fifo" -o "$ha/op-fifo-in.out" -- sh -c 'cat; echo read-eof'
assert_eq "$state" COMPLETED "input FIFO: state"
assert_eq "$(cat "$ha/op-fifo-in.out")" read-eof "input FIFO: the job's output"

log "the submitter's umask: 077 gives private files, 022 the usual ones"
for m in 077 022; do
    rm -f "$ha/op-umask-$m.out" "$ha/op-umask-$m.touched"
    id=$(A sh -c "umask $m; cd; corral submit --parsable -n 1 --time 1:00 -o op-umask-$m.out -- sh -c 'umask; touch op-umask-$m.touched'")
    wait_for 90 is_final "$id" || fail "umask job $id did not end"
    out_mode=$(stat -c %a "$ha/op-umask-$m.out") touched_mode=$(stat -c %a "$ha/op-umask-$m.touched")
    echo "case: umask $m -> the job's umask $(cat "$ha/op-umask-$m.out"), output file $out_mode, file it created $touched_mode"
    assert_eq "$(cat "$ha/op-umask-$m.out")" "0$m" "the job's umask when submitted with $m"
    want=$(printf '%o' $(( 0666 & ~0$m )))
    assert_eq "$out_mode" "$want" "mode of the output file (umask $m)"
    assert_eq "$touched_mode" "$want" "mode of a file the job created (umask $m)"
done

log "journal lines: a job named sudo does not log as sudo"
id=$(A corral submit --parsable -n 1 --time 1:00 --name sudo -- echo "root : TTY=pts/0 ; USER=root ; COMMAND=/bin/sh")
wait_for 90 is_final "$id" || fail "job $id did not end"
wait_for 20 sh -c "journalctl -q -o cat CORRAL_JOB_ID=$id | grep -q COMMAND" || fail "job $id's line is not in the journal"
entry=$(journalctl -q -o json CORRAL_JOB_ID="$id" CORRAL_STREAM=stdout | head -n1)
echo "case: job named sudo -> SYSLOG_IDENTIFIER=$(jq -r .SYSLOG_IDENTIFIER <<<"$entry") CORRAL_JOB_NAME=$(jq -r .CORRAL_JOB_NAME <<<"$entry") _UID=$(jq -r ._UID <<<"$entry")"
assert_eq "$(jq -r .SYSLOG_IDENTIFIER <<<"$entry")" "corral-job-$id" "SYSLOG_IDENTIFIER of the relayed line"
assert_eq "$(jq -r .CORRAL_JOB_NAME <<<"$entry")" sudo "CORRAL_JOB_NAME of the relayed line"
n=$(journalctl -q -b -o cat SYSLOG_IDENTIFIER=sudo | grep -c "COMMAND=/bin/sh" || true)
assert_eq "$n" 0 "lines of the job under SYSLOG_IDENTIFIER=sudo"

log "root's corral logs on alice's job: opened as alice, only a regular file, escaped on a terminal"
run_case "output to a file, read by root" -o "$ha/op-logs.out" -- printf 'ok\033[2J\n'
assert_eq "$state" COMPLETED "logs job: state"
assert_eq "$(corral logs "$id" | od -An -c | tr -s ' ')" " o k 033 [ 2 J \n" "root's corral logs into a pipe: the bytes"
if command -v script >/dev/null; then
    tty_out=$(script -qec "corral logs $id" /dev/null | tr -d '\r')
    echo "case: root's corral logs on a terminal (script) -> $tty_out"
    assert_eq "$tty_out" 'ok\x1b[2J' "root's corral logs on a terminal: escaped"
fi
logs_refused() { # WHAT WORDS: root's corral logs ends at once, refusing, printing nothing of it
    local out rc=0
    out=$(timeout 60 corral logs "$id" 2>&1) || rc=$?
    echo "case: $1 -> exit $rc: $out"
    assert_eq "$rc" 1 "$1: corral logs' exit status (124: it hung)"
    assert_match "$out" "$2" "$1: the refusal"
}
A rm -f "$ha/op-logs.out"
A mkfifo "$ha/op-logs.out"
logs_refused "a FIFO in place of the output" "is not a regular file"
A rm -f "$ha/op-logs.out"
A ln -sfn /dev/zero "$ha/op-logs.out"
logs_refused "a symlink to /dev/zero in place of the output" "symbolic link"
A ln -sfn /usr/local/share/corral-root-owned "$ha/op-logs.out"
logs_refused "a symlink to a file of root's in place of the output" "symbolic link"
A ln -sfn /etc/shadow "$ha/op-logs.out"
logs_refused "a symlink to /etc/shadow in place of the output" "symbolic link"
# alice's own corral logs follows her link, with her rights: /etc/shadow stays closed to her.
out=$(A corral logs "$id" 2>&1) && fail "alice read /etc/shadow through corral logs: $out"
assert_match "$out" "Permission denied" "alice's corral logs through a link to /etc/shadow"
