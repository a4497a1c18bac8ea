#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""An independent reference of the published EASY simulators' rules (pyss, predictsim),
written from their description, not from corral-sim: what `corral-sim --semantics=published
--filter=strong` must reproduce to the last digit.

The rules, as those simulators apply them:
- The machine is a flat count of processors. A job holds its processors from its start
  until start + requested time in the availability profile; when it ends earlier, its
  termination event gives the tail back.
- Events are handled in order of (time, kind, creation order): submissions before
  terminations at one instant; submissions in trace order, terminations in the order
  their jobs were started (a termination event is made when its job starts).
- A submission appends the job to the queue and runs a pass only if the processors free
  now are at least the job's; a termination gives back the job's tail, then runs a pass.
- A pass: start the head of the queue while it fits now. Then, if two or more wait, reserve
  for the head at the earliest time it fits for its whole requested time, and go over the
  others (in queue order; for EASY-SJBF sorted by requested time, stably, so ties keep queue
  order): a job starts now if it fits for its whole requested time around the reservation.

Usage:
  sim-reference.py run [--sjbf] [--fcfs] TRACE.swf         prints "id wait" lines and figures
  sim-reference.py gen SEED N PROCS > TRACE.swf              a synthetic trace with long queues
  sim-reference.py compare CORRAL_SIM TRACE.swf [--sjbf] [--engine=E]
                                                             exit 1 if corral-sim differs
"""

import heapq
import os
import random
import subprocess
import sys
import tempfile


class Job:
    __slots__ = ("id", "submit", "run", "estimate", "procs", "start", "slice_end")

    def __init__(self, id, submit, run, estimate, procs):
        self.id = id
        self.submit = submit
        self.run = run
        self.estimate = estimate
        self.procs = procs
        self.start = None
        self.slice_end = None  # where the job's processors come back in the profile


def read_swf(path):
    """The jobs the strong filter keeps, and the machine size."""
    procs = None
    jobs = []
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if s.startswith(";"):
                key, _, value = s[1:].partition(":")
                if key.strip() == "MaxProcs":
                    procs = int(value)
                elif key.strip() == "MaxNodes" and procs is None:
                    procs = int(value)
                continue
            x = [int(float(v)) for v in s.split()]
            p = x[7] if x[7] > 0 else x[4]
            if x[1] < 0 or x[3] <= 0 or p <= 0 or x[8] <= 0:
                continue
            if x[4] > procs or x[7] > procs:
                continue
            jobs.append(Job(x[0], x[1], min(x[3], x[8]), x[8], p))
    jobs.sort(key=lambda j: j.submit)  # stable: trace order among equal submit times
    return jobs, procs


class Simulator:
    SUBMIT, TERMINATE = 0, 1

    def __init__(self, jobs, procs, sjbf=False, backfill=True):
        self.jobs = jobs
        self.total = procs
        self.sjbf = sjbf
        self.backfill = backfill
        self.queue = []
        self.running = []   # jobs whose processors the profile still holds
        self.events = []
        self.counter = 0

    def push(self, time, kind, job):
        self.counter += 1
        heapq.heappush(self.events, (time, kind, self.counter, job))

    def free_at(self, t):
        return self.total - sum(j.procs for j in self.running if j.slice_end > t)

    def profile(self, now):
        """Free processors as steps: [(from, free)], from now on."""
        ends = sorted({j.slice_end for j in self.running if j.slice_end > now})
        steps = [(now, self.free_at(now))]
        for t in ends:
            steps.append((t, self.free_at(t)))
        return steps

    @staticmethod
    def fits(steps, start, length, procs):
        """Whether procs are free over [start, start + length) in the steps."""
        end = start + length
        for i, (t, free) in enumerate(steps):
            nxt = steps[i + 1][0] if i + 1 < len(steps) else None
            if nxt is not None and nxt <= start:
                continue
            if t >= end:
                break
            if free < procs:
                return False
        return True

    @staticmethod
    def take(steps, start, length, procs):
        """Subtracts procs over [start, start + length), splitting steps as needed."""
        end = start + length
        for cut in (start, end):
            for i, (t, free) in enumerate(steps):
                if t == cut:
                    break
                if t > cut:
                    steps.insert(i, (cut, steps[i - 1][1]))
                    break
            else:
                steps.append((cut, steps[-1][1]))
        for i, (t, free) in enumerate(steps):
            if start <= t < end:
                steps[i] = (t, free - procs)

    def start(self, job, now):
        job.start = now
        job.slice_end = now + job.estimate
        self.running.append(job)
        self.push(now + job.run, self.TERMINATE, job)

    def schedule(self, now):
        while self.queue and self.free_at(now) >= self.queue[0].procs:
            self.start(self.queue.pop(0), now)
        if not self.backfill or len(self.queue) <= 1:
            return
        first = self.queue[0]
        steps = self.profile(now)
        # The head's reservation: the first step from which it fits for its whole request.
        shadow = next(t for t, _ in steps if self.fits(steps, t, first.estimate, first.procs))
        self.take(steps, shadow, first.estimate, first.procs)
        tail = self.queue[1:]
        if self.sjbf:
            tail = sorted(tail, key=lambda j: j.estimate)  # stable
        for job in tail:
            if self.fits(steps, now, job.estimate, job.procs):
                self.queue.remove(job)
                self.take(steps, now, job.estimate, job.procs)
                self.start(job, now)

    def run(self):
        for job in self.jobs:
            self.push(job.submit, self.SUBMIT, job)
        while self.events:
            now, kind, _, job = heapq.heappop(self.events)
            if kind == self.SUBMIT:
                self.queue.append(job)
                if self.free_at(now) >= job.procs:
                    self.schedule(now)
            else:
                job.slice_end = now
                self.running.remove(job)
                self.schedule(now)
        assert not self.queue, "jobs left waiting"


def figures(jobs):
    n = len(jobs)
    waits = [j.start - j.submit for j in jobs]
    bsld = [max(1.0, (w + j.run) / max(j.run, 10)) for w, j in zip(waits, jobs)]
    return {
        "jobs": n,
        "avg_wait": "%.3f" % (sum(waits) / n),
        "avg_bsld": "%.6f" % (sum(bsld) / n),
        "max_bsld": "%.6f" % max(bsld),
    }


def simulate(path, sjbf=False, backfill=True):
    jobs, procs = read_swf(path)
    Simulator(jobs, procs, sjbf, backfill).run()
    return jobs, figures(jobs)


def generate(seed, n, procs, out):
    """Long queues: arrivals at 2.4x the machine's capacity for the first two thirds,
    many submissions at the same second, run times and requests on a coarse grid (so jobs
    end together, early and at their request), a few jobs as wide as the machine."""
    rnd = random.Random(seed)
    out.write("; Synthetic trace with long queues (sim-reference.py gen %d %d %d)\n" % (seed, n, procs))
    out.write("; MaxProcs: %d\n" % procs)
    t = 0
    rows = []
    for i in range(n):
        r = rnd.random()
        if r < 0.03:
            p = procs
        elif r < 0.3:
            p = 1
        else:
            p = min(procs, 2 ** rnd.randrange(0, max(1, procs.bit_length())))
        run = 60 * rnd.randrange(1, 60)
        est = run if rnd.random() < 0.25 else run + 60 * rnd.randrange(0, 90)
        if rnd.random() < 0.2:
            run = max(1, run - rnd.randrange(0, 60))  # not on the grid
        rows.append([i + 1, t, -1, run, p, -1, -1, p, est, -1, 1, 1 + i % 7, 1, -1, 1, -1, -1, -1])
        if rnd.random() < 0.5:  # otherwise the next one comes at the same second
            work = run * p
            load = 2.4 if i < n * 2 // 3 else 0.6
            t += int(rnd.expovariate(1.0) * work / (procs * load)) // 30 * 30
    for row in rows:
        out.write(" ".join(str(v) for v in row) + "\n")


def corral_sim(binary, path, sjbf, extra):
    with tempfile.TemporaryDirectory() as d:
        sched = os.path.join(d, "schedule.swf")
        args = [binary, "--semantics=published", "--filter=strong", "--json", "-o", sched] + extra
        if sjbf:
            args.append("--backfill-order=sjf")
        res = subprocess.run(args + [path], check=True, capture_output=True, text=True)
        import json
        st = json.loads(res.stdout)
        waits = {}
        with open(sched) as f:
            for line in f:
                if line.strip() and not line.lstrip().startswith(";"):
                    x = line.split()
                    waits[int(x[0])] = int(x[2])
    return st, waits


def compare(binary, path, sjbf, extra):
    jobs, ref = simulate(path, sjbf)
    st, waits = corral_sim(binary, path, sjbf, extra)
    got = {
        "jobs": st["jobs_simulated"],
        "avg_wait": "%.3f" % st["avg_wait"],
        "avg_bsld": "%.6f" % st["avg_bounded_slowdown"],
        "max_bsld": "%.6f" % st["max_bounded_slowdown"],
    }
    differ = [j for j in jobs if waits.get(j.id) != j.start - j.submit]
    print("%s %s: reference %s" % (os.path.basename(path), "EASY-SJBF" if sjbf else "EASY", ref))
    print("%s %s: corral-sim %s (%s engine, at most %d waiting)"
          % (os.path.basename(path), "EASY-SJBF" if sjbf else "EASY", got, st["engine"], st["max_waiting"]))
    if differ:
        j = differ[0]
        print("%d of %d jobs start elsewhere; first: job %d waits %d, corral-sim %s"
              % (len(differ), len(jobs), j.id, j.start - j.submit, waits.get(j.id)))
    return 0 if got == ref and not differ else 1


def main(argv):
    if len(argv) >= 2 and argv[1] == "gen":
        generate(int(argv[2]), int(argv[3]), int(argv[4]), sys.stdout)
        return 0
    if len(argv) >= 3 and argv[1] == "run":
        sjbf = "--sjbf" in argv
        jobs, fig = simulate(argv[-1], sjbf, "--fcfs" not in argv)
        for j in jobs:
            print(j.id, j.start - j.submit)
        print(fig, file=sys.stderr)
        return 0
    if len(argv) >= 4 and argv[1] == "compare":
        return compare(argv[2], argv[3], "--sjbf" in argv, [a for a in argv[4:] if a.startswith("--engine=")])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
