/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the daemon reads of a job's scope, below the executor's cgroup root (the one
 * ExecutorConfig.cgroup_root names; a tmpdir in tests): whether a process is left in it,
 * its memory now, its usage so far. And the one mapping from a cgroup's counters to the
 * accounting of an outcome, which the supervisor uses at the job's end and
 * executor_job_usage() while it runs, so that a charge reads the same either way. */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup-stat.h"
#include "cgroup-usage.h"
#include "cgroup-util.h"
#include "executor-internal.h"
#include "fd-util.h"
#include "parse-util.h"
#include "spec-json.h"
#include "unit-name.h"

int executor_job_cgroup(uint64_t job_id, const char *project, char **ret) {
        _cleanup_free_ char *slice = NULL, *unit = NULL;
        int r;

        /* systemd's own layout: a dash in a slice name is a level of nesting, and the
         * project's name is escaped so that it never is. */
        r = unit_name_job_scope(job_id, &unit);
        if (r < 0)
                return r;
        if (isempty(project))
                return asprintf(ret, "corral.slice/%s", unit) < 0 ? -ENOMEM : 0;
        r = unit_name_project_slice(project, &slice);
        if (r < 0)
                return r;
        return asprintf(ret, "corral.slice/%s/%s", slice, unit) < 0 ? -ENOMEM : 0;
}

int job_outcome_read_usage(int root_fd, const char *cgroup, JobOutcome *o) {
        CgroupUsage u = {};
        int r;

        r = cg_read_usage(root_fd, cgroup, &u);
        if (r < 0)
                return r;
        if (u.has_cpu) {
                o->cpu_usage_usec = u.cpu.usage_usec;
                o->cpu_user_usec = u.cpu.user_usec;
                o->cpu_system_usec = u.cpu.system_usec;
        }
        /* Before Linux 5.19 there is no memory.peak: what is charged now is the least the
         * peak was. */
        if (u.has_memory_peak)
                o->memory_peak = u.memory_peak;
        else if (u.has_memory_current)
                o->memory_peak = MAX(o->memory_peak, u.memory_current);
        if (u.has_memory_events)
                o->oom_kills = u.memory_events.oom_kill;
        if (u.has_pids_peak)
                o->pids_peak = u.pids_peak;
        if (u.has_io) {
                CgroupIoDevice t;
                cgroup_io_stat_total(&u.io, &t);
                o->io_read_bytes = t.rbytes;
                o->io_write_bytes = t.wbytes;
                o->io_read_ios = t.rios;
                o->io_write_ios = t.wios;
        }
        /* Why a job ran slowly: the time its tasks stalled, which only the kernel knows. */
        if (u.has_cpu_pressure || u.has_memory_pressure || u.has_io_pressure) {
                o->has_pressure = true;
                o->cpu_some_usec = u.cpu_pressure.some_usec;
                o->cpu_full_usec = u.cpu_pressure.full_usec;
                o->memory_some_usec = u.memory_pressure.some_usec;
                o->memory_full_usec = u.memory_pressure.full_usec;
                o->io_some_usec = u.io_pressure.some_usec;
                o->io_full_usec = u.io_pressure.full_usec;
        }
        cgroup_usage_done(&u);
        return 0;
}

static int job_cgroup_open(Executor *e, uint64_t job_id, const char *project) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = executor_job_cgroup(job_id, project, &path);
        if (r < 0)
                return r;
        return cg_open(e->cgroup_root_fd, path);
}

int executor_job_populated(Executor *e, uint64_t job_id, const char *project) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *v = NULL;
        CgroupEvents ev;
        int r;

        assert(e);
        fd = job_cgroup_open(e, job_id, project);
        if (fd < 0)
                return fd;
        r = cg_read_attr(fd, "cgroup.events", &v);
        if (r < 0)
                return r;
        r = cg_parse_events(v, &ev);
        if (r < 0)
                return r;
        return ev.populated;
}

int executor_job_usage(Executor *e, uint64_t job_id, const char *project, JobOutcome *ret) {
        _cleanup_free_ char *path = NULL;
        JobOutcome o = { .id = job_id };
        int r;

        assert(e);
        assert(ret);
        r = executor_job_cgroup(job_id, project, &path);
        if (r < 0)
                return r;
        r = job_outcome_read_usage(e->cgroup_root_fd, path, &o);
        if (r < 0)
                return r;
        *ret = o;
        return 0;
}

int executor_job_memory_current(Executor *e, uint64_t job_id, const char *project, uint64_t *ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *v = NULL;
        unsigned long long u;
        int r;

        fd = job_cgroup_open(e, job_id, project);
        if (fd < 0)
                return fd;
        r = cg_read_attr(fd, "memory.current", &v);
        if (r < 0)
                return r;
        if (sscanf(v, "%llu", &u) != 1)
                return -EBADMSG;
        *ret = u;
        return 0;
}

/* The supervisor: the one process in the scope's own cgroup (the job is in its leaf), or
 * in its own leaf "supervisor" where the job's leaf has memory nodes of its own. */
static int scope_supervisor(int scope_fd, pid_t *ret) {
        _cleanup_free_ char *procs = NULL;
        unsigned v;
        int r;

        r = cg_read_attr(scope_fd, "cgroup.procs", &procs);
        if (r == -ENOENT)
                return -ESRCH;
        if (r >= 0 && isempty(procs)) {
                procs = mfree(procs);
                r = cg_read_attr(scope_fd, "supervisor/cgroup.procs", &procs);
                if (r == -ENOENT)
                        return -ESRCH;
        }
        if (r < 0)
                return r;
        procs[strcspn(procs, "\n")] = 0;
        if (isempty(procs))
                return -ESRCH;
        if (safe_atou(procs, &v) < 0 || v == 0 || v > INT32_MAX)
                return -EBADMSG;
        *ret = (pid_t) v;
        return 0;
}

/* Whether pid blocks sig (its SigBlk:): a supervisor that knows the relay takes it through
 * its signalfd, one from before would die of it. */
static int blocks_signal(pid_t pid, int sig) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], line[256];

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? -ESRCH : -errno;
        while (fgets(line, sizeof line, f)) {
                unsigned long long mask;

                if (strncmp(line, "SigBlk:", 7) != 0)
                        continue;
                if (sscanf(line + 7, "%llx", &mask) != 1)
                        return -EBADMSG;
                return sig <= 64 && (mask >> (sig - 1)) & 1;
        }
        return -EBADMSG;
}

int executor_signal(Executor *e, uint64_t job_id, const char *project, int sig, bool batch_only) {
        _cleanup_close_ int fd = -EBADF, pidfd = -EBADF;
        siginfo_t si = {};
        pid_t pid, again;
        int r;

        if (!e)
                return -ENOTCONN;
        if (sig <= 0 || sig >= _NSIG)
                return -EINVAL;
        fd = job_cgroup_open(e, job_id, project);
        if (fd == -ENOENT)
                return -ESRCH;
        if (fd < 0)
                return fd;
        r = scope_supervisor(fd, &pid);
        if (r < 0)
                return r;
        /* Pinned, then checked again: a pid the supervisor left behind, reused meanwhile,
         * is not in the scope any more. */
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        r = scope_supervisor(fd, &again);
        if (r < 0)
                return r;
        if (again != pid)
                return -ESRCH;
        r = blocks_signal(pid, JOB_SIGNAL_RELAY);
        if (r < 0)
                return r;
        if (r == 0)
                return -EOPNOTSUPP;
        si.si_signo = JOB_SIGNAL_RELAY;
        si.si_code = SI_QUEUE;
        si.si_pid = getpid();
        si.si_uid = getuid();
        si.si_value.sival_int = sig | (batch_only ? JOB_SIGNAL_RELAY_BATCH : 0);
        if (syscall(SYS_pidfd_send_signal, pidfd, JOB_SIGNAL_RELAY, &si, 0) < 0)
                return -errno;
        return 0;
}
