/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral why JOBID: what holds the job back, in words with numbers, and what its
 * priority is made of, as corrald sees it now. */

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>

#include "commands.h"
#include "log.h"
#include "text-util.h"

static void why_help(void) {
        printf("Usage: corral why [--json] JOBID\n\n"
               "Explain why a job waits: what holds it back (a dependency, a hold, a project\n"
               "limit with its numbers, the CPUs and memory it needs against what is free, the\n"
               "job whose reservation comes first), its estimated start, its place among the\n"
               "eligible jobs, and every term of its priority with its weight.\n");
}

int verb_why(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ uint64_t *ids = NULL;
        json_object *v, *list;
        size_t n = 0, failed = 0;
        char subject[64];
        int c, r;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        why_help();
                        return CLI_EXIT_SUCCESS;
                case 'j':
                        cli->json = true;
                        break;
                default:
                        log_error("why: see corral why --help");
                        return CLI_EXIT_USAGE;
                }
        if (optind + 1 != argc) {
                log_error("why: one job id expected (corral why JOBID)");
                return CLI_EXIT_USAGE;
        }
        r = cli_resolve_jobs(cli, argv + optind, 1, &ids, &n, &failed);
        if (r != 0)
                return r < 0 ? cli_exit_status_from_errno(r) : r;
        if (n != 1)
                return CLI_EXIT_FAILURE;
        snprintf(subject, sizeof subject, "job %" PRIu64, ids[0]);
        r = cli_call_reply(cli, CORRAL_METHOD_WHY, json_job_id(ids[0]), subject, &reply);
        if (r != 0)
                return r;
        if (cli->json)
                return cli_print_json_status(reply.parameters);

        /* The daemon's words quote the users' (project names, dependencies, paths): escaped,
         * as everything a user wrote and another one reads. */
        fprintf_escaped(stdout, "Job %" PRIu64 ": %s", ids[0],
                        json_object_object_get_ex(reply.parameters, "state", &v) ? json_object_get_string(v) : "?");
        if (json_object_object_get_ex(reply.parameters, "reason", &v))
                fprintf_escaped(stdout, " (%s)", json_object_get_string(v));
        printf("\n");
        if (json_object_object_get_ex(reply.parameters, "why", &list) && json_object_is_type(list, json_type_array))
                for (size_t i = 0, k = json_object_array_length(list); i < k; i++) {
                        fprintf_escaped(stdout, "  - %s", json_object_get_string(json_object_array_get_idx(list, i)));
                        printf("\n");
                }
        if (json_object_object_get_ex(reply.parameters, "position", &v)) {
                json_object *e;
                printf("Place: %" PRIi64 " of %" PRIi64 " eligible jobs\n", json_object_get_int64(v),
                       json_object_object_get_ex(reply.parameters, "eligible", &e) ? json_object_get_int64(e) : 0);
        }
        if (json_object_object_get_ex(reply.parameters, "priority", &v))
                printf("Priority: %.6f =\n", json_object_get_double(v));
        if (json_object_object_get_ex(reply.parameters, "terms", &list) && json_object_is_type(list, json_type_array))
                for (size_t i = 0, k = json_object_array_length(list); i < k; i++) {
                        json_object *t = json_object_array_get_idx(list, i), *name, *in, *w, *val;
                        if (!json_object_object_get_ex(t, "name", &name) || !json_object_object_get_ex(t, "input", &in) ||
                            !json_object_object_get_ex(t, "weight", &w) || !json_object_object_get_ex(t, "value", &val))
                                continue;
                        if (json_object_get_double(w) == 0.0)
                                continue; /* terms with no weight do not count */
                        fprintf_escaped(stdout, "  %+14.6f  %-9s %g x %g", json_object_get_double(val),
                                        json_object_get_string(name), json_object_get_double(w),
                                        json_object_get_double(in));
                        printf("\n");
                }
        return CLI_EXIT_SUCCESS;
}
