#!/bin/bash
# The device fence, with 4 fake NVIDIA GPUs declared in [Device] sections and backed by real
# character nodes (major 195, minors 0-3, nvidiactl 195:255) on the two NUMA nodes. No driver
# serves major 195, so opening a node the fence allows fails with ENXIO and one it denies with
# EPERM (the device cgroup's BPF program answers before the driver lookup): a job given gpu1
# gets EPERM on /dev/nvidia0 and ENXIO on its own; a CPU job gets EPERM on every GPU node;
# ptys, /dev/null and /dev/fuse open as they do outside a job; two 2-GPU jobs run side by
# side on disjoint GPUs, keep them through a restart, and a 3-GPU job waits for GPUs while a
# CPU is free; the environment numbers the job's GPUs as CUDA will see them inside the fence
# (0..n-1) and carries the machine's indexes in SLURM_JOB_GPUS and CORRAL_GPUS.
# Then discovered cards, a fake NVIDIA driver's procfs (a tmpfs over /proc/driver) naming
# them by UUID and PCI address: one appears first in PCI order, then the card a job runs on
# vanishes; through reloads and a restart no GPU is ever held by two jobs, no job opens a
# card it was not given (the vanished card's node, still in /dev, included), each card keeps
# its index, and the card coming back is still the job's.
# timeout: 900
. "$CORRAL_TEST_LIB"
dropin=/etc/corral/corral.conf.d/38-gpu.conf
client=$(dirname "$0")/proto-client.py
sock=/run/corral/io.corral.Manager
cleanup() {
    corral cancel -u "$USER_A" >/dev/null 2>&1 || true
    rm -f "$dropin" /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3 /dev/nvidiactl
    rm -f /dev/nvidia4 /dev/nvidia5 /dev/nvidia6 /dev/nvidia7
    umount /proc/driver 2>/dev/null || true
    corral reload >/dev/null 2>&1 || true
}
trap cleanup EXIT
systemctl start corrald.socket

for i in 0 1 2 3; do
    rm -f /dev/nvidia$i
    mknod -m 0666 /dev/nvidia$i c 195 $i
done
rm -f /dev/nvidiactl
mknod -m 0666 /dev/nvidiactl c 195 255
grep -qE '^ *195 ' /proc/devices && skip "a driver serves major 195 here: the fake GPUs would be real"

mkdir -p /etc/corral/corral.conf.d
{
    for i in 0 1 2 3; do
        printf '[Device]\nName=gpu%s\nVendor=nvidia\nNodes=/dev/nvidia%s\nNumaNode=%s\nModel=NVIDIA A100-SXM4-40GB\n\n' \
            "$i" "$i" $((i / 2))
    done
} > "$dropin"
corral reload
journalctl -u corrald --since -1min --no-pager | grep -q '4 devices scheduled' \
    || fail "corrald did not log the 4 declared devices: $(journalctl -u corrald --since -1min --no-pager | tail -5)"

work=$(as_user "$USER_A" mktemp -d /tmp/gpu.XXXXXX)
cat > /tmp/gpu-probe.py <<'EOF'
import errno, os, pty, sys
for p in sys.argv[1:]:
    try:
        os.close(os.open(p, os.O_RDWR))
        print(p, "OK")
    except OSError as e:
        print(p, errno.errorcode.get(e.errno, e.errno))
m, s = pty.openpty()
os.write(m, b"x\n")
print("pty", os.ttyname(s), os.read(s, 2) == b"x\n")
for k in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "SLURM_JOB_GPUS",
          "SLURM_GPUS_ON_NODE", "CORRAL_GPUS"):
    print("env", k, os.environ.get(k, "-"))
EOF
chmod 0644 /tmp/gpu-probe.py
nodes="/dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3 /dev/nvidiactl /dev/null /dev/fuse"
outside=$(as_user "$USER_A" python3 /tmp/gpu-probe.py $nodes)
log "outside a job: $(echo "$outside" | tr '\n' ';')"
assert_match "$outside" '/dev/nvidia0 ENXIO' "the fake node without a fence (no driver: ENXIO)"

json_argv() { printf '"python3","/tmp/gpu-probe.py"'; for n in $nodes; do printf ',"%s"' "$n"; done; }
submit() { # EXTRA-JSON-MEMBERS [SCRIPT-ARGV-JSON] -> id
    local argv=${2:-[$(json_argv)]}
    as_user "$USER_A" python3 "$client" "$sock" <<<"{\"method\":\"io.corral.Manager.Submit\",\"parameters\":{\"argv\":$argv,\"workdir\":\"$work\",\"stdout_path\":\"job-%j.out\",\"cpus\":1,\"walltime_sec\":600,\"env\":[\"CUDA_VISIBLE_DEVICES=3\",\"PATH=/usr/bin:/bin\"]$1}}" \
        | jq -r '.parameters.job_id // empty'
}
state() { corral show --json "$1" | jq -r .job.state; }
ended() { case "$(state "$1")" in COMPLETED|FAILED|CANCELLED|TIMEOUT|OUT_OF_MEMORY|NODE_FAIL) return 0;; esac; return 1; }
result() { # ID -> the probe's output
    wait_for 120 ended "$1" || fail "job $1 still $(state "$1") after 120 s"
    assert_eq "$(state "$1")" COMPLETED "job $1's probe"
    cat "$work/job-$1.out"
}
line() { printf '%s\n' "$1" | awk -v k="$2" 'index($0, k " ") == 1 { print substr($0, length(k) + 2); exit }'; }

# A CPU job: every GPU node is denied, the rest opens as outside, the submitter's
# CUDA_VISIBLE_DEVICES is dropped (it named a GPU of the shell it came from).
cpu=$(submit "")
[ -n "$cpu" ] || fail "the CPU job was refused"
out=$(result "$cpu")
log "CPU job $cpu: $(echo "$out" | tr '\n' ';')"
for n in /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3 /dev/nvidiactl; do
    assert_eq "$(line "$out" "$n")" EPERM "a CPU job opening $n"
done
assert_eq "$(line "$out" /dev/null)" OK "a CPU job opening /dev/null"
assert_eq "$(line "$out" /dev/fuse)" "$(line "$outside" /dev/fuse)" "a CPU job opening /dev/fuse, as outside"
assert_match "$(line "$out" pty)" '^/dev/pts/[0-9]+ True$' "a CPU job's pty"
assert_eq "$(line "$out" 'env CUDA_VISIBLE_DEVICES')" - "a CPU job's CUDA_VISIBLE_DEVICES"
assert_eq "$(line "$out" 'env CORRAL_GPUS')" - "a CPU job's CORRAL_GPUS"

# A job given gpu1 (by type: its name): its own node and nvidiactl reach the (absent)
# driver, the other GPUs are denied.
one=$(submit ',"gpus":1,"gpu_type":"gpu1"')
[ -n "$one" ] || fail "the 1-GPU job was refused"
out=$(result "$one")
log "gpu1 job $one: $(echo "$out" | tr '\n' ';')"
assert_eq "$(line "$out" /dev/nvidia1)" ENXIO "the job given gpu1 opening its own /dev/nvidia1"
assert_eq "$(line "$out" /dev/nvidiactl)" ENXIO "the job given gpu1 opening the shared /dev/nvidiactl"
for n in /dev/nvidia0 /dev/nvidia2 /dev/nvidia3; do
    assert_eq "$(line "$out" "$n")" EPERM "the job given gpu1 opening $n"
done
assert_eq "$(line "$out" /dev/null)" OK "a GPU job opening /dev/null"
assert_eq "$(line "$out" /dev/fuse)" "$(line "$outside" /dev/fuse)" "a GPU job opening /dev/fuse"
assert_match "$(line "$out" pty)" '^/dev/pts/[0-9]+ True$' "a GPU job's pty"
assert_eq "$(line "$out" 'env CUDA_VISIBLE_DEVICES')" 0 "CUDA_VISIBLE_DEVICES inside the fence"
assert_eq "$(line "$out" 'env GPU_DEVICE_ORDINAL')" 0 "GPU_DEVICE_ORDINAL"
assert_eq "$(line "$out" 'env SLURM_JOB_GPUS')" 1 "SLURM_JOB_GPUS: the machine's index"
assert_eq "$(line "$out" 'env CORRAL_GPUS')" 1 "CORRAL_GPUS"
assert_eq "$(line "$out" 'env SLURM_GPUS_ON_NODE')" 1 "SLURM_GPUS_ON_NODE"
assert_eq "$(line "$out" 'env ROCR_VISIBLE_DEVICES')" - "no ROCm variable for an NVIDIA GPU"

# Two 2-GPU jobs side by side on disjoint GPUs; with one ended, a 3-GPU job waits for GPUs
# although a CPU is free, and corral why says GPUs.
hold='["sh","-c","python3 /tmp/gpu-probe.py /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3; sleep 300"]'
a=$(submit ',"gpus":2' "$hold")
b=$(submit ',"gpus":2' "$hold")
wait_for 120 sh -c "[ \"\$(corral show --json $a | jq -r .job.state)\" = RUNNING ] && [ \"\$(corral show --json $b | jq -r .job.state)\" = RUNNING ]" \
    || fail "two 2-GPU jobs do not run side by side: $a $(state "$a"), $b $(state "$b")"
wait_for 30 sh -c "grep -q CORRAL_GPUS $work/job-$a.out && grep -q CORRAL_GPUS $work/job-$b.out" || fail "no probe output"
ga=$(line "$(cat "$work/job-$a.out")" 'env CORRAL_GPUS')
gb=$(line "$(cat "$work/job-$b.out")" 'env CORRAL_GPUS')
log "job $a holds GPUs $ga, job $b holds GPUs $gb"
assert_eq "$(line "$(cat "$work/job-$a.out")" 'env CUDA_VISIBLE_DEVICES')" 0,1 "a 2-GPU job's CUDA_VISIBLE_DEVICES"
assert_eq "$(line "$(cat "$work/job-$a.out")" 'env SLURM_GPUS_ON_NODE')" 2 "a 2-GPU job's SLURM_GPUS_ON_NODE"
assert_eq "$(printf '%s\n%s\n' "${ga//,/$'\n'}" "${gb//,/$'\n'}" | sort -u | tr '\n' ' ')" "0 1 2 3 " \
    "the two jobs' GPUs are disjoint and cover the 4"
# Each opens exactly its own two: ENXIO there, EPERM elsewhere.
for g in 0 1 2 3; do
    want=EPERM
    case ",$ga," in *",$g,"*) want=ENXIO;; esac
    assert_eq "$(line "$(cat "$work/job-$a.out")" /dev/nvidia$g)" "$want" "job $a (GPUs $ga) opening /dev/nvidia$g"
done
# A restart keeps each running job's GPUs: stored by name with the allocation.
names() { local n="" g; for g in ${1//,/ }; do n="$n${n:+,}gpu$g"; done; echo "$n"; }
assert_eq "$(sqlite3 /var/lib/corral/corral.db "select alloc_gpus from jobs where id=$a")" "$(names "$ga")" \
    "job $a's GPUs in the store"
systemctl restart corrald
wait_for 60 corral info >/dev/null 2>&1 || fail "corrald did not come back"
assert_eq "$(state "$a")" RUNNING "job $a after the restart"
corral cancel "$b"
wait_for 60 ended "$b" || fail "job $b did not end"
c=$(submit ',"gpus":3' "$hold")
[ -n "$c" ] || fail "the 3-GPU job was refused"
wait_for 30 sh -c "corral show --json $c | jq -e '.job.reason != null' >/dev/null" || fail "job $c has no reason"
sleep 2
assert_eq "$(state "$c")" PENDING "a 3-GPU job while 2 of 4 GPUs are held"
why=$(as_user "$USER_A" corral why "$c")
log "corral why $c: $why"
assert_match "$why" '[Gg][Pp][Uu]' "corral why names GPUs"
corral cancel "$a"
wait_for 120 sh -c "[ \"\$(corral show --json $c | jq -r .job.state)\" = RUNNING ]" \
    || fail "job $c did not start once job $a freed its GPUs: $(state "$c")"
corral cancel "$c"
wait_for 60 ended "$c" || fail "job $c did not end"

# ---- Discovered cards: one comes first in PCI order, one vanishes under a running job ----
rm -f "$dropin"
mount -t tmpfs -o mode=0555 corral-fake-driver /proc/driver || skip "cannot mount over /proc/driver"
uuid() { printf 'GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a%02d' "$1"; }
card() { # I PCI MINOR: a card of UUID I at PCI with node /dev/nvidiaMINOR
    mkdir -p "/proc/driver/nvidia/gpus/$2"
    printf 'Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:   \t\t 150\nGPU UUID: \t %s\nBus Type: \t PCIe\nBus Location: \t %s\nDevice Minor: \t %s\nGPU Excluded:\t No\n' \
        "$(uuid "$1")" "$2" "$3" > "/proc/driver/nvidia/gpus/$2/information"
    [ -e "/dev/nvidia$3" ] || mknod -m 0666 "/dev/nvidia$3" c 195 "$3"
}
card 0 0000:01:00.0 4
card 1 0000:02:00.0 5
card 2 0000:03:00.0 6
corral reload
devices() { corral info --json | jq -c '[.devices[] | [.index, .name, .pci_address, .offline, .job_id]]'; }
index_of() { corral info --json | jq -r --arg p "$1" '.devices[] | select(.pci_address == $p) | .index'; }
name_of() { corral info --json | jq -r --arg p "$1" '.devices[] | select(.pci_address == $p) | .name'; }
holder_of() { corral info --json | jq -r --argjson i "$1" '.devices[] | select(.index == $i) | .job_id'; }
ia=$(index_of 0000:01:00.0) ib=$(index_of 0000:02:00.0) ic=$(index_of 0000:03:00.0)
log "discovered: $(devices)"
[ -n "$ia" ] && [ -n "$ib" ] && [ -n "$ic" ] || fail "the 3 discovered cards are not all listed"
assert_eq "$(corral info --json | jq -r .gpus)" 3 "schedulable GPUs: the 3 discovered (the declared 4 are gone)"

# No GPU held by two running jobs: each running job's stored GPUs, every one once.
no_double() {
    local dup
    dup=$(sqlite3 /var/lib/corral/corral.db "select alloc_gpus from jobs where state in ('RUNNING','SUSPENDED') and alloc_gpus is not null" \
        | tr ',' '\n' | sort | uniq -d)
    [ -z "$dup" ] || fail "$1: GPU $dup is held by two jobs"
}
probe4='["sh","-c","python3 /tmp/gpu-probe.py /dev/nvidia4 /dev/nvidia5 /dev/nvidia6 /dev/nvidia7; sleep 300"]'
started() { wait_for 120 sh -c "grep -q CORRAL_GPUS $work/job-$1.out" || fail "job $1 did not start: $(state "$1")"; }
j1=$(submit ",\"gpus\":1,\"gpu_type\":\"$(name_of 0000:01:00.0)\"" "$probe4")
started "$j1"
assert_eq "$(line "$(cat "$work/job-$j1.out")" 'env CORRAL_GPUS')" "$ia" "job $j1 holds the first card"
assert_eq "$(line "$(cat "$work/job-$j1.out")" /dev/nvidia4)" ENXIO "job $j1 opening its own card"
assert_eq "$(line "$(cat "$work/job-$j1.out")" /dev/nvidia5)" EPERM "job $j1 opening another card"

# A card appears before the others in PCI order: every card keeps its index, and a 3-GPU
# job gets the three free ones, never job $j1's.
card 3 0000:00:05.0 7
corral reload
log "a card came first: $(devices)"
iz=$(index_of 0000:00:05.0)
j2=$(submit ',"gpus":3' "$probe4")
started "$j2"
out2=$(cat "$work/job-$j2.out")
log "job $j2: $(echo "$out2" | tr '\n' ';')"
assert_eq "$(line "$out2" /dev/nvidia4)" EPERM "job $j2 opening job $j1's card"
for n in 5 6 7; do assert_eq "$(line "$out2" /dev/nvidia$n)" ENXIO "job $j2 opening its own /dev/nvidia$n"; done
assert_eq "$(index_of 0000:01:00.0),$(index_of 0000:02:00.0),$(index_of 0000:03:00.0)" "$ia,$ib,$ic" \
    "the cards keep their indexes when one comes first in PCI order"
assert_eq "$(holder_of "$ia")" "$j1" "job $j1's card after the new one came"
assert_eq "$(sqlite3 /var/lib/corral/corral.db "select alloc_gpus from jobs where id=$j1")" "$(uuid 0)" \
    "job $j1's GPU stored by its UUID"
assert_eq "$(line "$out2" 'env CORRAL_GPUS')" "$(printf '%s\n' "$ib" "$ic" "$iz" | sort -n | paste -sd,)" "job $j2's GPUs"
no_double "after a card came first"
corral cancel "$j2"
wait_for 60 ended "$j2" || fail "job $j2 did not end"

# The first card falls off the bus (its node stays), then a reload.
rm -r /proc/driver/nvidia/gpus/0000:01:00.0
corral reload
log "after the card left: $(devices)"
# A CPU job (on the guest's other CPU) opens no card, the vanished one's node included.
cpu2=$(submit "" '["python3","/tmp/gpu-probe.py","/dev/nvidia4","/dev/nvidia5"]')
out=$(result "$cpu2")
assert_eq "$(line "$out" /dev/nvidia4)" EPERM "a CPU job opening the vanished card's node"
assert_eq "$(line "$out" /dev/nvidia5)" EPERM "a CPU job opening a card's node"
assert_eq "$(index_of 0000:02:00.0),$(index_of 0000:03:00.0),$(index_of 0000:00:05.0)" "$ib,$ic,$iz" \
    "the other cards keep their indexes"
assert_eq "$(holder_of "$ia")" "$j1" "the gone card is still job $j1's"
assert_match "$(corral info --json | jq -r --argjson i "$ia" '.devices[] | select(.index == $i) | .offline')" gone \
    "the card is listed as gone"
for i in 0 1 2 3; do assert_eq "$(holder_of "$i")" null "declared gpu$i, gone, held by no running job"; done
assert_eq "$(state "$j1")" RUNNING "job $j1 after its card left"
# A 3-GPU job gets the three cards there, never the gone one; a 1-GPU job then waits for
# GPUs (and, on the guest's 2 CPUs, for a CPU: corral why says both).
j3=$(submit ',"gpus":3' "$probe4")
started "$j3"
out3=$(cat "$work/job-$j3.out")
assert_eq "$(line "$out3" /dev/nvidia4)" EPERM "job $j3 opening the vanished card's node"
assert_eq "$(line "$out3" 'env CORRAL_GPUS')" "$(printf '%s\n' "$ib" "$ic" "$iz" | sort -n | paste -sd,)" "job $j3's GPUs"
no_double "after the card left"
j4=$(submit ',"gpus":1' "$probe4")
gpus_free() { # ID COUNT: corral why says the job waits for GPUs, none of COUNT free
    local why
    wait_for 30 sh -c "corral show --json $1 | jq -e '.job.reason != null' >/dev/null" || true
    why=$(corral why "$1")
    log "corral why $1: $(echo "$why" | grep -i gpu | tr '\n' ';')"
    assert_match "$why" "waits for 1 GPUs: 0 of $2 free" "job $1 waits for GPUs, none free"
}
sleep 3
assert_eq "$(state "$j4")" PENDING "a 1-GPU job while every card is held or gone"
gpus_free "$j4" 3

# A restart: each job keeps its cards, the gone one stays job $j1's.
systemctl restart corrald
wait_for 60 corral info >/dev/null 2>&1 || fail "corrald did not come back"
log "after the restart: $(devices)"
assert_eq "$(state "$j1"),$(state "$j3"),$(state "$j4")" RUNNING,RUNNING,PENDING "the jobs after the restart"
assert_eq "$(index_of 0000:02:00.0),$(index_of 0000:03:00.0),$(index_of 0000:00:05.0)" "$ib,$ic,$iz" \
    "the cards' indexes after the restart"
assert_eq "$(holder_of "$ia")" "$j1" "the gone card is job $j1's after the restart"
no_double "after the restart"
gpus_free "$j4" 3

# The card comes back: its own index, still job $j1's; job $j4 gets it once job $j1 ends.
card 0 0000:01:00.0 4
corral reload
log "the card came back: $(devices)"
assert_eq "$(index_of 0000:01:00.0)" "$ia" "the card back at its index"
assert_eq "$(holder_of "$ia")" "$j1" "the card that came back is still job $j1's"
sleep 3
assert_eq "$(state "$j4")" PENDING "a 1-GPU job while the card that came back is job $j1's"
gpus_free "$j4" 4
no_double "after the card came back"
corral cancel "$j1"
started "$j4"
assert_eq "$(line "$(cat "$work/job-$j4.out")" 'env CORRAL_GPUS')" "$ia" "job $j4 on the card that came back"
no_double "at the end"
corral cancel "$j3"
corral cancel "$j4"
