#!/bin/bash
# Projects in /etc/corral/projects.d: a project's [Slice] caps reach its slice's cgroup and
# its jobs use no CPU outside them; a job over a project limit is BLOCKED with the limit
# named and starts when the limit allows; a reload with a broken project file keeps the
# configuration before it and says why; a user in no project is told what to do.
# timeout: 420
. "$CORRAL_TEST_LIB"
pdir=/etc/corral/projects.d
mkdir -p "$pdir"
cleanup() {
    rm -f "$pdir"/physics.conf "$pdir"/biology.conf
    corral reload >/dev/null 2>&1 || true
    corral cancel -u "$USER_A" >/dev/null 2>&1 || true
    corral cancel -u "$USER_B" >/dev/null 2>&1 || true
}
trap cleanup EXIT
systemctl start corrald.socket
state() { corral show --json "$1" | jq -r .job.state; }
reason() { corral show --json "$1" | jq -r .job.reason; }

cat >"$pdir/physics.conf" <<EOF
[Project]
Members=@$PROJECT_A

[Limits]
MaxRunningJobs=1

[Slice]
AllowedCPUs=1
MemoryMax=512M
EOF
printf '[Project]\nMembers=%s\n' "$USER_B" >"$pdir/biology.conf"
corral reload
corral info | grep -q "Projects: biology, physics" || fail "corral info does not list the projects: $(corral info)"
wait_for 30 sh -c "systemctl show -P AllowedCPUs corral-$PROJECT_A.slice | grep -qx 1" \
    || fail "the slice's AllowedCPUs: '$(systemctl show -P AllowedCPUs corral-$PROJECT_A.slice)'"
assert_eq "$(systemctl show -P MemoryMax corral-$PROJECT_A.slice)" $((512 * 1024 * 1024)) "the slice's MemoryMax"

# Two jobs of one project with MaxRunningJobs=1: the second waits BLOCKED, named.
work=$(as_user "$USER_A" mktemp -d /tmp/projects.XXXXXX)
a=$(as_user "$USER_A" corral submit --parsable -D "$work" -- sh -c 'cat /proc/self/status | grep Cpus_allowed_list; sleep 30')
b=$(as_user "$USER_A" corral submit --parsable -D "$work" -- /bin/true)
wait_for 120 sh -c "[ \"\$(corral show --json $a | jq -r .job.state)\" = RUNNING ]" || fail "job $a did not start: $(state "$a")"
wait_for 60 sh -c "[ \"\$(corral show --json $b | jq -r .job.state)\" = BLOCKED ]" || fail "job $b is $(state "$b"), not BLOCKED"
assert_match "$(reason "$b")" '^MaxRunningJobs \(2 > 1\)$' "the blocked job's reason"
assert_match "$(as_user "$USER_A" corral queue)" 'MaxRunningJobs' "corral queue shows the limit"
log "job $b: $(state "$b"), $(reason "$b")"
# corral why names the limit with its numbers.
why=$(as_user "$USER_A" corral why "$b")
assert_match "$why" 'a limit of its project holds it back: MaxRunningJobs.*(limit 1|=1)' "corral why $b"
log "corral why $b: $why"

# The kernel's view: the slice's cpuset and memory cap, and the job inside them.
cg=/sys/fs/cgroup/corral.slice/corral-$PROJECT_A.slice
assert_eq "$(cat "$cg/cpuset.cpus")" 1 "the slice's cpuset.cpus"
assert_eq "$(cat "$cg/memory.max")" $((512 * 1024 * 1024)) "the slice's memory.max"
jobcpus=$(cat "$(unit_cgroup "corral-job-$a.scope")/cpuset.cpus.effective")
assert_eq "$jobcpus" 1 "the job's effective CPUs"
assert_eq "$(corral show --json "$a" | jq -r .job.cpus_allocated)" 1 "the CPU the scheduler chose"

# A broken project file: refused whole, the old configuration stays and says why.
printf '[Project]\nMembers=@%s\nShare=lots\n' "$PROJECT_A" >"$pdir/physics.conf.new"
mv "$pdir/physics.conf.new" "$pdir/physics.conf"
if out=$(as_user "$USER_A" corral config check 2>&1); then fail "corral config check passed a broken file"; fi
assert_match "$out" 'physics.conf:3: invalid value for Share=' "corral config check names file:line"
if out=$(corral reload 2>&1); then fail "a broken project file was accepted"; fi
assert_match "$out" 'physics.conf:3: invalid value for Share=' "the reload's error names file:line"
assert_match "$(corral info)" 'physics.conf:3' "corral info shows the failed reload"
assert_match "$(systemctl show -P AllowedCPUs corral-$PROJECT_A.slice)" '^1$' "the caps stay"

# The first job ends: the blocked one starts (the old configuration's limit still holds).
corral cancel "$a" >/dev/null
wait_for 120 sh -c "[ \"\$(corral show --json $b | jq -r .job.state)\" = COMPLETED ]" \
    || fail "job $b is $(state "$b") ($(reason "$b")) after the first ended"

# Bob is in no project once his file is gone.
rm -f "$pdir/biology.conf"
cat >"$pdir/physics.conf" <<EOF
[Project]
Members=@$PROJECT_A
EOF
corral reload
if out=$(as_user "$USER_B" corral submit -D /tmp -- /bin/true 2>&1); then fail "bob submitted without a project: $out"; fi
assert_match "$out" 'belongs to no project.*projects.d.*systemctl reload corrald' "the refusal says what an admin does"

# Without the project files again: the former project's caps are lifted.
rm -f "$pdir/physics.conf"
corral reload
wait_for 30 sh -c "[ -z \"\$(systemctl show -P AllowedCPUs corral-$PROJECT_A.slice)\" ]" \
    || fail "the caps of a project that is gone stay: $(systemctl show -P AllowedCPUs corral-$PROJECT_A.slice)"
assert_eq "$(systemctl show -P MemoryMax corral-$PROJECT_A.slice)" infinity "MemoryMax lifted"
log "ok"
