/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scancel(1) on corrald: ids (42, 42_3), or every job matching -u, -n, -t, -p, -A;
 * --signal sends the running jobs' processes a signal (corrald's Signal) instead. */

#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "slurm-common.h"
#include "strv.h"

/* Slurm's words for corrald's refusal of a signal. */
static const char *signal_error(const Reply *reply, const JobInfo *j) {
        if (streq(reply->error, CORRAL_ERROR_NAME("PermissionDenied")))
                return "Access/permission denied";
        if (streq(reply->error, CORRAL_ERROR_NAME("NoSuchJob")))
                return "Invalid job id specified";
        if (streq(reply->error, CORRAL_ERROR_NAME("InvalidState")))
                /* Pending, suspended, starting or ending: Slurm's answer (after retrying). */
                return "Job can not be altered now, try again later";
        return NULL;
}

/* Sends sig to j's processes (batch: its main process alone): 0 or 1 (said), or an exit
 * status for corrald's failure. */
static int signal_job(Cli *cli, const JobInfo *j, int sig, bool batch) {
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_json_ json_object *p = json_job_id(j->id);
        const char *msg;
        int r;

        if (!p || json_add_i64(p, "signal", sig) < 0 || (batch && json_add_bool(p, "batch", true) < 0))
                return cli_oom();
        r = cli_call(cli, CORRAL_METHOD_SIGNAL, TAKE_PTR(p), &reply);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (!reply.error)
                return 0;
        msg = signal_error(&reply, j);
        if (msg)
                log_error("error: Kill job error on job id %" PRIu64 ": %s", j->id, msg);
        else {
                _cleanup_free_ char *m = cli_error_message(NULL, NULL, &reply);
                log_error("error: Kill job error on job id %" PRIu64 ": %s", j->id, m ?: reply.error);
        }
        return 1;
}

static void help(void) {
        printf("Usage: scancel [OPTIONS] [JOBID[_TASK]...]\n\n"
               "Cancel jobs of corrald by id, or all jobs matching the filters.\n\n"
               "  -u, --user=USER         jobs of USER\n"
               "      --me                your jobs\n"
               "  -n, --name=NAME         jobs named NAME (also --jobname)\n"
               "  -t, --state=STATES      jobs in these states (PENDING, RUNNING, SUSPENDED)\n"
               "  -p, --partition=P       jobs in partition (queue) P\n"
               "  -A, --account=A         jobs of account (project) A\n"
               "  -s, --signal=SIG        send the running jobs' processes SIG (USR1, SIGUSR1, 10)\n"
               "                          instead of cancelling them\n"
               "  -b, --batch             with --signal: the job's main process (batch script) alone\n"
               "  -f, --full              with --signal: all its processes (the default here)\n"
               "  -M, --clusters=C        all, or this machine's cluster (scontrol show config)\n"
               "  -Q, --quiet             no message for jobs already finished\n"
               "See corral-slurm(7).\n");
}

static int run(int argc, char *argv[]) {
        enum { ARG_ME = 0x100 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },       { "user", required_argument, NULL, 'u' },
                { "me", no_argument, NULL, ARG_ME },      { "name", required_argument, NULL, 'n' },
                { "jobname", required_argument, NULL, 'n' }, { "state", required_argument, NULL, 't' },
                { "partition", required_argument, NULL, 'p' }, { "account", required_argument, NULL, 'A' },
                { "signal", required_argument, NULL, 's' }, { "quiet", no_argument, NULL, 'Q' },
                { "batch", no_argument, NULL, 'b' },       { "full", no_argument, NULL, 'f' },
                { "interactive", no_argument, NULL, 'i' }, { "nodelist", required_argument, NULL, 'w' },
                { "reservation", required_argument, NULL, 'R' }, { "qos", required_argument, NULL, 'q' },
                { "verbose", no_argument, NULL, 'v' },     { "clusters", required_argument, NULL, 'M' },
                { "cluster", required_argument, NULL, 'M' }, {},
        };
        _cleanup_(cli_done) Cli cli;
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_free_ JobRef *refs = NULL;
        _cleanup_free_ char *me = NULL;
        const char *user = NULL, *name = NULL, *states = NULL, *partition = NULL, *account = NULL,
                   *clusters = NULL;
        size_t n_refs = 0;
        bool quiet = false, batch = false;
        int status = 0, sig = 0, c, r;

        slurm_setup("scancel", &cli, "error");
        while ((c = getopt_long(argc, argv, "hu:n:t:p:A:s:Qbfiw:R:q:vM:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
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
                case 'n':
                        name = optarg;
                        break;
                case 't':
                        states = optarg;
                        break;
                case 'p':
                        partition = optarg;
                        break;
                case 'A':
                        account = optarg;
                        break;
                case 's':
                        if (signal_parse(optarg, &sig) < 0) {
                                /* Slurm's words, without its prefix. */
                                fprintf(stderr, "Unknown job signal: %s\n", optarg);
                                return 1;
                        }
                        break;
                case 'M':
                        clusters = optarg;
                        break;
                case 'Q':
                        quiet = true;
                        break;
                case 'v':
                        break;
                case 'b':
                        batch = true;
                        break;
                case 'f':
                        break; /* every process of the job: what --signal does here */
                case 'i':
                        slurm_error("--interactive is not supported: scancel asks no questions here");
                        return 1;
                case 'w':
                        slurm_error("--nodelist: not supported on a single machine");
                        return 1;
                case 'R':
                case 'q':
                        slurm_error("%s: Corral has no reservations or QOS", c == 'R' ? "--reservation" : "--qos");
                        return 1;
                default:
                        return 1;
                }

        for (int i = optind; i < argc; i++) {
                JobRef *n = reallocarray(refs, n_refs + 1, sizeof(JobRef));
                if (!n)
                        return cli_oom();
                refs = n;
                if (job_ref_parse(argv[i], &refs[n_refs]) < 0) {
                        slurm_error("Invalid job id %s", argv[i]);
                        return 1;
                }
                n_refs++;
        }
        if (n_refs == 0 && !user && !name && !states && !partition && !account) {
                slurm_error("No job identification provided");
                return 1;
        }
        if (clusters && (r = slurm_check_clusters(&cli, clusters, NULL)) != 0)
                return r;
        /* As Slurm's: --batch alone signals SIGKILL, and SIGKILL to the whole job cancels it. */
        if (batch && sig == 0)
                sig = SIGKILL;
        if (sig == SIGKILL && !batch)
                sig = 0;

        /* As Slurm's: filters without -u select one's own jobs (root: everyone's); others'
         * jobs are named by id or -u, and corrald says whether one may cancel them. */
        if (n_refs == 0 && !user && getuid() != 0) {
                struct passwd *pw = getpwuid(getuid());
                if (!pw || !(me = strdup(pw->pw_name))) {
                        slurm_error("cannot find the name of uid %u", (unsigned) getuid());
                        return 1;
                }
                user = me;
        }

        r = slurm_list_jobs(&cli, NULL, false, &l);
        if (r != 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                const JobInfo *j = &l.items[i].info;
                _cleanup_(reply_done) Reply reply = {};
                char subject[64];

                if ((n_refs > 0 && !slurm_job_matches_refs(j, refs, n_refs)) || !slurm_list_contains(user, j->user) ||
                    (name && !streq_ptr(name, j->name)) || !slurm_list_contains(partition, j->queue) ||
                    !slurm_list_contains(account, j->project))
                        continue;
                if (states) {
                        bool ok = false;
                        _cleanup_strv_free_ char **sl = NULL;
                        if (strv_split(states, ",", &sl) < 0)
                                return cli_oom();
                        STRV_FOREACH(s, sl)
                                ok = ok || slurm_state_matches(*s, j->state);
                        if (!ok)
                                continue;
                }
                if (sig > 0 && job_state_name_is_final(j->state)) {
                        /* Named by id: Slurm says nothing of it unless -v, and fails; matched
                         * by a filter: not a job to signal. */
                        if (n_refs > 0)
                                status = 1;
                        continue;
                }
                if (sig > 0) {
                        r = signal_job(&cli, j, sig, batch);
                        if (r > 1)
                                return r;
                        status = MAX(status, r);
                        continue;
                }
                if (job_state_name_is_final(j->state)) {
                        /* Named by id: scancel says so; matched by a filter: nothing to do. */
                        if (n_refs > 0 && !quiet)
                                log_error("error: Kill job error on job id %" PRIu64 ": Job/step already completing "
                                          "or completed", j->id);
                        continue;
                }
                r = cli_call(&cli, CORRAL_METHOD_CANCEL, json_job_id(j->id), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (reply.error) {
                        snprintf(subject, sizeof(subject), "Kill job error on job id %" PRIu64, j->id);
                        (void) cli_report_error(&cli, subject, &reply);
                        status = 1;
                }
        }
        for (size_t k = 0; k < n_refs; k++) {
                bool found = false;
                for (size_t i = 0; i < l.n && !found; i++)
                        found = slurm_job_matches_refs(&l.items[i].info, &refs[k], 1);
                if (!found) {
                        log_error("error: Kill job error on job id %" PRIu64 ": Invalid job id specified", refs[k].id);
                        status = 1;
                }
        }
        return status;
}

SLURM_MAIN(run)
