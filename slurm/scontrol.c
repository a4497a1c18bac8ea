/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scontrol(1) on corrald: show job, and the job actions of corral(1) (hold, release,
 * requeue, suspend, resume) under Slurm's names. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "slurm-common.h"
#include "strv.h"

static void help(void) {
        printf("Usage: scontrol [-d] show job[id] [JOBID]\n"
               "       scontrol hold|release|requeue|requeuehold|suspend|resume JOBID[,JOBID...]...\n\n"
               "corrald's jobs as Slurm's scontrol shows and changes them. See corral-slurm(7).\n");
}

static int show_jobs(Cli *cli, const char *which) {
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_free_ JobRef *refs = NULL;
        size_t n_refs = 0, shown = 0;
        time_t now = time(NULL);
        int r;

        if (which && slurm_parse_job_list(which, &refs, &n_refs) < 0) {
                slurm_error("Invalid job id specified");
                return 1;
        }
        r = slurm_list_jobs(cli, which ? NULL : json_object_new_object(), false, &l);
        if (r != 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                _cleanup_(reply_done) Reply reply = {};
                _cleanup_(job_entry_done) JobEntry e = {};
                json_object *job;

                if (n_refs > 0 && !slurm_job_matches_refs(&l.items[i].info, refs, n_refs))
                        continue;
                /* Show: the owner's details (command, paths) when we may see them. */
                r = cli_call(cli, CORRAL_METHOD_SHOW, json_job_id(l.items[i].info.id), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (!reply.error && json_object_object_get_ex(reply.parameters, "job", &job) &&
                    job_entry_from_json(job, &e) >= 0)
                        r = scontrol_show_job(stdout, &e.info, now);
                else
                        r = scontrol_show_job(stdout, &l.items[i].info, now);
                if (r < 0)
                        return 1;
                shown++;
        }
        if (n_refs > 0 && shown == 0) {
                slurm_error("Invalid job id specified");
                return 1;
        }
        if (!which && shown == 0)
                printf("No jobs in the system\n");
        return 0;
}

static int job_action(Cli *cli, const char *verb, bool hold, int argc, char **argv) {
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_free_ char **args = NULL;
        size_t n;

        for (int i = 0; i < argc; i++) {
                _cleanup_strv_free_ char **l = NULL;
                if (strv_split(argv[i], ",", &l) < 0)
                        return cli_oom();
                STRV_FOREACH(s, l)
                        if (!isempty(*s) && strv_extend(&ids, *s) < 0)
                                return cli_oom();
        }
        n = strv_length(ids);
        if (n == 0) {
                slurm_error("Invalid job id specified");
                return 1;
        }
        /* corral's own verb, whose argv[0] is its name. */
        args = new0(char *, n + 3);
        if (!args)
                return cli_oom();
        args[0] = (char *) verb;
        size_t k = 1;
        if (hold)
                args[k++] = (char *) "--hold";
        for (size_t i = 0; i < n; i++)
                args[k++] = ids[i];
        cli->verb = verb;
        return verb_job_action(cli, (int) k, args) == 0 ? 0 : 1;
}

static int run(int argc, char *argv[]) {
        _cleanup_(cli_done) Cli cli;
        int i = 1;

        slurm_setup("scontrol", &cli, "error");
        /* -d, -dd (details: we always show what we have), -o is not supported. */
        while (i < argc && argv[i][0] == '-') {
                if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
                        help();
                        return 0;
                }
                if (strspn(argv[i] + 1, "d") != strlen(argv[i] + 1) && !streq(argv[i], "--details")) {
                        slurm_error("%s: option not supported", argv[i]);
                        return 1;
                }
                i++;
        }
        if (i >= argc) {
                help();
                return 1;
        }
        if (streq(argv[i], "show")) {
                i++;
                while (i < argc && argv[i][0] == '-') /* "show jobid -dd 42" */
                        i++;
                if (i >= argc || (!streq(argv[i], "job") && !streq(argv[i], "jobid") && !streq(argv[i], "jobs"))) {
                        slurm_error("show %s: only \"show job\" is supported (see corral info for the machine)",
                                    i < argc ? argv[i] : "");
                        return 1;
                }
                i++;
                while (i < argc && argv[i][0] == '-')
                        i++;
                if (i + 1 < argc) {
                        slurm_error("too many arguments");
                        return 1;
                }
                return show_jobs(&cli, i < argc ? argv[i] : NULL);
        }
        if (streq(argv[i], "hold") || streq(argv[i], "uhold") || streq(argv[i], "release") ||
            streq(argv[i], "suspend") || streq(argv[i], "resume") || streq(argv[i], "requeue"))
                return job_action(&cli, streq(argv[i], "uhold") ? "hold" : argv[i], false, argc - i - 1, argv + i + 1);
        if (streq(argv[i], "requeuehold"))
                return job_action(&cli, "requeue", true, argc - i - 1, argv + i + 1);
        slurm_error("%s: command not supported by Corral (see corral-slurm(7))", argv[i]);
        return 1;
}

SLURM_MAIN(run)
