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

/* How many Wait calls are in flight on the connection at once: corrald's default
 * MaxWaitsPerConnection=. A daemon configured lower answers the call over its bound with
 * QuotaExceeded and its limit, and the window shrinks to it. */
#define WAIT_WINDOW 64

typedef struct WaitSlot {
        uint64_t id;
        bool busy;
} WaitSlot;

static int wait_send(Cli *cli, WaitSlot *slot, uint64_t id) {
        /* A stream (every change) only where someone reads the changes: --json. Otherwise
         * corrald answers once, when the job has ended. */
        int r = cli_send(cli, CORRAL_METHOD_WAIT, json_job_id(id), cli->json);
        if (r < 0)
                return r;
        *slot = (WaitSlot) { .id = id, .busy = true };
        return 0;
}

static WaitSlot *wait_slot_of(WaitSlot *slots, size_t n, uint64_t id) {
        for (size_t i = 0; i < n; i++)
                if (slots[i].busy && slots[i].id == id)
                        return &slots[i];
        return NULL;
}

static WaitSlot *wait_slot_free(WaitSlot *slots, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!slots[i].busy)
                        return &slots[i];
        return NULL;
}

/* The job a reply is about: the job's own view, or the job_id of an error reply (corrald
 * names it in every error of Wait it can). */
static bool wait_reply_id(const Reply *reply, uint64_t *ret) {
        json_object *o, *v;

        if (!reply->error && json_object_object_get_ex(reply->parameters, "job", &o) &&
            json_object_object_get_ex(o, "id", &v))
                return json_get_u64(v, 1, CORRAL_JOB_ID_MAX, ret) >= 0;
        if (reply->error && json_object_object_get_ex(reply->parameters, CORRAL_FIELD_JOB_ID, &v))
                return json_get_u64(v, 1, CORRAL_JOB_ID_MAX, ret) >= 0;
        return false;
}

/* The Wait calls of all ids pipelined on one connection, WAIT_WINDOW in flight: one round
 * trip for the lot instead of one per job, and each job's end printed as it comes (a
 * wait on 1,000 array tasks was 1,000 round trips in turn). Replies come in the order the
 * jobs end, each naming its job. */
int cli_wait_jobs(Cli *cli, const uint64_t *ids, size_t n) {
        WaitSlot slots[WAIT_WINDOW] = {};
        uint64_t retry[WAIT_WINDOW];
        size_t window = MIN((size_t) WAIT_WINDOW, n), next = 0, in_flight = 0, n_retry = 0;
        int status = CLI_EXIT_SUCCESS, r;

        while (next < n || in_flight > 0 || n_retry > 0) {
                _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
                _cleanup_(reply_done) Reply reply = {};
                char subject[64], buf[1536]; /* a launch error may be 1 KiB */
                json_object *job, *v;
                WaitSlot *slot;
                uint64_t id, limit;

                while ((n_retry > 0 || next < n) && in_flight < window) {
                        r = wait_send(cli, wait_slot_free(slots, WAIT_WINDOW),
                                      n_retry > 0 ? retry[--n_retry] : ids[next++]);
                        if (r < 0)
                                return r;
                        in_flight++;
                }
                /* No deadline: a job may run for days. A dead daemon still shows as the
                 * connection closing. */
                r = cli_receive(cli, -1, &reply);
                if (r < 0)
                        return r;
                if (!wait_reply_id(&reply, &id) || !(slot = wait_slot_of(slots, WAIT_WINDOW, id))) {
                        if (reply.error) {
                                /* Not about one job (the connection's): it ends the wait. */
                                r = cli_report_error(cli, NULL, &reply);
                                return MAX(status, r);
                        }
                        if (!json_object_object_get_ex(reply.parameters, "job", &job)) {
                                log_error("corrald sent a Wait reply this corral cannot read "
                                          "(are corral and corrald the same version? corral info)");
                                return -EBADMSG;
                        }
                        continue; /* the rest of a stream already ended */
                }
                snprintf(subject, sizeof(subject), "job %" PRIu64, id);
                if (reply.error) {
                        if (streq(reply.error, corral_error_to_string(CORRAL_ERROR_QUOTA_EXCEEDED)) &&
                            json_object_object_get_ex(reply.parameters, CORRAL_FIELD_LIMIT, &v) &&
                            json_get_u64(v, 1, WAIT_WINDOW, &limit) >= 0 && in_flight > limit) {
                                /* Over a MaxWaitsPerConnection= below ours: asked again once
                                 * a call is answered, with no more in flight than it. */
                                window = MIN(window, (size_t) limit);
                                slot->busy = false, in_flight--;
                                retry[n_retry++] = id;
                                continue;
                        }
                        slot->busy = false, in_flight--;
                        r = cli_report_error(cli, subject, &reply); /* MAX() would log it twice */
                        status = MAX(status, r);
                        continue;
                }
                if (cli->json)
                        (void) cli_print_json(reply.parameters);
                if (!json_object_object_get_ex(reply.parameters, "job", &job) ||
                    job_info_from_json(job, &info, NULL) < 0) {
                        log_error("%s: corrald sent a Wait reply this corral cannot read "
                                  "(are corral and corrald the same version? corral info)", subject);
                        return -EBADMSG;
                }
                if (!job_state_name_is_final(info.state)) {
                        if (reply.continues)
                                continue;
                        /* The daemon ended the call before the job ended (it may not
                         * stream): ask again, gently. */
                        (void) usleep(500 * 1000);
                        r = wait_send(cli, slot, id);
                        if (r < 0)
                                return r;
                        continue;
                }
                /* Whatever the stream still holds for this job is skipped above. */
                slot->busy = false, in_flight--;
                log_info("%s: %s", subject, format_job_outcome(buf, sizeof(buf), &info));
                status = MAX(status, job_exit_status(&info));
        }
        return status;
}

int cli_wait_job(Cli *cli, uint64_t id) {
        return cli_wait_jobs(cli, &id, 1);
}
