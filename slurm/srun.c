/* SPDX-License-Identifier: GPL-2.0-or-later */
/* srun(1) on corrald.
 *
 * Inside a job (SLURM_JOB_ID set, and this process in that job's scope): the command
 * runs as a step of the job, here and now: -n tasks are forked, each bound (unless
 * --cpu-bind=none) to its own -c CPUs of the job's, so they stay in the job's scope and
 * cgroup, under its CPU and memory limits, as Slurm's steps stay in the allocation.
 *
 * Outside a job: a blocking submit-and-wait. The command is submitted as a job with the
 * options of corral submit (one table), its stdout and stderr are followed to the
 * terminal while it runs, srun exits with its status, and an interrupt cancels it.
 * With --pty: an interactive job on this terminal, as corral run (cli/run.c); inside a
 * job --pty changes nothing, the step already has the job's terminal if it has one. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "parse-util.h"
#include "slurm-common.h"
#include "strv.h"
#include "run.h"
#include "submit-options.h"

extern char **environ;

typedef struct SrunFlags {
        bool help;
        bool pty;
        bool no_bind;
        bool label;             /* -l: each line of a task's output behind "TASK: " */
        const char *bad;        /* refused client option, with its reason in bad_why */
        const char *bad_why;
} SrunFlags;

/* srun's own options, not the job's; the rest go to the shared table. */
static int srun_flag(const char *a, SrunFlags *f) {
        if (streq(a, "-h") || streq(a, "--help"))
                f->help = true;
        else if (strneq(a, "--cpu-bind=", 11) || strneq(a, "--cpu_bind=", 11)) {
                const char *v = a + 11;
                /* quiet/verbose may come before the type: "q", "v,cores". */
                f->no_bind = strstr(v, "none") || strstr(v, "no") == v;
        } else if (streq(a, "--exact") || streq(a, "--overlap") || streq(a, "-u") || streq(a, "--unbuffered") ||
                   streq(a, "-Q") || streq(a, "--quiet") || streq(a, "-v") || streq(a, "--verbose"))
                ;
        else if (streq(a, "--pty"))
                f->pty = true;
        else if (streq(a, "-l") || streq(a, "--label"))
                f->label = true;
        else if (strneq(a, "--jobid", 7) || strneq(a, "--mpi", 5)) {
                f->bad = a;
                f->bad_why = "not supported";
        } else
                return 0;
        return 1;
}

/* Splits argv into the table's options (kept in *ret) and srun's flags; stops at the
 * command. Returns the index of the command. */
static int split_args(int argc, char **argv, char ***ret, SrunFlags *f) {
        _cleanup_free_ char **out = new0(char *, argc + 1);
        int n = 0, i;

        if (!out)
                return -ENOMEM;
        for (i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (streq(a, "--")) {
                        i++;
                        break;
                }
                if (a[0] != '-' || a[1] == '\0')
                        break;
                if (srun_flag(a, f))
                        continue;
                out[n++] = argv[i];
                if (a[1] == '-') {
                        const SubmitOption *opt = submit_option_find_long(a + 2, strcspn(a + 2, "="));
                        if (opt && opt->arg == SUBMIT_ARG_REQUIRED && !strchr(a, '=') && i + 1 < argc)
                                out[n++] = argv[++i];
                        continue;
                }
                for (const char *p = a + 1; *p; p++) {
                        const SubmitOption *opt = *p == 'q' ? submit_option_find_long("qos", 3)
                                                            : submit_option_find_short(*p);
                        if (!opt)
                                break;
                        if (opt->arg != SUBMIT_ARG_NONE) {
                                if (!p[1] && i + 1 < argc)
                                        out[n++] = argv[++i];
                                break;
                        }
                }
        }
        *ret = TAKE_PTR(out);
        return i;
}

/* Whether this process is in job id's scope, as /proc/self/cgroup says. */
static bool in_job_scope(uint64_t id) {
        _cleanup_free_ char *text = NULL;
        char unit[64];
        size_t size;

        if (read_file_at(AT_FDCWD, "/proc/self/cgroup", 64 * 1024, &text, &size) < 0)
                return false;
        snprintf(unit, sizeof(unit), "/corral-job-%" PRIu64 ".scope", id);
        for (char *p = strstr(text, unit); p; p = strstr(p + 1, unit))
                if (p[strlen(unit)] == '\n' || p[strlen(unit)] == '/' || p[strlen(unit)] == '\0')
                        return true;
        return false;
}

/* A step's --output/--error pattern for one task, with the job's own numbers from the
 * environment the job was given. */
static char *step_path_expand(const char *pattern, uint64_t job_id, unsigned task) {
        const char *e;
        char host[256] = "";
        JobInfo info = { .id = job_id, .name = getenv("SLURM_JOB_NAME"), .user = getenv("USER") };

        (void) gethostname(host, sizeof host - 1);
        if ((e = getenv("SLURM_ARRAY_JOB_ID")))
                (void) safe_atou64(e, &info.array_job_id);
        if ((e = getenv("SLURM_ARRAY_TASK_ID"))) {
                unsigned t = 0;
                (void) safe_atou(e, &t);
                info.array_task_id = t;
        }
        return output_path_expand_step(pattern, &info, (int) task, host);
}

/* In a task, before exec: its --output and --error files (stderr to the output file when
 * only --output is given, as srun does). Exits the task on failure. */
static void task_redirect(const SubmitOptions *o, uint64_t job_id, unsigned task) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (o->req.output_append ? O_APPEND : O_TRUNC);
        int fd;

        if (o->req.stdout_path && !(out = step_path_expand(o->req.stdout_path, job_id, task)))
                _exit(1);
        if (o->req.stderr_path && !(err = step_path_expand(o->req.stderr_path, job_id, task)))
                _exit(1);
        if (out) {
                fd = open(out, flags, 0666);
                if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) {
                        fprintf(stderr, "srun: error: cannot open %s: %m\n", out);
                        _exit(1);
                }
                if (!err || streq(err, out))
                        (void) dup2(fd, STDERR_FILENO);
                close(fd);
        }
        if (err && !(out && streq(err, out))) {
                fd = open(err, flags, 0666);
                if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
                        fprintf(stderr, "srun: error: cannot open %s: %m\n", err);
                        _exit(1);
                }
                close(fd);
        }
}

/* -l: a task's output comes through a pipe; each whole line is written behind its task's
 * number, as srun labels them ("0: ", padded to the widest number). */
typedef struct LabelPipe {
        int fd;                 /* read end; -1 once closed */
        int to;                 /* STDOUT_FILENO or STDERR_FILENO */
        unsigned task;
        size_t n;
        char buf[4096];
} LabelPipe;

static void label_flush(LabelPipe *p, unsigned width, bool all) {
        size_t start = 0;

        for (size_t i = 0; i < p->n; i++)
                if (p->buf[i] == '\n' || (all && i + 1 == p->n)) {
                        dprintf(p->to, "%*u: %.*s%s", (int) width, p->task, (int) (i + 1 - start), p->buf + start,
                                p->buf[i] == '\n' ? "" : "\n");
                        start = i + 1;
                }
        memmove(p->buf, p->buf + start, p->n - start);
        p->n -= start;
}

static void label_pump(LabelPipe *pipes, size_t n, unsigned width) {
        _cleanup_free_ struct pollfd *pfd = new0(struct pollfd, n);
        size_t open_fds = n;

        if (!pfd)
                return;
        while (open_fds > 0) {
                for (size_t i = 0; i < n; i++)
                        pfd[i] = (struct pollfd) { .fd = pipes[i].fd, .events = POLLIN };
                if (poll(pfd, n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                for (size_t i = 0; i < n; i++) {
                        LabelPipe *p = &pipes[i];
                        ssize_t k;

                        if (p->fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        k = read(p->fd, p->buf + p->n, sizeof p->buf - p->n);
                        if (k > 0) {
                                p->n += (size_t) k;
                                /* A line longer than the buffer goes out in pieces. */
                                label_flush(p, width, p->n == sizeof p->buf);
                                continue;
                        }
                        if (k < 0 && errno == EINTR)
                                continue;
                        label_flush(p, width, true);
                        close(p->fd);
                        p->fd = -1;
                        open_fds--;
                }
        }
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) {
        got_signal = sig;
}

static int run_step(SubmitOptions *o, char **command, bool bind, bool label, uint64_t job_id) {
        /* --exclusive: a step's tasks each have CPUs of their own already. */
        static const SubmitField allowed[] = {
                SUBMIT_FIELD_NTASKS, SUBMIT_FIELD_CPUS_PER_TASK, SUBMIT_FIELD_NAME, SUBMIT_FIELD_NODES,
                SUBMIT_FIELD_WORKDIR, SUBMIT_FIELD_ENV, SUBMIT_FIELD_EXPORT, SUBMIT_FIELD_OUTPUT,
                SUBMIT_FIELD_ERROR, SUBMIT_FIELD_EXCLUSIVE, SUBMIT_FIELD_OPEN_MODE,
        };
        _cleanup_free_ LabelPipe *pipes = NULL;
        size_t n_pipes = 0;
        unsigned width = 1;
        const char *e = getenv("SLURM_CPUS_PER_TASK");
        unsigned ntasks = MAX(o->ntasks, 1U), cpt = o->cpus_per_task, have, worst = 0;
        _cleanup_free_ pid_t *pids = NULL;
        cpu_set_t all;
        int cpus[CPU_SETSIZE], n_cpus = 0;

        for (SubmitField f = 0; f < _SUBMIT_FIELD_MAX; f++) {
                bool ok = false;
                for (size_t k = 0; k < ELEMENTSOF(allowed); k++)
                        ok = ok || allowed[k] == f;
                if (o->set_by_command_line[f] && !ok) {
                        slurm_error("inside job %" PRIu64 " srun takes only -n, -c, -J, -D, -o, -e, --export, "
                                    "--exclusive and --cpu-bind: a step shares the job's limits", job_id);
                        return 1;
                }
        }
        if (cpt == 0 && (!e || safe_atou(e, &cpt) < 0 || cpt == 0))
                cpt = 1;
        if (sched_getaffinity(0, sizeof(all), &all) < 0)
                return log_error_errno(errno, "error: cannot read the job's CPUs: %m"), 1;
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &all))
                        cpus[n_cpus++] = c;
        have = (unsigned) n_cpus;
        if ((uint64_t) ntasks * cpt > have) {
                slurm_error("Unable to create step for job %" PRIu64 ": More processors requested than "
                            "permitted (%u tasks x %u CPUs, the job has %u)", job_id, ntasks, cpt, have);
                return 1;
        }
        pids = new0(pid_t, ntasks);
        if (!pids)
                return cli_oom();
        if (label) {
                pipes = new0(LabelPipe, 2 * (size_t) ntasks);
                if (!pipes)
                        return cli_oom();
                for (unsigned t = ntasks - 1; t >= 10; t /= 10)
                        width++;
        }
        (void) signal(SIGINT, on_signal);
        (void) signal(SIGTERM, on_signal);
        fflush(NULL);
        for (unsigned t = 0; t < ntasks; t++) {
                int out[2] = { -1, -1 }, err[2] = { -1, -1 };
                pid_t pid;

                if (label && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0))
                        return log_error_errno(errno, "error: pipe: %m"), 1;
                pid = fork();
                if (pid < 0)
                        return log_error_errno(errno, "error: fork: %m"), 1;
                if (pid == 0) {
                        char v[32];
                        if (label && (dup2(out[1], STDOUT_FILENO) < 0 || dup2(err[1], STDERR_FILENO) < 0))
                                _exit(127);
                        task_redirect(o, job_id, t);
                        (void) signal(SIGINT, SIG_DFL);
                        (void) signal(SIGTERM, SIG_DFL);
                        if (bind) {
                                cpu_set_t mine;
                                CPU_ZERO(&mine);
                                for (unsigned k = 0; k < cpt; k++)
                                        CPU_SET(cpus[t * cpt + k], &mine);
                                if (sched_setaffinity(0, sizeof(mine), &mine) < 0)
                                        _exit(127);
                        }
                        snprintf(v, sizeof(v), "%u", t);
                        (void) setenv("SLURM_PROCID", v, 1);
                        (void) setenv("SLURM_LOCALID", v, 1);
                        (void) setenv("SLURM_STEPID", "0", 1);
                        (void) setenv("SLURM_STEP_ID", "0", 1);
                        snprintf(v, sizeof(v), "%u", ntasks);
                        (void) setenv("SLURM_NTASKS", v, 1);
                        (void) setenv("SLURM_STEP_NUM_TASKS", v, 1);
                        snprintf(v, sizeof(v), "%u", cpt);
                        (void) setenv("SLURM_CPUS_PER_TASK", v, 1);
                        if (o->req.workdir && chdir(o->req.workdir) < 0) {
                                fprintf(stderr, "srun: error: chdir %s: %m\n", o->req.workdir);
                                _exit(1);
                        }
                        STRV_FOREACH(a, o->req.env)
                                (void) putenv(*a);
                        execvp(command[0], command);
                        fprintf(stderr, "srun: error: execve(): %s: %m\n", command[0]);
                        _exit(errno == ENOENT ? 127 : 126);
                }
                pids[t] = pid;
                if (label) {
                        close(out[1]);
                        close(err[1]);
                        pipes[n_pipes++] = (LabelPipe) { .fd = out[0], .to = STDOUT_FILENO, .task = t };
                        pipes[n_pipes++] = (LabelPipe) { .fd = err[0], .to = STDERR_FILENO, .task = t };
                }
        }
        if (label)
                label_pump(pipes, n_pipes, width);
        for (unsigned left = ntasks; left > 0;) {
                int status;
                pid_t pid = waitpid(-1, &status, 0);

                if (pid < 0) {
                        if (errno == EINTR) {
                                for (unsigned t = 0; t < ntasks; t++)
                                        if (pids[t] > 0)
                                                (void) kill(pids[t], got_signal ?: SIGTERM);
                                continue;
                        }
                        break;
                }
                for (unsigned t = 0; t < ntasks; t++)
                        if (pids[t] == pid) {
                                unsigned code = WIFEXITED(status) ? (unsigned) WEXITSTATUS(status)
                                                                  : 128U + (unsigned) WTERMSIG(status);
                                if (code != 0)
                                        log_error("error: task %u: %s %u", t,
                                                  WIFEXITED(status) ? "Exited with exit code" : "Killed by signal",
                                                  WIFEXITED(status) ? code : (unsigned) WTERMSIG(status));
                                worst = MAX(worst, code);
                                pids[t] = 0;
                                left--;
                        }
        }
        return (int) MIN(worst, 255U);
}

/* Copies what was added to path since *offset to fd. */
static void follow(const char *path, off_t *offset, int fd) {
        _cleanup_close_ int in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        char buf[64 * 1024];
        ssize_t k;

        if (in < 0)
                return;
        while ((k = pread(in, buf, sizeof(buf), *offset)) > 0) {
                if (write(fd, buf, (size_t) k) < 0)
                        return;
                *offset += k;
        }
}

static int get_job(Cli *cli, uint64_t id, JobEntry *ret) {
        _cleanup_(reply_done) Reply reply = {};
        json_object *job;
        int r;

        r = cli_call(cli, CORRAL_METHOD_SHOW, json_job_id(id), &reply);
        if (r < 0)
                return r;
        if (reply.error || !json_object_object_get_ex(reply.parameters, "job", &job))
                return -ENOENT;
        return job_entry_from_json(job, ret);
}

static int submit_and_follow(Cli *cli, SubmitOptions *o, char **command) {
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_json_ json_object *params = NULL;
        _cleanup_free_ char *cwd = NULL, *error = NULL, *out_path = NULL, *err_path = NULL;
        char dir[] = "/tmp/srun-XXXXXX";
        bool own_out, own_err, cancelled = false;
        off_t out_off = 0, err_off = 0;
        json_object *v;
        uint64_t id;
        int status = 1, r;

        own_out = !o->req.stdout_path;
        own_err = !o->req.stderr_path;
        if (own_out || own_err) {
                if (!mkdtemp(dir))
                        return log_error_errno(errno, "error: cannot create a directory for the output: %m"), 1;
                if (asprintf(&out_path, "%s/out", dir) < 0 || asprintf(&err_path, "%s/err", dir) < 0)
                        return cli_oom();
                if (own_out && !(o->req.stdout_path = strdup(out_path)))
                        return cli_oom();
                if (own_err && !(o->req.stderr_path = strdup(err_path)))
                        return cli_oom();
        }
        o->req.argv = strv_copy(command);
        if (!o->req.argv)
                return cli_oom();
        if (!o->req.name && job_name_is_valid(command[0]) && !(o->req.name = strdup(command[0])))
                return cli_oom();
        cwd = getcwd(NULL, 0);
        r = submit_options_finalize(o, cwd, environ, &error);
        if (r < 0) {
                slurm_error("%s", error ?: "out of memory");
                goto finish;
        }
        r = submit_request_to_json(&o->req, &params);
        if (r < 0) {
                status = cli_oom();
                goto finish;
        }
        r = cli_call(cli, CORRAL_METHOD_SUBMIT, TAKE_PTR(params), &reply);
        if (r < 0) /* logged; 1, as Slurm's srun on any error of its own */
                goto finish;
        if (reply.error) {
                (void) cli_report_error(cli, NULL, &reply);
                goto finish;
        }
        if (!json_object_object_get_ex(reply.parameters, "job_id", &v) || json_get_u64(v, 1, CORRAL_JOB_ID_MAX, &id) < 0) {
                slurm_error("corrald sent no job id");
                goto finish;
        }

        (void) signal(SIGINT, on_signal);
        (void) signal(SIGTERM, on_signal);
        for (bool said_pending = false;;) {
                _cleanup_(job_entry_done) JobEntry e = {};
                bool final;

                if (got_signal && !cancelled) {
                        _cleanup_(reply_done) Reply cr = {};
                        log_error("Job step aborted: cancelling job %" PRIu64, id);
                        (void) cli_call(cli, CORRAL_METHOD_CANCEL, json_job_id(id), &cr);
                        cancelled = true;
                }
                r = get_job(cli, id, &e);
                if (r < 0) {
                        log_error_errno(r, "error: lost job %" PRIu64 ": %m", id);
                        goto finish;
                }
                final = job_state_name_is_final(e.info.state);
                if (!said_pending && !final && e.info.start_time == 0) {
                        log_info("job %" PRIu64 " queued and waiting for resources", id);
                        said_pending = true;
                }
                if (own_out)
                        follow(out_path, &out_off, STDOUT_FILENO);
                if (own_err)
                        follow(err_path, &err_off, STDERR_FILENO);
                if (final) {
                        status = job_exit_status(&e.info);
                        if (status != 0)
                                log_error("error: job %" PRIu64 ": %s", id,
                                          streq(e.info.state, "FAILED") && e.info.exit_code > 0
                                                  ? "task 0: Exited with a non-zero exit code"
                                                  : slurm_state_name(e.info.state));
                        break;
                }
                (void) nanosleep(&(struct timespec) { .tv_nsec = 200 * 1000 * 1000 }, NULL);
        }

finish:
        if (out_path)
                (void) unlink(out_path);
        if (err_path)
                (void) unlink(err_path);
        if (own_out || own_err)
                (void) rmdir(dir);
        return status;
}

int main(int argc, char *argv[]) {
        _cleanup_(cli_done) Cli cli;
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_free_ char **args = NULL;
        _cleanup_free_ char *error = NULL;
        SrunFlags flags = {};
        const char *job = getenv("SLURM_JOB_ID");
        size_t n_args, first;
        int cmd, r;

        slurm_setup("srun", &cli, "error");
        submit_options_init(&o, time(NULL));
        o.slurm_dialect = true;

        cmd = split_args(argc, argv, &args, &flags);
        if (cmd < 0)
                return cli_oom();
        if (flags.help) {
                printf("Usage: srun [OPTIONS] [--pty] COMMAND [ARGS...]\n\n"
                       "Inside a job: run COMMAND as a step (-n tasks of -c CPUs, bound unless\n"
                       "--cpu-bind=none). Outside: submit it with corral submit's options and follow\n"
                       "its output until it ends; with --pty, run it as an interactive job on this\n"
                       "terminal (corral run). See corral-slurm(7).\n");
                return 0;
        }
        if (flags.bad) {
                slurm_error("%s: %s", flags.bad, flags.bad_why);
                return 1;
        }
        n_args = strv_length(args);
        r = submit_options_parse_args(&o, args, n_args, SUBMIT_SOURCE_COMMAND_LINE, &first, &error);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                slurm_error("%s", strna(error));
                return 1;
        }
        STRV_FOREACH(w, o.warnings)
                log_warning("warning: %s", *w);
        if (cmd >= argc) {
                slurm_error("no command given (srun [OPTIONS] COMMAND [ARGS...])");
                return 1;
        }

        if (!isempty(job)) {
                uint64_t id;
                if (safe_atou64(job, &id) < 0 || !in_job_scope(id)) {
                        slurm_error("SLURM_JOB_ID=%s, but this process is not in that job's scope "
                                    "(corral-job-%s.scope); unset SLURM_JOB_ID to submit a new job", job, job);
                        return 1;
                }
                return run_step(&o, argv + cmd, !flags.no_bind, flags.label, id);
        }
        if (flags.pty)
                return run_interactive(&cli, &o, argv + cmd, "", false);
        return submit_and_follow(&cli, &o, argv + cmd);
}
