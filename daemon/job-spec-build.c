/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The spec handed to the executor: who the job runs as (uid, primary and supplementary
 * groups, looked up when it starts), what it runs (read back from the store), where
 * (its allocation's CPUs and memory nodes) and within which limits. */

#include <errno.h>
#include <string.h>

#include "identity.h"
#include "manager.h"


int manager_build_spec(Manager *m, Job *j, JobSpec **ret) {
        _cleanup_(job_spec_freep) JobSpec *s = new0(JobSpec, 1);
        /* What memory does not keep of the request (job.h) lives in the store until the
         * job runs: argv, script and environment, its limits. */
        _cleanup_(submit_request_done) SubmitRequest full = SUBMIT_REQUEST_INIT;
        int r;

        if (!s)
                return -ENOMEM;
        s->id = j->id;
        if (!(s->user = strdup(j->user)) || (j->req.name && !(s->name = strdup(j->req.name))) ||
            (j->project && !(s->project = strdup(j->project))) || !(s->queue = strdup(j->queue)))
                return -ENOMEM;
        r = job_spec_resolve_identity(s, j->uid, j->gid);
        if (r < 0)
                return r;
        r = store_load_request(m->store, j->id, &full);
        if (r < 0)
                return r;
        s->argv = TAKE_PTR(full.argv);
        s->script = TAKE_PTR(full.script);
        s->environment = TAKE_PTR(full.env);
        if (!s->argv == !s->script)
                return -EBADMSG;
        s->array_job_id = j->array_job_id;
        s->array_task_id = j->array_task_id;
        if (j->req.workdir && !(s->working_directory = strdup(j->req.workdir)))
                return -ENOMEM;
        if ((r = job_expand_path(j, j->req.stdin_path, &s->stdin_path)) < 0 ||
            (r = job_expand_path(j, j->req.stdout_path, &s->stdout_path)) < 0 ||
            /* As in Slurm: without --error, stderr goes where stdout goes. */
            (r = job_expand_path(j, j->req.stderr_path ?: j->req.stdout_path, &s->stderr_path)) < 0)
                return r;
        if (!j->alloc)
                return -EINVAL;
        s->cpus = j->alloc->cpus;
        for (unsigned k = 0; k < m->machine.n_nodes; k++)
                if (j->alloc->node_mask & (UINT64_C(1) << k))
                        cpu_set_add(&s->mem_nodes, m->numa_ids[k]);
        s->memory_max = j->req.memory;
        s->io_weight = full.io_weight;
        s->tasks_max = full.tasks_max;
        /* The submitter's umask, as sbatch passes it on: output files as their shell would make them. */
        s->umask = full.umask;
        s->has_umask = true;
        s->walltime_sec = manager_job_walltime(m, j) == SCHED_TIME_INFINITY ? 0 : manager_job_walltime(m, j);
        s->warn_signal = (int) full.warn_signal;
        s->warn_sec = full.warn_sec;
        s->warn_batch_only = full.warn_batch_only;

        /* io limits: one entry per device, merging the four lists. */
        IoDeviceLimits *lists[4] = { &full.io_read_bw, &full.io_write_bw, &full.io_read_iops,
                                     &full.io_write_iops };
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
