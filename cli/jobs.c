/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the verbs share: parsing job lists (List's pages), resolving job arguments,
 * waiting for a job. The verbs are in verb-*.c, queue.c and submit.c. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "log.h"

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
        ret->has_est_start = ret->info.est_start > 0;
        ret->est_start = ret->info.est_start;
        ret->has_priority = ret->info.has_priority;
        ret->priority = ret->info.priority;
        if (json_object_object_get_ex(o, "charge", &v))
                charge_view_from_json(v, &ret->charge);
        if (json_object_object_get_ex(o, "gpu_usage", &v) && json_object_is_type(v, json_type_array))
                for (size_t i = 0; i < json_object_array_length(v) && i < CORRAL_GPUS_MAX; i++) {
                        json_object *e = json_object_array_get_idx(v, i), *x;
                        JobGpuTotals *t = &ret->info.gpu_totals;

                        if (!json_object_is_type(e, json_type_object) ||
                            !json_object_object_get_ex(e, "util_mean", &x))
                                continue;
                        t->n++;
                        t->util_mean += json_object_get_double(x);
                        if (json_object_object_get_ex(e, "util_max", &x))
                                t->util_max += (unsigned) MIN(MAX(json_object_get_int64(x), 0), 100);
                        /* Slurm's gres/gpumem is the job's processes' memory: the
                                 * whole GPU's only where NVML listed none of them. */
                        if (json_object_object_get_ex(e, "own_memory_max", &x) ||
                            json_object_object_get_ex(e, "memory_max", &x))
                                t->memory_max += (uint64_t) MAX(json_object_get_int64(x), 0);
                        if (json_object_object_get_ex(e, "energy_j", &x)) {
                                t->has_energy = true;
                                t->energy_j += MAX(json_object_get_double(x), 0.0);
                        }
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

int cli_args_to_jobs(Cli *cli, int argc, char **argv, const char *usage, uint64_t **ret_ids, size_t *ret_n,
                     int *ret_status) {
        size_t failed = 0;
        int r;

        if (optind >= argc) {
                if (usage)
                        log_error("%s: no job given (%s)", cli->verb, usage);
                else
                        log_error("%s: no job given (corral %s JOBID...)", cli->verb, cli->verb);
                return CLI_EXIT_USAGE;
        }
        r = cli_resolve_jobs(cli, argv + optind, (size_t) (argc - optind), ret_ids, ret_n, &failed);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (r > 0)
                return r;
        *ret_status = failed > 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
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
                        char buf[1536]; /* a launch error may be 1 KiB */

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
