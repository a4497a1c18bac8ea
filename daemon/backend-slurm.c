/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Slurm backend: the jobs of a Backend=slurm queue (corrald(8), FORWARDING TO SLURM),
 * behind job_backend_slurm's table at the end of this file: handed to sbatch as
 * their user after the commit that records the attempt, tracked by a round of squeues (one
 * per user, see Round) at a bounded rate, their Slurm states mirrored through manager_job_transition(),
 * cancel/hold/release passed through. forward/ builds the arguments and reads the output;
 * this file decides and remembers. How a command runs is the runner's (ForwardRunnerOps):
 * the executor's transient service of the user in production, a fake in the tests.
 *
 * The link of a job to its Slurm job is stored (the meta table, "forward.ID"): "submitting"
 * before sbatch runs, "linked SLURMID" once it answered, both in the commit of the
 * iteration that decided them. A job found "submitting" at start-up may be in Slurm
 * already (a crash between sbatch and the commit): the first poll looks for its key among
 * the users' Slurm jobs and adopts what it finds, and only then may it be submitted again.
 *
 * The id sbatch prints is a claim, not a fact: sbatch runs as the user, in the user's
 * environment, and may print anything. A link is confirmed ("linked SLURMID confirmed")
 * once root's squeue of the user's jobs shows that id, linked to no other job here; until
 * then no record of it is read as root (sacct, scontrol), and an id that squeue does not
 * show, or that another job holds, ends the job (SlurmIdMismatch). States and whose an id
 * is come only from a squeue that prints nothing a user writes (SLURM_SQUEUE_FORMAT): the
 * comment, which carries the key, is read only to adopt after a crash, and only as the
 * user's claim, about ids that squeue shows as the user's. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend-slurm.h"
#include "commit.h"
#include "forward/slurm.h"
#include "intern.h"
#include "job-table.h"
#include "job-transition.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "strv.h"
#include "time-util.h"
#include "usage.h"

typedef enum LinkState {
        LINK_NONE,
        LINK_SUBMITTING,        /* sbatch may have run: nothing is submitted again before a poll says */
        LINK_LINKED,
} LinkState;

typedef struct Link {
        uint64_t job_id;
        uint64_t slurm_id;      /* an array's: its tasks share it */
        LinkState phase;
        bool confirmed;         /* squeue showed slurm_id as the user's, with the key */
        unsigned linked_poll;   /* the poll under way (or last) when sbatch answered */
        bool in_flight;         /* sbatch running now, in this daemon */
        bool final_seen;        /* Slurm said it ended: waiting for its record */
} Link;

struct Forwarder {
        Manager *m;
        const ForwardRunnerOps *ops;
        void *ops_userdata;
        Link *links;
        size_t n_links;
        sd_event_source *poll_timer;
        bool poll_in_flight;
        unsigned poll_seq;      /* started */
        unsigned polls;         /* completed, for tests and the log */
        struct Pending *pending;
        struct Round *round;    /* the poll's squeues, while they run */
        struct Records *records; /* the poll's, while its sacct or scontrol runs */
        /* A failure that lasts is logged when it begins and when it ends, not every round
         * (every 30 s, for a user who has no account on the cluster): the users whose
         * last squeue failed, and whether the last round found the cluster down. */
        char **users_failing;
        bool unreachable;
};

/* ---- links ---- */

static Link *link_get(Forwarder *f, uint64_t id, bool create) {
        Link *l;

        for (size_t i = 0; i < f->n_links; i++)
                if (f->links[i].job_id == id)
                        return &f->links[i];
        if (!create)
                return NULL;
        l = reallocarray(f->links, f->n_links + 1, sizeof *l);
        if (!l)
                return NULL;
        f->links = l;
        l = &f->links[f->n_links++];
        *l = (Link) { .job_id = id };
        return l;
}

/* An ended job's link leaves memory. The store keeps "ended SLURMID" of a confirmed one,
 * as long as the job's own record, for where its output is (Slurm's slurm-%j.out); the
 * rest is deleted. In the iteration's commit. */
static void link_drop(Forwarder *f, uint64_t id) {
        char key[48], value[48];

        snprintf(key, sizeof key, "forward.%" PRIu64, id);
        for (size_t i = 0; i < f->n_links; i++)
                if (f->links[i].job_id == id) {
                        Link *l = &f->links[i];

                        if (l->phase == LINK_LINKED && l->confirmed) {
                                snprintf(value, sizeof value, "ended %" PRIu64, l->slurm_id);
                                (void) store_set_meta(f->m->store, key, value);
                        } else
                                (void) store_delete_meta(f->m->store, key);
                        *l = f->links[--f->n_links];
                        return;
                }
}

static int link_store(Manager *m, const Link *l) {
        char key[48], value[48];

        snprintf(key, sizeof key, "forward.%" PRIu64, l->job_id);
        if (l->phase == LINK_LINKED)
                snprintf(value, sizeof value, "linked %" PRIu64 "%s", l->slurm_id, l->confirmed ? " confirmed" : "");
        else
                snprintf(value, sizeof value, "%s", l->phase == LINK_SUBMITTING ? "submitting" : "none");
        return store_set_meta(m->store, key, value);
}

bool manager_job_forwarded(Manager *m, const Job *j) {
        return manager_job_backend(m, j) == &job_backend_slurm;
}

int manager_forward_output_path(Manager *m, const Job *j, char **ret) {
        _cleanup_free_ char *v = NULL;
        uint64_t sid = manager_job_slurm_id(m, j);
        char key[48];
        int r;

        *ret = NULL;
        if (!manager_job_forwarded(m, j))
                return 0;
        if (!sid) {
                /* Ended: its link is only in the store now. */
                snprintf(key, sizeof key, "forward.%" PRIu64, j->id);
                r = store_get_meta(m->store, key, &v);
                if (r < 0)
                        return r;
                if (!v || sscanf(v, "ended %" SCNu64, &sid) != 1)
                        return 0;
        }
        r = j->array_job_id ? asprintf(ret, "slurm-%" PRIu64 "_%" PRIu32 ".out", sid, j->array_task_id)
                            : asprintf(ret, "slurm-%" PRIu64 ".out", sid);
        return r < 0 ? -ENOMEM : 1;
}

uint64_t manager_job_slurm_id(Manager *m, const Job *j) {
        Link *l = m->forward ? link_get(m->forward, j->id, false) : NULL;
        return l && l->phase == LINK_LINKED ? l->slurm_id : 0;
}

/* ---- running the client ---- */

/* A command under way: what its answer is about. Kept in the forwarder, so that those a
 * shutdown leaves unanswered are freed with it. */
typedef struct Pending {
        Forwarder *f;
        uint64_t job_id;
        struct Pending *next, *prev;
} Pending;

static Pending *pending_new(Forwarder *f, uint64_t job_id) {
        Pending *p = new0(Pending, 1);

        if (!p)
                return NULL;
        p->f = f;
        p->job_id = job_id;
        p->next = f->pending;
        if (f->pending)
                f->pending->prev = p;
        f->pending = p;
        return p;
}

static void pending_free(Pending *p) {
        if (!p)
                return;
        if (p->prev)
                p->prev->next = p->next;
        else
                p->f->pending = p->next;
        if (p->next)
                p->next->prev = p->prev;
        free(p);
}

static char *client_path(Manager *m, const char *tool) {
        char *p;
        if (asprintf(&p, "%s/%s", config_slurm_bin_dir(m->config, "/"), tool) < 0)
                return NULL;
        return p;
}

/* What a command run as the user may print, per stream: sbatch's id, scancel's words. It
 * runs in the user's environment (LD_PRELOAD), so this is what it can make corrald hold. */
#define FORWARD_USER_OUTPUT_MAX (UINT64_C(64) << 10)

static int run(Forwarder *f, uid_t uid, char **argv, char **env, const char *stdin_data, mode_t umask,
               ExecutorCommandDone done, void *userdata) {
        ExecutorCommand c = {
                .max_output = uid == 0 ? 0 : FORWARD_USER_OUTPUT_MAX,
                .unit_prefix = "corral-fwd",
                .description = "Corral: the Slurm client for a forwarded job",
                .uid = uid,
                .argv = argv,
                .env = env,
                .stdin_data = stdin_data,
                .umask = umask,
        };
        return f->ops->run(f->ops_userdata, &c, done, userdata);
}

static int executor_runner(void *userdata, const ExecutorCommand *c, ExecutorCommandDone done, void *cookie) {
        Manager *m = userdata;
        if (!m->executor)
                return -ENOTCONN;
        return executor_run_command(m->executor, c, done, cookie);
}

static const ForwardRunnerOps executor_runner_ops = { .run = executor_runner };

/* A user's own command on their Slurm job: scancel, scontrol hold/release. Best effort:
 * what it says is logged, the next poll shows the result. */
static void on_user_command(int error, const char *out, const char *err, void *userdata) {
        Pending *p = userdata;

        if (error < 0 || !isempty(err))
                log_warning("Job %" PRIu64 ": the Slurm client said: %s", p->job_id,
                            !isempty(err) ? err : strerror(-error));
        pending_free(p);
}

static int user_command(Forwarder *f, const Job *j, const char *tool, const char *verb, const char *option) {
        _cleanup_free_ char *path = client_path(f->m, tool);
        char id[48];
        Link *l = link_get(f, j->id, false);
        Pending *p;
        int r;

        if (!path || !l || l->phase != LINK_LINKED)
                return path ? -ENOENT : -ENOMEM;
        if (j->array_job_id)
                snprintf(id, sizeof id, "%" PRIu64 "_%" PRIu32, l->slurm_id, j->array_task_id);
        else
                snprintf(id, sizeof id, "%" PRIu64, l->slurm_id);
        p = pending_new(f, j->id);
        if (!p)
                return -ENOMEM;
        char *argv[5] = { path }, **a = argv + 1;
        if (verb)
                *a++ = (char *) verb;
        if (option)
                *a++ = (char *) option;
        *a = id;
        r = run(f, j->uid, argv, NULL, NULL, 0022, on_user_command, p);
        if (r < 0)
                pending_free(p);
        return r;
}

/* ---- submission ---- */

static int dependency_of(uint64_t corral_id, void *userdata, uint64_t *ret) {
        Manager *m = userdata;
        Job *d = manager_find_job(m, corral_id);
        Link *l;

        if (!d || !manager_job_forwarded(m, d))
                return -ENOENT;
        l = m->forward ? link_get(m->forward, corral_id, false) : NULL;
        /* Not on the id sbatch claimed: only once squeue confirmed it. */
        if (!l || l->phase != LINK_LINKED || !l->confirmed)
                return -EAGAIN;
        *ret = l->slurm_id;
        return 0;
}

static SlurmSubmitParams submit_params(Manager *m, const Job *j, const QueueConfig *q) {
        return (SlurmSubmitParams) {
                .job_id = j->id,
                .array_job_id = j->array_job_id,
                .host = m->hostname,
                .user = job_user(j),
                .partition = q->slurm_partition,
                .account = queue_config_slurm_account(q, job_project(j)),
                .dependency = dependency_of,
                .userdata = m,
        };
}

int manager_forward_check(Manager *m, const SubmitRequest *req, const QueueConfig *q, const char *user,
                          const char *project, char **ret_reason) {
        SlurmSubmitParams p = {
                .job_id = m->next_id,
                .host = m->hostname,
                .user = user,
                .partition = q->slurm_partition,
                .account = queue_config_slurm_account(q, project),
                .dependency = dependency_of,
                .userdata = m,
        };
        SlurmSubmit s = {};
        int r;

        *ret_reason = NULL;
        r = slurm_submit_build(req, &p, &s, ret_reason);
        slurm_submit_done(&s);
        if (r == -EAGAIN) {
                /* It waits here until what it depends on is on the cluster. */
                *ret_reason = mfree(*ret_reason);
                return 0;
        }
        return r;
}

static int set_reason(Manager *m, Job *j, const char *reason) {
        if (job_reason(j) && streq(job_reason(j), reason))
                return 0;
        (void) job_set_reason(j, reason);
        return manager_job_save(m, j);
}

/* Each queued task of an array j heads: they go with it, as one sbatch --array. */
static void tasks_set(Forwarder *f, Job *head, LinkState phase, uint64_t slurm_id, bool confirmed) {
        Manager *m = f->m;

        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *t = m->jobs[i];
                Link *l;

                if (t->array_job_id != head->id || job_state_is_final(t->state))
                        continue;
                l = link_get(f, t->id, true);
                if (!l)
                        continue;
                l->phase = phase;
                l->slurm_id = slurm_id;
                l->confirmed = confirmed;
                l->linked_poll = f->poll_seq;
                (void) link_store(m, l);
        }
}

/* What the Slurm client prints when it cannot reach slurmctld: sbatch's and squeue's
 * words alike ("Unable to contact slurm controller (connect failure)"). The controller's
 * trouble, no user's. */
static bool slurm_unreachable(const char *err) {
        return strstr(err, "Unable to contact slurm controller") || strstr(err, "Socket timed out") ||
               strstr(err, "Connection refused") || strstr(err, "Zero Bytes were transmitted");
}

static void on_sbatch(int error, const char *out, const char *err, void *userdata) {
        Pending *p = userdata;
        Forwarder *f = p->f;
        Manager *m = f->m;
        Job *j = manager_find_job(m, p->job_id);
        Link *l = link_get(f, p->job_id, false);
        uint64_t sid = 0;

        pending_free(p);
        if (!j || !l)
                return;
        l->in_flight = false;
        if (error >= 0 && slurm_parse_parsable(out, &sid, NULL) >= 0) {
                /* A claim until a poll confirms it. */
                l->phase = LINK_LINKED;
                l->slurm_id = sid;
                l->confirmed = false;
                l->linked_poll = f->poll_seq;
                if (j->array_job_id)
                        tasks_set(f, j, LINK_LINKED, sid, false);
                else
                        (void) link_store(m, l);
                log_info("Job %" PRIu64 " is Slurm job %" PRIu64 ".", j->id, sid);
                (void) set_reason(m, j, "Slurm:Submitted");
                if (j->cancel_requested)
                        (void) user_command(f, j, "scancel", NULL, NULL);
                m->sched_needed = true;
                return;
        }
        /* Not submitted: it stays queued here and is tried again at the next poll. */
        l->phase = LINK_NONE;
        if (j->array_job_id)
                tasks_set(f, j, LINK_NONE, 0, false);
        else
                (void) link_store(m, l);
        if (error == -EFBIG) {
                /* Over FORWARD_USER_OUTPUT_MAX: no sbatch prints that much, what ran did;
                 * it would do so again. */
                log_notice("Job %" PRIu64 ": sbatch printed more than %" PRIu64 " bytes.", j->id,
                           FORWARD_USER_OUTPUT_MAX);
                (void) job_take_launch_error(j, strdup("sbatch printed more than corrald reads of it (64 KiB)"));
                (void) manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "SlurmRefused");
                return;
        }
        /* Only sbatch's own refusal ends the job; anything else (no answer, sbatch killed
         * at its time limit, systemd refusing the unit) is tried again. */
        if (error < 0 || slurm_unreachable(err) || !strstr(err, "Batch job submission failed")) {
                log_warning("Job %" PRIu64 ": sbatch could not reach the cluster: %s", j->id,
                            !isempty(err) ? err : strerror(-error));
                (void) set_reason(m, j, "SlurmUnreachable");
                return;
        }
        /* The cluster refused it (an account, a partition, a limit): that will not change by
         * itself. The job ends here, the words for its owner. */
        log_notice("Job %" PRIu64 ": Slurm refused it: %s", j->id, err);
        (void) job_take_launch_error(j, strdup(err));
        (void) manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "SlurmRefused");
}

static unsigned in_flight(Forwarder *f, const char *queue) {
        Manager *m = f->m;
        unsigned n = 0;

        for (size_t i = 0; i < f->n_links; i++) {
                Job *j = manager_find_job(m, f->links[i].job_id);
                if (j && f->links[i].phase != LINK_NONE && !job_state_is_final(j->state) && job_queue(j) == queue)
                        n++;
        }
        return n;
}

static unsigned array_tasks_waiting(Manager *m, const Job *head) {
        unsigned n = 0;
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->array_job_id == head->id && m->jobs[i]->state == JOB_QUEUED)
                        n++;
        return n;
}

static int forward_one(Forwarder *f, Job *j, const QueueConfig *q) {
        Manager *m = f->m;
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        _cleanup_(slurm_submit_done) SlurmSubmit s = {};
        _cleanup_free_ char *reason = NULL, *path = NULL;
        SlurmSubmitParams p = submit_params(m, j, q);
        Link *l;
        Pending *pending;
        int r;

        r = store_load_request(m->store, job_request_id(j) ?: j->id, &req);
        if (r < 0)
                return log_error_errno(r, "Cannot read job %" PRIu64 "'s request: %s", j->id, store_error(m->store));
        if (j->array_job_id == 0)
                req.array = (ArraySpec) {};
        r = slurm_submit_build(&req, &p, &s, &reason);
        if (r == -EAGAIN)
                return set_reason(m, j, "Dependency");
        if (r == -EOPNOTSUPP) {
                (void) job_take_launch_error(j, TAKE_PTR(reason));
                return manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "SlurmCannotMap");
        }
        if (r < 0)
                return r;
        path = client_path(m, "sbatch");
        l = link_get(f, j->id, true);
        if (!path || !l)
                return -ENOMEM;
        free(s.argv[0]);
        s.argv[0] = TAKE_PTR(path);
        /* Recorded before sbatch runs, on disk before it starts. */
        l->phase = LINK_SUBMITTING;
        l->in_flight = true;
        if (j->array_job_id) {
                tasks_set(f, j, LINK_SUBMITTING, 0, false);
                l = link_get(f, j->id, false); /* the array of links may have moved */
                l->in_flight = true;
        } else
                (void) link_store(m, l);
        r = manager_commit(m);
        if (r >= 0)
                r = manager_sync(m);
        if (r < 0)
                return r;
        pending = pending_new(f, j->id);
        r = pending ? run(f, j->uid, s.argv, s.env, s.stdin_data, s.umask, on_sbatch, pending) : -ENOMEM;
        if (r < 0) {
                pending_free(pending);
                l->in_flight = false;
                l->phase = LINK_NONE;
                if (j->array_job_id)
                        tasks_set(f, j, LINK_NONE, 0, false);
                else
                        (void) link_store(m, l);
                return log_warning_errno(r, "Job %" PRIu64 ": cannot run sbatch: %m", j->id);
        }
        return 0;
}

/* Whether j's stored request maps to the cluster queue t one to one: only then does it
 * overflow there. */
static bool overflow_maps(Manager *m, Job *j, const QueueConfig *t) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        _cleanup_(slurm_submit_done) SlurmSubmit s = {};
        _cleanup_free_ char *reason = NULL;
        SlurmSubmitParams p;

        if (store_load_request(m->store, j->id, &req) < 0)
                return false;
        p = submit_params(m, j, t);
        return slurm_submit_build(&req, &p, &s, &reason) >= 0; /* what the cluster cannot take waits here */
}

/* OverflowTo=: a local queue's job that has waited OverflowAfterSec= since it became
 * eligible, and waits still for this machine's CPUs or memory (the last pass's reason),
 * goes to the cluster queue, when its request maps there one to one. Arrays and jobs
 * that wait for something else (a dependency, a begin time, a limit) stay. */
static void overflow(Manager *m, uint64_t now) {
        bool any = false;

        /* After every pass: nothing to look at per job unless a queue overflows. */
        for (size_t i = 0; i < m->config->n_queues && !any; i++)
                any = m->config->queues[i].overflow_to && m->config->queues[i].overflow_after;
        if (!any)
                return;
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                const QueueConfig *q, *t;

                if (j->state != JOB_QUEUED || j->array_job_id || j->req.interactive || !j->reason ||
                    (!streq(job_reason(j), "Resources") && !streq(job_reason(j), "Priority")))
                        continue;
                q = config_find_queue(m->config, job_queue(j));
                if (!q || !q->overflow_to || !q->overflow_after || now < j->eligible_time + q->overflow_after)
                        continue;
                t = config_find_queue(m->config, q->overflow_to);
                if (!t || t->backend != QUEUE_BACKEND_SLURM || !overflow_maps(m, j, t))
                        continue;
                log_info("Job %" PRIu64 " overflows from queue %s to %s after %" PRIu64 " s.", j->id, job_queue(j),
                         t->name, now - j->eligible_time);
                j->queue = intern_id(t->name);
                (void) set_reason(m, j, "Overflow");
        }
}

void manager_forward_submit(Manager *m) {
        Forwarder *f = m->forward;
        bool any = false;

        if (!f)
                return;
        overflow(m, (uint64_t) time(NULL));
        /* After every pass: a queue of 100,000 local jobs is not looked through for none. */
        for (size_t i = 0; i < m->config->n_queues && !any; i++)
                any = m->config->queues[i].backend == QUEUE_BACKEND_SLURM;
        for (size_t i = 0; any && i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                const QueueConfig *q;
                Link *l;

                if (j->state != JOB_QUEUED || !manager_job_forwarded(m, j))
                        continue;
                /* An array goes once, with its first task. */
                if (j->array_job_id && j->array_job_id != j->id)
                        continue;
                l = link_get(f, j->id, false);
                if (l && l->phase != LINK_NONE)
                        continue;
                q = config_find_queue(m->config, job_queue(j));
                if (in_flight(f, job_queue(j)) + (j->array_job_id ? array_tasks_waiting(m, j) : 1) > q->max_forwarded &&
                    in_flight(f, job_queue(j)) > 0) {
                        (void) set_reason(m, j, "MaxForwarded");
                        continue;
                }
                (void) forward_one(f, j, q);
        }
}

/* ---- tracking ---- */

/* j's line, or NULL. Two lines for one job, which Slurm does not print, are none of them:
 * *ret_ambiguous says so, nothing is decided. */
static const SlurmJobStatus *status_of_full(const SlurmJobStatus *st, size_t n, const Job *j, uint64_t sid,
                                            bool *ret_ambiguous) {
        const SlurmJobStatus *found = NULL;

        if (ret_ambiguous)
                *ret_ambiguous = false;
        for (size_t i = 0; i < n; i++) {
                bool match = j->array_job_id ? st[i].array_job_id == sid && st[i].array_task_id == j->array_task_id
                                             : st[i].job_id == sid;
                /* Only j's user's squeue is read about j. */
                if (!match || !st[i].user || !job_user(j) || !streq(st[i].user, job_user(j)))
                        continue;
                if (found) {
                        if (ret_ambiguous)
                                *ret_ambiguous = true;
                        return NULL;
                }
                found = &st[i];
        }
        return found;
}

static const SlurmJobStatus *status_of(const SlurmJobStatus *st, size_t n, const Job *j, uint64_t sid) {
        return status_of_full(st, n, j, sid, NULL);
}

/* The id sbatch claimed is not the user's job with this job's key: the job ends, no
 * record of that id read. */
static void link_mismatch(Forwarder *f, Job *j, Link *l, const char *what) {
        Manager *m = f->m;
        char *words;

        log_warning("Job %" PRIu64 ": Slurm job %" PRIu64 ", which sbatch named, %s: not linked.", j->id,
                    l->slurm_id, what);
        if (asprintf(&words, "Slurm job %" PRIu64 ", which sbatch named, %s", l->slurm_id, what) < 0)
                words = NULL;
        (void) job_take_launch_error(j, words);
        l->final_seen = false;
        (void) manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "SlurmIdMismatch");
}

/* START of a job that runs on the cluster: no launch follows here. */
static int start(Manager *m, Job *j) {
        int r;

        if (j->state == JOB_HELD && (r = manager_job_transition(m, j, JOB_EVENT_RELEASE, JOB_QUEUED, NULL)) < 0)
                return r;
        if (j->state == JOB_BLOCKED && (r = manager_job_transition(m, j, JOB_EVENT_UNBLOCK, JOB_QUEUED, NULL)) < 0)
                return r;
        r = manager_job_transition(m, j, JOB_EVENT_START, JOB_RUNNING, NULL);
        (void) manager_job_mark(m, j, JOB_MARK_LAUNCHED, JOB_BY_CORRALD);
        return r;
}

static void finish(Manager *m, Job *j, JobState to, const SlurmJobRecord *rec) {
        const char *reason = to == JOB_COMPLETED ? NULL : job_state_to_string(to);

        if (rec) {
                JobRun *run = job_run_ensure(j); /* short of memory: ended without its usage */

                if (run) {
                        run->exit_code = rec->exit_code;
                        run->exit_signal = rec->exit_signal;
                        run->usage.cpu_usec = rec->cpu_usec;
                        run->usage.memory_peak = rec->max_rss;
                } else
                        log_oom();
        }
        if (job_state_is_pending(j->state)) {
                if (to == JOB_CANCELLED) {
                        (void) manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled");
                        return;
                }
                if (start(m, j) < 0)
                        return;
        }
        /* Charged to its project as any run is, in its queue's name (corral usage --by
         * queue shows the cluster's apart): what Slurm says it ran and used. */
        {
                uint64_t now = (uint64_t) time(NULL);
                uint64_t ran = rec && rec->elapsed_sec ? rec->elapsed_sec : now - MIN(j->start_time, now);
                JobOutcome o = {
                        .id = j->id,
                        .exit_code = job_run(j)->exit_code,
                        .signal = job_run(j)->exit_signal,
                        .start_usec = (now - MIN(ran, now)) * USEC_PER_SEC,
                        .end_usec = now * USEC_PER_SEC,
                        .cpu_usage_usec = job_run(j)->usage.cpu_usec,
                        .memory_peak = job_run(j)->usage.memory_peak,
                };
                (void) accounting_charge_run(m->acct, j, &o, now);
        }
        if (to == JOB_NODE_FAIL)
                (void) manager_job_transition(m, j, JOB_EVENT_NODE_FAIL, JOB_NODE_FAIL, "NodeFail");
        else
                (void) manager_job_transition(m, j, JOB_EVENT_END, to, reason ?: "None");
        /* The end time is Slurm's: the start plus what it ran. */
        if (rec && j->start_time && rec->elapsed_sec && j->start_time + rec->elapsed_sec < j->end_time) {
                j->end_time = j->start_time + rec->elapsed_sec;
                (void) manager_job_save(m, j);
        }
}

static void apply(Forwarder *f, Job *j, const SlurmJobStatus *s) {
        Manager *m = f->m;
        const char *name = slurm_state_to_corral(s->state, s->reason);
        JobState to = name ? job_state_from_string(name) : _JOB_STATE_INVALID;
        char reason[96];

        if (to < 0) {
                log_debug("Job %" PRIu64 ": Slurm state %s not known here, left as it is.", j->id, s->state);
                return;
        }
        snprintf(reason, sizeof reason, "Slurm:%s", s->reason);
        switch (to) {
        case JOB_QUEUED:
                if (j->state == JOB_HELD)
                        (void) manager_job_transition(m, j, JOB_EVENT_RELEASE, JOB_QUEUED, NULL);
                else if (job_state_is_active(j->state)) /* requeued by Slurm */
                        (void) manager_job_transition(m, j, JOB_EVENT_REQUEUE, JOB_QUEUED, "Requeued");
                if (j->state == JOB_QUEUED)
                        (void) set_reason(m, j, reason);
                break;
        case JOB_HELD:
                if (j->state == JOB_QUEUED)
                        (void) manager_job_transition(m, j, JOB_EVENT_HOLD, JOB_HELD, "JobHeldUser");
                else if (job_state_is_active(j->state)) /* scontrol requeuehold */
                        (void) manager_job_transition(m, j, JOB_EVENT_REQUEUE, JOB_HELD, "RequeueHold");
                break;
        case JOB_RUNNING:
                if (job_state_is_pending(j->state))
                        (void) start(m, j);
                else if (j->state == JOB_SUSPENDED)
                        (void) manager_job_transition(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL);
                break;
        case JOB_SUSPENDED:
                if (job_state_is_pending(j->state))
                        (void) start(m, j);
                if (j->state == JOB_RUNNING)
                        (void) manager_job_transition(m, j, JOB_EVENT_SUSPEND, JOB_SUSPENDED, "Slurm:Suspended");
                break;
        default: {
                Link *l = link_get(f, j->id, false);
                if (l)
                        l->final_seen = true;
                break;
        }
        }
}

/* The records of the jobs that ended: sacct where the cluster keeps accounting, else what
 * slurmctld still holds (scontrol); failing both, the state squeue gave. */
typedef struct Records {
        Forwarder *f;
        SlurmJobStatus *st;
        size_t n_st;
        uint64_t *ids;          /* the confirmed ids asked about */
        size_t n_ids, next;     /* scontrol asks for one at a time */
        SlurmJobRecord *rec;    /* scontrol's, gathered */
        size_t n_rec;
} Records;

static void records_apply(Records *rs, const SlurmJobRecord *rec, size_t n) {
        Forwarder *f = rs->f;
        Manager *m = f->m;

        for (size_t i = 0; i < f->n_links; i++) {
                Link *l = &f->links[i];
                Job *j = manager_find_job(m, l->job_id);
                const SlurmJobStatus *s;
                const SlurmJobRecord *r = NULL;
                const char *name;
                uint64_t want;
                JobState to;

                if (!l->final_seen || !j || job_state_is_final(j->state))
                        continue;
                s = status_of(rs->st, rs->n_st, j, l->slurm_id);
                /* A record is an array task's by its own id, which only squeue gives; a job's
                 * by the id it was linked to. */
                want = s ? s->job_id : j->array_job_id ? 0 : l->slurm_id;
                /* The first: a job's name may hold a made-up record after its own. */
                for (size_t k = 0; want && !r && k < n; k++)
                        if (rec[k].job_id == want)
                                r = &rec[k];
                if (r && r->user && (!job_user(j) || !streq(r->user, job_user(j)))) {
                        link_mismatch(f, j, l, "is another user's");
                        continue;
                }
                name = slurm_state_to_corral(r ? r->state : s ? s->state : NULL, s ? s->reason : NULL);
                to = name ? job_state_from_string(name) : _JOB_STATE_INVALID;
                if (to < 0 || !job_state_is_final(to))
                        continue;
                finish(m, j, to, r);
                l->final_seen = false;
        }
        /* Ended jobs need their link no more. */
        for (size_t i = 0; i < f->n_links;) {
                Job *j = manager_find_job(m, f->links[i].job_id);
                if (!j || job_state_is_final(j->state))
                        link_drop(f, f->links[i].job_id);
                else
                        i++;
        }
}

static void records_free(Records *rs) {
        if (!rs)
                return;
        if (rs->f->records == rs)
                rs->f->records = NULL;
        slurm_job_status_free_many(rs->st, rs->n_st);
        slurm_job_record_free_many(rs->rec, rs->n_rec);
        free(rs->ids);
        free(rs);
}

static void records_done(Records *rs, const SlurmJobRecord *rec, size_t n) {
        Forwarder *f = rs->f;

        records_apply(rs, rec, n);
        f->poll_in_flight = false;
        f->polls++;
        records_free(rs);
}

static void on_scontrol(int error, const char *out, const char *err, void *userdata);

/* scontrol --oneliner show job ID for the next id, or the records gathered applied. Only
 * the linked ids are asked for: another job's name cannot make up a record among them. */
static void scontrol_next(Records *rs) {
        Forwarder *f = rs->f;
        _cleanup_free_ char *path = NULL;
        char id[24];

        if (rs->next >= rs->n_ids) {
                records_done(rs, rs->rec, rs->n_rec);
                return;
        }
        snprintf(id, sizeof id, "%" PRIu64, rs->ids[rs->next++]);
        path = client_path(f->m, "scontrol");
        if (!path || run(f, 0, (char *[]) { path, (char *) "--oneliner", (char *) "show", (char *) "job", id, NULL },
                         NULL, NULL, 0022, on_scontrol, rs) < 0)
                records_done(rs, rs->rec, rs->n_rec);
}

static void on_scontrol(int error, const char *out, const char *err, void *userdata) {
        Records *rs = userdata;
        SlurmJobRecord *rec = NULL;
        size_t n = 0;
        int r;

        r = error < 0 ? error : slurm_parse_scontrol(out, &rec, &n);
        if (r > 0)
                log_debug("scontrol: %d line(s) not a job's record, skipped.", r);
        /* The first record of the id asked for, the job's own; the rest is its name's. */
        for (size_t k = 0; r >= 0 && k < n; k++) {
                SlurmJobRecord *grown;

                if (rec[k].job_id != rs->ids[rs->next - 1])
                        continue;
                grown = reallocarray(rs->rec, rs->n_rec + 1, sizeof *grown);
                if (!grown)
                        break;
                rs->rec = grown;
                rs->rec[rs->n_rec++] = rec[k];
                rec[k] = rec[--n]; /* moved out of the array */
                break;
        }
        slurm_job_record_free_many(rec, n);
        scontrol_next(rs);
}

static void on_sacct(int error, const char *out, const char *err, void *userdata) {
        Records *rs = userdata;
        SlurmJobRecord *rec = NULL;
        size_t n = 0;
        int r = -EIO;

        if (error >= 0 && isempty(err))
                r = slurm_parse_sacct(out, &rec, &n);
        if (r > 0)
                log_debug("sacct: %d line(s) not a job's record, skipped.", r);
        if (r >= 0 && n > 0) {
                records_done(rs, rec, n);
                slurm_job_record_free_many(rec, n);
                return;
        }
        slurm_job_record_free_many(rec, n);
        /* No slurmdbd (a small cluster): what slurmctld keeps of ended jobs, MinJobAge. */
        scontrol_next(rs);
}

/* A poll is a round of squeues, one at a time: one per user with forwarded jobs, in a
 * format that prints nothing a user writes (SLURM_SQUEUE_FORMAT), which alone says a job's
 * state and whose an id is; one user's output is read about that user's own jobs only.
 * Then, where a crash left a job "submitting", one per such user of the keys
 * (SLURM_SQUEUE_KEYS_FORMAT), whose comments are the user's text: a key is adopted only
 * on an id the first squeue showed as that user's. A user's squeue that fails costs that
 * user's jobs only (see squeue_cluster_down()). */
typedef struct Round {
        char **users;
        size_t next_user;
        char **failed;          /* the users whose squeue failed: their links are left as they are */
        SlurmJobStatus *st;     /* each user's lines about that user's jobs */
        size_t n_st;
        int skipped;
        char **key_users;       /* the users whose keys are looked for, after a crash */
        size_t next_key_user;
        char **keys_failed;     /* those whose squeue of keys failed: their jobs wait */
        SlurmJobStatus *keys;   /* each such user's lines of keys, about that user's jobs */
        size_t n_keys;
} Round;

static Round *round_free(Round *rd) {
        if (!rd)
                return NULL;
        strv_free(rd->users);
        strv_free(rd->failed);
        slurm_job_status_free_many(rd->st, rd->n_st);
        strv_free(rd->key_users);
        strv_free(rd->keys_failed);
        slurm_job_status_free_many(rd->keys, rd->n_keys);
        return mfree(rd);
}

static void round_end(Forwarder *f) {
        f->round = round_free(f->round);
        f->poll_in_flight = false;
}

/* Whether a failed squeue says that the cluster, or this machine's way of asking it, is
 * down, rather than something about the users it asked about. A user's own failure (Slurm
 * knows no such user, "Invalid user: bob", as on a cluster where bob has no account; an
 * output over the executor's bound, which that user's comments can make in a squeue of
 * keys) must not stop
 * the forwarding of everybody's jobs: the round goes on with the others, and that user's
 * links are left as they are until a squeue of theirs answers. The round is the
 * cluster's failure (round_unreachable(): every queued job says SlurmUnreachable) when
 *   - the client says it cannot reach slurmctld (slurm_unreachable(), sbatch's words
 *     too), or the command did not run at all (systemd refused to start it: -EIO): no
 *     other user's squeue would fare better, so none is run;
 *   - or every user's squeue failed (on_squeue()): when the cluster answered nothing
 *     about anybody, an error not known to be the controller's is more likely its than
 *     every user's at once. A round of one user fails as a whole, as it always did. */
static bool squeue_cluster_down(int error, const char *err) {
        return (error < 0 && error != -EFBIG) || slurm_unreachable(err);
}

static void round_unreachable(Forwarder *f, const char *what) {
        log_full(f->unreachable ? LOG_DEBUG : LOG_WARNING, "Cannot poll the Slurm jobs%s: %s",
                 f->unreachable ? "" : " (said again only once the cluster has answered)", what);
        f->unreachable = true;
        /* Jobs waiting here for the cluster say why; those on it keep their state. */
        for (size_t i = 0; i < f->n_links; i++) {
                Job *j = manager_find_job(f->m, f->links[i].job_id);
                if (j && j->state == JOB_QUEUED)
                        (void) set_reason(f->m, j, "SlurmUnreachable");
        }
        round_end(f);
}

/* Root only reads here: it sees every user's jobs even where PrivateData=jobs. */
static int run_squeue(Forwarder *f, const char *users, const char *format, ExecutorCommandDone done) {
        _cleanup_free_ char *path = client_path(f->m, "squeue"), *fmt = NULL;
        Pending *p;
        int r;

        if (!path || asprintf(&fmt, "--format=%s", format) < 0 || !(p = pending_new(f, 0)))
                return -ENOMEM;
        r = run(f, 0, (char *[]) { path, (char *) "--noheader", (char *) "--array", (char *) "--states=all",
                                   (char *) "--users", (char *) users, fmt, NULL },
                NULL, NULL, 0022, done, p);
        if (r < 0)
                pending_free(p);
        return r;
}

/* The owner of Slurm job sid (an array: of its tasks) in the users' squeues, or NULL. */
static const char *owner_of(const SlurmJobStatus *ids, size_t n, uint64_t sid) {
        for (size_t i = 0; i < n; i++)
                if (ids[i].job_id == sid || ids[i].array_job_id == sid)
                        return ids[i].user;
        return NULL;
}

/* Whether Slurm job sid is the link of another job here than j (an array's tasks share
 * theirs): what no user writes, against one Slurm job taken for two. */
static bool linked_elsewhere(Forwarder *f, const Job *j, uint64_t sid) {
        for (size_t i = 0; i < f->n_links; i++) {
                const Link *o = &f->links[i];
                const Job *oj;

                if (o->job_id == j->id || o->phase != LINK_LINKED || o->slurm_id != sid)
                        continue;
                /* One ended by this very round still counts: two claims of one id are
                 * both refused, whichever is judged first. */
                oj = manager_find_job(f->m, o->job_id);
                if (!oj || (oj->array_job_id ?: oj->id) != (j->array_job_id ?: j->id))
                        return true;
        }
        return false;
}

typedef struct Adopt {
        Forwarder *f;
        const SlurmJobStatus *st;
        size_t n_st;
        const Job *j;
} Adopt;

/* A key claims sid: adopted only if the user's squeue showed sid as theirs, and no other
 * job here holds it. */
static bool adoptable(uint64_t sid, void *userdata) {
        const Adopt *a = userdata;
        const char *owner = owner_of(a->st, a->n_st, sid);

        return owner && job_user(a->j) && streq(owner, job_user(a->j)) && !linked_elsewhere(a->f, a->j, sid);
}

static void round_decide(Forwarder *f) {
        Manager *m = f->m;
        Round *rd = f->round;
        SlurmJobStatus *st = TAKE_PTR(rd->st);
        _cleanup_strv_free_ char **failed = TAKE_PTR(rd->failed), **key_users = TAKE_PTR(rd->key_users),
                                 **keys_failed = TAKE_PTR(rd->keys_failed);
        SlurmJobStatus *keys = TAKE_PTR(rd->keys);
        size_t n = rd->n_st, n_keys = rd->n_keys;
        bool any_final = false;
        _cleanup_free_ char *ids_arg = NULL, *path = NULL;
        _cleanup_free_ uint64_t *id_list = NULL;
        size_t n_ids = 0;
        Records *rs;

        rd->n_st = rd->n_keys = 0;
        if (rd->skipped > 0)
                log_debug("squeue: %d line(s) not a job's, skipped.", rd->skipped);
        f->round = round_free(rd);
        for (size_t i = 0; i < f->n_links; i++) {
                Link *l = &f->links[i];
                Job *j = manager_find_job(m, l->job_id);
                const SlurmJobStatus *s;
                const char *owner;
                bool ambiguous;

                if (!j || job_state_is_final(j->state))
                        continue;
                if (job_user(j) && strv_contains(failed, job_user(j))) {
                        /* Its user's squeue failed: its absence from the output says nothing
                         * (not ended, not another's, not lost), so nothing changes but the
                         * reason of a job still waiting. */
                        if (j->state == JOB_QUEUED && l->phase != LINK_NONE)
                                (void) set_reason(m, j, "SlurmPollFailed");
                        continue;
                }
                if (l->phase == LINK_SUBMITTING && !l->in_flight) {
                        /* Left by a crash between sbatch and the commit: adopt or resubmit,
                         * once its user's keys are known (its key may be among them). */
                        Adopt a = { .f = f, .st = st, .n_st = n, .j = j };
                        uint64_t sid;

                        if (!job_user(j) || !strv_contains(key_users, job_user(j)) ||
                            strv_contains(keys_failed, job_user(j)))
                                continue;
                        if (slurm_find_key(keys, n_keys, m->hostname, j->array_job_id ?: j->id, job_user(j), adoptable,
                                           &a, &sid) >= 0) {
                                log_notice("Job %" PRIu64 " was already Slurm job %" PRIu64 ": adopted.", j->id, sid);
                                l->phase = LINK_LINKED;
                                l->slurm_id = sid;
                                l->confirmed = true; /* the user's, with the key */
                        } else
                                l->phase = LINK_NONE;
                        (void) link_store(m, l);
                        m->sched_needed = true;
                }
                if (l->phase != LINK_LINKED)
                        continue;
                s = status_of_full(st, n, j, l->slurm_id, &ambiguous);
                if (ambiguous) {
                        log_warning("Job %" PRIu64 ": squeue shows Slurm job %" PRIu64 " twice: left as it is.", j->id,
                                    l->slurm_id);
                        continue;
                }
                if (!l->confirmed) {
                        /* Linked after this round began: the next round's. */
                        if (l->linked_poll == f->poll_seq)
                                continue;
                        /* The user's squeue has the user's jobs only: another's id is not
                         * among them. */
                        owner = owner_of(st, n, l->slurm_id);
                        if (!owner || !job_user(j) || !streq(owner, job_user(j))) {
                                link_mismatch(f, j, l, "is not among the user's Slurm jobs");
                                continue;
                        }
                        if (linked_elsewhere(f, j, l->slurm_id)) {
                                link_mismatch(f, j, l, "is another job's here");
                                continue;
                        }
                        l->confirmed = true;
                        (void) link_store(m, l);
                }
                if (s)
                        apply(f, j, s);
                else
                        l->final_seen = true; /* gone from slurmctld's memory: ended */
                any_final = any_final || l->final_seen;
        }
        slurm_job_status_free_many(keys, n_keys);
        rs = new0(Records, 1);
        if (!rs) {
                slurm_job_status_free_many(st, n);
                f->poll_in_flight = false;
                return;
        }
        *rs = (Records) { .f = f, .st = st, .n_st = n };
        f->records = rs;
        if (!any_final) {
                records_apply(rs, NULL, 0);
                f->poll_in_flight = false;
                f->polls++;
                records_free(rs);
                return;
        }
        for (size_t i = 0; i < f->n_links; i++) {
                const SlurmJobStatus *s;
                Job *j = manager_find_job(m, f->links[i].job_id);
                uint64_t want, *grown;
                char *x;

                /* Only confirmed links are final_seen: no record of a claimed id is read. */
                if (!f->links[i].final_seen || !f->links[i].confirmed || !j)
                        continue;
                s = status_of(st, n, j, f->links[i].slurm_id);
                want = s ? s->job_id : f->links[i].slurm_id;
                if (asprintf(&x, "%s%s%" PRIu64, strempty(ids_arg), ids_arg ? "," : "", want) < 0)
                        break;
                free(ids_arg);
                ids_arg = x;
                grown = reallocarray(id_list, n_ids + 1, sizeof *grown);
                if (!grown)
                        break;
                id_list = grown;
                id_list[n_ids++] = want;
        }
        rs->ids = TAKE_PTR(id_list);
        rs->n_ids = n_ids;
        path = client_path(m, "sacct");
        if (!ids_arg || !path ||
            run(f, 0, (char *[]) { path, (char *) "--noheader", (char *) "--parsable2", (char *) "--jobs", ids_arg,
                                   (char *) "--format=" SLURM_SACCT_FORMAT, NULL },
                NULL, NULL, 0022, on_sacct, rs) < 0)
                on_sacct(-ENOMEM, "", "", rs);
}

static bool squeue_failed(int error, const char *out, const char *err, int r) {
        return error < 0 || (isempty(out) && !isempty(err)) || r < 0;
}

static const char *squeue_error(int error, const char *err) {
        return !isempty(err) ? err : strerror(error < 0 ? -error : EBADMSG);
}

static void on_squeue_keys(int error, const char *out, const char *err, void *userdata);

/* The next user's squeue of keys, or the round decided. */
static void round_next_key(Forwarder *f) {
        Round *rd = f->round;

        if (!rd->key_users || !rd->key_users[rd->next_key_user]) {
                round_decide(f);
                return;
        }
        if (run_squeue(f, rd->key_users[rd->next_key_user], SLURM_SQUEUE_KEYS_FORMAT, on_squeue_keys) < 0) {
                log_warning("Cannot run squeue.");
                round_end(f);
        }
}

/* A user's lines kept in *a (those of another user are made up, dropped and counted). */
static int round_keep(Round *rd, SlurmJobStatus **a, size_t *n_a, SlurmJobStatus *st, size_t n, const char *user) {
        SlurmJobStatus *grown = n > 0 ? reallocarray(*a, *n_a + n, sizeof *grown) : *a;

        if (n > 0 && !grown) {
                slurm_job_status_free_many(st, n);
                return -ENOMEM;
        }
        *a = grown;
        for (size_t i = 0; i < n; i++) {
                if (st[i].user && streq(st[i].user, user)) {
                        (*a)[(*n_a)++] = st[i];
                        continue;
                }
                rd->skipped++;
                free(st[i].state);
                free(st[i].reason);
                free(st[i].user);
                free(st[i].comment);
        }
        free(st);
        return 0;
}

/* One user's squeue of the round answered (keys: of the keys, else of the states): its
 * lines in *ret_st and *ret_n, the user it was for in *ret_user. The number of lines
 * skipped, -EIO when that user's squeue failed (the caller says so, the round goes on),
 * -ECANCELED when the round is over (gone, or the cluster is down: said here). */
static int squeue_answered(Pending *p, int error, const char *out, const char *err, bool keys,
                           SlurmJobStatus **ret_st, size_t *ret_n, const char **ret_user) {
        Forwarder *f = p->f;
        Round *rd = f->round;
        int r = -EBADMSG;

        *ret_st = NULL, *ret_n = 0, *ret_user = NULL;
        pending_free(p);
        if (!rd)
                return -ECANCELED;
        if (error >= 0)
                r = keys ? slurm_parse_squeue_keys(out, ret_st, ret_n) : slurm_parse_squeue(out, ret_st, ret_n);
        *ret_user = keys ? rd->key_users[rd->next_key_user++] : rd->users[rd->next_user++];
        if (!squeue_failed(error, out, err, r))
                return r;
        slurm_job_status_free_many(*ret_st, *ret_n);
        *ret_st = NULL, *ret_n = 0;
        if (squeue_cluster_down(error, err)) {
                round_unreachable(f, squeue_error(error, err));
                return -ECANCELED;
        }
        return -EIO;
}

static void on_squeue_keys(int error, const char *out, const char *err, void *userdata) {
        Forwarder *f = ((Pending *) userdata)->f;
        SlurmJobStatus *st;
        const char *user;
        size_t n;
        int r = squeue_answered(userdata, error, out, err, true, &st, &n, &user);
        Round *rd = f->round;

        if (r == -ECANCELED)
                return;
        if (r < 0) {
                /* Its jobs left "submitting" wait for the next round: their keys may be
                 * among what did not come. */
                log_warning("Cannot look for the keys among the Slurm jobs of user %s: %s", user,
                            squeue_error(error, err));
                if (strv_extend(&rd->keys_failed, user) < 0) {
                        round_end(f);
                        return;
                }
                round_next_key(f);
                return;
        }
        rd->skipped += r;
        if (round_keep(rd, &rd->keys, &rd->n_keys, st, n, user) < 0) {
                round_end(f);
                return;
        }
        round_next_key(f);
}

/* After the users' squeues: the keys of the users whose jobs a crash left "submitting". */
static void round_keys(Forwarder *f) {
        Manager *m = f->m;
        Round *rd = f->round;

        for (size_t i = 0; i < f->n_links; i++) {
                Link *l = &f->links[i];
                Job *j = manager_find_job(m, l->job_id);

                if (!j || job_state_is_final(j->state) || !job_user(j) || strv_contains(rd->failed, job_user(j)) ||
                    l->phase != LINK_SUBMITTING || l->in_flight || strv_contains(rd->key_users, job_user(j)))
                        continue;
                if (strv_extend(&rd->key_users, job_user(j)) < 0) {
                        round_end(f);
                        return;
                }
        }
        round_next_key(f);
}

static void on_squeue(int error, const char *out, const char *err, void *userdata);

static void round_next(Forwarder *f) {
        Round *rd = f->round;

        if (!rd->users[rd->next_user]) {
                round_keys(f);
                return;
        }
        if (run_squeue(f, rd->users[rd->next_user], SLURM_SQUEUE_FORMAT, on_squeue) < 0) {
                log_warning("Cannot run squeue.");
                round_end(f);
        }
}

static void on_squeue(int error, const char *out, const char *err, void *userdata) {
        Forwarder *f = ((Pending *) userdata)->f;
        SlurmJobStatus *st;
        const char *user;
        size_t n;
        int r = squeue_answered(userdata, error, out, err, false, &st, &n, &user);
        Round *rd = f->round;

        if (r == -ECANCELED)
                return;
        if (r < 0) {
                bool known = strv_contains(f->users_failing, user);

                log_full(known ? LOG_DEBUG : LOG_WARNING, "Cannot poll the Slurm jobs of user %s%s: %s", user,
                         known ? "" : " (said again only once theirs has answered)", squeue_error(error, err));
                if (!known)
                        (void) strv_extend(&f->users_failing, user); /* short of memory: said again */
                if (strv_extend(&rd->failed, user) < 0) {
                        round_end(f);
                        return;
                }
                if (strv_length(rd->failed) == strv_length(rd->users)) {
                        round_unreachable(f, "no user's squeue answered");
                        return;
                }
                round_next(f);
                return;
        }
        if (strv_remove(f->users_failing, user))
                log_notice("The Slurm jobs of user %s can be polled again.", user);
        if (f->unreachable) {
                log_notice("The Slurm cluster answers again.");
                f->unreachable = false;
        }
        rd->skipped += r;
        /* Only this user's jobs are asked for: a line of another's is none of Slurm's. */
        if (round_keep(rd, &rd->st, &rd->n_st, st, n, user) < 0) {
                round_end(f);
                return;
        }
        round_next(f);
}

void manager_forward_poll(Manager *m) {
        Forwarder *f = m->forward;
        _cleanup_strv_free_ char **users = NULL;

        if (!f || f->poll_in_flight)
                return;
        for (size_t i = 0; i < f->n_links; i++) {
                Job *j = manager_find_job(m, f->links[i].job_id);
                if (j && j->user && f->links[i].phase != LINK_NONE && !f->links[i].in_flight &&
                    !strv_contains(users, job_user(j)) && strv_extend(&users, job_user(j)) < 0)
                        return;
        }
        /* Who has no forwarded job left is not polled: forgotten, so that a failure of a
         * later job's poll is said again. */
        strv_keep_listed(f->users_failing, users);
        if (!users)
                return;
        f->round = new0(Round, 1);
        if (!f->round)
                return;
        f->round->users = TAKE_PTR(users);
        f->poll_in_flight = true;
        f->poll_seq++;
        round_next(f);
}

static int on_poll_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_forward_poll(m);
        /* Jobs that could not go (the cluster was unreachable) are tried again now. */
        manager_forward_submit(m);
        return sd_event_source_set_time_relative(s, m->config->slurm_poll_sec * UINT64_C(1000000));
}

/* ---- passing through ---- */

int manager_forward_cancel(Manager *m, Job *j) {
        Forwarder *f = m->forward;
        Link *l = f ? link_get(f, j->id, false) : NULL;

        if (!l || l->phase == LINK_NONE)
                return 0; /* only here: cancelled here */
        (void) manager_job_mark(m, j, JOB_MARK_CANCEL, JOB_BY_CORRALD);
        if (l->phase == LINK_LINKED)
                (void) user_command(f, j, "scancel", NULL, NULL);
        if (job_state_is_pending(j->state))
                /* Slurm's answer cannot undo it: the poll ignores ended jobs. */
                return manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled") < 0 ? -EIO : 1;
        return 1;
}

/* Slurm requeues the same Slurm job (same id, same key): the poll then sees it pending and
 * the job goes back to the queue here (held for requeuehold). */
int manager_forward_requeue(Manager *m, Job *j, bool hold) {
        Forwarder *f = m->forward;
        Link *l = f ? link_get(f, j->id, false) : NULL;
        int r;

        if (!l || l->phase != LINK_LINKED || !l->confirmed)
                return -EAGAIN;
        r = user_command(f, j, "scontrol", hold ? "requeuehold" : "requeue", NULL);
        if (r < 0)
                return r;
        (void) job_set_reason(j, hold ? "RequeueHold" : "Requeue");
        return 0;
}

void manager_forward_hold(Manager *m, Job *j, bool hold) {
        Forwarder *f = m->forward;
        Link *l = f ? link_get(f, j->id, false) : NULL;

        if (l && l->phase == LINK_LINKED)
                (void) user_command(f, j, "scontrol", hold ? "hold" : "release", NULL);
}

/* ---- life cycle ---- */

int manager_forward_start(Manager *m) {
        Forwarder *f;
        int r;

        f = new0(Forwarder, 1);
        if (!f)
                return -ENOMEM;
        f->m = m;
        f->ops = &executor_runner_ops;
        f->ops_userdata = m;
        m->forward = f;
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                _cleanup_free_ char *v = NULL;
                char key[48];
                uint64_t sid;
                Link *l;

                if (job_state_is_final(j->state) || !manager_job_forwarded(m, j))
                        continue;
                snprintf(key, sizeof key, "forward.%" PRIu64, j->id);
                if (store_get_meta(m->store, key, &v) < 0 || !v)
                        continue;
                if (!(l = link_get(f, j->id, true)))
                        return -ENOMEM;
                if (streq(v, "submitting"))
                        l->phase = LINK_SUBMITTING;
                else if (sscanf(v, "linked %" SCNu64, &sid) == 1) {
                        l->phase = LINK_LINKED, l->slurm_id = sid;
                        l->confirmed = strstr(v, " confirmed") != NULL;
                }
        }
        if (m->event) {
                r = sd_event_add_time_relative(m->event, &f->poll_timer, CLOCK_MONOTONIC,
                                               m->config->slurm_poll_sec * UINT64_C(1000000), 0, on_poll_timer, m);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_enabled(f->poll_timer, SD_EVENT_ON);
        }
        return 0;
}

void manager_forward_set_runner(Manager *m, const ForwardRunnerOps *ops, void *userdata) {
        m->forward->ops = ops;
        m->forward->ops_userdata = userdata;
}

unsigned manager_forward_polls(Manager *m) {
        return m->forward ? m->forward->polls : 0;
}

void manager_forward_free(Manager *m) {
        Forwarder *f = m->forward;

        if (!f)
                return;
        sd_event_source_disable_unref(f->poll_timer);
        while (f->pending)
                pending_free(f->pending);
        f->round = round_free(f->round);
        records_free(f->records);
        free(f->links);
        strv_free(f->users_failing);
        free(f);
        m->forward = NULL;
}

/* ---- the backend's table ---- */

static int slurm_check_request(Manager *m, const SubmitRequest *req, const QueueConfig *q, const char **ret_field,
                               char **ret_refusal) {
        if (!req->interactive)
                return 0;
        *ret_field = "interactive";
        if (asprintf(ret_refusal, "queue %s hands its jobs to a Slurm cluster: an interactive job runs here "
                     "(corral run --queue LOCAL-QUEUE, or the cluster's own srun --pty)", q->name) < 0)
                return -ENOMEM;
        return -EINVAL;
}

/* Refused now, with the reason, rather than failed on the cluster later. */
static int slurm_check_submit(Manager *m, const SubmitRequest *req, const QueueConfig *q, const char *user,
                              const char *project, const char **ret_field, char **ret_refusal) {
        int r = manager_forward_check(m, req, q, user, project, ret_refusal);

        if (r == -EOPNOTSUPP) {
                *ret_field = "queue";
                return -EINVAL;
        }
        return r;
}

/* The forwarded jobs' links to their Slurm jobs: those run on the cluster, not here. */
static int slurm_adopt(Manager *m, bool rebooted) {
        int r = manager_forward_start(m);

        if (r < 0)
                return log_error_errno(r, "Cannot load the forwarded jobs' links: %m");
        return 0;
}

static int slurm_committed(Manager *m) {
        manager_forward_submit(m);
        return 0;
}

static int slurm_cancel(Manager *m, Job *j, JobActor by) {
        int r = manager_forward_cancel(m, j);

        if (r != 0)
                return r < 0 ? r : 0;
        /* Only here: cancelled here. */
        if (job_state_is_pending(j->state))
                return manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled");
        (void) manager_job_mark(m, j, JOB_MARK_CANCEL, by);
        return 0;
}

static void slurm_held(Manager *m, Job *j, bool hold) {
        manager_forward_hold(m, j, hold);
}

static int slurm_requeue(Manager *m, Job *j, bool hold, JobActor by, char **ret_refusal) {
        const char *why;
        int r;

        /* Its Slurm job is finished and forgotten: a new one would carry the same key as the
         * old, which slurmctld may still show. */
        if (job_state_is_final(j->state))
                why = "a finished job of a queue that forwards to Slurm is not requeued: submit it again";
        else {
                r = manager_forward_requeue(m, j, hold);
                if (r != -EAGAIN)
                        return r;
                why = "its Slurm job is not confirmed yet: try again after the next poll";
        }
        *ret_refusal = strdup(why);
        return *ret_refusal ? -EINVAL : -ENOMEM;
}

/* scancel --signal on the cluster, as the user; best effort as cancel's: what scancel says
 * is logged. */
static int slurm_signal(Manager *m, Job *j, int sig, bool batch_only, char **ret_refusal) {
        Forwarder *f = m->forward;
        Link *l = f ? link_get(f, j->id, false) : NULL;
        char option[32];

        if (!l || l->phase != LINK_LINKED) {
                *ret_refusal = strdup("its Slurm job is not submitted yet: try again after the next poll");
                return *ret_refusal ? -EOPNOTSUPP : -ENOMEM;
        }
        snprintf(option, sizeof option, "--signal=%d", sig);
        return user_command(f, j, "scancel", batch_only ? "--batch" : NULL, option);
}

static int slurm_freeze(Manager *m, Job *j, bool freeze, executor_done_t done, void *userdata) {
        return -EOPNOTSUPP; /* the cluster's administrators' (scontrol suspend) */
}

/* A forwarded job's output is where Slurm wrote it, never in this journal: without a file
 * of its own, Slurm's slurm-%j.out, which holds its stderr too. */
static int slurm_output(Manager *m, const Job *j, char **ret_default, bool *ret_in_journal) {
        int r = manager_forward_output_path(m, j, ret_default);

        *ret_in_journal = false;
        return r < 0 ? r : 0;
}

static bool reason_is(const Job *j, const char *r) {
        return job_reason(j) && streq(job_reason(j), r);
}

/* One sentence of corral why's answer. */
#define say json_array_add_printf

/* The cluster decides, not this machine's passes. */
static int slurm_why(Manager *m, const Job *j, json_object *o, json_object *why) {
        const QueueConfig *q = config_find_queue(m->config, job_queue(j));
        uint64_t sid = manager_job_slurm_id(m, j);
        const char *reason = job_reason(j);
        const char *word = reason && strncmp(reason, "Slurm:", 6) == 0 ? reason + 6 : strempty(reason);
        uint64_t every = m->config->slurm_poll_sec;

        if (job_state_is_final(j->state))
                return 0;
        if (sid)
                json_add_u64(o, "slurm_job_id", sid);
        /* The poll's failures are corrald's words, not Slurm's reason for the job. */
        if (reason_is(j, "SlurmPollFailed"))
                say(why, "the cluster's squeue of %s's jobs failed (corrald's log says how): its state here is left "
                    "as it was until one answers, asked again every %" PRIu64 " s", strna(job_user(j)), every);
        else if (sid && reason_is(j, "SlurmUnreachable"))
                say(why, "it is Slurm job %" PRIu64 " of a cluster whose controller did not answer the last poll; "
                    "it is asked again every %" PRIu64 " s", sid, every);
        else if (sid)
                say(why, "it is Slurm job %" PRIu64 " of the cluster (partition %s); Slurm says: %s", sid,
                    q && q->slurm_partition ? q->slurm_partition : "the default", word);
        else if (reason_is(j, "SlurmUnreachable"))
                say(why, "queue %s forwards to a Slurm cluster whose controller did not answer; it is tried "
                    "again every %" PRIu64 " s", job_queue(j), every);
        else if (reason_is(j, "MaxForwarded"))
                say(why, "queue %s already has its MaxForwarded=%u jobs on the cluster", job_queue(j),
                    q ? q->max_forwarded : 0);
        else if (j->state != JOB_HELD)
                say(why, "queue %s forwards to a Slurm cluster: it goes there at the next pass", job_queue(j));
        /* A hold is this machine's: said as any job's. */
        return j->state != JOB_HELD;
}

/* Its Slurm job, in Slurm's words. */
static int slurm_reason(Manager *m, const Job *j, char **ret) {
        uint64_t sid = manager_job_slurm_id(m, j);
        const char *reason = job_reason(j);
        const char *word = reason && strncmp(reason, "Slurm:", 6) == 0 ? reason + 6 : reason;

        *ret = NULL;
        if (!sid)
                return 0;
        if (asprintf(ret, "Slurm job %" PRIu64 "%s%s", sid, word ? ": " : "", strempty(word)) < 0)
                return -ENOMEM;
        return 1;
}

const JobBackendOps job_backend_slurm = {
        .name = "slurm",
        .scheduled_here = false,
        .sends_mail = false,
        .check_request = slurm_check_request,
        .check_submit = slurm_check_submit,
        .adopt = slurm_adopt,
        .committed = slurm_committed,
        .free = manager_forward_free,
        .cancel = slurm_cancel,
        .signal = slurm_signal,
        .held = slurm_held,
        .requeue = slurm_requeue,
        .freeze = slurm_freeze,
        .output = slurm_output,
        .why = slurm_why,
        .reason = slurm_reason,
};
