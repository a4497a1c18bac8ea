#!/bin/bash
# Job mail (sbatch --mail-type, qsub -m): corrald hands the message to MailProg= (the
# machine's sendmail by default) in a transient service of the job's user, in
# corral-mail.slice, with Slurm's subject words: BEGIN and END as asked, FAIL to another
# address, none without a type. Mail is sent only after the commit: corrald killed while
# committing a job's end (a file size limit at the WAL's size makes the commit's append
# raise SIGXFSZ, so the kill lands between the transition and the commit) mails that end
# once, from the restarted corrald that records it, not before. (This check passes on the
# code that mailed before the commit too: its D-Bus call, written microseconds before
# the kill, never started a unit. The unit test test_job_mail_after_commit is the one
# that tells the two apart.) An array sends one summary;
# TIME_LIMIT_50 comes at half the walltime; a MailProg= that cannot run is a warning.
# timeout: 420
. "$CORRAL_TEST_LIB"
prog=/usr/local/lib/corral-test/sendmail
box=/var/tmp/corral-mail
dropin=/etc/corral/corral.conf.d/50-test-mail.conf
cleanup() {
    rm -f "$dropin"
    corral reload >/dev/null 2>&1 || true
    rm -rf "$box" "$(dirname "$prog")"
}
trap cleanup EXIT
systemctl start corrald.socket

# A sendmail that keeps each message, with the arguments and the user it ran as. Written
# under a hidden name and renamed whole: a message counted or read is a complete one (the
# test once read one whose headers were written and its text not yet).
mkdir -p "$(dirname "$prog")" "$box"
chmod 1777 "$box"
cat >"$prog" <<'SH'
#!/bin/sh
f=$(mktemp /var/tmp/corral-mail/.part.XXXXXX)
{ echo "X-Test-Args: $*"; echo "X-Test-User: $(id -un)"; echo "X-Test-Cgroup: $(cat /proc/self/cgroup)"; cat; } >"$f"
mv "$f" "/var/tmp/corral-mail/msg.${f##*.part.}"
SH
chmod 755 "$prog"
mkdir -p "$(dirname "$dropin")"
printf '[Manager]\nMailProg=%s\n' "$prog" >"$dropin"
corral reload

work=$(as_user "$USER_A" mktemp -d /tmp/mail.XXXXXX)
a=$(as_user "$USER_A" corral submit --parsable -D "$work" -J greet --mail-type=BEGIN,END -- /bin/true)
b=$(as_user "$USER_A" corral submit --parsable -D "$work" -J broken --mail-type=FAIL \
    --mail-user="$USER_B@localhost" -- sh -c 'exit 3')
c=$(as_user "$USER_A" corral submit --parsable -D "$work" -J quiet -- /bin/true)
as_user "$USER_A" corral wait "$a" "$c" >/dev/null || fail "jobs $a and $c did not complete"
as_user "$USER_A" corral wait "$b" >/dev/null && fail "job $b should have failed"
wait_for 60 sh -c "[ \$(ls $box | wc -l) -ge 3 ]" || fail "3 messages expected, got: $(ls "$box")"
sleep 2   # nothing more should come (job $c asked for none)

mails=$(cat "$box"/msg.*)
log "$mails"
assert_eq "$(ls "$box" | wc -l)" 3 "messages sent (BEGIN and END of $a, FAIL of $b)"
assert_match "$mails" "Subject: Corral Job_id=$a Name=greet Began, Queued time [0-9:]+" "job $a's BEGIN mail"
assert_match "$mails" "Subject: Corral Job_id=$a Name=greet Ended, Run time [0-9:]+, COMPLETED, ExitCode 0" \
    "job $a's END mail"
assert_match "$mails" "Subject: Corral Job_id=$b Name=broken Failed, Run time [0-9:]+, FAILED, ExitCode 3" \
    "job $b's FAIL mail"
assert_match "$(grep -l "Job_id=$b " "$box"/msg.* | xargs cat)" "^To: $USER_B@localhost" "job $b's mail goes to --mail-user"
assert_match "$(grep -l "Job_id=$a .*Began" "$box"/msg.* | xargs cat)" "To: $USER_A$" "job $a's mail goes to its user"
assert_match "$mails" "X-Test-Args: -t -oi" "sendmail's arguments"
[ -z "$(grep -L "X-Test-User: $USER_A" "$box"/msg.*)" ] || fail "a message was not sent as $USER_A"

# The mail ran in corral-mail.slice, under corral.slice, with its caps.
assert_match "$mails" "X-Test-Cgroup: 0::/corral.slice/corral-mail.slice/corral-mail-$a-[0-9]+.service" \
    "mail runs in corral-mail.slice"
assert_eq "$(systemctl show -P TasksMax corral-mail.slice)" 64 "corral-mail.slice TasksMax="
assert_eq "$(systemctl show -P MemoryMax corral-mail.slice)" 268435456 "corral-mail.slice MemoryMax="

# Killed between the transition and the commit: no mail for the unrecorded end.
rm -f "$box"/msg.*
d=$(as_user "$USER_A" corral submit --parsable -D "$work" -J crash --mail-type=END -- \
    sh -c "while [ ! -e $work/go ]; do sleep 0.2; done")
wait_for 60 sh -c "[ \"\$(corral show --json $d | jq -r .job.state)\" = RUNNING ]" || fail "job $d did not start"
pid=$(systemctl show -P MainPID corrald)
# A file size limit at the end of the WAL's last frame lets every write below it through
# (the WAL's earlier frames, temporary files) and stops the commit's append, and only
# that: SIGXFSZ kills corrald there. The WAL's file is given its size in advance, so where
# its log ends is read from the WAL index (corral.db-shm, SQLite's wal.c): the header's
# page size (u16 at 14) and last frame (mxFrame, u32 at 16), and the checkpoint's
# nBackfill (u32 at 96). With every frame checkpointed the next commit starts the log over
# at its head: its first frame goes at 32.
shm=/var/lib/corral/corral.db-shm
u() { od -An -t"u$1" -j"$2" -N"$1" "$shm" | tr -d ' '; }
mx=$(u 4 16) psz=$(u 2 14) backfilled=$(u 4 96)
[ "$psz" = 1 ] && psz=65536
[ "${mx:-0}" -gt 0 ] && [ "${psz:-0}" -ge 512 ] || fail "no WAL index to read the log's end from (mxFrame '$mx', page size '$psz')"
wal=$((32 + mx * (24 + psz)))
[ "$backfilled" = "$mx" ] && wal=32
t0=$(date +%s)
prlimit --pid "$pid" --fsize="$wal"
touch "$work/go"
wait_for 60 sh -c "journalctl -q -u corrald --since @$t0 | grep -q 'status=25/XFSZ'" \
    || fail "corrald was not stopped by its file size limit"
assert_match "$(journalctl -q _PID="$pid" --since "@$t0" -o cat)" "Job $d ended" \
    "the killed corrald had handled job $d's end before its commit"
as_user "$USER_A" corral wait "$d" >/dev/null || fail "job $d did not complete after the restart"
assert_eq "$(corral show --json "$d" | jq -r .job.state)" COMPLETED "job $d's recorded state"
wait_for 60 sh -c "grep -qs 'Job_id=$d .*Ended' $box/msg.*" || fail "no END mail for job $d after the restart"
sleep 3
assert_eq "$(grep -l "Subject: Corral Job_id=$d Name=crash Ended" "$box"/msg.* | wc -l)" 1 \
    "END mails for job $d (one, from the corrald that recorded it)"

# An array: one BEGIN as its first task starts, one END as its last ends.
rm -f "$box"/msg.*
arr=$(as_user "$USER_A" corral submit --parsable -D "$work" -J arr --array=1-3 --mail-type=BEGIN,END -- /bin/true)
wait_for 90 sh -c "grep -qs 'Array Summary Job_id=${arr}_\* ($arr) Name=arr Ended' $box/msg.*" \
    || fail "no summary END mail for array $arr: $(cat "$box"/msg.* 2>/dev/null)"
sleep 3
mails=$(cat "$box"/msg.*)
log "$mails"
assert_eq "$(ls "$box" | wc -l)" 2 "messages for array $arr (one BEGIN, one END)"
assert_match "$mails" "Subject: Corral Array Summary Job_id=${arr}_\* \($arr\) Name=arr Began$" "array BEGIN summary"
assert_match "$mails" "Subject: Corral Array Summary Job_id=${arr}_\* \($arr\) Name=arr Ended, COMPLETED, ExitCode \[0-0\]$" \
    "array END summary"

# TIME_LIMIT_50: at half of a 20 s walltime, once.
rm -f "$box"/msg.*
tl=$(as_user "$USER_A" corral submit --parsable -D "$work" -J slow -t 0:20 --mail-type=TIME_LIMIT_50 -- sleep 14)
as_user "$USER_A" corral wait "$tl" >/dev/null || fail "job $tl did not complete"
wait_for 30 sh -c "[ \$(ls $box | wc -l) -ge 1 ]" || fail "no TIME_LIMIT_50 mail for job $tl"
sleep 2
mails=$(cat "$box"/msg.*)
log "$mails"
assert_eq "$(ls "$box" | wc -l)" 1 "messages for job $tl"
assert_match "$mails" "Subject: Corral Job_id=$tl Name=slow Reached 50% of time limit, Run time 00:00:1[0-2]$" \
    "job $tl's TIME_LIMIT_50 mail"

# A mail program that cannot be run: a warning, not a debug line.
printf '[Manager]\nMailProg=%s\n' /nonexistent/sendmail >"$dropin"
corral reload
t0=$(date +%s)
e=$(as_user "$USER_A" corral submit --parsable -D "$work" -J nomta --mail-type=END -- /bin/true 2>/dev/null)
as_user "$USER_A" corral wait "$e" >/dev/null || fail "job $e did not complete"
warned() {
    journalctl -q -u corrald --since "@$t0" -o json | jq -r 'select(.PRIORITY == "4") | .MESSAGE' \
        | grep -q "Job $e: no mail sent, /nonexistent/sendmail cannot be run"
}
wait_for 30 warned \
    || fail "no warning about the mail program that cannot run: $(journalctl -q -u corrald --since "@$t0" -o json | jq -c '{PRIORITY, MESSAGE}')"
