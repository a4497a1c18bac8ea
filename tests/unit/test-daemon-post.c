/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The post-iteration source (manager.c's on_post()), run by the event loop of a manager made
 * as corrald makes it, without a bus: what a job's start acts on is committed and on disk
 * before the executor is asked to start it ("committed before acted on"). The executor's
 * start is wrapped (the linker's --wrap) to record, when it is asked, how many commits the
 * store has made and how many of them are synced.
 *
 * And what a Usage report costs is billed to its caller: the store's read, on a worker
 * thread, is wrapped to take 100 ms of that thread's CPU time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/manager.h"
#include "daemon/store.h"
#include "executor-internal.h"
#include "time-util.h"

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

static uint64_t usage_busy_usec;

int __real_store_usage_rows(Store *s, const StoreUsageQuery *q, store_usage_cb cb, void *userdata);
int __wrap_store_usage_rows(Store *s, const StoreUsageQuery *q, store_usage_cb cb, void *userdata);
int __wrap_store_usage_rows(Store *s, const StoreUsageQuery *q, store_usage_cb cb, void *userdata) {
        uint64_t until = now_usec(CLOCK_THREAD_CPUTIME_ID) + usage_busy_usec;

        while (now_usec(CLOCK_THREAD_CPUTIME_ID) < until)
                ;
        return __real_store_usage_rows(s, q, cb, userdata);
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

/* Runs the loop until fd has a whole reply or until timeout: whether it has. */
static bool reply_within(sd_event *e, int fd, uint64_t timeout) {
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        char buf[1 << 16];

        while (now_usec(CLOCK_MONOTONIC) - t0 < timeout) {
                ssize_t k;
                (void) sd_event_run(e, 10 * 1000);
                while ((k = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
                        if (memchr(buf, 0, (size_t) k))
                                return true;
        }
        return false;
}

#define USAGE_REQ "{\"method\":\"io.corral.Manager.Usage\",\"parameters\":{}}"
#define GET_INFO_REQ "{\"method\":\"io.corral.Manager.GetInfo\",\"parameters\":{}}"

/* A Usage report whose read takes 200 ms of a worker thread's CPU time is billed to its
 * caller: with a budget of 10 ms refilled at 1 %, the caller's next request waits for the
 * refill (some 19 s: the test does not wait for it) instead of being answered at once, as
 * it was while the worker's time was billed to no one. */
static void test_usage_billed(void **state) {
        Tree *t = *state;
        char run[PATH_MAX], sock[PATH_MAX];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        sd_event *e = NULL;
        Manager *m = NULL;
        int fd;

        snprintf(run, sizeof run, "%s/run", t->dir);
        snprintf(sock, sizeof sock, "%s/sock", t->dir);
        assert_int_equal(mkdir(run, 0755), 0);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(manager_new(e, NULL, t->dir, t->dir, run, &m), 0);
        under_test = m;
        assert_int_equal(manager_listen(m, sock), 0);
        server_set_limits(m->server, &(ServerLimits) { .connections_per_user = 8, .connection_output = 4U << 20,
                                                       .request_share = 1, .request_burst_usec = 10 * 1000 });
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_true(strlen(sock) < sizeof sa.sun_path);
        strcpy(sa.sun_path, sock);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof sa), 0);

        usage_busy_usec = 200 * 1000;
        assert_int_equal(send(fd, USAGE_REQ, sizeof USAGE_REQ, 0), (ssize_t) sizeof USAGE_REQ);
        assert_true(reply_within(e, fd, 5 * USEC_PER_SEC));
        usage_busy_usec = 0;

        assert_int_equal(send(fd, GET_INFO_REQ, sizeof GET_INFO_REQ, 0), (ssize_t) sizeof GET_INFO_REQ);
        assert_false(reply_within(e, fd, 300 * 1000));
        assert_true(server_billed_usec(m->server, 0) >= 200 * 1000);

        close(fd);
        m = manager_free(m);
        e = sd_event_unref(e);
}

static int setup(void **state) {
        return tree_setup_prefix(state, "test-daemon-post");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_start_after_sync, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_usage_billed, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
