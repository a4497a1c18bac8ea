#!/bin/bash
# Slurm's shards on one fake NVIDIA GPU (a real character node of major 195 that no driver
# serves, as in 38-gpu: ENXIO where the fence allows, EPERM where it denies) declared with
# Shards=2: two --gres=shard:1 jobs run at once on it, both with its CUDA_VISIBLE_DEVICES and
# SLURM_SHARDS_ON_NODE, both opening its node (ENXIO, not EPERM); a whole-GPU job waits, and
# corral why names the shard jobs it waits for; a restart keeps the shards counted; once the
# shard jobs end the whole-GPU job gets the GPU.
# timeout: 600
. "$CORRAL_TEST_LIB"
dropin=/etc/corral/corral.conf.d/37-gpu-shards.conf
client=$(dirname "$0")/proto-client.py
sock=/run/corral/io.corral.Manager
cleanup() {
    corral cancel -u "$USER_A" >/dev/null 2>&1 || true
    rm -f "$dropin" /dev/nvidia0 /dev/nvidiactl
    corral reload >/dev/null 2>&1 || true
}
trap cleanup EXIT
systemctl start corrald.socket

rm -f /dev/nvidia0 /dev/nvidiactl
mknod -m 0666 /dev/nvidia0 c 195 0
mknod -m 0666 /dev/nvidiactl c 195 255
grep -qE '^ *195 ' /proc/devices && skip "a driver serves major 195 here: the fake GPU would be real"
mkdir -p /etc/corral/corral.conf.d
printf '[Device]\nName=gpu0\nVendor=nvidia\nNodes=/dev/nvidia0\nNumaNode=0\nModel=NVIDIA A100-SXM4-40GB\nShards=2\n' \
    > "$dropin"
corral reload
assert_eq "$(corral info --json | jq -r '.devices[0].shards')" 2 "gpu0's shards in corral info"

work=$(as_user "$USER_A" mktemp -d /tmp/shards.XXXXXX)
cat > /tmp/shard-probe.py <<'EOF'
import errno, os
for p in ("/dev/nvidia0", "/dev/nvidiactl"):
    try:
        os.close(os.open(p, os.O_RDWR))
        print(p, "OK")
    except OSError as e:
        print(p, errno.errorcode.get(e.errno, e.errno))
for k in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS", "SLURM_SHARDS_ON_NODE"):
    print("env", k, os.environ.get(k, "-"))
print("done", flush=True)
EOF
chmod 0644 /tmp/shard-probe.py
hold='["sh","-c","python3 /tmp/shard-probe.py; sleep 300"]'
submit() { # EXTRA-JSON-MEMBERS -> id
    as_user "$USER_A" python3 "$client" "$sock" <<<"{\"method\":\"io.corral.Manager.Submit\",\"parameters\":{\"argv\":$hold,\"workdir\":\"$work\",\"stdout_path\":\"job-%j.out\",\"cpus\":1,\"walltime_sec\":600,\"env\":[\"CUDA_VISIBLE_DEVICES=3\",\"PATH=/usr/bin:/bin\"]$1}}" \
        | jq -r '.parameters.job_id // empty'
}
state() { corral show --json "$1" | jq -r .job.state; }
ended() { case "$(state "$1")" in COMPLETED|FAILED|CANCELLED|TIMEOUT|OUT_OF_MEMORY|NODE_FAIL) return 0;; esac; return 1; }
line() { awk -v k="$2" 'index($0, k " ") == 1 { print substr($0, length(k) + 2); exit }' "$work/job-$1.out"; }
probed() { wait_for 120 grep -q '^done' "$work/job-$1.out" || fail "job $1 did not run its probe: $(state "$1")"; }

# More shards than the GPU has: refused with the numbers, before anything is queued.
out=$(as_user "$USER_A" corral submit --test-only --gres=shard:3 -- true 2>&1 || true)
assert_match "$out" 'shard:3: a GPU here has at most 2 shards' "--test-only with too many shards"

a=$(submit ',"shards":1')
b=$(submit ',"shards":1')
[ -n "$a" ] && [ -n "$b" ] || fail "the shard jobs were refused"
probed "$a"
probed "$b"
assert_eq "$(state "$a"),$(state "$b")" RUNNING,RUNNING "two shard:1 jobs on a GPU of 2 shards, at once"
for j in "$a" "$b"; do
    log "shard job $j: $(tr '\n' ';' < "$work/job-$j.out")"
    assert_eq "$(line "$j" /dev/nvidia0)" ENXIO "shard job $j opening the shared GPU's node"
    assert_eq "$(line "$j" /dev/nvidiactl)" ENXIO "shard job $j opening nvidiactl"
    assert_eq "$(line "$j" 'env CUDA_VISIBLE_DEVICES')" 0 "shard job $j's CUDA_VISIBLE_DEVICES"
    assert_eq "$(line "$j" 'env SLURM_JOB_GPUS')" 0 "shard job $j's SLURM_JOB_GPUS"
    assert_eq "$(line "$j" 'env SLURM_SHARDS_ON_NODE')" 1 "shard job $j's SLURM_SHARDS_ON_NODE"
done
info=$(corral info)
log "corral info: $(echo "$info" | grep gpu0)"
assert_match "$info" "2/2 shards: $a \\($USER_A, 1\\), $b \\($USER_A, 1\\)" "corral info lists the GPU's shard holders"
if command -v squeue >/dev/null; then
    assert_eq "$(squeue -h -j "$a" -o %b)" gres/shard:1 "squeue %b of a shard job"
    assert_match "$(sinfo -h -o %G)" '^gpu:[^,]*:1,shard:2$' "sinfo %G"
fi

# A whole-GPU job waits for the shard jobs, and corral why says so.
w=$(submit ',"gpus":1')
[ -n "$w" ] || fail "the whole-GPU job was refused"
wait_for 30 sh -c "corral show --json $w | jq -e '.job.reason != null' >/dev/null" || fail "job $w has no reason"
sleep 2
assert_eq "$(state "$w")" PENDING "a whole-GPU job while the GPU's shards are in use"
why=$(as_user "$USER_A" corral why "$w")
log "corral why $w: $why"
assert_match "$why" "waits for 1 GPUs: 0 of 1 free; held by jobs $a \\(shards\\), $b \\(shards\\)" \
    "corral why names the shard jobs"

# A restart: both still hold their shard, counted as such.
systemctl restart corrald
wait_for 60 corral info >/dev/null 2>&1 || fail "corrald did not come back"
assert_eq "$(state "$a"),$(state "$b"),$(state "$w")" RUNNING,RUNNING,PENDING "the jobs after the restart"
assert_eq "$(corral info --json | jq -r '.devices[0].shards_used')" 2 "the shards in use after the restart"

corral cancel "$a"
sleep 3
assert_eq "$(state "$w")" PENDING "the whole-GPU job while one shard job still runs"
corral cancel "$b"
wait_for 120 sh -c "[ \"\$(corral show --json $w | jq -r .job.state)\" = RUNNING ]" \
    || fail "job $w did not start once the shard jobs ended: $(state "$w")"
probed "$w"
assert_eq "$(line "$w" /dev/nvidia0)" ENXIO "the whole-GPU job opening the GPU"
assert_eq "$(line "$w" 'env SLURM_SHARDS_ON_NODE')" - "a whole-GPU job has no SLURM_SHARDS_ON_NODE"
corral cancel "$w"
