#!/usr/bin/env python3
"""Durable submissions per second through corrald's socket with C concurrent clients,
each submitting N/C held jobs one request at a time (reply = committed). Then RSS."""
import json, socket, sys, time, multiprocessing as mp

SOCK = "/run/corral/io.corral.Manager"
REQ = json.dumps({"method": "io.corral.Manager.Submit",
                  "parameters": {"argv": ["/bin/true"], "workdir": "/tmp", "cpus": 1, "hold": True}}).encode() + b"\0"

def client(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    buf = b""
    for _ in range(n):
        s.sendall(REQ)
        while b"\0" not in buf:
            buf += s.recv(65536)
        msg, buf = buf.split(b"\0", 1)
        if b"error" in msg:
            raise SystemExit(msg.decode())

def run(total, c):
    t0 = time.time()
    with mp.Pool(c) as p:
        p.map(client, [total // c] * c)
    return total / (time.time() - t0)

if __name__ == "__main__":
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for c in (1, 8):
        print(f"durable submits/s with {c} client(s): {run(total, c):.0f}")
