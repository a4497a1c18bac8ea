#!/bin/bash
# corrald starts on its last good configuration: a typo in a drop-in at start-up leaves
# corrald up on the configuration that last loaded (kept in /var/lib/corral), jobs still
# scheduled, and says so everywhere: the journal at error level with file:line, corral
# info, every corral command's stderr, systemctl status. Fixing the file and reloading
# clears it. With no good configuration ever loaded, a start still refuses, saying why.
# timeout: 400
. "$CORRAL_TEST_LIB"
A() { as_user "$USER_A" "$@"; }
good=/etc/corral/corral.conf.d/32-good.conf
typo=/etc/corral/corral.conf.d/33-typo.conf
lastgood=/var/lib/corral/config.last-good
cleanup() {
    rm -f "$good" "$typo"
    systemctl reset-failed corrald.service corrald.socket 2>/dev/null
    systemctl start corrald.socket corrald.service
}
trap cleanup EXIT
mkdir -p /etc/corral/corral.conf.d
systemctl start corrald.socket corrald.service

log "a good configuration loads and is kept"
printf '[Queue]\nName=long\nPriority=0\nMaxWalltime=2d\n\n[Queue]\nName=normal\nPriority=1\n' > "$good"
corral reload || fail "the good configuration did not load"
[ -f "$lastgood/corral.conf.d/32-good.conf" ] || fail "no copy of the good configuration in $lastgood"
assert_eq "$(stat -c %a "$lastgood")" 700 "mode of $lastgood"

log "a typo in a drop-in, and corrald restarted"
printf '[Queue]\nName=long\nPrioirty=3\n' > "$typo"
since=$(date '+%Y-%m-%d %H:%M:%S')
systemctl restart corrald || fail "corrald did not start on the last good configuration: $(journalctl -b -q -u corrald -n 20 -o cat)"
systemctl is-active -q corrald || fail "corrald is not active"
journalctl -b -q -u corrald -p err --since "$since" -o cat | grep -q '33-typo.conf:3' \
    || fail "no error-level journal line naming 33-typo.conf:3: $(journalctl -b -q -u corrald --since "$since" -o cat)"

info=$(corral info) || fail "corral info failed"
assert_match "$info" 'Queues:.*long' "the last good configuration's queues are in force"
assert_match "$info" 'Config: the last good configuration, saved .* in /var/lib/corral/config.last-good' \
    "corral info names the configuration in force"
assert_match "$info" '33-typo.conf:3' "corral info names the broken file:line"

err=$(A corral queue 2>&1 >/dev/null) || fail "corral queue failed"
assert_match "$err" 'warning: .*configuration on disk does not load.*33-typo.conf:3.*last good' \
    "corral queue's stderr warns"
out=$(A corral queue 2>/dev/null)
printf '%s' "$out" | grep -q warning && fail "the warning went to stdout: $out"

status=$(systemctl status --no-pager corrald 2>&1 || true)
assert_match "$status" 'Status: "CONFIGURATION ON DISK DOES NOT LOAD: .*33-typo.conf:3.*last good' \
    "systemctl status shows it"

log "jobs are still scheduled, in the last good configuration's queues"
id=$(A corral submit --parsable -q long -n 1 --time 1:00 -- true 2>/dev/null) || fail "submit to queue long failed"
A corral wait "$id" >/dev/null 2>&1 || fail "job $id did not complete: $(corral show "$id")"

log "a reload that fails keeps the running configuration and still says so"
err=$(corral reload 2>&1) && fail "the broken configuration reloaded"
assert_match "$err" '33-typo.conf:3' "the reload error names file:line"
assert_match "$(corral info)" 'last good' "still on the last good configuration"

log "fixed and reloaded: the warning is gone"
rm -f "$typo"
systemctl reload corrald
wait_for 30 sh -c "! corral info | grep -q 'Config error'" || fail "corral info still reports an error: $(corral info)"
assert_match "$(corral info)" 'Config: the configuration loaded from /etc/corral' "the files on disk are in force"
err=$(A corral queue 2>&1 >/dev/null)
assert_eq "$err" "" "corral queue's stderr after the fix"
wait_for 30 sh -c "! systemctl status --no-pager corrald | grep -q 'DOES NOT LOAD'" \
    || fail "systemctl status still shows the error: $(systemctl status --no-pager corrald)"

log "no good configuration ever loaded: the start refuses, saying why"
systemctl stop corrald.socket corrald.service
rm -rf "$lastgood"
printf '[Queue]\nName=long\nPrioirty=3\n' > "$typo"
since=$(date '+%Y-%m-%d %H:%M:%S')
systemctl start corrald.service 2>/dev/null && fail "corrald started with a broken configuration and none saved"
journalctl -b -q -u corrald -p err --since "$since" -o cat | grep -q '33-typo.conf:3.*no last good configuration' \
    || fail "the refusal does not say why: $(journalctl -b -q -u corrald --since "$since" -o cat)"
rm -f "$typo"
systemctl reset-failed corrald.service corrald.socket 2>/dev/null
systemctl start corrald.socket corrald.service || fail "corrald did not start once fixed"
[ -d "$lastgood" ] || fail "the fixed configuration was not kept"
rm -f "$good"
corral reload
