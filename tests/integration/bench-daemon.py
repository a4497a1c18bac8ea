#!/usr/bin/env python3
"""corrald submission benchmark. Usage: bench-daemon.py rate N [PID] | fill N [begin]
rate: durable submits/s with 1 and with 8 concurrent clients (held jobs, one request at a
      time per client: a reply means the job was committed), against the raw single-row
      commit rate of SQLite on the same disk with corrald's settings. Each round measures
      them in a palindrome, raw, 1 client, 8 clients, 1 client, raw (N/2 submits or
      commits for each half, N for the middle), so that what is compared is centred on
      the same moment; the medians of the ROUNDS rounds' ratios are the figures. On a
      shared machine the disk and the CPUs change speed from one second to the next: a
      ratio of figures taken one after the other measures that drift as much as corrald.
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

def raw_secs(n):
    """Seconds the sqlite3 shell takes for n commits of one 300-byte row each, WAL and
    synchronous=FULL as corrald's store, in a new database under /var/tmp (the root disk,
    as /var/lib/corral). The floor under any durable submit on this disk. Timed by the
    shell itself, from before the first commit to after the last: its start-up is not a
    commit's."""
    sql = ["PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
           "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);",
           "SELECT julianday('now') * 86400;"]
    sql += [f"BEGIN; INSERT INTO t (v) VALUES ('{i:0300d}'); COMMIT;" for i in range(n)]
    sql += ["SELECT julianday('now') * 86400;"]
    script = "\n".join(sql).encode()
    d = tempfile.mkdtemp(prefix="corral-raw.", dir="/var/tmp")
    try:
        out = subprocess.run(["sqlite3", d + "/raw.db"], input=script, capture_output=True, check=True).stdout
        t = [float(x) for x in out.split()[-2:]]
        return t[1] - t[0]
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
        sample = lambda: (cpu_sec(pid), busy_cpus(), time.monotonic())
        for k in range(rounds):
            secs = {0: 0.0, 1: 0.0, 8: 0.0}  # each side's time over the round
            for c in (0, 1, 8, 1, 0):
                part = n if c == 8 else n // 2
                if c == 0:
                    secs[0] += raw_secs(part)
                    continue
                # corrald's and the machine's CPU over the clients' window only.
                s0 = store_syncs()
                r, (c0, b0, t0), (c1, b1, t1) = run(part, c, sample=sample)
                syncs[c] += store_syncs() - s0
                secs[c] += (part // c) * c / r
                cpu[c] += c1 - c0
                busy[c] += b1 - b0
                wall[c] += t1 - t0
            raw, one, eight = (n // 2) * 2 / secs[0], (n // 2) * 2 / secs[1], n // 8 * 8 / secs[8]
            rows.append((raw, one, eight))
            print(f"  round {k + 1}: raw {raw:.0f} commits/s, 1 client {one:.0f}/s "
                  f"({one / raw:.2f}x raw), 8 clients {eight:.0f}/s ({eight / one:.2f}x one)",
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
