#!/usr/bin/env python3
"""Sends corrald a Run (or another method) with descriptors the CLI would never pass, as
USER: run-fds.py SOCKET USER OWNER MODE. Run as root: it makes the descriptors first
(a pseudo-terminal's slave is given to OWNER), then becomes USER and connects.
MODE: tty (the terminal, three times, to Run), pipe (a pipe USER makes, to Run),
submit (USER's pipe with a Submit), four (four descriptors with Run), flood (nine held
Runs on nine connections kept open: the ninth is over the bound of waiting ones),
halfsent (a Run's first bytes with three descriptors on 21 connections, the rest never
sent: after 5 s "dropped K of 21 at 5 s"; then one more byte a second on each, and after
15 s the same line again).
Prints each reply on its own line, "EOF" when corrald closes the connection."""
import json, os, pty, pwd, socket, sys

path, user, owner, mode = sys.argv[1:5]
pw, ow = pwd.getpwnam(user), pwd.getpwnam(owner)

master, slave = pty.openpty()
os.fchown(slave, ow.pw_uid, -1)
os.initgroups(user, pw.pw_gid)
os.setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid)
os.setresuid(pw.pw_uid, pw.pw_uid, pw.pw_uid)
r, w = os.pipe()  # USER's own

request = {"argv": ["sleep", "300"], "workdir": "/tmp", "interactive": True, "walltime_sec": 300}
method = "io.corral.Manager.Run"
if mode == "tty":
    fds = [slave, slave, slave]
elif mode == "pipe":
    fds = [r, w, w]
elif mode == "submit":
    fds = [r, w, w]
    method = "io.corral.Manager.Submit"
    request.pop("interactive")
elif mode == "four":
    fds = [r, w, w, w]
elif mode == "held-restart":
    # A held Run whose connection stays open until corrald's restart closes it.
    fds = [r, w, w]
    request["hold"] = True
elif mode == "halfsent":
    import time
    m = json.dumps({"method": "io.corral.Manager.Run", "parameters": request, "more": True}).encode()
    conns, gone = [], set()
    for i in range(21):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path)
        c.sendmsg([m[:20]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                              b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (r, w, w)))])
        c.setblocking(False)
        conns.append(c)

    def count():
        for i, c in enumerate(conns):
            try:
                if i not in gone and c.recv(65536) == b"":
                    gone.add(i)
            except BlockingIOError:
                pass
            except OSError:
                gone.add(i)
        return len(gone)
    t0 = time.monotonic()
    time.sleep(5)
    print(f"dropped {count()} of 21 at 5 s", flush=True)
    for k in range(10):
        for i, c in enumerate(conns):
            if i not in gone:
                try:
                    c.send(m[20 + k:21 + k])
                except OSError:
                    gone.add(i)
        time.sleep(1)
    print(f"dropped {count()} of 21 at {time.monotonic() - t0:.0f} s", flush=True)
    sys.exit(0)
elif mode == "flood":
    request["hold"] = True
    conns = []
    for i in range(9):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(60)
        c.connect(path)
        m = json.dumps({"method": "io.corral.Manager.Run", "parameters": request, "more": True}).encode() + b"\0"
        c.sendmsg([m], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                         b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (r, w, w)))])
        buf = b""
        while b"\0" not in buf:
            chunk = c.recv(65536)
            if not chunk:
                break
            buf += chunk
        print(buf.split(b"\0", 1)[0].decode(), flush=True)
        conns.append(c)
    sys.exit(0)
else:
    sys.exit(2)

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(60)
s.connect(path)
msg = json.dumps({"method": method, "parameters": request, "more": True}).encode() + b"\0"
s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(bytearray(
    b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)))))])
buf = b""
while True:
    while b"\0" not in buf:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            chunk = b""
        if not chunk:
            print("EOF")
            sys.exit(0)
        buf += chunk
    m, buf = buf.split(b"\0", 1)
    print(m.decode(), flush=True)
    reply = json.loads(m)
    if mode == "held-restart" and "job_id" in reply.get("parameters", {}):
        continue  # kept open until corrald goes away
    # A Run accepted: its id is enough; closing the connection withdraws the job.
    if "error" in reply or not reply.get("continues") or "job_id" in reply.get("parameters", {}):
        break
