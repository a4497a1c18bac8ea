/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>

#include "commit.h"
#include "fd-util.h"
#include "interactive-fd.h"
#include "interactive.h"
#include "job-table.h"
#include "job-transition.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "message.h"
#include "time-util.h"

/* Descriptors held for waiting interactive jobs, each user's and in all: corrald's
 * descriptor table (systemd gives services a soft limit of 1024) must keep room for its
 * CORRAL_CONNECTIONS_MAX connections. A waiting job keeps its client's connection open
 * too, so these are also bounded by MaxConnectionsPerUser=. */
#define INTERACTIVE_WAITING_PER_USER_MAX 8U
#define INTERACTIVE_WAITING_MAX 96U

static json_object *check_waiting(Manager *m, uid_t uid) {
        unsigned mine = 0, all = 0;
        json_object *p;

        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *j = m->jobs[i];
                const Interactive *it = job_interactive(j);
                if (!it || it->n_fds == 0)
                        continue;
                all++;
                if (j->uid == uid)
                        mine++;
        }
        if (uid != 0 && mine >= INTERACTIVE_WAITING_PER_USER_MAX) {
                p = json_object_new_object();
                json_add_u64(p, CORRAL_FIELD_LIMIT, INTERACTIVE_WAITING_PER_USER_MAX);
                json_add_string(p, CORRAL_FIELD_MESSAGE, "you have as many interactive jobs waiting as corrald "
                                                         "holds terminals for one user");
                return reply_error_new(CORRAL_ERROR_QUOTA_EXCEEDED, p);
        }
        if (all >= INTERACTIVE_WAITING_MAX) {
                p = json_object_new_object();
                json_add_string(p, CORRAL_FIELD_MESSAGE, "corrald holds as many waiting interactive jobs' "
                                                         "terminals as it may: try again later");
                return reply_error_new(CORRAL_ERROR_BUSY, p);
        }
        return NULL;
}

json_object *manager_interactive_take(Manager *m, Call *call, const Peer *peer, Interactive **ret) {
        _cleanup_(interactive_freep) Interactive *it = NULL;
        static const char *const names[] = { "stdin", "stdout", "stderr" };
        _cleanup_close_ int proc_fd = -EBADF;
        json_object *err;

        it = new0(Interactive, 1);
        if (!it)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        it->manager = m;
        it->uid = peer->uid;
        it->closer = m->fd_closer;
        it->n_fds = server_call_take_fds(call, it->fds);
        if ((err = check_waiting(m, peer->uid)))
                return err;
        if (it->n_fds != CORRAL_RUN_FDS)
                return reply_invalid_parameter("fds", "Run takes exactly three file descriptors: the job's "
                                                      "stdin, stdout and stderr");
        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (size_t i = 0; i < it->n_fds; i++) {
                const char *why = NULL;
                char msg[200];

                if (interactive_fd_check(proc_fd, it->fds[i], (unsigned) i, peer->uid, &why) >= 0)
                        continue;
                log_debug("Refusing the %s descriptor of uid %u for an interactive job: %s.", names[i],
                          (unsigned) peer->uid, why);
                snprintf(msg, sizeof msg, "the %s you passed cannot be the job's: %s", names[i], why);
                return reply_invalid_parameter("fds", msg);
        }
        *ret = TAKE_PTR(it);
        return NULL;
}

static void interactive_cancel(Manager *m, Job *j, const char *why) {
        if (job_state_is_final(j->state))
                return;
        log_info("Job %" PRIu64 ": %s, cancelling it.", j->id, why);
        if (job_state_is_pending(j->state)) {
                (void) manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled");
                return;
        }
        (void) manager_job_mark(m, j, JOB_MARK_CANCEL, JOB_BY_CORRALD);
        if (!j->launching)
                (void) executor_cancel(m->executor, j->id, NULL, NULL);
}

json_object *manager_interactive_attach(Manager *m, Call *call, Interactive *it, json_object *reply) {
        _cleanup_(interactive_freep) Interactive *owned = it;
        json_object *p, *v;
        Job *j;
        int r;

        if (!reply || !json_object_object_get_ex(reply, "parameters", &p) ||
            !json_object_object_get_ex(p, "job_id", &v))
                return reply; /* an error reply, or out of memory */
        j = manager_find_job(m, (uint64_t) json_object_get_uint64(v));
        if (!j) {
                json_object_put(reply);
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        }
        it->job_id = j->id;
        it->call = call;
        r = job_set_interactive(j, TAKE_PTR(owned));
        /* The id first, then every change of the job, as Wait streams them. */
        server_call_set_job_id(call, j->id);
        (void) server_call_reply(call, reply_new(json_object_get(p), true), true);
        json_object_put(reply);
        if (r < 0) /* its client hears of it as of any change */
                interactive_cancel(m, j, "out of memory for its descriptors");
        return NULL;
}

static int on_hangup_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Interactive *it = userdata;
        Manager *m = it->manager;
        Job *j = manager_find_job(m, it->job_id);

        it->hangup = sd_event_source_disable_unref(it->hangup);
        if (j)
                interactive_cancel(m, j, "its interactive client has been gone for InteractiveHangupSec=");
        return 0;
}

static int arm_hangup(Manager *m, Interactive *it) {
        return sd_event_add_time_relative(m->event, &it->hangup, CLOCK_MONOTONIC,
                                          m->config->interactive_hangup_sec * USEC_PER_SEC, USEC_PER_SEC,
                                          on_hangup_timer, it);
}

void manager_interactive_startup(Manager *m) {
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                Interactive *it;

                if (!j->req.interactive || job_interactive(j) || job_state_is_final(j->state))
                        continue;
                if (job_state_is_pending(j->state)) {
                        interactive_cancel(m, j, "its client went away when corrald stopped");
                        continue;
                }
                it = new0(Interactive, 1);
                if (!it || (*it = (Interactive) { .manager = m, .job_id = j->id }, job_set_interactive(j, it) < 0)) {
                        interactive_cancel(m, j, "out of memory");
                        continue;
                }
                if (m->config->interactive_hangup_sec == 0 || arm_hangup(m, it) < 0)
                        interactive_cancel(m, j, "its client went away when corrald stopped");
                else
                        log_info("Job %" PRIu64 ": its interactive client went away when corrald stopped; "
                                 "cancelling it in %" PRIu64 " s.", j->id, m->config->interactive_hangup_sec);
        }
}

void manager_interactive_call_gone(Manager *m, Call *call) {
        Job *j = manager_find_job(m, server_call_job_id(call));
        Interactive *it = j ? job_interactive(j) : NULL;
        uint64_t grace = m->config->interactive_hangup_sec;

        if (!it || it->call != call)
                return; /* a Wait, or a Run whose job has ended */
        it->call = NULL;
        /* Waiting: nobody is left to use it. Running: a dropped connection may be a
         * passing network hiccup of the client's SSH session, which the grace covers. */
        if (job_state_is_pending(j->state) || grace == 0 || arm_hangup(m, it) < 0)
                interactive_cancel(m, j, "its interactive client went away");
        else
                log_info("Job %" PRIu64 ": its interactive client went away; cancelling it in %" PRIu64 " s.",
                         j->id, grace);
}
