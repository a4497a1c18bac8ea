#!/usr/bin/env python3
"""corrald submission benchmark. Usage: bench-daemon.py rate N [PID] | fill N [begin]
rate: durable submits/s with 1 and with 8 concurrent clients, N jobs each run (held jobs,
      one request at a time per client: a reply means the job was committed).
fill: submit N jobs with 8 clients (held, or with a begin time a day away so that every
      scheduling pass has to consider them), printing the rate."""
import json, os, socket, sys, time, multiprocessing as mp

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

def run(total, c, begin=False):
    """Submits/s of c clients, each connected and started before the clock runs: from
    the first client's first submit to the last one's last reply (the clients' own
    start-up, Python's under emulation, is not corrald's throughput)."""
    barrier, out = mp.Barrier(c), mp.Queue()
    procs = [mp.Process(target=client, args=(total // c, begin, barrier, out)) for _ in range(c)]
    for p in procs:
        p.start()
    spans = [out.get() for _ in procs]
    for p in procs:
        p.join()
    if None in spans:
        raise SystemExit("a client's submit was refused")
    return (total // c) * c / (max(e for _, e in spans) - min(b for b, _ in spans))

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
        # rate N [PID]: with corrald's pid, its CPU time per submit too (stderr).
        pid = int(sys.argv[3]) if len(sys.argv) > 3 else 0
        for c in (1, 8):
            c0 = cpu_sec(pid)
            rate = run(n, c)
            if pid:
                print(f"  corrald's CPU per submit with {c} client(s): {(cpu_sec(pid) - c0) * 1000 / n:.2f} ms",
                      file=sys.stderr)
            print(f"durable submits/s with {c} client(s): {rate:.0f}")
    else:
        begin = len(sys.argv) > 3 and sys.argv[3] == "begin"
        print(f"filled {n} {'begin-time' if begin else 'held'} jobs at {run(n, 8, begin):.0f} submits/s")
