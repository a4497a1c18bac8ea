#!/bin/bash
# GPU telemetry through NVML, with the fake libnvidia-ml.so.1 of the build tree
# (tests/fake-nvml/) loaded by corrald through CORRAL_NVML_LIBRARY, serving one GPU that a
# [Device] section declares by PCI address over a fake node (major 195): corral info says
# telemetry is on, a job's figures in corral show are the counters the fake served while it
# ran, and a wedged fake (every call blocks) makes telemetry "stalled" while jobs are still
# scheduled and corral info still answers; once the fake answers again it is back on. A
# job whose GPU reads 0 % is marked IDLE-GPU (GPUIdleSec=3s); a process outside any job
# on the GPU (a real one: the fake lists its pid) makes it "in use outside Corral" and a
# GPU job waits for it (UnmanagedGPU=avoid) until it is gone. A GPU in MIG mode lists its
# MIG devices and is given to no job whole until it leaves MIG mode.
# The card's identity (its PCI address) stays in the store, at whatever index was free,
# as 38-gpu's cards do.
# timeout: 600
. "$CORRAL_TEST_LIB"
dropin=/etc/corral/corral.conf.d/39-gpu-telemetry.conf
unitdrop=/run/systemd/system/corrald.service.d/39-fake-nvml.conf
lib=/usr/local/lib/corral-test/libfake-nvml.so
conf=/run/corral-fake-nvml.conf
cleanup() {
    echo "gpu uuid=GPU-39 pci=00000000:3B:00.0" > "$conf.new" 2>/dev/null && mv "$conf.new" "$conf"
    corral cancel -u "$USER_A" >/dev/null 2>&1 || true
    [ -n "${outside:-}" ] && kill "$outside" 2>/dev/null
    rm -f "$dropin" "$unitdrop" /dev/nvidia0 /dev/nvidiactl "${prog:-}"
    rm -rf "${box:-/nonexistent}"
    systemctl daemon-reload
    systemctl restart corrald >/dev/null 2>&1 || true
}
trap cleanup EXIT
grep -qE '^ *195 ' /proc/devices && skip "a driver serves major 195 here: the fake GPU would be real"
[ -f "$CORRAL_BUILDDIR/tests/fake-nvml/libfake-nvml.so" ] || fail "no fake NVML in the build tree"
install -D -m 0644 "$CORRAL_BUILDDIR/tests/fake-nvml/libfake-nvml.so" "$lib"

# Written whole and renamed: the fake reads the file on every call.
fake() { printf '%s\n' "$@" > "$conf.new" && mv "$conf.new" "$conf"; }
fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 memory=42949672960 used=1073741824 util=40 energy=1000000 power=100000 temp=40 name=NVIDIA A100-SXM4-40GB"
rm -f /dev/nvidia0 /dev/nvidiactl
mknod -m 0666 /dev/nvidia0 c 195 0
mknod -m 0666 /dev/nvidiactl c 195 255
mkdir -p /etc/corral/corral.conf.d "$(dirname "$unitdrop")"
# Mail (a job's end says what it did with its GPUs; GPUIdleAction=mail) kept whole in $box.
box=/var/tmp/corral-mail-39
prog=/usr/local/libexec/corral-test/mail-39
rm -rf "$box"; mkdir -p "$box" "$(dirname "$prog")"; chmod 1777 "$box"
printf '#!/bin/sh\nf=$(mktemp %s/.part.XXXXXX)\ncat >"$f"\nmv "$f" "%s/msg.${f##*.part.}"\n' "$box" "$box" > "$prog"
chmod 755 "$prog"
printf '[Manager]\nGPUSampleSec=1s\nGPUIdleSec=3s\nGPUIdleAction=mail\nMailProg=%s\n\n[Device]\nName=gpu0\nVendor=nvidia\nNodes=/dev/nvidia0\nPCIAddress=0000:3b:00.0\nModel=NVIDIA A100-SXM4-40GB\n' "$prog" > "$dropin"
printf '[Service]\nEnvironment=CORRAL_NVML_LIBRARY=%s FAKE_NVML_CONFIG=%s\n' "$lib" "$conf" > "$unitdrop"
systemctl daemon-reload
systemctl restart corrald

telemetry() { corral info --json | jq -r '.gpu_telemetry.state // "none"'; }
wait_for 60 sh -c '[ "$(corral info --json | jq -r .gpu_telemetry.state)" = on ]' \
    || fail "telemetry not on: $(corral info --json | jq -c .gpu_telemetry)"
info=$(corral info)
log "$(grep -A2 -E 'Telemetry|NVML' <<<"$info")"
assert_match "$info" 'Telemetry: on \(NVML, every 1 s\)' "corral info's telemetry line"
assert_match "$info" 'GPU-39 0000:3b:00.0  40% busy  1G used of 40G  100 W  40 C' "corral info's NVML reading"

# A job on the GPU: two readings of the counters while it runs, then it ends.
work=$(as_user "$USER_A" mktemp -d /tmp/gputel.XXXXXX)
id=$(cd "$work" && as_user "$USER_A" corral submit --parsable --gpus 1 --mail-type=END -o "$work/out" -- sleep 12)
[ -n "$id" ] || fail "the GPU job was refused"
wait_for 60 sh -c "[ \"\$(corral show --json $id | jq -r .job.state)\" = RUNNING ]" || fail "job $id does not run"
wait_for 30 sh -c "corral show --json $id | jq -e '.job.gpu_usage[0].samples >= 2' >/dev/null" \
    || fail "no readings of job $id's GPU: $(corral show --json "$id" | jq -c .job.gpu_usage)"
# corral queue's GPU%: the reading of its GPU.
assert_match "$(corral queue | grep -E '^ *JOBID')" ' GPUS +GPU% ' "corral queue's GPU% column"
assert_match "$(corral queue | grep -E "^ *$id ")" ' 1 +40% ' "job $id's GPU% in corral queue"
fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 memory=42949672960 used=3221225472 util=80 energy=5000000 name=NVIDIA A100-SXM4-40GB"
wait_for 60 sh -c "corral show --json $id | jq -e '.job.gpu_usage[0].running == false' >/dev/null" \
    || fail "job $id's GPU figures not stored at its end: $(corral show --json "$id" | jq -c '.job.state, .job.gpu_usage')"
usage=$(corral show --json "$id" | jq -c '.job.gpu_usage[0]')
log "job $id: $usage"
assert_eq "$(jq -r .util_max <<<"$usage")" 80 "the highest utilisation the fake served"
assert_eq "$(jq -r .memory_max <<<"$usage")" 3221225472 "the highest memory the fake served"
assert_eq "$(jq -r .energy_j <<<"$usage")" 4000 "the energy counter's increase (5000000 - 1000000 mJ)"
mean=$(jq -r .util_mean <<<"$usage")
awk -v m="$mean" 'BEGIN { exit !(m > 40 && m < 80) }' || fail "mean utilisation $mean not between the two readings"
held=$(jq -r .held_sec <<<"$usage")
[ "$held" -ge 10 ] && [ "$held" -le 60 ] || fail "held $held s for a 12 s job"
idx=$(jq -r .gpu <<<"$usage")
assert_match "$(corral show "$id")" "GPU${idx}Usage: [0-9]+% busy on average, 80% at most; 3G memory at most; 4000 J; held" \
    "corral show's GPU line"
# Its END mail says the same.
wait_for 30 sh -c "grep -l 'Job_id=$id Name=' $box/msg.* >/dev/null 2>&1" || fail "no END mail for job $id: $(ls "$box")"
assert_match "$(grep -l "Job_id=$id Name=" "$box"/msg.* | xargs cat)" \
    "^GPU gpu0: [0-9]+ % busy on average, 80 % at most; 3.0 GiB memory at most, 4000 J; held 0:00:[0-9]+\$" \
    "job $id's END mail's GPU line"
# sacct gives the same figures under Slurm's names (corral-slurm(7)).
if command -v sacct >/dev/null; then
    assert_match "$(sacct -P -n -X -o TRESUsageInMax,ConsumedEnergyRaw -j "$id")" \
        '^cpu=[0-9:]+,gres/gpumem=3072M,gres/gpuutil=80(,mem=[0-9]+K)?\|4000$' "sacct's TRESUsageInMax and ConsumedEnergyRaw"
fi

# The driver wedges: telemetry stalls within its 5 s timeout; jobs are still scheduled.
fake wedge "gpu uuid=GPU-39 pci=00000000:3B:00.0"
wait_for 60 sh -c '[ "$(corral info --json | jq -r .gpu_telemetry.state)" = stalled ]' \
    || fail "telemetry not stalled with the driver wedged: $(corral info --json | jq -c .gpu_telemetry)"
log "wedged: $(corral info --json | jq -c .gpu_telemetry)"
start=$(date +%s)
out=$(as_user "$USER_A" corral submit --wait -- /bin/true 2>&1) || fail "a job with the driver wedged: $out"
log "a job ran in $(( $(date +%s) - start )) s with the driver wedged"
journalctl -u corrald --since -2min --no-pager | grep -q 'GPU telemetry stalled' || fail "the stall was not logged"

# It answers again: back on.
fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 util=5 name=NVIDIA A100-SXM4-40GB"
wait_for 60 sh -c '[ "$(corral info --json | jq -r .gpu_telemetry.state)" = on ]' \
    || fail "telemetry not back on: $(corral info --json | jq -c .gpu_telemetry)"

# Idle (GPUIdleSec=3s, above): a job on a GPU that reads 0 % for 3 s is marked, and why and show say so.
fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 util=0 name=NVIDIA A100-SXM4-40GB"
id=$(cd "$work" && as_user "$USER_A" corral submit --parsable --gpus 1 -o "$work/out" -- sleep 120)
wait_for 60 sh -c "corral queue | grep -E '^ *$id .* IDLE-GPU\$' >/dev/null" \
    || fail "job $id not marked idle: $(corral queue; corral show --json "$id" | jq -c .job.gpu_idle)"
log "$(corral queue | grep -E "^ *$id ")"
assert_match "$(corral why "$id")" "its GPU \(gpu0\) has been below 5 % for [0-9]+ s" "corral why of an idle job"
assert_match "$(corral show "$id")" "GPUIdle: its GPU \(gpu0\) has been below 5 %" "corral show of an idle job"
# GPUIdleAction=mail: its user is told, once.
wait_for 30 sh -c "grep -l 'Job_id=$id Name=.* GPUs idle' $box/msg.* >/dev/null 2>&1" \
    || fail "no GPUs-idle mail for job $id: $(ls "$box")"
assert_match "$(grep -l "Job_id=$id Name=.* GPUs idle" "$box"/msg.* | xargs cat)" \
    "^While it runs, its GPU \(gpu0\) has been below 5 % for [0-9]+ s" "job $id's GPUs-idle mail"
corral cancel "$id" >/dev/null
wait_for 60 sh -c "[ \"\$(corral show --json $id | jq -r .job.state)\" = CANCELLED ]" || fail "job $id not cancelled"

# A reload keeps the declared GPU schedulable (its placeholder, with the PCI address it was
# declared with, is declared again): the job below runs on it once it is free.
corral reload >/dev/null || fail "corral reload"

# Outside Corral: a process of root's, in no job's scope, on the GPU.
sleep 300 &
outside=$!
fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 util=50 name=NVIDIA A100-SXM4-40GB" "proc 0 $outside 1048576"
wait_for 60 sh -c "corral info --json | jq -e '.gpu_telemetry.gpus[0].outside_corral[0].pid == $outside' >/dev/null" \
    || fail "pid $outside not outside Corral: $(corral info --json | jq -c .gpu_telemetry.gpus)"
assert_match "$(corral info)" "in use outside Corral \(no new job is given it\): pid $outside \(root\)" \
    "corral info's line for the GPU used outside Corral"
if command -v sinfo >/dev/null; then
    assert_match "$(sinfo -R -h)" "^gpu0 in use outside +root +[0-9T:-]+ +$(hostname)" "sinfo -R (%20E: the reason cut at 20)"
fi
id=$(cd "$work" && as_user "$USER_A" corral submit --parsable --gpus 1 -o "$work/out" -- /bin/true)
sleep 3
assert_eq "$(corral show --json "$id" | jq -r .job.state)" PENDING "a GPU job while its GPU is used outside Corral"
assert_match "$(corral why "$id")" "in use outside Corral: gpu0" "corral why of the job that waits for it"
kill "$outside"
outside=
fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 util=50 name=NVIDIA A100-SXM4-40GB"
wait_for 60 sh -c "[ \"\$(corral show --json $id | jq -r .job.state)\" = COMPLETED ]" \
    || fail "job $id did not run once the GPU was free: $(corral why "$id")"

# MIG mode (never changed by Corral; the fake says so): its MIG devices in corral info, and
# the GPU given to no job whole while it lasts; out of MIG mode, the waiting job runs.
fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 util=0 mig=1 name=NVIDIA A100-SXM4-40GB" \
    "mig 0 1 0 MIG-39000000-0000-5000-8000-000000000001 10468982784 NVIDIA A100-SXM4-40GB MIG 3g.20gb"
wait_for 60 sh -c "corral info | grep -q 'MIG 3g.20gb MIG-39000000-0000-5000-8000-000000000001 (GI 1, CI 0'" \
    || fail "no MIG device in corral info: $(corral info --json | jq -c .gpu_telemetry.gpus)"
id=$(cd "$work" && as_user "$USER_A" corral submit --parsable --gpus 1 -o "$work/out" -- /bin/true)
sleep 3
assert_eq "$(corral show --json "$id" | jq -r .job.state)" PENDING "a GPU job while its GPU is in MIG mode"
assert_match "$(corral why "$id")" "in MIG mode: gpu0 \(not given whole" "corral why of a job that waits for a GPU in MIG mode"
fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 util=50 mig=0 name=NVIDIA A100-SXM4-40GB"
wait_for 60 sh -c "[ \"\$(corral show --json $id | jq -r .job.state)\" = COMPLETED ]" \
    || fail "job $id did not run once the GPU left MIG mode: $(corral why "$id")"

# GPU-hours used and efficiency: a job of bob's (no other GPU job is his) on a GPU that
# reads 60 % every time: corral usage counts held × 60 % and an efficiency of 0.6; seff
# prints the GPU lines beside CPU and memory efficiency.
gpu_usage_report() {
    local bwork bid u held used eff row out seff
    fake "gpu uuid=GPU-39 pci=00000000:3B:00.0 memory=42949672960 used=2147483648 util=60 energy=1000000 name=NVIDIA A100-SXM4-40GB"
    bwork=$(as_user "$USER_B" mktemp -d /tmp/gpuuse.XXXXXX)
    bid=$(cd "$bwork" && as_user "$USER_B" corral submit --parsable --gpus 1 --mem 256M -o "$bwork/out" -- sleep 8)
    [ -n "$bid" ] || fail "bob's GPU job was refused"
    wait_for 90 sh -c "corral show --json $bid | jq -e '.job.state == \"COMPLETED\" and .job.gpu_usage[0].running == false' >/dev/null" \
        || fail "job $bid's GPU figures not stored: $(corral show --json "$bid" | jq -c '.job.state, .job.gpu_usage')"
    u=$(corral show --json "$bid" | jq -c '.job.gpu_usage[0]')
    log "job $bid: $u"
    assert_eq "$(jq -r '.util_mean == 60 and .util_max == 60' <<<"$u")" true "a GPU that read 60 % every time"
    held=$(jq -r .held_sec <<<"$u")
    row=$(as_user "$USER_B" corral usage --by user --user "$USER_B" --json | jq -c ".rows[] | select(.key == \"$USER_B\")")
    log "usage: $row"
    used=$(jq -r .gpu_hours_used <<<"$row")
    eff=$(jq -r .gpu_efficiency <<<"$row")
    awk -v u="$used" -v h="$held" 'BEGIN { d = u - h * 0.6 / 3600; exit !(d < 1e-9 && d > -1e-9) }' \
        || fail "GPU-hours used $used, not $held s x 60 %"
    awk -v e="$eff" 'BEGIN { exit !(e > 0.6 - 1e-9 && e < 0.6 + 1e-9) }' || fail "GPU efficiency $eff, not 0.6"
    seff=$(command -v seff || echo "$CORRAL_BUILDDIR/slurm/seff")
    out=$(as_user "$USER_B" "$seff" "$bid") || fail "seff $bid: $out"
    log "$out"
    assert_match "$out" "^Job ID: $bid" "seff's job"
    assert_match "$out" "State: COMPLETED \(exit code 0\)" "seff's state"
    assert_match "$out" "CPU Efficiency: [0-9]+\.[0-9]{2}% of 00:00:[0-9]{2} core-walltime" "seff's CPU efficiency"
    assert_match "$out" "Memory Efficiency: [0-9]+\.[0-9]{2}% of 256\.00 MB" "seff's memory efficiency"
    assert_match "$out" "GPUs: 1" "seff's GPUs"
    assert_match "$out" "GPU Utilization: 60\.00% mean, 60% max" "seff's GPU utilisation"
    assert_match "$out" "GPU Memory Max: 2\.00 GB" "seff's GPU memory"
    assert_match "$out" "GPU-hours Held: [0-9]+\.[0-9]{2} \(00:00:$(printf %02d "$held") GPU-walltime\)" "seff's GPU-hours held"
    assert_match "$out" "GPU Efficiency: 60\.00% of 00:00:$(printf %02d "$held") GPU-walltime" "seff's GPU efficiency"
    out=$(as_user "$USER_A" "$seff" "$bid" 2>&1) && fail "alice read bob's job's efficiency: $out"
    out=$(as_user "$USER_B" "$seff" 999999 2>&1) && fail "seff of no job: $out"
    assert_match "$out" "Job not found" "seff of no job"
}
gpu_usage_report
