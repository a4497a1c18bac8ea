#!/bin/bash
# Interactive jobs (corral run, srun --pty, salloc) on a real pseudo-terminal, as alice:
# a queued corral run waits while another job holds the CPUs, says so, and starts when
# that job ends; tty, stty size and a resize inside; Ctrl-C, Ctrl-Z and Ctrl-\ reach the
# job; the exit status is the command's; a hangup cancels the job InteractiveHangupSec=
# later and frees its CPUs; salloc then srun inside runs a step of the same job; bob
# cannot pass descriptors that are not his; a queue's AllowInteractive=no refuses.
# timeout: 900
. "$CORRAL_TEST_LIB"
here=$(dirname "$0")
drive=$here/interactive-pty.py
runfds=$here/run-fds.py
sock=/run/corral/io.corral.Manager
dropin=/etc/corral/corral.conf.d/88-interactive.conf
mkdir -p /etc/corral/corral.conf.d
printf '[Manager]\nInteractiveHangupSec=15\n[Queue]\nName=batchonly\nAllowInteractive=no\n[Queue]\nName=short\nMaxInteractiveWalltime=10min\n' >"$dropin"
trap 'rm -f "$dropin"' EXIT
systemctl restart corrald.socket corrald.service 2>/dev/null || systemctl start corrald.socket
ncpu=$(nproc)
cd /tmp
A() { as_user "$USER_A" "$@"; }
B() { as_user "$USER_B" "$@"; }
state() { corral show "$1" 2>/dev/null | sed -n 's/^ *State: *\([A-Z_]*\).*/\1/p' | head -1; }
section() { sed -n '/^====$/,/^====$/p' <<<"$1"; }

log "a queued corral run waits while another job holds the CPUs, says why, and starts when it ends"
blocker=$(A corral submit --parsable -n "$ncpu" -t 10 -o /dev/null -- sleep 600)
wait_for 60 sh -c "corral queue -a | grep -Eq '^ +$blocker .*RUNNING'" || fail "blocker $blocker does not run: $(corral queue -a)"
out=$(A python3 "$drive" --rows 33 --cols 111 \
    "expect:is waiting;run:corral cancel $blocker;expect:READY;resize:40x120;sleep:1;send:hello\r;expect:got hello" \
    -- corral run -n 1 -t 5 -- sh -c 'tty; stty size; echo READY; read x; stty size; echo "got $x"; exit 7') || true
echo "$out"
assert_match "$(tail -1 <<<"$out")" '^STATUS 7$' "corral run's exit status is the command's"
body=$(section "$out")
assert_match "$body" "job [0-9]+ is waiting \\([A-Za-z]+[^)]*\\), (expected to start|no estimate)" "the waiting line"
assert_match "$body" '/dev/pts/[0-9]+' "tty inside the job"
assert_match "$body" '33 111' "stty size inside the job: the caller's terminal's size"
assert_match "$body" '40 120' "stty size after a resize of the caller's terminal"

log "Ctrl-C, Ctrl-Z and Ctrl-\\ reach the job through its terminal"
out=$(A python3 "$drive" "expect:READY;send:\x03;expect:INT;send:\x1a;expect:TSTP;send:\x1c;expect:QUIT" \
    -- corral run -t 5 -- python3 -c '
import signal, sys
# Taken with sigwait, not handlers: a Python handler runs inside a print of the previous
# one when the next key arrives that fast, and print is not reentrant.
sigs = {signal.SIGINT, signal.SIGTSTP, signal.SIGQUIT}
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
print("READY", flush=True)
while True:
    name = signal.Signals(signal.sigwait(sigs)).name[3:]
    print(name, flush=True)
    if name == "QUIT":
        sys.exit(3)
') || true
echo "$out"
assert_match "$(tail -1 <<<"$out")" '^STATUS 3$' "exit status after Ctrl-\\"
out=$(A python3 "$drive" "expect:READY;send:\x03" -- corral run -t 5 -- sh -c 'echo READY; exec sleep 100') || true
echo "$out"
assert_match "$(tail -1 <<<"$out")" '^STATUS 130$' "a command killed by Ctrl-C: 128 + SIGINT"

log "an interactive bash has job control: Ctrl-Z stops its foreground job, as on a login terminal"
# (the killed job is waited for before exit: a stopped job bash has not reaped yet makes it
# refuse the first exit, "There are stopped jobs"; the tty queues "exit" behind the wait)
out=$(A python3 "$drive" "expect:PROMPT> ;send:sleep 300\r;sleep:1;send:\x1a;expect:Stopped;send:jobs -l\r;send:kill -9 %1 && wait\r;sleep:1;send:exit 6\r" \
    -- corral run -t 5 -- env PS1='PROMPT> ' bash --norc --noprofile -i) || true
echo "$out"
assert_match "$(tail -1 <<<"$out")" '^STATUS 6$' "bash's exit status"
section "$out" | grep -qiE 'no job control|cannot set terminal process group' && fail "bash has no job control in the job"

log "Ctrl-C while waiting withdraws the job"
blocker=$(A corral submit --parsable -n "$ncpu" -t 10 -o /dev/null -- sleep 600)
out=$(A python3 "$drive" "expect:is waiting;send:\x03" -- corral run -n 1 -t 5 -- true) || true
echo "$out"
assert_match "$(tail -1 <<<"$out")" '^STATUS 130$' "corral run interrupted while waiting"
wid=$(section "$out" | grep -Eo 'job [0-9]+ is waiting' | head -1 | awk '{print $2}')
[ -n "$wid" ] || fail "no job id in the waiting line"
wait_for 30 sh -c "corral show $wid | grep -q CANCELLED" || fail "job $wid was not withdrawn: $(corral show "$wid")"
corral cancel "$blocker"

log "a hangup cancels the job InteractiveHangupSec= later and frees its CPUs"
out=$(A python3 "$drive" "expect:READY;hangup" \
    -- corral run -n "$ncpu" -t 10 -- sh -c 'trap "" HUP; echo "READY $CORRAL_JOB_ID"; exec sleep 600') || true
echo "$out"
hid=$(section "$out" | sed -n 's/.*READY \([0-9]*\).*/\1/p' | head -1)
[ -n "$hid" ] || fail "no job id from the job"
corral queue -a | grep -Eq "^ +$hid .*RUNNING" || fail "job $hid did not outlive its client for the grace period: $(corral queue -a)"
wait_for 60 sh -c "corral show $hid | grep -q CANCELLED" || fail "job $hid not cancelled after the hangup: $(corral show "$hid")"
next=$(A corral submit --parsable -n "$ncpu" -t 5 -o /dev/null -- true)
wait_for 60 sh -c "corral show $next | grep -q COMPLETED" || fail "the CPUs of job $hid were not freed: $(corral queue -a)"

log "a restart of corrald: the client loses it, the running job is cancelled InteractiveHangupSec= later"
rm -f /tmp/88-ready
A python3 "$drive" "expect:READY;run:touch /tmp/88-ready;expect:lost the connection" \
    -- corral run -t 10 -- sh -c 'trap "" HUP; echo "READY $CORRAL_JOB_ID"; exec sleep 600' >/tmp/88-restart.out &
driver=$!
wait_for 120 test -e /tmp/88-ready || fail "the job of the restart test does not run"
systemctl restart corrald.service
wait "$driver" || fail "corral run did not say it lost corrald: $(cat /tmp/88-restart.out)"
cat /tmp/88-restart.out
rid=$(sed -n 's/.*READY \([0-9]*\).*/\1/p' /tmp/88-restart.out | head -1)
[ -n "$rid" ] || fail "no job id from the restart test's job"
wait_for 90 sh -c "corral show $rid | grep -q CANCELLED" || fail "job $rid not cancelled after corrald's restart: $(corral show "$rid")"
journalctl -u corrald.service --since -3min | grep -q "Job $rid: its interactive client went away when corrald stopped" \
    || fail "corrald does not say why it cancels job $rid"

log "measured: 2 MiB of output on a terminal directly, corral run's start alone, 2 MiB through corral run"
for how in direct start-only relayed; do
    cmd=(sh -c 'head -c 1572864 /dev/zero | base64; echo DONE')
    [ $how = start-only ] && cmd=(corral run -t 5 -- sh -c 'echo DONE')
    [ $how = relayed ] && cmd=(corral run -t 5 -- "${cmd[@]}")
    t0=$(date +%s%N)
    last=$(A python3 "$drive" "expect:DONE" -- "${cmd[@]}" | tail -1) || true
    t1=$(date +%s%N)
    assert_eq "$last" "STATUS 0" "$how output"
    echo "# $how: $(( (t1 - t0) / 1000000 )) ms"
done

log "a restart of corrald withdraws a waiting interactive job (its descriptors are gone)"
python3 "$runfds" "$sock" "$USER_B" "$USER_B" held-restart >/tmp/88-held.out &
holder=$!
wait_for 60 grep -q '"job_id"' /tmp/88-held.out || fail "no held interactive job: $(cat /tmp/88-held.out)"
hid2=$(sed -n 's/.*"job_id": *\([0-9]*\).*/\1/p' /tmp/88-held.out | head -1)
systemctl restart corrald.service
wait "$holder"
cat /tmp/88-held.out
wait_for 60 sh -c "corral show $hid2 | grep -q CANCELLED" || fail "waiting interactive job $hid2 outlived corrald's restart: $(corral show "$hid2")"

log "without a terminal: pipes, as a Jupyter server would have them"
# The pipes are alice's own (her shell makes them): corrald takes no one else's.
out=$(A bash -c 'echo piped | corral run -t 5 -- sh -c "read x; echo \"in:\$x\"; test -t 0 || echo notty; exit 4" 2>&1 | cat; echo "rc=${PIPESTATUS[1]}"')
echo "$out"
assert_match "$out" 'in:piped' "stdin through a pipe"
assert_match "$out" 'notty' "no terminal"
assert_match "$out" 'rc=4' "the exit status through pipes"

log "corral queue marks interactive jobs; corral show says so"
out=$(A python3 "$drive" "expect:READY;run:corral queue -a >/tmp/88-queue;send:x\r" \
    -- corral run -J ijob -t 5 -- sh -c 'echo READY; read x') || true
grep -E ' ijob ' /tmp/88-queue | grep -q 'RUNNING\*' || fail "corral queue does not mark the interactive job: $(cat /tmp/88-queue)"

log "queues: AllowInteractive=no and MaxInteractiveWalltime= refuse, naming queue and key"
out=$(A sh -c 'corral run -q batchonly -- true </dev/null 2>&1 | cat')
assert_match "$out" 'batchonly.*AllowInteractive' "AllowInteractive=no"
out=$(A sh -c 'corral run -q short -t 1:00:00 -- true </dev/null 2>&1 | cat')
assert_match "$out" 'short.*MaxInteractiveWalltime' "MaxInteractiveWalltime="

log "bob cannot pass descriptors that are not his"
out=$(python3 "$runfds" "$sock" "$USER_B" "$USER_A" tty)
echo "$out"
assert_match "$out" 'InvalidParameter.*terminal belongs to another user' "alice's terminal passed by bob"
out=$(python3 "$runfds" "$sock" "$USER_B" "$USER_B" tty)
echo "$out"
assert_match "$out" '"job_id"' "bob's own terminal is accepted"
out=$(python3 "$runfds" "$sock" "$USER_B" "$USER_B" pipe)
echo "$out"
assert_match "$out" '"job_id"' "bob's own pipes are accepted"
pid=$(sed -n 's/.*"job_id": *\([0-9]*\).*/\1/p' <<<"$out" | head -1)
wait_for 30 sh -c "corral show $pid | grep -Eq 'CANCELLED|COMPLETED'" || fail "the job of a closed Run connection still lives: $(corral show "$pid")"
out=$(python3 "$runfds" "$sock" "$USER_B" "$USER_B" submit)
assert_match "$out" 'InvalidRequest.*only Run takes file descriptors' "descriptors with Submit"
out=$(python3 "$runfds" "$sock" "$USER_B" "$USER_B" four)
assert_eq "$out" "EOF" "four descriptors: the connection is dropped"
out=$(python3 "$runfds" "$sock" "$USER_B" "$USER_B" flood)
echo "$out"
assert_eq "$(grep -c '"job_id"' <<<"$out")" 8 "waiting interactive jobs held for one user"
assert_match "$(tail -1 <<<"$out")" 'QuotaExceeded' "the ninth waiting interactive job"
wait_for 30 sh -c "! corral queue -a -t HELD | grep -q $USER_B" || fail "bob's held interactive jobs outlived their connections: $(corral queue -a)"
corral info >/dev/null || fail "corrald is not serving after the refusals"

if command -v salloc >/dev/null; then
    log "salloc: a shell (here a command) in an allocation, srun inside runs a step of the same job"
    out=$(A sh -c 'salloc -n 1 -t 5 -- sh -c "srun hostname; echo id=\$SLURM_JOB_ID; srun cat /proc/self/cgroup" </dev/null 2>&1 | cat')
    echo "$out"
    sid=$(sed -n 's/^id=\([0-9]*\)$/\1/p' <<<"$out")
    [ -n "$sid" ] || fail "salloc: no SLURM_JOB_ID inside"
    grep -qx "$(hostname)" <<<"$out" || fail "srun hostname inside salloc: $out"
    assert_match "$out" "corral-job-$sid\.scope" "srun's step runs in the allocation's scope"
    out=$(A python3 "$drive" "expect:READY;send:exit\r" -- salloc -t 5 -- sh -c 'echo READY; exec sh') || true
    assert_match "$(tail -1 <<<"$out")" '^STATUS 0$' "exit ends the allocation"
    out=$(A python3 "$drive" "expect:READY;send:exit 5\r" -- srun --pty -t 5 sh -c 'echo READY; exec sh') || true
    assert_match "$(tail -1 <<<"$out")" '^STATUS 5$' "srun --pty outside a job"
fi
log "ok"
