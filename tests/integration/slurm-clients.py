#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Replays the exact command lines of popular Slurm clients against Corral's Slurm
commands, as an unprivileged user, and reads their output with each client's own rule
(its regular expression or field split, copied as the rule it is, with its source).

For each client: its submit (the script and directives it writes, the flags it passes,
the job id it parses), its status query over its own jobs and the shared ones (a job
that completed, one that failed, one that ran out of memory, one held, an array), its
kill, and what it reads inside the job. What the client would conclude is asserted.

Sources (public repositories, the versions read; ../shared/slurm-clients.md has the
command lines quoted):
  nextflow       modules/nextflow/src/main/groovy/nextflow/executor/SlurmExecutor.groovy   v26.08.0-edge (2aad02f6)
  dask-jobqueue  dask_jobqueue/slurm.py, core.py                                            0.9.0+12 (49db60ad)
  submitit       submitit/slurm/slurm.py, core/job_environment.py                           1.5.4 (e49d5e7f)
  parsl          parsl/providers/slurm/slurm.py, template.py, launchers/launchers.py        2026.07.27 (b8b474c7)
  snakemake      snakemake_executor_plugin_slurm/{__init__,submit_string,utils}.py          v2.7.1+2 (cdc05f95)
  batchspawner   batchspawner/batchspawner.py (SlurmSpawner)                                v1.3.0+20 (451dcf17)
  open ondemand  lib/ood_core/job/adapters/slurm.rb                                         ood_core v0.31.1+13 (86656b38)
  cromwell       cromwell.example.backends/slurm.conf, docs/backends/SLURM.md               92+8 (c805f3c5)
  hyperqueue     crates/hyperqueue/src/server/autoalloc/queue/slurm.rs, common/manager/slurm.rs (680857bd)
  batchtools     R/clusterFunctionsSlurm.R, inst/templates/slurm-simple.tmpl                v0.9.17 (1196047e)
  cylc           cylc/flow/job_runner_handlers/slurm.py                                     8.6.5+244 (2936692c)

Usage: slurm-clients.py WORKDIR [CLIENT...]   (run as the test user; exit 1 on a failure)
"""

import datetime
import os
import re
import shutil
import subprocess
import sys
import time
import uuid

WORK = os.path.abspath(sys.argv[1])
ONLY = set(sys.argv[2:])
USER = os.environ.get("USER") or os.environ.get("LOGNAME")
HOST = os.uname().nodename
failures = []
TERMINAL_SLURM = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
                  "PREEMPTED", "BOOT_FAIL", "DEADLINE"}


def log(*a):
    print("#", *a, flush=True)


def check(ok, client, what, detail=""):
    if ok:
        return True
    msg = f"{client}: {what}" + (f": {detail}" if detail else "")
    print("FAILED:", msg, flush=True)
    failures.append(msg)
    return False


def run(cmd, shell=False, input=None, cwd=None, env=None, merge=False, timeout=60):
    """Runs cmd as the client does (argv, or a shell line); (rc, stdout, stderr)."""
    p = subprocess.run(cmd, shell=shell, input=input, cwd=cwd or WORK, env=env, text=True, timeout=timeout,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                       stdin=None if input is not None else subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr or ""


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def sacct_state(jid):
    """The state as Slurm's sacct has it (the driver's own look, not a client's)."""
    rc, out, _ = run(["sacct", "-P", "-n", "-X", "--format=JobIdRaw,State", "-j", str(jid)])
    for line in out.splitlines():
        f = line.split("|")
        if len(f) == 2 and f[0] == str(jid):
            return f[1].split()[0]
    return None


def wait_until(pred, sec=180, step=0.5):
    end = time.time() + sec
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def wait_final(ids, sec=240):
    return wait_until(lambda: all((sacct_state(i) or "") in TERMINAL_SLURM for i in ids), sec)


def wait_running(jid, sec=180):
    return wait_until(lambda: sacct_state(jid) == "RUNNING", sec)


def env_of(path):
    try:
        with open(path) as f:
            return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    except OSError:
        return {}


# ---- The shared jobs: every client's status parser reads them ----

class Shared:
    pass


def submit_shared():
    s = Shared()
    def sb(*args):
        rc, out, err = run(["sbatch", "--parsable", "-t", "5", "-o", "/dev/null", *args])
        if rc != 0:
            raise SystemExit(f"FAILED: shared sbatch {args}: {err}")
        return out.strip()
    s.ok = sb("-J", "shared-ok", "--wrap", "echo ok")
    s.fail = sb("-J", "shared-fail", "--wrap", "exit 3")
    s.oom = sb("-J", "shared-oom", "--mem", "64M", "--wrap",
               "python3 -c 'import time\nb=[]\nwhile True:\n b.append(bytearray(4<<20)); time.sleep(0.05)'")
    s.held = sb("-J", "shared-held", "-H", "--wrap", "true")
    s.array = sb("-J", "shared-array", "--array", "0-1", "--wrap", "echo $SLURM_ARRAY_TASK_ID")
    s.run = sb("-J", "shared-run", "-t", "60", "--wrap", "sleep 3600")
    wait_running(s.run)
    wait_final([s.ok, s.fail, s.oom])
    wait_until(lambda: (sacct_state(s.array) or "") in TERMINAL_SLURM)
    got = {k: sacct_state(getattr(s, k)) for k in ("ok", "fail", "oom", "held", "run")}
    want = {"ok": "COMPLETED", "fail": "FAILED", "oom": "OUT_OF_MEMORY", "held": "PENDING", "run": "RUNNING"}
    if got != want:
        raise SystemExit(f"FAILED: the shared jobs are not as the clients must see them: {got}, want {want}")
    return s


# ---- Nextflow ----

def nextflow(s):
    c = "nextflow"
    wd = os.path.join(WORK, "nf")
    os.makedirs(wd, exist_ok=True)
    # SlurmExecutor.getDirectives(): "#SBATCH <opt> <value>", a space rather than '='.
    def script(body, array=None):
        lines = ["#!/bin/bash"]
        if array:
            lines.append(f"#SBATCH --array {array}")
        lines += ["#SBATCH -J nf-hello_(1)", f"#SBATCH -o {'/dev/null' if array else wd + '/.command.log'}",
                  "#SBATCH --no-requeue", "#SBATCH --signal B:USR2@30", "#SBATCH -t 00:05:00", "#SBATCH --mem 64M", f"NXF_CHDIR={wd}", body, ""]
        return write(os.path.join(wd, ".command.run"), "\n".join(lines))
    # submit: argv "sbatch .command.run", cwd the work dir, stderr merged.
    def submit(body, array=None):
        script(body, array)
        rc, out, _ = run(["sbatch", ".command.run"], cwd=wd, merge=True)
        check(rc == 0, c, "sbatch", out)
        m = re.search(r"Submitted batch job (\d+)", out)  # SlurmExecutor.parseJobId()
        check(m is not None, c, "the job id in sbatch's output", out)
        return m.group(1) if m else None
    jid = submit(f'env > {wd}/env.$SLURM_JOB_ID; echo 0 > {wd}/.exitcode')
    arr = submit(f'env | grep ^SLURM_ARRAY_ > {wd}/task.$SLURM_ARRAY_TASK_ID', array="0-1")
    long = submit("sleep 600")
    # getKillCommand(): scancel <id> [<id> ...]
    wait_running(long)
    rc, out, err = run(["scancel", long])
    check(rc == 0, c, "scancel", err)
    # queueStatusCommand(): squeue --noheader -o '%i %t' -t all -u <user> (no -p: no queue set)
    codes = {"PD": "PENDING", "CF": "PENDING", "R": "RUNNING", "CG": "RUNNING", "S": "HOLD", "ST": "HOLD",
             "CD": "DONE", "F": "ERROR", "CA": "ERROR", "TO": "ERROR", "NF": "ERROR", "PR": "ERROR", "BF": "ERROR"}
    def status():
        rc, out, err = run(["squeue", "--noheader", "-o", "%i %t", "-t", "all", "-u", USER])
        check(rc == 0, c, "squeue exit status", err)
        result = {}
        for line in out.splitlines():  # parseQueueStatus(): two columns or the line is skipped
            cols = line.split()
            if len(cols) != 2:
                check(False, c, "a squeue line of other than 2 columns", line)
                continue
            result[cols[0]] = codes.get(cols[1])
        return result
    wait_final([jid, long, arr])
    st = status()
    check(st.get(jid) == "DONE", c, f"its job {jid} is DONE", st.get(jid))
    check(st.get(long) == "ERROR", c, f"its cancelled job {long} is an error", st.get(long))
    check(st.get(f"{arr}_0") == "DONE" and st.get(f"{arr}_1") == "DONE", c, "the array's tasks as N_0, N_1", st)
    check(st.get(s.fail) == "ERROR", c, "the failed job", st.get(s.fail))
    check(st.get(s.held) == "PENDING", c, "the held job", st.get(s.held))
    check(st.get(s.run) == "RUNNING", c, "the running job", st.get(s.run))
    # OOM is none of Nextflow's codes: unknown (null), and it reads its .exitcode file.
    check(s.oom in st, c, "the job that ran out of memory is listed", st)
    check(os.path.exists(f"{wd}/task.0") and os.path.exists(f"{wd}/task.1"), c, "SLURM_ARRAY_TASK_ID in tasks")
    # Snakemake's jobstep plugin reads SLURM_ARRAY_TASK_MIN beside the task id.
    t1 = env_of(f"{wd}/task.1")
    check(t1.get("SLURM_ARRAY_TASK_ID") == "1" and t1.get("SLURM_ARRAY_TASK_MIN") == "0" and
          t1.get("SLURM_ARRAY_TASK_MAX") == "1" and t1.get("SLURM_ARRAY_TASK_COUNT") == "2" and
          t1.get("SLURM_ARRAY_TASK_STEP") == "1" and t1.get("SLURM_ARRAY_JOB_ID") == arr, c,
          "SLURM_ARRAY_TASK_{ID,MIN,MAX,COUNT,STEP} and SLURM_ARRAY_JOB_ID", t1)
    env = env_of(f"{wd}/env.{jid}")
    check(env.get("SLURM_JOB_ID") == jid, c, "SLURM_JOB_ID in the job", env.get("SLURM_JOB_ID"))


# ---- dask-jobqueue ----

def dask(s):
    c = "dask-jobqueue"
    logdir = os.path.join(WORK, "dask")
    os.makedirs(logdir, exist_ok=True)
    # SLURMJob job_header: core.py / slurm.py; --mem ceiling of 1024-based units.
    header = "\n".join(["#!/usr/bin/env bash", "", "#SBATCH -J dask-worker",
                        f"#SBATCH -e {logdir}/dask-worker-%J.err", f"#SBATCH -o {logdir}/dask-worker-%J.out",
                        "#SBATCH -n 1", "#SBATCH -N 1", "#SBATCH --cpus-per-task=1", "#SBATCH --mem=954M",
                        "#SBATCH -t 00:30:00", ""])
    # The worker (SLURMRunner) is started under srun and raises without these three.
    body = (f"srun python3 -c 'import os; [os.environ[k] for k in (\"SLURM_PROCID\", \"SLURM_NTASKS\", "
            f"\"SLURM_JOB_ID\")]; open(\"{logdir}/worker.\" + os.environ[\"SLURM_JOB_ID\"], \"w\").write(\"ran\")'\n")
    # Job.start() -> _submit_job(): the script in a temporary file, deleted once sbatch returns.
    path = write(os.path.join(WORK, "tmp-dask-job.sh"), header + body)
    rc, out, err = run(["sbatch", path])
    os.unlink(path)
    check(rc == 0, c, "sbatch", err)
    m = re.search(r"(?P<job_id>\d+)", out)  # SLURMJob.job_id_regexp
    jid = m.group("job_id") if m else None
    check(jid is not None, c, "the job id", out)
    wait_final([jid])
    check(os.path.exists(f"{logdir}/worker.{jid}"), c, "the job ran the script deleted after sbatch returned, "
          "and srun's task saw SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_ID", sacct_state(jid))
    # close(): scancel <id>, a non-zero exit (job gone) suppressed: must not hang or crash.
    rc, _, _ = run(["scancel", jid])


# ---- submitit ----

def submitit(s):
    c = "submitit"
    check(shutil.which("srun") is not None, c, "srun on PATH (SlurmExecutor.__init__ raises without it)")
    folder = os.path.join(WORK, "submitit")
    os.makedirs(folder, exist_ok=True)
    # _make_sbatch_string(): sorted "#SBATCH --key=value" lines, then srun with %j/%t paths.
    def sbatch_string(body, minutes=5):
        params = {"error": f"{folder}/%j_0_log.err", "job-name": "submitit", "nodes": 1, "open-mode": "append",
                  "output": f"{folder}/%j_0_log.out", "signal": "USR2@90", "time": minutes, "wckey": "submitit"}
        lines = ["#!/bin/bash", "", "# Parameters"] + [f"#SBATCH --{k}={v}" for k, v in sorted(params.items())]
        lines += ["", "# command", "export SUBMITIT_EXECUTOR=slurm",
                  f"srun --unbuffered --output {folder}/%j_%t_log.out --error {folder}/%j_%t_log.err {body}", ""]
        return "\n".join(lines)
    def submit(body):
        path = write(os.path.join(folder, f".submission_file_{uuid.uuid4().hex}.sh"), sbatch_string(body))
        rc, out, err = run(["sbatch", path])
        check(rc == 0, c, "sbatch", err)
        m = re.search(r"job (?P<id>[0-9]+)", out)  # SlurmExecutor._get_job_id_from_submission_command
        check(m is not None, c, "'job N' in sbatch's output (bare --parsable would fail)", out)
        return m.group("id") if m else None
    jid = submit("sh -c 'echo from-task-$SLURM_PROCID; env | grep ^SLURM_ > " + folder + "/env.$SLURM_JOB_ID'")
    # On USR2 (preemption, the time limit) it checkpoints and runs "scontrol requeue <id>";
    # the job must come back under the same id.
    requeue = submit("sh -c 'cd " + folder + "; if [ ! -e marker.$SLURM_JOB_ID ]; then touch marker.$SLURM_JOB_ID; "
                     "scontrol requeue $SLURM_JOB_ID; sleep 120; fi; echo again > requeued.$SLURM_JOB_ID'")
    long = submit("sleep 600")
    wait_running(long)
    run(["scancel", long])
    # SlurmInfoWatcher._make_command(): one -j per job; read_info(): header required, '|' split.
    def states(ids):
        cmd = ["sacct", "-o", "JobID,State,NodeList", "--parsable2"]
        for i in ids:
            cmd += ["-j", i]
        rc, out, err = run(cmd)
        lines = out.splitlines()
        check(len(lines) >= 2, c, "sacct's header line and rows", out + err)
        names = lines[0].split("|")
        result = {}
        for line in lines[1:]:
            row = dict(zip(names, line.split("|")))
            if "." in row["JobID"]:
                continue
            result[row["JobID"]] = row["State"]
        return result
    finished = lambda st: st.upper() not in ("READY", "PENDING", "RUNNING", "UNKNOWN", "REQUEUED", "COMPLETING",
                                             "PREEMPTED")  # SlurmJob._get_outcome_and_result / watcher
    wait_final([jid, long, requeue])
    check(os.path.exists(f"{folder}/requeued.{requeue}") and sacct_state(requeue) == "COMPLETED", c,
          "a job requeued by scontrol requeue runs again under its id", sacct_state(requeue))
    st = states([jid, long, s.oom, s.held, s.run, s.array])
    check(st.get(jid) == "COMPLETED" and finished(st[jid]), c, "its job COMPLETED", st)
    check(finished(st.get(long, "UNKNOWN")), c, "its cancelled job finished", st.get(long))
    check(st.get(s.oom) == "OUT_OF_MEMORY" and finished(st[s.oom]), c, "OUT_OF_MEMORY is finished", st.get(s.oom))
    check(not finished(st.get(s.held, "UNKNOWN")), c, "the held job is not finished", st.get(s.held))
    check(not finished(st.get(s.run, "UNKNOWN")), c, "the running job is not finished", st.get(s.run))
    check(f"{s.array}_0" in st and f"{s.array}_1" in st, c, "array tasks as N_0, N_1", st)
    try:
        with open(f"{folder}/{jid}_0_log.out") as f:
            out0 = f.read()
    except OSError as e:
        out0 = str(e)
    check("from-task-0" in out0, c, "srun --output %j_%t wrote task 0's file", out0)
    env = env_of(f"{folder}/env.{jid}")
    for k in ("SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_JOB_NUM_NODES", "SLURM_NODEID", "SLURM_JOB_NODELIST",
              "SLURM_PROCID", "SLURM_LOCALID"):  # JobEnvironment (core/job_environment.py, slurm.py)
        check(k in env, c, f"{k} in the task", sorted(env))


# ---- Parsl ----

def parsl(s):
    c = "parsl"
    d = os.path.join(WORK, "parsl")
    os.makedirs(d, exist_ok=True)
    # __init__: "sacct -X" decides sacct (exit 0) or squeue for status.
    rc, _, err = run("sacct -X", shell=True)
    check(rc == 0, c, "sacct -X exits 0, so status comes from sacct", err)
    # template.py, with --exclusive left out here (it would wait for the whole machine).
    def submit(name, body):
        script = "\n".join(["#!/bin/bash", "", f"#SBATCH --job-name={name}", f"#SBATCH --output={d}/{name}.submit.stdout",
                            f"#SBATCH --error={d}/{name}.submit.stderr", "#SBATCH --nodes=1", "#SBATCH --time=5",
                            "#SBATCH --ntasks-per-node=1", "#SBATCH --mem=1g", "#SBATCH --cpus-per-task=1",
                            "export PARSL_MEMORY_GB=1", "export PARSL_CORES=1", f'export JOBNAME="{name}"', "", body, ""])
        path = write(os.path.join(d, f"{name}.submit"), script)
        rc, out, err = run(f"sbatch {path}", shell=True)
        check(rc == 0, c, "sbatch", err)
        jid = None
        for line in out.split("\n"):  # SlurmProvider.submit(), regex_job_id
            m = re.match(r"Submitted batch job (?P<id>\S*)", line)
            if m:
                jid = m.group("id")
        check(jid is not None, c, "the job id", out)
        return jid
    # SrunLauncher: srun --ntasks N -l bash cmd_$SLURM_JOB_NAME.sh; MPI mode: scontrol show hostname.
    body = (f'cat > cmd_$SLURM_JOB_NAME.sh <<"EOF"\necho worker $SLURM_CPUS_ON_NODE $SLURM_JOB_NUM_NODES\nEOF\n'
            f'srun --ntasks 1 -l bash cmd_$SLURM_JOB_NAME.sh > {d}/srun.$SLURM_JOB_ID\n'
            f'scontrol show hostname $SLURM_NODELIST > {d}/hosts.$SLURM_JOB_ID\n')
    jid = submit("parsl.slurm.1", f"cd {d}\n" + body)
    long = submit("parsl.slurm.2", "sleep 600")
    wait_running(long)
    rc, _, err = run(f"scancel {long}", shell=True)  # cancel(): exit 0 marks them CANCELLED
    check(rc == 0, c, "scancel", err)
    translate = {"PENDING": "PENDING", "RUNNING": "RUNNING", "CANCELLED": "CANCELLED", "COMPLETED": "COMPLETED",
                 "FAILED": "FAILED", "NODE_FAIL": "FAILED", "BOOT_FAIL": "FAILED", "REVOKED": "FAILED",
                 "OUT_OF_MEMORY": "FAILED", "DEADLINE": "TIMEOUT", "TIMEOUT": "TIMEOUT", "PREEMPTED": "TIMEOUT",
                 "SUSPENDED": "HELD", "REQUEUED": "PENDING"}
    def status(ids):
        # _status(): batches joined by commas, a shell line; split() each line, id and state.
        rc, out, err = run(f"sacct -X --noheader --format=jobid,state%20 --job '{','.join(ids)}'", shell=True)
        check(rc == 0, c, "sacct's exit status", err)
        result = {}
        for line in out.split("\n"):
            parts = line.split()
            if parts:
                result[parts[0]] = translate.get(parts[1], "UNKNOWN")
        return {i: result.get(i, "COMPLETED") for i in ids}  # absent: COMPLETED
    wait_final([jid, long])
    st = status([jid, long, s.fail, s.oom, s.held, s.run])
    want = {jid: "COMPLETED", long: "CANCELLED", s.fail: "FAILED", s.oom: "FAILED", s.held: "PENDING",
            s.run: "RUNNING"}
    check(st == want, c, "the states it concludes", f"{st} want {want}")
    try:
        srun_out = open(f"{d}/srun.{jid}").read()
        hosts = open(f"{d}/hosts.{jid}").read().split()
    except OSError as e:
        srun_out, hosts = str(e), []
    check(re.match(r"^0: worker \d+ 1$", srun_out.strip()) is not None, c, "srun -l labels task 0's lines", srun_out)
    check(hosts == [HOST.split(".")[0]] or hosts == [HOST], c, "scontrol show hostname $SLURM_NODELIST", hosts)


# ---- Snakemake 8's executor plugin ----

def snakemake(s):
    c = "snakemake"
    d = os.path.join(WORK, "smk")
    os.makedirs(d, exist_ok=True)
    run_uuid = str(uuid.uuid4())
    # get_max_array_size / MinJobAge from scontrol show config (utils.py).
    rc, conf, err = run(["scontrol", "show", "config"])
    check(rc == 0, c, "scontrol show config", err)
    m = re.search(r"MinJobAge\s*=\s*(\d+)\s*(sec|s|h)?", conf)
    check(m is not None, c, "MinJobAge in scontrol show config", conf[:200])
    check(re.search(r"MaxArraySize\s*=?\s*(\d+)", conf) is not None, c, "MaxArraySize")
    # get_default_partition(): sinfo -o %P, the token with '*'.
    rc, out, _ = run("sinfo -o %P", shell=True)
    part = next((t.strip("*") for t in out.split() if "*" in t), None)
    check(part is not None, c, "a default partition from sinfo -o %P", out)
    # get_account(): sacctmgr ... format=account%256; then sacct -nu (argv: '|' reaches sacct, fails)
    rc, out, err = run(["sacctmgr", "-n", "-s", "list", "user", USER, "format=account%256"])
    accounts = [a.strip() for a in out.splitlines() if a.strip()]
    check(rc == 0 and accounts, c, "sacctmgr -n -s list user: the user's accounts", out + err)
    account = accounts[0] if accounts else "physics"
    def submit(rule, cmd, extra=""):
        # submit_string.get_submit_command(): a shell line.
        line = (f"sbatch --parsable --job-name {run_uuid} --output '{d}/slurm_logs/rule_{rule}/%j.log' "
                f"--export=ALL --comment rule_{rule} -A {account} -p {part} -t 5 --mem 64 "
                f"--cpus-per-task=1 {extra} -D {d} --wrap=\"{cmd}\"")
        os.makedirs(f"{d}/slurm_logs/rule_{rule}", exist_ok=True)
        rc, out, err = run(line, shell=True)
        check(rc == 0 and "submission failed" not in err, c, f"sbatch for rule {rule}", err)
        jid = out.strip().split(";")[0]  # __init__.run_job()
        check(jid.isdigit(), c, "--parsable's ID[;cluster]", out)
        return jid
    ok = submit("a", "echo \\$SLURM_JOB_ID > slurm_job_id.txt")
    fail = submit("b", "exit 3")
    oom = submit("c", "python3 -c 'b=[]\nwhile True: b.append(bytearray(4<<20))'", "--mem 64M")
    arr = submit("d", "echo $SLURM_ARRAY_TASK_ID", "--array=1-2")
    long = submit("e", "sleep 600")
    wait_running(long)
    # job_cancellation.py: scancel <ids> --clusters=all, argv; non-zero raises.
    rc, _, err = run(["scancel", long, "--clusters=all"])
    if not check(rc == 0, c, "scancel --clusters=all", err):
        run(["scancel", long])  # not to wait out its time limit
    fail_states = {"BOOT_FAIL", "CANCELLED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT", "ERROR"}
    def status():
        since = (datetime.datetime.now() - datetime.timedelta(days=2)).strftime("%Y-%m-%dT%H:00")
        rc, out, err = run(["sacct", "-X", "--parsable2", "--clusters", "all", "--noheader",
                            "--format=JobIdRaw,State", "--starttime", since, "--endtime", "now", "--name", run_uuid])
        check(rc == 0, c, "the status query's exit status", err)
        return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)
    wait_final([ok, fail, oom, long, arr])
    st = status()
    check(st.get(ok) == "COMPLETED", c, "COMPLETED is success", st)
    for j in (fail, oom, long):
        check(st.get(j) in fail_states, c, f"job {j} is a failure (exact string compare)", st.get(j))
    # On a failure it reads each step's Reason: sacct -j ID.STEP; steps here are none, exit 0.
    rc, out, err = run(["sacct", "-j", f"{fail}.0", "--format=Reason", "--noheader"])
    check(rc == 0, c, "sacct -j ID.0 --format=Reason", err)
    try:
        got = open(f"{d}/slurm_job_id.txt").read().strip()
    except OSError as e:
        got = str(e)
    check(got == ok, c, "the job ran in -D with SLURM_JOB_ID", got)
    # The efficiency report's query.
    rc, out, err = run(["sacct", f"--name={run_uuid}", "--parsable2", "--noheader",
                        "--format=JobID,JobName,Comment,Elapsed,TotalCPU,NNodes,NCPUS,MaxRSS,ReqMem"])
    row = next((l.split("|") for l in out.splitlines() if l.startswith(ok + "|")), None)
    check(rc == 0 and row is not None and row[2] == "rule_a", c, "--comment in the efficiency report", out + err)
    check(row is not None and re.match(r"^(\d+-)?\d\d:\d\d:\d\d$", row[3]) is not None, c, "Elapsed", row)


# ---- JupyterHub batchspawner (SlurmSpawner) ----

def batchspawner(s):
    c = "batchspawner"
    home = os.path.join(WORK, "bs")
    os.makedirs(home, exist_ok=True)
    # SlurmSpawner.batch_script; the keepvars come from sbatch's environment.
    script = "\n".join(["#!/bin/bash", f"#SBATCH --output={home}/jupyterhub_slurmspawner_%j.log",
                        "#SBATCH --job-name=spawner-jupyterhub", f"#SBATCH --chdir={home}",
                        "#SBATCH --export=PATH,JUPYTERHUB_API_TOKEN,JUPYTERHUB_SERVICE_PREFIX", "#SBATCH --get-user-env=L",
                        "#SBATCH --time=00:05:00", "#SBATCH --mem=64M", "", "set -euo pipefail", "",
                        "trap 'echo SIGTERM received' TERM",
                        f"srun sh -c 'echo token=$JUPYTERHUB_API_TOKEN prefix=$JUPYTERHUB_SERVICE_PREFIX; sleep 600'",
                        ""])
    env = dict(os.environ, JUPYTERHUB_API_TOKEN="tok-123", JUPYTERHUB_SERVICE_PREFIX="/user/x/")
    # submit_batch_script(): "sbatch --parsable", the script on stdin, a shell.
    rc, out, err = run("sbatch --parsable", shell=True, input=script, env=env)
    check(rc == 0, c, "sbatch --parsable < script", err)
    jid = out.strip().split("\n")[-1].split(";")[0]  # SlurmSpawner.parse_job_id
    check(jid.isdigit(), c, "the job id", out)
    pending = re.compile(r"^(?:PENDING|CONFIGURING)")
    running = re.compile(r"^(?:RUNNING|COMPLETING)")
    unknown = re.compile(r"^slurm_load_jobs error: (?:Socket timed out on send/recv|Unable to contact slurm controller)")
    exechost = re.compile(r"\s+((?:[\w_-]+\.?)+)$")
    def query(j):
        rc, out, err = run(f"squeue -h -j {j} -o '%T %B'", shell=True)
        text = out if rc == 0 else err
        if rc != 0 and unknown.search(text):
            return "unknown", None
        if rc != 0 or not text.strip():
            return "notfound", None
        if pending.search(text):
            return "pending", None
        if running.search(text):
            m = exechost.search(text.strip())
            return "running", m.group(1) if m else None
        return "gone", None
    st = wait_until(lambda: query(jid)[0] == "running" and query(jid), 180)
    check(st and st[0] == "running", c, "the spawned job runs", query(jid))
    check(st and st[1] in (HOST, HOST.split(".")[0]), c, "the exec host from %B", st)
    wait_until(lambda: os.path.exists(f"{home}/jupyterhub_slurmspawner_{jid}.log") and
               "token=" in open(f"{home}/jupyterhub_slurmspawner_{jid}.log").read(), 60)
    try:
        log_text = open(f"{home}/jupyterhub_slurmspawner_{jid}.log").read()
    except OSError as e:
        log_text = str(e)
    check("token=tok-123 prefix=/user/x/" in log_text, c, "--export=NAMES takes the values from sbatch's environment",
          log_text)
    check(query(s.held)[0] == "pending", c, "a pending job", query(s.held))
    rc, _, err = run(f"scancel {jid}", shell=True)
    check(rc == 0, c, "scancel", err)
    wait_final([jid])
    check(query(jid)[0] in ("gone", "notfound"), c, "the cancelled job is not running", query(jid))
    check(query("999999")[0] == "notfound", c, "an unknown job is NOTFOUND", run("squeue -h -j 999999 -o '%T %B'",
                                                                               shell=True))


# ---- Open OnDemand (ood_core's Slurm adapter) ----

US = "\x1f"
OOD_FIELDS = ["Account", "JobID", "BatchHost", "MinCpus", "NumCPUs", "MinTmpDisk", "NumNodes", "EndTime",
              "Dependency", "Feature", "ArrayJobID", "GroupName", "GroupID", "OverSubscribe", "Sockets",
              "JobArrayID", "Cores", "Name", "Threads", "Comment", "ArrayTaskID", "TimeLimit", "TimeLeft",
              "MinMemory", "TimeUsed", "ReqNodes", "NodeList", "Command", "Contiguous", "QOS", "Partition",
              "PriorityLong", "Reason", "StartTime", "StateCompact", "State", "UserName", "UserID",
              "Reservation", "SubmitTime", "WCKey", "Licenses", "ExcNodes", "CoreSpec", "Nice", "SchedNodes",
              "SCT", "WorkDir", "tres-alloc", "tres-per-node"]
OOD_STATES = {"BF", "CA", "CD", "CF", "CG", "F", "NF", "PD", "PR", "RV", "R", "SE", "ST", "S", "TO", "OOM",
              "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
              "PENDING", "PREEMPTED", "RUNNING", "REQUEUED", "REVOKED", "SUSPENDED", "TIMEOUT"}


def ood(s):
    c = "open-ondemand"
    d = os.path.join(WORK, "ood")
    os.makedirs(d, exist_ok=True)
    def squeue(fields, *extra):
        # Batch#get_jobs: squeue --all --states=all --noconvert -O F:\x1F,...,  then the header is
        # skipped up to the first "\x1F\n", each row split on \x1F.
        fmt = "".join(f"{f}:{US}," for f in fields)
        rc, out, err = run(["squeue", "--all", "--states=all", "--noconvert", "-O", fmt, *extra])
        check(rc == 0 or "Invalid job id specified" in err, c, "squeue -O", err)
        if rc != 0:
            return []
        rows = out.split(f"{US}\n", 1)[1] if f"{US}\n" in out else ""
        jobs = []
        for line in rows.split("\n"):
            if not line:
                continue
            vals = line.split(US)
            check(len(vals) == len(fields) + 1, c, f"{len(fields)} fields and the trailing separator", repr(line))
            jobs.append(dict(zip(fields, vals)))
        return jobs
    # submit: sbatch <args> --export <...> --parsable, the script on stdin, values in sbatch's env.
    env = dict(os.environ, OOD_VAR="from-ood")
    script = "#!/bin/bash\necho ood $OOD_VAR $SLURM_JOB_ID\n"
    rc, out, err = run(["sbatch", "-D", d, "-J", "ood-job", "-o", f"{d}/ood-%j.out", "-t", "00:05:00",
                        "--mail-type", "NONE", "--export", "ALL,OOD_VAR", "--parsable"], input=script, env=env)
    check(rc == 0, c, "sbatch ... --parsable < script", err)
    jid = out.strip().split(";")[0]
    check(jid.isdigit(), c, "the job id", out)
    wait_final([jid])
    try:
        text = open(f"{d}/ood-{jid}.out").read()
    except OSError as e:
        text = str(e)
    check(text.strip() == f"ood from-ood {jid}", c, "--export ALL,OOD_VAR", text)
    # status(id): JobID, JobArrayID, StateCompact; matched by JobID or JobArrayID.
    def status(j):
        rows = squeue(["JobID", "JobArrayID", "StateCompact"], "-j", j)
        row = next((r for r in rows if r["JobID"] == j or r["JobArrayID"] == j), None)
        return row["StateCompact"].split()[0] if row else "completed"
    check(status(jid) == "CD", c, "its job", status(jid))
    check(status(s.run) == "R", c, "the running job", status(s.run))
    check(status(s.held) == "PD", c, "the held job", status(s.held))
    check(status(s.oom) == "OOM", c, "the job out of memory", status(s.oom))
    check(status("999999") == "completed", c, "an unknown job is completed")
    # info_all: the 50 fields of the user's jobs.
    rows = squeue(OOD_FIELDS, "-u", USER)
    run_row = next((r for r in rows if r["JobID"] == s.run), None)
    check(run_row is not None, c, "the running job in the full listing", rows[:1])
    if run_row:
        check(run_row["StateCompact"] in OOD_STATES and run_row["State"] in OOD_STATES, c, "its states", run_row)
        check(run_row["BatchHost"] in (HOST, HOST.split(".")[0]), c, "BatchHost", run_row["BatchHost"])
        check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$", run_row["SubmitTime"]) is not None, c, "SubmitTime",
              run_row["SubmitTime"])
        check(re.match(r"^(\d+-)?\d+:\d\d(:\d\d)?$", run_row["TimeUsed"]) is not None, c, "TimeUsed", run_row)
        check(run_row["UserName"] == USER, c, "UserName", run_row["UserName"])
        check(re.search(r"(^|,)cpu=\d+", run_row["tres-alloc"]) is not None, c, "tres-alloc", run_row["tres-alloc"])
    # History: sacct -P --delimiter \x1F -n --units G --allocations -o ... -j ids.
    hist = ["User", "Group", "JobId", "JobName", "Elapsed", "ReqMem", "AllocCPUS", "ReqCPUS", "Timelimit", "State",
            "TotalCPU", "MaxRSS", "Partition", "Submit", "Start", "End", "ReqTRES"]
    rc, out, err = run(["sacct", "-P", "--delimiter", US, "-n", "--units", "G", "--allocations", "-o", ",".join(hist),
                        "-j", f"{jid},{s.oom}"])
    check(rc == 0, c, "sacct history", err)
    rows = [dict(zip(hist, l.split(US))) for l in out.splitlines()]
    check(len(rows) == 2 and all(len(l.split(US)) == len(hist) for l in out.splitlines()), c, "two rows", out)
    oom_row = next((r for r in rows if r["JobId"] == s.oom), {})
    check(oom_row.get("State", "").split(" ")[0] == "OUT_OF_MEMORY", c, "the OOM job's state", oom_row)
    check(re.match(r"^[\d.]+G$", oom_row.get("ReqMem", "")) is not None, c, "ReqMem in G (--units G)", oom_row)
    # hold/release: stderr "Invalid job id specified" counts as success. A job of its own
    # that waits for its begin time, so that releasing it does not start it.
    rc, out, err = run(["sbatch", "--parsable", "-J", "ood-later", "--begin", "now+1hour", "-o", "/dev/null"],
                       input="#!/bin/bash\ntrue\n")
    later = out.strip().split(";")[0]
    for verb in ("hold", "release"):
        rc, _, err = run(["scontrol", verb, later])
        check(rc == 0, c, f"scontrol {verb}", err)
        rc, _, err = run(["scontrol", verb, "999999"])
        check(rc == 0 or "Invalid job id specified" in err, c, f"scontrol {verb} of an unknown job", err)
    run(["scancel", later])
    # Cluster and partition views.
    rc, out, err = run(["scontrol", "show", "part", "-o"])
    check(rc == 0 and out.startswith("PartitionName="), c, "scontrol show part -o", out + err)
    rc, out, err = run(["sinfo", "-aho", "%F/%C"])
    nums = out.strip().split("/")
    check(rc == 0 and len(nums) == 8 and all(n.isdigit() for n in nums), c, "sinfo -aho %F/%C: 8 integers", out + err)
    rc, out, err = run(["sinfo", "-ahNO", "nodehost:100,gres:512,gresused:512,statelong"])
    check(rc == 0 and out.strip() != "", c, "sinfo -ahNO nodehost,gres,gresused,statelong", out + err)
    rc, out, err = run(["sinfo", "-ho", "\x1e%c\x1f%n\x1f%f"])
    recs = [r for r in out.split("\x1e") if r.strip()]
    check(rc == 0 and recs and len(recs[0].split("\x1f")) == 3, c, "sinfo -ho '\\x1e%c\\x1f%n\\x1f%f'", repr(out) + err)
    rc, out, err = run(["sacctmgr", "-nP", "show", "users", "withassoc", "format=account,qos", "where", f"user={USER}"])
    check(rc == 0 and re.match(r"^[\w.-]+\|", out.strip()) is not None, c, "sacctmgr -nP show users withassoc", out + err)


# ---- Cromwell (its Slurm backend example) ----

def cromwell(s):
    c = "cromwell"
    d = os.path.join(WORK, "cromwell")
    os.makedirs(d, exist_ok=True)
    script = write(os.path.join(d, "script"), f"#!/bin/bash\necho $SLURM_JOB_ID\necho 0 > {d}/rc\n")
    # submit: a templated bash line run with /bin/bash.
    line = (f"sbatch -J cromwell_x_say -D {d} -o {d}/stdout -e {d}/stderr -t 5 -p $(sinfo -h -o %P | sed -n 's/[*]$//p') "
            f"-c 1 --mem-per-cpu 64 --wrap \"/bin/bash {script}\"")
    rc, out, err = run(["/bin/bash", "-c", line])
    check(rc == 0, c, "sbatch", err)
    m = re.search(r"Submitted batch job (\d+).*", out)  # job-id-regex
    jid = m.group(1) if m else None
    check(jid is not None, c, "the job id", out)
    wait_final([jid])
    check(os.path.exists(f"{d}/rc"), c, "its rc file, which signals completion")
    # check-alive: squeue -j <id>, only the exit code (0 = alive); an unknown id is dead.
    rc, _, _ = run(["squeue", "-j", s.run])
    check(rc == 0, c, "a running job is alive")
    rc, _, _ = run(["squeue", "-j", "999999"])
    check(rc != 0, c, "an unknown job is dead")


# ---- HyperQueue's automatic allocation ----

def hyperqueue(s):
    c = "hyperqueue"
    d = os.path.join(WORK, "hq")
    os.makedirs(d, exist_ok=True)
    # build_slurm_submit_script(): the user's sbatch args joined on ONE line.
    def submit(body, time_limit="00:05:00"):
        script = "\n".join(["#!/bin/bash", "#SBATCH --nodes=1", "#SBATCH --job-name=hq-1-1",
                            f"#SBATCH --output={d}/stdout", f"#SBATCH --error={d}/stderr", f"#SBATCH --time={time_limit}",
                            "#SBATCH -c 1 --mem=64M", "", body, ""])
        path = write(os.path.join(d, "hq-submit.sh"), script)
        rc, out, err = run(["sbatch", path], cwd=d)
        check(rc == 0, c, "sbatch", err)
        jid = None
        for line in out.splitlines():  # parse_slurm_job_id: "submitted batch job", 4th token
            if line.strip().lower().startswith("submitted batch job"):
                jid = line.strip().split(" ")[3]
        check(jid is not None, c, "the job id", out)
        return jid
    def show(j):
        rc, out, err = run(["scontrol", "show", "job", j])
        check(rc == 0, c, f"scontrol show job {j}", err)
        kv = {}
        for tok in out.replace("\n", " ").split(" "):  # parse_slurm_status: Key=Value on single spaces
            if "=" in tok:
                k, v = tok.split("=", 1)
                kv.setdefault(k, v)
        return kv
    def state(j):
        kv = show(j)
        st = kv.get("JobState")
        if st in ("PENDING", "CONFIGURING"):
            return "queued"
        if st in ("RUNNING", "COMPLETING"):
            return "running"
        if st in ("COMPLETED", "TIMEOUT", "CANCELLED", "FAILED"):
            for k in ("StartTime", "EndTime"):
                try:
                    datetime.datetime.strptime(kv.get(k, ""), "%Y-%m-%dT%H:%M:%S")
                except ValueError:
                    return f"bad {k}={kv.get(k)}"
            return "finished" if st in ("COMPLETED", "TIMEOUT") else "failed"
        return "error"
    # The worker (bootstrap.rs): SLURM_JOB_ID or SLURM_JOBID, SLURM_MEM_PER_NODE, the time left.
    body = (f'id=${{SLURM_JOB_ID:-$SLURM_JOBID}}; echo "mem=$SLURM_MEM_PER_NODE" > {d}/worker.$id; '
            f'scontrol show job $id | tr " " "\\n" | grep -E "^(TimeLimit|RunTime)=" >> {d}/worker.$id')
    jid = submit(body)
    long = submit("sleep 600")
    wait_final([jid])
    check(state(jid) == "finished", c, "its job finished", show(jid))
    check(state(s.run) == "running", c, "the running job", state(s.run))
    check(state(s.held) == "queued", c, "the held job", state(s.held))
    check(state(s.fail) == "failed", c, "the failed job", state(s.fail))
    check(state(s.oom) == "error", c, "OUT_OF_MEMORY is an error to it, as from Slurm", state(s.oom))
    wait_running(long)
    run(["scancel", long])  # remove_allocation: scancel <id>
    wait_final([long])
    check(state(long) == "failed", c, "the cancelled allocation", show(long))
    w = env_of(f"{d}/worker.{jid}")
    check(w.get("mem", "").isdigit(), c, "SLURM_MEM_PER_NODE an integer in MB", w)
    dur = re.compile(r"^(\d+-)?\d\d:\d\d:\d\d$")
    check(dur.match(w.get("TimeLimit", "")) and dur.match(w.get("RunTime", "")), c, "TimeLimit and RunTime [D-]HH:MM:SS",
          w)


# ---- R batchtools ----

def batchtools(s):
    c = "batchtools"
    d = os.path.join(WORK, "bt")
    os.makedirs(d, exist_ok=True)
    part = run("sinfo -h -o %P | sed -n 's/[*]$//p'", shell=True)[1].strip()
    # slurm-simple.tmpl, with an array; a QOS option too, whose warning must not come first.
    script = "\n".join(["#!/bin/bash", "#SBATCH --job-name=bt-job", f"#SBATCH --output={d}/log_%a",
                        f"#SBATCH --error={d}/log_%a", "#SBATCH --time=5", "#SBATCH --ntasks=1",
                        "#SBATCH --cpus-per-task=1", "#SBATCH --mem-per-cpu=64", f"#SBATCH --partition='{part}'",
                        "#SBATCH --qos=normal", "#SBATCH --array=1-2", "",
                        f'echo "$SLURM_ARRAY_TASK_ID $SLURM_JOBID" > {d}/task.$SLURM_ARRAY_TASK_ID', ""])
    path = write(os.path.join(d, "job.sh"), script)
    # submitJob(): system2, stderr merged; the 4th token of the FIRST line.
    rc, out, _ = run(f"sbatch '{path}'", shell=True, merge=True)
    check(rc == 0, c, "sbatch", out)
    first = out.split("\n")[0]
    toks = first.split(" ")
    check(len(toks) >= 4 and toks[3].isdigit() and first.startswith("Submitted batch job"), c,
          "'Submitted batch job N' is the first line, warnings after", out)
    jid = toks[3] if len(toks) >= 4 else None
    # listJobsQueued / listJobsRunning.
    def listed(states):
        rc, out, err = run(f"squeue --user=$USER --states={states} --noheader --format=%i -r", shell=True)
        check(rc == 0, c, f"squeue --states={states}", err)
        return set(out.split())
    queued = listed("PD,CF,RF,RH,RQ,SE")
    running = listed("R,S,CG,RS,SI,SO,ST")
    check(s.held in queued, c, "the held job is queued", queued)
    check(s.run in running, c, "the running job is running", running)
    wait_final([jid])
    wait_until(lambda: os.path.exists(f"{d}/task.2"), 60)
    check(all(os.path.exists(f"{d}/task.{i}") for i in (1, 2)), c, "SLURM_ARRAY_TASK_ID 1 and 2")
    gone = listed("PD,CF,RF,RH,RQ,SE") | listed("R,S,CG,RS,SI,SO,ST")
    check(f"{jid}_1" not in gone and f"{jid}_2" not in gone, c, "finished tasks are in neither list", gone)


# ---- Cylc ----

def cylc(s):
    c = "cylc"
    d = os.path.join(WORK, "cylc")
    os.makedirs(d, exist_ok=True)
    script = "\n".join(["#!/bin/bash -l", "#SBATCH --job-name=hello.1.wflow", f"#SBATCH --output={d}/job%%x.out",
                        f"#SBATCH --error={d}/job%%x.err", "#SBATCH --time=60:00", "",
                        "trap 'echo failed > " + d + "/job.status' ERR TERM XCPU",
                        f"echo succeeded > {d}/job.status", ""])
    path = write(os.path.join(d, "job"), script)
    # submit: shlex-split "sbatch '<job file>'", cwd $HOME, stdin /dev/null.
    rc, out, err = run(["sbatch", path], cwd=os.environ.get("HOME", WORK))
    check(rc == 0, c, "sbatch", err)
    jid = None
    for line in out.splitlines():
        m = re.match(r"\ASubmitted\sbatch\sjob\s(?P<id>\d+)", line)
        if m:
            jid = m.group("id")
    check(jid is not None, c, "the job id", out)
    def present(ids):
        rc, out, _ = run(["squeue", "-h", "-j", ",".join(ids)])  # the exit code is ignored
        return {m.group("id") for m in re.finditer(r"^ *(?P<id>\d+)", out, re.M)}
    check(s.run in present([s.run, "999999"]), c, "a running job is present")
    wait_final([jid])
    check(os.path.exists(f"{d}/job%x.out"), c, "'%%' in --output is a percent sign", os.listdir(d))
    try:
        status = open(f"{d}/job.status").read().strip()
    except OSError as e:
        status = str(e)
    check(status == "succeeded", c, "its job.status file", status)


CLIENTS = [("nextflow", nextflow), ("dask", dask), ("submitit", submitit), ("parsl", parsl), ("snakemake", snakemake),
           ("batchspawner", batchspawner), ("ood", ood), ("cromwell", cromwell), ("hyperqueue", hyperqueue),
           ("batchtools", batchtools), ("cylc", cylc)]


def main():
    os.makedirs(WORK, exist_ok=True)
    os.chdir(WORK)
    log("the shared jobs: completed, failed, out of memory, held, an array, running")
    s = submit_shared()
    for name, fn in CLIENTS:
        if ONLY and name not in ONLY:
            continue
        log(name)
        t = time.time()
        try:
            fn(s)
        except Exception as e:  # a client's step that raised is its failure, not the others'
            check(False, name, "raised", repr(e))
        log(f"{name}: {time.time() - t:.1f} s")
    run(["scancel", s.run, s.held])
    if failures:
        print(f"{len(failures)} failures", flush=True)
        sys.exit(1)
    log("every client concluded what it would from Slurm")


main()
