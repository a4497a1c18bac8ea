/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Project files: every key, good and bad values with file:line, [User] sections over the
 * per-user limits, membership and queues, the checks across files, and the whole
 * configuration refused when one project file is wrong. */
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
#include "tmp-tree.h"

static void put(const Tree *t, const char *name, const char *text) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", t->dir, name);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int setup(void **state) {
        char p[128];
        Tree *t;

        tree_setup_prefix(state, "corral-projects");
        t = *state;
        snprintf(p, sizeof p, "%s/projects.d", t->dir);
        assert_int_equal(mkdir(p, 0755), 0);
        return 0;
}

static void test_every_key(void **state) {
        Tree *t = *state;
        Config *c = NULL;
        char *err = NULL;
        const ProjectConfig *p;
        const char *const alice_groups[] = { "alice", NULL }, *const carol_groups[] = { "carol", "physics", NULL };

        put(t, "corral.conf", "[Queue]\nName=normal\nPriority=1\n[Queue]\nName=bonus\nPriority=0\n");
        put(t, "projects.d/physics.conf",
            "[Project]\nMembers=alice @physics\nDefaultFor=alice\nShare=30\nGrant=100000\nGrantPeriod=90d\n"
            "GrantStart=2026-01-01\nOnGrantSpent=refuse\nQueues=normal\n"
            "[Limits]\nMaxCPUs=64\nMaxMemory=256G\nMaxRunningJobs=20\nMaxWalltime=5d\nMaxCPUsPerUser=16\n"
            "MaxMemoryPerUser=64G\nMaxRunningJobsPerUser=6\nMaxJobsPerUser=72\nMaxIdleJobsPerUser=8\n"
            "MaxPSSoft=72000\nMaxPSHard=1080000\nMaxGPUs=8\nMaxGPUsPerUser=2\n"
            "[User]\nName=alice\nMaxIdleJobsPerUser=2\nMaxCPUs=4\nMaxGPUs=4\n"
            "[Slice]\nAllowedCPUs=0-3\nMemoryMax=8G\nMemoryHigh=infinity\nCPUWeight=200\nIOWeight=50\nTasksMax=4096\n");
        put(t, "projects.d/biology.conf", "[Project]\nMembers=bob\n");
        assert_int_equal(config_load(t->dir, &c, &err), 0);
        assert_null(err);
        assert_int_equal(c->n_projects, 2);
        assert_string_equal(c->projects[0].name, "biology"); /* lexical order */
        p = config_find_project(c, "physics");
        assert_non_null(p);
        assert_string_equal(p->members[1], "@physics");
        assert_int_equal(p->share, 30);
        assert_int_equal(p->grant, 100000);
        assert_int_equal(p->grant_period, 90 * 86400);
        assert_int_equal(p->grant_start, 1767225600);
        assert_true(p->grant_refuse);
        assert_true(project_allows_queue(p, "normal"));
        assert_false(project_allows_queue(p, "bonus"));
        assert_int_equal(p->total.max_cpus, 64);
        assert_int_equal(p->total.max_memory, UINT64_C(256) << 30);
        assert_int_equal(p->total.max_running_jobs, 20);
        assert_int_equal(p->total.max_walltime, 5 * 86400);
        assert_int_equal(p->per_user.max_cpus, 16);
        assert_int_equal(p->per_user.max_memory, UINT64_C(64) << 30);
        assert_int_equal(p->per_user.max_running_jobs, 6);
        assert_int_equal(p->per_user.max_jobs, 72);
        assert_int_equal(p->per_user.max_idle_jobs, 8);
        assert_int_equal(p->per_user.max_ps_soft, 72000);
        assert_int_equal(p->per_user.max_ps_hard, 1080000);
        assert_int_equal(p->total.max_gpus, 8);
        assert_int_equal(p->per_user.max_gpus, 2);
        /* alice: her section's two keys over the per-user values. */
        assert_int_equal(p->n_users, 1);
        assert_int_equal(p->users[0].limits.max_idle_jobs, 2);
        assert_int_equal(p->users[0].limits.max_cpus, 4);
        assert_int_equal(p->users[0].limits.max_gpus, 4);
        assert_int_equal(p->users[0].limits.max_jobs, 72);
        assert_int_equal(p->users[0].limits.max_ps_soft, 72000);
        assert_true(p->slice.have_allowed_cpus);
        assert_true(cpu_set_test(&p->slice.allowed_cpus, 3));
        assert_false(cpu_set_test(&p->slice.allowed_cpus, 4));
        assert_int_equal(p->slice.memory_max, UINT64_C(8) << 30);
        assert_int_equal(p->slice.memory_high, UINT64_MAX);
        assert_int_equal(p->slice.cpu_weight, 200);
        assert_int_equal(p->slice.io_weight, 50);
        assert_int_equal(p->slice.tasks_max, 4096);
        assert_true(project_has_member(p, "alice", alice_groups));
        assert_true(project_has_member(p, "carol", carol_groups));
        assert_false(project_has_member(p, "bob", alice_groups));
        config_free(c);
}

static void test_errors(void **state) {
        static const struct {
                const char *file, *text, *want;
        } t[] = {
                { "projects.d/p.conf", "[Project]\nMembers=alice\nShare=lots\n", "projects.d/p.conf:3: invalid value for Share=" },
                { "projects.d/p.conf", "[Limits]\nMaxGPUs=two\n", "p.conf:2: invalid value for MaxGPUs=, expected a number of GPUs" },
                { "projects.d/p.conf", "[Project]\nMembers=al ice!\n", "p.conf:2: invalid value for Members=, expected user names" },
                { "projects.d/p.conf", "[Project]\nGrantStart=yesterday\n", "p.conf:2: invalid value for GrantStart=, expected a date" },
                { "projects.d/p.conf", "[Project]\nOnGrantSpent=shrug\n", "p.conf:2: invalid value for OnGrantSpent=, expected bonus or refuse" },
                { "projects.d/p.conf", "[Project]\nGrant=10\n", "p.conf:1: Grant= needs GrantPeriod=" },
                { "projects.d/p.conf", "[Limits]\nMaxCPUs=-1\n", "p.conf:2: invalid value for MaxCPUs=" },
                { "projects.d/p.conf", "[Limits]\nMaxPS=5\n", "p.conf:2: unknown key MaxPS= in [Limits]" },
                { "projects.d/p.conf", "\n[User]\nMaxCPUs=4\n", "p.conf:2: a [User] section has no Name=" },
                { "projects.d/p.conf", "[User]\nName=a\n[User]\nName=a\n", "p.conf:3: a second [User] section for a" },
                { "projects.d/p.conf", "[User]\nName=@staff\n", "p.conf:1: [User] Name=@staff is not a user name" },
                { "projects.d/p.conf", "[Slice]\nAllowedCPUs=lots\n", "p.conf:2: invalid value for AllowedCPUs=" },
                { "projects.d/p.conf", "[Slice]\nCPUWeight=0\n", "p.conf:2: invalid value for CPUWeight=, expected 1 to 10000" },
                { "projects.d/p.conf", "[Accounts]\n", "p.conf:1: unknown section [Accounts] (known: [Project], [Limits], [User], [Slice])" },
                { "projects.d/p.conf", "[Project]\nQueues=nosuch\n", "projects.d/p.conf: Queues= names nosuch, which is no queue" },
                { "projects.d/bad name.conf", "[Project]\n", "a project's name (the file's name without .conf) must be" },
                { "projects.d/mail.conf", "[Project]\n", "the project name \"mail\" is reserved" },
        };
        Tree *tree = *state;

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                char path[256];
                Config *c = NULL;
                char *err = NULL;

                put(tree, t[i].file, t[i].text);
                assert_int_equal(config_load(tree->dir, &c, &err), -EINVAL);
                assert_null(c);
                if (!err || !strstr(err, t[i].want))
                        fail_msg("case %zu: error '%s' does not contain '%s'", i, strna(err), t[i].want);
                free(err);
                snprintf(path, sizeof path, "%s/%s", tree->dir, t[i].file);
                unlink(path);
        }

        /* Two defaults for one user, across files. */
        put(tree, "projects.d/a.conf", "[Project]\nMembers=alice\nDefaultFor=alice\n");
        put(tree, "projects.d/b.conf", "[Project]\nMembers=alice\nDefaultFor=alice\n");
        {
                Config *c = NULL;
                char *err = NULL;
                assert_int_equal(config_load(tree->dir, &c, &err), -EINVAL);
                assert_non_null(strstr(err, "b.conf: DefaultFor= alice, who already has a as default project"));
                free(err);
        }
}

static void test_none_means_groups(void **state) {
        Tree *t = *state;
        Config *c = NULL;
        char *err = NULL;

        assert_int_equal(config_load(t->dir, &c, &err), 0);
        assert_int_equal(c->n_projects, 0);
        assert_null(config_find_project(c, "physics"));
        config_free(c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_every_key, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_errors, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_none_means_groups, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
