/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Launching: what a pass decided (a start, a preemption's freeze or thaw) is acted on only
 * once the store has committed it, so that a crash between the two never leaves a job
 * running that the store does not know of. The pass (sched-driver.c, job-preempt.c)
 * records the job's id in Manager.to_launch; after the commit, each start goes to the
 * executor with the spec built for it, each freeze or thaw to job-preempt.c. */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "interactive.h"
#include "log.h"
#include "manager.h"

void manager_launch_pending(Manager *m) {
        size_t n_again = 0; /* launches to try again: their failure could not be recorded */

        for (size_t i = 0; i < m->n_to_launch; i++) {
                _cleanup_(job_spec_freep) JobSpec *spec = NULL;
                Job *j = manager_find_job(m, m->to_launch[i]);
                int r;

                if (j && job_run(j)->preempt_act) {
                        manager_preempt_act(m, j);
                        continue;
                }
                if (!j || j->state != JOB_RUNNING)
                        continue;
                if (j->req.interactive && (!j->interactive || j->interactive->n_fds != CORRAL_RUN_FDS)) {
                        /* Its descriptors lived in the corrald that took it (interactive.h). */
                        (void) manager_job_mark(m, j, JOB_MARK_LAUNCHED, JOB_BY_CORRALD);
                        if (manager_job_launch_failed(m, j, JOB_CANCELLED,
                                                      "its terminal was lost when corrald restarted") < 0)
                                m->to_launch[n_again++] = j->id;
                        continue;
                }
                r = manager_build_spec(m, j, &spec);
                if (r >= 0)
                        r = executor_start_fds(m->executor, spec, j->interactive ? j->interactive->fds : NULL,
                                               j->interactive ? j->interactive->n_fds : 0);
                /* The supervisor has its copies: corrald's would keep the terminal open
                 * after the job has let go of it. */
                if (j->interactive)
                        interactive_close_fds(j->interactive);
                if (r < 0) {
                        (void) manager_job_mark(m, j, JOB_MARK_LAUNCHED, JOB_BY_CORRALD);
                        log_error_errno(r, "Cannot launch job %" PRIu64 ": %m", j->id);
                        /* Still running in memory and in the store, and no scope will
                         * ever report: tried again after the next pass. */
                        if (manager_job_launch_failed(m, j, JOB_FAILED, strerror(-r)) < 0)
                                m->to_launch[n_again++] = j->id;
                }
        }
        m->n_to_launch = n_again;
        if (n_again > 0)
                m->sched_needed = true;
}
