/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral-supervisor: the parent of one job, living inside the job's scope.
 *
 * corrald spawns it, has systemd move it into corral-job-<id>.scope (StartTransientUnit
 * with PIDs=), and then tells it to go over the sync pipe. From then on it needs nothing
 * from the daemon: it starts the job as its user in the leaf cgroup <scope>/job, relays
 * the job's output to the journal with CORRAL_JOB_ID= (a writer inside the scope, so the
 * lines belong to the scope), enforces the walltime, and when the job has ended writes the
 * outcome (exit status, signal, OOM kill, timeout, accounting from the scope's cgroup) to
 * <result-dir>/<id>.json. The daemon picks that file up whenever it runs — so outcomes
 * survive a daemon restart or SIGKILL. The supervisor stays in the scope root with
 * oom_score_adj -1000, so an OOM kill of the job never takes it along (the scope has
 * OOMPolicy=continue so systemd does not stop the scope either).
 *
 * SIGTERM (systemctl stop, or KillUnit from corrald to cancel) is forwarded to the job's
 * processes; after the grace period the job's cgroup is killed outright. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <linux/sched.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#if HAVE_SELINUX
#include <selinux/context.h>
#include <selinux/get_context_list.h>
#include <selinux/selinux.h>
#endif

#include "cgroup-kill.h"
#include "cgroup-pid.h"
#include "cgroup-util.h"
#include "errno-util.h"
#include "fd-util.h"
#include "fork-server.h"
#include "journal-send.h"
#include "log.h"
#include "parse-util.h"
#include "spec-json.h"
#include "time-util.h"
#include "unit-name.h"

#define JOB_LEAF "job"
/* Where we go when the job's leaf has memory nodes of its own (bind_leaf_mems()). */
#define SUPERVISOR_LEAF "supervisor"
#define LINE_MAX_RELAY (48 * 1024) /* journald's default LineMax */
/* A tick that arrives this much later than scheduled means the scope was frozen. */
#define FROZEN_GAP_USEC (3 * USEC_PER_SEC)

static uint64_t arg_job_id;
static const char *arg_spec_path;
static const char *arg_result_dir;
static int arg_sync_fd = -EBADF;
static uint64_t arg_kill_wait_usec = 30 * USEC_PER_SEC;
/* --stdio-fds: an interactive job's stdin, stdout and stderr, inherited from corrald as
 * descriptors 4, 5 and 6 (executor_start_fds()), in place of the spec's files. */
#define STDIO_FDS_FIRST 4
static bool arg_stdio_fds;
/* --server-fd: the fork server's socket (fork-server.c); --spec-dir: where its jobs' specs are. */
static int arg_server_fd = -EBADF;
static const char *arg_spec_dir;

/* Launch failures in the child travel back as one record over a CLOEXEC pipe: an exec
 * that succeeds closes it, so EOF means the job is running. The record fits in PIPE_BUF,
 * so it arrives whole or not at all. reason goes into the public queue view and so never
 * names a path or an argument; detail does, for the owner. */
typedef struct LaunchError {
        int error;
        char reason[160];
        char detail[1024];
} LaunchError;
_Static_assert(sizeof(LaunchError) <= PIPE_BUF, "a launch error must reach the supervisor in one write");

/* what: the step that failed, in words ("cannot open the output file"); object: the path
 * or program it was about, for the detail only (may be NULL); cause: the reason in words,
 * NULL for strerror(error). */
_noreturn_ static void child_fail(int fd, int error, const char *what, const char *object,
                                  const char *cause) {
        LaunchError e = { .error = error < 0 ? -error : error };

        if (!cause)
                cause = strerror(e.error);
        (void) snprintf(e.reason, sizeof e.reason, "%s: %s", what, cause);
        if (object)
                (void) snprintf(e.detail, sizeof e.detail, "%s %s: %s", what, object, cause);
        else
                (void) snprintf(e.detail, sizeof e.detail, "%s", e.reason);
        (void) loop_write(fd, &e, sizeof e);
        _exit(127);
}

/* Opens one of the job's stdio files. The credentials are already the user's: the kernel
 * checks every path component and a symlink's target as that user, so a link to
 * /etc/shadow or a path into another user's private directory is refused (EACCES) as it
 * would be for the user's own shell, never opened with our rights.
 *
 * Special files: we take what the user could open from a shell and open it without ever
 * waiting. O_NONBLOCK makes a FIFO opened for writing fail at once (ENXIO) when no process
 * reads it, instead of holding the job's CPUs while nothing runs until a reader turns up,
 * perhaps never; a FIFO with a reader works, as does one for input (the job then reads
 * what its writers send, EOF when there are none). Character devices the user may open
 * (/dev/null, a terminal of theirs) do not wait for a carrier either. The flag is cleared
 * once the file is open, so the job's own reads and writes block as usual. Files are
 * created 0666 less the job's umask, as a shell redirection would create them. */
static int open_as_user(const char *path, int flags) {
        _cleanup_close_ int fd = -EBADF;
        int fl;

        fd = open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666);
        if (fd < 0)
                return negative_errno();
        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

/* Words for the failures whose errno alone would puzzle. */
static const char *open_failure_cause(const char *path, int error, bool creating) {
        struct stat st;

        if (error == -ENXIO && stat(path, &st) >= 0) {
                if (S_ISFIFO(st.st_mode))
                        return "it is a FIFO that no process is reading";
                if (S_ISSOCK(st.st_mode))
                        return "it is a socket";
        }
        if (error == -ENOENT && creating)
                return "a directory on its path does not exist";
        return NULL;
}

_noreturn_ static void child_fail_open(int fd, int error, const char *what, const char *path,
                                       bool creating) {
        child_fail(fd, error, what, path, open_failure_cause(path, error, creating));
}

/* The SLURM_* variables build_environment() sets itself (SLURM_NTASKS,
 * SLURM_CPUS_PER_TASK and SLURM_SUBMIT_DIR come from the request when the client put them
 * there). */
static bool slurm_variable_is_ours(const char *assignment) {
        static const char *const ours[] = {
                "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NAME", "SLURM_JOB_USER", "SLURM_JOB_ACCOUNT",
                "SLURM_JOB_PARTITION", "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE", "SLURM_JOB_NUM_NODES",
                "SLURM_NNODES", "SLURM_MEM_PER_NODE", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID",
                "SLURMD_NODENAME", "SLURM_JOB_NODELIST", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID",
                "SLURM_NODELIST", "SLURM_NODEID", "SLURM_CLUSTER_NAME", "SLURM_SUBMIT_HOST",
                "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_STEP",
        };
        size_t n = strcspn(assignment, "=");

        for (size_t i = 0; i < ELEMENTSOF(ours); i++)
                if (strlen(ours[i]) == n && strneq(assignment, ours[i], n))
                        return true;
        return false;
}

/* The GPU variables: under a device fence, the daemon's (device_environment) replace the
 * submitter's, which name GPUs of the shell they came from; a job without GPUs gets none. */
static bool gpu_variable(const char *assignment) {
        static const char *const names[] = {
                "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
                "SLURM_JOB_GPUS", "SLURM_GPUS_ON_NODE", "SLURM_STEP_GPUS", "SLURM_SHARDS_ON_NODE",
        };
        size_t n = strcspn(assignment, "=");

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strlen(names[i]) == n && strneq(assignment, names[i], n))
                        return true;
        return false;
}

static char **build_environment(const JobSpec *s, const struct passwd *pw) {
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char *cpus = cpu_set_format(&s->cpus);
        char buf[64];
        bool have_path = strv_env_get(s->environment, "PATH");

        if (!cpus)
                return NULL;
        /* The job's own variables first; ours cannot be overridden by them. Slurm's names
         * for what we set (a job submitted from inside another carries its parent's) are
         * ours too: tools written for Slurm read them (corral-slurm(7)). */
        STRV_FOREACH(e, s->environment)
                if (!strneq(*e, "CORRAL_", 7) && !slurm_variable_is_ours(*e) &&
                    !(s->device_fence && gpu_variable(*e)) && strv_extend(&env, *e) < 0)
                        return NULL;
#define SETENV(fmt, ...)                                                                   \
        do {                                                                               \
                char *_v;                                                                  \
                if (asprintf(&_v, fmt, __VA_ARGS__) < 0 || strv_push(&env, _v) < 0)        \
                        return NULL;                                                       \
        } while (0)
        if (!have_path)
                SETENV("%s", "PATH=/usr/local/bin:/usr/bin:/bin");
        if (pw) {
                if (!strv_env_get(env, "HOME"))
                        SETENV("HOME=%s", pw->pw_dir);
                if (!strv_env_get(env, "USER"))
                        SETENV("USER=%s", pw->pw_name);
                if (!strv_env_get(env, "LOGNAME"))
                        SETENV("LOGNAME=%s", pw->pw_name);
                if (!strv_env_get(env, "SHELL"))
                        SETENV("SHELL=%s", pw->pw_shell);
        }
        SETENV("CORRAL_JOB_ID=%" PRIu64, s->id);
        SETENV("CORRAL_JOB_NAME=%s", strempty(s->name));
        SETENV("CORRAL_CPUS=%s", cpus);
        SETENV("CORRAL_NCPUS=%u", cpu_set_count(&s->cpus));
        SETENV("CORRAL_PROJECT=%s", strempty(s->project));
        SETENV("CORRAL_QUEUE=%s", strempty(s->queue));
        SETENV("CORRAL_USER=%s", strempty(s->user));
        if (s->array_job_id) {
                /* Slurm's SLURM_ARRAY_JOB_ID / SLURM_ARRAY_TASK_ID. */
                SETENV("CORRAL_ARRAY_JOB_ID=%" PRIu64, s->array_job_id);
                SETENV("CORRAL_ARRAY_TASK_ID=%" PRIu32, s->array_task_id);
        }
        snprintf(buf, sizeof buf, "%" PRIu64, s->walltime_sec);
        if (s->walltime_sec > 0 && s->walltime_sec != DURATION_INFINITY)
                SETENV("CORRAL_WALLTIME=%s", buf);

        /* Slurm's view of the same job: one node, one task unless sbatch/corral submit put
         * SLURM_NTASKS and SLURM_CPUS_PER_TASK in the request (from -n and -c). */
        SETENV("SLURM_JOB_ID=%" PRIu64, s->id);
        SETENV("SLURM_JOBID=%" PRIu64, s->id);
        SETENV("SLURM_JOB_NAME=%s", strempty(s->name));
        SETENV("SLURM_JOB_USER=%s", strempty(s->user));
        SETENV("SLURM_JOB_ACCOUNT=%s", strempty(s->project));
        SETENV("SLURM_JOB_PARTITION=%s", strempty(s->queue));
        SETENV("SLURM_CPUS_ON_NODE=%u", cpu_set_count(&s->cpus));
        SETENV("SLURM_JOB_CPUS_PER_NODE=%u", cpu_set_count(&s->cpus));
        SETENV("SLURM_JOB_NUM_NODES=%u", 1U);
        SETENV("SLURM_NNODES=%u", 1U);
        if (!strv_env_get(env, "SLURM_NTASKS"))
                SETENV("SLURM_NTASKS=%u", 1U);
        if (!strv_env_get(env, "SLURM_CPUS_PER_TASK"))
                SETENV("SLURM_CPUS_PER_TASK=%u", cpu_set_count(&s->cpus));
        if (s->memory_max > 0)
                SETENV("SLURM_MEM_PER_NODE=%" PRIu64, s->memory_max >> 20);
        if (s->array_job_id) {
                SETENV("SLURM_ARRAY_JOB_ID=%" PRIu64, s->array_job_id);
                SETENV("SLURM_ARRAY_TASK_ID=%" PRIu32, s->array_task_id);
        }
        if (s->array_job_id && s->array_task_count > 0) {
                SETENV("SLURM_ARRAY_TASK_MIN=%" PRIu32, s->array_task_min);
                SETENV("SLURM_ARRAY_TASK_MAX=%" PRIu32, s->array_task_max);
                SETENV("SLURM_ARRAY_TASK_COUNT=%" PRIu32, s->array_task_count);
                SETENV("SLURM_ARRAY_TASK_STEP=%" PRIu32, s->array_task_step);
        }
        if (!strv_env_get(env, "SLURM_SUBMIT_DIR") && s->working_directory)
                SETENV("SLURM_SUBMIT_DIR=%s", s->working_directory);
        /* The batch step's own numbers, which tools read outside srun too (submitit:
         * SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID; Parsl: SLURM_NODELIST). */
        SETENV("SLURM_PROCID=%u", 0U);
        SETENV("SLURM_LOCALID=%u", 0U);
        SETENV("SLURM_NODEID=%u", 0U);
        if (gethostname(buf, sizeof buf) >= 0) {
                buf[sizeof buf - 1] = 0;
                SETENV("SLURMD_NODENAME=%s", buf);
                SETENV("SLURM_JOB_NODELIST=%s", buf);
                SETENV("SLURM_NODELIST=%s", buf);
                SETENV("SLURM_SUBMIT_HOST=%s", buf);
                SETENV("SLURM_CLUSTER_NAME=%s", buf); /* scontrol show config's ClusterName */
        }
        STRV_FOREACH(e, s->device_environment)
                if (strv_extend(&env, *e) < 0)
                        return NULL;
#undef SETENV
        return TAKE_PTR(env);
}

/* The job runs in its user's default SELinux context, the one a login gives them, never in
 * the supervisor's domain. It is computed here while still root (through selinuxfs) and
 * taken with setcon(3) once the child is the user and holds no capability, before it
 * changes to the working directory or opens a file on the user's behalf: the policy
 * then checks those as the user's own, so a confined user's job cannot reach through the
 * supervisor what the user could not reach from a shell. The reference is a local login
 * (local_login_t of the policy's default_contexts): the supervisor's own domain has no
 * line there. Where SELinux is off nothing is done and *ret is NULL; in permissive mode a
 * failure is not fatal. */
static int job_context(const struct passwd *pw, char **ret, const char **ret_step) {
#if HAVE_SELINUX
        _cleanup_free_ char *seuser = NULL, *level = NULL;
        char *self = NULL, *con = NULL;
        context_t ref = NULL;
        int r = 0;

        *ret = NULL;
        *ret_step = "is_selinux_enabled";
        if (is_selinux_enabled() <= 0) {
                /* libselinux looks for selinuxfs, and a policy that hides it (silently: it is
                 * not audited) makes SELinux seem off. In our own domain it is not: the job
                 * must not run there. */
                bool ours = getcon(&self) >= 0 && strstr(self, ":corral_supervisor_t:");
                freecon(self);
                return ours ? -EACCES : 0;
        }
        if (*ret_step = "getcon", getcon(&self) < 0)
                r = -errno;
        else if (!(ref = context_new(self)) || context_type_set(ref, "local_login_t") < 0)
                r = -ENOMEM;
        else if (*ret_step = "getseuserbyname",
                 getseuserbyname(pw ? pw->pw_name : "__default__", &seuser, &level) < 0)
                r = -errno;
        else if (*ret_step = "get_default_context_with_level",
                 get_default_context_with_level(seuser, level, context_str(ref), &con) < 0)
                r = -errno;
        if (ref)
                context_free(ref);
        if (r >= 0) {
                freecon(self);
                *ret = con;
                return 0;
        }
        if (security_getenforce() == 0) {
                freecon(self);
                return 0;
        }
        /* Enforcing. Under Corral's policy module the job would otherwise run in
         * corral_supervisor_t: refuse. Without the module the supervisor runs in whatever
         * domain the site gives corrald, and the job as it did before. */
        bool ours = self && strstr(self, ":corral_supervisor_t:");
        freecon(self);
        if (!ours)
                return 0;
        return r == -EINVAL ? -EACCES : r;
#else
        (void) pw;
        *ret = NULL;
        *ret_step = NULL;
        return 0;
#endif
}

/* Switches to the context job_context() computed, and frees it. */
static int job_context_enter(char *con) {
#if HAVE_SELINUX
        int r;

        if (!con)
                return 0;
        r = setcon(con) < 0 ? -errno : 0;
        freecon(con);
        if (r < 0 && security_getenforce() == 0)
                return 0;
        return r;
#else
        (void) con;
        return 0;
#endif
}

/* What run_child() is given ready: the user's entry (NULL: the uid has none), the SELinux
 * context to enter (or why there is none: con_error < 0, at con_step) and the job's
 * environment (NULL: out of memory). */
typedef struct ChildPrep {
        struct passwd *pw;
        char *con;
        const char *con_step;
        int con_error;
        char **env;
} ChildPrep;

static struct passwd *passwd_dup(const struct passwd *pw) {
        struct passwd *c;

        if (!pw || !(c = new0(struct passwd, 1)))
                return NULL;
        c->pw_uid = pw->pw_uid;
        c->pw_gid = pw->pw_gid;
        if (!(c->pw_name = strdup(pw->pw_name)) || !(c->pw_dir = strdup(strempty(pw->pw_dir))) ||
            !(c->pw_shell = strdup(strempty(pw->pw_shell)))) {
                free(c->pw_name);
                free(c->pw_dir);
                free(c);
                return NULL;
        }
        return c;
}

static void child_prep_done(ChildPrep *p) {
        if (p->pw) {
                free(p->pw->pw_name);
                free(p->pw->pw_dir);
                free(p->pw->pw_shell);
                p->pw = mfree(p->pw);
        }
#if HAVE_SELINUX
        if (p->con)
                freecon(p->con);
#endif
        p->con = NULL;
        p->env = strv_free(p->env);
}

/* Everything the child would otherwise look up after the go. Failures are the child's to
 * report (as launch errors), so this never fails; an entry that cannot be copied is
 * looked up again in the child. */
static void child_prep(const JobSpec *s, ChildPrep *p) {
        /* The daemon's lookup, in the spec; only a spec without it (an older daemon's)
         * makes us ask the name service. */
        const struct passwd from_spec = { .pw_name = s->user, .pw_uid = s->uid, .pw_gid = s->gid,
                                          .pw_dir = s->home, .pw_shell = s->shell };
        const struct passwd *pw = s->user && s->home && s->shell ? &from_spec : getpwuid(s->uid);

        p->pw = passwd_dup(pw);
        p->con_error = job_context(p->pw ?: pw, &p->con, &p->con_step);
        p->env = build_environment(s, p->pw ?: pw);
}

/* In the forked child: join the job's cgroup, become the user, set up stdio and exec.
 * Never returns. */
_noreturn_ static void run_child(const JobSpec *s, ChildPrep *prep, int job_procs_fd, bool joined, int err_fd,
                                 int out_pipe, int err_pipe, int script_fd) {
        const struct passwd *pw;
        char **env;
        char *const *argv;
        char *sh_argv[3];
        char fdpath[64];
        int in_fd, out_fd, errout_fd, r;
        /* A requeued job's second run appends to the first's output with --open-mode=append. */
        int open_mode = s->output_append ? O_APPEND : O_TRUNC;
        char *con = NULL;
        const char *step = NULL;
        cap_t caps, empty;
        sigset_t all;

        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        for (int sig = 1; sig < _NSIG; sig++)
                (void) signal(sig, SIG_DFL);

        if (!joined && loop_write(job_procs_fd, "0", 1) < 0)
                child_fail(err_fd, errno, "cannot join the job's cgroup", NULL, NULL);
        if (arg_stdio_fds)
                /* Before any file is opened below: it must not take one of their numbers. */
                for (int i = 0; i < 3; i++)
                        if (fcntl(STDIO_FDS_FIRST + i, F_SETFD, FD_CLOEXEC) < 0)
                                child_fail(err_fd, errno, "cannot take the job's terminal", NULL, NULL);
        (void) write_string_file_at(AT_FDCWD, "/proc/self/oom_score_adj", "0");
        (void) setsid();

        pw = prep->pw ?: getpwuid(s->uid);
        con = TAKE_PTR(prep->con);
        step = prep->con_step;
        r = prep->con_error;
        if (r < 0)
                child_fail(err_fd, -r, "cannot find the job's SELinux context", step, NULL);
        if (s->n_supplementary_gids > 0 || !pw) {
                if (setgroups(s->n_supplementary_gids, s->supplementary_gids) < 0)
                        child_fail(err_fd, errno, "cannot set the job's groups", NULL, NULL);
        } else if (initgroups(pw->pw_name, s->gid) < 0)
                child_fail(err_fd, errno, "cannot set the job's groups", NULL, NULL);
        if (setresgid(s->gid, s->gid, s->gid) < 0)
                child_fail(err_fd, errno, "cannot switch to the job's group", NULL, NULL);
        if (setresuid(s->uid, s->uid, s->uid) < 0)
                child_fail(err_fd, errno, "cannot switch to the job's user", NULL, NULL);

        /* No capabilities may survive, not even for a job of uid 0, and nothing the job
         * execs may gain any (setuid binaries included). */
        empty = cap_init();
        if (!empty || cap_set_proc(empty) < 0)
                child_fail(err_fd, errno, "cannot drop capabilities", NULL, NULL);
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                child_fail(err_fd, errno, "cannot clear ambient capabilities", NULL, NULL);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                child_fail(err_fd, errno, "cannot set no_new_privs", NULL, NULL);
        caps = cap_get_proc();
        if (!caps || cap_compare(caps, empty) != 0)
                child_fail(err_fd, EPERM, "capabilities remain after dropping privileges", NULL, NULL);
        cap_free(caps);
        cap_free(empty);

        /* The submitter's, as sbatch does it: corrald's own 0022 would make every output file
         * world-readable even for a user whose umask says 077. */
        (void) umask(s->has_umask ? s->umask & 0777 : 0022);

        /* From here on the child is the user in the user's own domain: what follows is
         * done with the user's rights, DAC and MAC alike. */
        r = job_context_enter(TAKE_PTR(con));
        if (r < 0)
                child_fail(err_fd, -r, "cannot enter the job's SELinux context", NULL, NULL);

        if (s->working_directory && chdir(s->working_directory) < 0)
                child_fail(err_fd, errno, "cannot change to the working directory", s->working_directory,
                           NULL);
        else if (!s->working_directory && pw && chdir(pw->pw_dir) < 0)
                (void) chdir("/");

        if (arg_stdio_fds) {
                /* Interactive: the client's terminal or pipes, checked by corrald as the
                 * user's own. A terminal becomes the job's controlling terminal (the child
                 * leads a session of its own since setsid() above) with the job in its
                 * foreground, as a login shell's: Ctrl-C, Ctrl-Z, Ctrl-\ and window size
                 * changes reach it through the terminal. Done as the user and without
                 * force (arg 0): a terminal that is another session's stays theirs. */
                if (dup2(STDIO_FDS_FIRST, 0) < 0 || dup2(STDIO_FDS_FIRST + 1, 1) < 0 ||
                    dup2(STDIO_FDS_FIRST + 2, 2) < 0)
                        child_fail(err_fd, errno, "cannot set up stdio", NULL, NULL);
                for (int i = 0; i < 3; i++) {
                        if (!isatty(i))
                                continue;
                        if (ioctl(i, TIOCSCTTY, 0) < 0)
                                child_fail(err_fd, errno, "cannot make the terminal the job's controlling terminal",
                                           NULL, NULL);
                        if (tcsetpgrp(i, getpid()) < 0)
                                child_fail(err_fd, errno, "cannot put the job in the terminal's foreground", NULL,
                                           NULL);
                        break;
                }
                goto stdio_done;
        }
        in_fd = open_as_user(s->stdin_path ?: "/dev/null", O_RDONLY);
        if (in_fd < 0)
                child_fail_open(err_fd, in_fd, "cannot open the input file", s->stdin_path ?: "/dev/null",
                                false);
        if (s->stdout_path) {
                out_fd = open_as_user(s->stdout_path, O_WRONLY | O_CREAT | open_mode);
                if (out_fd < 0)
                        child_fail_open(err_fd, out_fd, "cannot open the output file", s->stdout_path, true);
        } else
                out_fd = out_pipe;
        if (s->stderr_path && s->stdout_path && streq(s->stderr_path, s->stdout_path))
                errout_fd = out_fd;
        else if (s->stderr_path) {
                errout_fd = open_as_user(s->stderr_path, O_WRONLY | O_CREAT | open_mode);
                if (errout_fd < 0)
                        child_fail_open(err_fd, errout_fd, "cannot open the error file", s->stderr_path,
                                        true);
        } else
                errout_fd = err_pipe;

        if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(errout_fd, 2) < 0)
                child_fail(err_fd, errno, "cannot set up stdio", NULL, NULL);
stdio_done:

        env = prep->env;
        if (!env)
                child_fail(err_fd, ENOMEM, "cannot build the environment", NULL, NULL);

        if (s->script) {
                /* The script is read from a memfd the job inherits: no file of it to leave
                 * behind, and it works whatever the working directory is. */
                if (dup2(script_fd, 3) < 0)
                        child_fail(err_fd, errno, "cannot pass the script", NULL, NULL);
                (void) close_range(4, ~0U, CLOSE_RANGE_CLOEXEC);
                snprintf(fdpath, sizeof fdpath, "/proc/self/fd/3");
                if (strneq(s->script, "#!", 2)) {
                        sh_argv[0] = fdpath;
                        sh_argv[1] = NULL;
                } else {
                        sh_argv[0] = (char *) "/bin/sh";
                        sh_argv[1] = fdpath;
                        sh_argv[2] = NULL;
                }
                argv = sh_argv;
        } else {
                (void) close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
                argv = s->argv;
        }

        r = 0;
        if (strchr(argv[0], '/'))
                execve(argv[0], argv, env);
        else {
                /* PATH lookup with the job's PATH, as a shell would. */
                environ = env;
                execvpe(argv[0], argv, env);
        }
        r = errno;
        if (s->script)
                child_fail(err_fd, r, "cannot execute the job script", NULL, NULL);
        child_fail(err_fd, r, "cannot execute the job's command", argv[0], NULL);
}

typedef struct Relay {
        int fd;
        int priority;
        const char *stream;
        char buf[LINE_MAX_RELAY];
        size_t n;
} Relay;

/* The identifier is ours, never the job's name: we write as root, and a job named "sudo"
 * must not log lines that read as root's sudo. The name goes in a field of its own. */
static char relay_ident[64];
static const char *relay_job_name;

static void relay_emit(Relay *r, const char *p, size_t n) {
        char pbuf[16], idbuf[32];

        (void) snprintf(pbuf, sizeof pbuf, "%d", r->priority);
        (void) snprintf(idbuf, sizeof idbuf, "%" PRIu64, arg_job_id);
        /* Up to a NUL, as the "%.*s" of sd_journal_send() took it. */
        JournalField f[] = {
                { "MESSAGE", p, strnlen(p, n) },          { "PRIORITY", pbuf, SIZE_MAX },
                { "SYSLOG_IDENTIFIER", relay_ident, SIZE_MAX }, { "CORRAL_JOB_ID", idbuf, SIZE_MAX },
                { "CORRAL_JOB_NAME", relay_job_name, SIZE_MAX }, { "CORRAL_STREAM", r->stream, SIZE_MAX },
        };
        (void) journal_send(f, ELEMENTSOF(f));
}

/* Reads what is there; returns false at EOF. */
static bool relay_read(Relay *r) {
        ssize_t k = read(r->fd, r->buf + r->n, sizeof r->buf - r->n);
        char *nl;
        size_t start = 0;

        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                return true;
        if (k <= 0) {
                if (r->n > 0)
                        relay_emit(r, r->buf, r->n);
                r->n = 0;
                return false;
        }
        r->n += (size_t) k;
        while ((nl = memchr(r->buf + start, '\n', r->n - start))) {
                relay_emit(r, r->buf + start, (size_t) (nl - (r->buf + start)));
                start = (size_t) (nl - r->buf) + 1;
        }
        if (start == 0 && r->n == sizeof r->buf) {
                relay_emit(r, r->buf, r->n); /* an over-long line goes out in pieces */
                r->n = 0;
        } else if (start > 0) {
                memmove(r->buf, r->buf + start, r->n - start);
                r->n -= start;
        }
        return true;
}

static void record_launch_error(LaunchError *le, JobOutcome *o) {
        le->reason[sizeof le->reason - 1] = 0;
        le->detail[sizeof le->detail - 1] = 0;
        o->launch_errno = le->error > 0 ? le->error : EIO;
        o->launch_error = strdup(le->reason);
        o->launch_detail = strdup(le->detail);
        /* The detail names paths: it goes to the job's own journal stream, which only its
         * owner (through corrald) and the journal's readers see, not to the queue view. */
        _cleanup_free_ char *msg = NULL;
        char pbuf[16], idbuf[32];

        (void) snprintf(pbuf, sizeof pbuf, "%d", LOG_ERR);
        (void) snprintf(idbuf, sizeof idbuf, "%" PRIu64, arg_job_id);
        if (asprintf(&msg, "corral: %s", le->detail) >= 0) {
                JournalField f[] = {
                        { "MESSAGE", msg, SIZE_MAX },                   { "PRIORITY", pbuf, SIZE_MAX },
                        { "SYSLOG_IDENTIFIER", relay_ident, SIZE_MAX }, { "CORRAL_JOB_ID", idbuf, SIZE_MAX },
                        { "CORRAL_JOB_NAME", relay_job_name, SIZE_MAX }, { "CORRAL_STREAM", "supervisor", SIZE_MAX },
                };
                (void) journal_send(f, ELEMENTSOF(f));
        }
        log_debug("Job %" PRIu64 " failed to launch: %s", arg_job_id, le->detail);
}

static int write_outcome(const JobOutcome *o) {
        _cleanup_free_ char *json = NULL, *tmp = NULL, *final = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = job_outcome_to_json(o, &json);
        if (r < 0)
                return r;
        if (asprintf(&tmp, "%s/.%" PRIu64 ".json.tmp", arg_result_dir, o->id) < 0 ||
            asprintf(&final, "%s/%" PRIu64 ".json", arg_result_dir, o->id) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        if ((r = loop_write(fd, json, strlen(json))) < 0 || (r = loop_write(fd, "\n", 1)) < 0)
                return r;
        if (fsync(fd) < 0)
                return negative_errno();
        /* Renamed into place: the daemon never sees half a result. */
        if (rename(tmp, final) < 0)
                return negative_errno();
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "job-id", required_argument, NULL, 'j' },
                { "spec", required_argument, NULL, 's' },
                { "result-dir", required_argument, NULL, 'r' },
                { "sync-fd", required_argument, NULL, 'f' },
                { "kill-wait", required_argument, NULL, 'k' },
                { "stdio-fds", no_argument, NULL, 'S' },
                { "server-fd", required_argument, NULL, 'F' },
                { "spec-dir", required_argument, NULL, 'D' },
                {}
        };
        int c, r;
        unsigned fd;
        uint64_t sec;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        if ((r = safe_atou64(optarg, &arg_job_id)) < 0)
                                return log_error_errno(r, "Invalid --job-id: %s", optarg);
                        break;
                case 's':
                        arg_spec_path = optarg;
                        break;
                case 'r':
                        arg_result_dir = optarg;
                        break;
                case 'f':
                        if ((r = safe_atou(optarg, &fd)) < 0)
                                return log_error_errno(r, "Invalid --sync-fd: %s", optarg);
                        arg_sync_fd = (int) fd;
                        break;
                case 'k':
                        if ((r = parse_duration(optarg, DURATION_PBS, &sec)) < 0 || sec == DURATION_INFINITY)
                                return log_error_errno(r < 0 ? r : ERANGE, "Invalid --kill-wait: %s", optarg);
                        arg_kill_wait_usec = sec * USEC_PER_SEC;
                        break;
                case 'S':
                        arg_stdio_fds = true;
                        break;
                case 'F':
                        if ((r = safe_atou(optarg, &fd)) < 0)
                                return log_error_errno(r, "Invalid --server-fd: %s", optarg);
                        arg_server_fd = (int) fd;
                        break;
                case 'D':
                        arg_spec_dir = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        if (arg_server_fd >= 0) {
                if (!arg_spec_dir || !arg_result_dir)
                        return log_error_errno(EINVAL, "--server-fd needs --spec-dir and --result-dir.");
                return 0;
        }
        if (!arg_job_id || !arg_spec_path || !arg_result_dir)
                return log_error_errno(EINVAL, "--job-id, --spec and --result-dir are required.");
        return 0;
}

/* One supervisor, from its setup to the outcome it records. */
typedef struct Supervisor {
        JobSpec *spec;
        char *cg;        /* our own cgroup: the scope's root */
        char *leaf;      /* the job's: <scope>/job, relative to the cgroup root */
        int root_fd;     /* the cgroup root */
        int leaf_fd;     /* the leaf, which the child is created in */
        int procs_fd;    /* the leaf's cgroup.procs, which the child joins through where it cannot be created there */
        int script_fd;
        int out_pipe[2], err_pipe[2]; /* the job's stdout/stderr when they go to the journal */
        int lerr[2];                  /* the child's launch error, or EOF once it has exec'ed */
        int sig_fd, timer_fd;
        pid_t child;
        int status; /* the child's wait status */

        Relay relays[2];
        uint64_t start_mono, last_tick, kill_at, walltime_usec;
        bool killing, child_done, warned;
        JobOutcome outcome;
        /* What the child needs of the name service, SELinux and the spec, worked out
         * while systemd makes the scope (before the go), not after it in the child. */
        ChildPrep prep;
} Supervisor;

static void supervisor_done(Supervisor *s) {
        s->spec = job_spec_free(s->spec);
        s->cg = mfree(s->cg);
        s->leaf = mfree(s->leaf);
        s->root_fd = safe_close(s->root_fd);
        s->leaf_fd = safe_close(s->leaf_fd);
        s->procs_fd = safe_close(s->procs_fd);
        s->script_fd = safe_close(s->script_fd);
        for (int i = 0; i < 2; i++) {
                s->out_pipe[i] = safe_close(s->out_pipe[i]);
                s->err_pipe[i] = safe_close(s->err_pipe[i]);
                s->lerr[i] = safe_close(s->lerr[i]);
                s->relays[i].fd = safe_close(s->relays[i].fd);
        }
        s->sig_fd = safe_close(s->sig_fd);
        s->timer_fd = safe_close(s->timer_fd);
        job_outcome_done(&s->outcome);
        child_prep_done(&s->prep);
}

static int read_spec(Supervisor *s) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_file_at(AT_FDCWD, arg_spec_path, 4 * 1024 * 1024, &text, NULL);
        if (r < 0)
                return log_error_errno(r, "Cannot read job spec %s: %m", arg_spec_path);
        r = job_spec_from_json(text, &s->spec);
        if (r < 0)
                return log_error_errno(r, "Job spec %s is malformed: %m", arg_spec_path);
        if (s->spec->id != arg_job_id)
                return log_error_errno(EINVAL, "Job spec %s is for job %" PRIu64 ", not %" PRIu64 ".",
                                       arg_spec_path, s->spec->id, arg_job_id);
        return 0;
}

/* Waits until systemd has moved us into the scope; EOF means the launch was abandoned. */
static int wait_for_go(void) {
        ssize_t k;
        char go;

        if (arg_sync_fd < 0)
                return 0;
        do
                k = read(arg_sync_fd, &go, 1);
        while (k < 0 && errno == EINTR);
        if (k != 1 || go != 'G') {
                log_debug("Launch of job %" PRIu64 " abandoned.", arg_job_id);
                return -ECANCELED;
        }
        arg_sync_fd = safe_close(arg_sync_fd);
        return 0;
}

/* The job's memory nodes bind its leaf, not the scope. On cgroup v2 the kernel moves a
 * process's pages into a cpuset's nodes when the process joins it (memory_migrate is
 * always on), all of them, shared ones included: with the scope bound, systemd's moving
 * us in migrated our libraries' pages (libc's, mapped by every process on the machine) to
 * the job's node, and back for the next job on another node, 400 and more pages a job in
 * the test guest, in a kernel worker that systemd's attach waits for. So the scope leaves
 * the memory nodes alone; we step into a leaf of our own (the cpuset is the scope's
 * until the controller is enabled below it, so nothing moves), the scope, now without a
 * process of its own, enables cpuset for its leaves, and the job's leaf is bound before
 * the job is created in it (clone3) and execs there: nothing of the job is ever moved.
 * Where the scope's nodes are already the job's (one node, or all of them), nothing to do. */
static int bind_leaf_mems(Supervisor *s) {
        _cleanup_free_ char *nodes = NULL, *eff = NULL, *sup = NULL, *procs = NULL, *ctl = NULL, *mems = NULL;
        _cleanup_close_ int scope_fd = -EBADF;
        CpuSet scope_nodes = {};
        int r;

        if (cpu_set_is_empty(&s->spec->mem_nodes))
                return 0;
        scope_fd = cg_open(s->root_fd, s->cg + strspn(s->cg, "/"));
        if (scope_fd < 0)
                return log_error_errno(scope_fd, "Cannot open our cgroup %s: %m", s->cg);
        r = cg_read_attr(scope_fd, "cpuset.mems.effective", &eff);
        if (r < 0)
                return log_error_errno(r, "Cannot read the memory nodes of %s: %m", s->cg);
        r = cpu_set_parse(eff, &scope_nodes);
        if (r < 0)
                return log_error_errno(r, "Cannot parse the memory nodes of %s (%s): %m", s->cg, eff);
        bool wider = false;
        CPU_SET_FOREACH(i, &scope_nodes)
                wider = wider || !cpu_set_test(&s->spec->mem_nodes, (unsigned) i);
        if (!wider)
                return 0;

        nodes = cpu_set_format(&s->spec->mem_nodes);
        if (!nodes || asprintf(&sup, "%s/" SUPERVISOR_LEAF, s->cg + strspn(s->cg, "/")) < 0 ||
            asprintf(&procs, "%s/cgroup.procs", sup) < 0 ||
            asprintf(&ctl, "%s/cgroup.subtree_control", s->cg + strspn(s->cg, "/")) < 0 ||
            asprintf(&mems, "%s/cpuset.mems", s->leaf) < 0)
                return log_oom();
        if (mkdirat(s->root_fd, sup, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create cgroup %s: %m", sup);
        r = write_string_file_at(s->root_fd, procs, "0");
        if (r < 0)
                return log_error_errno(r, "Cannot move into %s: %m", sup);
        r = write_string_file_at(s->root_fd, ctl, "+cpuset");
        if (r < 0)
                return log_error_errno(r, "Cannot enable the cpuset controller below %s: %m", s->cg);
        r = write_string_file_at(s->root_fd, mems, nodes);
        if (r < 0)
                return log_error_errno(r, "Cannot bind %s to memory nodes %s: %m", s->leaf, nodes);
        return 0;
}

/* The leaf cgroup the job runs in, below us in the scope. */
static int setup_job_cgroup(Supervisor *s) {
        _cleanup_free_ char *p = NULL;
        int r;

        r = cg_path_of_pid(0, &s->cg);
        if (r < 0)
                return log_error_errno(r, "Cannot find our cgroup: %m");
        s->root_fd = open(CGROUP_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->root_fd < 0)
                return log_error_errno(errno, "Cannot open %s: %m", CGROUP_ROOT);
        if (asprintf(&s->leaf, "%s/" JOB_LEAF, s->cg + strspn(s->cg, "/")) < 0)
                return log_oom();
        if (mkdirat(s->root_fd, s->leaf, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create cgroup %s: %m", s->leaf);
        r = bind_leaf_mems(s);
        if (r < 0)
                return r;
        /* Only to create the child in; without it the child joins through cgroup.procs. */
        s->leaf_fd = openat(s->root_fd, s->leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->leaf_fd < 0)
                log_debug_errno(errno, "Cannot open cgroup %s, the job will join it: %m", s->leaf);
        if (asprintf(&p, "%s/cgroup.procs", s->leaf) < 0)
                return log_oom();
        s->procs_fd = openat(s->root_fd, p, O_WRONLY | O_CLOEXEC);
        if (s->procs_fd < 0)
                return log_error_errno(errno, "Cannot open %s: %m", p);
        return 0;
}

static int setup_pipes(Supervisor *s) {
        if (s->spec->script) {
                s->script_fd = memfd_create("corral-job-script", 0);
                if (s->script_fd < 0 || loop_write(s->script_fd, s->spec->script, strlen(s->spec->script)) < 0 ||
                    lseek(s->script_fd, 0, SEEK_SET) < 0)
                        return log_error_errno(errno, "Cannot stage the job script: %m");
        }
        if ((!arg_stdio_fds && !s->spec->stdout_path && pipe2(s->out_pipe, O_CLOEXEC) < 0) ||
            (!arg_stdio_fds && !s->spec->stderr_path && pipe2(s->err_pipe, O_CLOEXEC) < 0) ||
            pipe2(s->lerr, O_CLOEXEC) < 0)
                return log_error_errno(errno, "Cannot create pipes: %m");
        return 0;
}

static int setup_signals(Supervisor *s) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, JOB_SIGNAL_RELAY);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        s->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (s->sig_fd < 0 || s->timer_fd < 0)
                return log_error_errno(errno, "Cannot create signalfd/timerfd: %m");
        return 0;
}

/* Everything up to the fork: the spec, the go from the daemon, the job's cgroup, its
 * pipes, and our signals. Each step logs its own failure. */
static int supervisor_setup(Supervisor *s) {
        int r;

        s->outcome.id = arg_job_id;
        r = read_spec(s);
        if (r < 0)
                return r;
        /* While systemd makes the scope: what needs no cgroup. */
        child_prep(s->spec, &s->prep);
        r = setup_pipes(s);
        if (r < 0)
                return r;
        log_debug("Job %" PRIu64 ": ready, waiting for its scope.", arg_job_id);
        r = wait_for_go();
        if (r < 0)
                return r;
        (void) write_string_file_at(AT_FDCWD, "/proc/self/oom_score_adj", "-1000");
        r = setup_job_cgroup(s);
        if (r < 0)
                return r;
        return setup_signals(s);
}

/* The child is created straight in the job's leaf where the kernel can (5.7 and later):
 * moving a process through cgroup.procs takes the cgroup core's write lock, and taking it
 * after a quiet spell waits for an RCU grace period, most of 20 ms in the test guest for
 * every job. Where clone3() cannot, a plain fork and the child joins through
 * cgroup.procs. We are single-threaded, so a raw clone3 leaves the child's libc usable. */
static pid_t fork_into_leaf(Supervisor *s, bool *ret_joined) {
        struct clone_args args = {
                .flags = CLONE_INTO_CGROUP,
                .exit_signal = SIGCHLD,
                .cgroup = (uint64_t) s->leaf_fd,
        };
        long pid = -1;

        if (s->leaf_fd >= 0)
                pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid >= 0) {
                *ret_joined = true;
                return (pid_t) pid;
        }
        if (s->leaf_fd >= 0)
                log_debug_errno(errno, "clone3(CLONE_INTO_CGROUP) failed, forking instead: %m");
        *ret_joined = false;
        return fork();
}

static int supervisor_start_job(Supervisor *s) {
        bool joined;

        s->outcome.start_usec = now_usec(CLOCK_REALTIME);
        s->start_mono = s->last_tick = now_usec(CLOCK_MONOTONIC);
        s->child = fork_into_leaf(s, &joined);
        if (s->child < 0)
                return log_error_errno(errno, "fork failed: %m");
        if (s->child == 0)
                run_child(s->spec, &s->prep, s->procs_fd, joined, s->lerr[1], s->out_pipe[1], s->err_pipe[1],
                          s->script_fd);
        s->lerr[1] = safe_close(s->lerr[1]);
        if (arg_stdio_fds)
                /* Only the job holds the client's terminal: when it is done with it, the
                 * terminal is free, and a hangup of it reaches the job alone. */
                for (int i = 0; i < 3; i++)
                        (void) close(STDIO_FDS_FIRST + i);
        s->out_pipe[1] = safe_close(s->out_pipe[1]);
        s->err_pipe[1] = safe_close(s->err_pipe[1]);
        /* Whether the launch worked is read in the loop, never waited for: whatever the child
         * might hang in before its exec (a path on a dead NFS server, a lookup), the
         * supervisor goes on answering SIGTERM and enforcing the walltime. */

        (void) snprintf(relay_ident, sizeof relay_ident, "corral-job-%" PRIu64, arg_job_id);
        relay_job_name = strempty(s->spec->name);
        s->relays[0] = (Relay) { .fd = TAKE_FD(s->out_pipe[0]), .priority = LOG_INFO, .stream = "stdout" };
        s->relays[1] = (Relay) { .fd = TAKE_FD(s->err_pipe[0]), .priority = LOG_ERR, .stream = "stderr" };

        if (s->spec->walltime_sec > 0 && s->spec->walltime_sec != DURATION_INFINITY)
                s->walltime_usec = s->spec->walltime_sec * USEC_PER_SEC;
        {
                struct itimerspec its = { .it_interval = { 1, 0 }, .it_value = { 1, 0 } };
                (void) timerfd_settime(s->timer_fd, 0, &its, NULL);
        }
        return 0;
}

/* corrald's JOB_SIGNAL_RELAY (executor_signal()): the signal for the job's processes, as
 * --signal's warning goes; queued by root alone, anything else is ignored. */
static void relay_signal(Supervisor *s, const struct signalfd_siginfo *si) {
        int sig = si->ssi_int & ~JOB_SIGNAL_RELAY_BATCH;
        bool batch = si->ssi_int & JOB_SIGNAL_RELAY_BATCH;

        if (si->ssi_code != SI_QUEUE || si->ssi_uid != 0 || sig <= 0 || sig >= _NSIG || s->child_done)
                return;
        log_info("Sending signal %d to %s, as asked.", sig, batch ? "the job script" : "the job");
        if (batch)
                (void) kill(s->child, sig);
        else
                (void) cg_kill_fallback(s->root_fd, s->leaf, sig);
}

static void on_signals(Supervisor *s) {
        struct signalfd_siginfo si;

        while (read(s->sig_fd, &si, sizeof si) == (ssize_t) sizeof si) {
                if (si.ssi_signo == SIGCHLD) {
                        if (!s->child_done && waitpid(s->child, &s->status, WNOHANG) == s->child) {
                                s->child_done = true;
                                log_debug("Job %" PRIu64 ": its main process has ended.", arg_job_id);
                                /* What the main process leaves behind goes with it, as with
                                 * sbatch; that also closes the pipes. */
                                if (cg_kill(s->root_fd, s->leaf) < 0)
                                        (void) cg_kill_fallback(s->root_fd, s->leaf, SIGKILL);
                        }
                } else if ((int) si.ssi_signo == JOB_SIGNAL_RELAY) {
                        relay_signal(s, &si);
                } else if (!s->killing && !s->child_done) {
                        /* Stop requested: the job gets SIGTERM and a grace period. */
                        s->outcome.cancelled = true;
                        s->killing = true;
                        (void) cg_kill_fallback(s->root_fd, s->leaf, SIGTERM);
                        s->kill_at = now_usec(CLOCK_MONOTONIC) + arg_kill_wait_usec;
                }
        }
}

static void on_tick(Supervisor *s) {
        uint64_t ticks, now = now_usec(CLOCK_MONOTONIC);
        JobOutcome *o = &s->outcome;

        (void) read(s->timer_fd, &ticks, sizeof ticks);
        /* We are frozen together with the job: a late tick is suspended time, which does
         * not count against the walltime (as in Slurm). */
        if (now - s->last_tick > FROZEN_GAP_USEC)
                o->suspended_usec += now - s->last_tick - USEC_PER_SEC;
        s->last_tick = now;
        /* --signal: once, warn_sec before the limit (at the start for a limit shorter than
         * that), as Slurm sends it. */
        if (s->spec->warn_signal > 0 && !s->warned && !s->killing && !s->child_done && s->walltime_usec > 0 &&
            now - s->start_mono - o->suspended_usec + s->spec->warn_sec * USEC_PER_SEC >= s->walltime_usec) {
                s->warned = true;
                log_info("Sending signal %d to %s, %" PRIu64 " s before the time limit.", s->spec->warn_signal,
                         s->spec->warn_batch_only ? "the job script" : "the job", s->spec->warn_sec);
                if (s->spec->warn_batch_only)
                        (void) kill(s->child, s->spec->warn_signal);
                else
                        (void) cg_kill_fallback(s->root_fd, s->leaf, s->spec->warn_signal);
        }
        if (!s->killing && !s->child_done && s->walltime_usec > 0 &&
            now - s->start_mono - o->suspended_usec >= s->walltime_usec) {
                o->timed_out = true;
                s->killing = true;
                (void) cg_kill_fallback(s->root_fd, s->leaf, SIGTERM);
                s->kill_at = now + arg_kill_wait_usec;
        }
        if (s->killing && !s->child_done && now >= s->kill_at)
                if (cg_kill(s->root_fd, s->leaf) < 0)
                        (void) cg_kill_fallback(s->root_fd, s->leaf, SIGKILL);
}

/* Until the job has ended and its output and launch-error pipes are drained. */
static int supervisor_loop(Supervisor *s) {
        LaunchError le;
        ssize_t k;

        while (!s->child_done || s->relays[0].fd >= 0 || s->relays[1].fd >= 0 || s->lerr[0] >= 0) {
                struct pollfd p[5] = {
                        { .fd = s->sig_fd, .events = POLLIN },
                        { .fd = s->timer_fd, .events = POLLIN },
                        { .fd = s->relays[0].fd, .events = POLLIN },
                        { .fd = s->relays[1].fd, .events = POLLIN },
                        { .fd = s->lerr[0], .events = POLLIN },
                };

                if (poll(p, 5, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(errno, "poll failed: %m");
                }
                if (p[0].revents)
                        on_signals(s);
                if (p[1].revents)
                        on_tick(s);
                for (int i = 0; i < 2; i++)
                        if (s->relays[i].fd >= 0 && p[2 + i].revents && !relay_read(&s->relays[i]))
                                s->relays[i].fd = safe_close(s->relays[i].fd);
                if (s->lerr[0] >= 0 && p[4].revents) {
                        /* One whole record (a failed launch) or EOF (the exec happened). */
                        k = read(s->lerr[0], &le, sizeof le);
                        if (k < 0 && errno == EINTR)
                                continue;
                        s->lerr[0] = safe_close(s->lerr[0]);
                        if (k == (ssize_t) sizeof le)
                                record_launch_error(&le, &s->outcome);
                }
        }
        return 0;
}

/* The job has ended: how, and what it used, into <result-dir>/<id>.json. */
static int supervisor_finish(Supervisor *s) {
        JobOutcome *o = &s->outcome;
        int r;

        o->end_usec = now_usec(CLOCK_REALTIME);
        if (WIFEXITED(s->status))
                o->exit_code = WEXITSTATUS(s->status);
        else if (WIFSIGNALED(s->status))
                o->signal = WTERMSIG(s->status);
        (void) job_outcome_read_usage(s->root_fd, s->cg, o);
        o->oom_killed = o->oom_kills > 0;
        (void) unlinkat(s->root_fd, s->leaf, AT_REMOVEDIR);

        r = write_outcome(o);
        if (r < 0)
                return log_error_errno(r, "Cannot record the outcome of job %" PRIu64 " in %s: %m", arg_job_id,
                                       arg_result_dir);
        return 0;
}

/* Answers one request: >0 in the forked child, which is then the job's supervisor as if
 * exec'ed with its arguments; 0 in the server; <0 when the socket is done with. */
static int serve_one(void) {
        ForkRequest req;
        ForkReply reply = {};
        int sync_fd, pidfd = -EBADF, r;
        pid_t pid;

        r = record_recv(arg_server_fd, &req, sizeof req, &sync_fd, 0);
        if (r == -EINTR)
                return 0;
        if (r < 0)
                return r;
        if (sync_fd < 0)
                return -EBADMSG;
        reply.job_id = req.job_id;
        pid = fork();
        if (pid == 0) {
                /* What the server set up for itself, undone: the job's supervisor waits for
                 * its own children. */
                (void) signal(SIGCHLD, SIG_DFL);
                arg_server_fd = safe_close(arg_server_fd);
                arg_job_id = req.job_id;
                arg_kill_wait_usec = req.kill_wait_usec;
                arg_sync_fd = sync_fd;
                if (asprintf((char **) &arg_spec_path, "%s/%" PRIu64 ".json", arg_spec_dir, arg_job_id) < 0)
                        _exit(1);
                return 1;
        }
        safe_close(sync_fd);
        if (pid < 0)
                reply.error = errno;
        else {
                reply.pid = pid;
                /* Before anything reaps it (SIGCHLD is ignored: the kernel reaps), the pid
                 * is still this child's; after that corrald holds it by its pidfd. */
                pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        }
        r = record_send(arg_server_fd, &reply, sizeof reply, pidfd, 0);
        safe_close(pidfd);
        return r < 0 ? -EPIPE : 0;
}

/* --server-fd: forks a supervisor for each job corrald asks for, until corrald closes the
 * socket. Returns >0 in a child, <=0 in the server when done. Single-threaded and holding
 * nothing of any job: a child starts from what an exec'ed supervisor would have. */
static int serve(void) {
        int r;

        /* Exited children are reaped by the kernel; corrald watches them by pidfd. */
        (void) signal(SIGCHLD, SIG_IGN);
        for (;;) {
                r = serve_one();
                if (r > 0)
                        return r;
                if (r == -EBADMSG) {
                        log_error("The fork server got a malformed request; ending.");
                        return r;
                }
                if (r < 0)
                        return r == -ECONNRESET ? 0 : r;
        }
}

int main(int argc, char *argv[]) {
        int r;
        _cleanup_(supervisor_done) Supervisor s = {
                .root_fd = -EBADF,
                .leaf_fd = -EBADF,
                .procs_fd = -EBADF,
                .script_fd = -EBADF,
                .out_pipe = { -EBADF, -EBADF },
                .err_pipe = { -EBADF, -EBADF },
                .lerr = { -EBADF, -EBADF },
                .sig_fd = -EBADF,
                .timer_fd = -EBADF,
                .relays = { { .fd = -EBADF }, { .fd = -EBADF } },
        };

        log_setup("corral-supervisor", LOG_TARGET_AUTO);
        (void) log_parse_environment();
        if (parse_argv(argc, argv) < 0)
                return 2;
        if (arg_server_fd >= 0) {
                r = serve();
                if (r <= 0)
                        return r < 0 ? 1 : 0;
        }
        if (supervisor_setup(&s) < 0 || supervisor_start_job(&s) < 0 || supervisor_loop(&s) < 0)
                r = 1;
        else
                r = supervisor_finish(&s) < 0 ? 1 : 0;
        /* The job's last lines keep their unit (corral logs reads only those) if journald
         * reads them while we are still here to be looked up. */
        (void) journal_wait_consumed(USEC_PER_SEC);
        return r;
}
