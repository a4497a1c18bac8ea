/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral-exec-run: runs one command through the executor alone, without corrald — the
 * stand-in driver for the executor's integration tests and bench/launch. It prints the
 * outcome as JSON (one line per job) and exits with the job's exit status.
 *
 *   corral-exec-run [--id N] [--user U] [--project P] [--cpus LIST] [--mem-nodes LIST]
 *                   [--mem SIZE] [--walltime SEC] [--io-write-bps DEV=RATE] [--io-weight W]
 *                   [--input F] [--output F] [--error F] [--umask OCTAL] [--tasks-max N]
 *                   [--name NAME] [--repeat N] [--parallel K]
 *                   [--kill-wait SEC] [--freeze-at SEC --thaw-at SEC] [--cancel-at SEC]
 *                   [--print-latency] -- ARGV... */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "executor.h"
#include "identity.h"
#include "log.h"
#include "parse-util.h"
#include "time-util.h"

static JobSpec spec;
static uint64_t arg_repeat = 1, arg_parallel = 1, arg_kill_wait = 30;
static int64_t arg_freeze_at = -1, arg_thaw_at = -1, arg_cancel_at = -1;
static bool arg_latency;
static uint64_t started_n, finished_n, failed_n;
static int last_status;
static uint64_t *t_start, *lat;

static int launch_next(Executor *e);

static void on_started(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        if (error < 0) {
                log_error_errno(error, "Job %" PRIu64 " did not start: %s", id, strna(message));
                failed_n++;
                finished_n++;
                last_status = 1;
                if (finished_n >= arg_repeat)
                        sd_event_exit((sd_event *) userdata, 0);
        }
}

static void on_done(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        if (error < 0)
                log_error_errno(error, "Control of job %" PRIu64 " failed: %s", id, strna(message));
        else
                log_info("job %" PRIu64 ": %s done", id, (const char *) userdata);
}

static void on_finished(Executor *e, const JobOutcome *o, void *userdata) {
        _cleanup_free_ char *json = NULL;
        uint64_t i = o->id - spec.id;

        if (o->id < spec.id || i >= arg_repeat)
                return; /* an outcome left behind by an earlier run */
        if (i < arg_repeat)
                lat[i] = now_usec(CLOCK_MONOTONIC) - t_start[i];
        if (!arg_latency && job_outcome_to_json(o, &json) >= 0)
                printf("%s\n", json);
        (void) executor_outcome_consumed(e, o->id, true);
        last_status = o->launch_errno ? 127 : o->signal ? 128 + o->signal : o->exit_code;
        finished_n++;
        if (finished_n >= arg_repeat)
                sd_event_exit((sd_event *) userdata, 0);
        else
                (void) launch_next(e);
}

static int launch_next(Executor *e) {
        int r;

        if (started_n >= arg_repeat)
                return 0;
        JobSpec s = spec;
        s.id = spec.id + started_n;
        t_start[started_n] = now_usec(CLOCK_MONOTONIC);
        r = executor_start(e, &s);
        if (r < 0)
                return log_error_errno(r, "Cannot start job %" PRIu64 ": %m", s.id);
        started_n++;
        return 0;
}

typedef struct Timed {
        Executor *e;
        const char *what;
} Timed;

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Timed *t = userdata;
        int r;

        if (streq(t->what, "cancel"))
                r = executor_cancel(t->e, spec.id, on_done, (void *) "cancel");
        else
                r = executor_freeze(t->e, spec.id, spec.project, streq(t->what, "freeze"), on_done, (void *) t->what);
        if (r < 0)
                log_error_errno(r, "Cannot %s job: %m", t->what);
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "id", required_argument, NULL, 'i' },       { "user", required_argument, NULL, 'u' },
                { "project", required_argument, NULL, 'p' },  { "cpus", required_argument, NULL, 'c' },
                { "mem-nodes", required_argument, NULL, 'N' }, { "mem", required_argument, NULL, 'm' },
                { "walltime", required_argument, NULL, 't' }, { "io-write-bps", required_argument, NULL, 'w' },
                { "io-weight", required_argument, NULL, 'W' }, { "input", required_argument, NULL, 'I' },
                { "output", required_argument, NULL, 'o' },   { "error", required_argument, NULL, 'e' },
                { "repeat", required_argument, NULL, 'r' },   { "parallel", required_argument, NULL, 'P' },
                { "kill-wait", required_argument, NULL, 'k' }, { "freeze-at", required_argument, NULL, 'f' },
                { "thaw-at", required_argument, NULL, 'T' },  { "cancel-at", required_argument, NULL, 'C' },
                { "print-latency", no_argument, NULL, 'L' },  { "umask", required_argument, NULL, 'U' },
                { "tasks-max", required_argument, NULL, 'X' }, { "name", required_argument, NULL, 'n' },
                {}
        };
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(executor_freep) Executor *e = NULL;
        const char *user = "root";
        struct passwd *pw;
        Timed timers[3];
        sigset_t mask;
        int c, r;

        log_setup("corral-exec-run", LOG_TARGET_STDERR);
        spec.id = 1000000 + (uint64_t) getpid() * 1000;
        spec.walltime_sec = 0;
        cpu_set_add(&spec.cpus, 0);
        while ((c = getopt_long(argc, argv, "+", options, NULL)) >= 0) {
                uint64_t u;
                char *eq;
                switch (c) {
                case 'i': if (safe_atou64(optarg, &spec.id) < 0) return log_error("bad --id"), 2; break;
                case 'u': user = optarg; break;
                case 'p': spec.project = optarg; break;
                case 'c': if (cpu_set_parse(optarg, &spec.cpus) < 0) return log_error("bad --cpus"), 2; break;
                case 'N': if (cpu_set_parse(optarg, &spec.mem_nodes) < 0) return log_error("bad --mem-nodes"), 2; break;
                case 'm': if (parse_size(optarg, 1, &spec.memory_max) < 0) return log_error("bad --mem"), 2; break;
                case 't': if (safe_atou64(optarg, &spec.walltime_sec) < 0) return log_error("bad --walltime"), 2; break;
                case 'w':
                        eq = strchr(optarg, '=');
                        if (!eq || parse_size(eq + 1, 1, &u) < 0)
                                return log_error("bad --io-write-bps, want DEVICE=RATE"), 2;
                        *eq = 0;
                        spec.io_limits = new0(JobIoLimit, 1);
                        spec.io_limits[0] = (JobIoLimit) { .device = optarg, .write_bps = u };
                        spec.n_io_limits = 1;
                        break;
                case 'W': if (safe_atou64(optarg, &spec.io_weight) < 0) return log_error("bad --io-weight"), 2; break;
                case 'I': spec.stdin_path = optarg; break;
                case 'o': spec.stdout_path = optarg; break;
                case 'e': spec.stderr_path = optarg; break;
                case 'r': if (safe_atou64(optarg, &arg_repeat) < 0 || !arg_repeat) return log_error("bad --repeat"), 2; break;
                case 'P': if (safe_atou64(optarg, &arg_parallel) < 0 || !arg_parallel) return log_error("bad --parallel"), 2; break;
                case 'k': if (safe_atou64(optarg, &arg_kill_wait) < 0) return log_error("bad --kill-wait"), 2; break;
                case 'f': if (safe_atoi64(optarg, &arg_freeze_at) < 0) return log_error("bad --freeze-at"), 2; break;
                case 'T': if (safe_atoi64(optarg, &arg_thaw_at) < 0) return log_error("bad --thaw-at"), 2; break;
                case 'C': if (safe_atoi64(optarg, &arg_cancel_at) < 0) return log_error("bad --cancel-at"), 2; break;
                case 'L': arg_latency = true; break;
                case 'U': {
                        char *end;
                        errno = 0;
                        u = strtoull(optarg, &end, 8);
                        if (errno != 0 || end == optarg || *end || u > 0777)
                                return log_error("bad --umask, want octal such as 077"), 2;
                        spec.umask = (mode_t) u;
                        spec.has_umask = true;
                        break;
                }
                case 'X': if (safe_atou64(optarg, &spec.tasks_max) < 0) return log_error("bad --tasks-max"), 2; break;
                case 'n': spec.name = optarg; break;
                default: return 2;
                }
        }
        if (optind >= argc)
                return log_error("No command given."), 2;
        spec.argv = argv + optind;
        pw = getpwnam(user);
        if (!pw)
                return log_error("No such user: %s", user), 2;
        /* A copy: the lookup below reuses the buffer pw points into. */
        spec.user = strdup(pw->pw_name);
        if (!spec.user)
                return log_oom(), 1;
        /* The same groups as corrald would give the job. */
        r = job_spec_resolve_identity(&spec, pw->pw_uid, pw->pw_gid);
        if (r < 0)
                return log_error_errno(r, "Cannot resolve the groups of %s: %m", user), 2;
        if (!spec.name)
                spec.name = (char *) "exec-run";
        t_start = new0(uint64_t, arg_repeat);
        lat = new0(uint64_t, arg_repeat);

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if ((r = sd_event_default(&event)) < 0 || (r = sd_bus_open_system(&bus)) < 0 ||
            (r = sd_bus_attach_event(bus, event, 0)) < 0)
                return log_error_errno(r, "Cannot set up event loop / system bus: %m"), 1;

        ExecutorConfig cfg = {
                .supervisor_path = CORRAL_LIBEXECDIR "/corral-supervisor",
                .run_dir = "/run/corral-exec-run",
                .kill_wait_sec = arg_kill_wait,
                .on_started = on_started,
                .on_finished = on_finished,
                .userdata = event,
        };
        if (getenv("CORRAL_SUPERVISOR"))
                cfg.supervisor_path = getenv("CORRAL_SUPERVISOR");
        r = executor_new(event, bus, &cfg, &e);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the executor: %m"), 1;
        r = executor_scan_outcomes(e);
        if (r < 0)
                return log_error_errno(r, "Cannot watch outcomes: %m"), 1;

        for (uint64_t i = 0; i < arg_parallel; i++)
                if (launch_next(e) < 0)
                        return 1;
        {
                int64_t at[3] = { arg_freeze_at, arg_thaw_at, arg_cancel_at };
                const char *what[3] = { "freeze", "thaw", "cancel" };
                for (int i = 0; i < 3; i++) {
                        if (at[i] < 0)
                                continue;
                        timers[i] = (Timed) { e, what[i] };
                        r = sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, (uint64_t) at[i] * 1000000, 0,
                                                       on_timer, &timers[i]);
                        if (r < 0)
                                return log_error_errno(r, "Cannot add timer: %m"), 1;
                }
        }
        r = sd_event_loop(event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m"), 1;
        if (arg_latency) {
                qsort(lat, arg_repeat, sizeof *lat, cmp_u64);
                printf("launches %" PRIu64 " p50_ms %.2f p99_ms %.2f\n", arg_repeat, lat[arg_repeat / 2] / 1000.0,
                       lat[(arg_repeat * 99) / 100 >= arg_repeat ? arg_repeat - 1 : (arg_repeat * 99) / 100] / 1000.0);
        }
        return failed_n ? 1 : last_status;
}
