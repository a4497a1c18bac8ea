#!/usr/bin/env python3
"""A raw client of corrald's socket for tests that must send what the CLI never would:
malformed, oversized or hostile requests. Usage: proto-client.py SOCKET < requests
Each input line is sent as one message (NUL-terminated); "RAW:<text>" sends text as is,
"BIG:<n>" sends an n-byte message. Prints each reply on its own line."""
import socket, sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(sys.argv[1])
buf = b""
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("BIG:"):
        n = int(line[4:])
        s.sendall(b'{"method":"io.corral.Manager.List","parameters":{"x":"' + b"a" * n + b'"}}\0')
    elif line.startswith("RAW:"):
        s.sendall(line[4:].encode() + b"\0")
    else:
        s.sendall(line.encode() + b"\0")
    while b"\0" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            print("EOF"); sys.exit(0)
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    print(msg.decode())
