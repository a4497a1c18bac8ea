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
    local u=$1; shift
    setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups --reset-env -- "$@"
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
# ...; reboot_and_continue; fi; ...after the reboot...`. The guest reboots (the disk's
# snapshot lives on in qemu) and the runner calls this test again in its second phase.
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
