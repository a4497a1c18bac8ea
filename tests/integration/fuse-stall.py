#!/usr/bin/env python3
"""A FUSE file system that stops answering, reached through an overlayfs, both mounted by
an unprivileged user in a user and mount namespace of her own (Debian 12 lets any user
make one), and one of its files passed to corrald as an interactive job's stdin:
fuse-stall.py SOCKET [four]. Run it as that user. With "four", the file goes as a
fourth descriptor, one more than any request may carry.

The server answers its own process and the kernel (pid 0) only: a request from any other
process (corrald's fstat() of the descriptor, its close()'s FLUSH) is read and never
answered, so that process waits uninterruptibly until this one goes or the connection
is aborted (fusectl). Prints "reply: ..." with corrald's answer to the Run, "stalled
OPCODE from pid N" for each request it holds, and "aborted" when the connection is
aborted; then waits to be killed."""
import ctypes, json, os, socket, struct, sys, tempfile, threading

sock_path = sys.argv[1]
four = len(sys.argv) > 2 and sys.argv[2] == "four"
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 16384, 1 << 18


def check(r, what):
    if r != 0:
        e = ctypes.get_errno()
        sys.exit(f"fuse-stall: {what}: {os.strerror(e)}")


def mount(src, target, fstype, flags, data):
    check(libc.mount(src.encode() if src else None, target.encode(), fstype.encode() if fstype else None,
                     flags, data.encode() if data else None), f"mount {fstype or ''} on {target}")


uid, gid = os.getuid(), os.getgid()
check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
with open("/proc/self/setgroups", "w") as f:
    f.write("deny")
with open("/proc/self/uid_map", "w") as f:
    f.write(f"0 {uid} 1")
with open("/proc/self/gid_map", "w") as f:
    f.write(f"0 {gid} 1")
mount(None, "/", None, MS_REC | MS_PRIVATE, None)
top = tempfile.mkdtemp(prefix="fuse-stall-")
mount("none", top, "tmpfs", 0, "mode=0755")
mnt, empty, merged = (os.path.join(top, d) for d in ("fuse", "empty", "merged"))
for d in (mnt, empty, merged):
    os.mkdir(d)

dev = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
mine = {0, os.getpid()}
stalled = []
S_IFDIR, S_IFREG = 0o040000, 0o100000
ROOT, FILE = 1, 2
CONTENT = b"typed by nobody\n"
# FUSE opcodes
LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE, GETXATTR, LISTXATTR, FLUSH, INIT, OPENDIR, \
    READDIR, RELEASEDIR, ACCESS, INTERRUPT, BATCH_FORGET = 1, 2, 3, 14, 15, 17, 18, 22, 23, 25, 26, 27, \
    28, 29, 34, 36, 42
NAMES = {GETATTR: "GETATTR", FLUSH: "FLUSH", STATFS: "STATFS", OPEN: "OPEN", LOOKUP: "LOOKUP",
         RELEASE: "RELEASE", GETXATTR: "GETXATTR", ACCESS: "ACCESS", READ: "READ"}


def attr(node):
    mode, size, nlink = (S_IFDIR | 0o755, 0, 2) if node == ROOT else (S_IFREG | 0o644, len(CONTENT), 1)
    # fuse_attr: ino size blocks atime mtime ctime atimensec mtimensec ctimensec mode nlink uid gid rdev
    # blksize flags
    return struct.pack("<QQQQQQIIIIIIIIII", node, size, 1, 0, 0, 0, 0, 0, 0, mode, nlink, 0, 0, 0, 4096, 0)


def reply(unique, error=0, payload=b""):
    os.write(dev, struct.pack("<IiQ", 16 + len(payload), error, unique) + payload)


def serve():
    while True:
        try:
            buf = os.read(dev, 1 << 20 | 4096)
        except OSError as e:
            print(f"aborted ({os.strerror(e.errno)})", flush=True)
            return
        length, opcode, unique, node, ruid, rgid, pid, _ = struct.unpack_from("<IIQQIIII", buf)
        body = buf[40:length]
        if opcode in (FORGET, BATCH_FORGET, INTERRUPT):
            continue
        if pid not in mine and opcode != INIT:
            stalled.append(unique)
            print(f"stalled {NAMES.get(opcode, opcode)} from pid {pid}", flush=True)
            continue
        if opcode == INIT:
            major, minor, max_readahead, _flags = struct.unpack_from("<IIII", body)
            # fuse_init_out: major minor max_readahead flags max_background congestion_threshold
            # max_write time_gran max_pages map_alignment flags2 unused[7]
            reply(unique, 0, struct.pack("<IIIIHHIIHHI7I", 7, 31, max_readahead, 0, 16, 12, 65536, 1, 0, 0, 0,
                                         *([0] * 7)))
        elif opcode == LOOKUP:
            name = body.split(b"\0", 1)[0]
            if node == ROOT and name == b"f":
                # fuse_entry_out: nodeid generation entry_valid attr_valid entry_valid_nsec attr_valid_nsec
                # attr; the attributes valid for no time, so that every stat asks
                reply(unique, 0, struct.pack("<QQQQII", FILE, 1, 3600, 0, 0, 0) + attr(FILE))
            else:
                reply(unique, -2)
        elif opcode == GETATTR:
            reply(unique, 0, struct.pack("<QII", 0, 0, 0) + attr(node))
        elif opcode in (OPEN, OPENDIR):
            reply(unique, 0, struct.pack("<QII", 1, 0, 0))
        elif opcode == READ:
            fh, offset, size = struct.unpack_from("<QQI", body)
            reply(unique, 0, CONTENT[offset:offset + size])
        elif opcode == READDIR:
            reply(unique, 0, b"")
        elif opcode == STATFS:
            # fuse_kstatfs: blocks bfree bavail files ffree bsize namelen frsize padding spare[6]
            reply(unique, 0, struct.pack("<QQQQQIIII6I", 1, 0, 0, 2, 0, 4096, 255, 4096, 0, *([0] * 6)))
        elif opcode in (RELEASE, RELEASEDIR, FLUSH, ACCESS):
            reply(unique, 0)
        else:
            reply(unique, -38)  # ENOSYS: xattrs and the rest


mount("stall", mnt, "fuse", MS_NOSUID | MS_NODEV, f"fd={dev},rootmode=40000,user_id=0,group_id=0")
# /dev/fuse reads only once mounted; the kernel's INIT is the first request.
threading.Thread(target=serve, daemon=True).start()
# Read-only (two lower layers, no upper): the overlay opens its files with the
# mounter's credentials, which the FUSE connection (hers) accepts from any caller.
mount("overlay", merged, "overlay", 0, f"lowerdir={mnt}:{empty}")
stdin = os.open(os.path.join(merged, "f"), os.O_RDONLY | os.O_CLOEXEC)
assert os.read(stdin, 64) == CONTENT
os.lseek(stdin, 0, os.SEEK_SET)
r, w = os.pipe()

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(120)
s.connect(sock_path)
request = {"argv": ["cat"], "workdir": "/tmp", "interactive": True, "walltime_sec": 60}
msg = json.dumps({"method": "io.corral.Manager.Run", "parameters": request, "more": True}).encode() + b"\0"
fds = struct.pack("<4i", r, w, w, stdin) if four else struct.pack("<3i", stdin, w, w)
s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
print("sent", flush=True)
buf = b""
try:
    while b"\0" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    print("reply: " + buf.split(b"\0", 1)[0].decode(), flush=True)
except socket.timeout:
    print("reply: none within 120 s", flush=True)
s.close()
os.close(stdin)
threading.Event().wait()
