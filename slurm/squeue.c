/* SPDX-License-Identifier: GPL-2.0-or-later */
/* squeue(1) on corrald: the unfinished jobs (or -t's states), in Slurm's default layout
 * or -o/-O formats (slurm-format.c). */

#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "parse-util.h"
#include "slurm-common.h"
#include "strv.h"
#include "submit-options.h"

static void help(void) {
        printf("Usage: squeue [OPTIONS]\n\n"
               "List corrald's jobs as Slurm's squeue does.\n\n"
               "  -u, --user=USERS        jobs of these users (comma list)\n"
               "      --me                your jobs\n"
               "  -j, --jobs=IDS          these jobs (42, 42_3, comma list)\n"
               "  -t, --states=STATES     these states (PD,R,... or all); default PENDING,RUNNING,SUSPENDED\n"
               "  -p, --partition=PARTS   these partitions (queues)\n"
               "  -A, --account=ACCOUNTS  these accounts (projects)\n"
               "  -n, --name=NAMES        jobs with these names\n"
               "  -h, --noheader          no header line\n"
               "  -o, --format=FORMAT     %%.18i %%.9P %%.8j %%.8u %%.2t %%.10M %%.6D %%R and more\n"
               "  -O, --Format=FIELDS     JobID,Name:30,State,...\n"
               "  -l, --long              the long layout\n"
               "      --noconvert         %%m in megabytes, never converted\n"
               "  -M, --clusters=all      this machine (all, or its host name)\n"
               "      --help              this help\n"
               "See corral-slurm(7) for the fields.\n");
}

static int run(int argc, char *argv[]) {
        enum { ARG_ME = 0x100, ARG_HELP, ARG_NOCONVERT, ARG_ONLY_JOB_STATE };
        static const struct option options[] = {
                { "help", no_argument, NULL, ARG_HELP }, { "user", required_argument, NULL, 'u' },
                { "me", no_argument, NULL, ARG_ME },     { "jobs", optional_argument, NULL, 'j' },
                { "states", required_argument, NULL, 't' }, { "state", required_argument, NULL, 't' },
                { "partition", required_argument, NULL, 'p' }, { "account", required_argument, NULL, 'A' },
                { "name", required_argument, NULL, 'n' }, { "noheader", no_argument, NULL, 'h' },
                { "format", required_argument, NULL, 'o' }, { "Format", required_argument, NULL, 'O' },
                { "long", no_argument, NULL, 'l' },      { "array", no_argument, NULL, 'r' },
                { "all", no_argument, NULL, 'a' },       { "sort", required_argument, NULL, 'S' },
                { "iterate", required_argument, NULL, 'i' }, { "nodelist", required_argument, NULL, 'w' },
                { "clusters", required_argument, NULL, 'M' }, { "cluster", required_argument, NULL, 'M' },
                { "qos", required_argument, NULL, 'q' },
                { "noconvert", no_argument, NULL, ARG_NOCONVERT },
                { "only-job-state", no_argument, NULL, ARG_ONLY_JOB_STATE },
                { "users", required_argument, NULL, 'u' }, { "partitions", required_argument, NULL, 'p' },
                { "accounts", required_argument, NULL, 'A' },
                {},
        };
        _cleanup_(cli_done) Cli cli;
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_(slurm_format_done) SlurmFormat fmt = {};
        _cleanup_free_ JobRef *refs = NULL;
        _cleanup_free_ SqueueJob *rows = NULL;
        _cleanup_free_ char *me = NULL;
        _cleanup_strv_free_ char **states = NULL;
        const char *user = NULL, *partition = NULL, *account = NULL, *names = NULL, *format = NULL, *bad = NULL;
        _cleanup_free_ char *cluster = NULL;
        bool header = true, long_format = false, noconvert = false;
        size_t n_refs = 0, n = 0;
        unsigned iterate = 0;
        int c, r;

        slurm_setup("squeue", &cli, "error");
        while ((c = getopt_long(argc, argv, "u:j::t:p:A:n:ho:O:lraS:i:w:M:q:", options, NULL)) >= 0)
                switch (c) {
                case ARG_HELP:
                        help();
                        return 0;
                case 'u':
                        user = optarg;
                        break;
                case ARG_ME:
                        free(me);
                        if (!(me = slurm_my_name()))
                                return 1;
                        user = me;
                        break;
                case 'j': {
                        const char *arg = optarg;
                        /* "-j 42" as well as "-j42": the optional argument is the next word. */
                        if (!arg && optind < argc && argv[optind][0] != '-')
                                arg = argv[optind++];
                        if (!arg)
                                break;
                        free(refs);
                        refs = NULL;
                        if (slurm_parse_job_list(arg, &refs, &n_refs) < 0) {
                                slurm_error("Invalid job id: %s", arg);
                                return 1;
                        }
                        break;
                }
                case 't':
                        strv_free(states);
                        states = NULL;
                        if (strv_split(optarg, ",", &states) < 0)
                                return cli_oom();
                        STRV_FOREACH(s, states) {
                                bool known = slurm_state_is_known(*s);
                                for (const char *const *k = cli_job_states; *k && !known; k++)
                                        known = slurm_state_matches(*s, *k);
                                if (!known) {
                                        slurm_error("Invalid job state specified: %s", *s);
                                        return 1;
                                }
                        }
                        break;
                case 'p':
                        partition = optarg;
                        break;
                case 'A':
                        account = optarg;
                        break;
                case 'n':
                        names = optarg;
                        break;
                case 'h':
                        header = false;
                        break;
                case 'o':
                        format = optarg;
                        slurm_format_done(&fmt);
                        if (slurm_format_parse(optarg, &fmt) < 0) {
                                slurm_error("Invalid format specification: %s", optarg);
                                return 1;
                        }
                        break;
                case 'O':
                        format = optarg;
                        slurm_format_done(&fmt);
                        if (slurm_format_parse_long(optarg, &fmt) < 0) {
                                slurm_error("Invalid --Format specification: %s", optarg);
                                return 1;
                        }
                        break;
                case 'l':
                        long_format = true;
                        break;
                case 'i':
                        /* As Slurm: the listing again every N seconds, each under the date. */
                        if (safe_atou(optarg, &iterate) < 0 || iterate == 0) {
                                slurm_error("--iterate=%s", optarg);
                                return 1;
                        }
                        break;
                case 'r':
                case 'a':
                case 'S':
                case ARG_ONLY_JOB_STATE: /* every field is cheap here */
                        break; /* array tasks are one line each already; one machine: no hidden partitions */
                case ARG_NOCONVERT:
                        noconvert = true;
                        break;
                case 'M':
                        /* Slurm names the cluster first; clients that pass -M skip the line. */
                        free(cluster);
                        cluster = NULL;
                        r = slurm_check_clusters(&cli, optarg, &cluster);
                        if (r != 0)
                                return r;
                        break;
                case 'w':
                        slurm_error("-%c: not supported on a single machine", c);
                        return 1;
                case 'q':
                        slurm_error("--qos: Corral has no QOS");
                        return 1;
                default:
                        return 1;
                }
        if (optind < argc) {
                slurm_error("Unrecognized option: %s", argv[optind]);
                return 1;
        }
        if (!format && slurm_format_parse(long_format ? SQUEUE_FORMAT_LONG : SQUEUE_FORMAT_DEFAULT, &fmt) < 0)
                return cli_oom();
        if (squeue_format_check(&fmt, &bad) < 0) {
                slurm_error("Invalid job format specification: %s", bad);
                return 1;
        }

again:
        /* Slurm dates each listing of -i and -l, above the header. */
        if (header && (iterate > 0 || long_format)) {
                char date[64];
                time_t now = time(NULL);
                struct tm tm;

                if (localtime_r(&now, &tm) && strftime(date, sizeof date, "%a %b %d %T %Y", &tm) > 0)
                        printf("%s\n", date);
        }
        r = slurm_list_jobs(&cli, NULL, squeue_format_needs_details(&fmt), &l);
        if (r != 0)
                return r;
        queue_sort(l.items, l.n);
        rows = new0(SqueueJob, l.n + 1);
        if (!rows)
                return cli_oom();
        for (size_t i = 0; i < l.n; i++) {
                const JobInfo *j = &l.items[i].info;
                bool ok;

                if (states) {
                        ok = false;
                        STRV_FOREACH(s, states)
                                ok = ok || slurm_state_matches(*s, j->state);
                } else
                        /* Slurm lists pending, running and suspended jobs (and those
                         * completing) unless -t or -j says otherwise. */
                        ok = !job_state_name_is_final(j->state) || n_refs > 0;
                if (!ok || (n_refs > 0 && !slurm_job_matches_refs(j, refs, n_refs)) ||
                    !slurm_list_contains(user, j->user) || !slurm_list_contains(partition, j->queue) ||
                    !slurm_list_contains(account, j->project) || !slurm_list_contains(names, j->name))
                        continue;
                rows[n++] = (SqueueJob) { .info = j, .priority = l.items[i].priority,
                                          .has_priority = l.items[i].has_priority, .noconvert = noconvert };
                slurm_owner_group(j->uid, &rows[n - 1].gid, &rows[n - 1].group);
        }
        /* Slurm loads one job by its id and fails so when it is unknown; a list of ids is
         * a filter, and none found is an empty listing (Cylc reads it so). */
        if (n_refs == 1 && n == 0) {
                fputs("slurm_load_jobs error: Invalid job id specified\n", stderr);
                if (iterate == 0)
                        return 1;
        } else {
                if (cluster)
                        printf("CLUSTER: %s\n", cluster);
                r = squeue_print(stdout, &fmt, rows, n, header, time(NULL));
                if (r < 0)
                        return log_error_errno(r, "error: cannot write: %m"), 1;
        }
        if (iterate == 0)
                return 0;
        /* Until interrupted, as Slurm's: a blank line, the wait, the next listing. */
        putchar('\n');
        if (fflush(stdout) != 0)
                return 1; /* the reader went away */
        (void) sleep(iterate);
        rows = mfree(rows);
        n = 0;
        job_list_done(&l);
        goto again;
}

SLURM_MAIN(run)
