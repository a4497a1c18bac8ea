/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sacct(1) on corrald: every job corrald's store keeps (it keeps them all), one line per
 * job (there are no job steps), in Slurm's window: since midnight unless -S, any time
 * when jobs are named with -j. */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <strings.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "slurm-common.h"
#include "strv.h"
#include "submit-options.h"

static void help(void) {
        printf("Usage: sacct [OPTIONS]\n\n"
               "Show corrald's accounting of jobs as Slurm's sacct does: every job corrald's\n"
               "store keeps, one line each (no steps).\n\n"
               "  -j, --jobs=IDS          these jobs (42, 42_3, comma list)\n"
               "  -u, --user=USERS        jobs of these users (default: yours; root: everyone's)\n"
               "  -a, --allusers          every user's jobs\n"
               "  -A, --accounts=LIST     these accounts (projects)\n"
               "  -r, --partition=LIST    these partitions (queues)\n"
               "      --name=NAMES        jobs with these names\n"
               "  -s, --state=STATES      these states (CD, F, CA, R, PD, ...)\n"
               "  -S, --starttime=TIME    jobs active since TIME (default: midnight; with -j: any)\n"
               "  -E, --endtime=TIME      jobs active before TIME (default: now)\n"
               "  -X, --allocations       only the jobs' lines (the only lines there are)\n"
               "  -n, --noheader          no header\n"
               "  -P, --parsable2         fields separated by '|'\n"
               "  -p, --parsable          fields followed by '|'\n"
               "  -b, --brief             JobID,State,ExitCode\n"
               "  -o, --format=FIELDS     e.g. JobIDRaw,State,Account%%20\n"
               "      --delimiter=TEXT    between -p/-P fields instead of '|'\n"
               "      --units=K|M|G|T|P   MaxRSS and ReqMem in that unit\n"
               "  -e, --helpformat        list the fields\n"
               "See corral-slurm(7).\n");
}

static const char *const all_fields =
        "Account AllocCPUS AllocTRES Comment CPUTime CPUTimeRAW Elapsed ElapsedRaw End ExitCode Group JobID\n"
        "JobIDRaw JobName MaxRSS NCPUS NNodes NodeList Partition Priority QOS Reason ReqCPUS ReqMem ReqTRES\n"
        "Start State Submit Timelimit TotalCPU UID User WorkDir TRESUsageInAve TRESUsageInMax\n"
        "ConsumedEnergy ConsumedEnergyRaw\n";

static const char *group_of(uid_t uid) {
        const char *name;
        uint32_t gid;

        slurm_owner_group(uid, &gid, &name);
        return name;
}

static int run(int argc, char *argv[]) {
        enum { ARG_NAME = 0x100, ARG_DELIMITER, ARG_UNITS, ARG_NOCONVERT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },         { "jobs", required_argument, NULL, 'j' },
                { "user", required_argument, NULL, 'u' },   { "allusers", no_argument, NULL, 'a' },
                { "accounts", required_argument, NULL, 'A' }, { "partition", required_argument, NULL, 'r' },
                { "name", required_argument, NULL, ARG_NAME }, { "state", required_argument, NULL, 's' },
                { "starttime", required_argument, NULL, 'S' }, { "endtime", required_argument, NULL, 'E' },
                { "allocations", no_argument, NULL, 'X' },  { "noheader", no_argument, NULL, 'n' },
                { "parsable2", no_argument, NULL, 'P' },    { "parsable", no_argument, NULL, 'p' },
                { "brief", no_argument, NULL, 'b' },        { "format", required_argument, NULL, 'o' },
                { "helpformat", no_argument, NULL, 'e' },   { "allclusters", no_argument, NULL, 'L' },
                { "duplicates", no_argument, NULL, 'D' },   { "clusters", required_argument, NULL, 'M' },
                { "nodelist", required_argument, NULL, 'N' }, { "cluster", required_argument, NULL, 'M' },
                { "delimiter", required_argument, NULL, ARG_DELIMITER }, { "units", required_argument, NULL, ARG_UNITS },
                { "noconvert", no_argument, NULL, ARG_NOCONVERT }, { "job", required_argument, NULL, 'j' },
                { "fields", required_argument, NULL, 'o' }, { "users", required_argument, NULL, 'u' },
                { "account", required_argument, NULL, 'A' }, { "partitions", required_argument, NULL, 'r' },
                {},
        };
        _cleanup_(cli_done) Cli cli;
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_(slurm_format_done) SlurmFormat fmt = {};
        _cleanup_free_ JobRef *refs = NULL;
        _cleanup_free_ const JobInfo **rows = NULL;
        _cleanup_free_ char *me = NULL;
        _cleanup_strv_free_ char **states = NULL;
        json_object *filter;
        const char *user = NULL, *accounts = NULL, *partitions = NULL, *names = NULL, *format = NULL, *bad = NULL;
        bool header = true, all_users = false, details = false;
        SacctStyle style = SACCT_FIXED;
        time_t now = time(NULL);
        uint64_t start = 0, end = (uint64_t) now;
        bool have_start = false;
        const char *delimiter = NULL;
        char units = 0;
        size_t n_refs = 0, n_steps = 0, n = 0;
        int c, r;

        slurm_setup("sacct", &cli, "error");
        while ((c = getopt_long(argc, argv, "hj:u:aA:r:s:S:E:XnPpbo:eLDM:N:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'j':
                        /* -j adds, as Slurm's (submitit passes one -j per job). */
                        r = slurm_add_job_list(optarg, &refs, &n_refs, &n_steps);
                        if (r == -ENOMEM)
                                return cli_oom();
                        if (r < 0) {
                                slurm_error("Invalid job id: %s", optarg);
                                return 1;
                        }
                        break;
                case ARG_DELIMITER:
                        delimiter = optarg;
                        break;
                case ARG_UNITS:
                        units = (char) toupper((unsigned char) optarg[0]);
                        if (!strchr("KMGTP", units) || units == 0 || optarg[1]) {
                                slurm_error("Invalid unit type");
                                return 1;
                        }
                        break;
                case ARG_NOCONVERT:
                        break; /* sizes are printed in one unit each already */
                case 'u':
                        user = optarg;
                        break;
                case 'a':
                        all_users = true;
                        break;
                case 'A':
                        accounts = optarg;
                        break;
                case 'r':
                        partitions = optarg;
                        break;
                case ARG_NAME:
                        names = optarg;
                        break;
                case 's':
                        strv_free(states);
                        states = NULL;
                        if (strv_split(optarg, ",", &states) < 0)
                                return cli_oom();
                        break;
                case 'S':
                case 'E': {
                        uint64_t t;
                        if (slurm_parse_time(optarg, now, &t) < 0) {
                                slurm_error("Invalid time specification (pos 0): %s", optarg);
                                return 1;
                        }
                        if (c == 'S') {
                                start = t;
                                have_start = true;
                        } else
                                end = t;
                        break;
                }
                case 'X':
                case 'L':
                case 'D':
                        break;
                case 'n':
                        header = false;
                        break;
                case 'P':
                        style = SACCT_PARSABLE2;
                        break;
                case 'p':
                        style = SACCT_PARSABLE;
                        break;
                case 'b':
                        format = "JobID,State,ExitCode";
                        break;
                case 'o':
                        format = optarg;
                        break;
                case 'e':
                        fputs(all_fields, stdout);
                        return 0;
                case 'M':
                        /* Snakemake passes --clusters all to every query. */
                        r = slurm_check_clusters(&cli, optarg, NULL);
                        if (r != 0)
                                return r;
                        break;
                case 'N':
                        slurm_error("-%c: not supported on a single machine", c);
                        return 1;
                default:
                        return 1;
                }
        if (optind < argc) {
                slurm_error("Unknown arguments: %s", argv[optind]);
                return 1;
        }
        if (slurm_fields_parse(format ?: SACCT_FORMAT_DEFAULT, &fmt) < 0) {
                slurm_error("Invalid field list: %s", format);
                return 1;
        }
        if (sacct_fields_check(&fmt, &bad) < 0) {
                slurm_error("Invalid field requested: \"%s\"", bad);
                return 1;
        }
        fmt.delimiter = delimiter;
        fmt.units = units;
        fmt.group_of = group_of;
        for (size_t i = 0; i < fmt.n; i++)
                details = details || strcaseeq(fmt.items[i].name, "TotalCPU") ||
                          strcaseeq(fmt.items[i].name, "MaxRSS") || strcaseeq(fmt.items[i].name, "WorkDir") ||
                          strcaseeq(fmt.items[i].name, "Comment") ||
                          strncasecmp(fmt.items[i].name, "TRESUsageIn", 11) == 0 ||
                          strncasecmp(fmt.items[i].name, "ConsumedEnergy", 14) == 0;

        /* As sacct: one's own jobs unless -u or -a (root: everyone's); since midnight
         * unless -S, or any time when jobs are named. */
        if (!user && !all_users && getuid() != 0) {
                struct passwd *pw = getpwuid(getuid());
                if (!pw || !(me = strdup(pw->pw_name))) {
                        slurm_error("cannot find the name of uid %u", (unsigned) getuid());
                        return 1;
                }
                user = me;
        }
        if (!have_start && n_refs + n_steps == 0 && slurm_parse_time("today", now, &start) < 0)
                start = 0;

        /* The whole history the store keeps, not only the day corrald has in memory; the
         * daemon leaves out what ended before the window. */
        filter = json_object_new_object();
        if (!filter || json_add_strv(filter, "states", (char *[]) { (char *) "all", NULL }) < 0 ||
            json_add_bool(filter, "history", true) < 0 || json_add_u64(filter, "ended_since", start) < 0) {
                json_object_put(filter);
                return cli_oom();
        }
        r = slurm_list_jobs(&cli, filter, details, &l);
        if (r != 0)
                return r;
        rows = new0(const JobInfo *, l.n + 1);
        if (!rows)
                return cli_oom();
        for (size_t i = 0; i < l.n; i++) {
                const JobInfo *j = &l.items[i].info;

                /* Only steps asked for: none here. */
                if ((n_refs + n_steps > 0 && !slurm_job_matches_refs(j, refs, n_refs)) || !slurm_list_contains(user, j->user) ||
                    !slurm_list_contains(accounts, j->project) || !slurm_list_contains(partitions, j->queue) ||
                    !slurm_list_contains(names, j->name))
                        continue;
                /* Active at some point of [start, end]. */
                if ((j->end_time > 0 && j->end_time < start) || j->submit_time > end)
                        continue;
                if (states) {
                        bool ok = false;
                        STRV_FOREACH(s, states)
                                ok = ok || slurm_state_matches(*s, j->state);
                        if (!ok)
                                continue;
                }
                rows[n++] = j;
        }
        r = sacct_print(stdout, &fmt, rows, n, style, header, now);
        if (r < 0)
                return log_error_errno(r, "error: cannot write: %m"), 1;
        return 0;
}

SLURM_MAIN(run)
