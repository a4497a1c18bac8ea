/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse-util.h"
#include "proto/constraint.h"
#include "proto/protocol.h"
#include "strv.h"
#include "submit-options.h"

void submit_options_init(SubmitOptions *o, time_t now) {
        *o = (SubmitOptions) {
                .req = SUBMIT_REQUEST_INIT,
                .export_all = -1,
                .now = now,
                .sendmail_path = CORRAL_SENDMAIL_PATH,
        };
}

void submit_options_done(SubmitOptions *o) {
        if (!o)
                return;
        submit_request_done(&o->req);
        strv_free(o->export_vars);
        free(o->shell);
        free(o->qos);
        strv_free(o->warnings);
        submit_options_init(o, o->now);
}

_printf_(2, 3) static int fail(char **ret_error, const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s)
                return -ENOMEM;
        if (ret_error)
                *ret_error = s;
        else
                free(s);
        return -EINVAL;
}

/* Something accepted but not honoured; the caller puts the option in front. */
#define warn(o, ...) strv_extendf(&(o)->warnings, __VA_ARGS__)

static int replace_string(char **p, const char *s) {
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        free(*p);
        *p = d;
        return 0;
}

static int parse_count(const char *arg, unsigned min, unsigned max, unsigned *ret, char **ret_error) {
        unsigned v;

        if (safe_atou(arg, &v) < 0 || v < min || v > max)
                return fail(ret_error, "must be a number between %u and %u", min, max);
        *ret = v;
        return 0;
}

/* ---- Setters ---- */

static int set_ntasks(SubmitOptions *o, const char *arg, char **ret_error) {
        return parse_count(arg, 1, CORRAL_CPUS_MAX, &o->ntasks, ret_error);
}

static int set_cpus_per_task(SubmitOptions *o, const char *arg, char **ret_error) {
        return parse_count(arg, 1, CORRAL_CPUS_MAX, &o->cpus_per_task, ret_error);
}

static int set_mem(SubmitOptions *o, const char *arg, char **ret_error) {
        uint64_t v;

        /* Slurm's --mem=0 means "all of the node's memory"; corral has no such request. */
        if (parse_size(arg, UINT64_C(1) << 20, &v) < 0 || v == 0 || v > CORRAL_SIZE_MAX)
                return fail(ret_error, "invalid size (a number of megabytes, or with a K, M, G or T suffix)");
        /* sbatch refuses the pair rather than let one silently win. */
        if (o->mem_per_cpu > 0)
                return fail(ret_error, "--mem and --mem-per-cpu are mutually exclusive");
        o->req.memory = v;
        return 0;
}

static int set_mem_per_cpu(SubmitOptions *o, const char *arg, char **ret_error) {
        uint64_t v;

        if (parse_size(arg, UINT64_C(1) << 20, &v) < 0 || v == 0 || v > CORRAL_SIZE_MAX)
                return fail(ret_error, "invalid size (a number of megabytes, or with a K, M, G or T suffix)");
        if (o->req.memory > 0)
                return fail(ret_error, "--mem and --mem-per-cpu are mutually exclusive");
        o->mem_per_cpu = v;
        return 0;
}

static int set_walltime(SubmitOptions *o, DurationDialect dialect, const char *arg, char **ret_error) {
        uint64_t v;

        if (parse_duration(arg, dialect, &v) < 0)
                return fail(ret_error, dialect == DURATION_PBS ? "invalid walltime (HH:MM:SS)"
                                                              : "invalid time (minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S)");
        /* Slurm: "a time limit of zero requests that no time limit be imposed". */
        if (v == 0 || v == DURATION_INFINITY)
                v = CORRAL_WALLTIME_INFINITY;
        else if (v > CORRAL_WALLTIME_MAX)
                return fail(ret_error, "longer than 100 years");
        o->req.walltime_sec = v;
        return 0;
}

static int set_time(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_walltime(o, DURATION_SLURM, arg, ret_error);
}

static int set_io_limit(IoDeviceLimits *l, const char *arg, bool bandwidth, char **ret_error) {
        _cleanup_free_ char *dev = NULL;
        const char *colon = strrchr(arg, ':');
        uint64_t v;
        int r;

        if (!colon || arg[0] != '/' || colon == arg)
                return fail(ret_error, "expected DEVICE:%s with an absolute device path, e.g. /dev/vdb:%s",
                            bandwidth ? "BYTES_PER_SEC" : "IOPS", bandwidth ? "10M" : "500");
        r = bandwidth ? parse_size(colon + 1, 1, &v) : safe_atou64(colon + 1, &v);
        if (r < 0 || v == 0 || v > CORRAL_SIZE_MAX)
                return fail(ret_error, "invalid %s '%s'", bandwidth ? "rate" : "IO count", colon + 1);
        dev = strndup(arg, (size_t) (colon - arg));
        if (!dev)
                return -ENOMEM;
        if (l->n >= CORRAL_IO_DEVICES_MAX)
                return fail(ret_error, "too many devices");
        return io_device_limits_add(l, dev, v);
}

static int set_io_read_bw(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_io_limit(&o->req.io_read_bw, arg, true, ret_error);
}
static int set_io_write_bw(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_io_limit(&o->req.io_write_bw, arg, true, ret_error);
}
static int set_io_read_iops(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_io_limit(&o->req.io_read_iops, arg, false, ret_error);
}
static int set_io_write_iops(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_io_limit(&o->req.io_write_iops, arg, false, ret_error);
}

static int set_io_weight(SubmitOptions *o, const char *arg, char **ret_error) {
        return parse_count(arg, CORRAL_IO_WEIGHT_MIN, CORRAL_IO_WEIGHT_MAX, &o->req.io_weight, ret_error);
}

static int set_tasks_max(SubmitOptions *o, const char *arg, char **ret_error) {
        uint64_t v;

        if (safe_atou64(arg, &v) < 0 || v < 1 || v > CORRAL_TASKS_MAX_MAX)
                return fail(ret_error, "must be a number between 1 and %" PRIu64, CORRAL_TASKS_MAX_MAX);
        o->req.tasks_max = v;
        return 0;
}

static int set_path(char **p, const char *arg, char **ret_error) {
        if (isempty(arg) || strlen(arg) > CORRAL_PATH_LENGTH_MAX || strchr(arg, '\n'))
                return fail(ret_error, "invalid path");
        return replace_string(p, arg);
}

static int set_workdir(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_path(&o->req.workdir, arg, ret_error);
}
static int set_output(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_path(&o->req.stdout_path, arg, ret_error);
}
static int set_error(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_path(&o->req.stderr_path, arg, ret_error);
}
static int set_input(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_path(&o->req.stdin_path, arg, ret_error);
}

static int set_env(SubmitOptions *o, const char *arg, char **ret_error) {
        if (!env_assignment_is_valid(arg))
                return fail(ret_error, "expected NAME=VALUE");
        if (strv_length(o->req.env) >= CORRAL_ENV_MAX)
                return fail(ret_error, "too many variables");
        return strv_extend(&o->req.env, arg);
}

static int set_export(SubmitOptions *o, const char *arg, char **ret_error) {
        _cleanup_strv_free_ char **items = NULL, **vars = NULL;
        int all = 0, r;

        r = strv_split(arg, ",", &items);
        if (r < 0)
                return r;
        STRV_FOREACH(i, items) {
                const char *eq = strchr(*i, '=');

                if (streq(*i, "ALL"))
                        all = 1;
                else if (streq(*i, "NONE") || streq(*i, "NIL")) {
                        if (strv_length(items) > 1)
                                return fail(ret_error, "NONE cannot be combined with other entries");
                } else if (eq ? env_assignment_is_valid(*i) : env_name_is_valid(*i, strlen(*i))) {
                        r = strv_extend(&vars, *i);
                        if (r < 0)
                                return r;
                } else
                        return fail(ret_error, "'%s' is neither ALL, NONE, a variable name nor NAME=VALUE", *i);
        }
        if (!items || !items[0])
                return fail(ret_error, "expected ALL, NONE or a list of variables");
        /* Like sbatch: naming variables without ALL exports only those. */
        o->export_all = all;
        strv_free(o->export_vars);
        o->export_vars = TAKE_PTR(vars);
        return 0;
}

static int parse_job_id(const char *s, size_t n, uint64_t *ret) {
        char buf[32];
        uint64_t v;

        if (n == 0 || n >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, n);
        buf[n] = 0;
        if (safe_atou64(buf, &v) < 0 || v < 1 || v > CORRAL_JOB_ID_MAX)
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_dependency_list(const char *s, SubmitRequest *req, char **ret_error) {
        _cleanup_strv_free_ char **items = NULL;
        int r;

        if (isempty(s))
                return fail(ret_error, "expected TYPE:JOBID[:JOBID...][,TYPE:JOBID...] or JOBID[:JOBID...]");
        if (strchr(s, '?'))
                return fail(ret_error, "'?' (any of) dependencies are not supported, only ',' (all of)");
        r = strv_split(s, ",", &items);
        if (r < 0)
                return r;
        STRV_FOREACH(i, items) {
                const char *colon = strchr(*i, ':'), *p;
                _cleanup_free_ char *type = NULL;
                DependencyType t;

                if (streq(*i, "singleton"))
                        return fail(ret_error, "'singleton' is not supported");
                /* Slurm's older form, still accepted: job ids without a type (JOBID[:JOBID...])
                 * mean afterany. */
                if (parse_job_id(*i, colon ? (size_t) (colon - *i) : strlen(*i), &(uint64_t) { 0 }) >= 0) {
                        t = DEPENDENCY_AFTERANY;
                        p = *i;
                } else {
                        if (!colon)
                                return fail(ret_error, "'%s': expected TYPE:JOBID or JOBID", *i);
                        type = strndup(*i, (size_t) (colon - *i));
                        if (!type)
                                return -ENOMEM;
                        t = dependency_type_from_string(type);
                        if (t < 0)
                                return fail(ret_error, "unknown dependency type '%s' (after, afterany, afterok, "
                                            "afternotok)", type);
                        p = colon + 1;
                }
                for (;;) {
                        size_t n = strcspn(p, ":");
                        uint64_t id;

                        if (parse_job_id(p, n, &id) < 0)
                                return fail(ret_error, "'%.*s' is not a job id", (int) n, p);
                        if (req->n_dependencies >= CORRAL_DEPENDENCIES_MAX)
                                return fail(ret_error, "too many dependencies");
                        r = submit_request_add_dependency(req, t, id);
                        if (r < 0)
                                return r;
                        p += n;
                        if (*p == '\0')
                                break;
                        p++;
                }
        }
        return 0;
}

static int set_dependency(SubmitOptions *o, const char *arg, char **ret_error) {
        return parse_dependency_list(arg, &o->req, ret_error);
}

static int set_hold(SubmitOptions *o, const char *arg, char **ret_error) {
        o->req.hold = true;
        return 0;
}

static int set_ident(char **p, const char *arg, char **ret_error) {
        if (!ident_is_valid(arg))
                return fail(ret_error, "invalid name (letters, digits, '_', '.', '-'; at most %u)",
                            CORRAL_IDENT_LENGTH_MAX);
        return replace_string(p, arg);
}

static int set_queue(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_ident(&o->req.queue, arg, ret_error);
}
static int set_project(SubmitOptions *o, const char *arg, char **ret_error) {
        return set_ident(&o->req.project, arg, ret_error);
}

static int set_exclusive(SubmitOptions *o, const char *arg, char **ret_error) {
        if (arg)
                return fail(ret_error, "only plain --exclusive is supported (the whole machine)");
        o->req.exclusive = true;
        return 0;
}

static int set_rerunnable(SubmitOptions *o, const char *arg, char **ret_error) {
        o->req.rerunnable = 1;
        return 0;
}
static int set_no_rerunnable(SubmitOptions *o, const char *arg, char **ret_error) {
        o->req.rerunnable = 0;
        return 0;
}

static int set_name(SubmitOptions *o, const char *arg, char **ret_error) {
        if (!job_name_is_valid(arg))
                return fail(ret_error, "invalid job name (1-%u characters, no control characters)",
                            CORRAL_NAME_LENGTH_MAX);
        return replace_string(&o->req.name, arg);
}

static int set_nice(SubmitOptions *o, const char *arg, char **ret_error) {
        int v;

        if (!arg) {
                o->req.nice = 100; /* sbatch's default adjustment for a bare --nice */
                return 0;
        }
        if (safe_atoi(arg, &v) < 0 || v < CORRAL_NICE_MIN || v > CORRAL_NICE_MAX)
                return fail(ret_error, "must be a number between %d and %d", CORRAL_NICE_MIN, CORRAL_NICE_MAX);
        o->req.nice = v;
        return 0;
}

static int set_array(SubmitOptions *o, const char *arg, char **ret_error) {
        ArraySpec a = {};
        int r = array_spec_parse(arg, &a);

        if (r == -ENOMEM)
                return r;
        if (r == -ERANGE)
                return fail(ret_error, "too large (at most %u tasks, indexes up to %u, %u ranges in a list)",
                            CORRAL_ARRAY_TASKS_MAX, CORRAL_ARRAY_INDEX_MAX, CORRAL_ARRAY_RANGES_MAX);
        if (r < 0)
                return fail(ret_error, "expected START[-END[:STEP]][,...][%%MAX], each index once");
        array_spec_done(&o->req.array);
        o->req.array = a;
        return 0;
}

static int set_wait(SubmitOptions *o, const char *arg, char **ret_error) {
        o->wait = true;
        return 0;
}

int parse_begin_time(const char *s, time_t now, uint64_t *ret) {
        struct tm tm;
        const char *end;
        uint64_t v;

        if (isempty(s))
                return -EINVAL;
        if (streq(s, "now")) {
                *ret = (uint64_t) now;
                return 0;
        }
        if (strneq(s, "now+", 4)) {
                const char *d = s + 4;
                /* sbatch: a bare number counts seconds here, units may follow. */
                if (safe_atou64(d, &v) < 0 && parse_duration(d, DURATION_SLURM, &v) < 0)
                        return -EINVAL;
                if (strpbrk(d, ":-"))
                        return -EINVAL;
                if (v > CORRAL_TIME_MAX || (uint64_t) now + v > CORRAL_TIME_MAX)
                        return -ERANGE;
                *ret = (uint64_t) now + v;
                return 0;
        }

        localtime_r(&now, &tm);
        tm.tm_isdst = -1;
        if ((end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) && !*end)
                ;
        else if ((localtime_r(&now, &tm), tm.tm_isdst = -1, end = strptime(s, "%Y-%m-%dT%H:%M", &tm)) && !*end)
                tm.tm_sec = 0;
        else if ((localtime_r(&now, &tm), tm.tm_isdst = -1, end = strptime(s, "%Y-%m-%d", &tm)) && !*end)
                tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        else {
                bool have_sec = true;

                localtime_r(&now, &tm);
                tm.tm_isdst = -1;
                end = strptime(s, "%H:%M:%S", &tm);
                if (!end || *end) {
                        localtime_r(&now, &tm);
                        tm.tm_isdst = -1;
                        end = strptime(s, "%H:%M", &tm);
                        have_sec = false;
                }
                if (!end || *end)
                        return -EINVAL;
                if (!have_sec)
                        tm.tm_sec = 0;
                /* A time of day already past means tomorrow, as sbatch does. */
                time_t t = mktime(&tm);
                if (t == (time_t) -1)
                        return -EINVAL;
                if (t <= now) {
                        tm.tm_mday++;
                        tm.tm_isdst = -1;
                }
        }
        time_t t = mktime(&tm);
        if (t == (time_t) -1 || t < 0)
                return -EINVAL;
        if ((uint64_t) t > CORRAL_TIME_MAX)
                return -ERANGE;
        *ret = (uint64_t) t;
        return 0;
}

static int set_begin(SubmitOptions *o, const char *arg, char **ret_error) {
        uint64_t v;

        if (parse_begin_time(arg, o->now, &v) < 0)
                return fail(ret_error, "expected now+SECONDS, now+DURATION, HH:MM[:SS] or YYYY-MM-DD[THH:MM[:SS]]");
        o->req.begin_time = v;
        return 0;
}

static int set_nodes(SubmitOptions *o, const char *arg, char **ret_error) {
        if (streq(arg, "1") || streq(arg, "1-1"))
                return 0;
        return fail(ret_error, "not supported on a single machine (only 1 node can be requested)");
}

/* Options that place a job among nodes or clusters: nothing to choose from here. */
static int set_single_machine(SubmitOptions *o, const char *arg, char **ret_error) {
        return fail(ret_error, "not supported on a single machine");
}

static int set_clusters(SubmitOptions *o, const char *arg, char **ret_error) {
        if (cluster_list_is_here(arg))
                return 0;
        return fail(ret_error, "not supported on a single machine (its cluster is its host name, or all)");
}

/* -w: Parsl's MPI launcher names the job's node, this machine. */
static int set_nodelist(SubmitOptions *o, const char *arg, char **ret_error) {
        if (node_list_is_here(arg))
                return 0;
        return fail(ret_error, "not supported on a single machine (its one node is its host name)");
}

static int set_comment(SubmitOptions *o, const char *arg, char **ret_error) {
        if (!job_comment_is_valid(arg))
                return fail(ret_error, "invalid comment (1-%u characters on one line, no control characters)",
                            CORRAL_COMMENT_LENGTH_MAX);
        return replace_string(&o->req.comment, arg);
}

static int set_open_mode(SubmitOptions *o, const char *arg, char **ret_error) {
        if (strcasecmp(arg, "append") == 0 || strcasecmp(arg, "a") == 0)
                o->req.output_append = true;
        else if (strcasecmp(arg, "truncate") == 0 || strcasecmp(arg, "t") == 0)
                o->req.output_append = false;
        else
                return fail(ret_error, "expected append or truncate");
        return 0;
}

/* Accepted and without effect here, as under Slurm in the same case: --get-user-env
 * loads a login environment only when root submits for another user (--uid, which
 * Corral does not have), --wckey without TrackWCKey. */
static int set_no_effect(SubmitOptions *o, const char *arg, char **ret_error) {
        return 0;
}

static int set_priority(SubmitOptions *o, const char *arg, char **ret_error) {
        return fail(ret_error, "a job's priority is computed by corrald's policy, not set (--nice lowers "
                    "your own)");
}

static int set_qos(SubmitOptions *o, const char *arg, char **ret_error) {
        if (o->source == SUBMIT_SOURCE_DIRECTIVE && o->qos_by_command_line)
                return 0;
        if (!ident_is_valid(arg))
                return fail(ret_error, "invalid QOS name (letters, digits, '_', '.', '-'; at most %u)",
                            CORRAL_IDENT_LENGTH_MAX);
        /* Never the queue: a QOS named like a queue would put the job where it was not
         * meant to go. The job sees it, as under Slurm. */
        if (replace_string(&o->qos, arg) < 0)
                return -ENOMEM;
        if (o->source == SUBMIT_SOURCE_COMMAND_LINE)
                o->qos_by_command_line = true;
        return warn(o, "Corral has no QOS: not used for scheduling (choose a queue with --partition); "
                    "the job sees it as SLURM_JOB_QOS");
}

static int warn_mail(SubmitOptions *o) {
        if (o->warned_mail || !o->req.mail_events || access(o->sendmail_path, X_OK) >= 0)
                return 0;
        o->warned_mail = true;
        return warn(o, "accepted, but this machine has no %s: no mail will be sent for this job", o->sendmail_path);
}

static int set_mail_type(SubmitOptions *o, const char *arg, char **ret_error) {
        /* Slurm's types; those without a meaning here (no stage-out, no dependency that
         * turns invalid later) are taken and send nothing. */
        static const struct { const char *name; unsigned events; } types[] = {
                { "NONE", 0 }, { "BEGIN", MAIL_BEGIN }, { "END", MAIL_END }, { "FAIL", MAIL_FAIL },
                { "REQUEUE", MAIL_REQUEUE }, { "ALL", MAIL_ALL }, { "ARRAY_TASKS", MAIL_ARRAY_TASKS },
                { "INVALID_DEPEND", 0 }, { "STAGE_OUT", 0 }, { "TIME_LIMIT", MAIL_TIME_LIMIT },
                { "TIME_LIMIT_90", MAIL_TIME_LIMIT_90 }, { "TIME_LIMIT_80", MAIL_TIME_LIMIT_80 },
                { "TIME_LIMIT_50", MAIL_TIME_LIMIT_50 },
        };
        _cleanup_strv_free_ char **l = NULL;
        unsigned events = 0;
        int r;

        r = strv_split(arg, ",", &l);
        if (r < 0)
                return r;
        if (!l || !l[0])
                return fail(ret_error, "expected a list of BEGIN, END, FAIL, ALL, NONE, ...");
        STRV_FOREACH(t, l) {
                size_t i;

                for (i = 0; i < ELEMENTSOF(types); i++)
                        if (strcasecmp(*t, types[i].name) == 0)
                                break;
                if (i >= ELEMENTSOF(types))
                        return fail(ret_error, "unknown mail type '%s' (BEGIN, END, FAIL, ALL, NONE, ...)", *t);
                events = i == 0 ? 0 : events | types[i].events;
        }
        o->req.mail_events = events;
        return warn_mail(o);
}

static int set_mail_user(SubmitOptions *o, const char *arg, char **ret_error) {
        if (!mail_user_is_valid(arg))
                return fail(ret_error, "invalid address '%s' (a user name or user@host)", arg);
        if (replace_string(&o->req.mail_user, arg) < 0)
                return -ENOMEM;
        return warn_mail(o);
}

/* "[{R|B}:]SIGNAL[@SECONDS]": a name (with or without SIG) or a number, 0-65535 s, 60 s
 * when not given (as sbatch). R: (not while in a reservation) means nothing here: no
 * reservations. */
static int parse_signal_spec(const char *arg, unsigned *ret_sig, unsigned *ret_sec, bool *ret_batch) {
        const char *p = arg, *at;
        char name[16];
        unsigned v, sig, sec = 60;
        bool batch = false;
        size_t n;

        n = strcspn(p, ":");
        if (p[n] == ':') {
                if (n == 0 || n > 2 || strspn(p, "RB") != n || (n == 2 && p[0] == p[1]))
                        return -EINVAL;
                batch = memchr(p, 'B', n);
                p += n + 1;
        }
        at = strchr(p, '@');
        n = at ? (size_t) (at - p) : strlen(p);
        if (n == 0 || n >= sizeof(name))
                return -EINVAL;
        memcpy(name, p, n);
        name[n] = 0;
        if (isdigit((unsigned char) name[0])) {
                if (safe_atou(name, &v) < 0 || v < 1 || v > (unsigned) SIGRTMAX || v > CORRAL_WARN_SIGNAL_MAX)
                        return -EINVAL;
                sig = v;
        } else {
                const char *s = strncasecmp(name, "SIG", 3) == 0 ? name + 3 : name;
                int k;

                for (k = 1; k < SIGRTMIN; k++) {
                        const char *a = sigabbrev_np(k);
                        if (a && strcasecmp(a, s) == 0)
                                break;
                }
                if (k >= SIGRTMIN)
                        return -EINVAL;
                sig = (unsigned) k;
        }
        if (at && (safe_atou(at + 1, &sec) < 0 || sec > CORRAL_WARN_SEC_MAX))
                return -EINVAL;
        *ret_sig = sig;
        *ret_sec = sec;
        *ret_batch = batch;
        return 0;
}

static int set_signal(SubmitOptions *o, const char *arg, char **ret_error) {
        if (parse_signal_spec(arg, &o->req.warn_signal, &o->req.warn_sec, &o->req.warn_batch_only) < 0)
                return fail(ret_error, "expected [B:]SIGNAL[@SECONDS], e.g. B:USR1@300");
        return 0;
}

/* A GPU count, "0" included (none, as Slurm takes --gpus=0). */
static int parse_gpu_count(const char *s, unsigned *ret) {
        unsigned v;

        if (safe_atou(s, &v) < 0 || v > CORRAL_GPUS_MAX)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int gpu_type_check(const char *type, char **ret_error) {
        if (!ident_is_valid(type) || strlen(type) > CORRAL_GPU_TYPE_LENGTH_MAX)
                return fail(ret_error, "invalid GPU type '%s' (letters, digits, '_', '.', '-'; at most %u)", type,
                            CORRAL_GPU_TYPE_LENGTH_MAX);
        return 0;
}

/* "[TYPE:]COUNT", as --gpus and --gpus-per-task take it; one type per job. */
static int parse_gpu_spec(const char *arg, char **ret_type, unsigned *ret_count, char **ret_error) {
        const char *colon = strrchr(arg, ':');
        _cleanup_free_ char *type = NULL;
        int r;

        if (strchr(arg, ','))
                return fail(ret_error, "one GPU type per job here (expected [TYPE:]COUNT)");
        if (parse_gpu_count(colon ? colon + 1 : arg, ret_count) < 0)
                return fail(ret_error, "expected [TYPE:]COUNT with COUNT between 0 and %u", CORRAL_GPUS_MAX);
        if (colon) {
                type = strndup(arg, colon - arg);
                if (!type)
                        return -ENOMEM;
                r = gpu_type_check(type, ret_error);
                if (r < 0)
                        return r;
        }
        *ret_type = TAKE_PTR(type);
        return 0;
}

static void set_gpu_request(SubmitOptions *o, char *type, unsigned total, unsigned per_task, unsigned shards) {
        free(o->req.gpu_type);
        /* No GPUs: no type either, so that "--gres=gpu:a100:0" asks for nothing. */
        o->req.gpu_type = total > 0 || per_task > 0 || shards > 0 ? type : mfree(type);
        o->req.gpus = total;
        o->gpus_per_task = per_task;
        o->req.shards = shards;
}

static int set_gpus(SubmitOptions *o, const char *arg, char **ret_error) {
        char *type = NULL;
        unsigned n = 0;
        int r;

        r = parse_gpu_spec(arg, &type, &n, ret_error);
        if (r < 0)
                return r;
        set_gpu_request(o, type, n, 0, 0);
        return 0;
}

static int set_gpus_per_task(SubmitOptions *o, const char *arg, char **ret_error) {
        char *type = NULL;
        unsigned n = 0;
        int r;

        r = parse_gpu_spec(arg, &type, &n, ret_error);
        if (r < 0)
                return r;
        set_gpu_request(o, type, 0, n, 0);
        return 0;
}

/* Slurm's --gres=NAME[[:TYPE]:COUNT][,...]: "gpu", "gpu:2", "gpu:a100", "gpu:a100:2" (a
 * missing count is 1), "gres/gpu:2" as --tres-per-* write it, or "none"; "shard:K" (and
 * "shard:TYPE:K"): K shards of one GPU, shared with other shard jobs (Slurm's gres/shard,
 * never with gpu in one job). On one node the per-node count is the job's. GPUs and their
 * shards are the only generic resources here. */
static int set_gres(SubmitOptions *o, const char *arg, char **ret_error) {
        _cleanup_strv_free_ char **items = NULL;
        _cleanup_free_ char *type = NULL;
        unsigned total = 0, shards = 0;
        bool seen = false;
        int r;

        if (streq(arg, "none")) {
                set_gpu_request(o, NULL, 0, 0, 0);
                return 0;
        }
        r = strv_split(arg, ",", &items);
        if (r < 0)
                return r;
        if (!items || !items[0])
                return fail(ret_error, "expected gpu[:TYPE][:COUNT] or shard[:TYPE][:COUNT]");
        STRV_FOREACH(it, items) {
                _cleanup_strv_free_ char **parts = NULL;
                const char *name = *it;
                unsigned n = 1;
                bool shard;
                size_t k;

                if (strneq(name, "gres/", 5))
                        name += 5;
                r = strv_split(name, ":", &parts);
                if (r < 0)
                        return r;
                k = strv_length(parts);
                if (k == 0 || (!streq(parts[0], "gpu") && !streq(parts[0], "shard")))
                        return fail(ret_error, "generic resource '%.*s' is not available here: GPUs and their "
                                    "shards are the only ones (gpu[:TYPE][:COUNT], shard[:COUNT])",
                                    (int) strcspn(name, ":"), name);
                shard = streq(parts[0], "shard");
                if (k > 3)
                        return fail(ret_error, "expected %s[:TYPE][:COUNT], got '%s'", parts[0], *it);
                if (seen)
                        return fail(ret_error, "%s", shard || shards > 0
                                                ? "gpu and shard given together, or twice: a job takes whole GPUs "
                                                  "or shards of one GPU"
                                                : "gpu given twice; one GPU type per job here");
                seen = true;
                /* "gpu:X": a count when X is a number, else a type (of one GPU): "1g.10gb", a
                 * MIG profile, starts with a digit too. */
                if (k == 3 || (k == 2 && (isempty(parts[1]) || parts[1][strspn(parts[1], "0123456789")] != '\0'))) {
                        r = gpu_type_check(parts[1], ret_error);
                        if (r < 0)
                                return r;
                        /* A copy: taking parts[1] would leave a hole strv_free() stops at. */
                        free(type);
                        type = strdup(parts[1]);
                        if (!type)
                                return -ENOMEM;
                }
                if (shard) {
                        if ((k == 3 || (k == 2 && !type)) &&
                            (safe_atou(parts[k - 1], &n) < 0 || n > CORRAL_SHARDS_MAX))
                                return fail(ret_error, "invalid shard count '%s' (0 to %u)", parts[k - 1],
                                            CORRAL_SHARDS_MAX);
                        shards = n;
                        continue;
                }
                if ((k == 3 || (k == 2 && !type)) && parse_gpu_count(parts[k - 1], &n) < 0)
                        return fail(ret_error, "invalid GPU count '%s' (0 to %u)", parts[k - 1], CORRAL_GPUS_MAX);
                total = n;
        }
        set_gpu_request(o, TAKE_PTR(type), total, 0, shards);
        return 0;
}

static int set_gres_flags(SubmitOptions *o, const char *arg, char **ret_error) {
        if (streq(arg, "enforce-binding"))
                o->req.gpu_binding = true;
        else if (streq(arg, "disable-binding"))
                o->req.gpu_binding = false;
        else
                return fail(ret_error, "expected enforce-binding or disable-binding");
        return 0;
}

static int set_constraint(SubmitOptions *o, const char *arg, char **ret_error) {
        if (strlen(arg) > CORRAL_CONSTRAINT_LENGTH_MAX || !constraint_is_valid(arg))
                return fail(ret_error, "invalid feature expression: names (letters, digits, '_', '.', '-') joined "
                            "by & (and) and | (or), with parentheses, e.g. a100|h100 or gpu&nvlink (counts like "
                            "a100*2 and [a|b] choose among nodes: not on one machine)");
        return replace_string(&o->req.constraint, arg);
}

static const SubmitOption options[] = {
        { "cpus", 'n', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_NTASKS, set_ntasks, "CPUs for the job (as --ntasks)" },
        { "ntasks", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_NTASKS, set_ntasks, NULL },
        { "ntasks-per-node", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_NTASKS, set_ntasks, NULL },
        { "cpus-per-task", 'c', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_CPUS_PER_TASK, set_cpus_per_task,
          "CPUs per task: the job gets ntasks x cpus-per-task" },
        { "mem", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_MEMORY, set_mem, "memory limit (MB, or K/M/G/T suffix)" },
        { "mem-per-cpu", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_MEMORY, set_mem_per_cpu, "memory per CPU" },
        { "time", 't', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_TIME, set_time, "walltime limit ([D-]H:M:S, minutes)" },
        { "io-read-bw", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_IO_READ_BW, set_io_read_bw,
          "DEVICE:RATE read bandwidth limit, e.g. /dev/vdb:10M (repeatable)" },
        { "io-write-bw", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_IO_WRITE_BW, set_io_write_bw,
          "DEVICE:RATE write bandwidth limit (repeatable)" },
        { "io-read-iops", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_IO_READ_IOPS, set_io_read_iops,
          "DEVICE:IOPS read operations limit (repeatable)" },
        { "io-write-iops", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_IO_WRITE_IOPS, set_io_write_iops,
          "DEVICE:IOPS write operations limit (repeatable)" },
        { "io-weight", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_IO_WEIGHT, set_io_weight, "IO weight 1-10000" },
        { "tasks-max", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_TASKS_MAX, set_tasks_max, "maximum processes/threads" },
        { "workdir", 'D', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_WORKDIR, set_workdir, "working directory" },
        { "chdir", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_WORKDIR, set_workdir, NULL },
        { "output", 'o', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_OUTPUT, set_output, "stdout path (%j = job id)" },
        { "error", 'e', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_ERROR, set_error, "stderr path" },
        { "input", 'i', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_INPUT, set_input, "stdin path" },
        { "env", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_ENV, set_env, "NAME=VALUE for the job (repeatable)" },
        { "export", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_EXPORT, set_export,
          "ALL, NONE or [ALL,]VAR[,VAR=value...]: environment to pass" },
        { "dependency", 'd', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_DEPENDENCY, set_dependency,
          "afterok:ID[:ID][,afterany:ID...]" },
        { "depend", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_DEPENDENCY, set_dependency, NULL },
        { "hold", 'H', SUBMIT_ARG_NONE, SUBMIT_FIELD_HOLD, set_hold, "submit held" },
        { "queue", 'q', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_QUEUE, set_queue, "queue (partition)" },
        { "partition", 'p', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_QUEUE, set_queue, NULL },
        { "project", 'A', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_PROJECT, set_project, "project (account)" },
        { "account", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_PROJECT, set_project, NULL },
        { "exclusive", 0, SUBMIT_ARG_OPTIONAL, SUBMIT_FIELD_EXCLUSIVE, set_exclusive, "the machine to itself" },
        { "rerunnable", 0, SUBMIT_ARG_NONE, SUBMIT_FIELD_RERUNNABLE, set_rerunnable, "may be requeued" },
        { "requeue", 0, SUBMIT_ARG_NONE, SUBMIT_FIELD_RERUNNABLE, set_rerunnable, NULL },
        { "no-rerunnable", 0, SUBMIT_ARG_NONE, SUBMIT_FIELD_RERUNNABLE, set_no_rerunnable, "never requeue" },
        { "no-requeue", 0, SUBMIT_ARG_NONE, SUBMIT_FIELD_RERUNNABLE, set_no_rerunnable, NULL },
        { "name", 'J', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_NAME, set_name, "job name" },
        { "job-name", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_NAME, set_name, NULL },
        { "nice", 0, SUBMIT_ARG_OPTIONAL, SUBMIT_FIELD_NICE, set_nice, "[=N] lower priority (default 100)" },
        { "array", 'a', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_ARRAY, set_array, "START-END[:STEP][,...][%MAX]" },
        { "wait", 'W', SUBMIT_ARG_NONE, SUBMIT_FIELD_WAIT, set_wait, "wait for the job to end" },
        { "begin", 'b', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_BEGIN, set_begin, "start no earlier than this time" },
        { "nodes", 'N', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_NODES, set_nodes, NULL },

        { "mail-type", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_MAIL_EVENTS, set_mail_type,
          "mail on BEGIN, END, FAIL, REQUEUE, ALL (ARRAY_TASKS: for each array task; NONE)" },
        { "mail-user", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_MAIL_USER, set_mail_user,
          "where the mail goes (default: you)" },
        { "signal", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_SIGNAL, set_signal,
          "[B:]SIG[@SECONDS]: signal the job (B: its script's shell) that long before its time limit" },
        { "gpus", 'G', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_GPUS, set_gpus, "[TYPE:]N GPUs for the job" },
        { "gpus-per-task", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_GPUS, set_gpus_per_task,
          "[TYPE:]N GPUs per task: the job gets ntasks x N" },
        { "gpus-per-node", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_GPUS, set_gpus, NULL },
        { "gres", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_GPUS, set_gres, "gpu[:TYPE][:N] GPUs, as Slurm writes them" },
        { "constraint", 'C', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_CONSTRAINT, set_constraint,
          "features the GPUs must have, e.g. a100|h100" },
        { "gres-flags", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_GRES_FLAGS, set_gres_flags,
          "enforce-binding: CPUs only on the GPUs' NUMA nodes" },
        { "comment", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_COMMENT, set_comment,
          "a comment shown with the job (squeue %k, sacct Comment)" },
        { "open-mode", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_OPEN_MODE, set_open_mode,
          "append or truncate (default) the output files" },

        /* Known to Slurm users, meaningless or not implemented here: say so rather than
         * "unknown option". Scripts carry --qos often: accepted, with a warning. */
        { "qos", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_qos, NULL },
        { "clusters", 'M', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_clusters, NULL },
        { "cluster", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_clusters, NULL },
        { "get-user-env", 0, SUBMIT_ARG_OPTIONAL, SUBMIT_FIELD_UNSUPPORTED, set_no_effect, NULL },
        { "wckey", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_no_effect, NULL },
        { "priority", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_priority, NULL },
        { "nodelist", 'w', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_nodelist, NULL },
        { "exclude", 'x', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_single_machine, NULL },
        { "distribution", 'm', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_single_machine, NULL },
        { "switches", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, set_single_machine, NULL },
        { "spread-job", 0, SUBMIT_ARG_NONE, SUBMIT_FIELD_UNSUPPORTED, set_single_machine, NULL },
        { "licenses", 'L', SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, NULL, NULL },
        { "reservation", 0, SUBMIT_ARG_REQUIRED, SUBMIT_FIELD_UNSUPPORTED, NULL, NULL },
};

const SubmitOption *submit_options_table(size_t *ret_n) {
        if (ret_n)
                *ret_n = ELEMENTSOF(options);
        return options;
}

const SubmitOption *submit_option_find_long(const char *name, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                if (strlen(options[i].long_name) == len && strneq(options[i].long_name, name, len))
                        return &options[i];
        return NULL;
}

const SubmitOption *submit_option_find_short(char c) {
        if (c == 0)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                if (options[i].short_name == c)
                        return &options[i];
        return NULL;
}

int submit_option_apply(SubmitOptions *o, const SubmitOption *opt, const char *arg, SubmitSource source,
                        char **ret_error) {
        int r;

        assert(o);
        assert(opt);

        if (!opt->set)
                return fail(ret_error, "option not supported");
        /* The unsupported ones share a field: one given on the command line must not
         * silence the others in directives. */
        if (source == SUBMIT_SOURCE_DIRECTIVE && opt->field != SUBMIT_FIELD_UNSUPPORTED &&
            o->set_by_command_line[opt->field])
                return 0;
        /* Among command line options a repeated list option adds; the first command line
         * use of a field drops what directives could not have set anyway (they come
         * later), so nothing to reset here. */
        o->source = source;
        r = opt->set(o, arg, ret_error);
        if (r < 0)
                return r;
        if (source == SUBMIT_SOURCE_COMMAND_LINE && opt->field != SUBMIT_FIELD_UNSUPPORTED)
                o->set_by_command_line[opt->field] = true;
        return 0;
}

static int fail_with_option(char **ret_error, const char *written, char *reason) {
        _cleanup_free_ char *r = reason;
        return fail(ret_error, "%s: %s", written, r ?: "invalid value");
}

/* Applies opt and puts the option as written in front of the warnings it left. */
static int apply_written(SubmitOptions *o, const SubmitOption *opt, const char *arg, SubmitSource source,
                         const char *written, char **ret_error) {
        size_t n = strv_length(o->warnings);
        char *reason = NULL;
        int r;

        r = submit_option_apply(o, opt, arg, source, &reason);
        if (r == -EINVAL)
                return fail_with_option(ret_error, written, reason);
        if (r < 0)
                return r;
        for (size_t i = n; o->warnings && o->warnings[i]; i++) {
                char *w;

                if (asprintf(&w, "%s: %s", written, o->warnings[i]) < 0)
                        return -ENOMEM;
                free(o->warnings[i]);
                o->warnings[i] = w;
        }
        return 0;
}

static const SubmitOption *find_short(char c, bool sbatch) {
        /* sbatch's -q is --qos; corral's is the queue. */
        if (sbatch && c == 'q')
                return submit_option_find_long("qos", 3);
        return submit_option_find_short(c);
}

/* The option at args[*i], a long one or a bundle of short ones, with its value; *i ends
 * after the last word it used. */
static int parse_one(SubmitOptions *o, char *const *args, size_t n, size_t *i, SubmitSource source, bool sbatch,
                     char **ret_error) {
        const char *a = args[*i];
        int r;

        if (a[1] == '-') {
                const char *name = a + 2, *eq = strchr(name, '=');
                size_t len = eq ? (size_t) (eq - name) : strlen(name);
                const SubmitOption *opt = submit_option_find_long(name, len);
                const char *arg = eq ? eq + 1 : NULL;
                _cleanup_free_ char *written = NULL;

                (*i)++;
                if (!opt)
                        return fail(ret_error, "--%.*s: unknown option", (int) len, name);
                if (opt->arg == SUBMIT_ARG_NONE && eq)
                        return fail(ret_error, "%s: option takes no value", a);
                if (opt->arg == SUBMIT_ARG_REQUIRED && !eq) {
                        if (*i >= n)
                                return fail(ret_error, "%s: option requires a value", a);
                        arg = args[(*i)++];
                        if (asprintf(&written, "%s %s", a, arg) < 0)
                                return -ENOMEM;
                }
                return apply_written(o, opt, arg, source, written ?: a, ret_error);
        }

        /* Short options, bundled as getopt allows: "-Hn4", "-n 4". */
        (*i)++;
        for (const char *p = a + 1; *p; p++) {
                const SubmitOption *opt = find_short(*p, sbatch);
                _cleanup_free_ char *written = NULL;
                const char *arg = NULL;
                char w[3] = { '-', *p, 0 };

                if (!opt)
                        return fail(ret_error, "-%c: unknown option", *p);
                if (opt->arg != SUBMIT_ARG_NONE) {
                        if (p[1]) {
                                arg = p + 1;
                                written = strdup(a);
                        } else {
                                if (*i >= n)
                                        return fail(ret_error, "-%c: option requires a value", *p);
                                arg = args[(*i)++];
                                if (asprintf(&written, "%s %s", a, arg) < 0)
                                        written = NULL;
                        }
                        if (!written)
                                return -ENOMEM;
                }
                r = apply_written(o, opt, arg, source, written ?: (opt->arg == SUBMIT_ARG_NONE ? w : a), ret_error);
                if (r < 0)
                        return r;
                if (arg)
                        break; /* the rest of the word was the value */
        }
        return 0;
}

int submit_options_parse_args(SubmitOptions *o, char *const *args, size_t n, SubmitSource source,
                              size_t *ret_first_positional, char **ret_error) {
        size_t i = 0;
        int r;

        assert(o);

        while (i < n) {
                const char *a = args[i];

                if (streq(a, "--") && source == SUBMIT_SOURCE_COMMAND_LINE) {
                        i++;
                        break;
                }
                if (a[0] != '-' || a[1] == '\0') {
                        if (source == SUBMIT_SOURCE_COMMAND_LINE)
                                break;
                        return fail(ret_error, "%s: unexpected argument", a);
                }
                r = parse_one(o, args, n, &i, source, o->slurm_dialect, ret_error);
                if (r < 0)
                        return r;
        }

        if (ret_first_positional)
                *ret_first_positional = i;
        return 0;
}

int directive_keep_error(int r, char *error, char ***errors, bool *failed) {
        if (r != -EINVAL)
                return r;
        *failed = true;
        r = strv_push(errors, error);
        if (r < 0)
                free(error);
        return r;
}

int submit_options_parse_directive(SubmitOptions *o, char *const *args, size_t n, bool sbatch,
                                   char ***ret_errors) {
        bool failed = false;
        size_t i = 0;
        int r;

        assert(o);
        assert(ret_errors);

        while (i < n) {
                const char *a = args[i];
                char *error = NULL;

                if (a[0] != '-' || a[1] == '\0') {
                        r = fail(&error, "%s: unexpected argument", a);
                        i++;
                } else {
                        r = parse_one(o, args, n, &i, SUBMIT_SOURCE_DIRECTIVE, sbatch, &error);
                        /* An unknown option's value is not a second problem. */
                        if (r == -EINVAL && error && strstr(error, ": unknown option") && !strchr(a, '=') &&
                            i < n && args[i][0] != '-')
                                i++;
                }
                r = directive_keep_error(r, error, ret_errors, &failed);
                if (r < 0)
                        return r;
        }
        return failed ? -EINVAL : 0;
}

int submit_options_parse_argv(int argc, char **argv, SubmitOptions *o, int *ret_first_command_arg,
                              char **ret_error_message) {
        size_t first;
        int r;

        if (argc < 1)
                return -EINVAL;
        r = submit_options_parse_args(o, argv + 1, (size_t) argc - 1, SUBMIT_SOURCE_COMMAND_LINE, &first,
                                      ret_error_message);
        if (r < 0)
                return r;
        if (ret_first_command_arg)
                *ret_first_command_arg = (int) first + 1;
        return 0;
}

/* Sets NAME=value in *l, replacing an earlier entry of the same name. */
static int env_set(char ***l, const char *assignment) {
        size_t n = strcspn(assignment, "=");

        for (char **e = *l; e && *e; e++)
                if (strneq(*e, assignment, n) && (*e)[n] == '=') {
                        char *d = strdup(assignment);
                        if (!d)
                                return -ENOMEM;
                        free(*e);
                        *e = d;
                        return 0;
                }
        return strv_extend(l, assignment);
}

static const char *env_lookup(char *const *l, const char *name) {
        size_t n = strlen(name);

        for (char *const *e = l; e && *e; e++)
                if (strneq(*e, name, n) && (*e)[n] == '=')
                        return *e;
        return NULL;
}

/* qsub runs a script with -S's shell, or the login shell: say so in a #! line, which
 * is what corrald runs a script with. */
static int script_set_shell(SubmitOptions *o, char *const *environ_list, char **ret_error) {
        const char *shell = o->shell, *body;
        char *s;

        if (!o->req.script)
                return 0;
        if (!shell && o->script_wants_shell && !strneq(o->req.script, "#!", 2)) {
                shell = env_lookup(environ_list, "SHELL");
                shell = shell ? shell + 6 : NULL;
                if (shell && (shell[0] != '/' || strpbrk(shell, " \t\n") || strlen(shell) > CORRAL_PATH_LENGTH_MAX))
                        shell = NULL;
        }
        if (!shell)
                return 0;
        /* -S wins over a #! line, as the shell qsub starts reads that line as a comment. */
        body = o->req.script;
        if (strneq(body, "#!", 2))
                body += strcspn(body, "\n") + (body[strcspn(body, "\n")] ? 1 : 0);
        if (asprintf(&s, "#!%s\n%s", shell, body) < 0)
                return -ENOMEM;
        if (strlen(s) > CORRAL_SCRIPT_SIZE_MAX) {
                free(s);
                return fail(ret_error, "the script with its #!%s line is larger than %" PRIu64 " bytes", shell,
                            CORRAL_SCRIPT_SIZE_MAX);
        }
        free(o->req.script);
        o->req.script = s;
        return 0;
}

int submit_options_finalize(SubmitOptions *o, const char *cwd, char *const *environ_list, char **ret_error) {
        _cleanup_strv_free_ char **env = NULL;
        const char *bad = NULL;
        int r;

        assert(o);

        if (o->ntasks > 0 || o->cpus_per_task > 0) {
                uint64_t cpus = (uint64_t) MAX(o->ntasks, 1U) * MAX(o->cpus_per_task, 1U);
                if (cpus > CORRAL_CPUS_MAX)
                        return fail(ret_error, "--ntasks x --cpus-per-task = %" PRIu64 " CPUs, more than %u", cpus,
                                    CORRAL_CPUS_MAX);
                o->req.cpus = (unsigned) cpus;
        }
        if (o->gpus_per_task > 0) {
                uint64_t gpus = (uint64_t) MAX(o->ntasks, 1U) * o->gpus_per_task;
                if (gpus > CORRAL_GPUS_MAX)
                        return fail(ret_error, "--ntasks x --gpus-per-task = %" PRIu64 " GPUs, more than %u", gpus,
                                    CORRAL_GPUS_MAX);
                o->req.gpus = (unsigned) gpus;
        }
        if (o->mem_per_cpu > 0) {
                uint64_t m;
                if (__builtin_mul_overflow(o->mem_per_cpu, (uint64_t) MAX(o->req.cpus, 1U), &m) ||
                    m > CORRAL_SIZE_MAX)
                        return fail(ret_error, "--mem-per-cpu x CPUs is too large");
                o->req.memory = m;
        }

        r = script_set_shell(o, environ_list, ret_error);
        if (r < 0)
                return r;

        if (o->join == SUBMIT_JOIN_OUTPUT) {
                free(o->req.stderr_path);
                o->req.stderr_path = NULL;
                if (o->req.stdout_path && !(o->req.stderr_path = strdup(o->req.stdout_path)))
                        return -ENOMEM;
        } else if (o->join == SUBMIT_JOIN_ERROR) {
                free(o->req.stdout_path);
                o->req.stdout_path = NULL;
                if (o->req.stderr_path && !(o->req.stdout_path = strdup(o->req.stderr_path)))
                        return -ENOMEM;
        }

        if (!o->req.workdir || o->req.workdir[0] != '/') {
                char *w;

                if (!cwd || cwd[0] != '/')
                        return fail(ret_error, "cannot resolve the working directory");
                if (!o->req.workdir)
                        w = strdup(cwd);
                else if (asprintf(&w, "%s/%s", cwd, o->req.workdir) < 0)
                        w = NULL;
                if (!w)
                        return -ENOMEM;
                free(o->req.workdir);
                o->req.workdir = w;
        }

        if (o->export_all != 0)
                for (char *const *e = environ_list; e && *e; e++)
                        if (env_assignment_is_valid(*e) && (r = env_set(&env, *e)) < 0)
                                return r;
        STRV_FOREACH(v, o->export_vars) {
                const char *a = strchr(*v, '=') ? *v : env_lookup(environ_list, *v);
                if (a && (r = env_set(&env, a)) < 0)
                        return r;
        }
        if (o->qos) {
                _cleanup_free_ char *a = NULL;
                if (asprintf(&a, "SLURM_JOB_QOS=%s", o->qos) < 0 || (r = env_set(&env, a)) < 0)
                        return -ENOMEM;
        }
        /* sbatch: Slurm's names for the shape of the request, which the job cannot tell
         * apart once -n and -c are multiplied into CPUs; the supervisor adds the rest
         * (and for corral submit, one task of all the CPUs). */
        if (o->slurm_dialect && (o->ntasks > 0 || o->cpus_per_task > 0)) {
                _cleanup_free_ char *a = NULL, *b = NULL;
                if (asprintf(&a, "SLURM_NTASKS=%u", MAX(o->ntasks, 1U)) < 0 || (r = env_set(&env, a)) < 0 ||
                    asprintf(&b, "SLURM_CPUS_PER_TASK=%u", MAX(o->cpus_per_task, 1U)) < 0 ||
                    (r = env_set(&env, b)) < 0)
                        return -ENOMEM;
        }
        if (o->slurm_dialect && cwd && cwd[0] == '/') {
                _cleanup_free_ char *a = NULL;
                if (asprintf(&a, "SLURM_SUBMIT_DIR=%s", cwd) < 0 || (r = env_set(&env, a)) < 0)
                        return -ENOMEM;
        }
        STRV_FOREACH(v, o->req.env)
                if ((r = env_set(&env, *v)) < 0)
                        return r;
        if (strv_length(env) > CORRAL_ENV_MAX)
                return fail(ret_error, "the environment has more than %u variables", CORRAL_ENV_MAX);
        strv_free(o->req.env);
        o->req.env = TAKE_PTR(env);

        r = submit_request_validate(&o->req, &bad);
        if (r < 0)
                return fail(ret_error, "invalid job request: %s", bad);
        return 0;
}

/* The PBS default file name in directory dir: DIR/%x.o%j or DIR/%x.e%j. */
static int default_in_dir(const char *dir, char kind, char **ret) {
        size_t l = strlen(dir);

        if (asprintf(ret, "%s%s%%x.%c%%j", dir, l > 0 && dir[l - 1] == '/' ? "" : "/", kind) < 0)
                return -ENOMEM;
        return 0;
}

static bool names_directory(const char *workdir, const char *path, int root_fd) {
        _cleanup_free_ char *abs = NULL;
        const char *p;
        struct stat st;

        /* A pattern is expanded by corrald, per job: nothing to look at here. */
        if (strchr(path, '%'))
                return false;
        if (path[0] == '/')
                p = path;
        else if (workdir && asprintf(&abs, "%s/%s", workdir, path) >= 0)
                p = abs;
        else
                return false;
        if (root_fd != AT_FDCWD)
                p += strspn(p, "/");
        if (isempty(p))
                p = ".";
        return fstatat(root_fd, p, &st, 0) >= 0 && S_ISDIR(st.st_mode);
}

int submit_options_resolve_output_dirs(SubmitOptions *o, int root_fd) {
        char **paths[2] = { &o->req.stdout_path, &o->req.stderr_path };
        bool dir[2] = {};
        int r;

        assert(o);

        for (size_t k = 0; k < 2; k++)
                dir[k] = (o->output_may_be_dir & (1U << k)) && *paths[k] &&
                         names_directory(o->req.workdir, *paths[k], root_fd);
        /* Joined, both name the one file of the side that was given. */
        if (o->join == SUBMIT_JOIN_OUTPUT)
                dir[1] = false;
        if (o->join == SUBMIT_JOIN_ERROR)
                dir[0] = false;
        for (size_t k = 0; k < 2; k++) {
                char *n;

                if (!dir[k])
                        continue;
                r = default_in_dir(*paths[k], k == 0 ? 'o' : 'e', &n);
                if (r < 0)
                        return r;
                free(*paths[k]);
                *paths[k] = n;
                if ((k == 0 && o->join == SUBMIT_JOIN_OUTPUT) || (k == 1 && o->join == SUBMIT_JOIN_ERROR)) {
                        char *c = strdup(n);
                        if (!c)
                                return -ENOMEM;
                        free(*paths[1 - k]);
                        *paths[1 - k] = c;
                }
        }
        return 0;
}

static bool names_are_here(const char *list, const char *also) {
        char host[256] = "";
        size_t short_len;

        if (isempty(list))
                return false;
        if (gethostname(host, sizeof host - 1) < 0)
                host[0] = 0;
        short_len = strcspn(host, ".");
        for (const char *p = list; *p;) {
                size_t n = strcspn(p, ",");
                bool here = (n == strlen(also) && strncasecmp(p, also, n) == 0) ||
                            (n > 0 && n == strlen(host) && strncmp(p, host, n) == 0) ||
                            (n > 0 && n == short_len && strncmp(p, host, n) == 0);
                if (!here)
                        return false;
                p += n;
                if (*p == ',')
                        p++;
        }
        return true;
}

bool cluster_list_is_here(const char *list) {
        return names_are_here(list, "all");
}

bool node_list_is_here(const char *list) {
        return names_are_here(list, "localhost");
}
