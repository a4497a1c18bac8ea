#!/bin/bash
# Job mail (sbatch --mail-type, qsub -m): corrald hands the message to MailProg= (the
# machine's sendmail by default) in a transient service of the job's user, with Slurm's
# subject words: BEGIN and END as asked, FAIL to another address, none without a type.
# timeout: 240
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

# A sendmail that keeps each message, with the arguments and the user it ran as.
mkdir -p "$(dirname "$prog")" "$box"
chmod 1777 "$box"
cat >"$prog" <<'SH'
#!/bin/sh
f=$(mktemp /var/tmp/corral-mail/msg.XXXXXX)
{ echo "X-Test-Args: $*"; echo "X-Test-User: $(id -un)"; cat; } >"$f"
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
