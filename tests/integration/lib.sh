# shellcheck shell=bash
# Helpers for integration tests. Source it first: `. "$CORRAL_TEST_LIB"`.
# Tests run as root; `as_user alice CMD...` runs CMD as an unprivileged test user with
# that user's groups and a clean environment, as a login on a shared machine would.
set -euo pipefail

USER_A=alice PROJECT_A=physics
USER_B=bob PROJECT_B=biology

log() { echo "# $*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }
skip() { echo "skipped: $*"; exit 77; }

assert_eq() { [ "$1" = "$2" ] || fail "${3:-values differ}: expected '$2', got '$1'"; }
assert_match() { printf '%s' "$1" | grep -Eq -- "$2" || fail "${3:-no match}: '$1' does not match /$2/"; }
assert_le() { [ "$1" -le "$2" ] || fail "${3:-too large}: $1 > $2"; }

as_user() {
    local u=$1 name _x _uid gid=; shift
    # The group from /etc/passwd without an id process (~70 ms of CPU each under TCG).
    while IFS=: read -r name _x _uid gid _x; do
        [ "$name" != "$u" ] || break
        gid=
    done < /etc/passwd
    [ -n "$gid" ] || gid=$(id -g "$u")
    setpriv --reuid="$u" --regid="$gid" --init-groups --reset-env -- "$@"
}

# Waits until CMD succeeds, up to SEC seconds (guest code is slow: be generous).
wait_for() {
    local sec=$1; shift
    local end=$(( $(date +%s) + sec ))
    until "$@"; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.2
    done
}

# The cgroup directory of a unit.
unit_cgroup() { echo "/sys/fs/cgroup$(systemctl show -P ControlGroup "$1")"; }

# For a test that needs a reboot: `if [ "${CORRAL_TEST_PHASE:-}" != after-reboot ]; then
# ...; reboot_and_continue; fi; ...after the reboot...`. The guest reboots (its disk
# lives on) and the runner calls this test again in its second phase.
reboot_and_continue() {
    [ -n "${CORRAL_TEST_OUT:-}" ] || skip "this runner cannot resume after a reboot"
    [ "$(cat /proc/1/comm)" = systemd ] || skip "not under systemd"
    [ "${CORRAL_TEST_IN_GUEST:-0}" = 1 ] || skip "rebooting is for the test guest only, not a native host"
    touch "$CORRAL_TEST_OUT/resume"
    sync
    log "rebooting the guest"
    systemctl reboot
    sleep 600
    fail "the guest did not reboot"
}

# A directory for what a test must still know after a power cut: on the harness's output
# share (the host's disk), not on the guest's, which keeps only what was flushed. It is
# kept with the logs (build/meson-logs/integration/NAME.d/).
durable_dir() {
    [ -n "${CORRAL_TEST_OUT:-}" ] || skip "this runner keeps no output directory"
    local d
    d=$CORRAL_TEST_OUT/logs/$(basename "$0" .sh).d
    mkdir -p "$d"
    echo "$d"
}

# For a test that needs a power failure: `if [ "${CORRAL_TEST_PHASE:-}" != after-power-cut ];
# then ...start work...; power_cut_and_continue; fi; ...after the power cut...`. The host
# kills the guest's qemu 0.5–3 s after this call (no shutdown: what the guest had not
# flushed to its disk is lost), boots the same disk again, and the runner calls this test
# again in its second phase. Work started in the background goes on until the power goes.
# The delay the host chose is in $CORRAL_TEST_OUT/power-cut-delay afterwards.
power_cut_and_continue() {
    [ -n "${CORRAL_TEST_OUT:-}" ] || skip "this runner cannot resume after a power cut"
    [ "$(cat /proc/1/comm)" = systemd ] || skip "not under systemd"
    [ "${CORRAL_TEST_IN_GUEST:-0}" = 1 ] || skip "a power cut is for the test guest only, not a native host"
    echo after-power-cut > "$CORRAL_TEST_OUT/resume"
    rm -f "$CORRAL_TEST_OUT/power-cut-delay"
    log "asking the host to cut the power"
    : > "$CORRAL_TEST_OUT/power-cut"
    sleep 120
    fail "the power was not cut"
}
