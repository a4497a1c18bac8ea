/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The last good configuration (daemon/config-lastgood.c): saved as a copy of the files that
 * loaded, loaded back when the files on disk do not load, and the manager starting on it
 * and saying so. */
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

#include "daemon/config-lastgood.h"
#include "daemon/manager.h"

static char root[64], conf[96], state[96];

static void put(const char *name, const char *text) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", conf, name);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static bool exists(const char *dir, const char *name) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        return access(p, F_OK) == 0;
}

static int setup(void **s) {
        char p[160];

        strcpy(root, "/tmp/corral-lastgood-XXXXXX");
        assert_non_null(mkdtemp(root));
        snprintf(conf, sizeof conf, "%s/etc", root);
        snprintf(state, sizeof state, "%s/state", root); /* not there yet: save makes it */
        assert_int_equal(mkdir(conf, 0755), 0);
        snprintf(p, sizeof p, "%s/corral.conf.d", conf);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/projects.d", conf);
        assert_int_equal(mkdir(p, 0755), 0);
        put("corral.conf", "[Manager]\nKillWaitSec=7\n\n[Queue]\nName=normal\nPriority=1\n");
        put("corral.conf.d/10-long.conf", "[Queue]\nName=long\nPriority=0\nMaxWalltime=7d\n");
        put("projects.d/physics.conf", "[Project]\nQueues=normal long\n");
        return 0;
}

static int teardown(void **s) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

static void check_good(const Config *c) {
        assert_int_equal(c->kill_wait_sec, 7);
        assert_int_equal(c->n_queues, 4); /* the three built-ins (normal changed) and long */
        assert_non_null(config_find_queue(c, "long"));
        assert_int_equal(config_find_queue(c, "long")->max_walltime, 7 * 86400);
        assert_int_equal(c->n_projects, 1);
        assert_string_equal(c->projects[0].name, "physics");
}

static void test_none_saved(void **s) {
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *err = NULL;

        assert_int_equal(config_lastgood_load(state, &c, &err, NULL), -ENOENT);
        assert_null(c);
}

static void test_save_load(void **s) {
        _cleanup_(config_freep) Config *c = NULL, *d = NULL;
        _cleanup_free_ char *err = NULL, *err2 = NULL;
        uint64_t saved = 0;

        assert_int_equal(config_lastgood_save(state, conf), 0);
        assert_false(exists(state, CONFIG_LASTGOOD_DIR ".new"));
        assert_true(exists(state, CONFIG_LASTGOOD_DIR "/corral.conf.d/10-long.conf"));
        assert_true(exists(state, CONFIG_LASTGOOD_DIR "/projects.d/physics.conf"));

        /* A typo in a drop-in: the files on disk do not load, the copy still does. */
        put("corral.conf.d/20-typo.conf", "[Queue]\nName=normal\nPrioirty=5\n");
        assert_int_equal(config_load(conf, &d, &err2), -EINVAL);
        assert_non_null(strstr(err2, "20-typo.conf:3"));
        assert_int_equal(config_lastgood_load(state, &c, &err, &saved), 0);
        check_good(c);
        assert_true(saved > 0 && saved <= (uint64_t) time(NULL));
}

static void test_save_broken_keeps_old(void **s) {
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *err = NULL;

        /* The files changed between the load and the copy: the copy would not load, so the
         * previous one stays. */
        assert_int_equal(config_lastgood_save(state, conf), -EINVAL);
        assert_false(exists(state, CONFIG_LASTGOOD_DIR ".new"));
        assert_int_equal(config_lastgood_load(state, &c, &err, NULL), 0);
        check_good(c);
}

static void test_save_replaces(void **s) {
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *err = NULL;

        /* Fixed, and one drop-in less: the copy is replaced whole, nothing of the old stays. */
        put("corral.conf.d/20-typo.conf", "[Queue]\nName=normal\nPriority=5\n");
        put("corral.conf", "[Manager]\nKillWaitSec=9\n\n[Queue]\nName=normal\nPriority=1\n");
        assert_int_equal(config_lastgood_save(state, conf), 0);
        assert_int_equal(config_lastgood_load(state, &c, &err, NULL), 0);
        assert_int_equal(c->kill_wait_sec, 9);
        assert_int_equal(config_find_queue(c, "normal")->priority, 5);
        assert_true(exists(state, CONFIG_LASTGOOD_DIR "/corral.conf.d/20-typo.conf"));
}

static Manager *manager_at(void) {
        Manager *m = calloc(1, sizeof *m);

        assert_non_null(m);
        manager_pick_backends(m);
        m->confdir = strdup(conf);
        m->statedir = strdup(state);
        assert_non_null(m->confdir);
        assert_non_null(m->statedir);
        return m;
}

static void manager_done(Manager *m) {
        config_free(m->config);
        free(m->sched_projects);
        free(m->sched_users);
        free(m->project_names);
        free(m->config_error);
        free(m->config_notice);
        free(m->confdir);
        free(m->statedir);
        free(m);
}

/* Start-up: a good configuration is kept; a broken one at the next start falls back on
 * it, says which file:line and which configuration is in force; a reload that fails keeps
 * the running one and says so; a reload that works clears it. */
static void test_manager_start(void **s) {
        Manager *m = manager_at();
        _cleanup_free_ char *err = NULL, *in_force = NULL;
        char status[1024];

        assert_int_equal(manager_load_config(m), 0);
        assert_false(m->config_lastgood);
        assert_null(m->config_error);
        assert_null(m->config_notice);
        manager_done(m);

        put("corral.conf.d/30-typo.conf", "[Queue]\nName=normal\nMaxWaltime=1h\n");
        m = manager_at();
        assert_int_equal(manager_load_config(m), 0);
        assert_true(m->config_lastgood);
        assert_non_null(m->config);
        assert_int_equal(m->config->kill_wait_sec, 9);
        assert_non_null(strstr(m->config_error, "30-typo.conf:3"));
        assert_int_equal(manager_config_in_force(m, &in_force), 0);
        assert_non_null(strstr(in_force, "last good"));
        assert_non_null(strstr(in_force, CONFIG_LASTGOOD_DIR));
        assert_non_null(strstr(m->config_notice, "30-typo.conf:3"));
        assert_non_null(strstr(m->config_notice, "last good"));
        manager_status(m, status, sizeof status);
        assert_non_null(strstr(status, "30-typo.conf:3"));
        assert_non_null(strstr(status, "last good"));

        /* Still broken: a reload fails, the last good one stays in force and marked. */
        assert_int_equal(manager_reload(m, &err), -EINVAL);
        assert_true(m->config_lastgood);
        assert_non_null(m->config_notice);

        /* Fixed: the reload clears it all. */
        put("corral.conf.d/30-typo.conf", "[Queue]\nName=normal\nMaxWalltime=1h\n");
        err = mfree(err);
        assert_int_equal(manager_reload(m, &err), 0);
        assert_false(m->config_lastgood);
        assert_null(m->config_error);
        assert_null(m->config_notice);
        manager_status(m, status, sizeof status);
        assert_null(strstr(status, "DOES NOT LOAD"));

        /* A later reload that fails keeps the running configuration, marked as such. */
        put("corral.conf.d/30-typo.conf", "[Queue]\nName=normal\nMaxWalltime=soon\n");
        err = mfree(err);
        assert_int_equal(manager_reload(m, &err), -EINVAL);
        assert_false(m->config_lastgood);
        assert_int_equal(config_find_queue(m->config, "normal")->max_walltime, 3600);
        assert_non_null(strstr(m->config_notice, "30-typo.conf:3"));
        assert_non_null(strstr(m->config_notice, "loaded from"));
        manager_done(m);
}

/* A first start with no good configuration ever saved refuses. */
static void test_manager_first_start_refuses(void **s) {
        char cmd[256];
        Manager *m;

        snprintf(cmd, sizeof cmd, "rm -rf '%s/%s'", state, CONFIG_LASTGOOD_DIR);
        assert_int_equal(system(cmd), 0);
        m = manager_at();
        assert_int_equal(manager_load_config(m), -EINVAL);
        assert_null(m->config);
        manager_done(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_none_saved),
                cmocka_unit_test(test_save_load),
                cmocka_unit_test(test_save_broken_keeps_old),
                cmocka_unit_test(test_save_replaces),
                cmocka_unit_test(test_manager_start),
                cmocka_unit_test(test_manager_first_start_refuses),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
