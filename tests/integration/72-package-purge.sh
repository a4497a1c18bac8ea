#!/bin/bash
# Removing the package stops the daemon and its socket and removes the programs, but keeps
# the job database and the configuration; purging removes them too. The package is then
# installed again, as the next tests expect.
# timeout: 420
. "$CORRAL_TEST_LIB"

dpkg-query -W -f='${Status}\n' corral 2>/dev/null | grep -qx 'install ok installed' \
    || skip "Corral was installed without its package"
deb=$(ls "$CORRAL_BUILDDIR"/deb/corral_*_"$(dpkg --print-architecture)".deb 2>/dev/null | head -n1)
[ -f "$deb" ] || skip "no corral .deb in $CORRAL_BUILDDIR/deb"
export DEBIAN_FRONTEND=noninteractive
# USER's `corral logs JOB` shows TEXT (the journal may take a moment to have it).
logs_show() { as_user "$1" corral logs "$2" 2>/dev/null | grep -q -- "$3"; }

# Earlier tests rewrite and delete corral.conf: the package puts it back, as an
# administrator would.
if [ ! -f /etc/corral/corral.conf ]; then
    out=$(dpkg --force-confmiss -i "$deb" 2>&1) || fail "dpkg --force-confmiss -i: $out"
    [ -f /etc/corral/corral.conf ] || fail "dpkg --force-confmiss did not restore /etc/corral/corral.conf"
fi
# A fresh database, so that the job before the purge is job 1, as the first one after it
# will be (purging deletes this database anyway).
systemctl stop corrald.socket corrald.service
rm -f /var/lib/corral/corral.db /var/lib/corral/corral.db-wal /var/lib/corral/corral.db-shm
systemctl start corrald.socket
secret="old-owner-output-$$-$RANDOM"
id=$(as_user "$USER_A" corral submit --parsable -D /tmp --wait -- echo "$secret" 2>/dev/null) || fail "a job before removal: $id"
assert_eq "$id" 1 "the first job of a fresh database"
wait_for 30 logs_show "$USER_A" 1 "$secret" \
    || fail "corral logs 1 of $USER_A's job before the purge: $(as_user "$USER_A" corral logs 1 2>&1)"
[ -s /var/lib/corral/corral.db ] || fail "no job database"
echo "# an administrator's drop-in" > /etc/corral/corral.conf.d/50-site.conf
mkdir -p /etc/corral/projects.d
echo "# an administrator's project" > /etc/corral/projects.d/purge-test.conf

holds() { systemctl list-units --no-legend --plain --state=active 'corral-*-controllers.slice'; }
[ -n "$(holds)" ] || fail "no project's controller hold before the removal: the test would prove nothing"

log "apt-get remove corral"
out=$(apt-get remove -y -q corral 2>&1) || fail "apt-get remove: $out"
assert_eq "$(dpkg-query -W -f='${Status}' corral 2>/dev/null)" "deinstall ok config-files" "status after remove"
[ ! -e /usr/bin/corral ] || fail "/usr/bin/corral is still there"
[ ! -e /lib/systemd/system/corrald.service ] || fail "corrald.service is still there"
systemctl is-active -q corrald.socket && fail "corrald.socket is still active"
systemctl is-active -q corrald.service && fail "corrald.service is still active"
[ -z "$(holds)" ] || fail "remove left the controller holds: $(holds)"
[ -s /var/lib/corral/corral.db ] || fail "remove deleted the job database"
[ -f /etc/corral/corral.conf ] || fail "remove deleted /etc/corral/corral.conf"
[ -f /etc/corral/corral.conf.d/50-site.conf ] || fail "remove deleted the administrator's drop-in"
[ -f /etc/corral/projects.d/purge-test.conf ] || fail "remove deleted the administrator's project file"

log "apt-get purge corral"
out=$(apt-get purge -y -q corral 2>&1) || fail "apt-get purge: $out"
st=$(dpkg-query -W -f='${Status}' corral 2>/dev/null || true)
case $st in
    "" | "unknown ok not-installed" | "purge ok not-installed") ;;
    *) fail "status after purge: $st" ;;
esac
[ ! -e /var/lib/corral ] || fail "purge left /var/lib/corral"
[ ! -e /etc/corral ] || fail "purge left /etc/corral: $(find /etc/corral)"
[ ! -e /lib/systemd/system/corrald.socket ] || fail "purge left corrald.socket"
# As Debian packages leave their system groups: its members stay an administrator's choice.
getent group corral-express >/dev/null || fail "purge removed the group corral-express"

log "installing it again"
# With corral-slurm-compat, which apt removed with corral, for the tests after this one.
debs=("$deb")
slurmdeb=$(dirname "$deb")/corral-slurm-compat_${deb##*/corral_}
[ -f "$slurmdeb" ] && debs+=("$slurmdeb")
out=$(dpkg -i "${debs[@]}" 2>&1) || fail "dpkg -i ${debs[*]}: $out"
assert_eq "$(systemctl is-active corrald.socket)" active "corrald.socket after reinstalling"
as_user "$USER_A" corral info >/dev/null || fail "corral info after reinstalling"

# Ids start again at 1, and the journal still holds the old job 1's output under the same
# id and unit name: another user's new job 1 must not show it.
log "a new job 1 of $USER_B does not show the old job 1's output"
id=$(as_user "$USER_B" corral submit --parsable -D /tmp --wait -- echo new-owner-output 2>/dev/null) \
    || fail "a job after reinstalling: $id"
assert_eq "$id" 1 "the first job after the purge"
journalctl -q -o cat CORRAL_JOB_ID=1 _SYSTEMD_UNIT=corral-job-1.scope | grep -q "$secret" \
    || fail "the journal lost the old job 1's output: the test would prove nothing"
wait_for 30 logs_show "$USER_B" 1 new-owner-output \
    || fail "corral logs 1 misses the new job's output: $(as_user "$USER_B" corral logs 1 2>&1)"
out=$(as_user "$USER_B" corral logs 1 2>&1)
case $out in
    *"$secret"*) fail "$USER_B's job 1 shows $USER_A's old job 1's output: $out" ;;
esac
log "ok"
