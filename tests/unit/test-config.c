/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "strv.h"

static char dir[64];

static void put(const char *name, const char *text) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void unlink_in(const char *name) {
        char p[256];

        snprintf(p, sizeof p, "%s/%s", dir, name);
        assert_int_equal(unlink(p), 0);
}

static int setup(void **state) {
        char p[128];
        strcpy(dir, "/tmp/corral-config-XXXXXX");
        assert_non_null(mkdtemp(dir));
        snprintf(p, sizeof p, "%s/corral.conf.d", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        return 0;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static void test_defaults(void **state) {
        Config *c = NULL;
        char *err = NULL;

        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_null(err);
        assert_int_equal(c->n_queues, 3);
        assert_string_equal(c->default_queue, "normal");
        assert_int_equal(config_find_queue(c, "express")->priority, 2);
        /* NCI's charge factors. */
        assert_true(config_find_queue(c, "express")->charge_factor == 3.0);
        assert_true(config_find_queue(c, "normal")->charge_factor == 1.0);
        assert_true(config_find_queue(c, "bonus")->charge_factor == 0.0);
        assert_int_equal(c->kill_wait_sec, 30);
        assert_false(c->users_may_suspend);
        /* Express suspends others' work: only its group (and admins, authz.c) may use it,
         * and its runs count in fair-share (at its factor, usage.c): nothing is excluded. */
        assert_string_equal(config_find_queue(c, "express")->allow_groups[0], CORRAL_EXPRESS_GROUP);
        assert_null(config_find_queue(c, "express")->allow_groups[1]);
        assert_null(config_find_queue(c, "normal")->allow_groups);
        assert_null(config_find_queue(c, "bonus")->allow_groups);
        assert_int_equal(strv_length(c->fairshare_exclude_queues), 0);
        assert_true(config_find_queue(c, "express")->builtin);
        assert_null(config_find_queue(c, "express")->overridden);
        assert_null(c->removed_builtins);
        /* NCI's preemption: express suspends normal; nothing else. */
        assert_int_equal(config_find_queue(c, "express")->preempts_mask, 1u << (config_find_queue(c, "normal") - c->queues));
        assert_int_equal(config_find_queue(c, "normal")->preempts_mask, 0);
        assert_true(config_find_queue(c, "normal")->preemptable);
        assert_false(config_find_queue(c, "normal")->parallel_run);
        {
                SchedConfig sc;
                assert_int_equal(config_sched(c, &sc), 0);
                assert_true(sc.preempt.enabled);
                assert_true(sc.preempt.max_xfactor == 1.25);
                assert_int_equal(sc.preempt.suspend_window, 600);
                assert_int_equal(sc.preempt.max_suspend_time, 0);
                assert_false(sc.preempt.reclaim);
        }
        config_free(c);
}

static void test_preemption(void **state) {
        Config *c = NULL;
        char *err = NULL;
        SchedConfig sc;

        put("corral.conf", "[Manager]\nMaxXFactor=1.5\nSuspendWindowSec=5min\nMaxSuspendTime=2h\nReclaimSuspended=yes\n"
                           "[Queue]\nName=top\nPriority=3\nPreempts=mid low\nPreemptable=no\n"
                           "[Queue]\nName=mid\nPriority=2\nParallelRun=yes\n"
                           "[Queue]\nName=low\nPriority=1\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        /* Indexes after the three built-ins. */
        assert_int_equal(config_find_queue(c, "top")->preempts_mask,
                         (1u << (config_find_queue(c, "mid") - c->queues)) |
                                 (1u << (config_find_queue(c, "low") - c->queues)));
        assert_false(config_find_queue(c, "top")->preemptable);
        assert_true(config_find_queue(c, "mid")->parallel_run);
        assert_int_equal(config_sched(c, &sc), 0);
        assert_true(sc.preempt.enabled && sc.preempt.reclaim);
        assert_true(sc.preempt.max_xfactor == 1.5);
        assert_int_equal(sc.preempt.suspend_window, 300);
        assert_int_equal(sc.preempt.max_suspend_time, 7200);
        config_free(c);

        /* Queues of their own and none preempts: preemption is off. */
        put("corral.conf", "[Queue]\nName=only\n[Queue]\nName=express\nPreempts=\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(config_sched(c, &sc), 0);
        assert_false(sc.preempt.enabled);
        config_free(c);
        put("corral.conf", "");
}

/* Each user's budget of corrald's time (corrald(8), "LIMITS"): on by default. */
static void test_request_budget(void **state) {
        Config *c = NULL;
        char *err = NULL;

        put("corral.conf", "");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->request_share_per_user, 25);
        assert_int_equal(c->request_burst_per_user, 5);
        config_free(c);
        put("corral.conf", "[Manager]\nRequestSharePerUser=10%\nRequestBurstPerUser=2min\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->request_share_per_user, 10);
        assert_int_equal(c->request_burst_per_user, 120);
        config_free(c);
        put("corral.conf", "[Manager]\nRequestSharePerUser=0\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->request_share_per_user, 0);
        config_free(c);
}

/* GPUIdlePercent=, GPUIdleSec=, GPUIdleAction=: 5 %, 30 min and none by default; mail,
 * not made yet, is refused with what is taken rather than read as none. */
static void test_gpu_idle(void **state) {
        Config *c = NULL;
        char *err = NULL;

        put("corral.conf", "");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->gpu_idle_percent, 5);
        assert_int_equal(c->gpu_idle_sec, 1800);
        assert_int_equal(c->gpu_idle_action, GPU_IDLE_ACTION_NONE);
        assert_true(c->unmanaged_gpu_avoid);
        config_free(c);
        put("corral.conf", "[Manager]\nUnmanagedGPU=ignore\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_false(c->unmanaged_gpu_avoid);
        config_free(c);
        put("corral.conf", "[Manager]\nUnmanagedGPU=kill\n");
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "UnmanagedGPU"));
        free(err);
        put("corral.conf", "[Manager]\nGPUIdlePercent=10%\nGPUIdleSec=1h\nGPUIdleAction=cancel\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->gpu_idle_percent, 10);
        assert_int_equal(c->gpu_idle_sec, 3600);
        assert_int_equal(c->gpu_idle_action, GPU_IDLE_ACTION_CANCEL);
        config_free(c);
        put("corral.conf", "[Manager]\nGPUIdleAction=mail\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->gpu_idle_action, GPU_IDLE_ACTION_MAIL);
        config_free(c);
        put("corral.conf", "[Manager]\nShardMemoryPolicy=cancel\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_true(c->shard_memory_cancel);
        config_free(c);
        put("corral.conf", "[Manager]\nShardMemoryPolicy=kill\n");
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "ShardMemoryPolicy"));
        assert_non_null(strstr(err, "report or cancel"));
        free(err);
        put("corral.conf", "[Manager]\nGPUIdleAction=kill\n");
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "GPUIdleAction"));
        assert_non_null(strstr(err, "none, cancel or mail"));
        free(err);
        put("corral.conf", "[Manager]\nGPUIdlePercent=101\n");
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "GPUIdlePercent"));
        free(err);
        put("corral.conf", "");
}

/* GPUSampleSec=: how often a running job's GPUs are read through NVML; 0 turns GPU
 * telemetry off; more than an hour is refused. */
static void test_gpu_sample_sec(void **state) {
        Config *c = NULL;
        char *err = NULL;

        put("corral.conf", "");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->gpu_sample_sec, CONFIG_GPU_SAMPLE_SEC_DEFAULT);
        assert_int_equal(CONFIG_GPU_SAMPLE_SEC_DEFAULT, 10);
        config_free(c);
        put("corral.conf", "[Manager]\nGPUSampleSec=30s\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->gpu_sample_sec, 30);
        config_free(c);
        put("corral.conf", "[Manager]\nGPUSampleSec=0\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->gpu_sample_sec, 0);
        config_free(c);
        put("corral.conf", "[Manager]\nGPUSampleSec=2h\n");
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "GPUSampleSec"));
        free(err);
        put("corral.conf", "");
}

/* Interactive jobs: the hangup grace, and each queue's AllowInteractive= (on by default,
 * built-ins too) and MaxInteractiveWalltime=, merged key by key as any queue key. */
static void test_interactive(void **state) {
        Config *c = NULL;
        char *err = NULL;

        put("corral.conf", "");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->interactive_hangup_sec, CONFIG_INTERACTIVE_HANGUP_SEC_DEFAULT);
        for (size_t i = 0; i < c->n_queues; i++) {
                assert_true(c->queues[i].allow_interactive);
                assert_int_equal(c->queues[i].max_interactive_walltime, 0);
        }
        config_free(c);
        put("corral.conf", "[Manager]\nInteractiveHangupSec=2min\n[Queue]\nName=normal\nAllowInteractive=no\n"
                           "[Queue]\nName=dev\nMaxInteractiveWalltime=4h\n");
        put("corral.conf.d/50-normal.conf", "[Queue]\nName=normal\nPriority=3\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->interactive_hangup_sec, 120);
        assert_false(config_find_queue(c, "normal")->allow_interactive);
        assert_int_equal(config_find_queue(c, "normal")->priority, 3);
        assert_true(config_find_queue(c, "dev")->allow_interactive);
        assert_int_equal(config_find_queue(c, "dev")->max_interactive_walltime, 4 * 3600);
        config_free(c);
        put("corral.conf", "[Queue]\nName=dev\nAllowInteractive=maybe\n");
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "AllowInteractive"));
        free(err);
        unlink_in("corral.conf.d/50-normal.conf");
        put("corral.conf", "");
}

static void test_dropins_override(void **state) {
        Config *c = NULL;
        char *err = NULL;

        put("corral.conf", "# site config\n[Manager]\nOperatorGroup=hpcadmin\nKillWaitSec=10s\n\n"
                           "[Queue]\nName=normal\nPriority=1\nMaxWalltime=2d\nRerunnable=no\nAllowGroups=staff\n\n"
                           "[Queue]\nName=long\nPriority=0\nChargeFactor=0.5\nMaxCPUsPerJob=8\nAllowProjects=a b\n"
                           "TargetQueueTime=2d\n");
        put("corral.conf.d/10-a.conf", "[Manager]\nUsersMaySuspend=yes\n[Queue]\nName=normal\nPriority=5\nAllowGroups=physics\n");
        put("corral.conf.d/20-b.conf", "[Manager]\nKillWaitSec=1min\nPolicy=conservative\nMaxArraySize=500\nPriorityType=fcfs\n"
                                       "Ordering=shuffle\nPriorityWeightBypass=10\nPriorityWeightAge=0.5\n"
                                       "MaxStoredBytesPerUser=1G\n[Queue]\nPriority=7\nName=normal\nMaxWalltime=3d\n");
        put("corral.conf.d/ignored.txt", "this is not read\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_string_equal(c->operator_group, "hpcadmin");
        assert_true(c->users_may_suspend);
        assert_int_equal(c->kill_wait_sec, 60);
        assert_int_equal(c->n_queues, 4); /* the built-ins and long */
        assert_int_equal(config_find_queue(c, "normal")->priority, 7);
        /* The drop-in named only Priority=: the rest of the queue stays as the main file
         * set it (it used to be replaced whole, dropping the walltime limit). */
        assert_int_equal(config_find_queue(c, "normal")->max_walltime, 3 * 86400);
        assert_int_equal(c->max_array_size, 500);
        assert_int_equal(c->max_stored_bytes_per_user, UINT64_C(1) << 30);
        assert_false(config_find_queue(c, "normal")->rerunnable);
        assert_true(config_find_queue(c, "long")->rerunnable);
        assert_true(config_find_queue(c, "long")->charge_factor == 0.5);
        assert_int_equal(config_find_queue(c, "long")->max_cpus_per_job, 8);
        assert_int_equal(config_find_queue(c, "long")->target_queue_time, 2 * 86400);
        assert_string_equal(config_find_queue(c, "long")->allow_projects[1], "b");
        /* The list moves over whole from the drop-in. */
        assert_string_equal(config_find_queue(c, "normal")->allow_groups[0], "physics");
        assert_null(config_find_queue(c, "normal")->allow_groups[1]);
        assert_string_equal(c->policy, "conservative");
        {
                SchedConfig sc;
                assert_int_equal(config_sched(c, &sc), 0);
                assert_ptr_equal(sc.priority, &sched_priority_fcfs);
                assert_ptr_equal(sc.policy, &sched_policy_conservative);
                assert_int_equal(sc.ordering, SCHED_ORDERING_SHUFFLE);
                assert_true(sc.weights.bypass == 10.0 && sc.weights.age == 0.5);
                assert_true(sc.weights.queue == 1000.0); /* IT4I's, where not set */
        }
        config_free(c);
        put("corral.conf", "");
        unlink_in("corral.conf.d/10-a.conf");
        unlink_in("corral.conf.d/20-b.conf");
        unlink_in("corral.conf.d/ignored.txt");
}

static void test_errors(void **state) {
        static const struct {
                const char *text, *want;
        } t[] = {
                { "[Manager]\nKillWaitSec=soon\n", "corral.conf:2: invalid value for KillWaitSec=" },
                { "[Manager]\nFrobnicate=1\n", "corral.conf:2: unknown key Frobnicate=" },
                { "\n\n[Nope]\n", "corral.conf:3: unknown section [Nope]" },
                { "Policy=easy\n", "corral.conf:1: Policy= outside of a section" },
                { "[Manager]\njust words\n", "corral.conf:2: expected KEY=VALUE" },
                { "[Manager\n", "corral.conf:1: section header without ']'" },
                { "[Manager]\nPolicy=random\n", "corral.conf:2: invalid value for Policy=, expected fcfs, easy or conservative" },
                { "[Manager]\nPriorityType=basic\n", "corral.conf:2: invalid value for PriorityType=, expected multifactor or fcfs" },
                { "[Queue]\nName=bad name!\n", "corral.conf:2: invalid value for Name=" },
                { "[Queue]\nPriority=3\n", "corral.conf:1: a [Queue] section has no Name=" },
                { "[Queue]\nName=a\n[Queue]\nPriority=3\n[Manager]\n", "corral.conf:3: a [Queue] section has no Name=" },
                { "[Manager]\nMaxStoredBytesPerUser=lots\n", "corral.conf:2: invalid value for MaxStoredBytesPerUser=" },
                { "[Queue]\nName=q\nChargeFactor=-1\n", "corral.conf:3: invalid value for ChargeFactor=" },
                { "[Manager]\nOrdering=random\n", "corral.conf:2: invalid value for Ordering=, expected priority or shuffle" },
                { "[Queue]\nName=q\nAllowProjects=no way!\n", "corral.conf:3: invalid value for AllowProjects=" },
                { "[Manager]\nDefaultQueue=nosuch\n", "DefaultQueue=nosuch names no configured queue" },
                { "[Queue]\nName=a\nPreempts=b\n", "[Queue] a: Preempts= names b, which is no queue" },
                { "[Queue]\nName=a\nPreempts=a\n", "[Queue] a: Preempts= names a, which is the queue itself" },
                { "[Manager]\nMaxXFactor=0.9\n", "corral.conf:2: invalid value for MaxXFactor=" },
                { "[Manager]\nRequestSharePerUser=101%\n", "corral.conf:2: invalid value for RequestSharePerUser=" },
                { "[Manager]\nRequestSharePerUser=half\n", "corral.conf:2: invalid value for RequestSharePerUser=" },
                { "[Device]\nModel=x\n", "corral.conf:1: a [Device] section has neither Name= nor PCIAddress=" },
                { "[Device]\nName=g\nVendor=intel\n", "corral.conf:3: invalid value for Vendor=, expected nvidia, amd or other" },
                { "[Device]\nName=g\nKind=fpga\n", "corral.conf:3: invalid value for Kind=" },
                { "[Device]\nName=g\nNodes=/dev/a /tmp/b\n", "corral.conf:3: invalid value for Nodes=" },
                { "[Device]\nName=g\nNodes=/dev/../etc/passwd\n", "corral.conf:3: invalid value for Nodes=" },
                { "[Device]\nName=g\nNumaNode=-2\n", "corral.conf:3: invalid value for NumaNode=" },
                { "[Device]\nPCIAddress=3b:00.0\n", "corral.conf:2: invalid value for PCIAddress=" },
                { "[Device]\nName=g\nFeatures=a&b\n", "corral.conf:3: invalid value for Features=" },
                { "[Queue]\nName=c\nBackend=pbs\n", "corral.conf:3: invalid value for Backend=, expected local or slurm" },
                { "[Queue]\nName=c\nBackend=slurm\nMaxForwarded=0\n", "corral.conf:4: invalid value for MaxForwarded=" },
                { "[Queue]\nName=c\nBackend=slurm\nSlurmPartition=a,b\n", "corral.conf:4: invalid value for SlurmPartition=" },
                { "[Queue]\nName=c\nBackend=slurm\nSlurmAccount=phys:\n", "corral.conf:4: invalid value for SlurmAccount=" },
                { "[Queue]\nName=c\nBackend=slurm\nSlurmAccount=:acct\n", "corral.conf:4: invalid value for SlurmAccount=" },
                { "[Manager]\nSlurmBinDir=bin\n", "corral.conf:2: invalid value for SlurmBinDir=" },
                { "[Manager]\nSlurmPollSec=1s\n", "corral.conf:2: invalid value for SlurmPollSec=" },
                { "[Queue]\nName=c\nSlurmPartition=batch\n", "[Queue] c: sets SlurmPartition= or SlurmAccount=" },
                { "[Queue]\nName=c\nBackend=slurm\nPreempts=bonus\n", "[Queue] c: has Backend=slurm and Preempts=" },
                { "[Queue]\nName=normal\nOverflowTo=bonus\n", "[Queue] normal: has OverflowTo= naming no queue with Backend=slurm" },
                { "[Queue]\nName=c\nBackend=slurm\nOverflowTo=c\n", "[Queue] c: has Backend=slurm and OverflowTo=" },
                { "[Queue]\nName=c\nBackend=slurm\n[Queue]\nName=normal\nPreempts=c\n",
                  "[Queue] normal: has Preempts= naming a Backend=slurm queue" },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                Config *c = NULL;
                char *err = NULL;

                put("corral.conf", t[i].text);
                assert_int_equal(config_load(dir, &c, &err), -EINVAL);
                assert_null(c);
                assert_non_null(err);
                if (!strstr(err, t[i].want))
                        fail_msg("case %zu: error '%s' does not contain '%s'", i, err, t[i].want);
                free(err);
        }
}

/* Defining a [Queue] used to replace the three built-in queues: an admin who only
 * restricted express lost normal and bonus. Now a section merges into the built-in of its
 * name key by key, other names add queues, and Disabled=yes is the one way to remove one. */
/* [Device] sections, kept in file order across drop-ins for corrald to apply over
 * discovery. */
static void test_devices(void **state) {
        Config *c = NULL;
        char *err = NULL;

        put("corral.conf", "[Device]\nName=gpu0\nVendor=nvidia\nNodes=/dev/nvidia0 /dev/nvidia-caps/nvidia-cap1\n"
                           "NumaNode=1\nModel=NVIDIA A100-SXM4-40GB\nFeatures=gpu a100 NVLink\n\n"
                           "[Device]\nPCIAddress=0000:3b:00.0\nHide=yes\n");
        put("corral.conf.d/50-fpga.conf", "[Device]\nName=fpga0\nKind=other\nNodes=/dev/xdma0_user\nNumaNode=-1\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_null(err);
        assert_int_equal(c->n_devices, 3);
        assert_string_equal(c->devices[0].name, "gpu0");
        assert_string_equal(c->devices[0].vendor, "nvidia");
        assert_string_equal(c->devices[0].nodes[1], "/dev/nvidia-caps/nvidia-cap1");
        assert_int_equal(c->devices[0].numa_node, 1);
        assert_string_equal(c->devices[0].model, "NVIDIA A100-SXM4-40GB");
        assert_string_equal(c->devices[0].features[2], "NVLink");
        assert_false(c->devices[0].hide);
        assert_non_null(strstr(c->devices[0].where, "corral.conf:1"));
        assert_null(c->devices[1].name);
        assert_string_equal(c->devices[1].pci_address, "0000:3b:00.0");
        assert_true(c->devices[1].hide);
        assert_int_equal(c->devices[1].numa_node, CONFIG_NUMA_NODE_UNSET);
        assert_string_equal(c->devices[2].name, "fpga0");
        assert_string_equal(c->devices[2].vendor, "other");
        assert_int_equal(c->devices[2].numa_node, -1);
        assert_non_null(strstr(c->devices[2].where, "50-fpga.conf:1"));
        config_free(c);
        unlink_in("corral.conf.d/50-fpga.conf");
        put("corral.conf", "");
}

static void test_builtin_merge(void **state) {
        Config *c = NULL;
        char *err = NULL;
        const QueueConfig *q;

        put("corral.conf", "[Queue]\nName=express\nAllowGroups=staff\nMaxWalltime=1h\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->n_queues, 3);
        assert_non_null(config_find_queue(c, "normal"));
        assert_non_null(config_find_queue(c, "bonus"));
        assert_string_equal(c->default_queue, "normal");
        q = config_find_queue(c, "express");
        assert_string_equal(q->allow_groups[0], "staff");
        assert_null(q->allow_groups[1]);
        assert_int_equal(q->max_walltime, 3600);
        /* What the section did not say stays the built-in's. */
        assert_int_equal(q->priority, 2);
        assert_true(q->charge_factor == 3.0);
        assert_int_equal(q->preempts_mask, 1u << (config_find_queue(c, "normal") - c->queues));
        /* corral config check names the keys overridden. */
        assert_true(strv_contains(q->overridden, "AllowGroups"));
        assert_true(strv_contains(q->overridden, "MaxWalltime"));
        assert_int_equal(strv_length(q->overridden), 2);
        assert_null(config_find_queue(c, "normal")->overridden);
        c = config_free(c);

        /* Opened to everyone with an empty AllowGroups=; another name adds a queue. */
        put("corral.conf", "[Queue]\nName=express\nAllowGroups=\n[Queue]\nName=long\nPriority=0\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->n_queues, 4);
        assert_null(config_find_queue(c, "express")->allow_groups);
        assert_true(queue_config_allows(config_find_queue(c, "express"), "p", NULL));
        assert_false(config_find_queue(c, "long")->builtin);
        c = config_free(c);

        /* Disabled=yes removes a built-in; express forgets its own Preempts=normal; a drop-in
         * may bring a queue back. */
        put("corral.conf", "[Queue]\nName=normal\nDisabled=yes\n[Queue]\nName=bonus\nDisabled=yes\n"
                           "[Queue]\nName=work\nPriority=1\n");
        put("corral.conf.d/50-bonus.conf", "[Queue]\nName=bonus\nDisabled=no\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_int_equal(c->n_queues, 3);
        assert_null(config_find_queue(c, "normal"));
        assert_non_null(config_find_queue(c, "bonus"));
        assert_int_equal(strv_length(c->removed_builtins), 1);
        assert_string_equal(c->removed_builtins[0], "normal");
        assert_int_equal(strv_length(config_find_queue(c, "express")->preempts), 0);
        assert_int_equal(config_find_queue(c, "express")->preempts_mask, 0);
        assert_string_equal(c->default_queue, "express"); /* the first left */
        c = config_free(c);
        unlink_in("corral.conf.d/50-bonus.conf");

        /* A Preempts= the admin wrote still has to name a queue. */
        put("corral.conf", "[Queue]\nName=normal\nDisabled=yes\n[Queue]\nName=express\nPreempts=normal\n");
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "[Queue] express: Preempts= names normal, which is no queue"));
        err = mfree(err);

        put("corral.conf", "[Queue]\nName=normal\nDisabled=yes\n[Queue]\nName=bonus\nDisabled=yes\n"
                           "[Queue]\nName=express\nDisabled=yes\n");
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "every queue is Disabled=yes"));
        err = mfree(err);
        put("corral.conf", "");
}

/* Who a queue's rule lets in, and the refusal that says what to do. */
static void test_queue_access(void **state) {
        Config *c = NULL;
        char *err = NULL, *msg = NULL;
        char *mine[] = { (char *) "users", (char *) "corral-express", NULL };
        char *plain[] = { (char *) "users", NULL };
        const QueueConfig *q;

        put("corral.conf", "[Queue]\nName=lab\nAllowProjects=astro\nAllowGroups=a b\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        q = config_find_queue(c, "express");
        assert_true(queue_config_allows(q, "geo", mine));
        assert_false(queue_config_allows(q, "geo", plain));
        assert_false(queue_config_allows(q, "geo", NULL));
        assert_int_equal(queue_config_refusal(q, "geo", &msg), 0);
        assert_non_null(strstr(msg, "queue express is open only to members of the groups corral-express"));
        assert_non_null(strstr(msg, "gpasswd -a USER corral-express"));
        assert_non_null(strstr(msg, "empty AllowGroups= in a [Queue] Name=express section"));
        msg = mfree(msg);
        assert_true(queue_config_allows(config_find_queue(c, "normal"), "geo", NULL));

        q = config_find_queue(c, "lab");
        assert_false(queue_config_allows(q, "geo", (char *[]) { (char *) "b", NULL }));
        assert_true(queue_config_allows(q, "astro", (char *[]) { (char *) "b", NULL }));
        assert_false(queue_config_allows(q, "astro", plain));
        assert_int_equal(queue_config_refusal(q, "geo", &msg), 0);
        assert_non_null(strstr(msg, "queue lab takes only jobs of the projects astro (its AllowProjects=), not of geo"));
        msg = mfree(msg);
        assert_int_equal(queue_config_refusal(q, "astro", &msg), 0);
        assert_non_null(strstr(msg, "members of the groups a, b (its AllowGroups=)"));
        msg = mfree(msg);
        config_free(c);
        put("corral.conf", "");
}

/* A NUL byte would hide the rest of the file from every check (found by fuzzing). */
/* corrald(8), FORWARDING TO SLURM: the keys as the man page's example writes them, a
 * drop-in changing one of them, the account map, and the client's directory. */
static void test_slurm_backend(void **state) {
        Config *c = NULL;
        const QueueConfig *q;
        char *err = NULL, p[256];

        put("corral.conf", "[Manager]\nSlurmPollSec=10s\n"
                           "[Queue]\nName=cluster\nBackend=slurm\nSlurmPartition=batch\n"
                           "SlurmAccount=physics:phys01 default-acct\nMaxForwarded=500\n");
        put("corral.conf.d/50-more.conf", "[Queue]\nName=cluster\nMaxForwarded=20\n[Queue]\nName=normal\n"
                                          "OverflowTo=cluster\nOverflowAfterSec=10min\n");
        /* A drop-in's string replaces the earlier one (and is not freed under it). */
        put("corral.conf.d/60-part.conf", "[Queue]\nName=cluster\nSlurmPartition=long\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        assert_null(err);
        q = config_find_queue(c, "cluster");
        assert_non_null(q);
        assert_int_equal(q->backend, QUEUE_BACKEND_SLURM);
        assert_string_equal(q->slurm_partition, "long");
        assert_int_equal(q->max_forwarded, 20);
        assert_string_equal(config_find_queue(c, "normal")->overflow_to, "cluster");
        assert_int_equal(config_find_queue(c, "normal")->overflow_after, 600);
        assert_string_equal(queue_config_slurm_account(q, "physics"), "phys01");
        assert_string_equal(queue_config_slurm_account(q, "biology"), "default-acct");
        assert_string_equal(queue_backend_to_string(config_find_queue(c, "normal")->backend), "local");
        assert_int_equal(config_find_queue(c, "normal")->max_forwarded, CONFIG_MAX_FORWARDED_DEFAULT);
        assert_int_equal(c->slurm_poll_sec, 10);
        /* No diverted client below this root: /usr/bin. */
        assert_string_equal(config_slurm_bin_dir(c, dir), "/usr/bin");
        snprintf(p, sizeof p, "mkdir -p %s%s && install -m 755 /dev/null %s%s/sbatch", dir,
                 CONFIG_SLURM_DIVERTED_BINDIR, dir, CONFIG_SLURM_DIVERTED_BINDIR);
        assert_int_equal(system(p), 0);
        assert_string_equal(config_slurm_bin_dir(c, dir), CONFIG_SLURM_DIVERTED_BINDIR);
        config_free(c);
        unlink_in("corral.conf.d/50-more.conf");
        unlink_in("corral.conf.d/60-part.conf");

        /* Without a map every project is its own account; SlurmBinDir= wins. */
        put("corral.conf", "[Manager]\nSlurmBinDir=/opt/slurm/bin\n[Queue]\nName=cluster\nBackend=slurm\n");
        assert_int_equal(config_load(dir, &c, &err), 0);
        q = config_find_queue(c, "cluster");
        assert_string_equal(queue_config_slurm_account(q, "biology"), "biology");
        assert_null(q->slurm_partition);
        assert_int_equal(c->slurm_poll_sec, CONFIG_SLURM_POLL_SEC_DEFAULT);
        assert_string_equal(config_slurm_bin_dir(c, dir), "/opt/slurm/bin");
        config_free(c);
        unlink_in("corral.conf");
}

static void test_nul_byte(void **state) {
        static const char text[] = "[Manager]\nPolicy=easy\0x\n[Queue]\nName=hidden\nBogusKey=1\n";
        char p[256], *err = NULL;
        Config *c = NULL;
        FILE *f;

        snprintf(p, sizeof p, "%s/corral.conf", dir);
        f = fopen(p, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
        fclose(f);
        assert_int_equal(config_load(dir, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "corral.conf:2: a NUL byte in the file"));
        free(err);
        unlink(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_dropins_override),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_nul_byte),
                cmocka_unit_test(test_slurm_backend),
                cmocka_unit_test(test_preemption),
                cmocka_unit_test(test_builtin_merge),
                cmocka_unit_test(test_devices),
                cmocka_unit_test(test_queue_access),
                cmocka_unit_test(test_request_budget),
                cmocka_unit_test(test_gpu_sample_sec),
                cmocka_unit_test(test_gpu_idle),
                cmocka_unit_test(test_interactive),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
