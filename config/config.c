/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fd-util.h"
#include "ini.h"
#include "job-request.h"
#include "parse-util.h"
#include "strv.h"

static void queue_config_done(QueueConfig *q) {
        free(q->name);
        strv_free(q->allow_projects);
        strv_free(q->allow_groups);
        strv_free(q->preempts);
        strv_free(q->overridden);
        free(q->slurm_partition);
        free(q->overflow_to);
        strv_free(q->slurm_account);
        *q = (QueueConfig) {};
}

static void device_config_done(DeviceConfig *d) {
        free(d->name);
        free(d->pci_address);
        free(d->vendor);
        strv_free(d->nodes);
        free(d->model);
        strv_free(d->features);
        free(d->where);
        *d = (DeviceConfig) { .numa_node = CONFIG_NUMA_NODE_UNSET, .shards = CONFIG_SHARDS_UNSET };
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_devices; i++)
                device_config_done(&c->devices[i]);
        free(c->devices);
        free(c->operator_group);
        free(c->default_queue);
        free(c->policy);
        free(c->backfill_order);
        free(c->priority_type);
        strv_free(c->fairshare_exclude_queues);
        free(c->metrics_file);
        free(c->mail_prog);
        free(c->slurm_bin_dir);
        for (size_t i = 0; i < c->n_queues; i++)
                queue_config_done(&c->queues[i]);
        free(c->queues);
        strv_free(c->removed_builtins);
        for (size_t i = 0; i < c->n_projects; i++)
                project_config_done(&c->projects[i]);
        free(c->projects);
        free(c);
        return NULL;
}

const ProjectConfig *config_find_project(const Config *c, const char *name) {
        for (size_t i = 0; i < c->n_projects; i++)
                if (streq(c->projects[i].name, name))
                        return &c->projects[i];
        return NULL;
}

/* What no single file can check: project queues exist, a user has one default. */
static int check_projects(Config *c, const char *dir, char **ret_error) {
        for (size_t i = 0; i < c->n_projects; i++) {
                const ProjectConfig *p = &c->projects[i];
                STRV_FOREACH(q, p->queues)
                        if (!config_find_queue(c, *q)) {
                                if (asprintf(ret_error, "%s/%s.conf: Queues= names %s, which is no queue", dir, p->name,
                                             *q) < 0)
                                        *ret_error = NULL;
                                return -EINVAL;
                        }
                STRV_FOREACH(u, p->default_for)
                        for (size_t k = 0; k < i; k++)
                                if (strv_contains(c->projects[k].default_for, *u)) {
                                        if (asprintf(ret_error, "%s/%s.conf: DefaultFor= %s, who already has %s as "
                                                     "default project", dir, p->name, *u, c->projects[k].name) < 0)
                                                *ret_error = NULL;
                                        return -EINVAL;
                                }
        }
        return 0;
}

const QueueConfig *config_find_queue(const Config *c, const char *name) {
        for (size_t i = 0; i < c->n_queues; i++)
                if (streq(c->queues[i].name, name))
                        return &c->queues[i];
        return NULL;
}

static int parse_policy(const char *v, void *data) {
        if (!sched_policy_from_name(v))
                return -EINVAL;
        return ini_parse_string(v, data);
}
static int parse_priority_type(const char *v, void *data) {
        if (!sched_priority_from_name(v))
                return -EINVAL;
        return ini_parse_string(v, data);
}
static int parse_backfill_order(const char *v, void *data) {
        if (!streq(v, "priority") && !streq(v, "sjf"))
                return -EINVAL;
        return ini_parse_string(v, data);
}
static int parse_ident(const char *v, void *data) {
        if (!ident_is_valid(v))
                return -EINVAL;
        return ini_parse_string(v, data);
}

/* A queue name, or empty for none. */
static int parse_queue_name(const char *v, void *data) {
        if (isempty(v))
                return ini_parse_string(v, data);
        return parse_ident(v, data);
}

static int parse_idents(const char *v, void *data) {
        return ini_parse_strv_checked(v, data, ident_is_valid);
}

/* A list that, unlike ini_parse_strv(), tells "set to nothing" (an empty list) from "not
 * set" (NULL: the default applies). */
static int parse_queue_list(const char *v, void *data) {
        char ***l = data;

        if (isempty(v)) {
                strv_free(*l);
                *l = new0(char *, 1);
                return *l ? 0 : -ENOMEM;
        }
        return parse_idents(v, data);
}

static int parse_xfactor(const char *v, void *data) {
        double d;
        int r = ini_parse_double(v, &d);

        if (r < 0)
                return r;
        if (!(d >= 1.0))
                return -ERANGE;
        *(double *) data = d;
        return 0;
}

static int parse_absolute_path(const char *v, void *data) {
        if (!isempty(v) && v[0] != '/')
                return -EINVAL;
        return ini_parse_string(v, data);
}

static int parse_percent(const char *v, void *data) {
        _cleanup_free_ char *n = strdup(v);
        size_t l = n ? strlen(n) : 0;
        unsigned u;
        int r;

        if (!n)
                return -ENOMEM;
        if (l > 0 && n[l - 1] == '%')
                n[l - 1] = 0;
        r = safe_atou(n, &u);
        if (r < 0)
                return r;
        if (u > 100)
                return -ERANGE;
        *(uint32_t *) data = u;
        return 0;
}

static int parse_ordering(const char *v, void *data) {
        if (streq(v, "priority"))
                *(bool *) data = false;
        else if (streq(v, "shuffle"))
                *(bool *) data = true;
        else
                return -EINVAL;
        return 0;
}

static int parse_vendor(const char *v, void *data) {
        if (!streq(v, "nvidia") && !streq(v, "amd") && !streq(v, "other"))
                return -EINVAL;
        return ini_parse_string(v, data);
}

static int parse_pci_address(const char *v, void *data) {
        unsigned dom, bus, slot, fn;
        int n = 0;

        if (strlen(v) != 12 || sscanf(v, "%4x:%2x:%2x.%1x%n", &dom, &bus, &slot, &fn, &n) != 4 || n != 12)
                return -EINVAL;
        return ini_parse_string(v, data);
}

/* What systemd's DeviceAllow= takes as a node: below /dev, normalized, no blanks. */
static bool device_node_is_valid(const char *p) {
        if (!strneq(p, "/dev/", 5) || strlen(p) > 4096 || p[strlen(p) - 1] == '/' || strstr(p, "//") ||
            strstr(p, "/./") || strstr(p, "/../") || (strlen(p) >= 3 && streq(p + strlen(p) - 3, "/..")) ||
            (strlen(p) >= 2 && streq(p + strlen(p) - 2, "/.")))
                return false;
        for (const char *c = p; *c; c++)
                if ((unsigned char) *c <= ' ' || *c == 0x7f)
                        return false;
        return true;
}

static const char *const queue_backend_table[_QUEUE_BACKEND_MAX] = {
        [QUEUE_BACKEND_LOCAL] = "local",
        [QUEUE_BACKEND_SLURM] = "slurm",
};

DEFINE_STRING_TABLE_LOOKUP(queue_backend, QueueBackend);

static int parse_backend(const char *v, void *data) {
        QueueBackend b = queue_backend_from_string(v);

        if (b < 0)
                return b;
        *(QueueBackend *) data = b;
        return 0;
}

/* A Slurm name (partition, account): what slurm.conf takes, no separators sbatch would
 * split on. */
static bool slurm_name_is_valid(const char *s) {
        if (isempty(s) || strlen(s) > 64)
                return false;
        for (const char *p = s; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *p))
                        return false;
        return true;
}

static int parse_device_nodes(const char *v, void *data) {
        return ini_parse_strv_checked(v, data, device_node_is_valid);
}

static int parse_numa_node(const char *v, void *data) {
        int n;

        if (safe_atoi(v, &n) < 0 || n < -1 || n > 1023)
                return -EINVAL;
        *(int *) data = n;
        return 0;
}

static int parse_shards(const char *v, void *data) {
        unsigned n;

        if (safe_atou(v, &n) < 0 || n > CORRAL_SHARDS_MAX)
                return -EINVAL;
        *(int *) data = (int) n;
        return 0;
}

static int parse_gpu_shards(const char *v, void *data) {
        unsigned n;

        if (safe_atou(v, &n) < 0 || n > CORRAL_SHARDS_MAX)
                return -EINVAL;
        *(uint32_t *) data = n;
        return 0;
}

static int parse_slurm_name(const char *v, void *data) {
        if (!isempty(v) && !slurm_name_is_valid(v))
                return -EINVAL;
        return ini_parse_string(v, data);
}

static bool account_entry_is_valid(const char *s) {
        const char *colon = strchr(s, ':');
        _cleanup_free_ char *project = NULL;

        if (!colon)
                return slurm_name_is_valid(s);
        project = strndup(s, colon - s);
        return project && ident_is_valid(project) && slurm_name_is_valid(colon + 1);
}

static int parse_slurm_account(const char *v, void *data) {
        return ini_parse_strv_checked(v, data, account_entry_is_valid);
}

static int parse_poll_sec(const char *v, void *data) {
        uint64_t u;
        int r = ini_parse_sec(v, &u);

        if (r < 0)
                return r;
        if (u < CONFIG_SLURM_POLL_SEC_MIN || u > 3600)
                return -ERANGE;
        *(uint64_t *) data = u;
        return 0;
}

static int parse_gpu_sample_sec(const char *v, void *data) {
        uint64_t u;
        int r = ini_parse_sec(v, &u);

        if (r < 0)
                return r;
        if (u > CONFIG_GPU_SAMPLE_SEC_MAX)
                return -ERANGE;
        *(uint64_t *) data = u;
        return 0;
}

static int parse_shard_memory_policy(const char *v, void *data) {
        if (streq(v, "report"))
                *(bool *) data = false;
        else if (streq(v, "cancel"))
                *(bool *) data = true;
        else
                return -EINVAL;
        return 0;
}

static int parse_gpu_idle_action(const char *v, void *data) {
        if (streq(v, "none"))
                *(GpuIdleAction *) data = GPU_IDLE_ACTION_NONE;
        else if (streq(v, "cancel"))
                *(GpuIdleAction *) data = GPU_IDLE_ACTION_CANCEL;
        else if (streq(v, "mail"))
                *(GpuIdleAction *) data = GPU_IDLE_ACTION_MAIL;
        else
                return -EINVAL;
        return 0;
}

static int parse_unmanaged_gpu(const char *v, void *data) {
        if (streq(v, "avoid"))
                *(bool *) data = true;
        else if (streq(v, "ignore"))
                *(bool *) data = false;
        else
                return -EINVAL;
        return 0;
}

static int parse_max_forwarded(const char *v, void *data) {
        uint32_t u;
        int r = ini_parse_u32(v, &u);

        if (r < 0)
                return r;
        if (u == 0)
                return -ERANGE;
        *(uint32_t *) data = u;
        return 0;
}

#define MGR(k, p, f, e) INI_ITEM("Manager", k, p, Config, f, e)
#define DEV(k, p, f, e) INI_ITEM("Device", k, p, DeviceConfig, f, e)
#define QUE(k, p, f, e) INI_ITEM("Queue", k, p, QueueConfig, f, e)
static const IniItem items[] = {
        MGR("OperatorGroup", ini_parse_string, operator_group, "a group name"),
        MGR("UsersMaySuspend", ini_parse_bool, users_may_suspend, "a boolean"),
        MGR("KillWaitSec", ini_parse_sec, kill_wait_sec, "a duration"),
        MGR("DefaultQueue", parse_ident, default_queue, "a queue name"),
        MGR("MaxJobsPerUser", ini_parse_u32, max_jobs_per_user, "a number (0: no limit)"),
        MGR("MaxArraySize", ini_parse_u32, max_array_size, "a number of tasks (0: no limit)"),
        MGR("MaxStoredBytesPerUser", ini_parse_bytes, max_stored_bytes_per_user, "a size such as 256M (0: no limit)"),
        MGR("MaxConnectionsPerUser", ini_parse_u32, max_connections_per_user, "a number"),
        MGR("MaxWaitsPerConnection", ini_parse_u32, max_waits_per_connection, "a number"),
        MGR("MaxConnectionOutput", ini_parse_bytes, max_connection_output, "a size such as 4M"),
        MGR("RequestSharePerUser", parse_percent, request_share_per_user, "a percentage, 0 to 100 (0: no limit)"),
        MGR("RequestBurstPerUser", ini_parse_sec, request_burst_per_user, "a duration such as 5s"),
        MGR("Policy", parse_policy, policy, "fcfs, easy or conservative"),
        MGR("BackfillOrder", parse_backfill_order, backfill_order, "priority or sjf"),
        MGR("PriorityType", parse_priority_type, priority_type, "multifactor or fcfs"),
        MGR("Ordering", parse_ordering, shuffle, "priority or shuffle"),
        MGR("PriorityWeightQueue", ini_parse_double, weights.queue, "a number"),
        MGR("PriorityWeightFairShare", ini_parse_double, weights.fairshare, "a number"),
        MGR("PriorityWeightAge", ini_parse_double, weights.age, "a number (per second waited)"),
        MGR("PriorityWeightXFactor", ini_parse_double, weights.xfactor, "a number"),
        MGR("PriorityWeightSize", ini_parse_double, weights.size, "a number (per CPU)"),
        MGR("PriorityWeightBypass", ini_parse_double, weights.bypass, "a number (per bypass)"),
        MGR("PriorityWeightTarget", ini_parse_double, weights.target, "a number"),
        MGR("FairShareHalfLife", ini_parse_sec, fairshare_half_life, "a duration such as 168h (infinity: no decay)"),
        MGR("FairShareExcludeQueues", parse_queue_list, fairshare_exclude_queues, "queue names"),
        MGR("ChargePerGPUHour", ini_parse_double, charge_per_gpu_hour,
            "a number of core-hours one GPU-hour is charged as, 0 or more, such as 8"),
        MGR("MetricsFile", parse_absolute_path, metrics_file, "an absolute path"),
        MGR("GPUSampleSec", parse_gpu_sample_sec, gpu_sample_sec, "a duration up to 1h (0: no GPU telemetry)"),
        MGR("GPUIdlePercent", parse_percent, gpu_idle_percent, "a percentage, 0 to 100 (0: no job is ever idle)"),
        MGR("GPUIdleSec", ini_parse_sec, gpu_idle_sec, "a duration such as 30min"),
        MGR("GPUIdleAction", parse_gpu_idle_action, gpu_idle_action,
            "none, cancel or mail"),
        MGR("UnmanagedGPU", parse_unmanaged_gpu, unmanaged_gpu_avoid, "avoid or ignore"),
        MGR("GPUShards", parse_gpu_shards, gpu_shards, "a number of shards, 0 to 1024 (0: GPUs are not shared)"),
        MGR("ShardMemoryPolicy", parse_shard_memory_policy, shard_memory_cancel, "report or cancel"),
        MGR("SlurmBinDir", parse_absolute_path, slurm_bin_dir, "an absolute path"),
        MGR("SlurmPollSec", parse_poll_sec, slurm_poll_sec, "a duration from 5s to 1h"),
        MGR("MailProg", parse_absolute_path, mail_prog, "an absolute path"),
        MGR("MaxXFactor", parse_xfactor, max_xfactor, "a number >= 1, such as 1.25"),
        MGR("SuspendWindowSec", ini_parse_sec, suspend_window_sec, "a duration"),
        MGR("MaxSuspendTime", ini_parse_sec, max_suspend_time, "a duration (infinity: no cap)"),
        MGR("ReclaimSuspended", ini_parse_bool, reclaim_suspended, "a boolean"),
        MGR("InteractiveHangupSec", ini_parse_sec, interactive_hangup_sec, "a duration such as 30s"),
        QUE("Name", parse_ident, name, "a queue name ([A-Za-z0-9_.-], up to 64)"),
        QUE("Priority", ini_parse_i32, priority, "an integer"),
        QUE("Rerunnable", ini_parse_bool, rerunnable, "a boolean"),
        QUE("MaxWalltime", ini_parse_sec, max_walltime, "a duration"),
        QUE("DefaultWalltime", ini_parse_sec, default_walltime, "a duration"),
        QUE("ChargeFactor", ini_parse_double, charge_factor, "a number of service units per core-hour, such as 1.5"),
        QUE("MaxCPUsPerJob", ini_parse_u32, max_cpus_per_job, "a number of CPUs"),
        QUE("AllowProjects", parse_idents, allow_projects, "project names"),
        QUE("AllowGroups", ini_parse_strv, allow_groups, "unix group names"),
        QUE("TargetQueueTime", ini_parse_sec, target_queue_time, "a duration"),
        QUE("Preempts", parse_idents, preempts, "queue names"),
        QUE("ParallelRun", ini_parse_bool, parallel_run, "a boolean"),
        QUE("Preemptable", ini_parse_bool, preemptable, "a boolean"),
        QUE("Disabled", ini_parse_bool, disabled, "a boolean"),
        QUE("Backend", parse_backend, backend, "local or slurm"),
        QUE("SlurmPartition", parse_slurm_name, slurm_partition, "a Slurm partition name"),
        QUE("SlurmAccount", parse_slurm_account, slurm_account, "PROJECT:ACCOUNT entries and one ACCOUNT"),
        QUE("MaxForwarded", parse_max_forwarded, max_forwarded, "a number of jobs (at least 1)"),
        QUE("OverflowTo", parse_queue_name, overflow_to, "a queue name"),
        QUE("OverflowAfterSec", ini_parse_sec, overflow_after, "a duration"),
        QUE("AllowInteractive", ini_parse_bool, allow_interactive, "a boolean"),
        QUE("MaxInteractiveWalltime", ini_parse_sec, max_interactive_walltime, "a duration"),
        DEV("Name", parse_ident, name, "a device name ([A-Za-z0-9_.-], up to 64)"),
        DEV("PCIAddress", parse_pci_address, pci_address, "a PCI address such as 0000:3b:00.0"),
        DEV("Vendor", parse_vendor, vendor, "nvidia, amd or other"),
        DEV("Kind", parse_vendor, vendor, "nvidia, amd or other"),
        DEV("Nodes", parse_device_nodes, nodes, "device node paths below /dev"),
        DEV("NumaNode", parse_numa_node, numa_node, "a NUMA node number, or -1 for none"),
        DEV("Model", ini_parse_string, model, "a model name"),
        DEV("Features", parse_idents, features, "feature names ([A-Za-z0-9_.-])"),
        DEV("Shards", parse_shards, shards, "a number of shards, 0 to 1024 (0: not shared)"),
        DEV("Hide", ini_parse_bool, hide, "a boolean"),
};

/* While loading: a [Queue] section is collected whole, then merged into the queue of the
 * same Name= from an earlier file or section key by key, so a drop-in that sets only
 * Priority= keeps the MaxWalltime= the main file gave (systemd's drop-in semantics). */
typedef struct ConfigLoad {
        Config *config;
        QueueConfig queue;
        DeviceConfig device;
} ConfigLoad;

static void *section_begin(void *userdata, const char *section) {
        ConfigLoad *l = userdata;

        if (streq(section, "Manager"))
                return l->config;
        if (streq(section, "Queue")) {
                l->queue = (QueueConfig) { .rerunnable = true, .charge_factor = 1.0, .preemptable = true,
                                           .max_forwarded = CONFIG_MAX_FORWARDED_DEFAULT,
                                           .allow_interactive = true };
                return &l->queue;
        }
        if (streq(section, "Device")) {
                l->device = (DeviceConfig) { .numa_node = CONFIG_NUMA_NODE_UNSET, .shards = CONFIG_SHARDS_UNSET };
                return &l->device;
        }
        return NULL;
}

/* A [Device] section is kept whole, in order: corrald applies them over discovery. */
static int device_section_end(ConfigLoad *l, const char *path, unsigned line, char **ret_error) {
        Config *c = l->config;
        DeviceConfig *n;

        if (!l->device.name && !l->device.pci_address) {
                device_config_done(&l->device);
                return ini_error(ret_error, path, line, "a [Device] section has neither Name= nor PCIAddress=");
        }
        if (asprintf(&l->device.where, "%s:%u", path, line) < 0) {
                l->device.where = NULL;
                device_config_done(&l->device);
                return -ENOMEM;
        }
        n = reallocarray(c->devices, c->n_devices + 1, sizeof *n);
        if (!n) {
                device_config_done(&l->device);
                return -ENOMEM;
        }
        c->devices = n;
        c->devices[c->n_devices++] = l->device;
        l->device = (DeviceConfig) { .numa_node = CONFIG_NUMA_NODE_UNSET, .shards = CONFIG_SHARDS_UNSET };
        return 0;
}

static int section_end(void *userdata, const char *section, void *target, uint64_t set, const char *path,
                       unsigned line, char **ret_error) {
        ConfigLoad *l = userdata;
        Config *c = l->config;
        QueueConfig *into;

        if (streq(section, "Device"))
                return device_section_end(l, path, line, ret_error);
        if (!streq(section, "Queue"))
                return 0;
        if (!l->queue.name)
                return ini_error(ret_error, path, line, "a [Queue] section has no Name=");
        into = (QueueConfig *) config_find_queue(c, l->queue.name);
        if (!into) {
                QueueConfig *q = reallocarray(c->queues, c->n_queues + 1, sizeof *q);
                if (!q) {
                        queue_config_done(&l->queue);
                        return -ENOMEM;
                }
                c->queues = q;
                c->queues[c->n_queues++] = l->queue;
                l->queue = (QueueConfig) {};
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                char *to = (char *) into + items[i].offset, *from = (char *) &l->queue + items[i].offset;

                if (!streq(items[i].section, "Queue") || !ini_item_set(items, i, set) ||
                    items[i].offset == offsetof(QueueConfig, name))
                        continue;
                if (items[i].parse == ini_parse_strv || items[i].parse == parse_idents ||
                    items[i].parse == parse_slurm_account) {
                        /* Lists move over, replacing the earlier one. */
                        strv_free(*(char ***) to);
                        *(char ***) to = TAKE_PTR(*(char ***) from);
                } else if (items[i].parse == parse_slurm_name || items[i].parse == parse_queue_name) {
                        /* Strings move over too: the section's copy is freed below. */
                        free(*(char **) to);
                        *(char **) to = TAKE_PTR(*(char **) from);
                } else
                        memcpy(to, from, items[i].size);
                /* corral config check names what of a built-in the site changed. */
                if (into->builtin && !strv_contains(into->overridden, items[i].key) &&
                    strv_extend(&into->overridden, items[i].key) < 0) {
                        queue_config_done(&l->queue);
                        return -ENOMEM;
                }
        }
        queue_config_done(&l->queue);
        return 0;
}

static const IniOps config_ops = {
        .section_begin = section_begin,
        .section_end = section_end,
        .known = "[Manager], [Queue], [Device]",
};

static int load_file(Config *c, const char *path, char **ret_error) {
        ConfigLoad l = { .config = c };
        int r = ini_load(path, 1024 * 1024, items, ELEMENTSOF(items), &config_ops, &l, ret_error);

        queue_config_done(&l.queue); /* a section cut short by an error */
        device_config_done(&l.device);
        return r;
}

/* The seeds' three queues, there before any file is read, so that a [Queue] section
 * changes or adds one queue and never loses the others. NCI's: express work runs at once
 * by suspending normal work, and is charged three times normal's. Express is open to the
 * express group only (and admins): see corrald(8), QUEUES. */
static int add_builtin_queues(Config *c) {
        static const struct {
                const char *name;
                int32_t prio;
                double charge;
                const char *preempts, *group;
        } def[] = {
                { "express", 2, 3.0, "normal", CORRAL_EXPRESS_GROUP },
                { "normal", 1, 1.0, NULL, NULL },
                { "bonus", 0, 0.0, NULL, NULL },
        };

        c->queues = new0(QueueConfig, ELEMENTSOF(def));
        if (!c->queues)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(def); i++) {
                QueueConfig *q = &c->queues[c->n_queues++];

                *q = (QueueConfig) { .name = strdup(def[i].name), .priority = def[i].prio, .rerunnable = true,
                                     .charge_factor = def[i].charge, .preemptable = true, .builtin = true,
                                     .max_forwarded = CONFIG_MAX_FORWARDED_DEFAULT, .allow_interactive = true };
                if (!q->name || (def[i].preempts && strv_extend(&q->preempts, def[i].preempts) < 0) ||
                    (def[i].group && strv_extend(&q->allow_groups, def[i].group) < 0))
                        return -ENOMEM;
        }
        return 0;
}

/* Disabled=yes takes a queue out once every file is read (a later drop-in may say
 * Disabled=no again). A built-in's own Preempts= forgets a queue so removed: the admin
 * who removes normal did not write express's Preempts=normal. */
static int remove_disabled_queues(Config *c) {
        size_t n = 0;

        /* Allocations first, so that a failure leaves the queues as they were. */
        for (size_t i = 0; i < c->n_queues; i++)
                if (c->queues[i].disabled && c->queues[i].builtin &&
                    strv_extend(&c->removed_builtins, c->queues[i].name) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < c->n_queues; i++)
                if (c->queues[i].disabled)
                        queue_config_done(&c->queues[i]);
                else
                        c->queues[n++] = c->queues[i];
        c->n_queues = n;
        for (size_t i = 0; i < c->n_queues; i++) {
                QueueConfig *q = &c->queues[i];
                size_t k = 0;

                if (!q->builtin || strv_contains(q->overridden, "Preempts"))
                        continue;
                STRV_FOREACH(p, q->preempts)
                        if (strv_contains(c->removed_builtins, *p))
                                free(*p);
                        else
                                q->preempts[k++] = *p;
                if (q->preempts)
                        q->preempts[k] = NULL;
        }
        return 0;
}

/* "a, b, c", or "(none)" for an empty list. */
static char *join_names(char *const *l) {
        size_t n = 1;
        char *s, *p;

        if (!l || !l[0])
                return strdup("(none)");
        STRV_FOREACH(i, l)
                n += strlen(*i) + 2;
        s = p = malloc(n);
        if (!s)
                return NULL;
        STRV_FOREACH(i, l)
                p = stpcpy(stpcpy(p, i == l ? "" : ", "), *i);
        return s;
}

bool queue_config_allows(const QueueConfig *q, const char *project, char *const *group_names) {
        if (q->allow_projects && !(project && strv_contains(q->allow_projects, project)))
                return false;
        if (!q->allow_groups)
                return true;
        STRV_FOREACH(g, q->allow_groups)
                if (strv_contains(group_names, *g))
                        return true;
        return false;
}

int queue_config_refusal(const QueueConfig *q, const char *project, char **ret) {
        _cleanup_free_ char *groups = NULL, *projects = NULL;
        int r;

        if (q->allow_projects && !(project && strv_contains(q->allow_projects, project))) {
                projects = join_names(q->allow_projects);
                if (!projects)
                        return -ENOMEM;
                r = asprintf(ret,
                             "queue %s takes only jobs of the projects %s (its AllowProjects=), not of %s; an "
                             "administrator changes that in a [Queue] Name=%s section of corral.conf",
                             q->name, projects, project ?: "(none)", q->name);
        } else {
                groups = join_names(q->allow_groups);
                if (!groups)
                        return -ENOMEM;
                r = asprintf(ret,
                             "queue %s is open only to members of the groups %s (its AllowGroups=), root and the "
                             "operator group: an administrator adds you to one (gpasswd -a USER %s), or opens the "
                             "queue to everyone with an empty AllowGroups= in a [Queue] Name=%s section of "
                             "corral.conf (corral.conf(5))",
                             q->name, groups,
                             q->allow_groups && q->allow_groups[0] ? q->allow_groups[0] : "GROUP", q->name);
        }
        return r < 0 ? -ENOMEM : 0;
}

/* What only the merged queues tell: the Slurm keys belong to a Backend=slurm queue, whose
 * jobs never run here, so nothing suspends them and they suspend nothing. */
static int check_backends(Config *c, char **ret_error) {
        for (size_t i = 0; i < c->n_queues; i++) {
                const QueueConfig *q = &c->queues[i];
                const char *why = NULL;

                if (q->backend == QUEUE_BACKEND_LOCAL) {
                        if (q->slurm_partition || q->slurm_account)
                                why = "sets SlurmPartition= or SlurmAccount=, which only a queue with Backend=slurm takes";
                        for (size_t k = 0; !why && k < c->n_queues; k++)
                                if (c->queues[k].backend == QUEUE_BACKEND_SLURM && k < 64 &&
                                    (q->preempts_mask & (UINT64_C(1) << k)))
                                        why = "has Preempts= naming a Backend=slurm queue, whose jobs do not run here";
                        if (!why && q->overflow_to) {
                                const QueueConfig *t = config_find_queue(c, q->overflow_to);
                                if (!t || t->backend != QUEUE_BACKEND_SLURM)
                                        why = "has OverflowTo= naming no queue with Backend=slurm";
                        }
                } else if (q->overflow_to)
                        why = "has Backend=slurm and OverflowTo=: only a local queue overflows";
                else if (q->preempts_mask || q->parallel_run)
                        why = "has Backend=slurm and Preempts= or ParallelRun=: its jobs run on the cluster and "
                              "cannot suspend this machine's";
                if (why) {
                        if (asprintf(ret_error, "[Queue] %s: %s", q->name, why) < 0)
                                *ret_error = NULL;
                        return -EINVAL;
                }
        }
        return 0;
}

const char *queue_config_slurm_account(const QueueConfig *q, const char *project) {
        const char *fallback = project;
        size_t n = project ? strlen(project) : 0;

        STRV_FOREACH(e, q->slurm_account) {
                const char *colon = strchr(*e, ':');

                if (!colon)
                        fallback = *e;
                else if (project && (size_t) (colon - *e) == n && strneq(*e, project, n))
                        return colon + 1;
        }
        return fallback;
}

const char *config_slurm_bin_dir(const Config *c, const char *root) {
        _cleanup_free_ char *p = NULL;

        if (c->slurm_bin_dir)
                return c->slurm_bin_dir;
        if (asprintf(&p, "%s%s/sbatch", streq(root ?: "/", "/") ? "" : root, CONFIG_SLURM_DIVERTED_BINDIR) >= 0 &&
            access(p, X_OK) == 0)
                return CONFIG_SLURM_DIVERTED_BINDIR;
        return "/usr/bin";
}

static int filename_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int config_load(const char *confdir, Config **ret, char **ret_error) {
        _cleanup_free_ char *main_path = NULL, *dropdir = NULL, *pdir = NULL;

        *ret_error = NULL;
        if (asprintf(&main_path, "%s/corral.conf", confdir) < 0 ||
            asprintf(&dropdir, "%s/corral.conf.d", confdir) < 0 || asprintf(&pdir, "%s/projects.d", confdir) < 0)
                return -ENOMEM;
        return config_load_paths(main_path, dropdir, pdir, ret, ret_error);
}

int config_load_paths(const char *main_path, const char *dropdir, const char *pdir, Config **ret,
                      char **ret_error) {
        _cleanup_(config_freep) Config *c = new0(Config, 1);
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        *ret_error = NULL;
        if (!c)
                return -ENOMEM;
        c->kill_wait_sec = 30;
        c->weights = SCHED_WEIGHTS_IT4I;
        c->max_jobs_per_user = 20000;
        c->max_array_size = 10000;
        c->max_stored_bytes_per_user = UINT64_C(256) << 20;
        c->max_connections_per_user = 32;
        c->max_waits_per_connection = 64;
        c->interactive_hangup_sec = CONFIG_INTERACTIVE_HANGUP_SEC_DEFAULT;
        c->max_connection_output = UINT64_C(4) << 20;
        c->request_share_per_user = 25;
        c->request_burst_per_user = 5;
        c->fairshare_half_life = 168 * 3600; /* IT4I: a week */
        c->charge_per_gpu_hour = 8;           /* a GPU is worth about the CPUs that come with it */
        c->max_xfactor = 1.25;                /* NCI */
        c->suspend_window_sec = 600;
        c->slurm_poll_sec = CONFIG_SLURM_POLL_SEC_DEFAULT;
        c->gpu_sample_sec = CONFIG_GPU_SAMPLE_SEC_DEFAULT;
        c->gpu_idle_percent = CONFIG_GPU_IDLE_PERCENT_DEFAULT;
        c->gpu_idle_sec = CONFIG_GPU_IDLE_SEC_DEFAULT;
        c->unmanaged_gpu_avoid = true;
        r = add_builtin_queues(c);
        if (r < 0)
                return r;
        r = main_path ? load_file(c, main_path, ret_error) : 0;
        if (r < 0)
                return r;
        d = dropdir ? opendir(dropdir) : NULL;
        if (d) {
                struct dirent *de;
                while ((de = readdir(d))) {
                        size_t n = strlen(de->d_name);
                        if (n > 5 && streq(de->d_name + n - 5, ".conf") && de->d_name[0] != '.') {
                                char *f;
                                if (asprintf(&f, "%s/%s", dropdir, de->d_name) < 0)
                                        return -ENOMEM;
                                if (strv_push(&files, f) < 0) {
                                        free(f);
                                        return -ENOMEM;
                                }
                        }
                }
                if (files) /* qsort() wants an array, even of none */
                        qsort(files, strv_length(files), sizeof(char *), filename_cmp);
                STRV_FOREACH(f, files)
                        if ((r = load_file(c, *f, ret_error)) < 0)
                                return r;
        }

        r = remove_disabled_queues(c);
        if (r < 0)
                return r;
        if (c->n_queues == 0) {
                if (asprintf(ret_error, "every queue is Disabled=yes: no job could be submitted") < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        for (size_t i = 0; i < c->n_queues; i++) {
                QueueConfig *q = &c->queues[i];
                q->preempts_mask = 0;
                STRV_FOREACH(n, q->preempts) {
                        const QueueConfig *v = config_find_queue(c, *n);
                        size_t k = v ? (size_t) (v - c->queues) : 0;
                        const char *why = !v ? "no queue" : k == i ? "the queue itself (that is ParallelRun=)"
                                                     : k >= 64 ? "beyond the 64th queue" : NULL;
                        if (why) {
                                if (asprintf(ret_error, "[Queue] %s: Preempts= names %s, which is %s", q->name, *n,
                                             why) < 0)
                                        *ret_error = NULL;
                                return -EINVAL;
                        }
                        q->preempts_mask |= UINT64_C(1) << k;
                }
        }
        r = check_backends(c, ret_error);
        if (r < 0)
                return r;
        r = pdir ? projects_load(pdir, &c->projects, &c->n_projects, ret_error) : 0;
        if (r < 0) {
                if (r != -EINVAL && r != -ENOMEM && !*ret_error &&
                    asprintf(ret_error, "%s: cannot read: %s", pdir, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = check_projects(c, pdir, ret_error);
        if (r < 0)
                return r;
        if (!c->default_queue && !(c->default_queue = strdup(config_find_queue(c, "normal") ? "normal" : c->queues[0].name)))
                return -ENOMEM;
        if (!config_find_queue(c, c->default_queue)) {
                if (asprintf(ret_error, "DefaultQueue=%s names no configured queue", c->default_queue) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

int config_sched(const Config *c, SchedConfig *ret) {
        SchedConfig s = SCHED_CONFIG_DEFAULT;

        if (c->policy)
                s.policy = sched_policy_from_name(c->policy);
        if (c->priority_type)
                s.priority = sched_priority_from_name(c->priority_type);
        s.weights = c->weights;
        s.ordering = c->shuffle ? SCHED_ORDERING_SHUFFLE : SCHED_ORDERING_PRIORITY;
        if (c->backfill_order && streq(c->backfill_order, "sjf"))
                s.backfill_order = SCHED_BACKFILL_SJF;
        s.preempt = (SchedPreempt) {
                .max_xfactor = c->max_xfactor,
                .suspend_window = c->suspend_window_sec,
                .max_suspend_time = c->max_suspend_time == UINT64_MAX ? 0 : c->max_suspend_time,
                .reclaim = c->reclaim_suspended,
        };
        for (size_t i = 0; i < c->n_queues; i++)
                if (c->queues[i].preempts_mask || c->queues[i].parallel_run)
                        s.preempt.enabled = true;
        *ret = s;
        return 0;
}
