/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "message.h"
#include "server.h"
#include "strv.h"
#include "time-util.h"
#include "topology.h"

/* Final jobs stay in memory (for show/wait/dependencies) this long. */
#define FINISHED_KEEP_SEC (24 * 3600)
#define SCHED_INTERVAL_USEC (30 * UINT64_C(1000000))

static uint64_t now_sec(void) {
        return (uint64_t) time(NULL);
}



/* ---- the job table: sorted by id, binary search ---- */

Job *manager_find_job(Manager *m, uint64_t id) {
        size_t lo = 0, hi = m->n_jobs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (m->jobs[mid]->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < m->n_jobs && m->jobs[lo]->id == id ? m->jobs[lo] : NULL;
}

int manager_add_job(Manager *m, Job *j) {
        /* New ids are the highest: an append. Loading from the store is in id order too. */
        if (m->n_jobs > 0 && m->jobs[m->n_jobs - 1]->id >= j->id)
                return -EINVAL;
        if (!GREEDY_REALLOC(m->jobs, m->allocated_jobs, m->n_jobs + 1))
                return -ENOMEM;
        m->jobs[m->n_jobs++] = j;
        if (j->id >= m->next_id)
                m->next_id = j->id + 1;
        return 0;
}

static void manager_purge_finished(Manager *m, uint64_t now) {
        size_t k = 0;

        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                if (job_state_is_final(j->state) && j->end_time + FINISHED_KEEP_SEC < now)
                        job_free(j);
                else
                        m->jobs[k++] = j;
        }
        m->n_jobs = k;
}

static void schedule_soon(Manager *m) {
        m->sched_needed = true;
}

json_object *manager_job_json(Manager *m, const Job *j, bool details) {
        JobInfo info;
        json_object *o = NULL;

        SubmitRequest full = SUBMIT_REQUEST_INIT;
        bool have_full = details && store_load_request(m->store, j->id, &full) >= 0;
        int r = job_to_info(j, details, have_full ? &full : NULL, m->hostname, &info);
        submit_request_done(&full);
        if (r < 0)
                return NULL;
        if (job_info_to_json(&info, details, &o) < 0)
                o = NULL;
        job_info_done(&info);
        if (o && job_state_is_pending(j->state)) {
                if (j->est_start && j->est_start != SCHED_TIME_INFINITY)
                        json_object_object_add(o, "est_start", json_object_new_uint64(j->est_start));
                json_object_object_add(o, "priority", json_object_new_double(j->priority));
        }
        return o;
}

/* A launch that failed: the words (systemd's refusal, the supervisor's "cannot open
 * /home/alice/out: Permission denied") may name paths and argv, so they go to the owner's
 * view and the log only; the public queue says "LaunchFailed". */
static int job_launch_failed(Manager *m, Job *j, JobState state, const char *detail) {
        free(j->launch_error);
        j->launch_error = detail ? strndup(detail, 1024) : NULL;
        return manager_job_transition(m, j, JOB_EVENT_END, state, "LaunchFailed");
}

/* ---- executor callbacks ---- */

static void on_job_started(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        Manager *m = userdata;
        Job *j = manager_find_job(m, id);

        if (!j)
                return;
        j->launching = false;
        if (error < 0) {
                log_error_errno(error, "Job %" PRIu64 " could not be started: %s", id, strna(message));
                (void) job_launch_failed(m, j, j->cancel_requested ? JOB_CANCELLED : JOB_FAILED,
                                         message ?: strerror(-error));
                return;
        }
        log_info("Job %" PRIu64 " started in corral-job-%" PRIu64 ".scope.", id, id);
        if (j->cancel_requested && executor_cancel(m->executor, id, NULL, NULL) < 0)
                log_warning("Cannot cancel job %" PRIu64 " right after its start.", id);
}

static void on_job_finished(Executor *e, const JobOutcome *o, void *userdata) {
        Manager *m = userdata;
        Job *j = manager_find_job(m, o->id);
        const char *reason = NULL;
        char buf[512];
        JobState state;

        if (!GREEDY_REALLOC(m->outcomes_done, m->allocated_outcomes_done, m->n_outcomes_done + 1))
                return;
        m->outcomes_done[m->n_outcomes_done++] = o->id;
        if (!j || !job_state_is_active(j->state))
                return; /* recorded before (seen twice after a restart), or not ours */

        j->usage = (JobUsage) { .cpu_usec = o->cpu_usage_usec, .memory_peak = o->memory_peak,
                                .io_read_bytes = o->io_read_bytes, .io_write_bytes = o->io_write_bytes,
                                .tasks_peak = o->pids_peak };
        j->exit_code = o->launch_errno ? -1 : o->signal ? -1 : o->exit_code;
        j->exit_signal = o->signal;
        /* The supervisor's count, which also covers the time we were not running; the
         * transition adds a suspension still open. */
        j->suspended_usec = MAX(j->suspended_usec, o->suspended_usec);

        if (j->launching)
                j->launching = false;
        if (o->launch_errno) {
                log_info("Job %" PRIu64 " could not be launched: %s.", j->id, strna(o->launch_error));
                (void) job_launch_failed(m, j, JOB_FAILED, o->launch_error ?: strerror(o->launch_errno));
                return;
        } else if (j->cancel_requested && strneq(strempty(j->reason), "Requeue", 7)) {
                bool hold = streq(j->reason, "RequeueHold");
                (void) manager_job_transition(m, j, JOB_EVENT_REQUEUE, hold ? JOB_HELD : JOB_QUEUED, "Requeued");
                return;
        } else if (j->cancel_requested)
                state = JOB_CANCELLED, reason = "Cancelled";
        else if (o->cancelled && !o->timed_out && !o->oom_killed)
                /* Its scope was stopped from outside (systemctl stop, KillUnit). */
                state = JOB_CANCELLED, reason = "StoppedBySystemd";
        else if (o->timed_out)
                state = JOB_TIMEOUT, reason = "TimeLimit";
        else if (o->oom_killed)
                state = JOB_OUT_OF_MEMORY, reason = "OutOfMemory";
        else if (o->signal) {
                snprintf(buf, sizeof buf, "Signal %d", o->signal);
                state = JOB_FAILED, reason = buf;
        } else if (o->exit_code != 0)
                state = JOB_FAILED, reason = "NonZeroExitCode";
        else
                state = JOB_COMPLETED, reason = NULL;
        log_info("Job %" PRIu64 " ended: %s%s%s.", j->id, job_state_to_string(state), reason ? ", " : "",
                 strempty(reason));
        (void) manager_job_transition(m, j, JOB_EVENT_END, state, reason);
}

/* ---- the scheduling pass ---- */

static const QueueConfig *job_queue(Manager *m, const Job *j) {
        return config_find_queue(m->config, j->queue);
}

/* The limit the job runs under, decided in sched/ from the request and the queue. */
static uint64_t job_walltime(Manager *m, const Job *j) {
        const QueueConfig *q = job_queue(m, j);
        uint64_t w = j->req.walltime_sec == CORRAL_WALLTIME_INFINITY ? 0 : j->req.walltime_sec;

        return sched_effective_walltime(w, q ? q->default_walltime : 0, q ? q->max_walltime : 0);
}

/* Dependencies cross from proto's enum to sched's by value. */
_Static_assert((int) SCHED_DEP_AFTER == (int) DEPENDENCY_AFTER, "dependency types");
_Static_assert((int) SCHED_DEP_AFTERANY == (int) DEPENDENCY_AFTERANY, "dependency types");
_Static_assert((int) SCHED_DEP_AFTEROK == (int) DEPENDENCY_AFTEROK, "dependency types");
_Static_assert((int) SCHED_DEP_AFTERNOTOK == (int) DEPENDENCY_AFTERNOTOK, "dependency types");
_Static_assert((int) _SCHED_DEP_TYPE_MAX == (int) _DEPENDENCY_TYPE_MAX, "dependency types");

static SchedDepStatus dep_status(Manager *m, uint64_t id) {
        Job *d = manager_find_job(m, id);

        if (!d)
                return SCHED_DEP_FINISHED_FAILED; /* purged long ago: it can no longer be waited for */
        if (job_state_is_active(d->state))
                return SCHED_DEP_STARTED;
        if (d->state == JOB_COMPLETED)
                return SCHED_DEP_FINISHED_OK;
        if (job_state_is_final(d->state))
                return SCHED_DEP_FINISHED_FAILED;
        return SCHED_DEP_UNKNOWN;
}

static int build_spec(Manager *m, Job *j, JobSpec **ret);

static int manager_schedule(Manager *m) {
        SchedResult res;
        uint64_t now = now_sec();
        size_t n = 0;
        int r;

        if (!GREEDY_REALLOC(m->sched_jobs, m->allocated_sched_jobs, m->n_jobs + 1))
                return -ENOMEM;
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                const QueueConfig *q;
                SchedJob *s;

                if (j->state != JOB_QUEUED && !job_state_is_active(j->state))
                        continue;
                q = job_queue(m, j);
                s = &m->sched_jobs[n++];
                *s = (SchedJob) {
                        .id = j->id,
                        .state = j->state == JOB_QUEUED ? SCHED_JOB_PENDING
                                 : j->state == JOB_RUNNING ? SCHED_JOB_RUNNING : SCHED_JOB_SUSPENDED,
                        .queue_priority = q ? q->priority : 0,
                        .nice = j->req.nice,
                        .submit_time = j->submit_time,
                        .eligible_time = j->eligible_time,
                        .begin_time = j->req.begin_time,
                        .cpus = j->req.cpus ?: 1,
                        .memory = j->req.memory,
                        .walltime = j->req.walltime_sec == CORRAL_WALLTIME_INFINITY ? 0 : j->req.walltime_sec,
                        .default_walltime = q ? q->default_walltime : 0,
                        .max_walltime = q ? q->max_walltime : 0,
                        .array_id = j->array_job_id,
                        .array_max_running = j->array_job_id ? j->req.array.max_concurrent : 0,
                        .exclusive = j->req.exclusive,
                        .user_id = j->uid,
                        .bypass_count = j->bypass_count,
                        .start_time = j->start_time,
                        .alloc = job_state_is_active(j->state) ? j->alloc : NULL,
                };
                if (j->req.n_dependencies > 0 && j->state == JOB_QUEUED) {
                        SchedDep *d = reallocarray(j->deps, j->req.n_dependencies, sizeof *d);
                        if (!d)
                                return -ENOMEM;
                        j->deps = d;
                        for (size_t k = 0; k < j->req.n_dependencies; k++)
                                d[k] = (SchedDep) { .job_id = j->req.dependencies[k].job_id,
                                                    .type = (SchedDepType) j->req.dependencies[k].type,
                                                    .status = dep_status(m, j->req.dependencies[k].job_id) };
                        s->deps = d;
                        s->n_deps = j->req.n_dependencies;
                }
        }

        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        r = sched_pass(m->sched, &m->sched_config, &m->machine, m->sched_jobs, n, now, &res);
        m->last_pass_end = now_usec(CLOCK_MONOTONIC);
        if (r < 0)
                return r;
        m->last_pass_usec = m->last_pass_end - t0;
        m->last_pass_jobs = n;

        for (size_t i = 0; i < res.n_waiting; i++) {
                const SchedWait *w = &res.waiting[i];
                Job *j = manager_find_job(m, w->job_id);
                if (!j)
                        continue;
                j->est_start = w->est_start;
                j->priority = w->priority;
                if (w->bypassed)
                        j->bypass_count++;
                if (w->reason == SCHED_REASON_DEPENDENCY_NEVER_SATISFIED) {
                        log_info("Job %" PRIu64 " cancelled: its dependency can never be satisfied.", j->id);
                        (void) manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED,
                                                      "DependencyNeverSatisfied");
                        continue;
                }
                (void) job_set_reason(j, sched_reason_to_string(w->reason));
        }
        for (size_t i = 0; i < res.n_decisions; i++) {
                const SchedDecision *d = &res.decisions[i];
                Job *j = manager_find_job(m, d->job_id);

                if (d->type != SCHED_DECISION_START || !j || j->state != JOB_QUEUED)
                        continue;
                if (!j->alloc && !(j->alloc = new(SchedAllocation, 1)))
                        return -ENOMEM;
                *j->alloc = d->alloc;
                if (manager_job_transition(m, j, JOB_EVENT_START, JOB_RUNNING, NULL) < 0)
                        continue;
                /* Launched only after the commit that records it as running. */
                if (!GREEDY_REALLOC(m->to_launch, m->allocated_to_launch, m->n_to_launch + 1))
                        return -ENOMEM;
                m->to_launch[m->n_to_launch++] = j->id;
        }
        return 0;
}

static void launch_pending(Manager *m) {
        for (size_t i = 0; i < m->n_to_launch; i++) {
                _cleanup_(job_spec_freep) JobSpec *spec = NULL;
                Job *j = manager_find_job(m, m->to_launch[i]);
                int r;

                if (!j || j->state != JOB_RUNNING)
                        continue;
                r = build_spec(m, j, &spec);
                if (r >= 0)
                        r = executor_start(m->executor, spec);
                if (r < 0) {
                        j->launching = false;
                        log_error_errno(r, "Cannot launch job %" PRIu64 ": %m", j->id);
                        (void) job_launch_failed(m, j, JOB_FAILED, strerror(-r));
                }
        }
        m->n_to_launch = 0;
}

static int on_sched_defer(sd_event_source *s, uint64_t usec, void *userdata) {
        /* Nothing to do here: the post source that follows this dispatch runs the pass. */
        return 0;
}

/* Passes are coalesced within a loop iteration, and when a pass is expensive (a queue of
 * 100,000 jobs) also spaced out, so that scheduling takes at most about a fifth of the
 * daemon's time whatever the submission rate (Slurm's sched_min_interval, made
 * adaptive). Returns true when the pass has to wait; a timer brings it back. */
#define SCHED_SPACING_FACTOR 4
#define SCHED_SPACING_MAX_USEC (2 * UINT64_C(1000000))
static bool sched_deferred(Manager *m) {
        uint64_t now, earliest;

        if (m->last_pass_usec < 1000)
                return false; /* cheap passes run every iteration */
        now = now_usec(CLOCK_MONOTONIC);
        earliest = m->last_pass_end + MIN(m->last_pass_usec * SCHED_SPACING_FACTOR, SCHED_SPACING_MAX_USEC);
        if (now >= earliest)
                return false;
        if (!m->sched_defer)
                (void) sd_event_add_time(m->event, &m->sched_defer, CLOCK_MONOTONIC, earliest, 0, on_sched_defer, m);
        else {
                (void) sd_event_source_set_time(m->sched_defer, earliest);
                (void) sd_event_source_set_enabled(m->sched_defer, SD_EVENT_ONESHOT);
        }
        return true;
}

/* After every event-loop iteration that did something: commit, schedule, commit, act,
 * answer. This is where "committed before acknowledged or acted on" holds. */
static int on_post(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        int r;

        r = store_commit(m->store);
        if (r < 0) {
                log_error_errno(r, "Cannot commit state: %s. Exiting rather than acknowledge unrecorded changes.",
                                store_error(m->store));
                return sd_event_exit(m->event, EXIT_FAILURE);
        }
        if (m->sched_needed && !sched_deferred(m)) {
                m->sched_needed = false;
                r = manager_schedule(m);
                if (r < 0)
                        log_error_errno(r, "Scheduling pass failed: %m");
                r = store_commit(m->store);
                if (r < 0) {
                        log_error_errno(r, "Cannot commit state: %s. Exiting.", store_error(m->store));
                        return sd_event_exit(m->event, EXIT_FAILURE);
                }
                launch_pending(m);
                r = store_commit(m->store);
                if (r < 0)
                        return sd_event_exit(m->event, EXIT_FAILURE);
        }
        for (size_t i = 0; i < m->n_outcomes_done; i++)
                (void) executor_outcome_consumed(m->executor, m->outcomes_done[i]);
        m->n_outcomes_done = 0;
        if (m->server)
                server_flush(m->server);
        return 0;
}

static int on_sched_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        /* Begin times and estimates move with the clock even when nothing happens. */
        manager_purge_finished(m, now_sec());
        schedule_soon(m);
        return sd_event_source_set_time_relative(s, SCHED_INTERVAL_USEC);
}

/* ---- the spec handed to the executor ---- */

static int build_spec(Manager *m, Job *j, JobSpec **ret) {
        _cleanup_(job_spec_freep) JobSpec *s = new0(JobSpec, 1);
        struct passwd *pw;
        int ngroups = 64;

        if (!s)
                return -ENOMEM;
        s->id = j->id;
        s->uid = j->uid;
        s->gid = j->gid;
        if (!(s->user = strdup(j->user)) || (j->req.name && !(s->name = strdup(j->req.name))) ||
            (j->project && !(s->project = strdup(j->project))) || !(s->queue = strdup(j->queue)))
                return -ENOMEM;
        pw = getpwuid(j->uid);
        if (!pw)
                return -ESRCH; /* the user is gone: the job cannot run as them */
        s->supplementary_gids = new(gid_t, ngroups);
        if (!s->supplementary_gids)
                return -ENOMEM;
        if (getgrouplist(pw->pw_name, j->gid, s->supplementary_gids, &ngroups) < 0) {
                gid_t *g = reallocarray(s->supplementary_gids, (size_t) ngroups, sizeof(gid_t));
                if (!g)
                        return -ENOMEM;
                s->supplementary_gids = g;
                if (getgrouplist(pw->pw_name, j->gid, s->supplementary_gids, &ngroups) < 0)
                        return -EIO;
        }
        s->n_supplementary_gids = (size_t) ngroups;
        {
                /* argv, script and environment live in the store until the job runs. */
                _cleanup_(submit_request_done) SubmitRequest full = SUBMIT_REQUEST_INIT;
                int r = store_load_request(m->store, j->id, &full);
                if (r < 0)
                        return r;
                s->argv = TAKE_PTR(full.argv);
                s->script = TAKE_PTR(full.script);
                s->environment = TAKE_PTR(full.env);
                if (!s->argv == !s->script)
                        return -EBADMSG;
        }
        s->array_job_id = j->array_job_id;
        s->array_task_id = j->array_task_id;
        if (j->req.workdir && !(s->working_directory = strdup(j->req.workdir)))
                return -ENOMEM;
        {
                int r;
                if ((r = job_expand_path(j, j->req.stdin_path, &s->stdin_path)) < 0 ||
                    (r = job_expand_path(j, j->req.stdout_path, &s->stdout_path)) < 0 ||
                    /* As in Slurm: without --error, stderr goes where stdout goes. */
                    (r = job_expand_path(j, j->req.stderr_path ?: j->req.stdout_path, &s->stderr_path)) < 0)
                        return r;
        }
        if (!j->alloc)
                return -EINVAL;
        s->cpus = j->alloc->cpus;
        for (unsigned k = 0; k < m->machine.n_nodes; k++)
                if (j->alloc->node_mask & (UINT32_C(1) << k))
                        cpu_set_add(&s->mem_nodes, m->numa_ids[k]);
        s->memory_max = j->req.memory;
        s->io_weight = j->req.io_weight;
        s->tasks_max = j->req.tasks_max;
        s->walltime_sec = job_walltime(m, j) == SCHED_TIME_INFINITY ? 0 : job_walltime(m, j);

        /* io limits: one entry per device, merging the four lists. */
        IoDeviceLimits *lists[4] = { &j->req.io_read_bw, &j->req.io_write_bw, &j->req.io_read_iops,
                                     &j->req.io_write_iops };
        for (int li = 0; li < 4; li++)
                for (size_t k = 0; k < lists[li]->n; k++) {
                        const char *dev = lists[li]->items[k].device;
                        JobIoLimit *l = NULL;
                        for (size_t x = 0; x < s->n_io_limits; x++)
                                if (streq(s->io_limits[x].device, dev))
                                        l = &s->io_limits[x];
                        if (!l) {
                                JobIoLimit *n = reallocarray(s->io_limits, s->n_io_limits + 1, sizeof *n);
                                if (!n)
                                        return -ENOMEM;
                                s->io_limits = n;
                                l = &s->io_limits[s->n_io_limits++];
                                *l = (JobIoLimit) { .device = strdup(dev) };
                                if (!l->device)
                                        return -ENOMEM;
                        }
                        uint64_t v = lists[li]->items[k].limit;
                        if (li == 0) l->read_bps = v;
                        else if (li == 1) l->write_bps = v;
                        else if (li == 2) l->read_iops = v;
                        else l->write_iops = v;
                }
        *ret = TAKE_PTR(s);
        return 0;
}

/* ---- life cycle ---- */

static int load_machine(Manager *m) {
        _cleanup_(topology_freep) Topology *t = NULL;
        int r;

        r = topology_load(&t);
        if (r < 0)
                return r;
        if (t->n_nodes > SCHED_NODES_MAX)
                return -E2BIG;
        topology_sort(t);
        m->nodes = new0(SchedNode, t->n_nodes);
        m->numa_ids = new0(unsigned, t->n_nodes);
        if (!m->nodes || !m->numa_ids)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_nodes; i++) {
                m->nodes[i] = (SchedNode) { .cpus = t->nodes[i].cpus, .memory = t->nodes[i].memory_bytes,
                                            .speed = t->nodes[i].max_freq_khz };
                m->numa_ids[i] = t->nodes[i].id;
        }
        m->machine = (SchedMachine) { .nodes = m->nodes, .n_nodes = t->n_nodes };
        return 0;
}

static void apply_server_limits(Manager *m) {
        if (m->server)
                server_set_limits(m->server, &(ServerLimits) {
                        .connections_per_user = m->config->max_connections_per_user,
                        .connection_output = m->config->max_connection_output,
                });
}

int manager_listen(Manager *m, const char *socket_path) {
        int r;

        assert(!m->server);
        r = server_new(m->event, socket_path, &manager_server_ops, m, &m->server);
        if (r < 0)
                return r;
        apply_server_limits(m);
        return 0;
}

static int apply_config(Manager *m, Config *c) {
        struct group *g;

        m->authz = (AuthzPolicy) { .users_may_suspend = c->users_may_suspend };
        if (c->operator_group) {
                g = getgrnam(c->operator_group);
                if (g) {
                        m->authz.have_operator_gid = true;
                        m->authz.operator_gid = g->gr_gid;
                } else
                        log_warning("OperatorGroup=%s does not exist; only root is an administrator.",
                                    c->operator_group);
        }
        config_sched(c, &m->sched_config);
        config_free(m->config);
        m->config = c;
        apply_server_limits(m);
        return 0;
}

int manager_reload(Manager *m, char **ret_error) {
        Config *c = NULL;
        int r;

        r = config_load(m->confdir, &c, ret_error);
        if (r < 0)
                return r;
        apply_config(m, c);
        schedule_soon(m);
        return 0;
}

int manager_new(sd_event *event, sd_bus *bus, const char *confdir, const char *statedir, const char *rundir,
                Manager **ret) {
        _cleanup_(manager_freep) Manager *m = new0(Manager, 1);
        _cleanup_free_ char *err = NULL;
        int r;

        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->bus = sd_bus_ref(bus);
        m->next_id = 1;
        if (!(m->confdir = strdup(confdir)) || !(m->statedir = strdup(statedir)) || !(m->rundir = strdup(rundir)))
                return -ENOMEM;
        if (gethostname(m->hostname, sizeof m->hostname - 1) < 0)
                strcpy(m->hostname, "localhost");

        r = manager_reload(m, &err);
        if (r < 0)
                return log_error_errno(r, "Invalid configuration: %s", strna(err));
        r = load_machine(m);
        if (r < 0)
                return log_error_errno(r, "Cannot read the machine's NUMA topology: %m");
        m->sched = sched_context_new();
        if (!m->sched)
                return -ENOMEM;
        r = store_open(statedir, &m->store);
        if (r < 0)
                return log_error_errno(r, "Cannot open the state database in %s: %s", statedir,
                                       m->store ? store_error(m->store) : strerror(-r));

        ExecutorConfig ec = {
                .supervisor_path = getenv("CORRAL_SUPERVISOR") ?: CORRAL_LIBEXECDIR "/corral-supervisor",
                .run_dir = rundir,
                .kill_wait_sec = m->config->kill_wait_sec,
                .before_unit = "corrald.service",
                .on_started = on_job_started,
                .on_finished = on_job_finished,
                .userdata = m,
        };
        r = executor_new(event, bus, &ec, &m->executor);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the executor: %m");

        r = sd_event_add_post(event, &m->post_source, on_post, m);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(event, &m->sched_timer, CLOCK_MONOTONIC, SCHED_INTERVAL_USEC, 0,
                                       on_sched_timer, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(m->sched_timer, SD_EVENT_ON);
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        /* Calls still open refer to jobs: the server goes first. */
        m->server = server_free(m->server);
        if (m->store)
                (void) store_commit(m->store);
        sd_event_source_disable_unref(m->post_source);
        sd_event_source_disable_unref(m->sched_timer);
        sd_event_source_disable_unref(m->sched_defer);
        executor_free(m->executor);
        store_close(m->store);
        for (size_t i = 0; i < m->n_jobs; i++)
                job_free(m->jobs[i]);
        free(m->jobs);
        free(m->sched_jobs);
        free(m->to_launch);
        free(m->outcomes_done);
        sched_context_free(m->sched);
        free(m->nodes);
        free(m->numa_ids);
        config_free(m->config);
        free(m->confdir);
        free(m->statedir);
        free(m->rundir);
        sd_bus_unref(m->bus);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

static int load_one(Job *j, void *userdata) {
        Manager *m = userdata;
        int r;

        job_trim_request(j);
        r = manager_add_job(m, j);
        if (r < 0)
                job_free(j);
        else if (job_state_is_active(j->state))
                m->n_running++;
        return r;
}

static int read_boot_id(char buf[static 64]) {
        _cleanup_free_ char *s = NULL;
        int r = read_file_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 64, &s, NULL);
        if (r < 0)
                return r;
        s[strcspn(s, "\n")] = 0;
        snprintf(buf, 64, "%s", s);
        return 0;
}

int manager_startup(Manager *m) {
        _cleanup_free_ uint64_t *live = NULL;
        _cleanup_free_ char *last_boot = NULL;
        char boot[64] = "";
        size_t n_live = 0, adopted = 0, lost = 0;
        bool rebooted;
        int r;

        r = store_load_jobs(m->store, load_one, m);
        if (r < 0)
                return log_error_errno(r, "Cannot load jobs from the state database: %s", store_error(m->store));
        r = store_next_job_id(m->store, &m->next_id);
        if (r < 0)
                return r;
        (void) read_boot_id(boot);
        (void) store_get_meta(m->store, "boot_id", &last_boot);
        rebooted = last_boot && !streq(last_boot, boot);
        (void) store_set_meta(m->store, "boot_id", boot);

        /* Outcomes that arrived while we were away settle their jobs first. */
        r = executor_scan_outcomes(m->executor);
        if (r < 0)
                return log_error_errno(r, "Cannot read job outcomes in %s: %m", m->rundir);

        r = executor_list_running(m->executor, &live, &n_live);
        if (r < 0)
                return log_error_errno(r, "Cannot list running job scopes: %m");
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                bool is_live = false;

                if (!job_state_is_active(j->state))
                        continue;
                for (size_t k = 0; k < n_live; k++)
                        if (live[k] == j->id)
                                is_live = true;
                if (is_live && !rebooted) {
                        adopted++;
                        continue;
                }
                /* Running when the machine (or, with no scope left and no outcome, the
                 * supervisor) went down: requeue if it may run again, else NodeFail. */
                lost++;
                log_notice("Job %" PRIu64 " was running when %s: %s.", j->id,
                           rebooted ? "the machine went down" : "its supervisor was lost",
                           j->rerunnable ? "requeued (NodeFail)" : "NODE_FAIL, it is not rerunnable");
                (void) manager_job_transition(m, j, JOB_EVENT_NODE_FAIL, j->rerunnable ? JOB_QUEUED : JOB_NODE_FAIL,
                                              j->rerunnable ? "NodeFail: requeued" : "NodeFail");
        }
        r = store_commit(m->store);
        if (r < 0)
                return log_error_errno(r, "Cannot commit recovered state: %s", store_error(m->store));
        log_info("Loaded %zu jobs; %zu running jobs re-adopted, %zu lost%s.", m->n_jobs, adopted, lost,
                 rebooted ? " (the machine was rebooted)" : "");
        schedule_soon(m);
        return 0;
}

void manager_status(Manager *m, char *buf, size_t size) {
        size_t pending = 0;
        for (size_t i = 0; i < m->n_jobs; i++)
                if (job_state_is_pending(m->jobs[i]->state))
                        pending++;
        snprintf(buf, size, "%u running, %zu pending jobs; %u client connections", m->n_running, pending,
                 m->server ? server_n_connections(m->server) : 0);
}
