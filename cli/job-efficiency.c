/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One job's efficiency in the words of Slurm's seff (contrib/seff, 22.05), and the GPU lines
 * Corral adds: what the job held of the GPUs and how much of that it used. */

#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli-util.h"
#include "commands.h"
#include "job-efficiency.h"
#include "json-util.h"
#include "parse-util.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"

void job_efficiency_from_info(const JobInfo *info, json_object *gpu_usage, time_t now, JobEfficiency *ret) {
        JobEfficiency e = {
                .id = info->id,
                .array_job_id = info->array_job_id,
                .array_task_id = info->array_task_id,
                .user = info->user,
                .pending = info->start_time == 0 && info->end_time == 0,
                .active = info->start_time > 0 && info->end_time == 0,
                .exit_code = info->exit_code,
                .cores = info->cpus,
                .cpu_usec = info->usage.cpu_usec,
                .wall_sec = job_elapsed(info, now),
                .memory_peak = info->usage.memory_peak,
                .memory_requested = info->memory,
        };
        double util_sum = 0;

        for (size_t i = 0; json_object_is_type(gpu_usage, json_type_array) && i < json_object_array_length(gpu_usage) &&
                           i < CORRAL_GPUS_MAX;
             i++) {
                json_object *g = json_object_array_get_idx(gpu_usage, i), *v;
                uint64_t held;
                double mean;

                if (!json_object_is_type(g, json_type_object))
                        continue;
                held = json_field_unum(g, "held_sec");
                e.gpus++;
                e.gpu_held_sec += held;
                if (json_object_object_get_ex(g, "energy_j", &v) &&
                    (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))) {
                        e.has_energy = true;
                        e.energy_j += MAX(json_object_get_double(v), 0.0);
                }
                /* Read by NVML: a mean utilisation. Without one nothing is known of it. */
                if (!json_object_object_get_ex(g, "util_mean", &v) ||
                    (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)))
                        continue;
                mean = MIN(MAX(json_object_get_double(v), 0.0), 100.0);
                e.gpus_sampled++;
                e.gpu_sampled_sec += held;
                e.gpu_used_sec += (double) held * mean / 100.0;
                util_sum += mean;
                e.gpu_util_max = MAX(e.gpu_util_max, (unsigned) MIN(json_field_unum(g, "util_max"), 100));
                /* The job's own processes' where NVML listed them, as sacct's gres/gpumem. */
                e.gpu_memory_max = MAX(e.gpu_memory_max,
                                       json_field_unum(g, json_object_object_get_ex(g, "own_memory_max", NULL)
                                                                  ? "own_memory_max"
                                                                  : "memory_max"));
        }
        if (e.gpus_sampled > 0)
                e.gpu_util_mean = util_sum / e.gpus_sampled;
        *ret = e;
}

/* seff's time2str(): [D-]HH:MM:SS, as Slurm's own times are formatted. */
char *job_efficiency_time(char *buf, size_t size, uint64_t sec) {
        return format_duration(buf, size, sec);
}

/* seff's kbytes2str(): two decimals in the largest unit of 1024 that is not above it;
 * 0 is "0.00 MB", as there. */
char *job_efficiency_size(char *buf, size_t size, uint64_t bytes) {
        static const char units[] = "KMGTPE";
        double v = (double) bytes / 1024.0;
        size_t exp = 0;

        if (bytes == 0) {
                snprintf(buf, size, "0.00 MB");
                return buf;
        }
        for (; v >= 1024.0 && exp < 5; exp++)
                v /= 1024.0;
        snprintf(buf, size, "%.2f %cB", v, units[exp]);
        return buf;
}

static uint64_t cpu_sec(const JobEfficiency *e) {
        return (e->cpu_usec + 500000) / 1000000; /* rounded, as seff */
}

static void print_gpus(FILE *f, const JobEfficiency *e) {
        char a[32];

        fprintf(f, "GPUs: %u\n", e->gpus);
        /* Hours as the usage report counts them, and the time as seff's other lines: a
         * short job's 0.00 hours would say nothing. */
        fprintf(f, "GPU-hours Held: %.2f (%s GPU-walltime)\n", (double) e->gpu_held_sec / 3600.0,
                job_efficiency_time(a, sizeof a, e->gpu_held_sec));
        if (e->gpus_sampled == 0 || e->gpu_sampled_sec == 0) {
                /* Never read (no GPU telemetry, or not yet): unknown, not idle. */
                fprintf(f, "GPU Utilization: - (not read)\n");
                fprintf(f, "GPU Efficiency: - (not read)\n");
        } else {
                fprintf(f, "GPU Utilization: %.2f%% mean, %u%% max\n", e->gpu_util_mean, e->gpu_util_max);
                fprintf(f, "GPU Memory Max: %s\n", job_efficiency_size(a, sizeof a, e->gpu_memory_max));
                fprintf(f, "GPU Efficiency: %.2f%% of %s GPU-walltime", 100.0 * e->gpu_used_sec / (double) e->gpu_sampled_sec,
                        job_efficiency_time(a, sizeof a, e->gpu_sampled_sec));
                if (e->gpus_sampled < e->gpus)
                        fprintf(f, " (%u of %u GPUs read)", e->gpus_sampled, e->gpus);
                fputc('\n', f);
        }
        if (e->has_energy)
                fprintf(f, "GPU Energy: %.0f J\n", e->energy_j);
}

int job_efficiency_print(FILE *f, const JobEfficiency *e) {
        char a[32], b[32];

        fprintf(f, "Job ID: %" PRIu64 "\n", e->id);
        if (e->array_job_id > 0)
                fprintf(f, "Array Job ID: %" PRIu64 "_%" PRIu32 "\n", e->array_job_id, e->array_task_id);
        fprintf(f, "Cluster: %s\n", strna(e->cluster));
        fprintf(f, "User/Group: %s/%s\n", strna(e->user), strna(e->group));
        if (e->pending || e->active)
                fprintf(f, "State: %s\n", strna(e->state));
        else
                fprintf(f, "State: %s (exit code %d)\n", strna(e->state), MAX(e->exit_code, 0));
        if (e->cores <= 1)
                fprintf(f, "Cores: %u\n", MAX(e->cores, 1U));
        else
                fprintf(f, "Nodes: 1\nCores per node: %u\n", e->cores);
        if (e->pending) {
                fprintf(f, "Efficiency not available for jobs in the %s state.\n", strna(e->state));
                return ferror(f) ? -EIO : 0;
        }

        uint64_t core_wall = e->wall_sec * MAX(e->cores, 1U);
        fprintf(f, "CPU Utilized: %s\n", job_efficiency_time(a, sizeof a, cpu_sec(e)));
        fprintf(f, "CPU Efficiency: %.2f%% of %s core-walltime\n",
                core_wall > 0 ? 100.0 * (double) cpu_sec(e) / (double) core_wall : 0.0,
                job_efficiency_time(b, sizeof b, core_wall));
        fprintf(f, "Job Wall-clock time: %s\n", job_efficiency_time(a, sizeof a, e->wall_sec));
        fprintf(f, "Memory Utilized: %s\n", job_efficiency_size(a, sizeof a, e->memory_peak));
        if (e->memory_requested > 0)
                fprintf(f, "Memory Efficiency: %.2f%% of %s\n",
                        100.0 * (double) e->memory_peak / (double) e->memory_requested,
                        job_efficiency_size(b, sizeof b, e->memory_requested));
        else
                fprintf(f, "Memory Efficiency: - (no memory requested)\n");
        if (e->gpus > 0)
                print_gpus(f, e);
        if (e->active)
                fprintf(f, "WARNING: Efficiency statistics may be misleading for %s jobs.\n", strna(e->state));
        return ferror(f) ? -EIO : 0;
}

static void add_or_null(json_object *o, const char *key, bool known, double v) {
        if (known)
                json_add(o, key, json_object_new_double(v));
        else
                (void) json_object_object_add(o, key, NULL);
}

json_object *job_efficiency_to_json(const JobEfficiency *e) {
        json_object *o = json_object_new_object();
        uint64_t core_wall = e->wall_sec * MAX(e->cores, 1U);
        bool read = e->gpus_sampled > 0 && e->gpu_sampled_sec > 0;

        if (!o)
                return NULL;
        json_add_u64(o, "job_id", e->id);
        if (e->array_job_id > 0) {
                json_add_u64(o, "array_job_id", e->array_job_id);
                json_add_u64(o, "array_task_id", e->array_task_id);
        }
        json_add_string(o, "cluster", e->cluster);
        json_add_string(o, "user", e->user);
        json_add_string(o, "group", e->group);
        json_add_string(o, "state", e->state);
        if (!e->pending && !e->active)
                json_add(o, "exit_code", json_object_new_int(MAX(e->exit_code, 0)));
        json_add_u64(o, "cores", e->cores);
        json_add_u64(o, "cpu_sec", cpu_sec(e));
        json_add_u64(o, "wall_sec", e->wall_sec);
        add_or_null(o, "cpu_efficiency", !e->pending && core_wall > 0, (double) cpu_sec(e) / (double) core_wall);
        json_add_u64(o, "memory_peak", e->memory_peak);
        json_add_u64(o, "memory_requested", e->memory_requested);
        add_or_null(o, "memory_efficiency", !e->pending && e->memory_requested > 0,
                    (double) e->memory_peak / (double) e->memory_requested);
        json_add_u64(o, "gpus", e->gpus);
        if (e->gpus > 0) {
                json_add(o, "gpu_hours_held", json_object_new_double((double) e->gpu_held_sec / 3600.0));
                add_or_null(o, "gpu_hours_used", read, e->gpu_used_sec / 3600.0);
                add_or_null(o, "gpu_hours_sampled", read, (double) e->gpu_sampled_sec / 3600.0);
                add_or_null(o, "gpu_efficiency", read, read ? e->gpu_used_sec / (double) e->gpu_sampled_sec : 0);
                add_or_null(o, "gpu_util_mean", read, e->gpu_util_mean);
                add_or_null(o, "gpu_util_max", read, e->gpu_util_max);
                if (read)
                        json_add_u64(o, "gpu_memory_max", e->gpu_memory_max);
                else
                        (void) json_object_object_add(o, "gpu_memory_max", NULL);
                add_or_null(o, "gpu_energy_j", e->has_energy, e->energy_j);
        }
        return o;
}

void job_efficiency_view_done(JobEfficiencyView *v) {
        job_entry_done(&v->entry);
}

int job_efficiency_fetch(Cli *cli, const char *arg, bool slurm, JobEfficiencyView *ret) {
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ uint64_t *ids = NULL;
        char subject[64];
        json_object *job, *gpu_usage = NULL;
        struct passwd *pw;
        struct group *gr;
        size_t n = 0, failed = 0;
        int r;

        *ret = (JobEfficiencyView) { .entry.info = JOB_INFO_INIT };
        r = cli_resolve_jobs(cli, (char *const[]) { (char *) arg }, 1, &ids, &n, &failed);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (r > 0)
                return r;
        if (failed > 0 || n != 1)
                return CLI_EXIT_FAILURE; /* said: no such array task */
        snprintf(subject, sizeof subject, "job %" PRIu64, ids[0]);
        r = cli_call(cli, CORRAL_METHOD_SHOW, json_job_id(ids[0]), &reply);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (reply.error) {
                if (slurm && corral_error_from_string(reply.error) == CORRAL_ERROR_NO_SUCH_JOB) {
                        fprintf(stderr, "Job not found.\n");
                        return CLI_EXIT_FAILURE;
                }
                return cli_report_error(cli, subject, &reply);
        }
        if (!json_object_object_get_ex(reply.parameters, "job", &job) || job_entry_from_json(job, &ret->entry) < 0) {
                log_error("%s: corrald sent a reply this %s cannot read (are it and corrald the same version?)",
                          subject, slurm ? "command" : "corral");
                return CLI_EXIT_FAILURE;
        }
        /* Show gives the usage to the owner and administrators only: without it there is
         * nothing to say, and a 0 would be a lie. */
        if (!ret->entry.info.has_details) {
                log_error("%s: its usage is shown to its owner and administrators only", subject);
                return CLI_EXIT_FAILURE;
        }
        (void) json_object_object_get_ex(job, "gpu_usage", &gpu_usage);
        job_efficiency_from_info(&ret->entry.info, gpu_usage, time(NULL), &ret->eff);

        if (gethostname(ret->cluster, sizeof ret->cluster - 1) < 0 || !ret->cluster[0])
                snprintf(ret->cluster, sizeof ret->cluster, "localhost");
        pw = getpwuid(ret->entry.info.uid);
        gr = pw ? getgrgid(pw->pw_gid) : NULL;
        if (gr && gr->gr_name[0])
                snprintf(ret->group, sizeof ret->group, "%s", gr->gr_name);
        else if (pw)
                snprintf(ret->group, sizeof ret->group, "%u", (unsigned) pw->pw_gid);
        ret->eff.cluster = ret->cluster;
        ret->eff.group = ret->group[0] ? ret->group : NULL;
        ret->eff.state = ret->entry.info.state;
        return 0;
}
