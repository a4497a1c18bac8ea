/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Metrics for Prometheus in the node exporter's textfile format: jobs per state, CPUs in
 * use, per-project usage. Written whole to a temporary file and renamed over the old one,
 * so the collector never reads half a file. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "gpu-jobs.h"
#include "manager.h"
#include "metrics.h"
#include "usage.h"

#define NODE_EXPORTER_DIR "/var/lib/prometheus/node-exporter"
#define NODE_EXPORTER_FILE NODE_EXPORTER_DIR "/corral.prom"

const char *manager_metrics_path(Manager *m) {
        struct stat st;

        if (m->config->metrics_file)
                return m->config->metrics_file;
        if (stat(NODE_EXPORTER_DIR, &st) >= 0 && S_ISDIR(st.st_mode))
                return NODE_EXPORTER_FILE;
        return NULL;
}

/* A label value as the exposition format quotes it: \\, \" and \n escaped. */
static void put_label(FILE *f, const char *s) {
        fputc('"', f);
        for (; s && *s; s++)
                if (*s == '\\' || *s == '"')
                        fprintf(f, "\\%c", *s);
                else if (*s == '\n')
                        fputs("\\n", f);
                else
                        fputc(*s, f);
        fputc('"', f);
}

static void header(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A GPU's labels: its name and UUID, and the job and user holding it (none: free). */
static void gpu_labels(FILE *f, const Device *d, const Job *holder) {
        fputs("{gpu=", f);
        put_label(f, d->name);
        fputs(",uuid=", f);
        put_label(f, d->uuid);
        if (holder) {
                fprintf(f, ",job=\"%llu\",user=", (unsigned long long) holder->id);
                put_label(f, job_user(holder));
        }
        fputc('}', f);
}

/* NVML's last reading of each GPU corrald schedules (GPUSampleSec=, gpu-jobs.c). */
static void gpu_metrics(Manager *m, FILE *f) {
        const Job *holder[64] = {};
        unsigned holders[64] = {};
        GpuTelemetryState state;
        const GpuSnapshot *s = manager_gpu_jobs_last(m, &state);
        static const struct {
                const char *name, *type, *help;
        } gauges[] = {
                { "corral_gpu_utilization_ratio", "gauge", "Share of the last sample period a kernel ran on the GPU (NVML)." },
                { "corral_gpu_memory_used_bytes", "gauge", "GPU memory in use (NVML)." },
                { "corral_gpu_power_watts", "gauge", "GPU power draw (NVML)." },
                { "corral_gpu_temperature_celsius", "gauge", "GPU temperature (NVML)." },
                { "corral_gpu_energy_joules_total", "counter", "Energy the GPU used since its driver loaded (NVML)." },
                { "corral_gpu_unmanaged_processes", "gauge",
                  "Processes using the GPU that belong to no Corral job (NVML, their cgroups)." },
        };

        header(f, "corral_gpu_telemetry_up", "gauge", "1 while NVML answers (GPU telemetry on), else 0.");
        fprintf(f, "corral_gpu_telemetry_up %d\n", state == GPU_TELEMETRY_ON);
        if (!s || !m->devices)
                return;
        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *j = m->jobs[i];

                if ((j->state == JOB_RUNNING || j->state == JOB_SUSPENDED) && job_alloc(j))
                        for (uint64_t mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                                holder[__builtin_ctzll(mask)] = j;
                                holders[__builtin_ctzll(mask)]++;
                        }
        }
        /* A GPU jobs share (shards) is labelled with none of them: each one's own memory
         * is corral_gpu_job_memory_used_bytes, below. */
        for (size_t g = 0; g < ELEMENTSOF(holder); g++)
                if (holders[g] > 1)
                        holder[g] = NULL;
        for (size_t k = 0; k < ELEMENTSOF(gauges); k++) {
                header(f, gauges[k].name, gauges[k].type, gauges[k].help);
                for (size_t g = 0; g < m->devices->n_devices && g < ELEMENTSOF(holder); g++) {
                        const Device *d = &m->devices->devices[g];
                        ssize_t x = device_is_schedulable(d) ? gpu_snapshot_find(s, d) : -1;
                        const NvmlGpuSample *v;
                        double value;

                        if (x < 0)
                                continue;
                        v = &s->samples[x];
                        if (k == 0 && v->utilization >= 0)
                                value = v->utilization / 100.0;
                        else if (k == 1 && v->memory_used != UINT64_MAX)
                                value = (double) v->memory_used;
                        else if (k == 2 && v->power_mw >= 0)
                                value = (double) v->power_mw / 1000.0;
                        else if (k == 3 && v->temperature >= 0)
                                value = v->temperature;
                        else if (k == 4 && v->energy_mj != UINT64_MAX)
                                value = (double) v->energy_mj / 1000.0;
                        else if (k == 5)
                                value = (double) gpu_sample_unmanaged(v);
                        else
                                continue;
                        fputs(gauges[k].name, f);
                        gpu_labels(f, d, holder[g]);
                        /* Bytes and degrees whole, watts and joules to the milli-unit NVML gives. */
                        fprintf(f, k == 2 || k == 4 ? " %.3f\n" : k == 0 ? " %.2f\n" : " %.0f\n", value);
                }
        }
        /* Each running job's own processes' memory on each GPU it holds (NVML's per-process
         * figures by cgroup): on a shared GPU, each job's share. */
        header(f, "corral_gpu_job_memory_used_bytes", "gauge",
               "GPU memory the job's own processes use (NVML's per-process figures, by cgroup).");
        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *j = m->jobs[i];

                if (j->state != JOB_RUNNING || !job_alloc(j))
                        continue;
                for (uint64_t mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                        unsigned g = (unsigned) __builtin_ctzll(mask);
                        uint64_t own = manager_gpu_jobs_own_memory(m, j, g);

                        if (own == UINT64_MAX || g >= m->devices->n_devices)
                                continue;
                        fputs("corral_gpu_job_memory_used_bytes", f);
                        gpu_labels(f, &m->devices->devices[g], j);
                        fprintf(f, " %" PRIu64 "\n", own);
                }
        }
}

static int metrics_format(Manager *m, FILE *f) {
        _cleanup_free_ ProjectUsage *l = NULL;
        uint64_t now = (uint64_t) time(NULL), jobs[_JOB_STATE_MAX] = {};
        unsigned cpus = 0, gpus = 0;
        uint64_t gpus_held = 0;
        size_t n = 0;
        double total = 0;
        int r;

        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *j = m->jobs[i];
                jobs[j->state]++;
                if (job_state_is_active(j->state))
                        cpus += job_alloc(j) ? cpu_set_count(&job_alloc(j)->cpus) : (j->req.cpus ?: 1);
                /* A suspended job keeps its GPUs: frozen, its GPU memory stays taken. A GPU
                 * shard jobs share is one GPU in use. */
                if (job_state_is_active(j->state)) {
                        if (job_alloc(j) && job_alloc(j)->gpu_mask)
                                gpus_held |= job_alloc(j)->gpu_mask;
                        else
                                gpus += j->req.gpus;
                }
        }
        gpus += (unsigned) __builtin_popcountll(gpus_held);
        r = accounting_project_usage(m->acct, m->jobs, m->n_jobs, now, &l, &n, &total);
        if (r < 0)
                return r;

        header(f, "corral_jobs", "gauge",
               "Jobs by state (final states: the jobs that ended in the last day, which corrald keeps in memory).");
        for (JobState s = 0; s < _JOB_STATE_MAX; s++)
                fprintf(f, "corral_jobs{state=\"%s\"} %llu\n", job_state_to_string(s), (unsigned long long) jobs[s]);
        header(f, "corral_cpus_in_use", "gauge", "CPUs allocated to running and suspended jobs.");
        fprintf(f, "corral_cpus_in_use %u\n", cpus);
        header(f, "corral_cpus", "gauge", "CPUs the scheduler places jobs on.");
        fprintf(f, "corral_cpus %u\n", sched_machine_cpus(&m->machine));
        header(f, "corral_gpus_in_use", "gauge", "GPUs allocated to running and suspended jobs.");
        fprintf(f, "corral_gpus_in_use %u\n", gpus);
        header(f, "corral_gpus", "gauge", "GPUs the scheduler places jobs on.");
        size_t n_gpus = 0;
        for (size_t g = 0; m->devices && g < m->devices->n_devices; g++)
                n_gpus += device_is_schedulable(&m->devices->devices[g]);
        fprintf(f, "corral_gpus %zu\n", n_gpus);
        header(f, "corral_last_pass_seconds", "gauge", "How long the last scheduling pass took.");
        fprintf(f, "corral_last_pass_seconds %.6f\n", (double) m->last_pass_usec / 1e6);

        gpu_metrics(m, f);

        header(f, "corral_project_usage_core_hours", "gauge",
               "Decayed usage per project (core-hours, GPU-hours counted at ChargePerGPUHour=; the "
               "fair-share usage, running jobs included).");
        for (size_t i = 0; i < n; i++) {
                fputs("corral_project_usage_core_hours{project=", f);
                put_label(f, l[i].name);
                fprintf(f, "} %.6f\n", l[i].usage);
        }
        header(f, "corral_project_fairshare", "gauge", "Fair-share factor per project: 1e6 x (1 - usage / total).");
        for (size_t i = 0; i < n; i++) {
                fputs("corral_project_fairshare{project=", f);
                put_label(f, l[i].name);
                fprintf(f, "} %.3f\n", l[i].fairshare);
        }
        header(f, "corral_project_core_hours_total", "counter", "Allocated core-hours of the runs that ended, per project.");
        for (size_t i = 0; i < n; i++) {
                fputs("corral_project_core_hours_total{project=", f);
                put_label(f, l[i].name);
                fprintf(f, "} %.6f\n", l[i].all_core_hours);
        }
        header(f, "corral_project_gpu_hours_total", "counter", "Allocated GPU-hours of the runs that ended, per project.");
        for (size_t i = 0; i < n; i++) {
                fputs("corral_project_gpu_hours_total{project=", f);
                put_label(f, l[i].name);
                fprintf(f, "} %.6f\n", l[i].all_gpu_hours);
        }
        header(f, "corral_project_service_units_total", "counter", "Service units charged for the runs that ended, per project.");
        for (size_t i = 0; i < n; i++) {
                fputs("corral_project_service_units_total{project=", f);
                put_label(f, l[i].name);
                fprintf(f, "} %.6f\n", l[i].all_service_units);
        }
        header(f, "corral_project_grant_service_units", "gauge", "Service units granted per period (Grant=).");
        for (size_t i = 0; i < n; i++)
                if (l[i].grant) {
                        fputs("corral_project_grant_service_units{project=", f);
                        put_label(f, l[i].name);
                        fprintf(f, "} %llu\n", (unsigned long long) l[i].grant);
                }
        header(f, "corral_project_grant_used_service_units", "gauge",
               "Service units spent in the current grant period, running jobs included.");
        for (size_t i = 0; i < n; i++)
                if (l[i].grant) {
                        fputs("corral_project_grant_used_service_units{project=", f);
                        put_label(f, l[i].name);
                        fprintf(f, "} %.6f\n", l[i].grant_used);
                }
        return 0;
}

int manager_write_metrics(Manager *m) {
        const char *path = manager_metrics_path(m);
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd, r;

        if (!path)
                return 0;
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                safe_close(fd);
                (void) unlink(tmp);
                return r;
        }
        r = metrics_format(m, f);
        if (r >= 0 && fflush(f) != 0)
                r = -errno ?: -EIO;
        if (r >= 0 && ferror(f))
                r = -EIO;
        /* The collector runs as another user: readable by all, as node_exporter expects. */
        if (r >= 0 && fchmod(fileno(f), 0644) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}
