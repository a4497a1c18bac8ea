#!/usr/bin/env python3
"""corrald submission benchmark. Usage: bench-daemon.py rate N [PID] | fill N [begin]
rate: durable submits/s with 1 and with 8 concurrent clients (held jobs, one request at a
      time per client: a reply means the job was committed), against the raw single-row
      commit rate of SQLite on the same disk with corrald's settings. The three are
      measured in turn, ROUNDS times over (N submits or commits each time), and the
      medians of the rounds' ratios are the figures: on a shared machine the disk and the
      CPUs change speed from one minute to the next, and a ratio of figures taken minutes
      apart measures that more than corrald.
fill: submit N jobs with 8 clients (held, or with a begin time a day away so that every
      scheduling pass has to consider them), printing the rate."""
import json, os, shutil, socket, statistics, subprocess, sys, tempfile, time, multiprocessing as mp

SOCK = "/run/corral/io.corral.Manager"

def request(begin):
    p = {"argv": ["/bin/true"], "workdir": "/tmp", "cpus": 1}
    if begin:
        p["begin_time"] = int(time.time()) + 86400
    else:
        p["hold"] = True
    return json.dumps({"method": "io.corral.Manager.Submit", "parameters": p}).encode() + b"\0"

def client(n, begin, barrier, out):
    req = request(begin)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    buf = b""
    barrier.wait()
    t0 = time.monotonic()
    for _ in range(n):
        s.sendall(req)
        while b"\0" not in buf:
            buf += s.recv(65536)
        msg, buf = buf.split(b"\0", 1)
        if b'"error"' in msg:
            out.put(None)
            raise SystemExit(msg.decode())
    out.put((t0, time.monotonic()))

def run(total, c, begin=False, sample=None):
    """Submits/s of c clients, each connected and started before the clock runs: from
    the first client's first submit to the last one's last reply (the clients' own
    start-up, Python's under emulation, is not corrald's throughput). With sample, also
    what it returns at the start of that window and at its end, as (rate, start, end)."""
    barrier, out = mp.Barrier(c + 1), mp.Queue()
    procs = [mp.Process(target=client, args=(total // c, begin, barrier, out)) for _ in range(c)]
    for p in procs:
        p.start()
    barrier.wait()
    first = sample() if sample else None
    spans = [out.get() for _ in procs]
    last = sample() if sample else None
    for p in procs:
        p.join()
    if None in spans:
        raise SystemExit("a client's submit was refused")
    rate = (total // c) * c / (max(e for _, e in spans) - min(b for b, _ in spans))
    return (rate, first, last) if sample else rate

def raw_rate(n):
    """Commits/s of the sqlite3 shell: one 300-byte row per transaction, WAL and
    synchronous=FULL as corrald's store, in a new database under /var/tmp (the root disk,
    as /var/lib/corral). The floor under any durable submit on this disk."""
    sql = ["PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
           "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);"]
    sql += [f"BEGIN; INSERT INTO t (v) VALUES ('{i:0300d}'); COMMIT;" for i in range(n)]
    script = "\n".join(sql).encode()
    d = tempfile.mkdtemp(prefix="corral-raw.", dir="/var/tmp")
    try:
        t0 = time.monotonic()
        subprocess.run(["sqlite3", d + "/raw.db"], input=script, stdout=subprocess.DEVNULL, check=True)
        return n / (time.monotonic() - t0)
    finally:
        shutil.rmtree(d)

def store_syncs():
    """corrald's count of WAL syncs so far (GetInfo's store_syncs)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    s.sendall(json.dumps({"method": "io.corral.Manager.GetInfo", "parameters": {}}).encode() + b"\0")
    buf = b""
    while b"\0" not in buf:
        buf += s.recv(65536)
    s.close()
    return json.loads(buf.split(b"\0", 1)[0])["parameters"]["store_syncs"]

def busy_cpus():
    """The guest's busy CPU-seconds so far, all CPUs together (/proc/stat: all but idle
    and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")

def cpu_sec(pid):
    """A process's user+system CPU time, seconds (0 without a pid)."""
    if not pid:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

if __name__ == "__main__":
    mode, n = sys.argv[1], int(sys.argv[2])
    if mode == "rate":
        # rate N [PID [ROUNDS]]: with corrald's pid, its CPU time per submit too (stderr).
        pid = int(sys.argv[3]) if len(sys.argv) > 3 else 0
        rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
        rows = []
        cpu, busy, wall, syncs = ({1: 0.0, 8: 0.0} for _ in range(4))
        for k in range(rounds):
            raw = raw_rate(n)
            rate = {}
            for c in (1, 8):
                # corrald's and the machine's CPU over the clients' window only.
                sample = lambda: (cpu_sec(pid), busy_cpus(), time.monotonic())
                s0 = store_syncs()
                rate[c], (c0, b0, t0), (c1, b1, t1) = run(n, c, sample=sample)
                syncs[c] += store_syncs() - s0
                cpu[c] += c1 - c0
                busy[c] += b1 - b0
                wall[c] += t1 - t0
            rows.append((raw, rate[1], rate[8]))
            print(f"  round {k + 1}: raw {raw:.0f} commits/s, 1 client {rate[1]:.0f}/s "
                  f"({rate[1] / raw:.2f}x raw), 8 clients {rate[8]:.0f}/s ({rate[8] / rate[1]:.2f}x one)",
                  file=sys.stderr)
        if pid:
            for c in (1, 8):
                print(f"  with {c} client(s): corrald's CPU per submit {cpu[c] * 1000 / (n * rounds):.2f} ms, "
                      f"corrald busy {cpu[c] / wall[c]:.2f} CPUs, the machine busy {busy[c] / wall[c]:.2f} of "
                      f"{os.cpu_count()} CPUs, submits per sync {n * rounds / max(syncs[c], 1):.1f}",
                      file=sys.stderr)
        med = statistics.median
        print(f"raw single-row commits/s: {med(r[0] for r in rows):.0f}")
        print(f"durable submits/s with 1 client: {med(r[1] for r in rows):.0f}")
        print(f"durable submits/s with 8 clients: {med(r[2] for r in rows):.0f}")
        print(f"one client / raw, median of {rounds} rounds: {med(r[1] / r[0] for r in rows):.2f}")
        print(f"8 clients / one client, median of {rounds} rounds: {med(r[2] / r[1] for r in rows):.2f}")
    else:
        begin = len(sys.argv) > 3 and sys.argv[3] == "begin"
        print(f"filled {n} {'begin-time' if begin else 'held'} jobs at {run(n, 8, begin):.0f} submits/s")
