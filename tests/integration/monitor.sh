#!/bin/bash
# Samples, every 2 s until killed, what tells a slow machine from a slow corrald: how
# late the sample woke (a guest whose host stalls it wakes late), the CPU and I/O
# pressure, and corrald's pid, state, kernel wait channel and CPU ticks (1/100 s). While
# the CPUs are contended (cpu_some, the share of time something waited for one, over
# 30 % in the last 10 s), also the two processes that took the most ticks since the
# sample before. One line per sample on stdout. Bash builtins only, no subshells: under
# emulation each process costs milliseconds of CPU, which would load what it measures.
# Usage: monitor.sh > FILE &
set -u
exec 3<> <(:) # a pipe nobody writes: `read -t` on it sleeps without a process
interval=2
procs=/sys/fs/cgroup/system.slice/corrald.service/cgroup.procs
declare -A last_ticks=()

# Sets top to the two processes that took the most CPU since the last scan; the first
# scan of a contended stretch only records.
top_processes() {
    local f pid t d best1=0 best2=0 name1=- name2=-
    local -a g
    declare -A seen=()
    for f in /proc/[0-9]*/stat; do
        read -r -a g 2>/dev/null <"$f" || continue
        # pid (comm) state ppid ... utime stime: fields 14 and 15 when comm has no space
        pid=${g[0]} t=$(( ${g[13]:-0} + ${g[14]:-0} ))
        d=$(( t - ${last_ticks[$pid]:-0} ))
        seen[$pid]=$t
        if [ "$d" -gt "$best1" ]; then
            best2=$best1 name2=$name1 best1=$d name1="${g[1]:1:-1}:$pid"
        elif [ "$d" -gt "$best2" ]; then
            best2=$d name2="${g[1]:1:-1}:$pid"
        fi
    done
    if [ ${#last_ticks[@]} = 0 ]; then top=" top=(first-scan)"; else top=" top=$name1=$best1,$name2=$best2"; fi
    last_ticks=()
    for pid in "${!seen[@]}"; do last_ticks[$pid]=${seen[$pid]}; done
}

prev=${EPOCHREALTIME/./}
while :; do
    read -r -t "$interval" -u 3 _
    now=${EPOCHREALTIME/./}
    late=$(( (now - prev) / 1000 - interval * 1000 ))
    prev=$now
    load=- cpu=- io=- pid= state=- ticks=- wchan=- top=
    read -r load _ 2>/dev/null </proc/loadavg
    read -r _ cpu _ 2>/dev/null </proc/pressure/cpu && cpu=${cpu#avg10=}
    read -r _ io _ 2>/dev/null </proc/pressure/io && io=${io#avg10=}
    read -r pid 2>/dev/null <"$procs"
    if [ -n "$pid" ] && read -r stat 2>/dev/null <"/proc/$pid/stat"; then
        read -r -a f <<<"${stat##*) }"
        state=${f[0]} ticks=$(( f[11] + f[12] ))
        read -r wchan 2>/dev/null <"/proc/$pid/wchan"
    fi
    if [ "${cpu%%.*}" != - ] && [ "${cpu%%.*}" -ge 30 ]; then
        top_processes
    else
        last_ticks=()
    fi
    printf '%s late_ms=%d load=%s cpu_some=%s io_some=%s corrald=%s %s ticks=%s wchan=%s%s\n' \
        "${now:0:10}" "$late" "$load" "$cpu" "$io" "${pid:--}" "$state" "$ticks" "${wchan:--}" "$top"
done
