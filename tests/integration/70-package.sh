#!/bin/bash
# What users get from the package: tests/vm/guest-run installed the .deb the unit tier built
# (tests/unit/test-package.sh); its postinst enabled and started corrald.socket; an
# unprivileged user's job is a scope that systemctl shows, with its output in the journal.
# corrald.service is sandboxed (systemd-analyze verify clean, its exposure reported), and
# yet its jobs see the machine as their user's login shell does: the same mount namespace,
# files written to $HOME and /tmp that a login shell sees, and the network, user
# namespaces, W^X memory, personality changes and setgid directories a shell can use.
# timeout: 300
. "$CORRAL_TEST_LIB"

dpkg-query -W -f='${Status}\n' corral 2>/dev/null | grep -qx 'install ok installed' \
    || skip "Corral was installed without its package (no .deb in \$CORRAL_BUILDDIR/deb; meson test --suite package builds it)"
log "installed: corral $(dpkg-query -W -f='${Version}' corral)"

assert_eq "$(systemctl is-enabled corrald.socket)" enabled "corrald.socket after installation"
assert_eq "$(systemctl is-active corrald.socket)" active "corrald.socket after installation"
assert_eq "$(systemctl is-enabled corrald.service)" enabled "corrald.service after installation"
grep -qx /etc/corral/corral.conf /var/lib/dpkg/info/corral.conffiles || fail "corral.conf is not a conffile"
# The group the built-in express queue is open to (corrald(8), QUEUES): a system group.
gid=$(getent group corral-express | cut -d: -f3)
[ -n "$gid" ] || fail "the postinst did not create the group corral-express"
[ "$gid" -lt 1000 ] || fail "corral-express has gid $gid, not a system group's"
# (An earlier test, 20-cli, replaces the configuration and then deletes it.)
[ -f /etc/corral/corral.conf ] || log "/etc/corral/corral.conf was deleted since the installation"

# Documentation= is checked with man(1) where the machine has it and keeps man pages.
man=yes
if ! command -v man >/dev/null || ! man -w corrald >/dev/null 2>&1; then
    man=no
    log "no man(1) or no man pages here: systemd-analyze verify --man=no"
fi
log "systemd-analyze verify"
out=$(systemd-analyze verify --man=$man corrald.service corrald.socket corral.slice 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify is not clean: $out"
exposure=$(systemd-analyze security --no-pager corrald.service 2>/dev/null | sed -n 's/.*Overall exposure level for corrald.service: \([0-9.]*\).*/\1/p')
log "systemd-analyze security corrald.service: exposure $exposure"
[ -n "$exposure" ] || fail "no exposure level from systemd-analyze security"
awk -v e="$exposure" 'BEGIN { exit !(e < 7.0) }' || fail "corrald.service exposure $exposure, expected below 7.0 (6.4 when written)"
assert_eq "$(systemctl show -P NoNewPrivileges corrald.service)" yes "NoNewPrivileges"

home=$(getent passwd "$USER_A" | cut -d: -f6)
stamp=corral-visible-$$-$RANDOM
# The job: files in $HOME and /tmp, its mount namespace, and what a shell can do.
job='echo "hello from the job"
echo "$1 home" > "$HOME/$1"; echo "$1 tmp" > "/tmp/$1"
echo "mntns $(readlink /proc/self/ns/mnt)"
python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()" && echo "ok inet"
python3 -c "import mmap; mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)" && echo "ok wx"
setarch "$(uname -m)" -R true && echo "ok personality"
mkdir -p "$HOME/$1.d" && chmod g+s "$HOME/$1.d" && [ -g "$HOME/$1.d" ] && echo "ok setgid"
if [ "$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo 1)" = 1 ]; then
    unshare -U true && echo "ok userns"
else
    echo "ok userns (disabled on this machine)"
fi
sleep 4
echo "done"'
id=$(as_user "$USER_A" corral submit --parsable -D /tmp -J visible -- bash -c "$job" job "$stamp") \
    || fail "submit as $USER_A: $id"
log "job $id"
wait_for 60 systemctl is-active -q "corral-job-$id.scope" || fail "corral-job-$id.scope never became active"
status=$(systemctl status --no-pager "corral-job-$id.scope" 2>&1 || true)
assert_match "$status" "corral-job-$id.scope" "systemctl status of the job's scope"
assert_match "$status" "Active: active" "the job's scope is running"
as_user "$USER_A" corral wait "$id" >/dev/null 2>&1 || fail "job $id did not succeed: $(corral show "$id" 2>&1)"

journal_has() { journalctl --no-pager -u "corral-job-$id.scope" 2>/dev/null | grep -q "$1"; }
wait_for 30 journal_has "hello from the job" || fail "journalctl -u corral-job-$id.scope lacks the job's output"
wait_for 30 journal_has "done" || fail "the job's output is incomplete in the journal"
output=$(journalctl --no-pager -o cat -u "corral-job-$id.scope")
for what in inet wx personality setgid userns; do
    assert_match "$output" "^ok $what" "the job could not do what a login shell can ($what); its output: $output"
done

# The login shell of the same user sees the files, in the same mount namespace.
shell=$(runuser -l "$USER_A" -c "cat ~/$stamp /tmp/$stamp; readlink /proc/self/ns/mnt")
assert_eq "$(sed -n 1p <<<"$shell")" "$stamp home" "a login shell reads the job's file in \$HOME"
assert_eq "$(sed -n 2p <<<"$shell")" "$stamp tmp" "a login shell reads the job's file in /tmp"
jobns=$(sed -n 's/^mntns //p' <<<"$output")
assert_eq "$jobns" "$(sed -n 3p <<<"$shell")" "the job's mount namespace against a login shell's"
assert_eq "$jobns" "$(readlink /proc/1/ns/mnt)" "the job's mount namespace against PID 1's"
# And corrald itself runs in the host's namespaces too (what its jobs inherit).
pid=$(systemctl show -P MainPID corrald.service)
assert_eq "$(readlink "/proc/$pid/ns/mnt")" "$(readlink /proc/1/ns/mnt)" "corrald's mount namespace"
assert_eq "$(readlink "/proc/$pid/ns/uts")" "$(readlink /proc/1/ns/uts)" "corrald's UTS namespace"
assert_eq "$(readlink "/proc/$pid/ns/net")" "$(readlink /proc/1/ns/net)" "corrald's network namespace"

rm -rf "${home:?}/$stamp" "$home/$stamp.d" "/tmp/$stamp"
log "ok"
