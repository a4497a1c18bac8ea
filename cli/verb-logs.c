/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral logs: a job's output, from its files (read with the user's own rights) or
 * from the journal (through corrald, which users cannot read themselves). */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "fd-util.h"
#include "log.h"
#include "parse-util.h"
#include "strv.h"

static int copy_file(const char *path, int out_fd) {
        _cleanup_close_ int fd = -EBADF;
        char buf[64 * 1024];

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                int r;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return 0;
                r = loop_write(out_fd, buf, (size_t) n);
                if (r < 0)
                        return r;
        }
}

/* Where a job's output file is, as the job opened it: Logs hands back the path as
 * submitted, so Slurm's patterns are expanded here the way corrald expands them for the
 * executor, and a relative path is taken against the job's working directory. The
 * job's details come from Show, fetched once and only when needed. */
typedef struct OutputContext {
        uint64_t id;
        char *workdir;          /* from the Logs reply, else from Show */
        JobInfo info;
        bool have_info;
} OutputContext;

static void output_context_done(OutputContext *c) {
        free(c->workdir);
        job_info_done(&c->info);
}

static int output_context_fetch(Cli *cli, OutputContext *c) {
        _cleanup_(reply_done) Reply reply = {};
        char subject[64];
        json_object *job;
        int r;

        if (c->have_info)
                return 0;
        snprintf(subject, sizeof(subject), "job %" PRIu64, c->id);
        r = cli_call(cli, CORRAL_METHOD_SHOW, json_job_id(c->id), &reply);
        if (r < 0)
                return r;
        if (reply.error) {
                (void) cli_report_error(cli, subject, &reply);
                return -EBADE;
        }
        if (!json_object_object_get_ex(reply.parameters, "job", &job) || job_info_from_json(job, &c->info, NULL) < 0)
                return log_error_errno(EBADMSG, "%s: corrald sent a reply this corral cannot read", subject);
        c->have_info = true;
        if (!c->workdir && c->info.workdir && !(c->workdir = strdup(c->info.workdir)))
                return log_oom();
        return 0;
}

static int output_path(Cli *cli, OutputContext *c, const char *path, char **ret) {
        _cleanup_free_ char *expanded = NULL;
        int r;

        if (strchr(path, '%')) {
                r = output_context_fetch(cli, c);
                if (r < 0)
                        return r;
                expanded = output_path_expand(path, &c->info);
        } else
                expanded = strdup(path);
        if (!expanded)
                return log_oom();
        if (expanded[0] == '/') {
                *ret = TAKE_PTR(expanded);
                return 0;
        }
        if (!c->workdir) {
                r = output_context_fetch(cli, c);
                if (r < 0)
                        return r;
                if (!c->workdir)
                        return log_error_errno(EINVAL, "job %" PRIu64 ": output path '%s' is relative and the "
                                               "job's working directory is unknown", c->id, expanded);
        }
        if (asprintf(ret, "%s/%s", c->workdir, expanded) < 0)
                return log_oom();
        return 0;
}

/* Only transport failures mean the daemon is unreachable; the rest were answers. */
static int logs_exit_status(int r) {
        return r == -EBADE || r == -EINVAL || r == -EBADMSG ? CLI_EXIT_FAILURE : cli_exit_status_from_errno(r);
}

static const char *reply_string(const Reply *reply, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(reply->parameters, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static void logs_help(void) {
        printf("Usage: corral logs [OPTIONS] JOBID\n\n"
               "Print a job's output. Output that went to files (--output/--error) is read\n"
               "with your own permissions: stdout to stdout, stderr to stderr. Output that went\n"
               "to the journal is shown with journalctl.\n\n"
               "Options:\n"
               "  -f, --follow     keep printing new output (until interrupted)\n"
               "  -n, --lines N    only the last N lines\n"
               "      --json       print where the output is, as JSON\n"
               "  -h, --help       show this help\n");
}

int verb_logs(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                { "follow", no_argument, NULL, 'f' },
                { "lines", required_argument, NULL, 'n' },
                {},
        };
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ uint64_t *ids = NULL;
        _cleanup_(output_context_done) OutputContext ctx = { .info = JOB_INFO_INIT };
        _cleanup_free_ char *out = NULL, *err = NULL, *match = NULL;
        _cleanup_strv_free_ char **args = NULL;
        const char *lines = NULL, *p;
        bool follow = false;
        size_t n = 0, failed = 0;
        char subject[64];
        unsigned u;
        int c, r;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "hfn:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        logs_help();
                        return CLI_EXIT_SUCCESS;
                case 'j':
                        cli->json = true;
                        break;
                case 'f':
                        follow = true;
                        break;
                case 'n':
                        if (safe_atou(optarg, &u) < 0) {
                                log_error("logs: --lines takes a number, not '%s'", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        lines = optarg;
                        break;
                default:
                        log_error("logs: see corral logs --help");
                        return CLI_EXIT_USAGE;
                }
        if (argc - optind != 1) {
                log_error("logs: expected exactly one job (corral logs JOBID)");
                return CLI_EXIT_USAGE;
        }
        r = cli_resolve_jobs(cli, argv + optind, 1, &ids, &n, &failed);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (r > 0)
                return r;
        if (n == 0)
                return CLI_EXIT_FAILURE;
        snprintf(subject, sizeof(subject), "job %" PRIu64, ids[0]);

        {
                json_object *params = json_job_id(ids[0]);
                uint64_t nl;
                if (params && lines && safe_atou64(lines, &nl) >= 0 && nl > 0)
                        (void) json_add_u64(params, "lines", nl);
                r = cli_call(cli, CORRAL_METHOD_LOGS, params, &reply);
        }
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (reply.error)
                return cli_report_error(cli, subject, &reply);
        if (cli->json)
                return cli_print_json_status(reply.parameters);

        ctx.id = ids[0];
        if ((p = reply_string(&reply, "workdir")) && *p && !(ctx.workdir = strdup(p)))
                return cli_oom();
        if ((p = reply_string(&reply, "stdout_path")) && *p && (r = output_path(cli, &ctx, p, &out)) < 0)
                return logs_exit_status(r);
        if ((p = reply_string(&reply, "stderr_path")) && *p && (r = output_path(cli, &ctx, p, &err)) < 0)
                return logs_exit_status(r);
        if (err && out && streq(err, out))
                err = mfree(err);

        cli_done(cli);
        fflush(stdout);

        /* Journal output comes back in the reply: corrald reads the system journal, which
         * users cannot, once it has checked the job is theirs. Following it live needs
         * journalctl and read access to the journal (root, adm, systemd-journal). */
        json_object *jl;
        if (!follow && json_object_object_get_ex(reply.parameters, "lines", &jl) &&
            json_object_is_type(jl, json_type_array)) {
                size_t n_lines = json_object_array_length(jl);
                for (size_t i = 0; i < n_lines; i++) {
                        json_object *e = json_object_array_get_idx(jl, i);
                        if (json_object_is_type(e, json_type_string))
                                printf("%s\n", json_object_get_string(e));
                }
                fflush(stdout);
                if (!out && !err)
                        return CLI_EXIT_SUCCESS;
        }

        if (!out && !err) {
                /* The journal: its access rules, not ours, decide what the user sees. */
                if (strv_extend(&args, "journalctl") < 0 || strv_extend(&args, "-q") < 0 ||
                    strv_extend(&args, "--no-pager") < 0 || strv_extend(&args, "-o") < 0 ||
                    strv_extend(&args, "cat") < 0 || (follow && strv_extend(&args, "-f") < 0) ||
                    (lines && (strv_extend(&args, "-n") < 0 || strv_extend(&args, lines) < 0)))
                        return cli_oom();
                /* The relayed lines carry the job's id: that also finds them after the
                 * scope is gone and across requeues. The field alone is the writer's word
                 * (any job can log CORRAL_JOB_ID=7); journald's own _SYSTEMD_UNIT= says the
                 * line really came from inside job 7's scope. */
                if (asprintf(&match, "CORRAL_JOB_ID=%" PRIu64, ids[0]) < 0)
                        return cli_oom();
                if (strv_push(&args, match) < 0)
                        return cli_oom();
                TAKE_PTR(match);
                if (asprintf(&match, "_SYSTEMD_UNIT=corral-job-%" PRIu64 ".scope", ids[0]) < 0)
                        return cli_oom();
                if (strv_push(&args, match) < 0)
                        return cli_oom();
                TAKE_PTR(match);
                /* Ids start again at 1 when corrald's database is purged, and the journal
                 * keeps the earlier job's lines under the same id and unit: only what was
                 * written since this job was submitted is its. */
                if (json_object_object_get_ex(reply.parameters, "since", &jl) &&
                    json_object_is_type(jl, json_type_int)) {
                        if (asprintf(&match, "--since=@%" PRIu64, (uint64_t) json_object_get_uint64(jl)) < 0)
                                return cli_oom();
                        if (strv_push(&args, match) < 0)
                                return cli_oom();
                        TAKE_PTR(match);
                }
                execvp(args[0], args);
                log_error_errno(errno, "logs: cannot run journalctl: %m");
                return CLI_EXIT_FAILURE;
        }

        if (follow || lines) {
                /* tail -F also waits for files a pending job has not created yet. */
                if (strv_extend(&args, "tail") < 0 || strv_extend(&args, "-n") < 0 ||
                    strv_extend(&args, lines ?: "+1") < 0 || (follow && strv_extend(&args, "-F") < 0) ||
                    (out && strv_extend(&args, out) < 0) || (err && strv_extend(&args, err) < 0))
                        return cli_oom();
                execvp(args[0], args);
                log_error_errno(errno, "logs: cannot run tail: %m");
                return CLI_EXIT_FAILURE;
        }

        r = 0;
        if (out) {
                r = copy_file(out, STDOUT_FILENO);
                if (r < 0)
                        log_error_errno(r, "%s: cannot read %s: %m%s", subject, out,
                                        r == -ENOENT ? " (has the job started yet? corral show)" : "");
        }
        if (err) {
                int k = copy_file(err, STDERR_FILENO);
                if (k < 0)
                        log_error_errno(k, "%s: cannot read %s: %m%s", subject, err,
                                        k == -ENOENT ? " (has the job started yet? corral show)" : "");
                r = r < 0 ? r : k;
        }
        return r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
}
