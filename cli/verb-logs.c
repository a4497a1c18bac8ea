/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral logs: a job's output, from its files or from the journal (through corrald,
 * which users cannot read themselves). The files are the job's user's to choose: they are
 * opened with no more rights than that user's and only as regular files (logs-file.c),
 * read no further than --max-bytes, and escaped on their way to a terminal, as are the
 * journal's lines. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "fd-util.h"
#include "log.h"
#include "logs-file.h"
#include "parse-util.h"
#include "strv.h"
#include "text-util.h"

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

/* Whose job it is, for opening its files: from the reply, else (an older corrald) from
 * Show and the user's primary group. */
static int logs_owner(Cli *cli, const Reply *reply, OutputContext *c, uid_t *ret_uid, gid_t *ret_gid) {
        json_object *u, *g;
        struct passwd *pw;
        int r;

        if (json_object_object_get_ex(reply->parameters, "uid", &u) && json_object_is_type(u, json_type_int) &&
            json_object_object_get_ex(reply->parameters, "gid", &g) && json_object_is_type(g, json_type_int)) {
                *ret_uid = (uid_t) json_object_get_uint64(u);
                *ret_gid = (gid_t) json_object_get_uint64(g);
                return 0;
        }
        r = output_context_fetch(cli, c);
        if (r < 0)
                return r;
        pw = getpwuid(c->info.uid);
        if (!pw)
                return log_error_errno(EINVAL, "job %" PRIu64 ": its user %u is unknown here", c->id,
                                       (unsigned) c->info.uid);
        *ret_uid = c->info.uid;
        *ret_gid = pw->pw_gid;
        return 0;
}

/* Opens a job's output file, refusing it with the reason. With wait, a file the job has
 * not created yet is waited for, as tail -F would. */
static int logs_open_file(const char *subject, const char *path, uid_t uid, gid_t gid, bool wait, int *ret_fd) {
        _cleanup_free_ char *shown = text_escape(path);
        bool said = false;
        int r;

        if (!shown)
                return log_oom();
        for (;;) {
                r = logs_open(path, uid, gid, ret_fd);
                if (r != -ENOENT || !wait)
                        break;
                if (!said)
                        log_info("%s: waiting for %s to appear", subject, shown);
                said = true;
                sleep(1);
        }
        switch (r) {
        case 0:
                return 0;
        case -EBADFD:
                return log_error_errno(r, "%s: %s is not a regular file: not read", subject, shown);
        case -ELOOP:
                return log_error_errno(r, "%s: %s is a symbolic link, not followed for another user's job",
                                       subject, shown);
        default:
                return log_error_errno(r, "%s: cannot read %s: %m%s", subject, shown,
                                       r == -ENOENT ? " (has the job started yet? corral show)" : "");
        }
}

static void logs_note_skipped(const char *subject, const char *path, uint64_t max_bytes, uint64_t skipped) {
        _cleanup_free_ char *shown = text_escape(path);

        if (skipped > 0)
                log_notice("%s: the last %" PRIu64 " bytes of %s, the %" PRIu64 " before them left out (--max-bytes)",
                           subject, max_bytes, shown ?: "its file", skipped);
}

/* A tail or journalctl whose output reaches out_fd, through a pipe and escaped when
 * escape is set. */
typedef struct LogsChild {
        pid_t pid;
        int pipe_fd;
        LogsPump *pump;
} LogsChild;

static int logs_spawn(char **argv, int in_fd, int out_fd, bool escape, LogsChild *ret) {
        int p[2] = { -EBADF, -EBADF };
        LogsPump *pump = NULL;
        pid_t pid;

        /* All that can fail before the child is started: a child the caller is not given
         * would be neither stopped nor reaped. */
        if (escape && pipe2(p, O_CLOEXEC) < 0)
                return log_error_errno(errno, "logs: cannot make a pipe: %m");
        if (escape && !(pump = logs_pump_new(p[0], out_fd, true, UINT64_MAX))) {
                safe_close(p[0]);
                safe_close(p[1]);
                return log_oom();
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                free(pump);
                safe_close(p[0]);
                safe_close(p[1]);
                return log_error_errno(errno, "logs: cannot fork: %m");
        }
        if (pid == 0) {
                if ((in_fd >= 0 && dup2(in_fd, STDIN_FILENO) < 0) || dup2(escape ? p[1] : out_fd, STDOUT_FILENO) < 0)
                        _exit(127);
                execvp(argv[0], argv);
                log_error_errno(errno, "logs: cannot run %s: %m", argv[0]);
                _exit(127);
        }
        safe_close(p[1]);
        *ret = (LogsChild) { .pid = pid, .pipe_fd = p[0], .pump = pump };
        return 0;
}

/* Relays what the children write until they are done, then reaps them: 0 when all
 * succeeded. */
static int logs_children_wait(LogsChild *c, size_t n) {
        int r = 0;

        for (;;) {
                struct pollfd pfd[2];
                size_t k = 0, idx[2];

                for (size_t i = 0; i < n && k < 2; i++)
                        if (c[i].pump) {
                                pfd[k] = (struct pollfd) { .fd = c[i].pipe_fd, .events = POLLIN };
                                idx[k++] = i;
                        }
                if (k == 0)
                        break;
                if (poll(pfd, k, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                for (size_t j = 0; j < k; j++) {
                        LogsChild *ch = &c[idx[j]];
                        int q;

                        if (!pfd[j].revents)
                                continue;
                        q = logs_pump_step(ch->pump);
                        if (q > 0)
                                continue;
                        if (q < 0)
                                r = q;
                        ch->pump = mfree(ch->pump);
                        ch->pipe_fd = safe_close(ch->pipe_fd);
                }
        }
        for (size_t i = 0; i < n; i++) {
                int status;

                free(c[i].pump);
                safe_close(c[i].pipe_fd);
                if (c[i].pid <= 0)
                        continue;
                while (waitpid(c[i].pid, &status, 0) < 0)
                        if (errno != EINTR) {
                                status = 1;
                                break;
                        }
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        r = r < 0 ? r : -EIO;
        }
        return r;
}

/* A journal line, escaped for a terminal. */
static int logs_print_line(const char *s, bool escape) {
        _cleanup_free_ char *buf = NULL;
        size_t n = strlen(s), len;

        if (!escape)
                return printf("%s\n", s) < 0 ? -EIO : 0;
        buf = malloc(TEXT_ESCAPE_MAX(n) + 1);
        if (!buf)
                return -ENOMEM;
        len = text_escape_stream(s, n, TEXT_ALLOW_TAB | TEXT_ALLOW_NEWLINE, false, buf, NULL);
        buf[len++] = '\n';
        return fwrite(buf, 1, len, stdout) == len ? 0 : -EIO;
}

static void logs_help(void) {
        printf("Usage: corral logs [OPTIONS] JOBID\n\n"
               "Print a job's output. Output that went to files (--output/--error) is read\n"
               "with your own permissions (root's as the job's user): stdout to stdout, stderr\n"
               "to stderr, only regular files. Output that went to the journal is shown with\n"
               "journalctl. Control characters are escaped on a terminal.\n\n"
               "Options:\n"
               "  -f, --follow        keep printing new output (until interrupted)\n"
               "  -n, --lines N       only the last N lines\n"
               "      --max-bytes SIZE  at most the last SIZE of each file (default 16M; 0: all)\n"
               "      --raw           the bytes as written, even to a terminal\n"
               "      --json          print where the output is, as JSON\n"
               "  -h, --help          show this help\n");
}

int verb_logs(Cli *cli, int argc, char **argv) {
        enum { ARG_MAX_BYTES = 0x100, ARG_RAW };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                { "follow", no_argument, NULL, 'f' },
                { "lines", required_argument, NULL, 'n' },
                { "max-bytes", required_argument, NULL, ARG_MAX_BYTES },
                { "raw", no_argument, NULL, ARG_RAW },
                {},
        };
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ uint64_t *ids = NULL;
        _cleanup_(output_context_done) OutputContext ctx = { .info = JOB_INFO_INIT };
        _cleanup_free_ char *out = NULL, *err = NULL, *match = NULL;
        _cleanup_strv_free_ char **args = NULL;
        const char *lines = NULL, *p;
        bool follow = false, raw = false, escape_out, escape_err;
        uint64_t max_bytes = LOGS_MAX_BYTES_DEFAULT;
        LogsChild children[2] = { { .pipe_fd = -EBADF }, { .pipe_fd = -EBADF } };
        size_t n = 0, failed = 0, n_children = 0;
        char subject[64];
        uid_t uid = 0;
        gid_t gid = 0;
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
                case ARG_MAX_BYTES:
                        if (parse_size(optarg, 1, &max_bytes) < 0) {
                                log_error("logs: --max-bytes takes a size (bytes, or with K, M, G), not '%s'", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        break;
                case ARG_RAW:
                        raw = true;
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
        if ((out || err) && (r = logs_owner(cli, &reply, &ctx, &uid, &gid)) < 0)
                return logs_exit_status(r);

        cli_done(cli);
        fflush(stdout);
        /* What the job wrote goes to a terminal as text, never as commands to it. */
        escape_out = !raw && isatty(STDOUT_FILENO);
        escape_err = !raw && isatty(STDERR_FILENO);

        /* Journal output comes back in the reply: corrald reads the system journal, which
         * users cannot, once it has checked the job is theirs. Following it live needs
         * journalctl and read access to the journal (root, adm, systemd-journal). */
        json_object *jl;
        if (!follow && json_object_object_get_ex(reply.parameters, "lines", &jl) &&
            json_object_is_type(jl, json_type_array)) {
                size_t n_lines = json_object_array_length(jl);
                for (size_t i = 0; i < n_lines; i++) {
                        json_object *e = json_object_array_get_idx(jl, i);
                        if (json_object_is_type(e, json_type_string) &&
                            logs_print_line(json_object_get_string(e), escape_out) == -ENOMEM)
                                return cli_oom();
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
                if (!escape_out) {
                        execvp(args[0], args);
                        log_error_errno(errno, "logs: cannot run journalctl: %m");
                        return CLI_EXIT_FAILURE;
                }
                if (logs_spawn(args, -EBADF, STDOUT_FILENO, true, &children[0]) < 0)
                        return CLI_EXIT_FAILURE;
                return logs_children_wait(children, 1) < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
        }

        if (follow || lines) {
                /* tail reads each file from the descriptor opened here (its standard input,
                 * from the last --max-bytes on), one tail for each, into our standard output
                 * and error; tail -f follows the file it has, as the job writes it. */
                _cleanup_close_ int out_fd = -EBADF, err_fd = -EBADF;
                uint64_t skipped;

                if ((out && logs_open_file(subject, out, uid, gid, follow, &out_fd) < 0) ||
                    (err && logs_open_file(subject, err, uid, gid, follow, &err_fd) < 0))
                        return CLI_EXIT_FAILURE;
                if (strv_extend(&args, "tail") < 0 || strv_extend(&args, "-n") < 0 ||
                    strv_extend(&args, lines ?: "+1") < 0 || (follow && strv_extend(&args, "-f") < 0))
                        return cli_oom();
                for (int k = 0; k < 2; k++) {
                        int fd = k == 0 ? out_fd : err_fd;

                        if (fd < 0)
                                continue;
                        r = logs_seek_tail(fd, max_bytes, &skipped);
                        if (r < 0) {
                                log_error_errno(r, "%s: cannot read its output file: %m", subject);
                                break;
                        }
                        if (!lines)
                                logs_note_skipped(subject, k == 0 ? out : err, max_bytes, skipped);
                        r = logs_spawn(args, fd, k == 0 ? STDOUT_FILENO : STDERR_FILENO,
                                       k == 0 ? escape_out : escape_err, &children[n_children]);
                        if (r < 0)
                                break;
                        n_children++;
                }
                out_fd = safe_close(out_fd);
                err_fd = safe_close(err_fd);
                if (r < 0) /* not one file followed and the other not */
                        for (size_t i = 0; i < n_children; i++)
                                (void) kill(children[i].pid, SIGTERM);
                return logs_children_wait(children, n_children) < 0 || r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
        }

        r = 0;
        for (int k = 0; k < 2; k++) {
                const char *path = k == 0 ? out : err;
                _cleanup_close_ int fd = -EBADF;
                uint64_t skipped = 0;
                int q;

                if (!path)
                        continue;
                q = logs_open_file(subject, path, uid, gid, false, &fd);
                if (q >= 0) {
                        q = logs_copy(fd, k == 0 ? STDOUT_FILENO : STDERR_FILENO, max_bytes,
                                      k == 0 ? escape_out : escape_err, &skipped);
                        if (q < 0) {
                                _cleanup_free_ char *shown = text_escape(path);
                                log_error_errno(q, "%s: cannot read %s: %m", subject, shown ?: "its file");
                        } else
                                logs_note_skipped(subject, path, max_bytes, skipped);
                }
                r = r < 0 ? r : q;
        }
        return r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
}
