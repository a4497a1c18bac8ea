#!/bin/bash
# SELinux enforcing (Debian's default policy) with corral-selinux installed: corrald runs in
# corrald_t and its supervisor in corral_supervisor_t; each job runs in its user's login
# domain (user_t for a user mapped to user_u, unconfined_t for the default mapping); the
# working directory and output files are reached with the job's rights, so a confined
# user's job is refused what the user's policy refuses even where the file modes allow it;
# corrald may run the mail program; and submit, hold/release, suspend/resume, cancel and
# mail leave no AVC denial of Corral's domains (dontaudit rules off), and of the jobs'
# only those the confinement check provokes on purpose.
# Runs only in the SELinux guest (CORRAL_TEST_SELINUX=1: tests/vm/build-image's
# image-selinux/ variant, booted enforcing).
# timeout: 1200
. "$CORRAL_TEST_LIB"
A() { as_user "$USER_A" "$@"; }
B() { as_user "$USER_B" "$@"; }
jstate() { corral show --json "$1" | jq -r .job.state; }
state_is() { [ "$(jstate "$1")" = "$2" ]; }
label_of() { cat "/proc/$1/attr/current" 2>/dev/null | tr -d '\0'; }

command -v selinuxenabled >/dev/null && selinuxenabled ||
    skip "SELinux is not enabled here (the SELinux guest: CORRAL_TEST_SELINUX=1 tests/vm/run slow-selinux)"
command -v ausearch >/dev/null || skip "ausearch is missing (auditd)"
mode=$(getenforce)
log "getenforce: $mode; the harness runs as $(id -Z)"
# A permissive boot (CORRAL_VM_SELINUX_ENFORCING=0) collects every denial of the run at
# once, for writing policy; it cannot pass.
if [ "$mode" != Enforcing ]; then
    log "NOT ENFORCING: this run only collects denials"
    fail() { echo "FAILED (permissive, carrying on): $*" >&2; }
    enforcing_fail() { echo "FAILED: $*" >&2; exit 1; }
else
    enforcing_fail() { fail "$@"; }
fi

sendmail=/usr/sbin/sendmail
secret=/srv/corral-secret
work=/home/$USER_A/selinux-test
workb=/home/$USER_B/selinux-test
cleanup() {
    rm -f "$sendmail"
    rm -rf "$secret" "$work" "$workb"
    semanage login -d "$USER_A" >/dev/null 2>&1 || true
    semodule -B >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Denials from here on are the test's (the boot's and the harness's are shown, not held
# against it). ausearch reads dates in the locale's format.
since=("$(date +%x)" "$(date +%T)")
denials() {
    ausearch -m AVC,USER_AVC,SELINUX_ERR -ts "${since[@]}" 2>/dev/null | grep -E 'avc:|SELINUX_ERR' || true
}
before=$(ausearch -m AVC,USER_AVC,SELINUX_ERR 2>/dev/null | grep -E 'avc:|SELINUX_ERR' || true)
[ -z "$before" ] || log "denials before the test (boot, package installation): $(printf '\n%s' "$before")"

log "install corral-selinux"
pp=$CORRAL_BUILDDIR/selinux/corral.pp
[ -f "$pp" ] || skip "the build has no SELinux module (-Dselinux, selinux-policy-dev)"
sedeb=$(ls "$CORRAL_BUILDDIR"/deb/corral-selinux_*_all.deb 2>/dev/null | head -n1 || true)
# Copied off the 9p share first: its files are unlabeled_t, which dpkg and semodule may
# not read.
if [ -n "$sedeb" ] && ! [ "$pp" -nt "$sedeb" ]; then
    cp "$sedeb" /var/cache/apt/archives/
    sedeb=/var/cache/apt/archives/$(basename "$sedeb")
    restorecon "$sedeb"
    DEBIAN_FRONTEND=noninteractive dpkg -i "$sedeb" || fail "dpkg -i $(basename "$sedeb") failed"
    log "installed $(basename "$sedeb")"
else
    # No package of this build (meson test test-package makes it): what its postinst does.
    log "no corral-selinux package newer than $pp: loading the module as its postinst does"
    install -D -m 0644 "$pp" /usr/share/selinux/packages/corral.pp
    restorecon -R /usr/share/selinux/packages
    semodule -X 200 -i /usr/share/selinux/packages/corral.pp || fail "semodule -i failed"
    restorecon -R -i /usr/libexec/corrald /usr/libexec/corral /etc/corral /var/lib/corral /run/corral \
        /usr/lib/systemd/system/corrald.service /usr/lib/systemd/system/corrald.socket \
        /usr/lib/systemd/system/corral.slice
fi
semodule -l | grep -qx corral || fail "the corral module is not loaded: $(semodule -l | grep corral)"
# dontaudit rules off for the test: a denial they would hide (libselinux's probes of
# selinuxfs, say) changes what the supervisor does without a trace in the audit log.
semodule -DB || fail "semodule -DB failed"
assert_match "$(ls -Z /usr/libexec/corrald)" ':corrald_exec_t:' "label of corrald"
assert_match "$(ls -Z /usr/libexec/corral/corral-supervisor)" ':corral_supervisor_exec_t:' "label of the supervisor"

# alice is a confined user (user_u: user_t), bob keeps the default mapping (unconfined_u).
semanage login -a -s user_u -r s0 "$USER_A" || fail "semanage login -a $USER_A failed"
log "seusers: $(grep -v '^#' /etc/selinux/default/seusers | tr '\n' ' ')"

# corrald started again, now under the module.
systemctl stop corrald.service corrald.socket
rm -rf /run/corral
systemctl start corrald.socket
corral info >/dev/null || fail "corral info failed"
pid=$(systemctl show -P MainPID corrald.service)
[ "${pid:-0}" != 0 ] || fail "corrald is not running"
assert_match "$(label_of "$pid")" '^system_u:system_r:corrald_t:' "corrald's domain"
assert_match "$(ls -Zd /run/corral)" ':corrald_runtime_t:' "label of /run/corral"

for d in "$work:$USER_A" "$workb:$USER_B"; do
    mkdir -p "${d%%:*}"
    chown "${d##*:}:" "${d%%:*}"
done
# Mapped to user_u, alice's home is relabelled to her SELinux user, as semanage's manual
# says: the policy's UBAC keeps user_u from objects of unconfined_u.
restorecon -RF "/home/$USER_A" "$workb"

log "each job runs in its user's login domain"
a=$(A corral submit --parsable -D "$work" -o "$work/ctx.out" -- sh -c 'id -Z; sleep 30')
b=$(B corral submit --parsable -D "$workb" -o "$workb/ctx.out" -- sh -c 'id -Z')
wait_for 120 state_is "$a" RUNNING || fail "job $a is not running: $(jstate "$a")"
procs=$(ps -eo pid=,label=,user=,args= | grep -E 'corral-supervisor|sleep 30' | grep -v grep || true)
log "processes of job $a: $(printf '\n%s' "$procs")"
assert_match "$(grep corral-supervisor <<<"$procs" | head -n1)" 'system_u:system_r:corral_supervisor_t:' \
    "the supervisor's domain"
assert_match "$(grep 'sleep 30' <<<"$procs" | head -n1)" 'user_u:user_r:user_t:s0 +alice' \
    "the domain of alice's running job"
B corral wait "$b" >/dev/null || fail "job $b failed: $(corral show "$b")"
assert_match "$(cat "$workb/ctx.out")" '^unconfined_u:unconfined_r:unconfined_t:' "bob's job (unconfined_u)"
# What a console login gives each of them, by the policy's own reckoning (getseuser).
login_context() { getseuser "$1" system_u:system_r:local_login_t:s0 | sed -n 's/^Context 0[[:space:]]*//p'; }
login_a=$(login_context "$USER_A") login_b=$(login_context "$USER_B")
log "login contexts: $USER_A $login_a, $USER_B $login_b"
assert_eq "$(cat "$workb/ctx.out")" "$login_b" "bob's job runs in his login context"

log "hold, release, suspend, resume, cancel"
corral suspend "$a" || fail "suspend failed"
wait_for 30 state_is "$a" SUSPENDED || fail "job $a not suspended: $(jstate "$a")"
corral resume "$a" || fail "resume failed"
wait_for 30 state_is "$a" RUNNING || fail "job $a not resumed: $(jstate "$a")"
A corral cancel "$a" || fail "cancel failed"
wait_for 60 state_is "$a" CANCELLED || fail "job $a not cancelled: $(jstate "$a")"
assert_match "$(cat "$work/ctx.out")" '^user_u:user_r:user_t:s0$' "alice's job (user_u)"
assert_eq "$(cat "$work/ctx.out")" "$login_a" "alice's job runs in her login context"
h=$(A corral submit --parsable --hold -D "$work" -o "$work/held.out" -- sh -c 'pwd; echo done')
A corral release "$h" || fail "release failed"
A corral wait "$h" >/dev/null || fail "job $h failed: $(corral show "$h")"
assert_eq "$(cat "$work/held.out")" "$work
done" "output of the released job"

log "the working directory and output files are reached as the user, MAC included"
# Open to both by its mode; to alice's policy (user_t) it is as /etc/shadow.
mkdir -p "$secret"
chmod 1777 "$secret"
chcon -t shadow_t "$secret"
assert_match "$(ls -Zd "$secret")" ":shadow_t:" "label of $secret"
o=$(A corral submit --parsable -D "$work" -o "$secret/alice.out" -- echo leaked)
A corral wait "$o" >/dev/null && fail "alice's job wrote into $secret (shadow_t)"
[ ! -e "$secret/alice.out" ] || fail "$secret/alice.out was created for alice's job"
log "job $o: $(corral show "$o" | grep -iE 'state|reason|error|exit' | tr '\n' ' ')"
d=$(A corral submit --parsable -D "$secret" -o "$work/chdir.out" -- pwd)
A corral wait "$d" >/dev/null && fail "alice's job ran in $secret (shadow_t): $(cat "$work/chdir.out")"
# bob's unconfined job may: the refusals above are alice's policy, not the file modes.
ob=$(B corral submit --parsable -D "$workb" -o "$secret/bob.out" -- echo written)
B corral wait "$ob" >/dev/null || fail "bob's job $ob failed: $(corral show "$ob")"
assert_eq "$(cat "$secret/bob.out")" written "bob's output in $secret"
# The denials name alice's domain, never the supervisor's.
mine=$(denials | grep 'shadow_t' || true)
log "the denials of alice's jobs: $(printf '\n%s' "$mine")"
assert_match "$mine" 'scontext=user_u:user_r:user_t:s0 .*tcontext=[^ ]*:shadow_t' "a denial of user_t"
grep 'shadow_t' <<<"$mine" | grep -q corral_supervisor_t && fail "the supervisor reached $secret itself"

log "job mail: corrald runs the mail program"
cat >"$sendmail" <<'SH'
#!/bin/sh
# The test's sendmail: what it was given goes to the journal.
echo "corral-test-sendmail: args=$* user=$(id -un) lines=$(wc -l)"
SH
chmod 755 "$sendmail"
restorecon "$sendmail"
log "sendmail: $(ls -Z "$sendmail")"
m=$(A corral submit --parsable -D "$work" -o /dev/null --mail-type=END -- true)
A corral wait "$m" >/dev/null || fail "job $m failed"
wait_for 60 sh -c "journalctl -b --no-pager -o cat | grep -q 'corral-test-sendmail: args=-t -oi user=$USER_A'" ||
    fail "no mail was sent for job $m: $(journalctl -b --no-pager -u corrald.service | tail -n 5)"

log "no other denial of Corral's domains"
# With dontaudit off, other domains' denials that the policy means to hide show too
# (logged, not held against Corral); those of Corral's own types fail the test.
all=$(denials)
other=$(grep -v 'shadow_t' <<<"$all" | grep -E 'corrald_|corral_supervisor_' || true)
[ -z "$all" ] || log "denials during the test: $(printf '\n%s' "$all")"
[ -n "$other" ] && command -v audit2allow >/dev/null && log "audit2allow: $(printf '\n'; audit2allow <<<"$other")"
[ -z "$other" ] || fail "AVC denials during the test (above)"
[ "$mode" = Enforcing ] || enforcing_fail "SELinux is $mode, not Enforcing"
log "ok"
