#!/usr/bin/env python3
"""Drives an interactive corral command on a real pseudo-terminal, as a user at a terminal
would: 88-interactive.sh runs it as the test user.

  interactive-pty.py [--rows R --cols C] [--then-on TEXT CMD] SCRIPT -- COMMAND...

COMMAND runs on a new pseudo-terminal of the given size. SCRIPT is a list of steps,
separated by ';':  expect:TEXT (wait for TEXT in the output, 120 s at most),
send:TEXT (\\r, \\x03 and the like are unescaped), resize:RxC, hangup (close the
terminal and stop), run:SHELL (a shell command, e.g. to cancel a blocking job),
sleep:SEC. At the end the output is printed as one block between ==== lines and the
exit status of COMMAND as "STATUS n" (or "HANGUP" after a hangup)."""
import codecs, fcntl, os, pty, select, struct, subprocess, sys, termios, time

args = sys.argv[1:]
rows, cols = 24, 80
if args[:1] == ["--rows"]:
    rows, cols = int(args[1]), int(args[3])
    args = args[4:]
script = args[0]
command = args[2:]

pid, master = pty.fork()
if pid == 0:
    os.execvp(command[0], command)

fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
out = b""


def read_some(timeout):
    global out
    r, _, _ = select.select([master], [], [], timeout)
    if not r:
        return False
    try:
        data = os.read(master, 65536)
    except OSError:
        return None
    if not data:
        return None
    out += data
    return True


def expect(text, timeout=120):
    end = time.time() + timeout
    while text.encode() not in out:
        if time.time() > end or read_some(min(1, end - time.time())) is None:
            sys.stdout.write("====\n" + out.decode(errors="replace") + "\n====\n")
            print("TIMEOUT waiting for %r" % text)
            sys.exit(1)


for step in [s for s in script.split(";") if s]:
    kind, _, arg = step.partition(":")
    if kind == "expect":
        expect(arg)
    elif kind == "send":
        os.write(master, codecs.decode(arg, "unicode_escape").encode())
    elif kind == "resize":
        r, c = arg.split("x")
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", int(r), int(c), 0, 0))
    elif kind == "run":
        subprocess.run(arg, shell=True, check=False)
    elif kind == "sleep":
        end = time.time() + float(arg)
        while time.time() < end:
            read_some(0.1)
    elif kind == "hangup":
        # As an SSH connection that drops: the terminal goes away under corral.
        for _ in range(5):
            read_some(0.1)
        os.close(master)
        sys.stdout.write("====\n" + out.decode(errors="replace") + "\n====\n")
        _, st = os.waitpid(pid, 0)
        print("HANGUP")
        sys.exit(0)
    else:
        print("bad step %r" % step)
        sys.exit(2)

while read_some(30) is True:
    pass
_, st = os.waitpid(pid, 0)
sys.stdout.write("====\n" + out.decode(errors="replace") + "\n====\n")
print("STATUS %d" % (os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)))
