/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's backend, by its queue, from the tables the manager picked at start-up. */

#include "job-backend.h"
#include "manager.h"

const JobBackendOps *manager_queue_backend(Manager *m, const QueueConfig *q) {
        /* A queue a reload removed leaves its jobs where they were made: here. */
        return m->backends[q ? q->backend : QUEUE_BACKEND_LOCAL];
}

const JobBackendOps *manager_job_backend(Manager *m, const Job *j) {
        return manager_queue_backend(m, job_queue(j) ? config_find_queue(m->config, job_queue(j)) : NULL);
}

int manager_backends_adopt(Manager *m, bool rebooted) {
        for (size_t i = 0; i < _QUEUE_BACKEND_MAX; i++) {
                int r = m->backends[i]->adopt(m, rebooted);
                if (r < 0)
                        return r;
        }
        return 0;
}

int manager_backends_committed(Manager *m) {
        for (size_t i = 0; i < _QUEUE_BACKEND_MAX; i++) {
                int r = m->backends[i]->committed(m);
                if (r < 0)
                        return r;
        }
        return 0;
}

void manager_backends_tick(Manager *m) {
        for (size_t i = 0; i < _QUEUE_BACKEND_MAX; i++)
                if (m->backends[i]->tick)
                        m->backends[i]->tick(m);
}

void manager_backends_free(Manager *m) {
        for (size_t i = 0; i < _QUEUE_BACKEND_MAX; i++)
                if (m->backends[i] && m->backends[i]->free)
                        m->backends[i]->free(m);
}
