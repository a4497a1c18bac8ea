/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The spec handed to the executor: who the job runs as (uid, primary and supplementary
 * groups, looked up when it starts), what it runs (read back from the store), where
 * (its allocation's CPUs and memory nodes) and within which limits. */

#include <errno.h>
#include <string.h>

#include "devices.h"
#include "devices-mig.h"
#include "identity.h"
#include "job-spec-build.h"
#include "job-table.h"
#include "manager.h"
#include "strv.h"
#include "time-util.h"


/* "0,1,...,n-1", or the machine's indexes of mask's bits ("1,3"). */
static char *gpu_list(unsigned n, uint64_t mask) {
        char *text = NULL;
        size_t size = 0, k = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        for (unsigned g = 0; g < 64; g++)
                if (mask ? (mask & (UINT64_C(1) << g)) != 0 : g < n)
                        fprintf(f, "%s%u", k++ ? "," : "", g);
        if (fclose(f) != 0)
                return mfree(text);
        return text;
}

/* CUDA_VISIBLE_DEVICES: the job's whole NVIDIA GPUs numbered as CUDA enumerates them
 * inside the fence (0..n-1: a GPU in MIG mode is no CUDA device), each MIG device by its
 * UUID, as CUDA names a MIG device (an index there would be the whole GPU's). "" when a
 * MIG device's UUID is not known yet (NVML not read): the variable is then left out, and
 * CUDA finds exactly the devices the fence opens. */
static char *cuda_list(const DeviceSet *set, uint64_t mask) {
        char *text = NULL;
        size_t size = 0, k = 0;
        unsigned whole = 0;
        bool unnamed = false;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        for (size_t g = 0; g < set->n_devices && g < 64; g++) {
                const Device *d = &set->devices[g];
                const char *id;

                if (!(mask & (UINT64_C(1) << g)) || !device_is_schedulable(d) || d->vendor != DEVICE_VENDOR_NVIDIA)
                        continue;
                if (!d->mig)
                        fprintf(f, "%s%u", k++ ? "," : "", whole++);
                else if ((id = device_mig_cuda_id(d)))
                        fprintf(f, "%s%s", k++ ? "," : "", id);
                else
                        unnamed = true;
        }
        if (fclose(f) != 0)
                return mfree(text);
        if (unnamed)
                text[0] = '\0';
        return text;
}

static int push_env(char ***env, const char *name, const char *value) {
        char *a;

        if (!value || asprintf(&a, "%s=%s", name, value) < 0)
                return -ENOMEM;
        return strv_push(env, a) < 0 ? (free(a), -ENOMEM) : 0;
}

/* On a machine with schedulable devices every job is fenced: it may open its own GPUs' nodes
 * and their vendors' shared nodes, and every other device as before (the machine's base
 * list), no other GPU. Its environment numbers its GPUs as the runtimes see them inside the
 * fence: CUDA and ROCm enumerate only the devices they can open, so a job's GPUs are 0..n-1
 * there whatever their index on the machine, as under Slurm's ConstrainDevices=yes;
 * SLURM_JOB_GPUS and CORRAL_GPUS carry the machine's indexes (corral info's). */
static int build_device_fence(Manager *m, const Job *j, JobSpec *s) {
        const DeviceSet *set = m->devices;
        uint64_t mask = job_alloc(j) ? job_alloc(j)->gpu_mask : 0;
        unsigned count[_DEVICE_VENDOR_MAX] = {}, total = 0;
        _cleanup_strv_free_ char **env = NULL;
        int r;

        if (!set || set->n_devices == 0)
                return 0;
        s->device_fence = true;
        s->device_allow = m->device_fence_base ? strv_copy(m->device_fence_base) : new0(char *, 1);
        if (!s->device_allow)
                return -ENOMEM;
        for (size_t g = 0; g < set->n_devices && g < 64; g++) {
                const Device *d = &set->devices[g];

                if (!(mask & (UINT64_C(1) << g)))
                        continue;
                /* A card gone since (a reload while the job waited to start, or a
                 * restart): its node, if any is left, may be another card's one day. */
                if (!device_is_schedulable(d))
                        continue;
                STRV_FOREACH(n, d->nodes)
                        if (!strv_contains(s->device_allow, *n) && strv_extend(&s->device_allow, *n) < 0)
                                return -ENOMEM;
                count[d->vendor]++;
                total++;
        }
        for (size_t v = 0; v < _DEVICE_VENDOR_MAX; v++)
                if (count[v] > 0)
                        STRV_FOREACH(n, set->shared_nodes[v])
                                if (!strv_contains(s->device_allow, *n) && strv_extend(&s->device_allow, *n) < 0)
                                        return -ENOMEM;
        if (total == 0)
                return 0; /* and no GPU variable: the supervisor drops the submitter's */

        _cleanup_free_ char *nv = cuda_list(set, mask), *amd = gpu_list(count[DEVICE_VENDOR_AMD], 0),
                            *all = gpu_list(total, 0), *machine = gpu_list(0, mask & ((set->n_devices >= 64) ? ~UINT64_C(0)
                                                                                     : (UINT64_C(1) << set->n_devices) - 1));
        char n_text[16];

        (void) snprintf(n_text, sizeof n_text, "%u", total);
        if (count[DEVICE_VENDOR_NVIDIA] > 0 && (!nv || nv[0]) && (r = push_env(&env, "CUDA_VISIBLE_DEVICES", nv)) < 0)
                return r;
        if (count[DEVICE_VENDOR_AMD] > 0 &&
            ((r = push_env(&env, "ROCR_VISIBLE_DEVICES", amd)) < 0 || (r = push_env(&env, "HIP_VISIBLE_DEVICES", amd)) < 0))
                return r;
        if ((r = push_env(&env, "GPU_DEVICE_ORDINAL", all)) < 0 || (r = push_env(&env, "SLURM_JOB_GPUS", machine)) < 0 ||
            (r = push_env(&env, "SLURM_GPUS_ON_NODE", n_text)) < 0 || (r = push_env(&env, "CORRAL_GPUS", machine)) < 0)
                return r;
        /* Shards: the GPU as a whole-GPU job sees it (a shared GPU cannot fence its
         * memory), and how many of its shards are the job's, as Slurm's gres/shard says. */
        if (job_alloc(j)->shards > 0) {
                (void) snprintf(n_text, sizeof n_text, "%u", (unsigned) job_alloc(j)->shards);
                r = push_env(&env, "SLURM_SHARDS_ON_NODE", n_text);
                if (r < 0)
                        return r;
        }
        s->device_environment = TAKE_PTR(env);
        return 0;
}

int manager_build_spec(Manager *m, Job *j, JobSpec **ret) {
        _cleanup_(job_spec_freep) JobSpec *s = new0(JobSpec, 1);
        /* What memory does not keep of the request (job.h) lives in the store until the
         * job runs: argv, script and environment, its limits. */
        _cleanup_(submit_request_done) SubmitRequest full = SUBMIT_REQUEST_INIT;
        int r;

        if (!s)
                return -ENOMEM;
        s->id = j->id;
        if (!(s->user = strdup(job_user(j))) || (job_str(j, JOB_NAME) && !(s->name = strdup(job_str(j, JOB_NAME)))) ||
            (job_project(j) && !(s->project = strdup(job_project(j)))) || !(s->queue = strdup(job_queue(j))))
                return -ENOMEM;
        /* Who the job runs as, from the NSS cache: a user starting many jobs costs the
         * lookups (the whole group database, for getgrouplist) once a minute, not each
         * start, on the loop. */
        {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                const struct passwd *pw = nss_cache_getpwuid(m->nss, j->uid, now);
                const gid_t *groups;
                size_t n_groups;

                if (!pw)
                        return errno == ENOMEM ? -ENOMEM : -ESRCH; /* the user is gone */
                if (!m->nss)
                        r = job_spec_resolve_identity(s, j->uid, j->gid);
                else {
                        r = nss_cache_getgrouplist(m->nss, pw->pw_name, j->uid, j->gid, now, &groups, &n_groups);
                        if (r >= 0)
                                r = job_spec_set_identity(s, pw, j->gid, groups, n_groups);
                }
                if (r < 0)
                        return r;
        }
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
        if (job_str(j, JOB_WORKDIR) && !(s->working_directory = strdup(job_str(j, JOB_WORKDIR))))
                return -ENOMEM;
        if ((r = job_expand_path(j, job_str(j, JOB_STDIN_PATH), &s->stdin_path)) < 0 ||
            (r = job_expand_path(j, job_str(j, JOB_STDOUT_PATH), &s->stdout_path)) < 0 ||
            /* As in Slurm: without --error, stderr goes where stdout goes. */
            (r = job_expand_path(j, job_str(j, JOB_STDERR_PATH) ?: job_str(j, JOB_STDOUT_PATH), &s->stderr_path)) < 0)
                return r;
        if (!job_alloc(j))
                return -EINVAL;
        s->cpus = job_alloc(j)->cpus;
        for (unsigned k = 0; k < m->machine.n_nodes; k++)
                if (job_alloc(j)->node_mask & (UINT64_C(1) << k))
                        cpu_set_add(&s->mem_nodes, m->numa_ids[k]);
        s->memory_max = job_shared(j)->memory;
        s->io_weight = full.io_weight;
        s->tasks_max = full.tasks_max;
        /* The submitter's umask, as sbatch passes it on: output files as their shell would make them. */
        s->umask = full.umask;
        s->has_umask = true;
        s->walltime_sec = manager_job_walltime(m, j) == SCHED_TIME_INFINITY ? 0 : manager_job_walltime(m, j);
        s->warn_signal = (int) full.warn_signal;
        s->warn_sec = full.warn_sec;
        s->warn_batch_only = full.warn_batch_only;
        s->output_append = full.output_append;
        if (j->array_job_id && full.array.set) {
                /* Tasks share their array's request: its spec gives Slurm's bounds. */
                const ArraySpec *a = &full.array;
                if (a->n_ranges == 0) {
                        s->array_task_min = a->start;
                        s->array_task_max = a->end;
                        s->array_task_step = MAX(a->step, 1U);
                        s->array_task_count = (a->end - a->start) / s->array_task_step + 1;
                } else {
                        s->array_task_min = UINT32_MAX;
                        s->array_task_step = 1;
                        for (uint32_t k = 0; k < a->n_ranges; k++) {
                                const ArrayRange *g = &a->ranges[k];
                                s->array_task_min = MIN(s->array_task_min, g->start);
                                s->array_task_max = MAX(s->array_task_max, g->end);
                                s->array_task_count += (g->end - g->start) / MAX(g->step, 1U) + 1;
                        }
                }
        }

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
        r = build_device_fence(m, j, s);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}
