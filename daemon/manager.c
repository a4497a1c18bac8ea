/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend-local.h"
#include "backend-slurm.h"
#include "commit.h"
#include "config-lastgood.h"
#include "devices.h"
#include "devices-mig.h"
#include "fd-util.h"
#include "interactive.h"
#include "job-mail.h"
#include "job-outcome.h"
#include "job-table.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "message.h"
#include "methods.h"
#include "gpu-jobs.h"
#include "metrics.h"
#include "project-slices.h"
#include "sched-driver.h"
#include "server.h"
#include "strv.h"
#include "time-util.h"
#include "topology.h"
#include "usage.h"


#define SCHED_INTERVAL_USEC (CORRAL_SCHED_INTERVAL_SEC * UINT64_C(1000000))

static uint64_t now_sec(void) {
        return (uint64_t) time(NULL);
}

/* After every event-loop iteration that did something: commit, schedule, commit, act,
 * answer. This is where "committed before acknowledged or acted on" holds. Its commits,
 * syncs and scheduling pass are billed to no user's budget (server.c bills requests):
 * each is shared by every request of the iteration, whoever sent them; the replies'
 * writing and the connections' teardown in server_flush() are billed to each
 * connection's user. */
static int on_post(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        bool pass = m->sched_needed && !manager_sched_deferred(m);
        int r;

        /* When a pass follows, what the iteration changed (a submit, an end) and the starts
         * the pass decides share its commit: nothing was acknowledged or acted on yet, and
         * one fsync fewer is a tenth of a trivial job's whole path. */
        if (!pass) {
                r = manager_commit(m);
                if (r < 0) {
                        log_error_errno(r, "Cannot commit state: %s. Exiting rather than acknowledge unrecorded changes.",
                                        store_error(m->store));
                        return sd_event_exit(m->event, EXIT_FAILURE);
                }
        }
        if (pass) {
                m->sched_needed = false;
                r = manager_schedule(m);
                if (r < 0)
                        log_error_errno(r, "Scheduling pass failed: %m");
                r = manager_commit(m);
                if (r < 0) {
                        log_error_errno(r, "Cannot commit state: %s. Exiting.", store_error(m->store));
                        return sd_event_exit(m->event, EXIT_FAILURE);
                }
                /* Each backend acts on what the pass decided once that is on disk. */
                r = manager_backends_committed(m);
                if (r < 0)
                        return manager_sync_failed(m, r);
                r = manager_commit(m);
                if (r < 0)
                        return sd_event_exit(m->event, EXIT_FAILURE);
        }
        /* An outcome file goes once the end it reports is on disk. */
        if (m->n_outcomes_done > 0 && (r = manager_sync(m)) < 0)
                return manager_sync_failed(m, r);
        for (size_t i = 0; i < m->n_outcomes_done; i++) {
                /* A requeued job this iteration's pass started again has a new spec under
                 * the same name, which its supervisor has yet to read. */
                const Job *j = manager_find_job(m, m->outcomes_done[i]);
                bool again = j && (j->launching || j->state == JOB_RUNNING || j->state == JOB_SUSPENDED);
                (void) executor_outcome_consumed(m->executor, m->outcomes_done[i], !again);
        }
        m->n_outcomes_done = 0;
        if (m->server) {
                if (store_durable(m->store))
                        server_flush(m->server);
                else {
                        server_mark(m->server);
                        manager_sync_kick(m);
                }
        }
        return 0;
}

static int on_sched_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        /* Begin times and estimates move with the clock even when nothing happens. */
        manager_purge_finished(m, now_sec());
        manager_backends_tick(m);
        m->sched_needed = true;
        return sd_event_source_set_time_relative(s, SCHED_INTERVAL_USEC);
}

#define METRICS_INTERVAL_USEC (60 * UINT64_C(1000000))

static int on_metrics_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r = manager_write_metrics(m);

        if (r < 0)
                log_warning_errno(r, "Cannot write the metrics to %s: %m", strna(manager_metrics_path(m)));
        return sd_event_source_set_time_relative(s, METRICS_INTERVAL_USEC);
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

/* ---- devices ---- */

static char *describe_devices(const DeviceSet *s) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        for (size_t i = 0, n = 0; i < s->n_devices; i++) {
                const Device *d = &s->devices[i];
                if (!device_is_schedulable(d))
                        continue;
                fprintf(f, "%s%s (%s, %s", n++ ? ", " : "", d->name, device_vendor_to_string(d->vendor),
                        d->model ?: "model unknown");
                if (d->numa_node >= 0)
                        fprintf(f, ", NUMA node %d", d->numa_node);
                fprintf(f, ")");
        }
        if (fclose(f) != 0)
                return mfree(text);
        return text;
}

/* The GPUs running and suspended jobs hold. */
static uint64_t gpus_held(const Manager *m) {
        uint64_t held = 0;

        for (size_t i = 0; i < m->n_jobs; i++)
                if (job_state_is_active(m->jobs[i]->state) && job_alloc(m->jobs[i]))
                        held |= job_alloc(m->jobs[i])->gpu_mask;
        return held;
}

/* A card a running job holds that is gone now: the job keeps its index (nobody else is
 * given it) and runs on as it was started, its fence unchanged. */
static void warn_gone_held(const Manager *m, const DeviceSet *old, const DeviceSet *new) {
        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *j = m->jobs[i];

                if (!job_state_is_active(j->state) || !job_alloc(j))
                        continue;
                for (size_t g = 0; g < new->n_devices && g < 64; g++)
                        if ((job_alloc(j)->gpu_mask & (UINT64_C(1) << g)) && new->devices[g].gone &&
                            !(old && g < old->n_devices && old->devices[g].gone))
                                log_warning("Job %" PRIu64 " holds %s (%s), which is gone or hidden: the job keeps it "
                                            "until it ends, nobody else is given it.",
                                            j->id, new->devices[g].name, device_key(&new->devices[g]));
        }
}

/* Discovery, then the [Device] sections over it; on start and on each reload. A section
 * that cannot apply is logged and skipped (the files loaded, so the rest of the
 * configuration is in force); a failure to read the machine keeps the devices there were. */
static int manager_load_devices(Manager *m) {
        _cleanup_(device_set_freep) DeviceSet *s = NULL, *stored = NULL;
        _cleanup_strv_free_ char **base = NULL;
        _cleanup_free_ SchedGpu *gpus = NULL;
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int sys = -EBADF, proc = -EBADF, dev = -EBADF;
        const DeviceSet *known = m->devices;
        DeviceSet *old;
        uint64_t reusable = 0;
        int r;

        sys = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        dev = open("/dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sys < 0 || proc < 0 || dev < 0)
                return log_error_errno(errno, "Cannot open /sys, /proc or /dev to look for GPUs: %m");
        r = devices_discover(sys, proc, dev, &s);
        if (r >= 0)
                r = devices_discover_mig(proc, s);
        if (r < 0)
                return log_error_errno(r, "Cannot look for GPUs: %m");
        /* Each card keeps its index: known is the set in force, or at start-up the one the
         * store kept. A gone card's index goes to a new one only when no running job holds
         * it, and never at start-up, before the jobs are read back. */
        if (!known && m->store) {
                r = store_load_gpus(m->store, &stored);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        log_warning_errno(r, "Cannot read the GPUs known before from the state database, they are "
                                          "numbered anew: %s", store_error(m->store));
                known = stored;
        } else if (known)
                reusable = ~gpus_held(m);
        r = device_set_place(s, known, reusable);
        if (r < 0)
                return log_oom();
        for (size_t i = 0; m->config && i < m->config->n_devices; i++) {
                const DeviceConfig *c = &m->config->devices[i];
                _cleanup_free_ char *err = NULL;
                DeviceDecl d = {
                        .name = c->name,
                        .pci_address = c->pci_address,
                        .vendor = c->vendor,
                        .nodes = c->nodes,
                        .model = c->model,
                        .features = c->features,
                        .numa_node = c->numa_node,
                        .numa_node_set = c->numa_node != CONFIG_NUMA_NODE_UNSET,
                        .shards = c->shards > 0 ? (unsigned) c->shards : 0,
                        .shards_set = c->shards != CONFIG_SHARDS_UNSET,
                        .hide = c->hide,
                };

                r = device_set_apply(s, &d, &err);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        log_warning("%s: [Device] %s: %s; the section is ignored.", c->where,
                                    c->name ?: c->pci_address, strna(err));
                else if (r > 0)
                        log_info("%s: [Device] %s matches no device on this machine.", c->where,
                                 c->name ?: c->pci_address);
        }
        r = device_set_finish(s);
        if (r == -E2BIG)
                return log_error_errno(r, "More than %d devices: Corral schedules at most %d; the devices stay as "
                                       "they were.", SCHED_GPUS_MAX, SCHED_GPUS_MAX);
        if (r < 0)
                return log_oom();
        gpus = new0(SchedGpu, s->n_devices);
        if (!gpus)
                return log_oom();
        for (size_t g = 0; g < s->n_devices; g++) {
                gpus[g].node = -1;
                gpus[g].offline = !device_is_schedulable(&s->devices[g]);
                /* NVLink is GPU telemetry's to read (gpu-jobs.c); indexes stay a card's. */
                if (m->gpus && g < m->machine.n_gpus)
                        gpus[g].links = m->gpus[g].links;
                /* Shards=, else GPUShards= for a whole GPU (not for a declared FPGA and the
                 * like, nor a MIG device: already a share of a GPU). */
                gpus[g].shards = (uint16_t) MIN(s->devices[g].shards_set ? s->devices[g].shards
                                                : s->devices[g].vendor != DEVICE_VENDOR_OTHER && !s->devices[g].mig &&
                                                                  m->config
                                                        ? m->config->gpu_shards : 0,
                                                CORRAL_SHARDS_MAX);
                for (size_t k = 0; k < m->machine.n_nodes; k++)
                        if (s->devices[g].numa_node >= 0 && m->numa_ids[k] == (unsigned) s->devices[g].numa_node)
                                gpus[g].node = (int) k;
        }
        if (s->n_devices > 0) {
                r = device_fence_base(sys, proc, dev, s, &base);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0) {
                        /* Fenced all the same, the GPUs being what is shared: jobs keep only what
                         * DevicePolicy=closed always allows. */
                        log_error_errno(r, "Cannot list the machine's device drivers (/proc/devices): jobs are "
                                        "fenced from every device but the pseudo devices and their GPUs: %m");
                        if (!(base = new0(char *, 1)))
                                return log_oom();
                }
        }

        warn_gone_held(m, m->devices, s);
        STRV_FOREACH(u, s->unscheduled)
                log_warning("GPU %s.", *u);
        old = m->devices;
        m->devices = TAKE_PTR(s);
        if (m->acct)
                accounting_set_devices(m->acct, m->devices);
        device_set_free(old);
        free(m->gpus);
        m->gpus = TAKE_PTR(gpus);
        strv_free(m->device_fence_base);
        m->device_fence_base = TAKE_PTR(base);
        m->machine.gpus = m->gpus;
        m->machine.n_gpus = m->devices->n_devices;
        if (m->store && store_set_gpus(m->store, m->devices) < 0)
                log_warning("Cannot keep the GPUs' identities in the state database: %s; running jobs' GPUs "
                            "are kept in memory.", store_error(m->store));
        text = describe_devices(m->devices);
        size_t n_sched = 0;
        for (size_t g = 0; g < m->devices->n_devices; g++)
                n_sched += device_is_schedulable(&m->devices->devices[g]);
        if (n_sched > 0)
                log_info("%zu device%s scheduled, each job fenced to its own: %s", n_sched, n_sched == 1 ? "" : "s",
                         strna(text));
        m->sched_needed = true;
        return 0;
}

static void apply_server_limits(Manager *m) {
        if (m->server)
                server_set_limits(m->server, &(ServerLimits) {
                        .connections_per_user = m->config->max_connections_per_user,
                        .connection_output = m->config->max_connection_output,
                        .request_share = m->config->request_share_per_user,
                        .request_burst_usec = m->config->request_burst_per_user * USEC_PER_SEC,
                });
}

int manager_listen(Manager *m, const char *socket_path) {
        int r;

        assert(!m->server);
        r = server_new(m->event, socket_path, &manager_server_ops, m, &m->server);
        if (r < 0)
                return r;
        server_set_fd_closer(m->server, m->fd_closer);
        apply_server_limits(m);
        return server_set_notice(m->server, m->config_notice);
}

static int cmp_user_limits(const void *a, const void *b) {
        uint32_t x = ((const SchedUserLimits *) a)->user_id, y = ((const SchedUserLimits *) b)->user_id;
        return x < y ? -1 : x > y;
}

/* The projects' limits for sched/: ids in configuration order, members' overrides by
 * uid (a [User] of no such user is skipped with a warning: it may exist later). */
static int build_sched_projects(Manager *m, const Config *c) {
        _cleanup_free_ SchedProject *projects = NULL;
        _cleanup_free_ SchedUserLimits *users = NULL;
        _cleanup_free_ const char **names = NULL;
        size_t n_users = 0, u = 0;

        for (size_t i = 0; i < c->n_projects; i++)
                n_users += c->projects[i].n_users;
        if (c->n_projects > 0 &&
            (!(projects = new0(SchedProject, c->n_projects)) || !(names = new0(const char *, c->n_projects)) ||
             (n_users > 0 && !(users = new0(SchedUserLimits, n_users)))))
                return -ENOMEM;
        for (size_t i = 0; i < c->n_projects; i++) {
                const ProjectConfig *pc = &c->projects[i];
                size_t first = u;

                names[i] = intern(pc->name);
                if (!names[i])
                        return -ENOMEM;
                for (size_t k = 0; k < pc->n_users; k++) {
                        struct passwd *pw = getpwnam(pc->users[k].name);
                        if (!pw) {
                                log_warning("Project %s: [User] Name=%s is no user here; ignored.", pc->name,
                                            pc->users[k].name);
                                continue;
                        }
                        users[u++] = (SchedUserLimits) { .user_id = pw->pw_uid, .limits = pc->users[k].limits };
                }
                if (u > first)
                        qsort(users + first, u - first, sizeof(SchedUserLimits), cmp_user_limits);
                projects[i] = (SchedProject) {
                        .id = (uint32_t) i + 1,
                        .total = pc->total,
                        .per_user = pc->per_user,
                        .users = users ? users + first : NULL,
                        .n_users = u - first,
                        .allowed_cpus = pc->slice.have_allowed_cpus ? &pc->slice.allowed_cpus : NULL,
                };
        }
        free(m->sched_projects);
        free(m->sched_users);
        free(m->project_names);
        m->sched_projects = TAKE_PTR(projects);
        m->sched_users = TAKE_PTR(users);
        m->project_names = TAKE_PTR(names);
        m->n_projects = c->n_projects;
        m->sched_config.projects = m->sched_projects;
        m->sched_config.n_projects = m->n_projects;
        return 0;
}

static int apply_config(Manager *m, Config *c) {
        _cleanup_(config_freep) Config *old = NULL;
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
        if (build_sched_projects(m, c) < 0) {
                config_free(c);
                return -ENOMEM;
        }
        old = TAKE_PTR(m->config);
        m->config = c;
        if (m->acct)
                accounting_set_config(m->acct, c);
        apply_server_limits(m);
        manager_apply_slices(m, old);
        /* At start-up the machine is read after the configuration, and the devices with it. */
        if (m->nodes)
                (void) manager_load_devices(m);
        return 0;
}

static void format_time(uint64_t t, char buf[static 64]) {
        time_t tt = (time_t) t;
        struct tm tm;

        if (!localtime_r(&tt, &tm) || strftime(buf, 64, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                snprintf(buf, 64, "@%" PRIu64, t);
}

int manager_config_in_force(Manager *m, char **ret) {
        char when[64];

        format_time(m->config_since, when);
        if (m->config_lastgood)
                return asprintf(ret, "the last good configuration, saved %s in %s/%s", when, m->statedir,
                                CONFIG_LASTGOOD_DIR) < 0 ? -ENOMEM : 0;
        return asprintf(ret, "the configuration loaded from %s at %s", m->confdir, when) < 0 ? -ENOMEM : 0;
}

/* While the files on disk do not load, every reply says so (the CLI prints it on stderr),
 * and so does the status line. */
static void config_announce(Manager *m) {
        _cleanup_free_ char *in_force = NULL;

        m->config_notice = mfree(m->config_notice);
        if (m->config_error && manager_config_in_force(m, &in_force) >= 0 &&
            asprintf(&m->config_notice, "the configuration on disk does not load (%s); corrald runs on %s",
                     m->config_error, in_force) < 0)
                m->config_notice = NULL;
        if (m->server)
                (void) server_set_notice(m->server, m->config_notice);
}

int manager_reload(Manager *m, char **ret_error) {
        Config *c = NULL;
        int r;

        /* An admin who reloads has often just changed an account or a group too. */
        nss_cache_flush(m->nss);
        r = config_load(m->confdir, &c, ret_error);
        if (r < 0) {
                /* The last good configuration stays; corral info says why the new one did not. */
                free(m->config_error);
                m->config_error = *ret_error ? strdup(*ret_error) : strdup(strerror(-r));
                config_announce(m);
                return r;
        }
        r = apply_config(m, c);
        if (r < 0)
                return r;
        m->config_error = mfree(m->config_error);
        m->config_lastgood = false;
        m->config_since = now_sec();
        /* What a later start falls back on when the files do not load then. */
        if (m->statedir) {
                r = config_lastgood_save(m->statedir, m->confdir);
                if (r < 0)
                        log_warning_errno(r, "Cannot keep a copy of the configuration in %s/%s: %m", m->statedir,
                                          CONFIG_LASTGOOD_DIR);
        }
        config_announce(m);
        m->sched_needed = true;
        /* MetricsFile= may have changed: written soon, not a minute later. */
        if (m->metrics_timer)
                (void) sd_event_source_set_time_relative(m->metrics_timer, USEC_PER_SEC);
        return 0;
}

/* The files on disk do not load at start-up (error): start on the last good configuration,
 * shouting, rather than leave the machine without its scheduler; refuse when there is none. */
static int start_on_lastgood(Manager *m, const char *error) {
        _cleanup_free_ char *lerr = NULL, *in_force = NULL;
        Config *c = NULL;
        uint64_t saved = 0;
        int r;

        r = config_lastgood_load(m->statedir, &c, &lerr, &saved);
        if (r == -ENOENT)
                return log_error_errno(EINVAL, "Invalid configuration in %s: %s. There is no last good configuration "
                                       "to start on (none has loaded yet): fix it and start corrald again.",
                                       m->confdir, strna(error));
        if (r < 0)
                return log_error_errno(r, "Invalid configuration in %s: %s. The last good configuration in %s/%s "
                                       "does not load either: %s", m->confdir, strna(error), m->statedir,
                                       CONFIG_LASTGOOD_DIR, lerr ?: strerror(-r));
        r = apply_config(m, c);
        if (r < 0)
                return log_oom();
        m->config_lastgood = true;
        m->config_since = saved;
        config_announce(m);
        (void) manager_config_in_force(m, &in_force);
        log_error("Invalid configuration in %s: %s. Starting on %s; fix the files and reload "
                  "(systemctl reload corrald).", m->confdir, strna(error), strna(in_force));
        return 0;
}

int manager_load_config(Manager *m) {
        _cleanup_free_ char *err = NULL;
        int r;

        r = manager_reload(m, &err);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return start_on_lastgood(m, err);
        return 0;
}

void manager_pick_backends(Manager *m) {
        m->backends[QUEUE_BACKEND_LOCAL] = &job_backend_local;
        m->backends[QUEUE_BACKEND_SLURM] = &job_backend_slurm;
}

int manager_new(sd_event *event, sd_bus *bus, const char *confdir, const char *statedir, const char *rundir,
                Manager **ret) {
        _cleanup_(manager_freep) Manager *m = new0(Manager, 1);
        int r;

        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->bus = sd_bus_ref(bus);
        m->next_id = 1;
        manager_pick_backends(m);
        m->nss = nss_cache_new(&nss_ops_libc);
        if (!m->nss)
                return -ENOMEM;
        if (!(m->confdir = strdup(confdir)) || !(m->statedir = strdup(statedir)) || !(m->rundir = strdup(rundir)))
                return -ENOMEM;
        if (gethostname(m->hostname, sizeof m->hostname - 1) < 0)
                strcpy(m->hostname, "localhost");

        r = manager_load_config(m);
        if (r < 0)
                return r;
        r = load_machine(m);
        if (r == -ERANGE)
                return log_error_errno(r, "This machine has CPUs numbered %d or above: Corral supports at most %d "
                                       "CPUs (0-%d).", CPU_SET_MAX, CPU_SET_MAX, CPU_SET_MAX - 1);
        if (r == -E2BIG)
                return log_error_errno(r, "This machine has more than %d NUMA nodes: Corral supports at most %d.",
                                       SCHED_NODES_MAX, SCHED_NODES_MAX);
        if (r < 0)
                return log_error_errno(r, "Cannot read the machine's NUMA topology: %m");
        m->sched = sched_context_new();
        if (!m->sched)
                return -ENOMEM;
        r = store_open(statedir, &m->store);
        if (r < 0)
                return log_error_errno(r, "Cannot open the state database in %s: %s", statedir,
                                       m->store ? store_error(m->store) : strerror(-r));
        r = store_prepare_log(m->store);
        if (r < 0)
                log_warning_errno(r, "Cannot give the state database's log its size in advance, "
                                  "commits will cost more until it has grown: %m");
        /* After the store: the GPUs keep the indexes it kept. */
        r = manager_load_devices(m);
        if (r == -ENOMEM)
                return r;

        ExecutorConfig ec = {
                .supervisor_path = getenv("CORRAL_SUPERVISOR") ?: CORRAL_LIBEXECDIR "/corral-supervisor",
                .run_dir = rundir,
                .kill_wait_sec = m->config->kill_wait_sec,
                .before_unit = "corrald.service",
                .on_started = manager_on_job_started,
                .on_finished = manager_on_job_finished,
                .userdata = m,
        };
        r = fd_closer_new(event, -EBADF, &m->fd_closer);
        if (r < 0)
                return log_error_errno(r, "Cannot start the thread that closes users' descriptors: %m");
        r = executor_new(event, bus, &ec, &m->executor);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the executor: %m");
        r = accounting_new(m->store, m->executor, m->config, &m->acct);
        if (r < 0)
                return r;
        accounting_set_devices(m->acct, m->devices);
        /* Two threads: reports of two users at once; corrald's own work stays on the loop. */
        r = worker_pool_new(event, 2, &m->workers);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the worker threads: %m");
        r = worker_pool_new(event, 1, &m->sync_pool);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the worker threads: %m");

        r = sd_event_add_post(event, &m->post_source, on_post, m);
        if (r < 0)
                return r;
        /* Group commit: everything already readable when the loop wakes (other clients'
         * submits, job ends, systemd's signals) is handled before the commit, which then
         * carries it all; a connection with more than its share of requests goes on in
         * the backlog (idle priority), after the commit. */
        r = sd_event_source_set_priority(m->post_source, SD_EVENT_PRIORITY_NORMAL + 10);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(event, &m->sched_timer, CLOCK_MONOTONIC, SCHED_INTERVAL_USEC, 0,
                                       on_sched_timer, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(m->sched_timer, SD_EVENT_ON);
        /* The first write soon after start-up, then each minute. */
        r = sd_event_add_time_relative(event, &m->metrics_timer, CLOCK_MONOTONIC, USEC_PER_SEC, 0, on_metrics_timer, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(m->metrics_timer, SD_EVENT_ON);
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        /* What was answered and waits for its sync goes out, as far as the sockets take it. */
        {
                /* Its last sync ends in here: what that kicks off runs on this thread. */
                WorkerPool *p = TAKE_PTR(m->sync_pool);
                worker_pool_free(p);
        }
        if (m->store && m->server && store_sync(m->store) >= 0)
                server_flush(m->server);
        /* Calls still open refer to jobs: the server goes first. */
        m->server = server_free(m->server);
        /* Their calls are gone with the server: what is running finishes, answering nobody. */
        m->workers = worker_pool_free(m->workers);
        free(m->usage_inflight);
        if (m->store)
                (void) store_commit(m->store);
        sd_event_source_disable_unref(m->post_source);
        sd_event_source_disable_unref(m->sched_timer);
        sd_event_source_disable_unref(m->sched_defer);
        sd_event_source_disable_unref(m->sched_trim);
        sd_event_source_disable_unref(m->metrics_timer);
        manager_gpu_jobs_free(m);
        m->mail = job_mail_free(m->mail);
        manager_backends_free(m);
        executor_free(m->executor);
        store_close(m->store);
        manager_free_jobs(m);
        nss_cache_free(m->nss);
        free(m->sched_jobs);
        free(m->to_launch);
        free(m->outcomes_done);
        sched_context_free(m->sched);
        free(m->nodes);
        free(m->numa_ids);
        device_set_free(m->devices);
        free(m->gpus);
        strv_free(m->device_fence_base);
        config_free(m->config);
        free(m->sched_projects);
        free(m->sched_users);
        free(m->project_names);
        free(m->config_error);
        free(m->config_notice);
        accounting_free(m->acct);
        free(m->confdir);
        free(m->statedir);
        free(m->rundir);
        /* Last: the server's and the jobs' descriptors go through it. */
        m->fd_closer = fd_closer_free(m->fd_closer);
        sd_bus_unref(m->bus);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

static int load_one(Job *j, void *userdata) {
        Manager *m = userdata;
        int r;

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

int manager_load_jobs(Manager *m) {
        int r;

        r = store_load_jobs(m->store, load_one, m);
        if (r < 0)
                return r;
        return store_next_job_id(m->store, &m->next_id);
}

int manager_startup(Manager *m) {
        _cleanup_free_ char *last_boot = NULL;
        char boot[64] = "";
        bool rebooted;
        int r;

        r = manager_load_jobs(m);
        if (r < 0)
                return log_error_errno(r, "Cannot load jobs from the state database: %s", store_error(m->store));
        (void) read_boot_id(boot);
        (void) store_get_meta(m->store, "boot_id", &last_boot);
        rebooted = last_boot && !streq(last_boot, boot);
        (void) store_set_meta(m->store, "boot_id", boot);

        r = manager_backends_adopt(m, rebooted);
        if (r < 0)
                return r;
        manager_interactive_startup(m);
        r = manager_commit(m);
        if (r < 0)
                return log_error_errno(r, "Cannot commit recovered state: %s", store_error(m->store));
        log_info("Loaded %zu jobs.", m->n_jobs);
        /* GPU telemetry is a report, never a condition of scheduling: without it, on. */
        r = manager_gpu_jobs_start(m);
        if (r < 0)
                log_warning_errno(r, "Cannot start GPU telemetry, going on without it: %m");
        m->sched_needed = true;
        return 0;
}

void manager_status(Manager *m, char *buf, size_t size) {
        size_t pending = 0;
        for (size_t i = 0; i < m->n_jobs; i++)
                if (job_state_is_pending(m->jobs[i]->state))
                        pending++;
        /* systemctl status shows this line: a broken configuration on disk comes first. */
        snprintf(buf, size, "%s%s%s%u running, %zu pending jobs; %u client connections",
                 m->config_error ? "CONFIGURATION ON DISK DOES NOT LOAD: " : "", strempty(m->config_error),
                 m->config_error ? (m->config_lastgood ? "; running on the last good one. " : "; running on the one before. ") : "",
                 m->n_running, pending, m->server ? server_n_connections(m->server) : 0);
}
