/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A SubmitRequest as sbatch's arguments, field by field, or the reason it cannot go
 * (corrald(8), FORWARDING TO SLURM). Every field the request has is either mapped here or
 * refused here: nothing is dropped on the way to the cluster. */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse-util.h"
#include "protocol.h"
#include "slurm.h"
#include "strv.h"

static bool startswith(const char *s, const char *prefix) {
        return strneq(s, prefix, strlen(prefix));
}

void slurm_submit_done(SlurmSubmit *s) {
        s->argv = strv_free(s->argv);
        s->env = strv_free(s->env);
        s->stdin_data = mfree(s->stdin_data);
}

static bool host_is_valid(const char *h) {
        if (isempty(h) || strlen(h) > 64)
                return false;
        for (const char *p = h; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_", *p))
                        return false;
        return true;
}

int slurm_key_format(const char *host, uint64_t id, char *buf, size_t size) {
        int n;

        if (!host_is_valid(host))
                return -EINVAL;
        n = snprintf(buf, size, SLURM_KEY_PREFIX "%s:%" PRIu64, host, id);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : 0;
}

bool slurm_key_parse(const char *comment, const char *host, uint64_t *ret_id) {
        size_t n = host ? strlen(host) : 0;
        const char *p;
        uint64_t id;

        if (!comment || !host || !startswith(comment, SLURM_KEY_PREFIX))
                return false;
        p = comment + strlen(SLURM_KEY_PREFIX);
        if (!strneq(p, host, n) || p[n] != ':')
                return false;
        if (safe_atou64(p + n + 1, &id) < 0 || id == 0)
                return false;
        if (ret_id)
                *ret_id = id;
        return true;
}

static int refuse(char **ret_reason, int r, const char *fmt, ...) _printf_(3, 4);
static int refuse(char **ret_reason, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_reason, fmt, ap) < 0)
                *ret_reason = NULL;
        va_end(ap);
        return *ret_reason ? r : -ENOMEM;
}

/* sh's single quotes: --wrap's text is run by /bin/sh. */
static int shell_join(char *const *argv, char **ret) {
        size_t n = 1;
        char *s, *p;

        STRV_FOREACH(a, argv) {
                n += 3;
                for (const char *c = *a; *c; c++)
                        n += *c == '\'' ? 4 : 1;
        }
        s = p = malloc(n);
        if (!s)
                return -ENOMEM;
        STRV_FOREACH(a, argv) {
                if (a != argv)
                        *p++ = ' ';
                *p++ = '\'';
                for (const char *c = *a; *c; c++)
                        if (*c == '\'')
                                p = stpcpy(p, "'\\''");
                        else
                                *p++ = *c;
                *p++ = '\'';
        }
        *p = 0;
        *ret = s;
        return 0;
}

/* An output path as Corral would expand it at start: %j, %x, %u and %A become Corral's
 * values here, %a stays (Slurm's task index is Corral's), and every other pattern is
 * escaped so that Slurm (which knows %N, %n, %s, %t, %b, %J) writes it as Corral would,
 * literally. */
static int map_path(const char *what, const char *path, const SubmitRequest *req, const SlurmSubmitParams *p,
                    char **ret, char **ret_reason) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0, size;
        bool task_pattern = false;

        if (!path) {
                *ret = NULL;
                return 0;
        }
        size = strlen(path) * 2 + 1;
        for (const char *c = path; *c; c++)
                if (*c == '%')
                        size += CORRAL_NAME_LENGTH_MAX + 24;
        out = malloc(size);
        if (!out)
                return -ENOMEM;
        for (const char *c = path; *c; c++) {
                char num[32];
                const char *s = num;
                size_t l;

                if (*c != '%') {
                        out[n++] = *c;
                        continue;
                }
                switch (c[1]) {
                case 'j':
                        if (req->array.set)
                                return refuse(ret_reason, -EOPNOTSUPP,
                                              "%s path %s: %%j in an array task's path would be Slurm's task id, "
                                              "not Corral's: use %%A_%%a", what, path);
                        l = (size_t) snprintf(num, sizeof num, "%" PRIu64, p->job_id);
                        break;
                case 'A':
                        l = (size_t) snprintf(num, sizeof num, "%" PRIu64, p->array_job_id ?: p->job_id);
                        break;
                case 'x': s = strempty(req->name), l = strlen(s); break;
                case 'u': s = strempty(p->user), l = strlen(s); break;
                case 'a': s = "%a", l = 2, task_pattern = true; break;
                case '%': s = "%%", l = 2; break;
                case 0: s = "%%", l = 2; break;
                default: s = "%%", l = 2; c--; break; /* the letter follows as text */
                }
                memcpy(out + n, s, l);
                n += l;
                c++;
                if (!*c)
                        break;
        }
        out[n] = 0;
        /* Slurm expands no pattern in a path with a backslash. */
        if (task_pattern && strchr(out, '\\'))
                return refuse(ret_reason, -EOPNOTSUPP,
                              "%s path %s: Slurm expands no %%a in a path with a backslash", what, path);
        *ret = TAKE_PTR(out);
        return 0;
}

static const struct {
        unsigned bit;
        const char *name;
} mail_names[] = {
        { MAIL_BEGIN, "BEGIN" },
        { MAIL_END, "END" },
        { MAIL_FAIL, "FAIL" },
        { MAIL_REQUEUE, "REQUEUE" },
        { MAIL_TIME_LIMIT, "TIME_LIMIT" },
        { MAIL_TIME_LIMIT_90, "TIME_LIMIT_90" },
        { MAIL_TIME_LIMIT_80, "TIME_LIMIT_80" },
        { MAIL_TIME_LIMIT_50, "TIME_LIMIT_50" },
        { MAIL_ARRAY_TASKS, "ARRAY_TASKS" },
};

static int add_mail_type(char ***argv, unsigned events) {
        char buf[160] = "--mail-type=";
        bool first = true;

        if ((events & MAIL_ALL) == MAIL_ALL) {
                strcat(buf, "ALL");
                events &= ~MAIL_ALL;
                first = false;
        }
        for (size_t i = 0; i < ELEMENTSOF(mail_names); i++)
                if (events & mail_names[i].bit) {
                        if (!first)
                                strcat(buf, ",");
                        strcat(buf, mail_names[i].name);
                        first = false;
                }
        return strv_extend(argv, buf);
}

/* The variables that steer sbatch or srun on this side rather than describe the job
 * (SLURM_CONF would even name another cluster); Slurm sets the job's own SLURM_*. */
static bool env_is_local_slurm(const char *e) {
        return startswith(e, "SLURM_") || startswith(e, "SBATCH_");
}

int slurm_submit_build(const SubmitRequest *req, const SlurmSubmitParams *p, SlurmSubmit *ret, char **ret_reason) {
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        _cleanup_free_ char *deps = NULL, *in = NULL, *out = NULL, *err = NULL, *wrap = NULL, *script = NULL;
        char key[SLURM_KEY_LENGTH_MAX];
        int r;

        assert(req);
        assert(p);
        assert(ret);
        assert(ret_reason);

        *ret_reason = NULL;
        /* What Slurm has no word for. */
        if (req->io_read_bw.n || req->io_write_bw.n || req->io_read_iops.n || req->io_write_iops.n || req->io_weight)
                return refuse(ret_reason, -EOPNOTSUPP,
                              "Slurm has no per-job I/O bandwidth, IOPS or weight limit: submit without them");
        if (req->tasks_max)
                return refuse(ret_reason, -EOPNOTSUPP, "Slurm has no per-job TasksMax: submit without it");
        if (req->interactive)
                return refuse(ret_reason, -EOPNOTSUPP,
                              "an interactive job runs on its client's terminal here: Slurm cannot run it");
        if (req->nice < 0)
                return refuse(ret_reason, -EOPNOTSUPP,
                              "only Slurm's operators may give a negative nice (%d)", req->nice);
        if (slurm_key_format(p->host, p->job_id, key, sizeof key) < 0)
                return refuse(ret_reason, -EOPNOTSUPP, "this machine's name cannot be part of a Slurm comment");

        r = map_path("input", req->stdin_path, req, p, &in, ret_reason);
        if (r >= 0)
                r = map_path("output", req->stdout_path, req, p, &out, ret_reason);
        if (r >= 0)
                r = map_path("error", req->stderr_path, req, p, &err, ret_reason);
        if (r < 0)
                return r;

        for (size_t i = 0; i < req->n_dependencies; i++) {
                const JobDependency *d = &req->dependencies[i];
                uint64_t sid = 0;
                char *n;

                r = p->dependency ? p->dependency(d->job_id, p->userdata, &sid) : -ENOENT;
                if (r == -EAGAIN)
                        return refuse(ret_reason, -EAGAIN, "job %" PRIu64 ", which it depends on, is not on the "
                                      "cluster yet", d->job_id);
                if (r < 0)
                        return refuse(ret_reason, -EOPNOTSUPP, "job %" PRIu64 ", which it depends on, does not "
                                      "run on the cluster: Slurm cannot wait for it", d->job_id);
                if (asprintf(&n, "%s%s%s:%" PRIu64, strempty(deps), deps ? "," : "",
                             dependency_type_to_string(d->type), sid) < 0)
                        return -ENOMEM;
                free(deps);
                deps = n;
        }

        if (strv_extend(&argv, "sbatch") < 0 || strv_extend(&argv, "--parsable") < 0 ||
            strv_extendf(&argv, "--comment=%s", key) < 0 || strv_extend(&argv, "--export=ALL") < 0 ||
            strv_extend(&argv, "--nodes=1") < 0 || strv_extend(&argv, "--ntasks=1") < 0 ||
            strv_extendf(&argv, "--cpus-per-task=%u", req->cpus ?: 1) < 0)
                return -ENOMEM;
        if ((req->name && strv_extendf(&argv, "--job-name=%s", req->name) < 0) ||
            (p->partition && strv_extendf(&argv, "--partition=%s", p->partition) < 0) ||
            (p->account && strv_extendf(&argv, "--account=%s", p->account) < 0) ||
            (req->workdir && strv_extendf(&argv, "--chdir=%s", req->workdir) < 0) ||
            (in && strv_extendf(&argv, "--input=%s", in) < 0) || (out && strv_extendf(&argv, "--output=%s", out) < 0) ||
            (err && strv_extendf(&argv, "--error=%s", err) < 0))
                return -ENOMEM;
        /* Slurm's unit is the MiB: round up, so the job never gets less than it asked. */
        if (req->memory && strv_extendf(&argv, "--mem=%" PRIu64 "M", DIV_ROUND_UP(req->memory, UINT64_C(1) << 20)) < 0)
                return -ENOMEM;
        /* Slurm's limit is in whole minutes: a partial one is rounded up. */
        if (req->walltime_sec == CORRAL_WALLTIME_INFINITY) {
                if (strv_extend(&argv, "--time=UNLIMITED") < 0)
                        return -ENOMEM;
        } else if (req->walltime_sec) {
                uint64_t m = DIV_ROUND_UP(req->walltime_sec, 60);
                if (strv_extendf(&argv, "--time=%" PRIu64 "-%02" PRIu64 ":%02" PRIu64 ":00", m / 1440, m / 60 % 24,
                        m % 60) < 0)
                        return -ENOMEM;
        }
        if (req->gpus && strv_extendf(&argv, "--gpus=%s%s%u", strempty(req->gpu_type), req->gpu_type ? ":" : "",
                             req->gpus) < 0)
                return -ENOMEM;
        if (req->shards && strv_extendf(&argv, "--gres=shard:%s%s%u", strempty(req->gpu_type), req->gpu_type ? ":" : "",
                               req->shards) < 0)
                return -ENOMEM;
        if ((req->constraint && strv_extendf(&argv, "--constraint=%s", req->constraint) < 0) ||
            (req->gpu_binding && strv_extend(&argv, "--gres-flags=enforce-binding") < 0) ||
            (req->exclusive && strv_extend(&argv, "--exclusive") < 0) ||
            (req->rerunnable == 1 && strv_extend(&argv, "--requeue") < 0) ||
            (req->rerunnable == 0 && strv_extend(&argv, "--no-requeue") < 0) ||
            (req->hold && strv_extend(&argv, "--hold") < 0) ||
            (req->nice > 0 && strv_extendf(&argv, "--nice=%d", req->nice) < 0) ||
            (deps && strv_extendf(&argv, "--dependency=%s", deps) < 0))
                return -ENOMEM;
        if (req->array.set) {
                char a[CORRAL_ARRAY_SPEC_LENGTH_MAX + 1];
                if (strv_extendf(&argv, "--array=%s", array_spec_format(&req->array, a, sizeof a)) < 0)
                        return -ENOMEM;
        }
        if (req->begin_time) {
                /* sbatch reads --begin in the local time of the submit host, this one. */
                time_t t = (time_t) req->begin_time;
                struct tm tm;
                char b[32];

                if (!localtime_r(&t, &tm) || strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                        return refuse(ret_reason, -EOPNOTSUPP, "begin time %" PRIu64 " cannot be written as a "
                                      "date", req->begin_time);
                if (strv_extendf(&argv, "--begin=%s", b) < 0)
                        return -ENOMEM;
        }
        if (req->warn_signal && strv_extendf(&argv, "--signal=%s%u@%u", req->warn_batch_only ? "B:" : "", req->warn_signal,
                                    req->warn_sec) < 0)
                return -ENOMEM;
        if (req->mail_events && add_mail_type(&argv, req->mail_events) < 0)
                return -ENOMEM;
        if (req->mail_user && strv_extendf(&argv, "--mail-user=%s", req->mail_user) < 0)
                return -ENOMEM;
        if (req->script) {
                script = strdup(req->script);
                if (!script)
                        return -ENOMEM;
        } else {
                if (strv_length(req->argv) == 0)
                        return refuse(ret_reason, -EOPNOTSUPP, "the job has neither a script nor a command");
                if (shell_join(req->argv, &wrap) < 0 || strv_extendf(&argv, "--wrap=%s", wrap) < 0)
                        return -ENOMEM;
        }

        STRV_FOREACH(e, req->env)
                if (!env_is_local_slurm(*e) && strv_extend(&env, *e) < 0)
                        return -ENOMEM;
        if (!env && !(env = new0(char *, 1)))
                return -ENOMEM;

        *ret = (SlurmSubmit) {
                .argv = TAKE_PTR(argv),
                .env = TAKE_PTR(env),
                .stdin_data = TAKE_PTR(script),
                .umask = req->umask,
        };
        return 0;
}
