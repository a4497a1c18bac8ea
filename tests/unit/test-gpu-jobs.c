/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/gpu-jobs.c: a running job's GPU figures from NVML, through the fake
 * libnvidia-ml.so.1 ($FAKE_NVML_LIBRARY) and a Manager with no executor: what is stored at
 * its end is what the fake served while it ran (a suspended job not sampled), corral show
 * and corral info carry it; and the pure parts: the sums, the energy counter going back,
 * the cross-check of discovery with NVML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accounting/accounting.h"
#include "daemon/gpu-jobs.h"
#include "daemon/gpu-procs.h"
#include "daemon/job-why.h"
#include "daemon/job-outcome.h"
#include "daemon/job-table.h"
#include "daemon/manager.h"
#include "daemon/metrics.h"
#include "daemon/sched-driver.h"
#include "daemon/store.h"
#include "daemon/job-mail.h"
#include "daemon/usage.h"
#include "json-util.h"
#include "time-util.h"
#include "tmp-tree.h"
#include "test-manager-call.h"

#define NOBODY 65534
#define SUBMIT_TRUE "\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\""

static NvmlGpuSample sample(int util, uint64_t mem, uint64_t energy) {
        return (NvmlGpuSample) { .utilization = util, .memory_utilization = -1, .memory_used = mem,
                                 .energy_mj = energy, .power_mw = -1, .temperature = -1 };
}

static char config_path[128];

/* The fake NVML as corrald's library (its file config_path, written by the test), and
 * conf (the test's dir's corral.conf, kept for rewrites): a [Manager] section sampling
 * every second, with extra, and with metrics the metrics file in the test's dir. */
static void fake_nvml_setup(const Tree *t, const char *extra, bool metrics, char *conf, size_t conf_size) {
        FILE *f;

        snprintf(config_path, sizeof config_path, "%s/fake-nvml.conf", t->dir);
        assert_int_equal(setenv("FAKE_NVML_CONFIG", config_path, 1), 0);
        assert_int_equal(setenv(NVML_LIBRARY_ENV, getenv("FAKE_NVML_LIBRARY"), 1), 0);
        snprintf(conf, conf_size, "%s/corral.conf", t->dir);
        f = fopen(conf, "we");
        assert_non_null(f);
        fprintf(f, "[Manager]\nGPUSampleSec=1s\n%s", extra);
        if (metrics)
                fprintf(f, "MetricsFile=%s/corral.prom\n", t->dir);
        assert_int_equal(fclose(f), 0);
}

/* An empty fake procfs in the test's dir. */
static void fake_proc_root(const Tree *t, char *root, size_t size) {
        snprintf(root, size, "%s/proc", t->dir);
        assert_int_equal(mkdir(root, 0755), 0);
}

static void test_figures(void **state) {
        GpuJobFigures f = GPU_JOB_FIGURES_INIT;
        NvmlGpuSample s;
        StoreGpuUsage u;

        f.start_time = 1000;
        s = sample(20, 100, 5000);
        gpu_job_figures_add(&f, &s, 1010);
        s = sample(60, 300, 8000);
        gpu_job_figures_add(&f, &s, 1020);
        /* Unknown figures count for nothing. */
        s = sample(-1, UINT64_MAX, UINT64_MAX);
        gpu_job_figures_add(&f, &s, 1030);
        /* The counter went back (the driver reloaded): the sum goes on from there. */
        s = sample(40, 200, 1000);
        gpu_job_figures_add(&f, &s, 1040);
        s = sample(40, 200, 1500);
        gpu_job_figures_add(&f, &s, 1050);
        gpu_job_figures_to_store(&f, 1100, &u);
        assert_int_equal(u.samples, 4);
        assert_true(u.util_mean == 40.0);
        assert_int_equal(u.util_max, 60);
        assert_true(u.memory_max == 300);
        assert_true(u.energy_j == 3.5);
        assert_int_equal(u.held_sec, 100);
        /* NVML listed none of its processes: its own share is unknown, not zero. */
        assert_true(u.own_memory_max == UINT64_MAX);

        /* The job's own processes (by cgroup) on a GPU another job's share: theirs summed,
         * at its highest; a process /proc no longer had counts for nobody. */
        f = (GpuJobFigures) GPU_JOB_FIGURES_INIT;
        f.job_id = 12;
        s = sample(50, 5000, UINT64_MAX);
        s.processes[0] = (NvmlProcess) { .pid = 1, .memory_used = 100, .owner_known = true, .job_id = 12 };
        s.processes[1] = (NvmlProcess) { .pid = 2, .memory_used = 50, .owner_known = true, .job_id = 12 };
        s.processes[2] = (NvmlProcess) { .pid = 3, .memory_used = 4000, .owner_known = true, .job_id = 13 };
        s.processes[3] = (NvmlProcess) { .pid = 4, .memory_used = 700, .owner_known = false, .job_id = 12 };
        s.processes[4] = (NvmlProcess) { .pid = 5, .memory_used = UINT64_MAX, .owner_known = true, .job_id = 12 };
        s.n_processes = 5;
        gpu_job_figures_add(&f, &s, 1010);
        s.processes[1].memory_used = 20;
        gpu_job_figures_add(&f, &s, 1020);
        gpu_job_figures_to_store(&f, 1030, &u);
        assert_true(u.memory_max == 5000);
        assert_true(u.own_memory_max == 150);

        /* Never read: unknown, not zero. */
        f = (GpuJobFigures) GPU_JOB_FIGURES_INIT;
        f.start_time = 1000;
        gpu_job_figures_to_store(&f, 1060, &u);
        assert_int_equal(u.samples, 0);
        assert_true(u.util_mean < 0);
        assert_true(u.energy_j < 0);
        assert_true(u.own_memory_max == UINT64_MAX);
        assert_int_equal(u.held_sec, 60);
}

/* The idle clock: the samples' own times, a busy reading starts it over, an unknown one or
 * a suspension opens a new stretch without counting the gap. */
static void test_idle_clock(void **state) {
        GpuJobFigures f = GPU_JOB_FIGURES_INIT;

        gpu_job_figures_idle(&f, 0, 1000, 5);
        assert_int_equal(f.idle_sec, 0);
        gpu_job_figures_idle(&f, 4, 1010, 5);
        gpu_job_figures_idle(&f, 1, 1030, 5);
        assert_int_equal(f.idle_sec, 30);
        /* At the threshold is not below it. */
        gpu_job_figures_idle(&f, 5, 1040, 5);
        assert_int_equal(f.idle_sec, 0);
        gpu_job_figures_idle(&f, 0, 1050, 5);
        gpu_job_figures_idle(&f, 0, 1060, 5);
        assert_int_equal(f.idle_sec, 10);
        /* Suspended from 1060 to 5000: those seconds are not the job's idling. */
        gpu_job_figures_idle_pause(&f);
        gpu_job_figures_idle(&f, 0, 5000, 5);
        assert_int_equal(f.idle_sec, 10);
        gpu_job_figures_idle(&f, 0, 5010, 5);
        assert_int_equal(f.idle_sec, 20);
        /* No utilisation read: the same, no reset, no gap counted. */
        gpu_job_figures_idle(&f, -1, 5020, 5);
        gpu_job_figures_idle(&f, 0, 9000, 5);
        assert_int_equal(f.idle_sec, 20);
        /* A clock that went back counts nothing. */
        gpu_job_figures_idle(&f, 0, 8000, 5);
        assert_int_equal(f.idle_sec, 20);
}

/* Which job's scope a cgroup path is in, at any depth; none for anything else. */
static void test_cgroup_job_id(void **state) {
        assert_int_equal(gpu_cgroup_job_id("/corral.slice/corral-bio.slice/corral-job-12.scope"), 12);
        assert_int_equal(gpu_cgroup_job_id("/corral.slice/corral-job-7.scope/payload/x"), 7);
        assert_int_equal(gpu_cgroup_job_id("/user.slice/user-1000.slice/session-3.scope"), 0);
        assert_int_equal(gpu_cgroup_job_id("/"), 0);
        assert_int_equal(gpu_cgroup_job_id(""), 0);
        assert_int_equal(gpu_cgroup_job_id("/corral-job-.scope"), 0);
        assert_int_equal(gpu_cgroup_job_id("/corral-job-0.scope"), 0);
        assert_int_equal(gpu_cgroup_job_id("/corral-job-012.scope"), 0);
        assert_int_equal(gpu_cgroup_job_id("/corral-job-1x.scope"), 0);
        assert_int_equal(gpu_cgroup_job_id("/corral-job-99999999999999999999999.scope"), 0);
        assert_int_equal(gpu_cgroup_job_id("/not-corral-job-5.scope"), 0);
        assert_int_equal(gpu_cgroup_job_id("/corral-job-5.scope.d"), 0);
}

/* A fake <proc>/PID/cgroup. */
static void fake_proc(const char *root, unsigned pid, const char *cgroup) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof path, "%s/%u", root, pid);
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
        snprintf(path, sizeof path, "%s/%u/cgroup", root, pid);
        f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "0::%s\n", cgroup);
        assert_int_equal(fclose(f), 0);
}

/* Each process's owner and job from the fake procfs; one gone since is nobody's. */
static void test_owners(void **state) {
        Tree *t = *state;
        NvmlGpuInfo gi[1] = {};
        NvmlGpuSample gs[1] = {};
        GpuSnapshot s = { .gpus = gi, .samples = gs, .n_gpus = 1 };
        char root[128];
        int fd;

        fake_proc_root(t, root, sizeof root);
        fake_proc(root, 100, "/user.slice/user-1000.slice/session-1.scope");
        fake_proc(root, 200, "/corral.slice/corral-job-12.scope/payload");
        fake_proc(root, 300, "/corral.slice/corral-job-13.scope (deleted)");
        gs[0].processes[0].pid = 100;
        gs[0].processes[1].pid = 200;
        gs[0].processes[2].pid = 300;
        gs[0].processes[3].pid = 400; /* ended since */
        gs[0].n_processes = 4;
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        gpu_samples_owners(fd, s.samples, s.n_gpus);
        close(fd);
        assert_true(gs[0].processes[0].owner_known);
        assert_int_equal(gs[0].processes[0].uid, getuid());
        assert_int_equal(gs[0].processes[0].job_id, 0);
        assert_int_equal(gs[0].processes[1].job_id, 12);
        assert_int_equal(gs[0].processes[2].job_id, 13);
        assert_false(gs[0].processes[3].owner_known);
        assert_int_equal(gpu_sample_unmanaged(&gs[0]), 1);
}

static void test_cross_check(void **state) {
        Device d = { .name = (char *) "gpu0", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
                     .uuid = (char *) "GPU-0", .pci_address = (char *) "0000:3b:00.0", .numa_node = 0 };
        NvmlGpuInfo g = { .uuid = "GPU-0", .name = "NVIDIA A100-SXM4-40GB", .pci_address = "0000:3b:00.0",
                          .numa_node = 0, .mig_mode = -1 };
        NvmlGpuInfo other = { .uuid = "GPU-9", .pci_address = "0000:3b:00.0", .numa_node = -1 };
        GpuSnapshot s = { .gpus = &other, .n_gpus = 1 };
        char *msg = NULL;

        assert_int_equal(gpu_cross_check(&d, &g, &msg), 0);
        assert_null(msg);
        /* What one side does not say is no disagreement. */
        g.numa_node = -1;
        g.name[0] = '\0';
        assert_int_equal(gpu_cross_check(&d, &g, &msg), 0);
        strcpy(g.name, "NVIDIA H100 80GB HBM3");
        g.numa_node = 1;
        assert_int_equal(gpu_cross_check(&d, &g, &msg), 1);
        assert_string_equal(msg, "gpu0: model: discovery says \"NVIDIA A100-SXM4-40GB\", NVML \"NVIDIA H100 80GB "
                                 "HBM3\"; NUMA node: discovery says 0, NVML 1");
        free(msg);

        /* Found by UUID first, else by PCI address. */
        assert_int_equal(gpu_snapshot_find(&s, &d), 0);
        d.pci_address = (char *) "0000:5e:00.0";
        assert_int_equal(gpu_snapshot_find(&s, &d), -1);
        d.uuid = (char *) "GPU-9";
        assert_int_equal(gpu_snapshot_find(&s, &d), 0);
}

/* ---- through a Manager ---- */

static SchedNode nodes[1];

static Device test_devices[] = {
        { .name = (char *) "gpu0", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
          .uuid = (char *) "GPU-aaaa", .pci_address = (char *) "0000:3b:00.0", .numa_node = 0 },
        { .name = (char *) "gpu1", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
          .uuid = (char *) "GPU-bbbb", .pci_address = (char *) "0000:5e:00.0", .numa_node = 0 },
};

/* m as corrald's for these tests: the configuration in dir (written by the test), the
 * store and accounting there, one node of 4 CPUs and 8G, the test's GPUs (ds) and the
 * pass's view of them (sgpus, n: NULL, 0 for none). */
static void manager_for_test(Manager *m, const char *dir, DeviceSet *ds, SchedGpu *sgpus, size_t n) {
        char *err = NULL;

        assert_non_null(m);
        assert_int_equal(sd_event_new(&m->event), 0);
        manager_pick_backends(m);
        m->confdir = strdup(dir);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", err);
        assert_int_equal(store_open(dir, &m->store), 0);
        assert_int_equal(accounting_new(m->store, NULL, m->config, &m->acct), 0);
        m->sched = sched_context_new();
        nodes[0] = (SchedNode) { .memory = UINT64_C(8) << 30, .speed = 1 };
        for (unsigned c = 0; c < 4; c++)
                cpu_set_add(&nodes[0].cpus, c);
        m->machine = (SchedMachine) { .nodes = nodes, .n_nodes = 1, .gpus = sgpus, .n_gpus = n };
        m->next_id = 1;
        strcpy(m->hostname, "testhost");
        m->devices = ds;
}

/* m, made by manager_for_test(): the test's devices and nodes are not its to free, and
 * the fake NVML is no longer corrald's library. */
static void manager_for_test_free(Manager *m) {
        unsetenv(NVML_LIBRARY_ENV);
        m->devices = NULL;
        m->nodes = NULL;
        manager_free(m);
}

static void write_fake(const char *gpu1) {
        char tmp[160];
        FILE *f;

        snprintf(tmp, sizeof tmp, "%s.new", config_path);
        f = fopen(tmp, "we");
        assert_non_null(f);
        fprintf(f, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 util=5 used=1 energy=1 memory=42949672960 "
                   "name=NVIDIA A100-SXM4-40GB\n"
                   "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 memory=42949672960 %s name=NVIDIA A100-SXM4-40GB\n", gpu1);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, config_path), 0);
}

static json_object *info_gpu(Manager *m, size_t i, const char *key) {
        json_object *r = call(m, 0, CORRAL_METHOD_GET_INFO, "{}"), *p, *t, *g, *v = NULL;

        if (json_object_object_get_ex(r, "parameters", &p) && json_object_object_get_ex(p, "gpu_telemetry", &t) &&
            json_object_object_get_ex(t, "gpus", &g) && i < json_object_array_length(g))
                json_object_object_get_ex(json_object_array_get_idx(g, i), key, &v);
        v = v ? json_object_get(v) : NULL;
        json_object_put(r);
        return v;
}

/* Runs the loop until GPU 1's utilisation in corral info is util: the round that read the
 * fake as last written has been taken in. */
static void wait_for_round(Manager *m, int util) {
        uint64_t until = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;

        for (;;) {
                json_object *v = info_gpu(m, 1, "utilization");
                int got = v ? json_object_get_int(v) : -1;

                json_object_put(v);
                if (got == util)
                        return;
                if (now_usec(CLOCK_MONOTONIC) > until)
                        fail_msg("no snapshot with utilisation %d (last %d)", util, got);
                assert_true(sd_event_run(m->event, 200 * 1000) >= 0);
        }
}

static void test_job_figures(void **state) {
        Tree *t = *state;
        DeviceSet ds = { .devices = test_devices, .n_devices = ELEMENTSOF(test_devices) };
        Manager *m = calloc(1, sizeof *m);
        json_object *r, *p, *job, *usage, *e, *v;
        char params[64], conf[160];
        uint64_t id;
        Job *j;

        fake_nvml_setup(t, "", true, conf, sizeof conf);

        manager_for_test(m, t->dir, &ds, NULL, 0);
        assert_int_equal(m->config->gpu_sample_sec, 1);

        write_fake("util=20 used=100 energy=1000");
        assert_int_equal(manager_gpu_jobs_start(m), 0);
        wait_for_round(m, 20);
        r = call(m, 0, CORRAL_METHOD_GET_INFO, "{}");
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "gpu_telemetry", &v));
        assert_string_equal(json_object_get_string(json_object_object_get(v, "state")), "on");
        assert_int_equal(json_object_array_length(json_object_object_get(v, "gpus")), 2);

        /* Discovery and NVML agree: nothing to report. */
        assert_false(json_object_object_get_ex(v, "disagreements", NULL));
        json_object_put(r);

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":1}");
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        id = (uint64_t) json_object_get_int64(json_object_object_get(p, "job_id"));
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, id);
        assert_int_equal(j->state, JOB_RUNNING);
        job_alloc(j)->gpu_mask = 0x2; /* as if it held gpu1 */

        /* Two rounds while it runs. */
        write_fake("util=30 used=100 energy=2000");
        wait_for_round(m, 30);
        write_fake("util=70 used=300 energy=5000");
        wait_for_round(m, 70);
        /* corral queue's GPU%: the last reading of the GPU it holds (gpu1), not gpu0's. */
        r = call(m, NOBODY, CORRAL_METHOD_LIST, "{}");
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        e = json_object_array_get_idx(json_object_object_get(p, "jobs"), 0);
        assert_int_equal(json_object_get_int(json_object_object_get(e, "gpu_util")), 70);
        json_object_put(r);
        /* The metrics file: NVML's readings of each GPU, the job and user holding it. */
        {
                char prom[200], *text = NULL;
                size_t len = 0;
                FILE *pf;

                assert_int_equal(manager_write_metrics(m), 0);
                snprintf(prom, sizeof prom, "%s/corral.prom", t->dir);
                pf = fopen(prom, "re");
                assert_non_null(pf);
                assert_true(getdelim(&text, &len, '\0', pf) > 0);
                fclose(pf);
                assert_non_null(strstr(text, "corral_gpu_telemetry_up 1\n"));
                assert_non_null(strstr(text, "# TYPE corral_gpu_utilization_ratio gauge\n"));
                assert_non_null(strstr(text, "corral_gpu_utilization_ratio{gpu=\"gpu0\",uuid=\"GPU-aaaa\"} 0.05\n"));
                snprintf(prom, sizeof prom,
                         "corral_gpu_utilization_ratio{gpu=\"gpu1\",uuid=\"GPU-bbbb\",job=\"%" PRIu64 "\",user=\"nobody\"} 0.70\n", id);
                assert_non_null(strstr(text, prom));
                assert_non_null(strstr(text, "corral_gpu_memory_used_bytes{gpu=\"gpu0\",uuid=\"GPU-aaaa\"} 1\n"));
                assert_non_null(strstr(text, "corral_gpu_energy_joules_total{gpu=\"gpu0\",uuid=\"GPU-aaaa\"} 0.001\n"));
                assert_null(strstr(text, "corral_gpu_power_watts{"));
                free(text);
        }

        /* Suspended: not sampled. */
        j->state = JOB_SUSPENDED;
        write_fake("util=100 used=999 energy=90000");
        wait_for_round(m, 100);
        /* The figures so far, while it holds the GPU. */
        snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", id);
        r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "job", &job));
        assert_true(json_object_object_get_ex(job, "gpu_usage", &usage));
        e = json_object_array_get_idx(usage, 0);
        assert_true(json_object_get_boolean(json_object_object_get(e, "running")));
        assert_int_equal(json_object_get_int(json_object_object_get(e, "util_max")), 70);
        json_object_put(r);

        /* It ends: the next round stores its figures. */
        j->state = JOB_COMPLETED;
        j->end_time = j->start_time + 100;
        write_fake("util=0 used=0 energy=90000");
        wait_for_round(m, 0);

        r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "job", &job));
        assert_true(json_object_object_get_ex(job, "gpu_usage", &usage));
        assert_int_equal(json_object_array_length(usage), 1);
        e = json_object_array_get_idx(usage, 0);
        assert_false(json_object_get_boolean(json_object_object_get(e, "running")));
        assert_int_equal(json_object_get_int(json_object_object_get(e, "gpu")), 1);
        assert_string_equal(json_object_get_string(json_object_object_get(e, "uuid")), "GPU-bbbb");
        assert_int_equal(json_object_get_int(json_object_object_get(e, "samples")), 2);
        assert_true(json_object_get_double(json_object_object_get(e, "util_mean")) == 50.0);
        assert_int_equal(json_object_get_int(json_object_object_get(e, "util_max")), 70);
        assert_int_equal(json_object_get_int(json_object_object_get(e, "memory_max")), 300);
        assert_true(json_object_get_double(json_object_object_get(e, "energy_j")) == 3.0);
        assert_int_equal(json_object_get_int(json_object_object_get(e, "held_sec")), 100);
        json_object_put(r);

        /* NVML sees another model on gpu1's bus than discovery, and a GPU discovery did not
         * find: reported, each once however many rounds see it. */
        for (int util = 9; util <= 10; util++) {
                char tmp[160];
                FILE *ff;

                snprintf(tmp, sizeof tmp, "%s.new", config_path);
                ff = fopen(tmp, "we");
                assert_non_null(ff);
                fprintf(ff, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 util=5 name=NVIDIA A100-SXM4-40GB\n"
                            "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 util=%d numa=1 name=NVIDIA H100 80GB HBM3\n"
                            "gpu uuid=GPU-cccc pci=00000000:AF:00.0 util=0 name=NVIDIA H100 80GB HBM3\n", util);
                assert_int_equal(fclose(ff), 0);
                assert_int_equal(rename(tmp, config_path), 0);
                wait_for_round(m, util);
        }
        r = call(m, 0, CORRAL_METHOD_GET_INFO, "{}");
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "gpu_telemetry", &v));
        assert_true(json_object_object_get_ex(v, "disagreements", &v));
        assert_int_equal(json_object_array_length(v), 2);
        assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)),
                            "gpu1: model: discovery says \"NVIDIA A100-SXM4-40GB\", NVML \"NVIDIA H100 80GB HBM3\"; "
                            "NUMA node: discovery says 0, NVML 1");
        assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 1)),
                            "NVML sees GPU-cccc (0000:af:00.0, NVIDIA H100 80GB HBM3) that discovery does not schedule");
        json_object_put(r);

        manager_for_test_free(m);
}

static void write_fake2(int util0, int util1) {
        char tmp[160];
        FILE *f;

        snprintf(tmp, sizeof tmp, "%s.new", config_path);
        f = fopen(tmp, "we");
        assert_non_null(f);
        fprintf(f, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 util=%d name=NVIDIA A100-SXM4-40GB\n"
                   "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 util=%d name=NVIDIA A100-SXM4-40GB\n", util0, util1);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, config_path), 0);
}

/* Rounds with gpu0 at util0 and gpu1 at each of util1s in turn. */
static void idle_rounds(Manager *m, int util0, const int *util1s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                write_fake2(util0, util1s[i]);
                wait_for_round(m, util1s[i]);
        }
}

/* List's gpu_idle_sec for the job (0: absent). */
static uint64_t listed_idle(Manager *m, uint64_t id) {
        json_object *r = call(m, NOBODY, CORRAL_METHOD_LIST, "{}"), *p, *jobs, *v;
        uint64_t sec = 0;

        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "jobs", &jobs));
        for (size_t i = 0; i < json_object_array_length(jobs); i++) {
                json_object *e = json_object_array_get_idx(jobs, i);
                if ((uint64_t) json_object_get_int64(json_object_object_get(e, "id")) == id &&
                    json_object_object_get_ex(e, "gpu_idle_sec", &v))
                        sec = (uint64_t) json_object_get_int64(v);
        }
        json_object_put(r);
        return sec;
}

/* corral why's sentences, joined. */
static char *why_text(Manager *m, uint64_t id) {
        char params[64], *s = NULL;
        json_object *r, *p, *why;
        size_t len = 0;
        FILE *f = open_memstream(&s, &len);

        snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", id);
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "why", &why));
        for (size_t i = 0; i < json_object_array_length(why); i++)
                fprintf(f, "%s\n", json_object_get_string(json_object_array_get_idx(why, i)));
        fclose(f);
        json_object_put(r);
        return s;
}

static const char *show_idle(Manager *m, uint64_t id, json_object **keep) {
        char params[64];
        json_object *p, *job, *v;

        snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", id);
        *keep = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        assert_true(json_object_object_get_ex(*keep, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "job", &job));
        return json_object_object_get_ex(job, "gpu_idle", &v) ? json_object_get_string(v) : NULL;
}

/* What would have been handed to MailProg=, in order. */
typedef struct SentMail {
        unsigned n;
        char *msg[8];
} SentMail;

static int record_mail(void *userdata, uint64_t job_id, uid_t uid, const char *message) {
        SentMail *s = userdata;

        assert_true(s->n < ELEMENTSOF(s->msg));
        assert_non_null(s->msg[s->n++] = strdup(message));
        return 0;
}

/* GPUIdlePercent=, GPUIdleSec=, GPUIdleAction=: a running job whose every GPU reads below
 * the threshold for long enough is marked (List, Why, Show), by the samples' clock; one busy
 * GPU, a busy reading or a suspension's time keep it from being marked; with
 * GPUIdleAction=cancel it is cancelled, the reason naming its GPUs. */
static void test_idle_job(void **state) {
        static const int idle4[] = { 1, 2, 3, 4 }, idle1[] = { 1 }, busy[] = { 50 }, idle3[] = { 2, 3, 4 };
        Tree *t = *state;
        DeviceSet ds = { .devices = test_devices, .n_devices = ELEMENTSOF(test_devices) };
        Manager *m = calloc(1, sizeof *m);
        json_object *r, *p, *keep;
        char *err = NULL, conf[160], *why;
        const char *idle;
        SentMail sent = {};
        uint64_t id;
        Job *j;
        FILE *f;

        fake_nvml_setup(t, "GPUIdleSec=2s\n", true, conf, sizeof conf);

        manager_for_test(m, t->dir, &ds, NULL, 0);
        assert_int_equal(m->config->gpu_idle_percent, 5);

        write_fake2(0, 0);
        assert_int_equal(manager_gpu_jobs_start(m), 0);
        wait_for_round(m, 0);
        job_mail_set_sender(m, record_mail, &sent);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":1,\"name\":\"train\",\"mail_events\":2}");
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        id = (uint64_t) json_object_get_int64(json_object_object_get(p, "job_id"));
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, id);
        assert_int_equal(j->state, JOB_RUNNING);
        job_alloc(j)->gpu_mask = 0x3; /* as if it held both */
        /* No executor here: a cancel waits for the launch, as a launching job's does. */
        j->launching = true;

        /* gpu0 at the threshold (not below it), gpu1 idle: the job is busy. */
        idle_rounds(m, 5, idle4, ELEMENTSOF(idle4));
        assert_int_equal(listed_idle(m, id), 0);
        assert_null(show_idle(m, id, &keep));
        json_object_put(keep);
        why = why_text(m, id);
        assert_null(strstr(why, "below"));
        free(why);

        /* Both below 5 % for 3 rounds, 1 s apart: idle, and said so. */
        idle_rounds(m, 0, idle4, ELEMENTSOF(idle4));
        assert_true(listed_idle(m, id) >= 2);
        idle = show_idle(m, id, &keep);
        assert_non_null(idle);
        assert_true(strncmp(idle, "its 2 GPUs (gpu0, gpu1) have been below 5 % for ", 48) == 0);
        json_object_put(keep);
        why = why_text(m, id);
        assert_non_null(strstr(why, "its 2 GPUs (gpu0, gpu1) have been below 5 % for "));
        free(why);
        /* Not cancelled by default. */
        assert_false(j->cancel_requested);

        /* One busy reading starts the clock over. */
        idle_rounds(m, 0, busy, ELEMENTSOF(busy));
        assert_int_equal(listed_idle(m, id), 0);

        /* Suspended for 3 rounds between two idle readings: the time does not count. */
        idle_rounds(m, 0, idle1, ELEMENTSOF(idle1));
        j->state = JOB_SUSPENDED;
        idle_rounds(m, 0, idle3, ELEMENTSOF(idle3));
        j->state = JOB_RUNNING;
        idle_rounds(m, 0, idle1, ELEMENTSOF(idle1));
        assert_int_equal(listed_idle(m, id), 0);

        /* GPUIdleAction=mail: its user is mailed once for an idle stretch, not cancelled;
         * once busy again, a next stretch is mailed again. */
        f = fopen(conf, "we");
        assert_non_null(f);
        fprintf(f, "[Manager]\nGPUSampleSec=1s\nGPUIdleSec=2s\nGPUIdleAction=mail\n");
        assert_int_equal(fclose(f), 0);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", err);
        idle_rounds(m, 0, idle4, ELEMENTSOF(idle4));
        assert_false(j->cancel_requested);
        assert_int_equal(sent.n, 1);
        assert_non_null(strstr(sent.msg[0], "To: nobody\n"));
        assert_non_null(strstr(sent.msg[0], "Subject: Corral Job_id="));
        assert_non_null(strstr(sent.msg[0], " Name=train GPUs idle, Run time "));
        assert_non_null(strstr(sent.msg[0], "While it runs, its 2 GPUs (gpu0, gpu1) have been below 5 % for "));
        why = why_text(m, id);
        assert_non_null(strstr(why, "; its user is mailed once"));
        free(why);
        idle_rounds(m, 0, idle4, ELEMENTSOF(idle4));
        assert_int_equal(sent.n, 1);
        idle_rounds(m, 0, busy, ELEMENTSOF(busy));
        idle_rounds(m, 0, idle4, ELEMENTSOF(idle4));
        assert_int_equal(sent.n, 2);
        idle_rounds(m, 0, busy, ELEMENTSOF(busy));

        /* GPUIdleAction=cancel: cancelled once idle, its reason naming the GPUs. */
        f = fopen(conf, "we");
        assert_non_null(f);
        fprintf(f, "[Manager]\nGPUSampleSec=1s\nGPUIdleSec=2s\nGPUIdleAction=cancel\n");
        assert_int_equal(fclose(f), 0);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", err);
        idle_rounds(m, 0, idle4, ELEMENTSOF(idle4));
        assert_true(j->cancel_requested);
        assert_string_equal(job_reason(j), "GPUIdle gpu0,gpu1");
        /* Its end keeps that reason. */
        {
                JobOutcome o = { .id = id, .cancelled = true, .exit_code = -1 };

                j->launching = false;
                manager_on_job_finished(NULL, &o, m);
                assert_int_equal(j->state, JOB_CANCELLED);
                assert_string_equal(job_reason(j), "GPUIdle gpu0,gpu1");
        }
        /* Its end's mail (--mail-type=END) says what it did with each GPU, by the figures
         * of the run that just ended. */
        manager_mail_flush(m, (uint64_t) time(NULL));
        assert_int_equal(sent.n, 3);
        assert_non_null(strstr(sent.msg[2], " Name=train Ended, Run time "));
        assert_non_null(strstr(sent.msg[2], "Reason: GPUIdle gpu0,gpu1\nGPU gpu0: "));
        assert_non_null(strstr(sent.msg[2], " % busy on average, 5 % at most; 0 MiB memory at most; held 0:00:"));
        assert_non_null(strstr(sent.msg[2], "\nGPU gpu1: "));
        for (unsigned i = 0; i < sent.n; i++)
                free(sent.msg[i]);

        manager_for_test_free(m);
}

static json_object *submit_gpus(Manager *m, unsigned gpus, uint64_t *ret_id) {
        char params[160];
        json_object *r, *p;

        snprintf(params, sizeof params, "{" SUBMIT_TRUE ",\"cpus\":1,\"gpus\":%u}", gpus);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, params);
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        *ret_id = (uint64_t) json_object_get_int64(json_object_object_get(p, "job_id"));
        return r;
}

/* A process on gpu0 in no job's cgroup: corral info names it (pid, user), the metrics
 * count it, UnmanagedGPU=avoid keeps new jobs off gpu0 while it lasts (corral why says
 * so), and once it is gone, or with UnmanagedGPU=ignore, gpu0 is given again. */
static void test_unmanaged(void **state) {
        Tree *t = *state;
        DeviceSet ds = { .devices = test_devices, .n_devices = ELEMENTSOF(test_devices) };
        SchedGpu sgpus[2] = { { .node = 0 }, { .node = 0 } };
        Manager *m = calloc(1, sizeof *m);
        json_object *r, *v, *o;
        char *err = NULL, conf[160], root[128], *why;
        uint64_t one, two;
        FILE *f;
        Job *j;

        fake_nvml_setup(t, "", true, conf, sizeof conf);
        fake_proc_root(t, root, sizeof root);
        fake_proc(root, 4242, "/user.slice/user-1000.slice/session-1.scope");
        fake_proc(root, 777, "/corral.slice/corral-job-99.scope");

        manager_for_test(m, t->dir, &ds, sgpus, 2);
        m->gpus = sgpus; /* the pass's view, which NVLink updates */
        assert_true(m->config->unmanaged_gpu_avoid);

        /* gpu0 runs pid 4242, in a login session, and pid 777, in a job's scope. */
        f = fopen(config_path, "we");
        assert_non_null(f);
        fprintf(f, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 util=90 name=NVIDIA A100-SXM4-40GB\n"
                   "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 util=11 name=NVIDIA A100-SXM4-40GB\n"
                   "proc 0 4242 1048576\nproc 0 777 1024\n"
                   "nvlink 0 0 00000000:5E:00.0\nnvlink 0 1 00000000:5E:00.0\nnvlink 0 4 00000000:C1:00.0\n");
        assert_int_equal(fclose(f), 0);
        assert_int_equal(manager_gpu_jobs_start_at(m, root), 0);
        wait_for_round(m, 11);
        assert_int_equal(manager_gpu_jobs_unmanaged(m), 0x1);

        /* NVLink: gpu0's two links to gpu1 (by Corral's name), one to an NVSwitch; gpu1
         * has no NVLink in the fake, so no list at all. */
        v = info_gpu(m, 0, "nvlink");
        assert_non_null(v);
        assert_int_equal(json_object_array_length(v), 2);
        o = json_object_array_get_idx(v, 0);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "gpu")), "gpu1");
        assert_int_equal(json_object_get_int(json_object_object_get(o, "links")), 2);
        assert_false(json_object_get_boolean(json_object_object_get(o, "switch")));
        o = json_object_array_get_idx(v, 1);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "pci_address")), "0000:c1:00.0");
        assert_true(json_object_get_boolean(json_object_object_get(o, "switch")));
        json_object_put(v);
        assert_null(info_gpu(m, 1, "nvlink"));
        /* The pass's view: gpu0 and gpu1 linked both ways; gpu0's switch leads to no other. */
        assert_int_equal(sgpus[0].links, 0x2);
        assert_int_equal(sgpus[1].links, 0x1);

        /* corral info: gpu0's outside process, with its pid and owner; not the job's. */
        v = info_gpu(m, 0, "outside_corral");
        assert_non_null(v);
        assert_int_equal(json_object_array_length(v), 1);
        o = json_object_array_get_idx(v, 0);
        assert_int_equal(json_object_get_int(json_object_object_get(o, "pid")), 4242);
        assert_int_equal(json_object_get_int64(json_object_object_get(o, "uid")), getuid());
        json_object_put(v);
        assert_null(info_gpu(m, 1, "outside_corral"));

        /* The metrics: a gauge per GPU. */
        {
                char prom[200], *text = NULL;
                size_t len = 0;
                FILE *pf;

                assert_int_equal(manager_write_metrics(m), 0);
                snprintf(prom, sizeof prom, "%s/corral.prom", t->dir);
                pf = fopen(prom, "re");
                assert_non_null(pf);
                assert_true(getdelim(&text, &len, '\0', pf) > 0);
                fclose(pf);
                assert_non_null(strstr(text, "# TYPE corral_gpu_unmanaged_processes gauge\n"));
                assert_non_null(strstr(text, "corral_gpu_unmanaged_processes{gpu=\"gpu0\",uuid=\"GPU-aaaa\"} 1\n"));
                assert_non_null(strstr(text, "corral_gpu_unmanaged_processes{gpu=\"gpu1\",uuid=\"GPU-bbbb\"} 0\n"));
                free(text);
        }

        /* avoid: a 1-GPU job gets gpu1, a 2-GPU one waits, and why says for what. */
        json_object_put(submit_gpus(m, 1, &one));
        json_object_put(submit_gpus(m, 2, &two));
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, one);
        assert_int_equal(j->state, JOB_RUNNING);
        assert_int_equal(job_alloc(j)->gpu_mask, 0x2);
        j->state = JOB_COMPLETED; /* as if it ended: gpu1 is free again */
        job_run_ensure(j)->alloc = NULL;
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, two);
        assert_int_equal(j->state, JOB_QUEUED);
        r = manager_job_why(m, j);
        why = strdup(json_object_to_json_string(r));
        json_object_put(r);
        if (!strstr(why, "in use outside Corral: gpu0"))
                fail_msg("why: %s", why);
        free(why);

        /* ignore: reported, not avoided. */
        f = fopen(conf, "we");
        assert_non_null(f);
        fprintf(f, "[Manager]\nGPUSampleSec=1s\nUnmanagedGPU=ignore\n");
        assert_int_equal(fclose(f), 0);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", err);
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, two);
        assert_int_equal(j->state, JOB_RUNNING);
        assert_int_equal(job_alloc(j)->gpu_mask, 0x3);
        j->state = JOB_COMPLETED;
        job_run_ensure(j)->alloc = NULL;

        /* avoid again; the process ends: the next round gives gpu0 back, a pass asked for. */
        f = fopen(conf, "we");
        assert_non_null(f);
        fprintf(f, "[Manager]\nGPUSampleSec=1s\n");
        assert_int_equal(fclose(f), 0);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", err);
        json_object_put(submit_gpus(m, 2, &two));
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, two);
        assert_int_equal(j->state, JOB_QUEUED);
        write_fake2(90, 12);
        m->sched_needed = false;
        wait_for_round(m, 12);
        assert_int_equal(manager_gpu_jobs_unmanaged(m), 0);
        assert_true(m->sched_needed);
        assert_null(info_gpu(m, 0, "outside_corral"));
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(j->state, JOB_RUNNING);
        assert_int_equal(job_alloc(j)->gpu_mask, 0x3);
        j->state = JOB_COMPLETED;
        job_run_ensure(j)->alloc = NULL;

        /* gpu0 in MIG mode: given to no job whole (its CUDA needs MIG devices' nodes the
         * fence does not give), and why says so; a 1-GPU job gets gpu1. */
        f = fopen(config_path, "we");
        assert_non_null(f);
        fprintf(f, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 util=0 mig=1 name=NVIDIA A100-SXM4-40GB\n"
                   "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 util=13 mig=0 name=NVIDIA A100-SXM4-40GB\n");
        assert_int_equal(fclose(f), 0);
        wait_for_round(m, 13);
        assert_int_equal(manager_gpu_jobs_mig(m), 0x1);
        json_object_put(submit_gpus(m, 2, &two));
        json_object_put(submit_gpus(m, 1, &one));
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, two);
        assert_int_equal(j->state, JOB_QUEUED);
        r = manager_job_why(m, j);
        why = strdup(json_object_to_json_string(r));
        json_object_put(r);
        if (!strstr(why, "in MIG mode: gpu0 (not given whole"))
                fail_msg("why: %s", why);
        free(why);
        j = manager_find_job(m, one);
        assert_int_equal(j->state, JOB_RUNNING);
        assert_int_equal(job_alloc(j)->gpu_mask, 0x2);

        m->gpus = NULL; /* the test's */
        manager_for_test_free(m);
}

/* MIG devices as discovery finds them (gpu2, gpu3 of gpu0) get their UUID, profile and
 * memory from NVML's snapshot, which asks for a pass; a 1g.5gb job then runs on gpu2; a MIG
 * device NVML lists that discovery did not find is logged, not scheduled; once a MIG
 * device is gone under its job, its GPU's other MIG devices are given to nobody new until
 * that job ends. */
static void test_mig_devices(void **state) {
        Tree *t = *state;
        Device devs[] = {
                { .name = (char *) "gpu0", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
                  .uuid = (char *) "GPU-aaaa", .pci_address = (char *) "0000:3b:00.0", .numa_node = 0, .mig_mode = true },
                { .name = (char *) "gpu1", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
                  .uuid = (char *) "GPU-bbbb", .pci_address = (char *) "0000:5e:00.0", .numa_node = 0 },
                { .name = (char *) "gpu2", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
                  .uuid = (char *) "MIG-GPU-aaaa/7/0", .numa_node = 0, .mig = true, .mig_parent = (char *) "GPU-aaaa",
                  .mig_gi = 7 },
                { .name = (char *) "gpu3", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
                  .uuid = (char *) "MIG-GPU-aaaa/1/0", .numa_node = 0, .mig = true, .mig_parent = (char *) "GPU-aaaa",
                  .mig_gi = 1 },
        };
        DeviceSet ds = { .devices = devs, .n_devices = ELEMENTSOF(devs), .placed = true };
        SchedGpu sgpus[4] = { { .node = 0, .offline = true }, { .node = 0 }, { .node = 0 }, { .node = 0 } };
        Manager *m = calloc(1, sizeof *m);
        char conf[160], root[128];
        uint64_t one, other;
        FILE *f;
        Job *j;

        fake_nvml_setup(t, "", false, conf, sizeof conf);
        fake_proc_root(t, root, sizeof root);
        for (size_t i = 0; i < ELEMENTSOF(devs); i++)
                assert_int_equal(device_derive_features(&devs[i]), 0);
        manager_for_test(m, t->dir, &ds, sgpus, 4);
        m->gpus = sgpus;

        /* Before NVML's word: no MIG device is a 1g.5gb yet. */
        json_object_put(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":1,\"gpus\":1,\"gpu_type\":\"1g.5gb\"}"));
        one = m->next_id - 1;
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, one)->state, JOB_QUEUED);

        f = fopen(config_path, "we");
        assert_non_null(f);
        fprintf(f, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 util=0 mig=1 name=NVIDIA A100-SXM4-40GB\n"
                   "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 util=21 mig=0 name=NVIDIA A100-SXM4-40GB\n"
                   "mig 0 7 0 MIG-11111111-0000-5000-8000-000000000007 5368709120 NVIDIA A100-SXM4-40GB MIG 1g.5gb\n"
                   "mig 0 1 0 MIG-11111111-0000-5000-8000-000000000001 21474836480 NVIDIA A100-SXM4-40GB MIG 3g.20gb\n"
                   "mig 0 9 0 MIG-11111111-0000-5000-8000-000000000009 5368709120 NVIDIA A100-SXM4-40GB MIG 1g.5gb\n");
        assert_int_equal(fclose(f), 0);
        m->sched_needed = false;
        assert_int_equal(manager_gpu_jobs_start_at(m, root), 0);
        wait_for_round(m, 21);
        assert_true(m->sched_needed);
        assert_string_equal(devs[2].mig_profile, "1g.5gb");
        assert_string_equal(devs[2].mig_uuid, "MIG-11111111-0000-5000-8000-000000000007");
        assert_int_equal(devs[2].memory, UINT64_C(5368709120));
        assert_string_equal(devs[3].mig_profile, "3g.20gb");
        assert_true(device_matches(&devs[2], "1g.5gb", NULL));
        assert_false(device_matches(&devs[3], "1g.5gb", NULL));
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, one);
        assert_int_equal(j->state, JOB_RUNNING);
        assert_int_equal(job_alloc(j)->gpu_mask, UINT64_C(1) << 2);
        assert_int_equal(manager_gpu_jobs_mig_unsettled(m), 0);

        /* gpu2 re-sliced away under the job (as a reload after an admin's change finds it):
         * the job keeps it, gpu3 is nobody's new until the job ends. */
        devs[2].gone = true;
        assert_int_equal(manager_gpu_jobs_mig_unsettled(m), UINT64_C(1) << 3);
        json_object_put(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":1,\"gpus\":1,\"gpu_type\":\"3g.20gb\"}"));
        other = m->next_id - 1;
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, other)->state, JOB_QUEUED);
        {
                json_object *r = manager_job_why(m, manager_find_job(m, other));
                const char *text = json_object_to_json_string(r);

                if (!strstr(text, "MIG devices of a GPU re-sliced under a running job: gpu3 (given to no new job"))
                        fail_msg("why: %s", text);
                json_object_put(r);
        }
        j->state = JOB_COMPLETED;
        assert_int_equal(manager_gpu_jobs_mig_unsettled(m), 0);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, other)->state, JOB_RUNNING);
        assert_int_equal(job_alloc(manager_find_job(m, other))->gpu_mask, UINT64_C(1) << 3);

        for (size_t i = 0; i < ELEMENTSOF(devs); i++) {
                strv_free(devs[i].features);
                free(devs[i].mig_uuid);
                free(devs[i].mig_profile);
        }
        m->gpus = NULL; /* the test's */
        manager_for_test_free(m);
}

/* A shard job (1 of gpu0's 2 shards) whose own processes use more than half of gpu0's
 * memory: show and why say so, once; ShardMemoryPolicy=cancel cancels it, its reason
 * naming the GPU. Another job's process on the same GPU is not its. */
static void test_shard_memory(void **state) {
        Tree *t = *state;
        DeviceSet ds = { .devices = test_devices, .n_devices = ELEMENTSOF(test_devices) };
        SchedGpu sgpus[2] = { { .node = 0, .shards = 2 }, { .node = 0 } };
        Manager *m = calloc(1, sizeof *m);
        json_object *r, *p, *job, *v;
        char *err = NULL, conf[160], root[128], params[64], *why;
        uint64_t id;
        FILE *f;
        Job *j;

        fake_nvml_setup(t, "", true, conf, sizeof conf);
        fake_proc_root(t, root, sizeof root);
        fake_proc(root, 501, "/corral.slice/corral-job-1.scope");
        fake_proc(root, 502, "/corral.slice/corral-job-1.scope/step");
        fake_proc(root, 900, "/corral.slice/corral-job-77.scope");

        manager_for_test(m, t->dir, &ds, sgpus, 2);
        assert_false(m->config->shard_memory_cancel);

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":1}");
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        id = (uint64_t) json_object_get_int64(json_object_object_get(p, "job_id"));
        json_object_put(r);
        assert_int_equal(id, 1);
        assert_int_equal(manager_schedule(m), 0);
        j = manager_find_job(m, id);
        assert_int_equal(j->state, JOB_RUNNING);
        /* As if it held 1 of gpu0's 2 shards. */
        job_alloc(j)->gpu_mask = 0x1;
        job_alloc(j)->shards = 1;
        job_alloc(j)->shards_of = 2;
        j->launching = true;

        /* 400 MB of its own (two processes) of a 1000 MB GPU, another job's 550 beside:
         * within its 500 MB share. */
        f = fopen(config_path, "we");
        assert_non_null(f);
        fprintf(f, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 memory=1000000000 util=50 name=NVIDIA A100-SXM4-40GB\n"
                   "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 util=1 name=NVIDIA A100-SXM4-40GB\n"
                   "proc 0 501 300000000\nproc 0 502 100000000\nproc 0 900 550000000\n");
        assert_int_equal(fclose(f), 0);
        assert_int_equal(manager_gpu_jobs_start_at(m, root), 0);
        wait_for_round(m, 1);
        wait_for_round(m, 1);
        assert_null(manager_gpu_jobs_share_text(m, j));

        /* 600 MB: above its share. */
        f = fopen(config_path, "we");
        assert_non_null(f);
        fprintf(f, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 memory=1000000000 util=50 name=NVIDIA A100-SXM4-40GB\n"
                   "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 util=2 name=NVIDIA A100-SXM4-40GB\n"
                   "proc 0 501 500000000\nproc 0 502 100000000\nproc 0 900 1000\n");
        assert_int_equal(fclose(f), 0);
        wait_for_round(m, 2);
        /* The metrics: its own memory on gpu0, labelled with it. */
        {
                char prom[200], *text = NULL;
                size_t len = 0;
                FILE *pf;

                assert_int_equal(manager_write_metrics(m), 0);
                snprintf(prom, sizeof prom, "%s/corral.prom", t->dir);
                pf = fopen(prom, "re");
                assert_non_null(pf);
                assert_true(getdelim(&text, &len, '\0', pf) > 0);
                fclose(pf);
                assert_non_null(strstr(text, "corral_gpu_job_memory_used_bytes{gpu=\"gpu0\",uuid=\"GPU-aaaa\",job=\"1\","
                                             "user=\"nobody\"} 600000000\n"));
                free(text);
        }
        snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", id);
        r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "job", &job));
        assert_true(json_object_object_get_ex(job, "gpu_share_exceeded", &v));
        assert_string_equal(json_object_get_string(v),
                            "its processes used up to 572 MiB of gpu0's memory, above its share of 476 MiB (1 of 2 "
                            "shards): a shared GPU's memory is not fenced");
        json_object_put(r);
        why = why_text(m, id);
        assert_non_null(strstr(why, "above its share of 476 MiB (1 of 2 shards): a shared GPU's memory is not fenced "
                                    "(ShardMemoryPolicy=report)"));
        free(why);
        assert_false(j->cancel_requested);

        /* ShardMemoryPolicy=cancel: cancelled, its reason naming the GPU. */
        f = fopen(conf, "we");
        assert_non_null(f);
        fprintf(f, "[Manager]\nGPUSampleSec=1s\nShardMemoryPolicy=cancel\n");
        assert_int_equal(fclose(f), 0);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", err);
        f = fopen(config_path, "we");
        assert_non_null(f);
        fprintf(f, "gpu uuid=GPU-aaaa pci=00000000:3B:00.0 memory=1000000000 util=50 name=NVIDIA A100-SXM4-40GB\n"
                   "gpu uuid=GPU-bbbb pci=00000000:5E:00.0 util=3 name=NVIDIA A100-SXM4-40GB\n"
                   "proc 0 501 500000000\nproc 0 502 100000000\n");
        assert_int_equal(fclose(f), 0);
        wait_for_round(m, 3);
        assert_true(j->cancel_requested);
        assert_string_equal(job_reason(j), "ShardMemory gpu0");

        manager_for_test_free(m);
}

/* No library: telemetry is off, with why, in corral info; everything else works. */
static void test_off(void **state) {
        Tree *t = *state;
        Manager *m = calloc(1, sizeof *m);
        json_object *r, *p, *v;
        char *err = NULL;
        uint64_t until;

        assert_int_equal(setenv(NVML_LIBRARY_ENV, "/nonexistent/libnvidia-ml.so.1", 1), 0);
        assert_non_null(m);
        assert_int_equal(sd_event_new(&m->event), 0);
        manager_pick_backends(m);
        m->confdir = strdup(t->dir);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", err);
        assert_int_equal(store_open(t->dir, &m->store), 0);
        assert_int_equal(manager_gpu_jobs_start(m), 0);
        until = now_usec(CLOCK_MONOTONIC) + 10 * USEC_PER_SEC;
        for (;;) {
                const char *state_s;

                r = call(m, 0, CORRAL_METHOD_GET_INFO, "{}");
                assert_true(json_object_object_get_ex(r, "parameters", &p));
                assert_true(json_object_object_get_ex(p, "gpu_telemetry", &v));
                state_s = json_object_get_string(json_object_object_get(v, "state"));
                if (strcmp(state_s, "off") == 0) {
                        assert_true(strncmp(json_object_get_string(json_object_object_get(v, "reason")),
                                            "/nonexistent/libnvidia-ml.so.1 not found", 40) == 0);
                        json_object_put(r);
                        break;
                }
                json_object_put(r);
                assert_true(now_usec(CLOCK_MONOTONIC) < until);
                assert_true(sd_event_run(m->event, 200 * 1000) >= 0);
        }
        unsetenv(NVML_LIBRARY_ENV);
        manager_free(m);
}

static int setup(void **state) {
        return tree_setup_prefix(state, "corral-gpu-jobs");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_figures),
                cmocka_unit_test(test_cross_check),
                cmocka_unit_test(test_idle_clock),
                cmocka_unit_test(test_cgroup_job_id),
                cmocka_unit_test_setup_teardown(test_owners, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_unmanaged, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_shard_memory, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_idle_job, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_job_figures, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_mig_devices, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_off, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
