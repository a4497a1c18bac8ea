#!/bin/bash
# The Corral page in Cockpit (corral-cockpit(7)) in a real browser: Debian 12's Cockpit on
# the guest (the Cockpit tier's image, CORRAL_TEST_COCKPIT=1), a headless Chromium on the
# host (tests/cockpit/browser-test.py, which tests/vm/run starts beside the guest and lets
# in through a port forward to 9090). This side sets the scene, hands it over on the
# output share (CORRAL_TEST_OUT/cockpit/) and checks afterwards that what the browser
# clicked happened in corrald: alice sees her waiting job with its reason, submits a job
# from the form that runs and whose output shows, cancels one of hers, and is refused
# holding bob's job in corrald's words; root holds it. Then 10,000 jobs queued, and the
# browser prints how long the first view took (a figure, not a pass/fail).
# timeout: 2400
. "$CORRAL_TEST_LIB"
command -v cockpit-bridge >/dev/null || skip "no Cockpit on the guest (the Cockpit tier's image: CORRAL_TEST_COCKPIT=1)"
x=$CORRAL_TEST_OUT/cockpit
mkdir -p "$x"
d=$(durable_dir)

# The page as users install it: the package the unit tier built beside corral's (guest-run
# installed corral from it), or meson install's copy when there is none.
deb=$(ls "${CORRAL_BUILDDIR:-/nonexistent}"/deb/corral-cockpit_*_all.deb 2>/dev/null | head -n1)
if [ -n "$deb" ] && dpkg-query -W -f='${Status}' corral 2>/dev/null | grep -q 'ok installed'; then
    DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$d/install.log" 2>&1 ||
        fail "dpkg -i $(basename "$deb"): $(tail -n 5 "$d/install.log")"
    log "installed $(basename "$deb")"
fi
[ -f /usr/share/cockpit/corral/manifest.json ] || fail "no Corral page in /usr/share/cockpit/corral"

# Logins: passwords for this run; root may log in to Cockpit here (Debian's default refuses).
pw() { head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9'; }
alice_pw=$(pw) root_pw=$(pw)
printf 'alice:%s\nroot:%s\n' "$alice_pw" "$root_pw" | chpasswd
sed -i '/^root$/d' /etc/cockpit/disallowed-users 2>/dev/null || true
systemctl start cockpit.socket
wait_for 120 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090' || fail "Cockpit does not listen on 9090: $(systemctl status cockpit.socket --no-pager 2>&1 | tail -n 5)"
ip -brief addr | grep -q '10\.0\.2\.15' || fail "the guest has no address on qemu's user network: $(ip -brief addr)"

systemctl start corrald.socket
# Two fake GPUs (char nodes of major 195, no driver: 38-gpu's way), so that the Machine tab
# shows one held by bob's running job and one free.
grep -qE '^ *195 ' /proc/devices && skip "a driver serves major 195 here: the fake GPUs would be real"
dropin=/etc/corral/corral.conf.d/slow-cockpit.conf
cleanup() {
    rm -f "$dropin" /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl
    corral reload >/dev/null 2>&1 || true
}
trap cleanup EXIT
for i in 0 1; do rm -f /dev/nvidia$i; mknod -m 0666 /dev/nvidia$i c 195 $i; done
rm -f /dev/nvidiactl; mknod -m 0666 /dev/nvidiactl c 195 255
mkdir -p /etc/corral/corral.conf.d
for i in 0 1; do
    printf '[Device]\nName=gpu%s\nVendor=nvidia\nNodes=/dev/nvidia%s\nNumaNode=%s\nModel=NVIDIA A100-SXM4-40GB\n\n' "$i" "$i" "$i"
done > "$dropin"
corral reload >/dev/null || fail "corral reload with two fake GPUs: $(corral reload 2>&1)"
id_of() { cut -d';' -f1; }
state() { corral show --json "$1" | jq -r .job.state; }
wait_state() { # ID STATE SEC
    wait_for "$3" sh -c "[ \"\$(corral show --json $1 | jq -r .job.state)\" = $2 ]" ||
        fail "job $1 is $(state "$1"), expected $2"
}
# bob's job runs on one of the 2 CPUs for the whole test; alice's and bob's 2-CPU jobs wait
# behind it; the form's 1-CPU, 5-minute job fills the other CPU (backfill).
bob_run=$(as_user bob corral submit --parsable --time 1:00:00 --gpus 1 -- sleep 3600 | id_of)
wait_state "$bob_run" RUNNING 60
alice_pending=$(as_user alice corral submit --parsable --job-name analysis --cpus 2 --time 0:10:00 -- sleep 60 | id_of)
alice_cancel=$(as_user alice corral submit --parsable --job-name to-cancel --hold -- sleep 60 | id_of)
bob_pending=$(as_user bob corral submit --parsable --job-name bobs --cpus 2 --time 0:10:00 -- sleep 60 | id_of)
wait_for 30 sh -c "[ -n \"\$(corral show --json $alice_pending | jq -r '.job.reason // empty')\" ]" ||
    fail "alice's waiting job $alice_pending has no reason"
log "jobs: bob running $bob_run; alice waiting $alice_pending ($(corral show --json "$alice_pending" | jq -r .job.reason)), held $alice_cancel; bob waiting $bob_pending"

# corrald's refusals as the command prints them, for the browser to compare with the page's.
refusal_hold=$(as_user alice corral hold "$bob_pending" 2>&1) && fail "alice could hold bob's job $bob_pending"
refusal_queue=$( { as_user alice sh -c 'cd && corral submit --queue no-such-queue --test-only -- /bin/sh -c true' 2>&1 || true; } |
                grep '^Would not be accepted') || fail "a job to a queue that does not exist was not refused"
log "alice holding bob's job: $refusal_hold"
log "a job to no such queue: $refusal_queue"

t0=$(date +%s)
jq -n --arg ap "$alice_pw" --arg rp "$root_pw" --argjson a "$alice_pending" --argjson c "$alice_cancel" \
      --argjson b "$bob_pending" --argjson br "$bob_run" --arg rh "$refusal_hold" --arg rq "$refusal_queue" \
      '{alice_password: $ap, root_password: $rp, alice_pending: $a, alice_cancel: $c, bob_pending: $b, bob_run: $br,
        refusal_hold: $rh, refusal_queue: $rq}' > "$x/.ready"
mv "$x/.ready" "$x/ready"
log "handed over to the host's browser"
wait_for 1500 test -s "$x/result" ||
    fail "no result from the host's browser after 1500 s; its log: $(tail -n 20 "$CORRAL_TEST_OUT/logs/host-helper.log" 2>&1)"
result=$(cat "$x/result")
log "the browser's scenario took $(( $(date +%s) - t0 )) s: $result"
[ "$result" = ok ] || fail "the browser: $result; its log: $(tail -n 12 "$CORRAL_TEST_OUT/logs/host-helper.log" 2>&1)"

# What the clicks did, as corrald has it.
submitted=$(cat "$x/submitted")
assert_eq "$(corral show --json "$submitted" | jq -r .job.user)" alice "the form's job's owner"
corral show --json "$submitted" | jq -r '.job.argv | join(" ")' | grep -q cockpit-says-hello ||
    fail "job $submitted is not the form's command: $(corral show --json "$submitted" | jq -c .job.argv)"
wait_state "$submitted" COMPLETED 120
assert_eq "$(state "$alice_cancel")" CANCELLED "alice's job cancelled from the page"
assert_eq "$(state "$bob_pending")" HELD "bob's job held by root from the page"
assert_eq "$(corral show --json "$bob_pending" | jq -r .job.reason)" JobHeldAdmin "bob's job's hold"
# Its history, as corral show prints it and as the page showed it: the hold root made.
corral show "$bob_pending" | grep -q "HELD .*held by an administrator (JobHeldAdmin)" ||
    fail "corral show $bob_pending does not tell root's hold: $(corral show "$bob_pending" | grep -A4 History)"

# 10,000 jobs: one held array of bob's, so that none runs.
corral cancel "$bob_run" "$alice_pending" "$bob_pending" >/dev/null 2>&1 || true
as_user bob corral submit --parsable --hold --array 1-10000 -- /bin/true >/dev/null || fail "the 10,000-task array was refused"
n=$(corral queue --json | jq '.jobs | length')
log "$n jobs queued"
[ "$n" -ge 10000 ] || fail "only $n jobs queued"
# Not empty: the host waits for a file with something in it (a file being written shows
# empty first).
echo "$n" > "$x/.bench-ready" && mv "$x/.bench-ready" "$x/bench-ready"
wait_for 900 test -s "$x/bench" || fail "no benchmark from the host's browser"
bench=$(cat "$x/bench")
case "$bench" in FAILED*) fail "the benchmark: $bench" ;; esac
echo "cockpit: first view of the queue with $n jobs: $(jq -r '"\(.first_view_ms) ms after the page loaded (its corral queue calls \(.first_fetch_ms) ms of it), \(.wall_s) s from opening the page in the shell, \(.rows_rendered) rows rendered; the next page \(.next_page_s) s"' <<<"$bench")"
corral cancel --user bob >/dev/null 2>&1 || true
log "ok"
