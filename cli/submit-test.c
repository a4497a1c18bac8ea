/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral submit --test-only (sbatch --test-only): the request as a submission would send
 * it, and corrald's answer to TestSubmit: whether it would take the job, and when it
 * would start it. Nothing is queued. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "json-util.h"
#include "log.h"
#include "parse-util.h"
#include "strv.h"
#include "submit-test.h"

static void print_row(FILE *f, const char *key, const char *value) {
        fprintf(f, "%-13s %s\n", key, value);
}

void submit_request_print(FILE *f, const SubmitRequest *req, const char *script_name) {
        char buf[128];

        if (req->script) {
                size_t lines = 0;
                for (const char *p = req->script; *p; p++)
                        lines += *p == '\n';
                snprintf(buf, sizeof buf, "%s (%zu lines, %zu bytes)", script_name ?: "<stdin>", lines,
                         strlen(req->script));
                print_row(f, "Script:", buf);
        } else {
                _cleanup_free_ char *a = argv_to_display(req->argv);
                print_row(f, "Command:", strna(a));
        }
        print_row(f, "Name:", req->name ?: "(none)");
        snprintf(buf, sizeof buf, "%u", req->cpus ?: 1);
        print_row(f, "CPUs:", buf);
        if (req->shards > 0) {
                snprintf(buf, sizeof buf, "%u of one GPU%s%s (shared)", req->shards, req->gpu_type ? " of type " : "",
                         strempty(req->gpu_type));
                print_row(f, "Shards:", buf);
        } else if (req->gpus > 0 || req->constraint) {
                snprintf(buf, sizeof buf, "%u%s%s", req->gpus, req->gpu_type ? " of type " : "", strempty(req->gpu_type));
                print_row(f, "GPUs:", buf);
        }
        if (req->constraint)
                print_row(f, "Constraint:", req->constraint);
        if (req->gpu_binding)
                print_row(f, "GresFlags:", "enforce-binding (CPUs only on the GPUs' NUMA nodes)");
        print_row(f, "Memory:", req->memory ? format_size(buf, sizeof buf, req->memory) : "(the queue's default)");
        if (req->walltime_sec == CORRAL_WALLTIME_INFINITY)
                print_row(f, "Walltime:", "unlimited");
        else
                print_row(f, "Walltime:", req->walltime_sec ? format_elapsed(buf, sizeof buf, req->walltime_sec)
                                                            : "(the queue's default)");
        print_row(f, "Queue:", req->queue ?: "(the default queue)");
        print_row(f, "Project:", req->project ?: "(your default project)");
        print_row(f, "WorkDir:", strna(req->workdir));
        print_row(f, "Input:", req->stdin_path ?: "/dev/null");
        print_row(f, "Output:", req->stdout_path ?: "the journal (corral logs)");
        print_row(f, "Error:", req->stderr_path ?: req->stdout_path ?: "the journal (corral logs)");
        snprintf(buf, sizeof buf, "%zu variables", strv_length(req->env));
        print_row(f, "Environment:", buf);
        if (req->array.set) {
                char spec[CORRAL_ARRAY_SPEC_LENGTH_MAX + 1];
                print_row(f, "Array:", array_spec_format(&req->array, spec, sizeof spec));
        }
        for (size_t i = 0; i < req->n_dependencies; i++) {
                snprintf(buf, sizeof buf, "%s:%" PRIu64, strna(dependency_type_to_string(req->dependencies[i].type)),
                         req->dependencies[i].job_id);
                print_row(f, i == 0 ? "Dependency:" : "", buf);
        }
        if (req->begin_time)
                print_row(f, "Begin:", format_timestamp(buf, sizeof buf, req->begin_time));
        if (req->nice) {
                snprintf(buf, sizeof buf, "%d", req->nice);
                print_row(f, "Nice:", buf);
        }
        if (req->hold)
                print_row(f, "Hold:", "yes");
        if (req->exclusive)
                print_row(f, "Exclusive:", "yes");
        if (req->rerunnable >= 0)
                print_row(f, "Requeue:", req->rerunnable ? "yes" : "no");
}

/* Connects without the error message cli_call() would log: no daemon is an answer here. */
static int connect_quietly(Cli *cli) {
        if (cli->client)
                return 0;
        return client_connect(cli->socket_path ?: client_socket_path(), cli->timeout_ms, &cli->client);
}

/* Slurm's own words for sbatch --test-only. */
static int sbatch_test_only(const SubmitRequest *req, json_object *answer, const char *refusal,
                            const char *unavailable, int status) {
        char host[256] = "localhost", when[64] = "an unknown time";
        json_object *v;
        uint64_t t;

        if (refusal) {
                fprintf(stderr, "sbatch: error: Batch job submission failed: %s\n", refusal);
                return status;
        }
        if (unavailable) {
                fprintf(stderr, "sbatch: Job request is valid; no start time estimated: %s\n", unavailable);
                return status;
        }
        (void) gethostname(host, sizeof host - 1);
        if (json_object_object_get_ex(answer, "est_start", &v) && json_get_u64(v, 0, CORRAL_TIME_MAX, &t) >= 0) {
                time_t tt = (time_t) t;
                struct tm tm;
                if (localtime_r(&tt, &tm))
                        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        }
        fprintf(stderr, "sbatch: Job to start at %s using %u processors on nodes %s in partition %s\n", when,
                req->cpus ?: 1,
                host, json_object_object_get_ex(answer, "queue", &v) ? json_object_get_string(v)
                                                                      : req->queue ?: "(default)");
        return status;
}

int submit_test_only(Cli *cli, const SubmitRequest *req, const char *script_name, bool sbatch) {
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_json_ json_object *params = NULL, *out = NULL;
        _cleanup_free_ char *unavailable = NULL, *refusal = NULL;
        json_object *answer = NULL, *v;
        int status = CLI_EXIT_SUCCESS, r;
        char buf[64];

        r = submit_request_to_json(req, &params);
        if (r < 0)
                return cli_oom();
        if (!cli->json && !sbatch) {
                submit_request_print(stdout, req, script_name);
                fflush(stdout);
        }

        r = connect_quietly(cli);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                if (asprintf(&unavailable, "corrald is not reachable at %s (%s): whether it would accept the job "
                             "and when it would start it are unknown",
                             cli->socket_path ?: client_socket_path(), strerror(-r)) < 0)
                        return cli_oom();
        } else {
                r = cli_call(cli, CORRAL_METHOD_TEST_SUBMIT, json_object_get(params), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (reply.error && corral_error_from_string(reply.error) == CORRAL_ERROR_METHOD_NOT_FOUND) {
                        if (!(unavailable = strdup("this corrald is too old to answer --test-only (corral info)")))
                                return cli_oom();
                } else if (reply.error) {
                        refusal = cli_error_message(cli->verb, NULL, &reply);
                        if (!refusal)
                                return cli_oom();
                        status = cli_error_exit_status(&reply);
                } else
                        answer = reply.parameters;
        }

        if (sbatch)
                return sbatch_test_only(req, answer, refusal, unavailable, status);
        if (cli->json) {
                out = json_object_new_object();
                if (!out)
                        return cli_oom();
                json_add(out, "request", json_object_get(params));
                if (answer)
                        json_add(out, "corrald", json_object_get(answer));
                if (refusal) {
                        json_add_bool(out, "accepted", false);
                        json_add_string(out, "refusal", refusal);
                        if (reply.error)
                                json_add_string(out, "error", reply.error);
                } else if (answer)
                        json_add_bool(out, "accepted", true);
                json_add_string(out, "estimate_unavailable", unavailable);
                (void) cli_print_json(out);
                return status;
        }

        if (refusal) {
                printf("Would not be accepted: %s\n", refusal);
                return status;
        }
        if (unavailable) {
                printf("Estimate:     unavailable: %s\n", unavailable);
                return status;
        }
        printf("Accepted:     yes");
        if (json_object_object_get_ex(answer, "queue", &v))
                printf(", in queue %s", json_object_get_string(v));
        if (json_object_object_get_ex(answer, "project", &v))
                printf(", project %s", json_object_get_string(v));
        printf("\n");
        if (json_object_object_get_ex(answer, "notice", &v))
                printf("Notice:       %s\n", json_object_get_string(v));
        if (json_object_object_get_ex(answer, "estimate_unavailable", &v))
                printf("Estimate:     unavailable: %s\n", json_object_get_string(v));
        else if (json_object_object_get_ex(answer, "est_start", &v)) {
                uint64_t t;
                const char *reason = NULL;
                json_object *w;

                if (json_get_u64(v, 0, CORRAL_TIME_MAX, &t) < 0)
                        t = 0;
                if (json_object_object_get_ex(answer, "reason", &w))
                        reason = json_object_get_string(w);
                if (!reason)
                        printf("Would start:  now (%s)\n", format_timestamp(buf, sizeof buf, t));
                else
                        printf("Would start:  %s (estimated; waits for %s)\n", format_timestamp(buf, sizeof buf, t),
                               reason);
        } else if (json_object_object_get_ex(answer, "reason", &v))
                printf("Would start:  unknown (waits for %s)\n", json_object_get_string(v));
        else
                printf("Would start:  unknown\n");
        return status;
}
