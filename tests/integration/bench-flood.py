#!/usr/bin/env python3
"""A hostile client of corrald for bench/flood. Usage:
  bench-flood.py flood SECONDS NORMAL ONEWAY
      Floods corrald with List requests (all jobs, first page) from NORMAL connections
      that keep 4 requests in flight each and read every reply, and from ONEWAY
      connections that send "oneway" List requests as fast as the socket takes them and
      never read. Stops on SIGTERM or after SECONDS, whichever comes first, and prints
      what it got.
  bench-flood.py probe SECONDS [USER]
      A GetInfo round trip every 50 ms, until SIGTERM or SECONDS: prints p50, p99 and
      the slowest, which is how long corrald's event loop kept a trivial call waiting.
      With USER, a List of USER's jobs instead (every page: corral queue --me's request).
  bench-flood.py heavy SECONDS CONNS
      Floods corrald with its heaviest requests, a Usage report by day and a List of
      all jobs in turn, 4 in flight on each of CONNS connections, every reply read,
      until SIGTERM or SECONDS (bench/bill).
  bench-flood.py cancel FIRST LAST
      Cancels jobs FIRST..LAST with oneway Cancel requests on one connection, then waits
      for a GetInfo's reply (requests of a connection are handled in order)."""
import json, os, selectors, signal, socket, sys, time

SOCK = "/run/corral/io.corral.Manager"
WINDOW = 4


def msg(method, params=None, oneway=False):
    m = {"method": "io.corral.Manager." + method, "parameters": params or {}}
    if oneway:
        m["oneway"] = True
    return json.dumps(m).encode() + b"\0"


def connect(blocking=False):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    s.setblocking(blocking)
    return s


def flood(seconds, n_normal, n_oneway, heavy=False):
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    sel = selectors.DefaultSelector()
    req, oneway_chunk = msg("List"), msg("List", oneway=True) * 64
    if heavy:
        req = msg("Usage", {"by": "day"}) + msg("List")
    stats = {"replies": 0, "errors": 0, "oneway_bytes": 0, "refused": 0, "dropped": 0}
    normal = {}
    for _ in range(n_normal):
        s = connect()
        normal[s] = {"buf": b"", "inflight": 0, "out": b""}
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, "normal")
    oneway = []
    for _ in range(n_oneway):
        s = connect()
        oneway.append(s)
        sel.register(s, selectors.EVENT_WRITE, "oneway")
    t0 = time.monotonic()
    while not stop[0] and time.monotonic() - t0 < seconds:
        for key, ev in sel.select(timeout=0.2):
            s = key.fileobj
            if key.data == "oneway":
                try:
                    stats["oneway_bytes"] += s.send(oneway_chunk)
                except BlockingIOError:
                    pass
                except OSError:
                    sel.unregister(s)
                    stats["dropped"] += 1
                continue
            c = normal[s]
            if ev & selectors.EVENT_READ:
                try:
                    data = s.recv(1 << 20)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    sel.unregister(s)
                    stats["dropped"] += 1
                    continue
                if data:
                    c["buf"] += data
                    while b"\0" in c["buf"]:
                        m, c["buf"] = c["buf"].split(b"\0", 1)
                        c["inflight"] -= 1
                        stats["replies"] += 1
                        if m.startswith(b'{"error"'):
                            stats["errors"] += 1
            while c["inflight"] < WINDOW:
                c["out"] += req
                c["inflight"] += req.count(b"\0")
            if c["out"]:
                try:
                    c["out"] = c["out"][s.send(c["out"]):]
                except BlockingIOError:
                    pass
            # Asleep while nothing is to be sent: the flood costs corrald, not our CPU.
            sel.modify(s, selectors.EVENT_READ | (selectors.EVENT_WRITE if c["out"] else 0), "normal")
    elapsed = time.monotonic() - t0
    # What corrald said to the oneway connections, however much of it is there.
    for s in oneway:
        buf = b""
        try:
            while True:
                d = s.recv(1 << 20)
                if not d:
                    break
                buf += d
        except (BlockingIOError, OSError):
            pass
        stats["refused"] += buf.count(b"OnewayRefused")
    print(f"flood seconds: {elapsed:.1f}")
    print(f"flood {'Usage and List' if heavy else 'List'} replies read (normal connections): {stats['replies']} "
          f"({stats['replies'] / elapsed:.1f}/s, {stats['errors']} errors)")
    print(f"flood oneway List requests the socket took: {stats['oneway_bytes'] // len(req)}")
    print(f"flood OnewayRefused replies waiting unread in the oneway sockets at the end: {stats['refused']}")
    print(f"flood connections dropped by corrald: {stats['dropped']}")


def call(s, req):
    buf = b""
    s.sendall(req)
    while b"\0" not in buf:
        d = s.recv(1 << 20)
        if not d:
            raise ConnectionError("corrald closed the connection")
        buf += d
    return json.loads(buf.split(b"\0", 1)[0])


def probe(seconds, user=None):
    """GetInfo, or with user List of that user's jobs, every page of it."""
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    s, lat = connect(blocking=True), []
    t0 = time.monotonic()
    while not stop[0] and time.monotonic() - t0 < seconds:
        t = time.monotonic()
        if user is None:
            call(s, msg("GetInfo"))
        else:
            after = 0
            while True:
                params = {"user": user}
                if after:
                    params["after_id"] = after
                r = call(s, msg("List", params))
                after = r.get("parameters", {}).get("next_after_id", 0)
                if not after:
                    break
        lat.append((time.monotonic() - t) * 1000)
        time.sleep(0.05)
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, max(0, -(-len(lat) * q // 100) - 1))]
    print(f"p50 {pick(50):.0f} ms, p99 {pick(99):.0f} ms, max {lat[-1]:.0f} ms ({len(lat)} calls)")


def cancel(first, last):
    s = connect(blocking=True)
    for i in range(first, last + 1):
        s.sendall(msg("Cancel", {"job_id": i}, oneway=True))
    s.sendall(msg("GetInfo"))
    buf = b""
    while b"\0" not in buf:
        d = s.recv(65536)
        if not d:
            break
        buf += d


if __name__ == "__main__":
    if sys.argv[1] == "flood":
        flood(float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "heavy":
        flood(float(sys.argv[2]), int(sys.argv[3]), 0, heavy=True)
    elif sys.argv[1] == "probe":
        probe(float(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        cancel(int(sys.argv[2]), int(sys.argv[3]))
