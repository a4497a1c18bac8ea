/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The post-iteration source (manager.c's on_post()), run by the event loop of a manager made
 * as corrald makes it, without a bus: what a job's start acts on is committed and on disk
 * before the executor is asked to start it ("committed before acted on"). The executor's
 * start is wrapped (the linker's --wrap) to record, when it is asked, how many commits the
 * store has made and how many of them are synced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/manager.h"
#include "daemon/store.h"
#include "executor-internal.h"

#include "test-manager-call.h"
#include "tmp-tree.h"

#define NOBODY 65534

static Manager *under_test;
static unsigned starts_asked;
static bool durable_when_asked;
static uint64_t commits_when_asked;

int __wrap_executor_start_fds(Executor *e, const JobSpec *spec, const int *fds, size_t n_fds);
int __wrap_executor_start_fds(Executor *e, const JobSpec *spec, const int *fds, size_t n_fds) {
        starts_asked++;
        durable_when_asked = store_durable(under_test->store);
        commits_when_asked = store_n_commits(under_test->store);
        return 0;
}

static int on_defer(sd_event_source *s, void *userdata) {
        return 0;
}

/* An iteration of the loop that dispatches something, as a request's arrival would, and
 * the one after it, where the post source it made pending runs (sd-event dispatches one
 * source per iteration). */
static void iterate(sd_event *e) {
        sd_event_source *s = NULL;

        assert_int_equal(sd_event_add_defer(e, &s, on_defer, NULL), 0);
        assert_int_equal(sd_event_source_set_enabled(s, SD_EVENT_ONESHOT), 0);
        assert_true(sd_event_run(e, 0) > 0);
        assert_true(sd_event_run(e, 0) > 0);
        sd_event_source_disable_unref(s);
}

static void test_start_after_sync(void **state) {
        Tree *t = *state;
        char run[PATH_MAX];
        sd_event *e = NULL;
        Manager *m = NULL;
        json_object *r, *v;
        uint64_t commits;

        snprintf(run, sizeof run, "%s/run", t->dir);
        assert_int_equal(mkdir(run, 0755), 0);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(manager_new(e, NULL, t->dir, t->dir, run, &m), 0);
        under_test = m;

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\",\"name\":\"post\"}");
        assert_false(json_object_object_get_ex(r, "error", &v));
        json_object_put(r);
        /* Answered in memory only: nothing committed yet, nothing asked of the executor. */
        commits = store_n_commits(m->store);
        assert_int_equal(starts_asked, 0);

        iterate(e);
        /* The pass started it, and the executor was asked only once the submit and the
         * start were on disk. */
        assert_int_equal(starts_asked, 1);
        assert_true(commits_when_asked > commits);
        assert_true(durable_when_asked);
        assert_true(store_durable(m->store));

        m = manager_free(m);
        e = sd_event_unref(e);
}

static int setup(void **state) {
        return tree_setup_prefix(state, "test-daemon-post");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_start_after_sync, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
