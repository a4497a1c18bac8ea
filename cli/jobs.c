/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Verbs that act on jobs by id (cancel, hold, release, suspend, resume, requeue, wait,
 * logs), the daemon-wide ones (info, reload), and what they share with queue and show:
 * parsing job lists and resolving job arguments. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "errno-util.h"
#include "fd-util.h"
#include "log.h"
#include "parse-util.h"
#include "strv.h"

void cli_reset_getopt(void) {
        /* 0, not 1: glibc then also forgets the position inside bundled short options. */
        optind = 0;
        opterr = 1;
}

json_object *json_job_id(uint64_t id) {
        _cleanup_json_ json_object *p = json_object_new_object();

        if (!p || json_add_u64(p, CORRAL_FIELD_JOB_ID, id) < 0)
                return NULL;
        return TAKE_PTR(p);
}

void job_entry_done(JobEntry *e) {
        if (e)
                job_info_done(&e->info);
}

void job_list_done(JobList *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++)
                job_info_done(&l->items[i].info);
        l->items = mfree(l->items);
        l->n = l->allocated = 0;
}

int job_entry_from_json(json_object *o, JobEntry *ret) {
        json_object *v;
        int r;

        assert(ret);

        *ret = (JobEntry) { .info = JOB_INFO_INIT };
        r = job_info_from_json(o, &ret->info, NULL);
        if (r < 0)
                return r;
        /* The scheduler's view, outside JobInfo's codec; a wrong type is ignored rather
         * than failing the whole listing over a cosmetic column. */
        if (json_object_object_get_ex(o, "est_start", &v) && json_object_is_type(v, json_type_int)) {
                int64_t t = json_object_get_int64(v);
                if (t > 0 && (uint64_t) t <= CORRAL_TIME_MAX) {
                        ret->has_est_start = true;
                        ret->est_start = (uint64_t) t;
                }
        }
        if (json_object_object_get_ex(o, "priority", &v) &&
            (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
                ret->has_priority = true;
                ret->priority = json_object_get_double(v);
        }
        return 0;
}

int job_list_from_reply(json_object *parameters, JobList *ret) {
        _cleanup_(job_list_done) JobList l = {};
        json_object *jobs;
        size_t n;
        int r;

        assert(ret);

        if (!json_object_object_get_ex(parameters, "jobs", &jobs) || !json_object_is_type(jobs, json_type_array))
                return -EBADMSG;
        n = json_object_array_length(jobs);
        l.items = new0(JobEntry, n);
        if (!l.items)
                return -ENOMEM;
        l.allocated = n;
        for (size_t i = 0; i < n; i++) {
                r = job_entry_from_json(json_object_array_get_idx(jobs, i), &l.items[l.n]);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return -EBADMSG;
                l.n++;
        }
        *ret = l;
        l = (JobList) {};
        return 0;
}

int cli_list_jobs(Cli *cli, json_object *filter, JobList *ret) {
        _cleanup_(reply_done) Reply reply = {};
        int r;

        r = cli_call_list(cli, filter, &reply);
        if (r < 0)
                return r;
        if (reply.error)
                return cli_report_error(cli, NULL, &reply);
        r = job_list_from_reply(reply.parameters, ret);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "corrald sent a job list this corral cannot read "
                                       "(are corral and corrald the same version? corral info)");
        return 0;
}

static json_object *filter_all_states(void) {
        _cleanup_json_ json_object *p = json_object_new_object();

        if (!p || json_add_strv(p, "states", (char **) cli_job_states) < 0)
                return NULL;
        return TAKE_PTR(p);
}

int cli_resolve_jobs(Cli *cli, char *const *args, size_t n, uint64_t **ret_ids, size_t *ret_n, size_t *ret_failed) {
        _cleanup_(job_list_done) JobList all = {};
        _cleanup_free_ uint64_t *ids = NULL;
        _cleanup_free_ JobRef *refs = NULL;
        bool need_list = false;
        size_t n_ids = 0, failed = 0;
        int r;

        refs = new0(JobRef, n);
        ids = new0(uint64_t, n);
        if (!refs || !ids)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                r = job_ref_parse(args[i], &refs[i]);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0) {
                        log_error("%s: '%s' is not a job id (expected a number such as 42, or 42_3 for "
                                  "task 3 of array job 42)", cli->verb, args[i]);
                        return CLI_EXIT_USAGE;
                }
                need_list = need_list || refs[i].has_task;
        }

        if (need_list) {
                _cleanup_json_ json_object *f = filter_all_states();
                if (!f)
                        return log_oom();
                r = cli_list_jobs(cli, TAKE_PTR(f), &all);
                if (r != 0)
                        return r;
        }

        for (size_t i = 0; i < n; i++) {
                bool found = false;

                if (!refs[i].has_task) {
                        ids[n_ids++] = refs[i].id;
                        continue;
                }
                for (size_t k = 0; k < all.n && !found; k++)
                        if (all.items[k].info.array_job_id == refs[i].id &&
                            all.items[k].info.array_task_id == refs[i].task) {
                                ids[n_ids++] = all.items[k].info.id;
                                found = true;
                        }
                if (!found) {
                        log_error("job %s: no such array task", args[i]);
                        failed++;
                }
        }
        *ret_ids = TAKE_PTR(ids);
        *ret_n = n_ids;
        *ret_failed = failed;
        return 0;
}

int cli_wait_job(Cli *cli, uint64_t id) {
        char subject[64];
        int r;

        snprintf(subject, sizeof(subject), "job %" PRIu64, id);

        for (;;) {
                bool continues = true;

                r = cli_send(cli, CORRAL_METHOD_WAIT, json_job_id(id), true);
                if (r < 0)
                        return r;
                while (continues) {
                        _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
                        _cleanup_(reply_done) Reply reply = {};
                        json_object *job;
                        char buf[128];

                        /* No deadline: a job may run for days. A dead daemon still shows
                         * as the connection closing. */
                        r = cli_receive(cli, -1, &reply);
                        if (r < 0)
                                return r;
                        continues = reply.continues;
                        if (reply.error) {
                                /* A stream ended by an error leaves nothing pending. */
                                return cli_report_error(cli, subject, &reply);
                        }
                        if (cli->json)
                                (void) cli_print_json(reply.parameters);
                        if (!json_object_object_get_ex(reply.parameters, "job", &job) ||
                            job_info_from_json(job, &info, NULL) < 0) {
                                log_error("%s: corrald sent a Wait reply this corral cannot read "
                                          "(are corral and corrald the same version? corral info)", subject);
                                return -EBADMSG;
                        }
                        if (!job_state_name_is_final(info.state))
                                continue;

                        /* Whatever the stream still holds would answer our next call:
                         * start over on a fresh connection instead. */
                        if (continues)
                                cli_done(cli);
                        log_info("%s: %s", subject, format_job_outcome(buf, sizeof(buf), &info));
                        return job_exit_status(&info);
                }
                /* The daemon ended the stream before the job ended (it may not stream):
                 * ask again, gently. */
                (void) usleep(500 * 1000);
        }
}

/* ---- cancel, hold, release, suspend, resume, requeue ---- */

static CorralMethod action_method(const char *verb) {
        static const struct {
                const char *verb;
                CorralMethod method;
        } table[] = {
                { "cancel", CORRAL_METHOD_CANCEL },   { "hold", CORRAL_METHOD_HOLD },
                { "release", CORRAL_METHOD_RELEASE }, { "suspend", CORRAL_METHOD_SUSPEND },
                { "resume", CORRAL_METHOD_RESUME },   { "requeue", CORRAL_METHOD_REQUEUE },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(table[i].verb, verb))
                        return table[i].method;
        return _CORRAL_METHOD_INVALID;
}

/* Applies the verb's method to each id, going on after failures as scancel does. */
static int act_on_jobs(Cli *cli, const uint64_t *ids, size_t n, bool hold, int status) {
        CorralMethod m = action_method(cli->verb);

        assert(m >= 0);

        for (size_t i = 0; i < n; i++) {
                _cleanup_(reply_done) Reply reply = {};
                _cleanup_json_ json_object *p = json_job_id(ids[i]);
                char subject[64];
                int r;

                if (!p || (hold && json_add_bool(p, "hold", true) < 0))
                        return cli_oom();
                r = cli_call(cli, m, TAKE_PTR(p), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (reply.error) {
                        snprintf(subject, sizeof(subject), "job %" PRIu64, ids[i]);
                        r = cli_report_error(cli, subject, &reply); /* MAX() evaluates twice */
                        status = MAX(status, r);
                        continue;
                }
                if (cli->json)
                        (void) cli_print_json(reply.parameters);
        }
        return status;
}

static void action_help(const char *verb) {
        bool requeue = streq(verb, "requeue");

        printf("Usage: corral %s [OPTIONS] JOBID...\n\n", strempty(verb));
        if (streq(verb, "hold"))
                printf("Keep pending jobs from starting until they are released.\n");
        else if (streq(verb, "release"))
                printf("Let held jobs be scheduled again.\n");
        else if (streq(verb, "suspend"))
                printf("Freeze running jobs; they keep their CPUs and memory.\n");
        else if (streq(verb, "resume"))
                printf("Thaw suspended jobs.\n");
        else
                printf("Put jobs back in the queue (running ones are stopped first).\n");
        printf("\nJOBID is a number (42) or an array task (42_3).\n\nOptions:\n");
        if (requeue)
                printf("  -H, --hold     requeue held\n");
        printf("      --json     print the replies as JSON\n"
               "  -h, --help     show this help\n");
}

int verb_job_action(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                { "hold", no_argument, NULL, 'H' },
                {},
        };
        _cleanup_free_ uint64_t *ids = NULL;
        bool requeue = streq(cli->verb, "requeue"), hold = false;
        size_t n = 0, failed = 0;
        int c, r;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, requeue ? "hH" : "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        action_help(cli->verb);
                        return CLI_EXIT_SUCCESS;
                case 'j':
                        cli->json = true;
                        break;
                case 'H':
                        if (!requeue) {
                                log_error("%s: unrecognized option '--hold' (see corral %s --help)", cli->verb,
                                          cli->verb);
                                return CLI_EXIT_USAGE;
                        }
                        hold = true;
                        break;
                default:
                        log_error("%s: see corral %s --help", cli->verb, cli->verb);
                        return CLI_EXIT_USAGE;
                }
        if (optind >= argc) {
                log_error("%s: no job given (corral %s JOBID...)", cli->verb, cli->verb);
                return CLI_EXIT_USAGE;
        }

        r = cli_resolve_jobs(cli, argv + optind, (size_t) (argc - optind), &ids, &n, &failed);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (r > 0)
                return r;
        return act_on_jobs(cli, ids, n, hold, failed > 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS);
}

static void cancel_help(void) {
        printf("Usage: corral cancel [OPTIONS] [JOBID...]\n\n"
               "Cancel jobs: pending ones never start, running ones are signalled (SIGTERM, then\n"
               "SIGKILL after the grace period). With filters and no JOBID, every job matching\n"
               "all filters is cancelled; with both, only the listed jobs that match.\n\n"
               "Options:\n"
               "  -n, --name NAME      only jobs with this name\n"
               "  -u, --user USER      only jobs of this user\n"
               "      --me             only your own jobs\n"
               "  -t, --state STATES   only jobs in these states (e.g. PENDING,HELD or PD)\n"
               "      --json           print the replies as JSON\n"
               "  -h, --help           show this help\n");
}

static char *current_user_name(void) {
        struct passwd *pw = getpwuid(getuid());
        return pw ? strdup(pw->pw_name) : NULL;
}

int verb_cancel(Cli *cli, int argc, char **argv) {
        enum { ARG_ME = 0x100, ARG_JSON };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, ARG_JSON },
                { "name", required_argument, NULL, 'n' },
                { "job-name", required_argument, NULL, 'n' },
                { "user", required_argument, NULL, 'u' },
                { "me", no_argument, NULL, ARG_ME },
                { "state", required_argument, NULL, 't' },
                { "states", required_argument, NULL, 't' },
                {},
        };
        _cleanup_strv_free_ char **states = NULL;
        _cleanup_free_ char *user = NULL;
        _cleanup_free_ uint64_t *ids = NULL;
        const char *name = NULL;
        size_t n = 0, failed = 0;
        int c, r;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "hn:u:t:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        cancel_help();
                        return CLI_EXIT_SUCCESS;
                case ARG_JSON:
                        cli->json = true;
                        break;
                case 'n':
                        name = optarg;
                        break;
                case 'u':
                case ARG_ME:
                        free(user);
                        user = c == 'u' ? strdup(optarg) : current_user_name();
                        if (!user)
                                return cli_oom();
                        break;
                case 't': {
                        _cleanup_free_ char *bad = NULL;
                        strv_free(states);
                        states = NULL;
                        r = job_states_parse(optarg, &states, &bad);
                        if (r == -ENOMEM)
                                return cli_oom();
                        if (r < 0) {
                                log_error("cancel: unknown state '%s' (e.g. PENDING, RUNNING, HELD, or PD, R)",
                                          strempty(bad));
                                return CLI_EXIT_USAGE;
                        }
                        break;
                }
                default:
                        log_error("cancel: see corral cancel --help");
                        return CLI_EXIT_USAGE;
                }

        if (optind < argc) {
                r = cli_resolve_jobs(cli, argv + optind, (size_t) (argc - optind), &ids, &n, &failed);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (r > 0)
                        return r;
        } else if (!name && !user && !states) {
                log_error("cancel: no job given (corral cancel JOBID..., or filter with --name, --user, --me "
                          "or --state)");
                return CLI_EXIT_USAGE;
        }

        if (name || user || states) {
                _cleanup_json_ json_object *f = json_object_new_object();
                _cleanup_(job_list_done) JobList l = {};
                _cleanup_free_ uint64_t *match = NULL;
                size_t n_match = 0;
                bool by_id = optind < argc;

                if (!f || json_add_string(f, "user", user) < 0 || json_add_strv(f, "states", states) < 0)
                        return cli_oom();
                r = cli_list_jobs(cli, TAKE_PTR(f), &l);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (r > 0)
                        return r;
                match = new0(uint64_t, l.n);
                if (!match && l.n > 0)
                        return cli_oom();
                for (size_t i = 0; i < l.n; i++) {
                        const JobInfo *j = &l.items[i].info;
                        bool listed = !by_id;

                        /* Filter here too: the daemon may not know every filter. */
                        if (name && !streq_ptr(j->name, name))
                                continue;
                        if (user && !streq_ptr(j->user, user))
                                continue;
                        if (states && !strv_contains(states, j->state))
                                continue;
                        if (!states && job_state_name_is_final(j->state))
                                continue;
                        for (size_t k = 0; k < n && !listed; k++)
                                listed = ids[k] == j->id;
                        if (listed)
                                match[n_match++] = j->id;
                }
                if (n_match == 0)
                        log_info("cancel: no job matches");
                free(ids);
                ids = TAKE_PTR(match);
                n = n_match;
        }

        return act_on_jobs(cli, ids, n, false, failed > 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS);
}

/* ---- wait ---- */

int verb_wait(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n = 0, failed = 0;
        int c, r, status;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: corral wait [--json] JOBID...\n\n"
                               "Wait until the jobs have ended, print how each ended to stderr, and exit\n"
                               "with the highest of their exit statuses (128+N for a job killed by\n"
                               "signal N, 1 for one that failed without a code or could not be waited for).\n");
                        return CLI_EXIT_SUCCESS;
                case 'j':
                        cli->json = true;
                        break;
                default:
                        log_error("wait: see corral wait --help");
                        return CLI_EXIT_USAGE;
                }
        if (optind >= argc) {
                log_error("wait: no job given (corral wait JOBID...)");
                return CLI_EXIT_USAGE;
        }

        r = cli_resolve_jobs(cli, argv + optind, (size_t) (argc - optind), &ids, &n, &failed);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (r > 0)
                return r;
        status = failed > 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
        for (size_t i = 0; i < n; i++) {
                r = cli_wait_job(cli, ids[i]);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                status = MAX(status, r);
        }
        return status;
}

/* ---- logs ---- */

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
                return cli_print_json(reply.parameters) < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;

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

/* ---- info, reload ---- */

static const char *get_string(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static bool get_u64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v;
        int64_t i;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return false;
        i = json_object_get_int64(v);
        if (i < 0)
                return false;
        *ret = (uint64_t) i;
        return true;
}

static bool no_arguments(const char *verb, int argc, char **argv, Cli *cli, const char *help, int *ret) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        int c;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(help, stdout);
                        *ret = CLI_EXIT_SUCCESS;
                        return false;
                case 'j':
                        cli->json = true;
                        break;
                default:
                        log_error("%s: see corral %s --help", verb, verb);
                        *ret = CLI_EXIT_USAGE;
                        return false;
                }
        if (optind < argc) {
                log_error("%s: unexpected argument '%s'", verb, argv[optind]);
                *ret = CLI_EXIT_USAGE;
                return false;
        }
        return true;
}

int verb_info(Cli *cli, int argc, char **argv) {
        _cleanup_(reply_done) Reply reply = {};
        json_object *queues;
        uint64_t u;
        char buf[32];
        int r;

        if (!no_arguments("info", argc, argv, cli,
                          "Usage: corral info [--json]\n\n"
                          "Show corrald's version, this machine's CPUs and memory, and the queues.\n", &r))
                return r;

        r = cli_call(cli, CORRAL_METHOD_GET_INFO, NULL, &reply);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (reply.error)
                return cli_report_error(cli, NULL, &reply);
        if (cli->json)
                return cli_print_json(reply.parameters) < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;

        printf("        Host: %s\n", strna(get_string(reply.parameters, "hostname")));
        printf("     corrald: %s", strna(get_string(reply.parameters, "version")));
        if (get_u64(reply.parameters, "protocol_version", &u))
                printf(" (protocol %" PRIu64 ")", u);
        printf("\n      corral: %s (protocol %d)\n", PACKAGE_VERSION, CORRAL_PROTOCOL_VERSION);
        if (get_u64(reply.parameters, "cpus", &u))
                printf("        CPUs: %" PRIu64 "\n", u);
        if (get_u64(reply.parameters, "memory", &u))
                printf("      Memory: %s\n", format_size(buf, sizeof(buf), u));
        printf("      Socket: %s\n", client_path(cli->client));
        if (json_object_object_get_ex(reply.parameters, "queues", &queues) &&
            json_object_is_type(queues, json_type_array)) {
                size_t n = json_object_array_length(queues);

                printf("      Queues:");
                for (size_t i = 0; i < n; i++) {
                        json_object *q = json_object_array_get_idx(queues, i), *prio;

                        printf("%s %s", i > 0 ? "," : "", strna(get_string(q, "name")));
                        if (json_object_object_get_ex(q, "priority", &prio) &&
                            json_object_is_type(prio, json_type_int))
                                printf(" (priority %" PRIi64 ")", json_object_get_int64(prio));
                }
                printf("%s\n", n == 0 ? " none" : "");
        }
        return CLI_EXIT_SUCCESS;
}

int verb_reload(Cli *cli, int argc, char **argv) {
        _cleanup_(reply_done) Reply reply = {};
        int r;

        if (!no_arguments("reload", argc, argv, cli,
                          "Usage: corral reload [--json]\n\n"
                          "Make corrald re-read its configuration (administrators only).\n", &r))
                return r;

        r = cli_call(cli, CORRAL_METHOD_RELOAD, NULL, &reply);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (reply.error)
                return cli_report_error(cli, NULL, &reply);
        if (cli->json)
                (void) cli_print_json(reply.parameters);
        return CLI_EXIT_SUCCESS;
}
