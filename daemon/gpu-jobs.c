/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-jobs.h"
#include "devices-mig.h"
#include "job-backend.h"
#include "job-mail.h"
#include "job-table.h"
#include "json-util.h"
#include "log.h"
#include "strv.h"
#include "time-util.h"

/* How long one snapshot (a few calls per GPU) may take before telemetry is stalled. */
#define GPU_TELEMETRY_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* While GPUSampleSec=0: how often the setting is looked at again (a reload may set it). */
#define GPU_IDLE_RECHECK_USEC (60 * USEC_PER_SEC)
/* Disagreements remembered so that each is logged once; past that, no more are logged. */
#define GPU_LOGGED_MAX 256U

typedef struct GpuJobs {
        GpuTelemetry *telemetry;
        sd_event_source *timer;
        GpuJobFigures *figures;  /* by job id, then GPU */
        size_t n_figures;
        GpuSnapshot last;        /* copied from the last snapshot, for GetInfo */
        uint64_t last_realtime;  /* seconds since the epoch, of last */
        char **logged;
        bool stall_logged;
        uint64_t unmanaged;      /* bit g: Corral's GPU g runs a process of no job (last snapshot) */
        uint64_t mig;            /* bit g: Corral's GPU g is in MIG mode (last snapshot) */
} GpuJobs;

static void format_hms(char *buf, size_t size, uint64_t sec) {
        snprintf(buf, size, "%" PRIu64 ":%02u:%02u", sec / 3600, (unsigned) (sec / 60 % 60), (unsigned) (sec % 60));
}

static void format_bytes(char *buf, size_t size, uint64_t b) {
        if (b >= UINT64_C(1) << 30)
                snprintf(buf, size, "%.1f GiB", (double) b / (UINT64_C(1) << 30));
        else
                snprintf(buf, size, "%" PRIu64 " MiB", b >> 20);
}

static void own_memory_add(GpuJobFigures *f, const NvmlGpuSample *s) {
        uint64_t sum = 0;
        bool any = false;

        for (size_t i = 0; i < s->n_processes; i++) {
                const NvmlProcess *p = &s->processes[i];

                if (!p->owner_known || p->job_id != f->job_id || p->memory_used == UINT64_MAX)
                        continue;
                sum += p->memory_used;
                any = true;
        }
        f->own_memory_last = any ? sum : UINT64_MAX;
        if (any)
                f->own_memory_max = f->own_memory_max == UINT64_MAX ? sum : MAX(f->own_memory_max, sum);
}

void gpu_job_figures_add(GpuJobFigures *f, const NvmlGpuSample *s, uint64_t now) {
        f->last_sample = now;
        if (s->utilization >= 0) {
                f->samples++;
                f->util_sum += (unsigned) s->utilization;
                f->util_max = MAX(f->util_max, (unsigned) s->utilization);
        }
        if (s->memory_used != UINT64_MAX)
                f->memory_max = MAX(f->memory_max, s->memory_used);
        own_memory_add(f, s);
        if (s->energy_mj != UINT64_MAX) {
                if (f->energy_prev_mj != UINT64_MAX && s->energy_mj >= f->energy_prev_mj) {
                        f->energy_mj += s->energy_mj - f->energy_prev_mj;
                        f->energy_known = true;
                }
                f->energy_prev_mj = s->energy_mj;
        }
}

void gpu_job_figures_idle(GpuJobFigures *f, int utilization, uint64_t now, unsigned below_percent) {
        if (utilization < 0) {
                f->idle_last = 0;
                return;
        }
        if ((unsigned) utilization >= below_percent) {
                f->idle_sec = f->idle_last = 0;
                return;
        }
        if (f->idle_last > 0 && now > f->idle_last)
                f->idle_sec += now - f->idle_last;
        f->idle_last = now;
}

void gpu_job_figures_idle_pause(GpuJobFigures *f) {
        f->idle_last = 0;
}

void gpu_job_figures_to_store(const GpuJobFigures *f, uint64_t end_time, StoreGpuUsage *ret) {
        *ret = (StoreGpuUsage) {
                .job_id = f->job_id,
                .run = f->run,
                .gpu = f->gpu,
                .samples = f->samples,
                .util_mean = f->samples > 0 ? (double) f->util_sum / f->samples : -1,
                .util_max = f->util_max,
                .memory_max = f->memory_max,
                .energy_j = f->energy_known ? (double) f->energy_mj / 1000.0 : -1,
                .held_sec = end_time > f->start_time && f->start_time > 0 ? end_time - f->start_time : 0,
                .own_memory_max = f->own_memory_max,
        };
}

ssize_t gpu_snapshot_find(const GpuSnapshot *s, const Device *d) {
        if (!s)
                return -1;
        if (d->uuid)
                for (size_t i = 0; i < s->n_gpus; i++)
                        if (strcmp(s->gpus[i].uuid, d->uuid) == 0)
                                return (ssize_t) i;
        if (d->pci_address)
                for (size_t i = 0; i < s->n_gpus; i++)
                        if (strcasecmp(s->gpus[i].pci_address, d->pci_address) == 0)
                                return (ssize_t) i;
        return -1;
}

int gpu_cross_check(const Device *d, const NvmlGpuInfo *g, char **ret) {
        _cleanup_free_ char *s = NULL;
        char buf[512];
        size_t len = 0;

        buf[0] = '\0';
#define DIFFER(...) len += (size_t) snprintf(buf + MIN(len, sizeof buf), sizeof buf - MIN(len, sizeof buf), __VA_ARGS__)
        if (d->uuid && g->uuid[0] && strcmp(d->uuid, g->uuid) != 0)
                DIFFER("; UUID: discovery says %s, NVML %s", d->uuid, g->uuid);
        if (d->model && g->name[0] && strcmp(d->model, g->name) != 0)
                DIFFER("; model: discovery says \"%s\", NVML \"%s\"", d->model, g->name);
        if (d->pci_address && g->pci_address[0] && strcasecmp(d->pci_address, g->pci_address) != 0)
                DIFFER("; PCI address: discovery says %s, NVML %s", d->pci_address, g->pci_address);
        if (d->numa_node >= 0 && g->numa_node >= 0 && d->numa_node != g->numa_node)
                DIFFER("; NUMA node: discovery says %d, NVML %d", d->numa_node, g->numa_node);
#undef DIFFER
        if (buf[0] == '\0') {
                *ret = NULL;
                return 0;
        }
        if (asprintf(&s, "%s: %s", d->name, buf + 2) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 1;
}

static void log_once(GpuJobs *g, int level, const char *msg) {
        if (strv_contains(g->logged, msg))
                return;
        if (strv_length(g->logged) < GPU_LOGGED_MAX)
                (void) strv_extend(&g->logged, msg);
        log_full(level, "GPU telemetry: %s", msg);
}

static void cross_check(Manager *m, GpuJobs *g, const GpuSnapshot *s) {
        const DeviceSet *ds = m->devices;
        bool seen[64] = {};

        for (size_t i = 0; ds && i < ds->n_devices; i++) {
                const Device *d = &ds->devices[i];
                _cleanup_free_ char *msg = NULL;
                ssize_t k;

                /* A GPU in MIG mode is compared too; its MIG devices are not GPUs NVML lists
                 * (mig_update()). */
                if (d->gone || d->mig || d->vendor != DEVICE_VENDOR_NVIDIA)
                        continue;
                k = gpu_snapshot_find(s, d);
                if (k < 0) {
                        if (asprintf(&msg, "%s (%s): NVML does not see it", d->name,
                                     d->uuid ?: d->pci_address ?: "no UUID or PCI address") >= 0)
                                log_once(g, LOG_WARNING, msg);
                        continue;
                }
                if ((size_t) k < ELEMENTSOF(seen))
                        seen[k] = true;
                if (gpu_cross_check(d, &s->gpus[k], &msg) > 0)
                        log_once(g, LOG_WARNING, msg);
        }
        for (size_t k = 0; k < s->n_gpus && k < ELEMENTSOF(seen); k++) {
                _cleanup_free_ char *msg = NULL;

                if (!seen[k] && asprintf(&msg, "NVML sees %s (%s, %s) that discovery does not schedule",
                                         s->gpus[k].uuid, s->gpus[k].pci_address[0] ? s->gpus[k].pci_address : "no PCI address",
                                         s->gpus[k].name[0] ? s->gpus[k].name : "unknown model") >= 0)
                        log_once(g, LOG_WARNING, msg);
        }
}

static GpuJobFigures *figures_get(GpuJobs *g, const Job *j, unsigned gpu, bool create) {
        GpuJobFigures *a;

        for (size_t i = 0; i < g->n_figures; i++)
                if (g->figures[i].job_id == j->id && g->figures[i].gpu == gpu)
                        return &g->figures[i];
        if (!create)
                return NULL;
        a = reallocarray(g->figures, g->n_figures + 1, sizeof *a);
        if (!a)
                return NULL;
        g->figures = a;
        a[g->n_figures] = (GpuJobFigures) GPU_JOB_FIGURES_INIT;
        a[g->n_figures].job_id = j->id;
        a[g->n_figures].run = j->requeue_count;
        a[g->n_figures].gpu = gpu;
        a[g->n_figures].start_time = j->start_time;
        return &a[g->n_figures++];
}

/* Figures of jobs that no longer hold their GPUs (ended, requeued, purged) to the store. */
static void settle(Manager *m, GpuJobs *g, uint64_t now) {
        size_t kept = 0;

        for (size_t i = 0; i < g->n_figures; i++) {
                GpuJobFigures *f = &g->figures[i];
                Job *j = manager_find_job(m, f->job_id);
                StoreGpuUsage u;
                int r;

                if (j && (j->state == JOB_RUNNING || j->state == JOB_SUSPENDED) && j->requeue_count == f->run) {
                        g->figures[kept++] = *f;
                        continue;
                }
                gpu_job_figures_to_store(f, j && j->end_time > 0 && j->requeue_count == f->run ? j->end_time
                                                                                                 : f->last_sample ?: now, &u);
                if (m->devices && f->gpu < m->devices->n_devices)
                        u.uuid = m->devices->devices[f->gpu].uuid;
                r = store_record_gpu_usage(m->store, &u);
                if (r < 0)
                        log_warning_errno(r, "Cannot record job %" PRIu64 "'s GPU figures: %m", f->job_id);
        }
        g->n_figures = kept;
}

static void sample_jobs(Manager *m, GpuJobs *g, const GpuSnapshot *s, uint64_t now) {
        const DeviceSet *ds = m->devices;

        for (size_t i = 0; ds && i < m->n_jobs; i++) {
                const Job *j = m->jobs[i];

                if (j->state == JOB_SUSPENDED && job_alloc(j))
                        /* Its idle clock stops: the time suspended is not the job's idling. */
                        for (uint64_t mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                                GpuJobFigures *f = figures_get(g, j, (unsigned) __builtin_ctzll(mask), false);
                                if (f)
                                        gpu_job_figures_idle_pause(f);
                        }
                /* A suspended job keeps its GPUs but is not sampled: its figures are of its runs. */
                if (j->state != JOB_RUNNING || !job_alloc(j) || job_alloc(j)->gpu_mask == 0)
                        continue;
                for (uint64_t mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                        unsigned gpu = (unsigned) __builtin_ctzll(mask);
                        GpuJobFigures *f;
                        ssize_t k;

                        if (gpu >= ds->n_devices)
                                continue;
                        f = figures_get(g, j, gpu, true);
                        if (!f)
                                continue;
                        k = gpu_snapshot_find(s, &ds->devices[gpu]);
                        if (k >= 0) {
                                gpu_job_figures_add(f, &s->samples[k], now);
                                /* A shard job's share: K of N of the GPU's memory. */
                                if (job_alloc(j)->shards > 0 && job_alloc(j)->shards_of >= job_alloc(j)->shards &&
                                    s->gpus[k].memory_total > 0) {
                                        f->share_bytes = s->gpus[k].memory_total / job_alloc(j)->shards_of *
                                                         job_alloc(j)->shards;
                                        if (f->own_memory_last != UINT64_MAX && f->own_memory_last > f->share_bytes)
                                                f->share_exceeded = true;
                                }
                                /* The snapshot's own clock: a wall clock set back or forward is no idling. */
                                gpu_job_figures_idle(f, s->samples[k].utilization, s->taken_usec / USEC_PER_SEC,
                                                     m->config->gpu_idle_percent);
                        } else
                                gpu_job_figures_idle_pause(f);
                }
        }
}

uint64_t manager_gpu_jobs_idle_sec(Manager *m, const Job *j, unsigned *ret_gpus) {
        GpuJobs *g = m->gpu_jobs;
        uint64_t least = UINT64_MAX;
        unsigned n = 0;

        if (ret_gpus)
                *ret_gpus = 0;
        if (!g || m->config->gpu_sample_sec == 0 || m->config->gpu_idle_percent == 0 || m->config->gpu_idle_sec == 0 ||
            j->state != JOB_RUNNING ||
            !job_alloc(j) || job_alloc(j)->gpu_mask == 0)
                return 0;
        /* Every GPU it holds, each read idle for long enough: one busy GPU of several makes
         * the job busy. */
        for (uint64_t mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                const GpuJobFigures *f = figures_get(g, j, (unsigned) __builtin_ctzll(mask), false);

                if (!f || f->run != j->requeue_count || f->idle_sec < m->config->gpu_idle_sec)
                        return 0;
                least = MIN(least, f->idle_sec);
                n++;
        }
        if (ret_gpus)
                *ret_gpus = n;
        return least;
}

/* GPU gpu as admins name it ([Device] Name=), "gpuN" where the device set lacks it. */
static const char *gpu_name(Manager *m, unsigned gpu, char buf[static 16]) {
        if (m->devices && gpu < m->devices->n_devices)
                return m->devices->devices[gpu].name;
        snprintf(buf, 16, "gpu%u", gpu);
        return buf;
}

/* The names of the GPUs in mask, sep between them; NULL: -ENOMEM. */
static char *gpu_names(Manager *m, uint64_t mask, const char *sep) {
        _cleanup_free_ char *names = strdup("");

        for (; names && mask; mask &= mask - 1) {
                char buf[16], *t;

                if (asprintf(&t, "%s%s%s", names, names[0] ? sep : "", gpu_name(m, (unsigned) __builtin_ctzll(mask), buf)) < 0)
                        return NULL;
                free(names);
                names = t;
        }
        return TAKE_PTR(names);
}

/* A GPU action's cancel (GPUIdleAction=, ShardMemoryPolicy=): logged, through the job's
 * backend, its reason (a prefix job-outcome.c keeps) set once the cancel is taken. */
static void cancel_for(Manager *m, Job *j, const char *text, const char *setting, const char *reason) {
        log_info("Job %" PRIu64 ": %s; cancelling it (%s).", j->id, text, setting);
        if (manager_job_backend(m, j)->cancel(m, j, JOB_BY_CORRALD) < 0) {
                log_warning("Job %" PRIu64 ": cannot cancel it (%s).", j->id, setting);
                return;
        }
        if (reason)
                (void) job_set_reason(j, reason);
}

char *manager_gpu_jobs_idle_text(Manager *m, const Job *j) {
        _cleanup_free_ char *names = NULL, *s = NULL;
        unsigned n;
        uint64_t sec = manager_gpu_jobs_idle_sec(m, j, &n);
        char dur[32];
        int r;

        if (sec == 0 || !(names = gpu_names(m, job_alloc(j)->gpu_mask, ", ")))
                return NULL;
        if (sec >= 3600)
                snprintf(dur, sizeof dur, "%" PRIu64 " h %" PRIu64 " min", sec / 3600, sec % 3600 / 60);
        else if (sec >= 60)
                snprintf(dur, sizeof dur, "%" PRIu64 " min", sec / 60);
        else
                snprintf(dur, sizeof dur, "%" PRIu64 " s", sec);
        r = n == 1 ? asprintf(&s, "its GPU (%s) has been below %u %% for %s", names, m->config->gpu_idle_percent, dur)
                   : asprintf(&s, "its %u GPUs (%s) have been below %u %% for %s", n, names,
                              m->config->gpu_idle_percent, dur);
        if (r < 0)
                return NULL;
        return TAKE_PTR(s);
}

/* Bit g: Corral's GPU g (ds), read in s, is what pred says of its reading. */
static uint64_t gpus_where(const DeviceSet *ds, const GpuSnapshot *s,
                           bool (*pred)(const NvmlGpuInfo *gi, const NvmlGpuSample *v)) {
        uint64_t mask = 0;

        for (size_t g = 0; ds && s && g < ds->n_devices && g < 64; g++) {
                ssize_t k = device_is_schedulable(&ds->devices[g]) ? gpu_snapshot_find(s, &ds->devices[g]) : -1;

                if (k >= 0 && pred(&s->gpus[k], &s->samples[k]))
                        mask |= UINT64_C(1) << g;
        }
        return mask;
}

static bool runs_unmanaged(const NvmlGpuInfo *gi, const NvmlGpuSample *v) {
        return gpu_sample_unmanaged(v) > 0;
}

static bool in_mig_mode(const NvmlGpuInfo *gi, const NvmlGpuSample *v) {
        return gi->mig_mode > 0;
}

uint64_t gpu_unmanaged_mask(const DeviceSet *ds, const GpuSnapshot *s) {
        return gpus_where(ds, s, runs_unmanaged);
}

size_t gpu_sample_unmanaged(const NvmlGpuSample *s) {
        size_t n = 0;

        /* A process /proc no longer has (it ended since NVML listed it) is nobody's. */
        for (size_t i = 0; i < s->n_processes; i++)
                n += s->processes[i].owner_known && s->processes[i].job_id == 0;
        return n;
}

/* NVLink as the pass takes it (SchedGpu.links): each scheduled GPU linked to another by
 * PCI address, both ways, and the GPUs linked to NVSwitches (a far end NVML does not list
 * as a GPU) all to each other. Asks for a pass when it changed. */
static void links_update(Manager *m, const GpuSnapshot *s) {
        const DeviceSet *ds = m->devices;
        uint64_t links[64] = {}, on_switch = 0;
        size_t n = ds ? MIN(MIN(ds->n_devices, m->machine.n_gpus), (size_t) 64) : 0;
        bool changed = false;

        if (!m->gpus)
                return;
        for (size_t g = 0; g < n; g++) {
                ssize_t k = device_is_schedulable(&ds->devices[g]) ? gpu_snapshot_find(s, &ds->devices[g]) : -1;

                if (k < 0)
                        continue;
                for (size_t l = 0; l < s->gpus[k].n_nvlink; l++) {
                        const char *far = s->gpus[k].nvlink[l].pci_address;
                        bool gpu = false;

                        for (size_t i = 0; i < s->n_gpus && !gpu; i++)
                                gpu = strcasecmp(s->gpus[i].pci_address, far) == 0;
                        if (!gpu) {
                                on_switch |= UINT64_C(1) << g;
                                continue;
                        }
                        for (size_t h = 0; h < n; h++)
                                if (h != g && ds->devices[h].pci_address &&
                                    strcasecmp(ds->devices[h].pci_address, far) == 0) {
                                        links[g] |= UINT64_C(1) << h;
                                        links[h] |= UINT64_C(1) << g;
                                }
                }
        }
        for (size_t g = 0; g < n; g++) {
                if (on_switch & (UINT64_C(1) << g))
                        links[g] |= on_switch & ~(UINT64_C(1) << g);
                if (m->gpus[g].links != links[g]) {
                        m->gpus[g].links = links[g];
                        changed = true;
                }
        }
        if (!changed)
                return;
        for (size_t g = 0; g < n; g++)
                if (links[g] & ~((UINT64_C(2) << g) - 1))
                        for (uint64_t x = links[g] & ~((UINT64_C(2) << g) - 1); x; x &= x - 1)
                                log_debug("NVLink: %s and %s are linked.", ds->devices[g].name,
                                          ds->devices[__builtin_ctzll(x)].name);
        log_info("NVLink read: jobs of several GPUs are given linked ones where they have a choice.");
        m->sched_needed = true;
}

/* *have becomes mask: each GPU that comes into it or leaves it logged ("GPU gpu0 " is, or
 * no_longer), and a pass asked for (what the pass may give changed). */
static void gpus_update(Manager *m, uint64_t *have, uint64_t mask, const char *is, const char *no_longer) {
        if (mask == *have)
                return;
        for (uint64_t x = mask & ~*have; x; x &= x - 1)
                log_info("GPU %s %s.", m->devices->devices[__builtin_ctzll(x)].name, is);
        for (uint64_t x = *have & ~mask; x; x &= x - 1)
                log_info("GPU %s %s.", m->devices->devices[__builtin_ctzll(x)].name, no_longer);
        *have = mask;
        m->sched_needed = true;
}

/* A GPU that starts or stops running work outside Corral (UnmanagedGPU=avoid takes it
 * from, or gives it back to, the jobs that wait), or comes into or out of MIG mode (CUDA
 * reaches it then only through its MIG devices' capability nodes, which the fence does not
 * give a job of the whole GPU). */
static void busy_update(Manager *m, GpuJobs *g, const GpuSnapshot *s) {
        gpus_update(m, &g->unmanaged, gpus_where(m->devices, s, runs_unmanaged),
                    m->config->unmanaged_gpu_avoid
                            ? "is in use outside Corral (a process in no job's cgroup); no new job is given it while it lasts"
                            : "is in use outside Corral (a process in no job's cgroup)",
                    "is no longer in use outside Corral");
        gpus_update(m, &g->mig, gpus_where(m->devices, s, in_mig_mode),
                    "is in MIG mode: no job is given it whole while it is; its MIG devices are scheduled as GPUs "
                    "of their own once discovery reads them (at start and at `corral reload`)",
                    "is no longer in MIG mode");
}

static Device *mig_device_find(DeviceSet *ds, const char *parent, unsigned gi, unsigned ci) {
        for (size_t i = 0; i < ds->n_devices; i++) {
                Device *d = &ds->devices[i];
                if (d->mig && !d->gone && d->mig_gi == gi && d->mig_ci == ci && d->mig_parent && streq(d->mig_parent, parent))
                        return d;
        }
        return NULL;
}

/* NVML's word on each MIG device discovery found (procfs gives the layout, not the
 * profiles): its UUID, profile and memory. A profile learnt asks for a pass, as a job's
 * --gres=gpu:1g.10gb may match now. A MIG device only one of them has (a layout being
 * changed) is logged once: discovery reads the layout again at the next reload. */
static void mig_update(Manager *m, GpuJobs *g, const GpuSnapshot *s) {
        DeviceSet *ds = m->devices;
        bool changed = false;

        for (size_t i = 0; ds && i < ds->n_devices; i++) {
                const Device *p = &ds->devices[i];
                const char *key = p->uuid ?: p->pci_address;
                ssize_t k;

                if (p->gone || p->mig || p->vendor != DEVICE_VENDOR_NVIDIA || !key || (k = gpu_snapshot_find(s, p)) < 0)
                        continue;
                for (size_t x = 0; x < s->gpus[k].n_mig; x++) {
                        const NvmlMigInfo *mi = &s->gpus[k].mig[x];
                        Device *d = mig_device_find(ds, key, mi->gpu_instance, mi->compute_instance);
                        _cleanup_free_ char *msg = NULL;
                        int r;

                        if (!d) {
                                if (asprintf(&msg, "%s has MIG device %s (%s, GPU instance %u, compute instance %u) that "
                                             "discovery did not find; `corral reload` reads the layout again", p->name,
                                             mi->uuid, mi->profile[0] ? mi->profile : "profile unknown", mi->gpu_instance,
                                             mi->compute_instance) >= 0)
                                        log_once(g, LOG_WARNING, msg);
                                continue;
                        }
                        r = devices_mig_update(d, mi->uuid, mi->profile, mi->memory_total);
                        if (r < 0)
                                log_debug("MIG device %s: out of memory reading NVML's word.", d->name);
                        else if (r > 0) {
                                log_debug("MIG device %s is %s (%s).", d->name, strna(d->mig_profile), strna(d->mig_uuid));
                                changed = true;
                        }
                }
        }
        if (changed)
                m->sched_needed = true;
}

uint64_t manager_gpu_jobs_mig(Manager *m) {
        GpuJobs *g = m->gpu_jobs;

        if (!g || m->config->gpu_sample_sec == 0 || gpu_telemetry_state(g->telemetry, NULL) != GPU_TELEMETRY_ON)
                return 0;
        return g->mig;
}

uint64_t manager_gpu_jobs_mig_unsettled(Manager *m) {
        const DeviceSet *ds = m->devices;
        uint64_t gone = 0, held = 0, mask = 0;
        size_t n = ds ? MIN(ds->n_devices, (size_t) 64) : 0;

        for (size_t g = 0; g < n; g++)
                if (ds->devices[g].mig && ds->devices[g].gone)
                        gone |= UINT64_C(1) << g;
        if (gone == 0)
                return 0; /* every pass on a machine whose MIG layout stayed as it was */
        for (size_t i = 0; i < m->n_jobs; i++)
                if (job_state_is_active(m->jobs[i]->state) && job_alloc(m->jobs[i]))
                        held |= job_alloc(m->jobs[i])->gpu_mask & gone;
        for (uint64_t x = held; x; x &= x - 1) {
                const Device *lost = &ds->devices[__builtin_ctzll(x)];

                for (size_t g = 0; g < n; g++)
                        if (ds->devices[g].mig && !ds->devices[g].gone && lost->mig_parent && ds->devices[g].mig_parent &&
                            streq(lost->mig_parent, ds->devices[g].mig_parent))
                                mask |= UINT64_C(1) << g;
        }
        return mask;
}

uint64_t manager_gpu_jobs_unmanaged(Manager *m) {
        GpuJobs *g = m->gpu_jobs;

        /* Only what a live telemetry says: a stalled one's last word would keep a GPU from
         * jobs for good. */
        if (!g || m->config->gpu_sample_sec == 0 || gpu_telemetry_state(g->telemetry, NULL) != GPU_TELEMETRY_ON)
                return 0;
        return g->unmanaged;
}

/* GPUIdleAction=cancel|mail: each idle stretch of a job once (a cancel not taken is not
 * tried again; a job busy again, then idle again, is mailed again). */
static void act_on_idle(Manager *m, GpuJobs *g) {
        if (m->config->gpu_idle_action == GPU_IDLE_ACTION_NONE)
                return;
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                _cleanup_free_ char *text = NULL, *reason = NULL, *names = NULL;
                bool acted = false;
                uint64_t mask;

                if (j->state != JOB_RUNNING || j->cancel_requested || !job_alloc(j) || job_alloc(j)->gpu_mask == 0)
                        continue;
                text = manager_gpu_jobs_idle_text(m, j);
                for (mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                        GpuJobFigures *f = figures_get(g, j, (unsigned) __builtin_ctzll(mask), false);
                        /* Busy again: its next idle stretch is acted on again. */
                        if (f && !text)
                                f->idle_acted = false;
                        acted = acted || (f && f->idle_acted);
                }
                if (acted || !text)
                        continue;
                for (mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                        GpuJobFigures *f = figures_get(g, j, (unsigned) __builtin_ctzll(mask), false);
                        if (f)
                                f->idle_acted = true;
                }
                if (m->config->gpu_idle_action == GPU_IDLE_ACTION_MAIL) {
                        int r = manager_job_mail_gpu_idle(m, j, text);
                        if (r < 0)
                                log_warning_errno(r, "Job %" PRIu64 ": cannot mail about its idle GPUs: %m", j->id);
                        else
                                log_info("Job %" PRIu64 ": %s; its user is mailed (GPUIdleAction=mail).", j->id, text);
                        continue;
                }
                /* The outcome keeps a reason that starts with GPUIdle (job-outcome.c); the GPUs'
                 * names and not the time, since reasons are interned for good. */
                names = gpu_names(m, job_alloc(j)->gpu_mask, ",");
                if (names && asprintf(&reason, "GPUIdle %s", names) < 0)
                        reason = NULL;
                cancel_for(m, j, text, "GPUIdleAction=cancel", reason);
        }
}

char *manager_gpu_jobs_share_text(Manager *m, const Job *j) {
        GpuJobs *g = m->gpu_jobs;
        char *s = NULL, a[32], b[32];

        if (!g || !job_alloc(j) || job_alloc(j)->shards == 0 || !job_alloc(j)->gpu_mask)
                return NULL;
        unsigned gpu = (unsigned) __builtin_ctzll(job_alloc(j)->gpu_mask);
        const GpuJobFigures *f = figures_get(g, j, gpu, false);
        char buf[16];

        if (!f || f->run != j->requeue_count || !f->share_exceeded || f->own_memory_max == UINT64_MAX)
                return NULL;
        format_bytes(a, sizeof a, f->own_memory_max);
        format_bytes(b, sizeof b, f->share_bytes);
        if (asprintf(&s, "its processes used up to %s of %s's memory, above its share of %s (%u of %u shards): a "
                     "shared GPU's memory is not fenced", a, gpu_name(m, gpu, buf), b, (unsigned) job_alloc(j)->shards,
                     (unsigned) job_alloc(j)->shards_of) < 0)
                return NULL;
        return s;
}

/* ShardMemoryPolicy=: each shard job above its share logged once, and while the policy is
 * cancel, cancelled once (a cancel not taken is not tried again), its reason naming its
 * GPU. */
static void act_on_shares(Manager *m, GpuJobs *g) {
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                _cleanup_free_ char *text = NULL, *reason = NULL;
                bool cancel = m->config->shard_memory_cancel;
                GpuJobFigures *f;
                unsigned gpu;
                char buf[16];

                if (j->state != JOB_RUNNING || !job_alloc(j) || job_alloc(j)->shards == 0 || !job_alloc(j)->gpu_mask)
                        continue;
                gpu = (unsigned) __builtin_ctzll(job_alloc(j)->gpu_mask);
                f = figures_get(g, j, gpu, false);
                if (!f || (f->share_logged && (!cancel || f->share_acted || j->cancel_requested)) ||
                    !(text = manager_gpu_jobs_share_text(m, j)))
                        continue;
                if (!cancel || j->cancel_requested) {
                        if (!f->share_logged)
                                log_info("Job %" PRIu64 ": %s (ShardMemoryPolicy=report).", j->id, text);
                        f->share_logged = true;
                        continue;
                }
                f->share_logged = f->share_acted = true;
                if (asprintf(&reason, "ShardMemory %s", gpu_name(m, gpu, buf)) < 0)
                        reason = NULL;
                cancel_for(m, j, text, "ShardMemoryPolicy=cancel", reason);
        }
}

static int snapshot_copy(const GpuSnapshot *s, GpuSnapshot *ret) {
        GpuSnapshot c = { .n_gpus = s->n_gpus, .taken_usec = s->taken_usec };

        c.gpus = malloc(MAX(s->n_gpus, 1U) * sizeof *c.gpus);
        c.samples = malloc(MAX(s->n_gpus, 1U) * sizeof *c.samples);
        if (!c.gpus || !c.samples) {
                free(c.gpus);
                free(c.samples);
                return -ENOMEM;
        }
        memcpy(c.gpus, s->gpus, s->n_gpus * sizeof *c.gpus);
        memcpy(c.samples, s->samples, s->n_gpus * sizeof *c.samples);
        *ret = c;
        return 0;
}

static void on_snapshot(GpuTelemetry *t, int r, const GpuSnapshot *s, void *userdata) {
        Manager *m = userdata;
        GpuJobs *g = m->gpu_jobs;
        uint64_t now = now_usec(CLOCK_REALTIME) / USEC_PER_SEC;
        const char *reason;

        if (r == -ETIMEDOUT) {
                if (!g->stall_logged)
                        log_warning("GPU telemetry stalled: %s; scheduling goes on without it.",
                                    gpu_telemetry_state(t, &reason) == GPU_TELEMETRY_STALLED ? strna(reason) : "timeout");
                g->stall_logged = true;
        } else if (r < 0) {
                if (gpu_telemetry_state(t, &reason) == GPU_TELEMETRY_OFF)
                        log_info("GPU telemetry off: %s", strna(reason));
                else
                        log_debug_errno(r, "GPU telemetry: no snapshot: %s", strna(reason));
        } else {
                GpuSnapshot c;

                g->stall_logged = false;
                cross_check(m, g, s);
                sample_jobs(m, g, s, now);
                act_on_idle(m, g);
                act_on_shares(m, g);
                busy_update(m, g, s);
                links_update(m, s);
                mig_update(m, g, s);
                if (snapshot_copy(s, &c) >= 0) {
                        free(g->last.gpus);
                        free(g->last.samples);
                        g->last = c;
                        g->last_realtime = now;
                }
        }
        /* Jobs that ended since are settled whatever this round read. */
        settle(m, g, now);
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        GpuJobs *g = m->gpu_jobs;
        uint64_t every = m->config->gpu_sample_sec;
        int r;

        if (every == 0) {
                settle(m, g, now_usec(CLOCK_REALTIME) / USEC_PER_SEC);
                return sd_event_source_set_time_relative(source, GPU_IDLE_RECHECK_USEC);
        }
        r = gpu_telemetry_request(g->telemetry);
        if (r == -ENODEV) {
                /* Off for good (no library, no driver): only the ended jobs' figures move. */
                settle(m, g, now_usec(CLOCK_REALTIME) / USEC_PER_SEC);
                return sd_event_source_set_time_relative(source, GPU_IDLE_RECHECK_USEC);
        }
        if (r < 0 && r != -EBUSY)
                log_debug_errno(r, "GPU telemetry: cannot ask for a snapshot: %m");
        return sd_event_source_set_time_relative(source, every * USEC_PER_SEC);
}

int manager_gpu_jobs_start(Manager *m) {
        return manager_gpu_jobs_start_at(m, NULL);
}

int manager_gpu_jobs_start_at(Manager *m, const char *proc_root) {
        GpuJobs *g;
        int r;

        g = calloc(1, sizeof *g);
        if (!g)
                return -ENOMEM;
        m->gpu_jobs = g;
        r = gpu_telemetry_new(m->event, NULL, GPU_TELEMETRY_TIMEOUT_USEC, on_snapshot, m, &g->telemetry);
        if (r < 0)
                return r;
        r = gpu_telemetry_set_proc_root(g->telemetry, proc_root);
        if (r < 0)
                return r;
        /* A job's end mail says what it did with its GPUs. */
        job_mail_set_end_text(m, manager_gpu_jobs_mail_text);
        /* The first snapshot soon after start-up: discovery's cross-check, and the state
         * corral info shows. */
        r = sd_event_add_time_relative(m->event, &g->timer, CLOCK_MONOTONIC, USEC_PER_SEC, USEC_PER_SEC / 10,
                                       on_timer, m);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(g->timer, SD_EVENT_ON);
}

void manager_gpu_jobs_free(Manager *m) {
        GpuJobs *g = TAKE_PTR(m->gpu_jobs);

        if (!g)
                return;
        sd_event_source_disable_unref(g->timer);
        gpu_telemetry_free(g->telemetry);
        free(g->figures);
        free(g->last.gpus);
        free(g->last.samples);
        strv_free(g->logged);
        free(g);
}

const GpuSnapshot *manager_gpu_jobs_last(Manager *m, GpuTelemetryState *ret_state) {
        GpuJobs *g = m->gpu_jobs;

        if (!g || m->config->gpu_sample_sec == 0) {
                *ret_state = GPU_TELEMETRY_OFF;
                return NULL;
        }
        *ret_state = gpu_telemetry_state(g->telemetry, NULL);
        return g->last.n_gpus > 0 ? &g->last : NULL;
}

/* A GPU's NVLink peers: another GPU NVML sees (by Corral's name where discovery schedules
 * it), else an NVSwitch, through which every GPU linked to one is linked to the others. */
static json_object *nvlink_json(Manager *m, const GpuSnapshot *s, const NvmlGpuInfo *gi) {
        json_object *a = json_object_new_array();

        for (size_t k = 0; a && k < gi->n_nvlink; k++) {
                const NvmlLinkPeer *p = &gi->nvlink[k];
                json_object *e = json_object_new_object();
                bool gpu = false;

                if (!e)
                        break;
                json_add_string(e, "pci_address", p->pci_address);
                json_add_u64(e, "links", p->links);
                for (size_t i = 0; i < s->n_gpus && !gpu; i++)
                        gpu = strcasecmp(s->gpus[i].pci_address, p->pci_address) == 0;
                for (size_t d = 0; gpu && m->devices && d < m->devices->n_devices; d++)
                        if (!m->devices->devices[d].gone && m->devices->devices[d].pci_address &&
                            strcasecmp(m->devices->devices[d].pci_address, p->pci_address) == 0)
                                json_add_string(e, "gpu", m->devices->devices[d].name);
                json_add_bool(e, "switch", !gpu);
                json_object_array_add(a, e);
        }
        return a;
}

json_object *manager_gpu_jobs_info_json(Manager *m) {
        GpuJobs *g = m->gpu_jobs;
        json_object *o = json_object_new_object(), *a;
        GpuTelemetryState state;
        const char *reason = NULL;

        if (!o)
                return NULL;
        if (!g || m->config->gpu_sample_sec == 0) {
                json_add_string(o, "state", "off");
                json_add_string(o, "reason", g ? "GPUSampleSec=0" : "not started");
                return o;
        }
        state = gpu_telemetry_state(g->telemetry, &reason);
        json_add_string(o, "state", gpu_telemetry_state_to_string(state));
        json_add_string(o, "reason", reason);
        json_add_u64(o, "sample_sec", m->config->gpu_sample_sec);
        /* What NVML and discovery disagree on, as logged (at most GPU_LOGGED_MAX). */
        if (g->logged)
                json_add_strv(o, "disagreements", g->logged);
        if (g->last.n_gpus == 0)
                return o;
        json_add_u64(o, "sampled", g->last_realtime);
        a = json_object_new_array();
        for (size_t i = 0; i < g->last.n_gpus; i++) {
                const NvmlGpuInfo *gi = &g->last.gpus[i];
                const NvmlGpuSample *s = &g->last.samples[i];
                json_object *e = json_object_new_object();

                json_add_string(e, "uuid", gi->uuid);
                if (gi->name[0])
                        json_add_string(e, "model", gi->name);
                if (gi->pci_address[0])
                        json_add_string(e, "pci_address", gi->pci_address);
                if (gi->memory_total > 0)
                        json_add_u64(e, "memory_total", gi->memory_total);
                if (gi->mig_mode >= 0)
                        json_add_bool(e, "mig", gi->mig_mode > 0);
                if (gi->numa_node >= 0)
                        json_add_u64(e, "numa_node", (uint64_t) gi->numa_node);
                if (!cpu_set_is_empty(&gi->cpus)) {
                        _cleanup_free_ char *cpus = cpu_set_format(&gi->cpus);
                        json_add_string(e, "cpus", cpus);
                }
                if (gi->nvlink_supported)
                        json_add(e, "nvlink", nvlink_json(m, &g->last, gi));
                if (gi->n_mig > 0) {
                        json_object *migs = json_object_new_array();

                        for (size_t k = 0; migs && k < gi->n_mig; k++) {
                                json_object *x = json_object_new_object();

                                if (!x)
                                        break;
                                json_add_string(x, "uuid", gi->mig[k].uuid);
                                if (gi->mig[k].profile[0])
                                        json_add_string(x, "profile", gi->mig[k].profile);
                                json_add_u64(x, "gpu_instance", gi->mig[k].gpu_instance);
                                json_add_u64(x, "compute_instance", gi->mig[k].compute_instance);
                                if (gi->mig[k].memory_total > 0)
                                        json_add_u64(x, "memory_total", gi->mig[k].memory_total);
                                json_object_array_add(migs, x);
                        }
                        json_add(e, "mig_devices", migs);
                }
                if (s->utilization >= 0)
                        json_add_u64(e, "utilization", (uint64_t) s->utilization);
                if (s->memory_used != UINT64_MAX)
                        json_add_u64(e, "memory_used", s->memory_used);
                if (s->power_mw >= 0)
                        json_add_u64(e, "power_mw", (uint64_t) s->power_mw);
                if (s->temperature >= 0)
                        json_add_u64(e, "temperature", (uint64_t) s->temperature);
                if (s->energy_mj != UINT64_MAX)
                        json_add_u64(e, "energy_mj", s->energy_mj);
                if (s->n_processes_total != SIZE_MAX)
                        json_add_u64(e, "processes", s->n_processes_total);
                if (gpu_sample_unmanaged(s) > 0) {
                        json_object *outside = json_object_new_array();

                        for (size_t k = 0; outside && k < s->n_processes; k++) {
                                const NvmlProcess *p = &s->processes[k];
                                const struct passwd *pw;
                                json_object *po;

                                if (!p->owner_known || p->job_id != 0 || !(po = json_object_new_object()))
                                        continue;
                                json_add_u64(po, "pid", p->pid);
                                json_add_u64(po, "uid", p->uid);
                                pw = nss_cache_getpwuid(m->nss, p->uid, now_usec(CLOCK_MONOTONIC));
                                if (pw)
                                        json_add_string(po, "user", pw->pw_name);
                                if (p->memory_used != UINT64_MAX)
                                        json_add_u64(po, "memory_used", p->memory_used);
                                json_object_array_add(outside, po);
                        }
                        json_add(e, "outside_corral", outside);
                        json_add_bool(e, "avoided", m->config->unmanaged_gpu_avoid);
                }
                json_object_array_add(a, e);
        }
        json_add(o, "gpus", a);
        return o;
}

uint64_t manager_gpu_jobs_own_memory(Manager *m, const Job *j, unsigned gpu) {
        const GpuJobFigures *f = m->gpu_jobs ? figures_get(m->gpu_jobs, j, gpu, false) : NULL;

        return f && f->run == j->requeue_count ? f->own_memory_last : UINT64_MAX;
}

int manager_gpu_jobs_util_now(Manager *m, const Job *j) {
        GpuJobs *g = m->gpu_jobs;
        unsigned sum = 0, n = 0;

        if (!g || m->config->gpu_sample_sec == 0 || gpu_telemetry_state(g->telemetry, NULL) != GPU_TELEMETRY_ON ||
            j->state != JOB_RUNNING || !job_alloc(j) || job_alloc(j)->gpu_mask == 0 || !m->devices)
                return -1;
        for (uint64_t mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                unsigned gpu = (unsigned) __builtin_ctzll(mask);
                ssize_t k = gpu < m->devices->n_devices ? gpu_snapshot_find(&g->last, &m->devices->devices[gpu]) : -1;

                if (k < 0 || g->last.samples[k].utilization < 0)
                        continue;
                sum += (unsigned) MIN(g->last.samples[k].utilization, 100);
                n++;
        }
        return n > 0 ? (int) ((sum + n / 2) / n) : -1;
}

char *manager_gpu_jobs_mail_text(Manager *m, const Job *j) {
        GpuJobs *g = m->gpu_jobs;
        _cleanup_free_ char *text = NULL;
        uint64_t end = j->end_time ?: now_usec(CLOCK_REALTIME) / USEC_PER_SEC;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        bool any = false;

        if (!f)
                return NULL;
        for (size_t i = 0; g && i < g->n_figures; i++) {
                const GpuJobFigures *x = &g->figures[i];
                char nbuf[16];
                const char *name = gpu_name(m, x->gpu, nbuf);
                char held[32], mem[32], own[64] = "", energy[48] = "";
                StoreGpuUsage u;

                if (x->job_id != j->id || x->run != j->requeue_count)
                        continue;
                gpu_job_figures_to_store(x, end, &u);
                format_hms(held, sizeof held, u.held_sec);
                any = true;
                if (u.util_mean < 0) {
                        fprintf(f, "GPU %s: held %s, not read\n", name, held);
                        continue;
                }
                format_bytes(mem, sizeof mem, u.memory_max);
                if (u.own_memory_max != UINT64_MAX) {
                        char b[32];
                        format_bytes(b, sizeof b, u.own_memory_max);
                        snprintf(own, sizeof own, " (its own processes: %s)", b);
                }
                if (u.energy_j >= 0)
                        snprintf(energy, sizeof energy, ", %.0f J", u.energy_j);
                fprintf(f, "GPU %s: %.0f %% busy on average, %u %% at most; %s memory at most%s%s; held %s\n",
                        name, u.util_mean, u.util_max, mem, own, energy, held);
        }
        if (!any && j->req.gpus == 0) {
                fclose(f);
                return NULL;
        }
        if (!any)
                fprintf(f, "GPUs: not read while it ran (%s)\n",
                        !g || m->config->gpu_sample_sec == 0 ? "GPU telemetry is off"
                                                              : "it ended before GPU telemetry's first reading");
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(text);
}

static json_object *usage_to_json(const StoreGpuUsage *u, bool running) {
        json_object *e = json_object_new_object();

        json_add_u64(e, "gpu", u->gpu);
        json_add_string(e, "uuid", u->uuid);
        json_add_u64(e, "samples", u->samples);
        if (u->util_mean >= 0) {
                json_add(e, "util_mean", json_object_new_double(u->util_mean));
                json_add_u64(e, "util_max", u->util_max);
                json_add_u64(e, "memory_max", u->memory_max);
        }
        if (u->own_memory_max != UINT64_MAX)
                json_add_u64(e, "own_memory_max", u->own_memory_max);
        if (u->energy_j >= 0)
                json_add(e, "energy_j", json_object_new_double(u->energy_j));
        json_add_u64(e, "held_sec", u->held_sec);
        json_add_bool(e, "running", running);
        return e;
}

json_object *manager_gpu_jobs_usage_json(Manager *m, uint64_t job_id) {
        StoreGpuUsage *rows = NULL;
        GpuJobs *g = m->gpu_jobs;
        json_object *a = NULL;
        size_t n = 0;
        uint64_t now = now_usec(CLOCK_REALTIME) / USEC_PER_SEC;

        /* A running job's figures so far come first: its stored ones are of an earlier run. */
        for (size_t i = 0; g && i < g->n_figures; i++) {
                StoreGpuUsage u;

                if (g->figures[i].job_id != job_id)
                        continue;
                gpu_job_figures_to_store(&g->figures[i], now, &u);
                if (m->devices && u.gpu < m->devices->n_devices)
                        u.uuid = m->devices->devices[u.gpu].uuid;
                if (!a && !(a = json_object_new_array()))
                        return NULL;
                json_object_array_add(a, usage_to_json(&u, true));
        }
        if (a)
                return a;
        if (store_load_gpu_usage(m->store, job_id, &rows, &n) < 0 || n == 0) {
                store_gpu_usage_free(rows, n);
                return NULL;
        }
        a = json_object_new_array();
        for (size_t i = 0; a && i < n; i++)
                json_object_array_add(a, usage_to_json(&rows[i], false));
        store_gpu_usage_free(rows, n);
        return a;
}
